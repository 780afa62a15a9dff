"""Rheonomic spatial drivers and the orientation rows of the initial assembly.

* ``RevoluteDriver`` — the relative rotation angle θ about a revolute (or cylindrical)
  axis equals f(t) (steering).  With n1_a, n2_a ⊥ u_a on body a and m'_b ⊥ u_b on body b,
  m_b = A_b m'_b = cos θ n1_a + sin θ n2_a when the axes are aligned, so

      Φ = (n2_aᵀ m_b) cos f − (n1_aᵀ m_b) sin f = sin(θ − f)          (1 row),

  smooth and unambiguous near θ = f (|θ − f| < π/2).  m'_b = A_b0ᵀ A_a0 n1'_a: θ is measured from the initial configuration.
  With c_k = n_kᵀ m_b, C = cos f, S = sin f:
      Φ_t = −(c2 S + c1 C) ḟ,
      γ = c̈2^v C − c̈1^v S − 2 (ċ2 S + ċ1 C) ḟ − (c2 C − c1 S) ḟ² − (c2 S + c1 C) f̈,
  c̈^v the velocity part of the dot-1 second derivative (joints.dot1_gamma).
  p = (s'_a, g_a, s'_b, g_b, n1'_a, n2'_a, m'_b, coefficients of f) — the same side
  layout as the joints, so ``joints.Frames`` serves.

* ``TranslationDriver`` — the relative displacement along a translational or
  cylindrical joint's axis equals f(t) (class docstring).

* ``OrientationRow`` — one row of the initial assembly fixing a rotation component:
  Φ = 2 (E(p̂) p)_k, k ∈ {x, y, z}.  E(p̂) p is the vector part of p ∘ p̂⁻¹, so the three
  rows with pᵀp = 1 give p = p̂ (the given orientation), and 2 E(p̂) ṗ = ω at p = p̂
  (ω = 2 E ṗ, kinematics.py): the velocity right-hand side is the given global angular
  velocity component.  p = p̂ (4).
"""
import numpy as np

from ..model.component import Constraint, register
from .joints import NQ, NSIDE, Frames, cat, dot1_gamma, dot1_jac, dot1_phi, dot1_rate, dot2_gamma, dot2_jac, dot2_phi
from .kinematics import E_matrix, dot


@register
class RevoluteDriver(Constraint):
    """Relative rotation about a revolute axis = f(t) (module docstring)."""
    nq, m = NQ, 1
    np_ = NSIDE + 9 + 3

    def __init__(self, names, qidx, pidx, rows, function=None):
        from ..model.timefunctions import Polynomial
        self.function = function if function is not None else Polynomial(3)
        self.np_ = NSIDE + 9 + self.function.ncoef
        super().__init__(names, qidx, pidx, rows)

    def _vecs(self, p):
        return p[..., NSIDE:NSIDE + 3], p[..., NSIDE + 3:NSIDE + 6], p[..., NSIDE + 6:NSIDE + 9]

    def _f(self, t, p, k):
        return self.function(t, p[..., NSIDE + 9:], k)

    def phi(self, t, q, p):
        F = Frames(q, p)
        n1, n2, mb = self._vecs(p)
        f = self._f(t, p, 0)
        return dot1_phi(F, n2, mb) * np.cos(f)[..., None] - dot1_phi(F, n1, mb) * np.sin(f)[..., None]

    def phi_q(self, t, q, p):
        F = Frames(q, p)
        n1, n2, mb = self._vecs(p)
        f = self._f(t, p, 0)
        return (dot1_jac(F, n2, mb) * np.cos(f)[..., None, None]
                - dot1_jac(F, n1, mb) * np.sin(f)[..., None, None])

    def phi_t(self, t, q, p):
        F = Frames(q, p)
        n1, n2, mb = self._vecs(p)
        f, fd = self._f(t, p, 0), self._f(t, p, 1)
        c1, c2 = dot1_phi(F, n1, mb)[..., 0], dot1_phi(F, n2, mb)[..., 0]
        return (-(c2 * np.sin(f) + c1 * np.cos(f)) * fd)[..., None]

    def gamma(self, t, q, v, p):
        F = Frames(q, p, v)
        n1, n2, mb = self._vecs(p)
        f, fd, fdd = self._f(t, p, 0), self._f(t, p, 1), self._f(t, p, 2)
        C, S = np.cos(f), np.sin(f)
        c1, c2 = dot1_phi(F, n1, mb)[..., 0], dot1_phi(F, n2, mb)[..., 0]
        g1, g2 = dot1_gamma(F, n1, mb)[..., 0], dot1_gamma(F, n2, mb)[..., 0]
        r1, r2 = dot1_rate(F, n1, mb), dot1_rate(F, n2, mb)
        return (g2 * C - g1 * S - 2.0 * (r2 * S + r1 * C) * fd
                - (c2 * C - c1 * S) * fd ** 2 - (c2 * S + c1 * C) * fdd)[..., None]


@register
class TranslationDriver(Constraint):
    """The relative displacement along a translational (or cylindrical) joint's axis
    equals f(t), measured from the initial configuration (1 row):

        Φ = (A_a u'_a)ᵀ(r_Pb − r_Pa) − d₀ − f(t)

    — the dot-2 primitive of joints.py along the axis u'_a of body a, so Φ_q is its
    Jacobian, Φ_t = −ḟ and γ = γ_dot2 − f̈.  d₀ is the initial value of the dot-2 term
    (from the given poses, as RevoluteDriver's m'_b).  Drives a steering rack, a
    wheel-pad actuator or a hydraulic cylinder.  p = (s'_a, g_a, s'_b, g_b, u'_a, d₀,
    coefficients of f); registered with a 3-coefficient polynomial for the block test.
    """
    nq, m = NQ, 1
    np_ = NSIDE + 4 + 3

    def __init__(self, names, qidx, pidx, rows, function=None):
        from ..model.timefunctions import Polynomial
        self.function = function if function is not None else Polynomial(3)
        self.np_ = NSIDE + 4 + self.function.ncoef
        super().__init__(names, qidx, pidx, rows)

    def _f(self, t, p, k):
        return self.function(t, p[..., NSIDE + 4:], k)

    def phi(self, t, q, p):
        F = Frames(q, p)
        u = p[..., NSIDE:NSIDE + 3]
        return dot2_phi(F, u) - (p[..., NSIDE + 3] + self._f(t, p, 0))[..., None]

    def phi_q(self, t, q, p):
        return dot2_jac(Frames(q, p), p[..., NSIDE:NSIDE + 3])

    def phi_t(self, t, q, p):
        return (-self._f(t, p, 1) + 0.0 * q[..., 0])[..., None]

    def gamma(self, t, q, v, p):
        F = Frames(q, p, v)
        return dot2_gamma(F, p[..., NSIDE:NSIDE + 3]) - self._f(t, p, 2)[..., None]


@register
class OrientationRow(Constraint):
    """Φ = 2 (E(p̂) p)_k of the initial assembly (module docstring); q = p (4), p = p̂ (4)."""
    nq, np_, m = 4, 4, 1

    def __init__(self, names, qidx, pidx, rows, component=0):
        self.component = int(component)
        super().__init__(names, qidx, pidx, rows)

    def phi(self, t, q, p):
        return (2.0 * dot(E_matrix(p)[..., self.component, :], q))[..., None]

    def phi_q(self, t, q, p):
        return cat([2.0 * E_matrix(p)[..., self.component, :] + 0.0 * q], 1)[..., None, :]

    def gamma(self, t, q, v, p):
        return (0.0 * dot(E_matrix(p)[..., self.component, :], q + v))[..., None]
