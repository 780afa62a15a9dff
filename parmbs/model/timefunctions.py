"""Time functions for drivers and loads: f(t), f'(t), f''(t) from a parameter array.

Parameters live in the model's parameter vector (so driver coefficients can be design
variables); the functions take them as the last axis of ``c`` and broadcast.
"""
import numpy as np


class Polynomial:
    """f(t) = Σ_k c_k t^k."""
    kind = "polynomial"

    def __init__(self, ncoef):
        self.ncoef = ncoef

    def param_names(self):
        return [f"coefficients.{k}" for k in range(self.ncoef)]

    def __call__(self, t, c, order=0):
        out = 0.0 * c[..., 0]
        for k in range(order, self.ncoef):
            fac = 1.0
            for j in range(order):
                fac *= (k - j)
            out = out + fac * c[..., k] * t ** (k - order)
        return out


class Harmonic:
    """f(t) = offset + amplitude·sin(ω t + phase); c = (amplitude, omega, phase, offset)."""
    kind = "harmonic"
    ncoef = 4

    def param_names(self):
        return ["amplitude", "omega", "phase", "offset"]

    def __call__(self, t, c, order=0):
        amp, om, ph, off = c[..., 0], c[..., 1], c[..., 2], c[..., 3]
        arg = om * t + ph
        if order == 0:
            return off + amp * np.sin(arg)
        if order == 1:
            return amp * om * np.cos(arg)
        return -amp * om * om * np.sin(arg)


class Constant:
    """f(t) = 1 (a load without a time function)."""
    kind = "constant"
    ncoef = 0

    def param_names(self):
        return []

    def __call__(self, t, c, order=0):
        return (1.0 if order == 0 else 0.0) + 0.0 * np.zeros(c.shape[:-1])


def from_config(fn):
    """Build the time function object and its nominal parameter values from config."""
    if fn is None:
        return Constant(), []
    if fn.type == "polynomial":
        return Polynomial(len(fn.coefficients)), list(fn.coefficients)
    return Harmonic(), [fn.amplitude, fn.omega, fn.phase, fn.offset]
