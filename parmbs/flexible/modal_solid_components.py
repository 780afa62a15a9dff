"""Components of a modally reduced hexahedral floating-frame solid (``spatial.solids.S.reduction``).

The elastic displacement field of the solid (solid.py) is u_f = V η: V (n_f × K) the
reduction basis (modal_solid.py: M-normalized eigenmodes of the solid clamped at its
hub, plus attachment modes), η ∈ R^K.  The body's coordinates are (R, p, η): frame
origin, Euler parameters, modal coordinates.  At a Gauss point s_g = X_g + Φ_g η with
Φ_g = N_g V_e (3 × K).

Inertia.  The full-order residual of solid.py (Jourdain, seed 003 Eq. 66),
r_R = A Σ m_g ā_g, r_p = 2Gᵀ Σ m_g s_g × ā_g, r_u = Σ m_g N_gᵀ ā_g with
ā_g = b + W s_g + 2 ω̃ Φ_g η̇ + Φ_g η̈ (b = AᵀR̈, ω = 2Gṗ, α = 2Gp̈, W = α̃ + ω̃ω̃), is of
degree two in s_g, so projected on V (r_η = Vᵀ r_u) it is carried *exactly* by the
mass moments of the body (seed 003's "standard input data", in 3-D and without Taylor
truncation: trilinear hexahedra make every integrand at most quadratic in η):

    m = Σ m_g,  S0 = Σ m_g X_g,  J0 = Σ m_g X_g X_gᵀ (3 × 3),  S̄ = Σ m_g Φ_g (3 × K),
    C1_ijk = Σ m_g X_gi Φ_gjk (3 × 3 × K),  C2_ikjl = Σ m_g Φ_gik Φ_gjl (3 × K × 3 × K).

With S1 = S0 + S̄η, the second moment J(η)_ij = Σ m s_i s_j = J0 + C1η + (C1η)ᵀ + C2:ηη
and P(η)_ijk = Σ m s_i Φ_jk = C1_ijk + C2_iljk η_l:

    Σ m ā       = m b + W S1 + 2 ω̃ S̄ η̇ + S̄ η̈
    Σ m s × ā   = S1 × b + ε_abc W_cd J_bd + 2 ε_abc ω̃_cd P_bdk η̇_k + ε_abc P_bck η̈_k
    Σ m Φᵀ ā    = S̄ᵀ b + W_ij P_jik + 2 ω̃_ij C2_ikjl η̇_l + M̂ η̈,   M̂_kl = C2_ikil = Vᵀ M_ff V

so r = (A Σ m ā, 2Gᵀ Σ m s × ā, Σ m Φᵀā) is Vᵀ (full-order residual at u = Vη) with the
frame rows unchanged: K = n_f modes reproduce the full-order solid exactly
(tests/test_solid_modal.py).  Elastic force: ``ReducedElastic`` of modal_components.py
(r_η = K̂ η, K̂ = Vᵀ K_ff V), shared with the planar body.  Gravity (ā_g = −Aᵀg):
r = (−m g, 2Gᵀ S1 × (−Aᵀg), −S̄ᵀAᵀg).  A free node k of the mesh: u_k = Φ_k η
(``ReducedSolidSpherical``: solid.SolidSpherical composed with that linear map).

The body data are entries of p driven by the element densities (modal.py, design.py);
every residual is linear in them.  Every class takes ``modes`` = K; ``sizes(K)``.
"""
import numpy as np

from ..model.component import Constraint, register
from ..spatial.kinematics import G_matrix, cross, mv, rotation, skew
from .modal_components import ModalInertia, ReducedGravity, _Modal, block_layout, unpack_blocks
from .solid import SolidSpherical

_EPS = np.zeros((3, 3, 3))
_EPS[0, 1, 2] = _EPS[1, 2, 0] = _EPS[2, 0, 1] = 1.0
_EPS[0, 2, 1] = _EPS[2, 1, 0] = _EPS[1, 0, 2] = -1.0


def _blocks(K):
    return (("m", ()), ("S0", (3,)), ("J0", (3, 3)), ("Sbar", (3, K)), ("C1", (3, 3, K)), ("C2", (3, K, 3, K)))


def solid_layout(K):
    """Slices of the ReducedSolidInertia parameter block: m, S0, J0, S̄, C1, C2."""
    return block_layout(_blocks(K))


def _moments(p, K, eta):
    """(m, S1, J(η), P(η), S̄, C2) of the module docstring."""
    m, S0, J0, Sb, C1, C2 = unpack_blocks(p, _blocks(K))
    S1 = S0 + mv(Sb, eta)
    C1e = np.einsum("...ijk,...k->...ij", C1, eta)
    C2e = np.einsum("...iljk,...l->...ijk", C2, eta)                    # Σ m (Φη)_i Φ_jk
    J = J0 + C1e + np.swapaxes(C1e, -1, -2) + np.einsum("...ijk,...k->...ij", C2e, eta)
    return m, S1, J, C1 + C2e, Sb, C2


def _frame(q, v, a):
    """(A, G, b = AᵀR̈, ω̃, W = α̃ + ω̃ω̃) with ω = 2Gṗ, α = 2Gp̈."""
    e = q[..., 3:7]
    A, G = rotation(e), G_matrix(e)
    w, al = 2.0 * mv(G, v[..., 3:7]), 2.0 * mv(G, a[..., 3:7])
    Wt = skew(w)
    return A, G, mv(np.swapaxes(A, -1, -2), a[..., 0:3]), Wt, skew(al) + Wt @ Wt


@register
class ReducedSolidInertia(ModalInertia):
    """M(q) a + h_ω(q, v) of a reduced hexahedral FFR solid (module docstring);
    q = (R, p, η) (7 + K), p = (m, S0, J0, S̄, C1, C2) (13 + 12K + 9K²)."""
    nq, np_ = 8, 34
    nframe, layout = 7, staticmethod(solid_layout)

    def r(self, t, q, v, a, p):
        K = self.K
        eta, etad, etadd = q[..., 7:], v[..., 7:], a[..., 7:]
        m, S1, J, P, Sb, C2 = _moments(p, K, eta)
        A, G, b, Wt, W = _frame(q, v, a)
        Pd = np.einsum("...bdk,...k->...bd", P, etad)
        Pa = np.einsum("...bck,...k->...bc", P, etadd)
        sa = m[..., None] * b + mv(W, S1) + 2.0 * mv(Wt, mv(Sb, etad)) + mv(Sb, etadd)
        ssa = (cross(S1, b) + np.einsum("abc,...cd,...bd->...a", _EPS, W, J)
               + 2.0 * np.einsum("abc,...cd,...bd->...a", _EPS, Wt, Pd) + np.einsum("abc,...bc->...a", _EPS, Pa))
        reta = (np.einsum("...ik,...i->...k", Sb, b) + np.einsum("...ij,...jik->...k", W, P)
                + 2.0 * np.einsum("...ij,...ikjl,...l->...k", Wt, C2, etad)
                + np.einsum("...ikil,...l->...k", C2, etadd))
        rR = mv(A, sa)
        rp = 2.0 * mv(np.swapaxes(G, -1, -2), ssa)
        lead = np.broadcast_shapes(rR.shape[:-1], rp.shape[:-1], reta.shape[:-1])
        return np.concatenate([np.broadcast_to(x, lead + x.shape[-1:]) for x in (rR, rp, reta)], -1)

    def r_p(self, t, q, v, a, p, cols=None):
        """∂r/∂p analytically: r is linear in the body data, so every column is a product of
        the state alone (the complex step would carry np = 13 + 12K + 9K² complex copies).
        With E1_abd = ε_abc W_cd, E2_abd = ε_abc ω̃_cd (the sums of the module docstring):
          m: (A b, 0, 0);  S0: (A W, −T b̃, 0);  J0_bd: (0, T E1_·bd, 0);
          S̄_ik: (A(W_·i η_k + 2ω̃_·i η̇_k + e_i η̈_k), −T b̃_·i η_k, b_i e_k);
          C1_ijk: (0, T[(E1_·ij + E1_·ji) η_k + 2 E2_·ij η̇_k + ε_·ij η̈_k], W_ji e_k);
          C2_ikjl: (0, T[E1_·ij η_kη_l + 2E2_·ij η_kη̇_l + ε_·ij η_kη̈_l],
                    W_ji η_k e_l + (2ω̃_ij η̇_l + δ_ij η̈_l) e_k),   T = 2Gᵀ."""
        K = self.K
        lay, npar = solid_layout(K)
        sh = np.broadcast_shapes(q.shape[:-1], v.shape[:-1], a.shape[:-1], p.shape[:-1])
        dt = np.result_type(q, v, a, p)
        eta, etad, etadd = q[..., 7:], v[..., 7:], a[..., 7:]
        A, G, b, Wt, W = _frame(q, v, a)
        T = 2.0 * np.swapaxes(G, -1, -2)
        E1 = np.einsum("abc,...cd->...abd", _EPS, W)
        E2 = np.einsum("abc,...cd->...abd", _EPS, Wt)
        bt = skew(b)
        I3 = np.eye(3)
        out = np.zeros(sh + (7 + K, npar), dt)

        def put(block, rR=None, rp=None, reta=None):
            s = lay[block]
            n = s.stop - s.start
            if rR is not None:
                out[..., 0:3, s] = np.broadcast_to(rR, sh + (3, n))
            if rp is not None:
                out[..., 3:7, s] = np.broadcast_to(rp, sh + (4, n))
            if reta is not None:
                out[..., 7:, s] = np.broadcast_to(reta, sh + (K, n))
        put("m", rR=mv(A, b)[..., None])
        put("S0", rR=A @ W, rp=-T @ bt)
        put("J0", rp=T @ E1.reshape(E1.shape[:-2] + (9,)))
        dsa = (W[..., :, :, None] * eta[..., None, None, :] + 2.0 * Wt[..., :, :, None] * etad[..., None, None, :]
               + I3[:, :, None] * etadd[..., None, None, :])                        # (…, a, i, k)
        dss = -bt[..., :, :, None] * eta[..., None, None, :]
        dre = b[..., None, :, None] * np.eye(K)[:, None, :]                          # (…, k', i, k)
        put("Sbar", rR=A @ dsa.reshape(dsa.shape[:-2] + (3 * K,)), rp=T @ dss.reshape(dss.shape[:-2] + (3 * K,)),
            reta=dre.reshape(dre.shape[:-2] + (3 * K,)))
        dss1 = ((E1 + np.swapaxes(E1, -1, -2))[..., None] * eta[..., None, None, None, :]
                + 2.0 * E2[..., None] * etad[..., None, None, None, :] + _EPS[..., None] * etadd[..., None, None, None, :])
        dre1 = np.swapaxes(W, -1, -2)[..., None, :, :, None] * np.eye(K)[:, None, None, :]   # (…, k', i, j, k)
        put("C1", rp=T @ dss1.reshape(dss1.shape[:-3] + (9 * K,)), reta=dre1.reshape(dre1.shape[:-3] + (9 * K,)))
        ee = eta[..., :, None]
        dss2 = (E1[..., :, :, None, :, None] * (ee * eta[..., None, :])[..., None, None, :, None, :]
                + 2.0 * E2[..., :, :, None, :, None] * (ee * etad[..., None, :])[..., None, None, :, None, :]
                + _EPS[:, :, None, :, None] * (ee * etadd[..., None, :])[..., None, None, :, None, :])   # (…, a, i, k, j, l)
        eK = np.eye(K)
        dre2 = (np.swapaxes(W, -1, -2)[..., None, :, None, :, None] * eta[..., None, None, :, None, None]
                * eK[:, None, None, None, :]
                + (2.0 * Wt[..., None, :, None, :, None] * etad[..., None, None, None, None, :]
                   + I3[None, :, None, :, None] * etadd[..., None, None, None, None, :]) * eK[:, None, :, None, None])
        put("C2", rp=T @ dss2.reshape(dss2.shape[:-4] + (9 * K * K,)),
            reta=dre2.reshape(dre2.shape[:-4] + (9 * K * K,)))
        return out if cols is None else out[..., np.asarray(cols)]

    def energy(self, t, q, v, p):
        """T = ½ Σ m_g |AᵀṘ + ω × s_g + Φ_g η̇|² in the body data."""
        K = self.K
        e, eta, etad = q[..., 3:7], q[..., 7:], v[..., 7:]
        m, S1, J, P, Sb, C2 = _moments(p, K, eta)
        bv = mv(np.swapaxes(rotation(e), -1, -2), v[..., 0:3])
        w = 2.0 * mv(G_matrix(e), v[..., 3:7])
        Mh = np.einsum("...ikil->...kl", C2)
        rot = np.sum(w * w, -1) * np.trace(J, axis1=-2, axis2=-1) - np.einsum("...i,...ij,...j->...", w, J, w)
        return 0.5 * (m * np.sum(bv * bv, -1) + 2.0 * np.sum(bv * cross(w, S1), -1)
                      + 2.0 * np.sum(bv * mv(Sb, etad), -1) + rot
                      + 2.0 * np.einsum("...ij,...jik,...k->...", skew(w), P, etad)
                      + np.einsum("...k,...kl,...l->...", etad, Mh, etad))


@register
class ReducedSolidGravity(ReducedGravity):
    """Weight of a reduced solid (ā_g = −Aᵀg): r_R = −m g, r_p = −2Gᵀ (S1 × Aᵀg),
    r_η = −S̄ᵀAᵀg; q = (R, p, η), p = (m, S0, S̄, g) (7 + 3K)."""
    nq, np_ = 8, 10
    dim, nframe = 3, 7

    def r(self, t, q, v, a, p):
        m, S1, Sb, g = self._parts(q, p)
        e = q[..., 3:7]
        ag = mv(np.swapaxes(rotation(e), -1, -2), g)
        rR = -m[..., None] * g + 0.0 * q[..., 0:3]
        rp = -2.0 * mv(np.swapaxes(G_matrix(e), -1, -2), cross(S1, ag))
        reta = -np.einsum("...ik,...i->...k", Sb, ag)
        lead = np.broadcast_shapes(rR.shape[:-1], rp.shape[:-1], reta.shape[:-1])
        return np.concatenate([np.broadcast_to(x, lead + x.shape[-1:]) for x in (rR, rp, reta)], -1)

    def energy(self, t, q, v, p):
        """V = −g·(m R + A S1)."""
        m, S1, Sb, g = self._parts(q, p)
        return -np.sum(g * (m[..., None] * q[..., 0:3] + mv(rotation(q[..., 3:7]), S1)), -1)


@register
class ReducedSolidSpherical(_Modal, Constraint):
    """A free node k of a reduced solid held on a point of a rigid body or ground:
    solid.SolidSpherical with u = Φ_k η (Φ_k its 3 rows of V, constants of p).
    q = (R_c, p_c, η (K), r_b, p_b) (14 + K); p = (X0, Y0, Z0, Lx, Ly, Lz, i/nx, j/ny,
    k/nz, Φ_k (3K, row-major), s'_b (3), g_b) (13 + 3K)."""
    nq, np_, m = 15, 16, 3

    @staticmethod
    def sizes(K):
        return 14 + K, 13 + 3 * K

    def _full(self, q, p, v=None):
        """(q, p[, v]) of the full-order SolidSpherical: u = Φ_k η, u̇ = Φ_k η̇."""
        K = self.K
        Phi = p[..., 9:9 + 3 * K].reshape(p.shape[:-1] + (3, K))

        def lift(x):
            u = mv(Phi, x[..., 7:7 + K])
            lead = u.shape[:-1]
            parts = (x[..., 0:7], u, x[..., 7 + K:14 + K])
            return np.concatenate([np.broadcast_to(y, lead + y.shape[-1:]) for y in parts], -1)
        pf = np.concatenate([p[..., 0:9], p[..., 9 + 3 * K:13 + 3 * K]], -1)
        return lift(q), pf, (None if v is None else lift(v)), Phi

    _base = SolidSpherical(["k"], np.zeros((1, 17)), np.zeros((1, 13)), np.zeros((1, 3)))

    def phi(self, t, q, p):
        qf, pf, _, _ = self._full(q, p)
        return self._base.phi(t, qf, pf)

    def phi_q(self, t, q, p):
        K = self.K
        qf, pf, _, Phi = self._full(q, p)
        Jf = self._base.phi_q(t, qf, pf)
        return np.concatenate([Jf[..., 0:7], Jf[..., 7:10] @ Phi, Jf[..., 10:17]], -1)

    def gamma(self, t, q, v, p):
        qf, pf, vf, _ = self._full(q, p, v)
        return self._base.gamma(t, qf, vf, pf)
