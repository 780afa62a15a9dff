"""Restartable design optimization (TAO on the discrete adjoint gradient)."""
from .driver import Optimization, plot_history  # noqa: F401
