"""Plane-stress continuum: bilinear quads, absolute nodal coordinates, St. Venant–Kirchhoff.

Kinematics (why not a floating frame of reference).  Issue 5 suggests a floating frame
(rigid frame + small elastic displacements).  This element instead uses the *absolute*
nodal positions r_k ∈ R² of every node as coordinates (the continuum analogue of the
ANCF beam next door) with the Green–Lagrange strain E = ½(FᵀF − I) and a
St. Venant–Kirchhoff plane-stress law S = λ* tr(E) I + 2μ E,
λ* = Eν/(1−ν²), μ = E/(2(1+ν)).  Reasons:

* E is exactly invariant under rigid rotation: a plate swinging through large angles
  has zero elastic force whatever the angle (tests/test_plate.py checks it), with no
  small-rotation error and no reference conditions (mean axes, tied nodes) to choose;
* the mass matrix is constant and linear in the element density, gravity is a constant
  load: no quadratic-velocity (Coriolis/centrifugal) terms, no state-dependent body
  integrals — ∂M/∂x_e is element-local and trivial, which is what a field of 10⁵
  design variables needs;
* joints and points are linear in the coordinates (γ = 0), so the beam joint
  machinery (``joints._PointPair``) serves plates unchanged;
* for small strains SVK reduces to the linear plane-stress element the FFR would use;
  the price is a nonlinear (geometric) tangent, written analytically below, and the
  rigid motion carried by the elastic coordinates (fine for the implicit steppers).

Element: 4 nodes (ll, lr, ur, ul) of an hx × hy rectangle (hx = Lx/nx, hy = Ly/ny),
coordinates e = (r_ll, r_lr, r_ur, r_ul) ∈ R⁸, 2×2 Gauss quadrature (exact for the
mass matrix; full integration of the stiffness).  Every kernel is numpy over all
elements at once (einsum), no Python loop per element, and complex-step safe.

Material interpolation per element design variable x_e (one entry of p each):

* stiffness (SIMP): E(x) = x^s E0, s = ``penalization`` (3);
* density, ``law = "seed003"`` (seed 003 Eq. 78, digest §7): ρ = c x^q ρ0 for
  x < 0.1 and ρ = x ρ0 for x ≥ 0.1, c = 1e5, q = 6 — continuous at 0.1
  (1e5·0.1⁶ = 0.1) with a slope jump from 6ρ0 to ρ0, so ∂ρ/∂x is one-sided at exactly
  0.1 (the branch is chosen on Re x: the upper branch at 0.1); ``law = "linear"``:
  ρ = x ρ0.

Parameters per element (indices into p, see ``plates.py``):
  PlateInertia (x, ρ0, t, Lx, Ly, nx, ny);  PlateGravity (same, g_x, g_y);
  PlateElastic (x, E0, ν, t, Lx, Ly, nx, ny, s).
"""
import numpy as np

from ..model.component import ClosedFormJacobians, Constraint, Force, register
from ..model.kinematics import dot
from .hexa import box

SEED003_C, SEED003_Q, SEED003_SWITCH = 1e5, 6, 0.1
LAWS = ("seed003", "linear")

# node k of the reference square [−1, 1]²: (ξ_k, η_k), order ll, lr, ur, ul; Gauss points
# ξ_k/√3 (w = 1); N (g, k), dN/dξ (g, k, 2) — the 2-D case of hexa.box (the same bits)
_XI, _G, _N, _DN = box(2)
_MASS4 = np.einsum("gk,gl->kl", _N, _N)       # ∫N_k N_l dξdη (= [[4,2,1,2],...]/9), exact


def density_factor(x, law="seed003"):
    """ρ(x)/ρ0 of the density law (complex-step safe: the branch is chosen on Re x)."""
    if law == "linear":
        return x
    return np.where(np.real(x) < SEED003_SWITCH, SEED003_C * x ** SEED003_Q, x)


def _h(p, i):
    """(hx, hy) from (Lx, Ly, nx, ny) stored at p[..., i:i+4]."""
    return p[..., i] / p[..., i + 2], p[..., i + 1] / p[..., i + 3]


def grad_n(hx, hy):
    """∂N_k/∂X at the Gauss points: (..., g, k, 2)."""
    s = np.stack([2.0 / hx, 2.0 / hy], -1)
    return _DN * s[..., None, None, :]


def deformation_gradient(x, dN):
    """F_iJ = Σ_k x_ki ∂N_k/∂X_J at each Gauss point: x (..., 8), dN (..., g, k, 2) -> (..., g, 2, 2)."""
    X = x.reshape(x.shape[:-1] + (4, 2))
    return np.einsum("...ki,...gkJ->...giJ", X, dN)


def lame(E, nu):
    """Plane-stress (λ*, μ)."""
    return E * nu / (1.0 - nu * nu), E / (2.0 * (1.0 + nu))


def green_stress(F, lam, mu):
    """Green–Lagrange E and 2nd Piola–Kirchhoff S (SVK, plane stress), (..., g, 2, 2)."""
    C = np.einsum("...iI,...iJ->...IJ", F, F)
    E = 0.5 * (C - np.eye(2))
    tr = E[..., 0, 0] + E[..., 1, 1]
    S = 2.0 * mu[..., None, None, None] * E + (lam[..., None] * tr)[..., None, None] * np.eye(2)
    return E, S


def _mass(p, law):
    hx, hy = _h(p, 3)
    c = density_factor(p[..., 0], law) * p[..., 1] * p[..., 2] * hx * hy / 4.0   # ρ t detJ
    M4 = c[..., None, None] * _MASS4
    out = np.zeros(M4.shape[:-2] + (4, 2, 4, 2), dtype=M4.dtype)
    out[..., :, 0, :, 0] = M4
    out[..., :, 1, :, 1] = M4
    return out.reshape(M4.shape[:-2] + (8, 8))


class _Law:
    def __init__(self, names, qidx, pidx, law="seed003"):
        if law not in LAWS:
            raise ValueError(f"unknown density law {law!r}")
        self.law = law
        super().__init__(names, qidx, pidx)


@register
class PlateInertia(_Law, Force):
    """r = M_e a, M_e = ρ(x) t ∫NᵀN dA ⊗ I₂ (consistent, constant in q)."""
    nq, np_ = 8, 7
    inertial = True
    uses_q = False
    uses_a = True

    def mass(self, p):
        return _mass(p, self.law)

    def r(self, t, q, v, a, p):
        return np.einsum("...ij,...j->...i", self.mass(p), a) + 0.0 * q

    def r_a(self, t, q, v, a, p):
        M = self.mass(p)
        return np.broadcast_to(M, np.broadcast_shapes(q.shape[:-1], M.shape[:-2]) + (8, 8))

    def energy(self, t, q, v, p):
        return 0.5 * np.einsum("...i,...ij,...j->...", v, self.mass(p), v)


@register
class PlateGravity(_Law, Force):
    """r = −ρ(x) t (hx hy/4) g at each of the 4 nodes;  p = (x, ρ0, t, Lx, Ly, nx, ny, g_x, g_y)."""
    nq, np_ = 8, 9
    uses_q = False

    def _Q(self, p):
        hx, hy = _h(p, 3)
        c = density_factor(p[..., 0], self.law) * p[..., 1] * p[..., 2] * hx * hy / 4.0
        f = c[..., None] * p[..., 7:9]
        return np.concatenate([f, f, f, f], -1)

    def r(self, t, q, v, a, p):
        return -self._Q(p) + 0.0 * q

    def energy(self, t, q, v, p):
        return -dot(self._Q(p), q)


@register
class PlateElastic(ClosedFormJacobians, Force):
    """SVK plane-stress internal force r = ∫ t F S ∇N dA with E(x) = x^s E0 (SIMP).

    Analytic tangent, a_{k,i} = (F ∇N_k)_i:
      K_{ki,lj} = t Σ_g detJ [λ a_ki a_lj + μ((FFᵀ)_ij ∇N_k·∇N_l + a_li a_kj) + δ_ij ∇N_k·S∇N_l]."""
    nq, np_ = 8, 9

    def _setup(self, q, p):
        hx, hy = _h(p, 4)
        dN = grad_n(hx, hy)
        F = deformation_gradient(q, dN)
        Ey = p[..., 0] ** p[..., 8] * p[..., 1]
        lam, mu = lame(Ey, p[..., 2])
        w = p[..., 3] * hx * hy / 4.0                         # t detJ (Gauss weights 1)
        return dN, F, lam, mu, w

    def r(self, t, q, v, a, p):
        dN, F, lam, mu, w = self._setup(q, p)
        _, S = green_stress(F, lam, mu)
        f = np.einsum("...giI,...gIJ,...gkJ->...ki", F, S, dN)
        return (w[..., None, None] * f).reshape(f.shape[:-2] + (8,))

    def energy(self, t, q, v, p):
        dN, F, lam, mu, w = self._setup(q, p)
        E, _ = green_stress(F, lam, mu)
        tr = E[..., 0, 0] + E[..., 1, 1]
        W = 0.5 * lam[..., None] * tr ** 2 + mu[..., None] * np.einsum("...IJ,...IJ->...", E, E)
        return w * W.sum(-1)

    def jacobians(self, t, q, v, a, p):
        dN, F, lam, mu, w = self._setup(q, p)
        _, S = green_stress(F, lam, mu)
        A = np.einsum("...giI,...gkI->...gki", F, dN)                   # a_{k,i}
        FF = np.einsum("...giI,...gjI->...gij", F, F)
        NN = np.einsum("...gkI,...glI->...gkl", dN, dN)
        NSN = np.einsum("...gkI,...gIJ,...glJ->...gkl", dN, S, dN)
        K = (lam[..., None, None, None, None] * np.einsum("...gki,...glj->...kilj", A, A)
             + mu[..., None, None, None, None] * (np.einsum("...gij,...gkl->...kilj", FF, NN)
                                                  + np.einsum("...gli,...gkj->...kilj", A, A))
             + np.einsum("...gkl,ij->...kilj", NSN, np.eye(2)))
        K = w[..., None, None, None, None] * K
        return K.reshape(K.shape[:-4] + (8, 8)), None, None


# -- initial assembly: an undeformed plate in a pose ----------------------------------------------
#
# Node 0 = node_0_0 (the plate origin), node c = node_nx_0, d = r_c − r_0 (the plate's
# local x edge, length Lx when undeformed), d⊥ = (−d_y, d_x).  Every other node k at
# reference position (X_k, Y_k) = ((i/nx) Lx, (j/ny) Ly) gets two rows
#     r_k − r_0 − (i/nx) d − ((j/ny) Ly/Lx) d⊥ = 0,
# plus |d|² − Lx² = 0: 2·nodes − 3 rows, the 3 left (x, y, angle) are fixed by joints
# and ``independent`` entries.  All rows are linear in q except |d|², so γ is 0 or 2|ḋ|².


@register
class PlateShape(Constraint):
    """One row of the undeformed plate: q = (r_0, r_c, r_k) (6), p = (Lx, Ly, i/nx, j/ny);
    ``component`` 0/1 selects x/y."""
    nq, np_, m = 6, 4, 1

    def __init__(self, names, qidx, pidx, rows, component=0):
        self.component = component
        super().__init__(names, qidx, pidx, rows)

    def _coef(self, p):
        return p[..., 2], p[..., 3] * p[..., 1] / p[..., 0]

    def phi(self, t, q, p):
        c = self.component
        a, b = self._coef(p)
        d = q[..., 2:4] - q[..., 0:2]
        dperp_c = -d[..., 1] if c == 0 else d[..., 0]
        return (q[..., 4 + c] - q[..., c] - a * d[..., c] - b * dperp_c)[..., None]

    def phi_q(self, t, q, p):
        c, o = self.component, 1 - self.component
        a, b = self._coef(p)
        J = np.zeros(np.broadcast_shapes(q.shape[:-1], p.shape[:-1]) + (1, 6), dtype=np.result_type(q, p))
        J[..., 0, 4 + c] = 1.0
        J[..., 0, c] = -1.0 + a
        J[..., 0, 2 + c] = -a
        sgn = 1.0 if c == 0 else -1.0             # −b d⊥_c = +b d_y (c=0) or −b d_x (c=1)
        J[..., 0, 2 + o] = sgn * b
        J[..., 0, o] = -sgn * b
        return J

    def gamma(self, t, q, v, p):
        return 0.0 * self.phi(t, q, p) + 0.0 * v[..., :1]


@register
class PlatePose(Constraint):
    """One row fixing the plate's pose, q = (r_0, r_c) (4), p = (value, Lx):
    ``x``/``y``: r_0 − value;  ``angle``: (A(value)e₁ × d)/Lx;  ``unit``: |d|² − Lx²."""
    nq, np_, m = 4, 2, 1

    def __init__(self, names, qidx, pidx, rows, coordinate="angle"):
        self.coordinate = coordinate
        super().__init__(names, qidx, pidx, rows)

    def phi(self, t, q, p):
        c, v0, L = self.coordinate, p[..., 0], p[..., 1]
        d = q[..., 2:4] - q[..., 0:2]
        if c in ("x", "y"):
            val = q[..., 0 if c == "x" else 1] - v0 + 0.0 * L
        elif c == "angle":
            val = (np.cos(v0) * d[..., 1] - np.sin(v0) * d[..., 0]) / L
        else:
            val = dot(d, d) - L * L + 0.0 * v0
        return val[..., None]

    def phi_q(self, t, q, p):
        c, v0, L = self.coordinate, p[..., 0], p[..., 1]
        J = np.zeros(np.broadcast_shapes(q.shape[:-1], p.shape[:-1]) + (1, 4), dtype=np.result_type(q, p))
        if c in ("x", "y"):
            J[..., 0, 0 if c == "x" else 1] = 1.0
            return J
        if c == "angle":
            g = np.stack(np.broadcast_arrays(-np.sin(v0) / L, np.cos(v0) / L), -1)
        else:
            g = 2.0 * (q[..., 2:4] - q[..., 0:2])
        J[..., 0, 2:4] = g
        J[..., 0, 0:2] = -g
        return J

    def gamma(self, t, q, v, p):
        z = 0.0 * (q[..., 0] + p[..., 0] + v[..., 0])
        if self.coordinate == "unit":
            dd = v[..., 2:4] - v[..., 0:2]
            z = z + 2.0 * dot(dd, dd)
        return z[..., None]
