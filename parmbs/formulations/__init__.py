"""Formulations: index3 (in the steppers) and penalty (augmented-Lagrangian ODE)."""
