"""Spatial (3D) rigid multibody components: Euler-parameter bodies, joints, forces,
contact and tyres.  Coordinates and conventions: ``kinematics.py``."""
