"""Smooth, complex-step-safe switching functions for contact, bump stops and tyres.

Contact, bump-stop engagement and tyre saturation are non-smooth in their textbook form
(max(0, x), sign(v), min(1, ·)).  The sensitivity equations need r(q, v) to be C¹ at
least (the direct and adjoint steps use r_q, r_v), and the Newton solver converges best
on C² residuals, so every switch here is a C² piecewise polynomial of the regularisation
width δ: exact (zero or linear) outside [0, δ], and a polynomial blend inside.

* ramp  g_δ(x):   0 for x ≤ 0;  x³/δ² − x⁴/(2δ³) on (0, δ);  x − δ/2 for x ≥ δ.
  C²: g(0) = g'(0) = g''(0) = 0, g(δ) = δ/2, g'(δ) = 1, g''(δ) = 0.  It is the smooth
  positive part max(0, x) shifted by at most δ/2: the penetration regularisation.
* step  σ_δ(x) = g'_δ(x):  0 → 1 on [0, δ] by 3(x/δ)² − 2(x/δ)³ (C¹).
* ramp_integral  G_δ(x) = ∫ g_δ: the potential of a penalty force k g_δ(x).

Branches test the real part only, so a complex step x + ih takes the branch of x and
differentiates the polynomial of that branch: every function is exact under
``cs_jacobian`` and finite at x = 0 (contact onset), which tests/test_spatial_contact.py
asserts.
"""
import numpy as np


def _re(x):
    return np.real(x)


def ramp(x, delta):
    """C² smooth positive part g_δ(x) (see module docstring)."""
    x = np.asarray(x)
    xi = x / delta
    inner = x * xi * xi * (1.0 - 0.5 * xi)
    out = np.where(_re(x) >= _re(delta), x - 0.5 * delta, inner)
    return np.where(_re(x) <= 0.0, 0.0 * x, out)


def step(x, delta):
    """σ_δ(x) = g'_δ(x): C¹ switch from 0 (x ≤ 0) to 1 (x ≥ δ)."""
    x = np.asarray(x)
    xi = x / delta
    inner = xi * xi * (3.0 - 2.0 * xi)
    out = np.where(_re(x) >= _re(delta), 1.0 + 0.0 * x, inner)
    return np.where(_re(x) <= 0.0, 0.0 * x, out)


def ramp_integral(x, delta):
    """G_δ(x) = ∫₀ˣ g_δ: x⁴/(4δ²) − x⁵/(10δ³) on (0, δ), 3δ²/20 + (x² − δ²)/2 − δ(x − δ)/2 beyond."""
    x = np.asarray(x)
    xi = x / delta
    inner = x * x * xi * xi * (0.25 - 0.1 * xi)
    outer = 0.15 * delta * delta + 0.5 * (x * x - delta * delta) - 0.5 * delta * (x - delta)
    out = np.where(_re(x) >= _re(delta), outer, inner)
    return np.where(_re(x) <= 0.0, 0.0 * x, out)


def positive(F, w):
    """C² smooth clamp of a force at zero: 0 for F ≤ 0, F for F ≥ w, and
    w (6ξ³ − 8ξ⁴ + 3ξ⁵), ξ = F/w, in between (monotone, 0 ≤ · ≤ F; the quintic with
    value, slope and curvature matching at both ends).  Keeps a penalty contact from
    pulling when its damper would (fast rebound), exact wherever the force exceeds w."""
    F = np.asarray(F)
    xi = F / w
    inner = w * xi * xi * xi * (6.0 + xi * (-8.0 + 3.0 * xi))
    out = np.where(np.real(F) >= np.real(w), F, inner)
    return np.where(np.real(F) <= 0.0, 0.0 * F, out)


def clip_unit(s, w):
    """Smooth clip of s to [−1, 1]: s for |s| ≤ 1 − w, ±1 for |s| ≥ 1 + w, C² in between:
    s − g_{2w}(s − 1 + w) + g_{2w}(−s − 1 + w)."""
    return s - ramp(s - 1.0 + w, 2.0 * w) + ramp(-s - 1.0 + w, 2.0 * w)


def max_one(x, w):
    """Smooth max(1, x): 1 for x ≤ 1, x − w for x ≥ 1 + 2w, C² in between (1 + g_{2w}(x − 1))."""
    return 1.0 + ramp(x - 1.0, 2.0 * w)


def regularized_unit(v, eps):
    """v / sqrt(|v|² + ε²): the smooth direction of a slip velocity (zero at v = 0).
    |v|² is written as v·v (no conjugate: complex-step safe)."""
    n2 = np.einsum("...i,...i->...", v, v)
    return v / np.sqrt(n2 + eps * eps)[..., None]


def normal_force(x, xdot, k, lam, c, delta):
    """Penalty contact normal force F_n = P_{kδ}(k g_δ(x) + λ g_δ(x) ẋ + c σ_δ(x) ẋ) of a
    penetration x and its rate ẋ (derivation: spatial/contact.py's docstring; the
    planar contact, model/contact.py, uses the same law)."""
    g = ramp(x, delta)
    return positive(k * g + lam * g * xdot + c * step(x, delta) * xdot, k * delta)
