"""Plane-stress continuum in a floating frame of reference (FFR): element kernels.

Kinematics (seed 003 §2.1, Eq. 7; digest §3).  A body has a frame with pose
(R, θ) ∈ R²×R and small elastic nodal displacements u_f resolved in the frame.  A
material point with frame coordinates X moves to

    r = R + A(θ) s,   s = X + N(X) u_f                                (seed 003 Eq. 7)

with N the bilinear shape functions of a structured mesh of rectangular quads.  The
generalized coordinates of one element are q_e = (R, θ, u_e) ∈ R¹¹ (u_e: the 8
displacements of its nodes ll, lr, ur, ul); the frame coordinates are shared by every
element of the body, so the frame rows and columns of the assembled matrices couple
to every elastic coordinate (the M_Rf, M_θf blocks of seed 003 Eq. 68).

Inertia without shape-integral bookkeeping.  All body integrals of the planar FFR
mass matrix (Eq. 67–68: ∫ρ, ∫ρ s, ∫ρ sᵀs, ∫ρ N, ∫ρ s̃N, ∫ρ NᵀN) have integrands that
are products of two bilinear functions, which the 2×2 Gauss rule integrates exactly.
So every element is four exact "Gauss masses" m_g = ρ(x) ρ0 t (hx hy/4) at s_g, and
the generalized inertia force is Σ_g m_g (∂r_g/∂q)ᵀ r̈_g (Jourdain, Eq. 66).  With
L̄_g = [Aᵀ, J s_g, N_g] (2×11, J the 90° rotation, N_g the 2×8 interpolation at g)
and the frame-resolved acceleration

    ā_g = Aᵀ R̈ + θ̈ J s_g + N_g ü − θ̇² s_g + 2 θ̇ J N_g u̇              (Eq. 20–24)

the element residual is r_e = Σ_g m_g L̄_gᵀ ā_g (R rows premultiplied by A): the mass
matrix M_e = Σ_g m_g L̄_gᵀL̄_g (Eq. 67) and the quadratic velocity vector h_ω
(Eq. 69–70) in one expression, exact for bilinear elements.  Its three Jacobians are
written analytically below (no complex step on the 10⁵-element hot path).

Elastic force (Eq. 71–74): r = K_e(x) u_e, K_e = x^s E0 K̂_e, K̂_e the linear
plane-stress stiffness of a unit-modulus element (2×2 Gauss, full integration).  For
the structured mesh every K̂_e is the same, so it is computed once per call.

Gravity: r = −Σ_g m_g L̄_gᵀ Aᵀ g (the inertia kernel with ā = −Aᵀg).

Design variable per element x (seed 003 Eq. 78, digest §7): E = x^s E0 (SIMP), ρ by
``plate.density_factor`` (seed003 law with the slope change at 0.1, or linear).

Parameters per element (indices into p, set by ``continua.py``):
  ContinuumInertia  (x, ρ0, t, Lx, Ly, nx, ny, X0, Y0, i/nx, j/ny)          11
  ContinuumGravity  (same, g_x, g_y)                                         13
  ContinuumElastic  (x, E0, ν, t, Lx, Ly, nx, ny, s)                          9
(X0, Y0) is the mesh corner in frame coordinates, (i, j) the element's column/row.
"""
import numpy as np

from ..model.component import ClosedFormJacobians, Constraint, Force, register
from ..model.kinematics import rot, drot, concat
from .plate import _N, _DN, _G, LAWS, density_factor
from .simp import SimpElastic, shared_geometry

_J = np.array([[0.0, -1.0], [1.0, 0.0]])                   # 90° rotation: dA/dθ = A J
_NG = np.zeros((4, 2, 8))                                  # N_g (g, i, 8): u(X_g)_i = N_g[i] · u_e
for _i in range(2):
    _NG[:, _i, _i::2] = _N
_JNG = np.einsum("ij,gjk->gik", _J, _NG)                   # J N_g
_GPOS = 0.5 * (1.0 + _G)                                   # Gauss points in [0, 1]² of the element
_NG_FLAT = _NG.reshape(8, 8)                               # (g·i, k): Σ_g x_gᵀ N_g = flat(x) @ _NG_FLAT
_JNG_FLAT = _JNG.reshape(8, 8)
_NBAR = _NG.sum(0)                                         # N̄ = Σ_g N_g (2, 8)
_JNBAR = _J @ _NBAR
_CM = np.einsum("gik,gil->kl", _NG, _NG)                   # Σ_g N_gᵀ N_g
_CJ = np.einsum("gik,gil->kl", _NG, _JNG)                  # Σ_g N_gᵀ J N_g


def _cells(p):
    """hx, hy and the corner of the element in frame coordinates from the geometry
    block (Lx, Ly, nx, ny, X0, Y0, i/nx, j/ny) at p[..., 3:11]."""
    Lx, Ly, nx, ny = p[..., 3], p[..., 4], p[..., 5], p[..., 6]
    hx, hy = Lx / nx, Ly / ny
    cx, cy = p[..., 7] + p[..., 9] * Lx, p[..., 8] + p[..., 10] * Ly
    return hx, hy, cx, cy


def _gauss_mass(p, law):
    """m_g = ρ(x) ρ0 t hx hy / 4 (the same for the four Gauss points; weights 1)."""
    hx, hy, _, _ = _cells(p)
    return density_factor(p[..., 0], law) * p[..., 1] * p[..., 2] * hx * hy / 4.0


def _gauss_positions(q, p):
    """s_g = X_g + N_g u_e in frame coordinates: (..., 4, 2)."""
    hx, hy, cx, cy = _cells(p)
    X = np.stack([cx[..., None] + _GPOS[:, 0] * hx[..., None],
                  cy[..., None] + _GPOS[:, 1] * hy[..., None]], -1)
    return X + np.einsum("gik,...k->...gi", _NG, q[..., 3:11])


def _jvec(x):
    """J x for (..., 2) arrays."""
    return np.stack([-x[..., 1], x[..., 0]], -1)


def _frame_residual(th, c, s, abar):
    """r = c Σ_g L̄_gᵀ ā_g with the R rows turned to the global frame: (..., 11)."""
    sa = abar.sum(-2)
    rR = rot(th, sa)
    rth = np.einsum("...gi,...gi->...", _jvec(s), abar)
    ru = np.einsum("gik,...gi->...k", _NG, abar)
    return c[..., None] * concat([rR, rth[..., None], ru], -1)


def _lbar(th, s):
    """L̄_g = [Aᵀ, J s_g, N_g] (..., 4, 2, 11), the R columns premultiplied back by A
    (so L̄ᵀ L̄ is the global-frame mass matrix)."""
    sh = np.broadcast_shapes(th.shape, s.shape[:-2])
    L = np.zeros(sh + (4, 2, 11), dtype=np.result_type(th, s))
    c, sn = np.cos(th), np.sin(th)
    AT = np.stack([np.stack([c, sn], -1), np.stack([-sn, c], -1)], -2)      # Aᵀ (..., 2, 2)
    L[..., :, :, 0:2] = AT[..., None, :, :]
    L[..., :, :, 2] = _jvec(s)
    L[..., :, :, 3:11] = _NG
    return L


def _frame_tangent(th, c, s, abar, dabar):
    """∂r/∂(q or v or a) for r = c Σ L̄ᵀ ā: c Σ_g L̄_gᵀ D_g (+ the ∂L̄/∂q terms when
    ``abar`` is given): D (..., 4, 2, 11) = ∂ā_g/∂(·)."""
    L = _lbar(th, s)
    K = np.einsum("...gai,...gaj->...ij", L, dabar)
    if abar is not None:
        # ∂L̄ᵀ/∂θ on the R rows: A J ā;  ∂(J s)ᵀ/∂u on the θ row: āᵀ J N_g
        sa = abar.sum(-2)
        K[..., 0:2, 2] += drot(th, sa)
        K[..., 2, 3:11] += np.einsum("...gi,gik->...k", abar, _JNG)
    return c[..., None, None] * K


@register
class ContinuumInertia(ClosedFormJacobians, Force):
    """M_e(q) a + h_ω(q, v) of one FFR element (seed 003 Eq. 66–70): r = Σ_g m_g L̄_gᵀ ā_g."""
    nq, np_ = 11, 11
    inertial = True
    uses_q = uses_v = uses_a = True

    def __init__(self, names, qidx, pidx, law="seed003"):
        if law not in LAWS:
            raise ValueError(f"unknown density law {law!r}")
        self.law = law
        super().__init__(names, qidx, pidx)

    def _abar(self, q, v, a, s):
        th, w, dth = q[..., 2], v[..., 3:11], v[..., 2]
        b = rot(-th, a[..., 0:2])                                             # Aᵀ R̈
        Nw = np.einsum("gik,...k->...gi", _NG, w)
        Na = np.einsum("gik,...k->...gi", _NG, a[..., 3:11])
        return (b[..., None, :] + a[..., 2, None, None] * _jvec(s) + Na
                - (dth ** 2)[..., None, None] * s + 2.0 * dth[..., None, None] * _jvec(Nw))

    def r(self, t, q, v, a, p):
        s = _gauss_positions(q, p)
        return _frame_residual(q[..., 2], _gauss_mass(p, self.law), s, self._abar(q, v, a, s))

    def energy(self, t, q, v, p):
        """T = ½ Σ_g m_g |Aᵀṙ_g|², Aᵀṙ_g = AᵀṘ + θ̇ J s_g + N_g u̇."""
        s = _gauss_positions(q, p)
        vl = (rot(-q[..., 2], v[..., 0:2])[..., None, :] + v[..., 2, None, None] * _jvec(s)
              + np.einsum("gik,...k->...gi", _NG, v[..., 3:11]))
        return 0.5 * _gauss_mass(p, self.law) * np.einsum("...gi,...gi->...", vl, vl)

    def jacobians(self, t, q, v, a, p):
        """(∂r/∂q, ∂r/∂v, ∂r/∂a) written block by block through per-element Gauss sums
        (S1 = Σ s_g, Σ|s_g|², Σ s_gᵀN_g, Σ (Js_g)ᵀN_g ...) and the constant shape sums
        N̄ = Σ N_g, Σ N_gᵀN_g, Σ N_gᵀJN_g: no (ne, 4, 2, 11) intermediates on the hot
        path (``_jacobians_generic`` is the same algebra as L̄ᵀD products, for the test)."""
        th, dth, ddth = q[..., 2], v[..., 2], a[..., 2]
        c = _gauss_mass(p, self.law)
        s = _gauss_positions(q, p)
        abar = self._abar(q, v, a, s)
        lead = abar.shape[:-2]
        dt = abar.dtype
        Js = _jvec(s)
        flat = lambda x: x.reshape(lead + (8,))                     # (…, g, i) -> (…, 8)
        S1 = s.sum(-2)
        SS = np.einsum("...gi,...gi->...", s, s)
        sN = flat(s) @ _NG_FLAT                                      # Σ s_gᵀ N_g
        JsN = flat(Js) @ _NG_FLAT                                    # Σ (J s_g)ᵀ N_g
        cth, sth = np.cos(th), np.sin(th)
        A = np.stack([np.stack([cth, -sth], -1), np.stack([sth, cth], -1)], -2)   # (…, 2, 2)
        AN = A @ _NBAR                                               # A N̄ (…, 2, 8)
        # -- mass matrix Σ L̄ᵀL̄
        Ma = np.zeros(lead + (11, 11), dt)
        Ma[..., 0, 0] = Ma[..., 1, 1] = 4.0
        ARs = rot(th, _jvec(S1))                                     # A J S1
        Ma[..., 0:2, 2] = ARs
        Ma[..., 2, 0:2] = ARs
        Ma[..., 0:2, 3:11] = AN
        Ma[..., 3:11, 0:2] = np.swapaxes(AN, -1, -2)
        Ma[..., 2, 2] = SS
        Ma[..., 2, 3:11] = JsN
        Ma[..., 3:11, 2] = JsN
        Ma[..., 3:11, 3:11] = _CM
        # -- ∂r/∂v: θ̇ column from d_g = −2θ̇ s_g + 2 J N_g u̇, u̇ columns from 2θ̇ J N_g
        Nw = np.einsum("gik,...k->...gi", _NG, v[..., 3:11])
        d = -2.0 * dth[..., None, None] * s + 2.0 * _jvec(Nw)
        Cv = np.zeros(lead + (11, 11), dt)
        Cv[..., 0:2, 2] = rot(th, d.sum(-2))
        Cv[..., 2, 2] = np.einsum("...gi,...gi->...", Js, d)
        Cv[..., 3:11, 2] = flat(d) @ _NG_FLAT
        t2 = 2.0 * dth
        Cv[..., 0:2, 3:11] = t2[..., None, None] * (A @ _JNBAR)
        Cv[..., 2, 3:11] = t2[..., None] * sN
        np.multiply(t2[..., None, None], _CJ, out=Cv[..., 3:11, 3:11])
        # -- ∂r/∂q: θ column from −J AᵀR̈ (+ A J Σā), u columns from (θ̈ J − θ̇²) N_g (+ āᵀJN_g)
        Jb = _jvec(rot(-th, a[..., 0:2]))
        sa = abar.sum(-2)
        Kq = np.zeros(lead + (11, 11), dt)
        Kq[..., 0:2, 2] = rot(th, -4.0 * Jb) + drot(th, sa)
        Kq[..., 2, 2] = -np.einsum("...i,...i->...", Js.sum(-2), Jb)
        Kq[..., 3:11, 2] = -(Jb @ _NBAR)
        w2 = dth ** 2
        Kq[..., 0:2, 3:11] = A @ (ddth[..., None, None] * _JNBAR - w2[..., None, None] * _NBAR)
        Kq[..., 2, 3:11] = ddth[..., None] * sN - w2[..., None] * JsN + flat(abar) @ _JNG_FLAT
        uu = Kq[..., 3:11, 3:11]
        np.multiply(ddth[..., None, None], _CJ, out=uu)
        uu -= w2[..., None, None] * _CM
        cc = c[..., None, None]
        Kq *= cc                               # in place: three fewer 10⁵·121 temporaries
        Cv *= cc
        Ma *= cc
        return Kq, Cv, Ma

    def _jacobians_generic(self, t, q, v, a, p):
        """The Jacobians as c Σ_g L̄_gᵀ D_g products (the textbook form of ``jacobians``)."""
        th, dth = q[..., 2], v[..., 2]
        c = _gauss_mass(p, self.law)
        s = _gauss_positions(q, p)
        abar = self._abar(q, v, a, s)
        sh = abar.shape[:-2]
        L = _lbar(th, s)
        Ma = c[..., None, None] * np.einsum("...gai,...gaj->...ij", L, L)
        # ∂ā/∂v: θ̇ column −2θ̇ s + 2 J N u̇, u̇ columns 2θ̇ J N
        Dv = np.zeros(sh + (4, 2, 11), dtype=abar.dtype)
        Nw = np.einsum("gik,...k->...gi", _NG, v[..., 3:11])
        Dv[..., 2] = -2.0 * dth[..., None, None] * s + 2.0 * _jvec(Nw)
        Dv[..., 3:11] = 2.0 * dth[..., None, None, None] * _JNG
        Cv = _frame_tangent(th, c, s, None, Dv)
        # ∂ā/∂q: θ column −J AᵀR̈, u columns (θ̈ J − θ̇² I) N
        Dq = np.zeros_like(Dv)
        Dq[..., 2] = -_jvec(rot(-th, a[..., 0:2]))[..., None, :]
        Dq[..., 3:11] = a[..., 2, None, None, None] * _JNG - (dth ** 2)[..., None, None, None] * _NG
        Kq = _frame_tangent(th, c, s, abar, Dq)
        return Kq, Cv, Ma

    def r_p(self, t, q, v, a, p, cols=None):
        """∂r/∂p; the density column alone (the topology design) analytically: r is
        linear in the Gauss mass c(x), so ∂r/∂x = r evaluated with dc/dx — one real
        kernel call instead of a complex one (dρ/dx of the law by a scalar complex step)."""
        if cols is None or list(cols) != [0] or np.iscomplexobj(p) or np.iscomplexobj(q):
            return super().r_p(t, q, v, a, p, cols)
        x = p[..., 0]
        dfac = density_factor(x + 1j * 1e-30, self.law).imag / 1e-30
        hx, hy, _, _ = _cells(p)
        dc = dfac * p[..., 1] * p[..., 2] * hx * hy / 4.0
        s = _gauss_positions(q, p)
        return _frame_residual(q[..., 2], dc, s, self._abar(q, v, a, s))[..., None]


@register
class ContinuumGravity(ClosedFormJacobians, Force):
    """Weight of one FFR element: r = −Σ_g m_g L̄_gᵀ Aᵀ g (seed 003 Eq. 76 with b = g);
    p = (inertia parameters, g_x, g_y)."""
    nq, np_ = 11, 13

    def __init__(self, names, qidx, pidx, law="seed003"):
        if law not in LAWS:
            raise ValueError(f"unknown density law {law!r}")
        self.law = law
        super().__init__(names, qidx, pidx)

    def _abar(self, q, p, s):
        return -rot(-q[..., 2], p[..., 11:13])[..., None, :] + 0.0 * s

    def r(self, t, q, v, a, p):
        s = _gauss_positions(q, p)
        return _frame_residual(q[..., 2], _gauss_mass(p, self.law), s, self._abar(q, p, s))

    def energy(self, t, q, v, p):
        """V = −Σ_g m_g g·(R + A s_g)."""
        s = _gauss_positions(q, p)
        r = q[..., None, 0:2] + rot(q[..., 2, None], s)
        return -_gauss_mass(p, self.law) * np.einsum("...i,...gi->...", p[..., 11:13], r)

    def jacobians(self, t, q, v, a, p):
        th = q[..., 2]
        s = _gauss_positions(q, p)
        abar = self._abar(q, p, s)
        D = np.zeros(abar.shape[:-2] + (4, 2, 11), dtype=abar.dtype)
        D[..., 2] = -_jvec(abar)                 # ∂(−Aᵀg)/∂θ = J Aᵀg = −J ā  (d Aᵀ/dθ = −J Aᵀ)
        return _frame_tangent(th, _gauss_mass(p, self.law), s, abar, D), None, None


def unit_stiffness(nu, t, hx, hy):
    """K̂ (..., 8, 8): linear plane-stress stiffness of an hx × hy bilinear element
    with E = 1 (2×2 Gauss): t Σ_g (hx hy/4) Bᵀ D B, ε = (u_x,x, u_y,y, u_x,y + u_y,x)."""
    sx, sy = 2.0 / hx, 2.0 / hy
    dN = _DN * np.stack(np.broadcast_arrays(sx, sy), -1)[..., None, None, :]   # (..., g, k, 2)
    B = np.zeros(dN.shape[:-2] + (3, 8), dtype=dN.dtype)
    B[..., 0, 0::2] = dN[..., 0]
    B[..., 1, 1::2] = dN[..., 1]
    B[..., 2, 0::2] = dN[..., 1]
    B[..., 2, 1::2] = dN[..., 0]
    f = 1.0 / (1.0 - nu * nu)
    z = 0.0 * nu
    D = f[..., None, None] * np.stack([np.stack([1.0 + z, nu, z], -1), np.stack([nu, 1.0 + z, z], -1),
                                      np.stack([z, z, 0.5 * (1.0 - nu)], -1)], -2)
    w = t * hx * hy / 4.0
    return w[..., None, None] * np.einsum("...gai,...gab,...gbj->...ij", B, D[..., None, :, :], B)


@register
class ContinuumElastic(SimpElastic, Force):
    """Elastic force of one FFR element r = x^s E0 K̂ u_e (seed 003 Eq. 71–74, 78);
    q = u_e (8), p = (x, E0, ν, t, Lx, Ly, nx, ny, s)."""
    nq, np_ = 8, 9

    def stiffness(self, p):
        """(x^s E0 (...), K̂ (..., 8, 8) or one shared (lead..., 1, 8, 8))."""
        fac = p[..., 0] ** p[..., 8] * p[..., 1]
        geo = shared_geometry(p[..., 2:8])       # structured mesh: one K̂ for every element
        nu, t, Lx, Ly, nx, ny = (geo[..., k] for k in range(6))
        return fac, unit_stiffness(nu, t, Lx / nx, Ly / ny)

    def energy_partials(self, q, p):
        """U_e, ∂U_e/∂u_e (= r) and ∂U_e/∂p (ne, 9) at a real state, analytically:
        U = ½ x^s E0 w, w = u_eᵀK̂u_e:  ∂U/∂x = s x^(s−1) E0 w/2 … ∂U/∂s = ln(x) U; the six
        geometry/material columns of K̂ by a complex step of K̂ alone (one element when
        K̂ is shared), contracted with u_e — no complex copy of the 10⁵-element state."""
        from .simp import energy_partials
        fac, K = self.stiffness(p)
        return energy_partials(q, p, fac, K, lambda g: unit_stiffness(g[..., 0], g[..., 1], g[..., 2] / g[..., 4],
                                                                      g[..., 3] / g[..., 5]))

    def r_p(self, t, q, v, a, p, cols=None):
        """∂r/∂p; the density column analytically: ∂r/∂x = s x^(s−1) E0 K̂ u_e."""
        if cols is None or list(cols) != [0] or np.iscomplexobj(p) or np.iscomplexobj(q):
            return super().r_p(t, q, v, a, p, cols)
        fac, K = self.stiffness(p)
        x, s = p[..., 0], p[..., 8]
        return (s * x ** (s - 1.0) * p[..., 1])[..., None, None] * np.einsum("...ij,...j->...i", K, q)[..., None]


@register
class ContinuumRevolute(Constraint):
    """A continuum point (frame point X + nodal displacement u) pinned to a rigid point:

        Φ = R_c + A(θ_c)(X + u) − R_b − A(θ_b) s_b                    (seed 003 Eq. 33)

    q = (R_c, θ_c, u (2), R_b, θ_b) (8; u of a clamped node or of the frame origin
    reads ground's zero slots), p = (X0, Y0, Lx, Ly, i/nx, j/ny, P̄_b, c̄_b) (10):
    X = (X0 + (i/nx) Lx, Y0 + (j/ny) Ly) (all zero for the frame origin), s_b = P̄_b − c̄_b."""
    nq, np_, m = 8, 10, 2

    def _parts(self, q, p):
        X = p[..., 0:2] + p[..., 4:6] * p[..., 2:4]
        return X + q[..., 3:5], p[..., 6:8] - p[..., 8:10]

    def phi(self, t, q, p):
        sc, sb = self._parts(q, p)
        return q[..., 0:2] + rot(q[..., 2], sc) - q[..., 5:7] - rot(q[..., 7], sb)

    def phi_q(self, t, q, p):
        sc, sb = self._parts(q, p)
        th = q[..., 2]
        dc = drot(th, sc)
        J = np.zeros(dc.shape[:-1] + (2, 8), dtype=np.result_type(q, p))
        J[..., 0, 0] = J[..., 1, 1] = 1.0
        J[..., 0, 5] = J[..., 1, 6] = -1.0
        J[..., :, 2] = dc
        c, s = np.cos(th), np.sin(th)
        J[..., 0, 3], J[..., 0, 4], J[..., 1, 3], J[..., 1, 4] = c, -s, s, c
        J[..., :, 7] = -drot(q[..., 7], sb)
        return J

    def gamma(self, t, q, v, p):
        sc, sb = self._parts(q, p)
        th, w = q[..., 2], v[..., 2]
        return (-rot(th, sc) * (w ** 2)[..., None] + 2.0 * w[..., None] * drot(th, v[..., 3:5])
                + rot(q[..., 7], sb) * (v[..., 7] ** 2)[..., None])


@register
class ContinuumClamp(Constraint):
    """One elastic coordinate held at zero, u_k = 0 (1 row): the undeformed initial
    state of a continuum (initial assembly rows); q = (u_k), p = (zero)."""
    nq, np_, m = 1, 1, 1

    def phi(self, t, q, p):
        return q + 0.0 * p

    def phi_q(self, t, q, p):
        return np.ones(np.broadcast_shapes(q.shape[:-1], p.shape[:-1]) + (1, 1), dtype=np.result_type(q, p))

    def gamma(self, t, q, v, p):
        return 0.0 * (q + v + p)
