"""Spatial continuum (trilinear hexahedra) in a floating frame of reference: element kernels.

Kinematics (seed 003 §2.1, Eq. 7; digest §3).  A solid has a frame with pose (R, p):
origin R ∈ R³ and Euler parameters p (spatial/kinematics.py, A = A(p), ω' = 2 G(p) ṗ
in the frame), and small elastic nodal displacements u_f resolved in the frame.  A
material point with frame coordinates X moves to

    r = R + A(p) s,   s = X + N(X) u_f                                 (seed 003 Eq. 7)

with N the trilinear shape functions of a structured mesh of boxes (hexa.py).  Element
coordinates q_e = (R, p, u_e) ∈ R³¹ (u_e: the 24 displacements of its 8 nodes).

Inertia as in the planar continuum (continuum.py): every body integral of seed 003
Eq. 67–70 has an integrand that is a product of two trilinear functions, integrated
exactly by the 2×2×2 Gauss rule, so an element is 8 exact "Gauss masses"
m_g = ρ(x) ρ0 hx hy hz/8 at s_g, and Jourdain's principle (Eq. 66) gives
r_e = Σ_g m_g L̄_gᵀ ā_g.  Virtual displacements in the frame:
A ᵀδr_g = AᵀδR − s̃_g δπ' + N_g δu with δπ' = 2 G δp, so

    r_R = A Σ_g m_g ā_g,   r_p = 2 Gᵀ Σ_g m_g s_g × ā_g,   r_u = Σ_g m_g N_gᵀ ā_g,
    ā_g = Aᵀ R̈ + ω̇' × s_g + ω' × (ω' × s_g) + 2 ω' × N_g u̇ + N_g ü      (Eq. 20–25)

with ω̇' = 2 G p̈ (Ġ ṗ = 0).  At u = 0 with the frame at the centre of mass this is
exactly the Newton–Euler form of the rigid body (spatial/bodies.py: m R̈ and
2Gᵀ(J'ω̇' + ω' × J'ω')), so the rotational mass block has p as a null vector like the
rigid body's; the body set adds the same ``EulerRegularization`` and ``Normalization``.

Elastic force (Eq. 71–74): r = x^s E0 K̂ u_e, K̂ the unit-modulus trilinear stiffness
(hexa.unit_stiffness3; shared by every element of the structured mesh).
Structural damping (optional, ``SolidDamping``): r = β_K x^s E0 K̂ u̇_e (Rayleigh,
stiffness-proportional: ζ_i = β_K ω_i / 2 in elastic mode i).
Gravity (Eq. 76, b = g): the inertia kernel with ā_g = −Aᵀ g.
Density law per element x (seed 003 Eq. 78): ``plate.density_factor``.

Parameters per element (indices into p, set by ``solids.py``):
  SolidInertia  (x, ρ0, Lx, Ly, Lz, nx, ny, nz, X0, Y0, Z0, i/nx, j/ny, k/nz)   14
  SolidGravity  (same, g_x, g_y, g_z)                                           17
  SolidElastic  (x, E0, ν, Lx, Ly, Lz, nx, ny, nz, s)                            10
  SolidDamping  (same, β_K)                                                     11
Markers (seed 003 §2.3): ``SolidSpherical`` holds a node of the mesh on a point of a
rigid body or ground (the nodal position R + A(X + u), Eq. 33; hex nodes carry no
rotation, so a node marker has no orientation of its own — locked and revolute joints
attach at the frame or at clamped nodes, solids.py).
"""
import numpy as np

from ..model.component import ClosedFormJacobians, Constraint, Force, cs_jacobian, register
from ..spatial.body_kernels import _Y
from ..spatial.kinematics import (E0 as PID, G_matrix, bilinear, cross, mv, rotation, rotation_dot, rotation_jacobian,
                                  skew)
from .hexa import G3, N3, unit_stiffness3
from .plate import _Law, density_factor
from .simp import SimpElastic, shared_geometry

_NG = np.zeros((8, 3, 24))                                  # N_g (g, i, 24): u(X_g)_i = N_g[i] · u_e
for _i in range(3):
    _NG[:, _i, _i::3] = N3
_GPOS = 0.5 * (1.0 + G3)                                    # Gauss points in [0, 1]³ of the element


def _geometry(p):
    """(h (..., 3), corner (..., 3)) from (Lx, Ly, Lz, nx, ny, nz, X0, Y0, Z0, i/nx, j/ny, k/nz)
    at p[..., 2:14]."""
    L, n = p[..., 2:5], p[..., 5:8]
    return L / n, p[..., 8:11] + p[..., 11:14] * L


def gauss_mass(p, law):
    """m_g = ρ(x) ρ0 hx hy hz / 8 (the same at the 8 Gauss points; weights 1)."""
    h, _ = _geometry(p)
    return density_factor(p[..., 0], law) * p[..., 1] * h[..., 0] * h[..., 1] * h[..., 2] / 8.0


def interpolate(u):
    """N_g u at the 8 Gauss points: u (..., 24) -> (..., 8, 3) (N_g u = Σ_k N_gk u_k)."""
    return np.einsum("gk,...ki->...gi", N3, u.reshape(u.shape[:-1] + (8, 3)))


def gauss_positions(q, p):
    """s_g = X_g + N_g u_e in frame coordinates: (..., 8, 3); q = (R, p, u_e)."""
    h, c = _geometry(p)
    X = c[..., None, :] + _GPOS * h[..., None, :]
    return X + interpolate(q[..., 7:31])


def _nt(y):
    """Σ_g N_gᵀ y_g: y (..., 8, 3) -> (..., 24)."""
    out = np.einsum("gk,...gi->...ki", N3, y)
    return out.reshape(out.shape[:-2] + (24,))


def _lhat(e, s):
    """L_g (..., 8, 3, 31) = [Aᵀ, −2 s̃_g G, N_g]: r = Σ m_g L_gᵀ ā_g, and ∂ā_g/∂a = L_g."""
    A = rotation(e)
    G = G_matrix(e)
    lead = np.broadcast_shapes(A.shape[:-2], s.shape[:-2])
    L = np.zeros(lead + (8, 3, 31), dtype=np.result_type(A, s))
    L[..., 0:3] = np.swapaxes(A, -1, -2)[..., None, :, :]
    L[..., 3:7] = -2.0 * skew(s) @ G[..., None, :, :]
    L[..., 7:31] = _NG
    return L


def frame_residual(e, m, s, abar):
    """r = Σ_g m_g L̄_gᵀ ā_g (31): (A Σ m ā, 2 Gᵀ Σ m s × ā, Σ m N_gᵀ ā)."""
    sa = abar.sum(-2)
    rR = mv(rotation(e), sa)
    rp = 2.0 * mv(np.swapaxes(G_matrix(e), -1, -2), cross(s, abar).sum(-2))
    ru = _nt(abar)
    lead = np.broadcast_shapes(rR.shape[:-1], rp.shape[:-1], ru.shape[:-1], np.shape(m))
    out = np.concatenate([np.broadcast_to(x, lead + x.shape[-1:]) for x in (rR, rp, ru)], -1)
    return np.asarray(m)[..., None] * out


@register
class SolidInertia(ClosedFormJacobians, _Law, Force):
    """M_e(q) a + h_ω(q, v) of one hexahedral FFR element (module docstring)."""
    nq, np_ = 31, 14
    inertial = True
    uses_q = uses_v = uses_a = True

    @staticmethod
    def omegas(q, v, a):
        """(ω', ω̇') = (2 G ṗ, 2 G p̈)."""
        G = G_matrix(q[..., 3:7])
        return 2.0 * mv(G, v[..., 3:7]), 2.0 * mv(G, a[..., 3:7])

    def _abar(self, q, v, a, s):
        w, dw = self.omegas(q, v, a)
        b = mv(np.swapaxes(rotation(q[..., 3:7]), -1, -2), a[..., 0:3])            # Aᵀ R̈
        Nw = interpolate(v[..., 7:31])
        Na = interpolate(a[..., 7:31])
        w_, dw_ = w[..., None, :], dw[..., None, :]
        return b[..., None, :] + cross(dw_, s) + cross(w_, cross(w_, s)) + 2.0 * cross(w_, Nw) + Na

    def r(self, t, q, v, a, p):
        s = gauss_positions(q, p)
        return frame_residual(q[..., 3:7], gauss_mass(p, self.law), s, self._abar(q, v, a, s))

    def energy(self, t, q, v, p):
        """T = ½ Σ_g m_g |AᵀṘ + ω' × s_g + N_g u̇|²."""
        s = gauss_positions(q, p)
        w = 2.0 * mv(G_matrix(q[..., 3:7]), v[..., 3:7])
        vl = (mv(np.swapaxes(rotation(q[..., 3:7]), -1, -2), v[..., 0:3])[..., None, :] + cross(w[..., None, :], s)
              + interpolate(v[..., 7:31]))
        return 0.5 * gauss_mass(p, self.law) * np.einsum("...gi,...gi->...", vl, vl)

    def jacobians(self, t, q, v, a, p):
        """(∂r/∂q, ∂r/∂v, ∂r/∂a) in closed form at a real state (complex: the default
        complex step).  With L_g = ∂ā_g/∂a (``_lhat``), ω = 2Gṗ, α = 2Gp̈, c_g = N_g u̇,
        F_g = ω s_gᵀ + (ω·s_g) I − 2 s_g ωᵀ − 2 c̃_g = ∂ā_g/∂ω:
          ∂r/∂a = Σ m L_gᵀ L_g;
          ∂r/∂v = Σ m L_gᵀ [0, 2 F_g G, 2 ω̃ N_g];
          ∂r/∂q = Σ m L_gᵀ [0, ∂(AᵀR̈)/∂p + 2 s̃_g G(p̈) − 2 F_g G(ṗ), (α̃ + ω̃²) N_g]
                  + (R, p): ∂A/∂p Σ m ā;  (p, p): 2 Y(Σ m s × ā);  (p, u): −2 Gᵀ Σ m ã_g N_g
        (∂(G x)/∂p = −G(x) for the 4-vector x; Gᵀy = Y(y) p, spatial/body_kernels.py)."""
        if any(np.iscomplexobj(x) for x in (q, v, a, p)):
            return super().jacobians(t, q, v, a, p)
        e, ed, edd = q[..., 3:7], v[..., 3:7], a[..., 3:7]
        m = gauss_mass(p, self.law)
        s = gauss_positions(q, p)
        abar = self._abar(q, v, a, s)
        L = _lhat(e, s)
        lead = L.shape[:-3]
        G = G_matrix(e)
        w, al = 2.0 * mv(G, ed), 2.0 * mv(G, edd)
        c = interpolate(v[..., 7:31])
        wg = w[..., None, :]
        F = (wg[..., :, None] * s[..., None, :] + np.einsum("...i,...gi->...g", w, s)[..., None, None] * np.eye(3)
             - 2.0 * s[..., :, None] * wg[..., None, :] - 2.0 * skew(c))                     # (..., 8, 3, 3)
        W = skew(w)
        Dv = np.zeros(lead + (8, 3, 31))
        Dv[..., 3:7] = 2.0 * F @ G[..., None, :, :]
        Dv[..., 7:31] = 2.0 * np.einsum("...ij,gjk->...gik", W, _NG)
        Dq = np.zeros(lead + (8, 3, 31))
        conj = np.array([1.0, -1.0, -1.0, -1.0])
        ATb = rotation_jacobian(e * conj, a[..., 0:3]) * conj                               # ∂(Aᵀ R̈)/∂p
        Dq[..., 3:7] = (ATb[..., None, :, :] + 2.0 * skew(s) @ G_matrix(edd)[..., None, :, :]
                        - 2.0 * F @ G_matrix(ed)[..., None, :, :])
        Dq[..., 7:31] = np.einsum("...ij,gjk->...gik", skew(al) + W @ W, _NG)
        mm = m[..., None, None]
        return frame_tangent(e, s, m, L, abar, Dq), mm * _ltd(L, Dv), mm * _ltd(L, L)


def _ltd(L, D):
    """Σ_g L_gᵀ D_g (..., 31, 31) as one batched matrix product."""
    sh = L.shape[:-3]
    return np.swapaxes(L.reshape(sh + (24, 31)), -1, -2) @ D.reshape(D.shape[:-3] + (24, 31))


def frame_tangent(e, s, m, L, abar, Dq):
    """∂r/∂q of r = Σ m L_gᵀ ā_g with Dq = ∂ā_g/∂q: Σ m L_gᵀ Dq_g plus the terms of
    ∂L_gᵀ/∂q (SolidInertia.jacobians)."""
    Kq = _ltd(L, Dq)
    Kq[..., 0:3, 3:7] += rotation_jacobian(e, abar.sum(-2))
    Kq[..., 3:7, 3:7] += 2.0 * _Y(cross(s, abar).sum(-2))
    Kq[..., 3:7, 7:31] -= 2.0 * np.swapaxes(G_matrix(e), -1, -2) @ _nt_rows(skew(abar))
    Kq *= m[..., None, None]
    return Kq


def _nt_rows(Y):
    """Σ_g Y_g N_g: Y (..., 8, 3, 3) -> (..., 3, 24)."""
    out = np.einsum("...gij,gk->...ikj", Y, N3)
    return out.reshape(out.shape[:-2] + (24,))


@register
class SolidGravity(ClosedFormJacobians, _Law, Force):
    """Weight of one hexahedral FFR element: the inertia kernel with ā_g = −Aᵀg
    (seed 003 Eq. 76, b = g); p = (inertia parameters, g_x, g_y, g_z)."""
    nq, np_ = 31, 17

    def r(self, t, q, v, a, p):
        s = gauss_positions(q, p)
        e = q[..., 3:7]
        abar = -mv(np.swapaxes(rotation(e), -1, -2), p[..., 14:17])[..., None, :] + 0.0 * s
        return frame_residual(e, gauss_mass(p, self.law), s, abar)

    def jacobians(self, t, q, v, a, p):
        """(∂r/∂q, None, None) in closed form at a real state: ∂ā/∂p = −∂(Aᵀg)/∂p."""
        if any(np.iscomplexobj(x) for x in (q, p)):
            return super().jacobians(t, q, v, a, p)
        e = q[..., 3:7]
        s = gauss_positions(q, p)
        abar = -mv(np.swapaxes(rotation(e), -1, -2), p[..., 14:17])[..., None, :] + 0.0 * s
        L = _lhat(e, s)
        Dq = np.zeros(L.shape)
        conj = np.array([1.0, -1.0, -1.0, -1.0])
        Dq[..., 3:7] = -(rotation_jacobian(e * conj, p[..., 14:17]) * conj)[..., None, :, :]
        return frame_tangent(e, s, gauss_mass(p, self.law), L, abar, Dq), None, None


def simp_stiffness(p):
    """(x^s E0 (...), K̂ (..., 24, 24) — one shared (…, 1, 24, 24) on a structured mesh)
    from p = (x, E0, ν, Lx, Ly, Lz, nx, ny, nz, s, …)."""
    fac = p[..., 0] ** p[..., 9] * p[..., 1]
    geo = shared_geometry(p[..., 2:9])
    h = geo[..., 1:4] / geo[..., 4:7]
    return fac, unit_stiffness3(geo[..., 0], h[..., 0], h[..., 1], h[..., 2])


@register
class SolidElastic(SimpElastic, Force):
    """Elastic force of one hexahedral element r = x^s E0 K̂ u_e (seed 003 Eq. 71–74, 78);
    q = u_e (24), p = (x, E0, ν, Lx, Ly, Lz, nx, ny, nz, s)."""
    nq, np_ = 24, 10

    def stiffness(self, p):
        """(x^s E0 (...), K̂ (..., 24, 24) — one shared (…, 1, 24, 24) on a structured mesh)."""
        return simp_stiffness(p)

    def energy_partials(self, q, p):
        """U_e, ∂U_e/∂u_e (= r) and ∂U_e/∂p (ne, 10) at a real state (the strain-energy
        objective, continuum_objectives.py): analytic in x, E0, s; the geometry and ν
        columns by a complex step of K̂ alone (one element on a structured mesh)."""
        from .simp import energy_partials
        fac, K = self.stiffness(p)
        return energy_partials(q, p, fac, K, lambda g: unit_stiffness3(g[..., 0], g[..., 1] / g[..., 4],
                                                                       g[..., 2] / g[..., 5], g[..., 3] / g[..., 6]))



@register
class SolidDamping(Force):
    """Stiffness-proportional (Rayleigh) structural damping of one hexahedral element,
    r = β_K x^s E0 K̂ u̇_e: the d q̇_f term of the FFR equations (seed 003 Eq. 66 has
    none) with d = β_K K_ff(x), the SIMP stiffness of SolidElastic
    (``spatial.solids.S.stiffness_damping`` = β_K in s).  Elastic mode i of the body
    then has the damping ratio ζ_i = β_K ω_i / 2 (Clough & Penzien, Dynamics of
    Structures, §12-5), so modes above the time step's resolution decay physically
    instead of ringing on (generalized-α at ρ∞ = 0.9 removes < 0.2 % per period at
    ωh = 2).  No energy: it dissipates; the strain-energy objective does not read it.

    q = u_e (24), p = (x, E0, ν, Lx, Ly, Lz, nx, ny, nz, s, β_K) (11).  r is linear in
    u̇_e and in β_K x^s E0, so ∂r/∂v = β_K x^s E0 K̂ and the x, E0, s, β_K columns of
    ∂r/∂p are closed forms (∂(x^s)/∂x = s x^(s−1), ∂(x^s)/∂s = ln x · x^s); the ν and
    geometry columns complex-step K̂ alone (one element on a structured mesh)."""
    nq, np_ = 24, 11
    uses_q, uses_v = False, True
    _COLS = (0, 1, 9, 10)                     # x, E0, s, β_K: the closed-form columns

    def _Kv(self, p, v):
        fac, K = simp_stiffness(p)
        return fac, K, np.einsum("...ij,...j->...i", K, v)

    def r(self, t, q, v, a, p):
        fac, _, Kv = self._Kv(p, v)
        return (p[..., 10] * fac)[..., None] * Kv

    def r_v(self, t, q, v, a, p):
        fac, K, _ = self._Kv(p, v)
        C = (p[..., 10] * fac)[..., None, None] * K
        return np.broadcast_to(C, np.broadcast_shapes(v.shape[:-1], C.shape[:-2]) + (24, 24))

    def r_q(self, t, q, v, a, p):
        return np.zeros(np.broadcast_shapes(q.shape[:-1], p.shape[:-1]) + (24, 24), dtype=np.result_type(q, p))

    def jacobians(self, t, q, v, a, p):
        return None, self.r_v(t, q, v, a, p), None

    def r_p(self, t, q, v, a, p, cols=None):
        cols = np.arange(self.np_) if cols is None else np.asarray(cols)
        if any(np.iscomplexobj(x) for x in (v, p)):
            return super().r_p(t, q, v, a, p, cols)
        fac, _, Kv = self._Kv(p, v)
        x, E0, s, bk = p[..., 0], p[..., 1], p[..., 9], p[..., 10]
        dfac = {0: bk * s * x ** (s - 1.0) * E0, 1: bk * x ** s, 9: bk * fac * np.log(x), 10: fac}
        lead = np.broadcast_shapes(v.shape[:-1], p.shape[:-1])
        out = np.zeros(lead + (24, len(cols)))
        for j, c in enumerate(cols):
            if int(c) in dfac:
                out[..., j] = dfac[int(c)][..., None] * Kv
        rest = ~np.isin(cols, self._COLS)
        if np.any(rest):                      # ν, geometry: complex step of K̂ (simp.energy_partials)
            geo = shared_geometry(p[..., 2:9])
            dK = cs_jacobian(lambda g: unit_stiffness3(g[..., 0], g[..., 1] / g[..., 4], g[..., 2] / g[..., 5],
                                                       g[..., 3] / g[..., 6]), [geo], 0, cols[rest] - 2)
            out[..., rest] = (bk * fac)[..., None, None] * np.einsum("...ijk,...j->...ik", dK, v)
        return out

def node_position(p):
    """X of a mesh node from (X0, Y0, Z0, Lx, Ly, Lz, i/nx, j/ny, k/nz) at p[..., 0:9]."""
    return p[..., 0:3] + p[..., 6:9] * p[..., 3:6]


@register
class SolidSpherical(Constraint):
    """A node of a solid held on a point of a rigid body or ground (seed 003 Eq. 33 with
    the relative position only):

        Φ = R_c + A(p_c)(X + u) − r_b − A(p_b) s'_b                       (3 rows)
        γ = 2B(ṗ_c, ṗ_c)(X + u) + 2 Ȧ_c u̇ − 2B(ṗ_b, ṗ_b) s'_b

    q = (R_c, p_c, u (3), r_b, p_b) (17), p = (X0, Y0, Z0, Lx, Ly, Lz, i/nx, j/ny, k/nz,
    s'_b (3), g_b) (13): g_b = 1 puts ground's identity pose on side b (spatial/joints.py)."""
    nq, np_, m = 17, 13, 3

    def _parts(self, q, p):
        sc = node_position(p) + q[..., 7:10]
        eb = q[..., 13:17] + p[..., 12:13] * PID
        return sc, eb, p[..., 9:12]

    def phi(self, t, q, p):
        sc, eb, sb = self._parts(q, p)
        return q[..., 0:3] + mv(rotation(q[..., 3:7]), sc) - q[..., 10:13] - mv(rotation(eb), sb)

    def phi_q(self, t, q, p):
        sc, eb, sb = self._parts(q, p)
        Jc = rotation_jacobian(q[..., 3:7], sc)
        Jb = rotation_jacobian(eb, sb)
        lead = np.broadcast_shapes(Jc.shape[:-2], Jb.shape[:-2])
        I = np.broadcast_to(np.eye(3), lead + (3, 3))
        parts = [I, Jc, rotation(q[..., 3:7]), -I, -Jb]
        return np.concatenate([np.broadcast_to(x, lead + x.shape[-2:]) for x in parts], -1)

    def gamma(self, t, q, v, p):
        sc, eb, sb = self._parts(q, p)
        ec, vc, vb = q[..., 3:7], v[..., 3:7], v[..., 13:17]
        return (2.0 * mv(bilinear(vc, vc), sc) + 2.0 * mv(rotation_dot(ec, vc), v[..., 7:10])
                - 2.0 * mv(bilinear(vb, vb), sb))
