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


class SinePulses:
    """f(t) = Σ_k A_k s((t − t_k)/T_k) with the full-period pulse
    s(τ) = sin(2πτ) sin²(πτ) = ½ sin 2πτ − ¼ sin 4πτ on [0, 1], 0 elsewhere;
    c = (A_0, t_0, T_0, A_1, t_1, T_1, …).

    s(0) = s(1) = 0 with s′ = s″ = 0 there (s ∝ τ³ at the ends): f is C², so a driver
    built on it has continuous velocity and acceleration constraints.  ∫₀¹ s = 0 and
    ∫₀¹∫₀^τ s ≠ 0: a steering pulse that restores the heading and leaves a lateral
    offset — one lane change; two opposite pulses make the double lane change of
    seed 002 §4.2 (docs/buggy.md).  The window tests the real part of τ only, so a
    complex step in A_k, t_k, T_k differentiates the pulse inside it."""
    kind = "sine_pulses"

    def __init__(self, npulses):
        self.npulses = npulses
        self.ncoef = 3 * npulses

    def param_names(self):
        return [f"{k}.{i}" for i in range(self.npulses) for k in ("amplitudes", "starts", "durations")]

    def __call__(self, t, c, order=0):
        out = 0.0 * c[..., 0]
        w = 2.0 * np.pi
        for i in range(self.npulses):
            amp, t0, dur = c[..., 3 * i], c[..., 3 * i + 1], c[..., 3 * i + 2]
            tau = (t - t0) / dur
            if order == 0:
                val = 0.5 * np.sin(w * tau) - 0.25 * np.sin(2 * w * tau)
            elif order == 1:
                val = (0.5 * w * np.cos(w * tau) - 0.5 * w * np.cos(2 * w * tau)) / dur
            else:
                val = (-0.5 * w * w * np.sin(w * tau) + w * w * np.sin(2 * w * tau)) / (dur * dur)
            inside = (np.real(tau) > 0.0) & (np.real(tau) < 1.0)
            out = out + np.where(inside, amp * val, 0.0 * val)
        return out


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
    if fn.type == "sine_pulses":
        return SinePulses(len(fn.amplitudes)), [c for i in range(len(fn.amplitudes))
                                                for c in (fn.amplitudes[i], fn.starts[i], fn.durations[i])]
    return Harmonic(), [fn.amplitude, fn.omega, fn.phase, fn.offset]
