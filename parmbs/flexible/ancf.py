"""Planar ANCF beam element (gradient-deficient Euler–Bernoulli; seed 000 §5.1, planar).

Each node carries q_k = (r, ∂r/∂x) ∈ R⁴ (position and slope of the centre line, x the
arclength of the undeformed beam).  A two-node element of length l has the 8 local
coordinates e = (r_i, r'_i, r_j, r'_j) and r(x) = S(ξ) e with ξ = x/l and

    S = [s1 I₂, s2 I₂, s3 I₂, s4 I₂],
    s1 = 1 − 3ξ² + 2ξ³,  s2 = l(ξ − 2ξ² + ξ³),  s3 = 3ξ² − 2ξ³,  s4 = l(ξ³ − ξ²)   [Eq. 29].

The seed writes the 3-D element (⊗ I₃); the planar element used by its §6.1–6.2 is
the same with ⊗ I₂ (digest A1).

Element matrices (all ⊗ I₂, written once as 4×4 arrays per element):

* mass, constant       M = ρAl/420 [[156, 22l, 54, −13l], [22l, 4l², 13l, −3l²],
                                    [54, 13l, 156, −22l], [−13l, −3l², −22l, 4l²]]     [Eq. 30]
* gravity              Q_g = ρAl/12 (6g, l g, 6g, −l g)                                [Eq. 35]
* axial, "simplified"  ε = |r_j − r_i|/l − 1 (constant per element)                   [Eq. 33]
                       Q_long = EA ε P e,  P = ∫₀ˡ S′ᵀS′ dx
                            = (1/l)[[6/5, l/10, −6/5, l/10], [l/10, 2l²/15, −l/10, −l²/30],
                                    [−6/5, −l/10, 6/5, −l/10], [l/10, −l²/30, −l/10, 2l²/15]]
* bending              Q_trans = EI K e,  K = ∫₀ˡ S″ᵀS″ dx
                            = (1/l³)[[12, 6l, −12, 6l], [6l, 4l², −6l, 2l²],
                                     [−12, −6l, 12, −6l], [6l, 2l², −6l, 4l²]]

Errata of the seed handled here (digest §6):

* E1: the seed's K_long has 2l²/30 in its (4,4) block; the element is end-symmetric
  and ∫(s4′)² dx = 2l/15, so P's (4,4) entry is 2l²/15 (same as (2,2)).
* E2: the seed's bending prefactor (EA/l³)ε is wrong; U_b = ½∫EI|r″|² dx gives
  EI/l³ with no ε (with ε an unstretched beam would have no bending stiffness).
* E3: Q_long = EA ε(e) P e is not the gradient of any potential, and its tangent is
  not symmetric (the seed gives no tangent).  Differentiating exactly,

      ∂Q/∂e = EA ε P + EA (P e) ⊗ ∂ε/∂e + EI K,
      ∂ε/∂e = (1/(l d)) (−Δ, 0, Δ, 0),  Δ = r_j − r_i,  d = |Δ|,

  whose middle term is non-symmetric in bent states.  ``AncfElastic`` implements
  this force (``elastic = "seed"``, the default) with that analytic tangent; the
  steppers and adjoints never assume symmetry.  ``AncfElasticConservative``
  (``elastic = "conservative"``) uses the true gradient of U = ½EAlε² + ½EI eᵀKe,
  Q = EA ε ∂d/∂e + EI K e, symmetric tangent EA(l g gᵀ + ε ∂²d/∂e²) + EI K.
* E4: parameter derivatives (width, height, density, E, length) are complex-step
  derivatives of these functions, so ε's dependence on l = L/n_el and the factor e
  are included automatically.

Cross-section: rectangle width × height, A = w h, I = w h³/12 (bending in the plane
of motion, height in-plane).  Parameters per element, in this order:
(ρ, w, h, E, L, n_el) — n_el is a constant entry of p, l = L/n_el.
"""
import numpy as np

from ..model.component import ClosedFormJacobians, Force, register
from ..model.kinematics import dot, stack


def section(p):
    """(A, I) of the rectangular cross-section from p = (ρ, w, h, ...)."""
    w, h = p[..., 1], p[..., 2]
    return w * h, w * h ** 3 / 12.0


def _poly4(C, l):
    """Σ_k C[k] l^k for coefficient matrices C (K, 4, 4): (..., 4, 4), one numpy op per power."""
    l = l[..., None, None]
    out = C[0] + 0.0 * l
    lk = 1.0
    for k in range(1, len(C)):
        lk = lk * l
        out = out + C[k] * lk
    return out


def _coef(entries):
    """Split a 4×4 table of (c, power) into coefficient matrices by power of l."""
    C = np.zeros((3, 4, 4))
    for i, row in enumerate(entries):
        for j, (c, k) in enumerate(row):
            C[k, i, j] = c
    return C


_MASS = _coef([[(156, 0), (22, 1), (54, 0), (-13, 1)],
               [(22, 1), (4, 2), (13, 1), (-3, 2)],
               [(54, 0), (13, 1), (156, 0), (-22, 1)],
               [(-13, 1), (-3, 2), (-22, 1), (4, 2)]])
_AXIAL = _coef([[(1.2, 0), (0.1, 1), (-1.2, 0), (0.1, 1)],
                [(0.1, 1), (2 / 15, 2), (-0.1, 1), (-1 / 30, 2)],
                [(-1.2, 0), (-0.1, 1), (1.2, 0), (-0.1, 1)],
                [(0.1, 1), (-1 / 30, 2), (-0.1, 1), (2 / 15, 2)]])
_BEND = _coef([[(12, 0), (6, 1), (-12, 0), (6, 1)],
               [(6, 1), (4, 2), (-6, 1), (2, 2)],
               [(-12, 0), (-6, 1), (12, 0), (-6, 1)],
               [(6, 1), (2, 2), (-6, 1), (4, 2)]])


def mass4(l):
    """The 4×4 Hermite mass bracket (without ρAl/420)."""
    return _poly4(_MASS, l)


def axial4(l):
    """P = ∫S′ᵀS′ dx (the corrected seed K_long bracket divided by l; erratum E1:
    the (4,4) entry is 2l²/15)."""
    return _poly4(_AXIAL, l) / l[..., None, None]


def bend4(l):
    """K = ∫S″ᵀS″ dx (EI K is the bending stiffness; erratum E2: EI/l³, no ε)."""
    return _poly4(_BEND, l) / (l ** 3)[..., None, None]


def apply4(B, e, dim=2):
    """(B ⊗ I_dim) e for B (..., 4, 4) and e (..., 4·dim)."""
    E = e.reshape(e.shape[:-1] + (4, dim))
    return np.einsum("...ab,...bc->...ac", B, E).reshape(np.broadcast_shapes(B.shape[:-2], e.shape[:-1])
                                                          + (4 * dim,))


def kron4(B, dim=2):
    """B ⊗ I_dim as (..., 4·dim, 4·dim)."""
    out = np.zeros(B.shape[:-2] + (4, dim, 4, dim), dtype=B.dtype)
    for c in range(dim):
        out[..., :, c, :, c] = B
    return out.reshape(B.shape[:-2] + (4 * dim, 4 * dim))


def shape(xi, l):
    """(s1, s2, s3, s4) at ξ for element length l."""
    x2, x3 = xi * xi, xi * xi * xi
    return 1 - 3 * x2 + 2 * x3, l * (xi - 2 * x2 + x3), 3 * x2 - 2 * x3, l * (x3 - x2)


def dshape(xi, l):
    """d s_k / dx at ξ."""
    x2 = xi * xi
    return (-6 * xi + 6 * x2) / l, 1 - 4 * xi + 3 * x2, (6 * xi - 6 * x2) / l, 3 * x2 - 2 * xi


def _elem(p):
    return p[..., 4] / p[..., 5]


def _stretch(q, l, dim=2):
    """Δ = r_j − r_i, d = |Δ|, ε = d/l − 1 (complex-step safe: no abs)."""
    D = q[..., 2 * dim:3 * dim] - q[..., 0:dim]
    d = np.sqrt(dot(D, D))
    return D, d, d / l - 1.0


class _AncfElement(Force):
    """What the ANCF element groups share: the dimension and the cross-section.

    ``DIM`` = 2 (planar, this module) or 3 (spatial, ``ancf3d.py``); the local
    coordinates are e = (r_i, r'_i, r_j, r'_j) ∈ R^{4·DIM}.  ``section(p)`` gives (A, I)
    from the parameters (ρ, d₁, d₂, E, L, n_el): here the rectangle w × h."""
    DIM = 2

    def section(self, p):
        return section(p)


@register
class AncfInertia(_AncfElement):
    """r = M_e a with the constant consistent mass matrix [Eq. 30]."""
    nq, np_ = 8, 6
    inertial = True
    uses_q = False
    uses_a = True

    def mass(self, p):
        A, _ = self.section(p)
        l = _elem(p)
        return kron4((p[..., 0] * A * l / 420.0)[..., None, None] * mass4(l), self.DIM)

    def r(self, t, q, v, a, p):
        return np.einsum("...ij,...j->...i", self.mass(p), a) + 0.0 * q

    def r_a(self, t, q, v, a, p):
        return np.broadcast_to(self.mass(p), q.shape[:-1] + (self.nq, self.nq))

    def energy(self, t, q, v, p):
        """T = ½ vᵀ M v."""
        return 0.5 * np.einsum("...i,...ij,...j->...", v, self.mass(p), v)


@register
class AncfGravity(_AncfElement):
    """r = −Q_g = −ρAl/12 (6g, l g, 6g, −l g) [Eq. 35];  p = (ρ, w, h, E, L, n_el, g_x, g_y)."""
    nq, np_ = 8, 8
    uses_q = False

    def _Q(self, p):
        A, _ = self.section(p)
        l = _elem(p)
        c = p[..., 0] * A * l / 12.0
        g = p[..., 6:6 + self.DIM]
        w = stack([6.0 + 0.0 * l, l, 6.0 + 0.0 * l, -l], -1)          # (..., 4)
        return (c[..., None, None] * w[..., :, None] * g[..., None, :]).reshape(w.shape[:-1] + (self.nq,))

    def r(self, t, q, v, a, p):
        return -self._Q(p) + 0.0 * q

    def energy(self, t, q, v, p):
        """V = −∫ρA g·r dx = −Q_g·e (S integrates exactly)."""
        return -dot(self._Q(p), q)


@register
class AncfElastic(ClosedFormJacobians, _AncfElement):
    """Seed 000 elastic force with errata E1–E3 fixed: r = EA ε P e + EI K e.

    The analytic tangent (``jacobians``) is the exact, non-symmetric derivative."""
    nq, np_ = 8, 6

    def r(self, t, q, v, a, p):
        A, I = self.section(p)
        E, l, d = p[..., 3], _elem(p), self.DIM
        _, _, eps = _stretch(q, l, d)
        return ((E * A * eps)[..., None] * apply4(axial4(l), q, d)
                + (E * I)[..., None] * apply4(bend4(l), q, d))

    def energy(self, t, q, v, p):
        """U = ½EAlε² + ½EI eᵀKe (the potential of the conservative variant; this
        force is its gradient only to first order in ε)."""
        return AncfElasticConservative.energy(self, t, q, v, p)

    def jacobians(self, t, q, v, a, p):
        A, I = self.section(p)
        E, l, d = p[..., 3], _elem(p), self.DIM
        D, dist, eps = _stretch(q, l, d)
        P = axial4(l)
        Pq = apply4(P, q, d)
        deps = np.zeros(np.broadcast_shapes(q.shape, D.shape[:-1] + (self.nq,)), dtype=np.result_type(q, p))
        deps[..., 0:d] = -D
        deps[..., 2 * d:3 * d] = D
        deps = deps / (l * dist)[..., None]
        J = (kron4((E * A * eps)[..., None, None] * P + (E * I)[..., None, None] * bend4(l), d)
             + (E * A)[..., None, None] * Pq[..., :, None] * deps[..., None, :])
        return J, None, None


@register
class AncfElasticConservative(ClosedFormJacobians, _AncfElement):
    """Gradient of U = ½EAlε² + ½EI eᵀKe: r = EA ε ∂d/∂e + EI K e (symmetric tangent)."""
    nq, np_ = 8, 6

    def r(self, t, q, v, a, p):
        A, I = self.section(p)
        E, l, d = p[..., 3], _elem(p), self.DIM
        D, dist, eps = _stretch(q, l, d)
        f = (E * A * eps / dist)[..., None] * D
        z = 0.0 * f
        return (stack([-f, z, f, z], -2).reshape(f.shape[:-1] + (self.nq,))
                + (E * I)[..., None] * apply4(bend4(l), q, d))

    def energy(self, t, q, v, p):
        A, I = self.section(p)
        E, l, d = p[..., 3], _elem(p), self.DIM
        _, _, eps = _stretch(q, l, d)
        return 0.5 * E * A * l * eps ** 2 + 0.5 * E * I * dot(q, apply4(bend4(l), q, d))

    def jacobians(self, t, q, v, a, p):
        A, I = self.section(p)
        E, l, d = p[..., 3], _elem(p), self.DIM
        D, dist, eps = _stretch(q, l, d)
        u = D / dist[..., None]
        uu = u[..., :, None] * u[..., None, :]
        eye = np.eye(d)
        # ∂(EA ε Δ/d)/∂Δ = EA [uuᵀ/l + ε (I − uuᵀ)/d]
        B = (E * A)[..., None, None] * (uu / l[..., None, None] + (eps / dist)[..., None, None] * (eye - uu))
        J = kron4((E * I)[..., None, None] * bend4(l), d)
        J = J + 0.0 * B[..., :1, :1]
        J = np.array(np.broadcast_to(J, np.broadcast_shapes(J.shape, B.shape[:-2] + (self.nq, self.nq))))
        i, j = slice(0, d), slice(2 * d, 3 * d)
        J[..., i, i] += B
        J[..., i, j] -= B
        J[..., j, i] -= B
        J[..., j, j] += B
        return J, None, None


# -- points on a beam ------------------------------------------------------------------------
#
# A beam point sits on one element at the arclength s = c₀ + c₁ L from the root
# (nodes: c₀ = 0, c₁ = k/n_el, so they follow a changing length; user points: c₀ = the
# configured arclength, c₁ = 0).  Its parameters are (c₀, c₁, L, n_el, e) with e the
# element index: l = L/n_el, ξ = s/l − e.  Position r = S(ξ) e_el and slope
# r' = S′(ξ) e_el are linear in the element coordinates.

BEAM_POINT_NP = 5


def beam_point_xi(p):
    """(ξ, l) of a beam point from its 5 parameters (c₀, c₁, L, n_el, e)."""
    L, nel = p[..., 2], p[..., 3]
    l = L / nel
    return (p[..., 0] + p[..., 1] * L) / l - p[..., 4], l


def beam_point_matrices(p, deriv=False, dim=2):
    """S(ξ) (…, dim, 4·dim), or S′(ξ) with ``deriv``, for beam-point parameters p."""
    xi, l = beam_point_xi(p)
    s = dshape(xi, l) if deriv else shape(xi, l)
    w = stack(list(s), -1)                                  # (..., 4)
    out = np.zeros(w.shape[:-1] + (dim, 4, dim), dtype=w.dtype)
    for c in range(dim):
        out[..., c, :, c] = w
    return out.reshape(w.shape[:-1] + (dim, 4 * dim))


def beam_point(q, p, deriv=False, dim=2):
    """r (or r′ with ``deriv``) of a beam point: (…, dim)."""
    return np.einsum("...ij,...j->...i", beam_point_matrices(p, deriv, dim), q)
