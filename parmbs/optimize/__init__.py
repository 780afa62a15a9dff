"""Restartable design optimization (TAO on the discrete adjoint gradient)."""
from ..io.optimization_plot import plot_history  # noqa: F401
from .driver import Optimization  # noqa: F401
