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


class Table:
    """f(t): the clamped cubic spline through samples (t_k, y_k), k = 0 … K−1, with
    f′ = 0 at both ends; f(t) = y_0 before t_0 and y_{K−1} after t_{K−1} (C¹ there, f″
    jumps to 0).  c = (y_0, …, y_{K−1}) (design paths ``function.values.K``); the knot
    times are fixed.  Inside, f is C², so a driver built on it has continuous velocity
    and acceleration constraints.

    The spline is linear in y: its knot second derivatives m = S y solve the tridiagonal
    system of the clamped spline (de Boor, A Practical Guide to Splines, ch. IV;
    h_k = t_{k+1} − t_k):
        2h_0 m_0 + h_0 m_1 = 6 (y_1 − y_0)/h_0,
        h_{k−1} m_{k−1} + 2(h_{k−1} + h_k) m_k + h_k m_{k+1}
            = 6[(y_{k+1} − y_k)/h_k − (y_k − y_{k−1})/h_{k−1}],
        h_{K−2} m_{K−2} + 2h_{K−2} m_{K−1} = −6 (y_{K−1} − y_{K−2})/h_{K−2};
    on [t_k, t_{k+1}] with s = (t − t_k)/h_k:
        f = (1−s) y_k + s y_{k+1} + h_k²/6 [((1−s)³ − (1−s)) m_k + (s³ − s) m_{k+1}].
    m is solved once per distinct y (banded LU, O(K)) and kept; complex y (complex step
    in the values) work the same way.  Seed 004's four-post rig drives its pads from
    tabulated or noise signals (Tables 5.7–5.10); ``noise_samples`` makes those."""
    kind = "table"

    def __init__(self, times):
        t = np.asarray(times, float)
        self.t = t
        self.ncoef = len(t)
        self.h = np.diff(t)
        K, h = len(t), self.h
        ab = np.zeros((3, K))                 # scipy.linalg.solve_banded layout (1, 1)
        ab[1, 0], ab[1, -1] = 2 * h[0], 2 * h[-1]
        ab[1, 1:-1] = 2 * (h[:-1] + h[1:])
        ab[0, 1:] = h                         # super-diagonal
        ab[2, :-1] = h                        # sub-diagonal
        self._ab = ab
        self._last = (None, None)

    def param_names(self):
        return [f"values.{k}" for k in range(self.ncoef)]

    def _m(self, y):
        """Knot second derivatives of the spline through y (shape (K, …))."""
        key, m = self._last
        if key is not None and key.shape == y.shape and key.dtype == y.dtype and np.array_equal(key, y):
            return m
        from scipy.linalg import solve_banded
        h = self.h.reshape((-1,) + (1,) * (y.ndim - 1))
        d = np.diff(y, axis=0) / h
        rhs = np.concatenate([6 * d[:1], 6 * (d[1:] - d[:-1]), -6 * d[-1:]], axis=0)
        m = solve_banded((1, 1), self._ab, rhs)
        self._last = (y.copy(), m)
        return m

    def __call__(self, t, c, order=0):
        y = np.moveaxis(np.asarray(c), -1, 0)            # (K, …)
        m = self._m(y)
        tr = float(np.real(t))
        if tr < self.t[0] or tr > self.t[-1]:
            end = y[0] if tr < self.t[0] else y[-1]
            return end if order == 0 else 0.0 * end
        k = min(int(np.searchsorted(self.t, tr, side="right")) - 1, self.ncoef - 2)
        h = self.h[k]
        s = (t - self.t[k]) / h
        y0, y1, m0, m1 = y[k], y[k + 1], m[k], m[k + 1]
        if order == 0:
            return (1 - s) * y0 + s * y1 + h * h / 6 * (((1 - s) ** 3 - (1 - s)) * m0 + (s ** 3 - s) * m1)
        if order == 1:
            return (y1 - y0) / h + h / 6 * ((1 - 3 * (1 - s) ** 2) * m0 + (3 * s * s - 1) * m1)
        return (1 - s) * m0 + s * m1


def noise_samples(seed, sample_dt, duration, rms, color="white", corner=1.0):
    """(times, values) of a seeded noise signal on [0, duration] at spacing sample_dt:
    white — independent N(0, rms²) samples (numpy's PCG64 from ``seed``: the same signal
    on every machine); red — the same white sequence through the first-order low-pass
    x_k = a x_{k−1} + √(1 − a²) w_k, a = exp(−2π·corner·sample_dt) (a discretised
    Ornstein–Uhlenbeck process: stationary variance rms², spectrum flat below ``corner``
    Hz, falling as f⁻² above), x_0 = w_0.  The first and last samples are set to 0 so a
    driver starts and ends at rest."""
    K = int(round(duration / sample_dt)) + 1
    t = np.arange(K) * sample_dt
    w = np.random.default_rng(seed).standard_normal(K) * rms
    if color == "red":
        a = np.exp(-2 * np.pi * corner * sample_dt)
        x = np.empty(K)
        x[0] = w[0]
        b = np.sqrt(1 - a * a)
        for k in range(1, K):
            x[k] = a * x[k - 1] + b * w[k]
        w = x
    w[0] = w[-1] = 0.0
    return t, w


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
    if fn.type == "table":
        return Table(fn.times), list(fn.values)
    if fn.type == "noise":
        t, y = noise_samples(fn.seed, fn.sample_dt, fn.duration, fn.rms, fn.color, fn.corner)
        return Table(t), list(y)
    return Harmonic(), [fn.amplitude, fn.omega, fn.phase, fn.offset]
