"""Components of a modally reduced floating-frame continuum (``continua.C.reduction``).

The elastic displacement field of the body is u_f = V η: V (n_f × K) the reduction
basis (parmbs/flexible/modal.py: mass-normalized eigenmodes of the body clamped at
its hub), η ∈ R^K the modal coordinates.  The body's coordinates are (R, θ, η).

Inertia (seed 003 §2.4, Eq. 66–70, projected onto V).  The full-order residual
r = Σ_g m_g L̄_gᵀ ā_g of ``continuum.py`` with L̄_g = [Aᵀ, J s_g, N_g V] and
s_g = X_g + N_g V η is a polynomial of degree two in η, so it is carried *exactly*
by the body integrals ("standard input data" of seed 003, planar, without Taylor
truncation: bilinear quads make every integrand at most quadratic in η):

    m = Σ m_g,  S0 = Σ m_g X_g,  I0 = Σ m_g |X_g|²,  S̄ = Σ m_g N_g V  (2 × K),
    b = Σ m_g Vᵀ N_gᵀ X_g,  a = Σ m_g Vᵀ N_gᵀ J X_g  (K),
    M̂ = Σ m_g Vᵀ N_gᵀ N_g V = Vᵀ M_ff V,  Ĝ = Σ m_g Vᵀ N_gᵀ J N_g V  (K × K, skew).

With S1 = S0 + S̄η, I(η) = I0 + 2 bᵀη + ηᵀM̂η, b_a = AᵀR̈, ω = θ̇, α = θ̈:

    r_R = A [m b_a + (α J − ω²) S1 + S̄ η̈ + 2ω J S̄ η̇]
    r_θ = (J S1)ᵀ b_a + α I(η) + (a + Ĝη)ᵀ η̈ + 2ω (b + M̂ᵀη)ᵀ η̇
    r_η = S̄ᵀ b_a + α (a + Ĝη) + M̂ η̈ − ω² (b + M̂η) + 2ω Ĝ η̇

which is Vᵀ (full-order residual at u = Vη) with the frame rows unchanged: K = n_f
modes reproduce the full-order body exactly.  Elastic force: r_η = K̂ η, K̂ = Vᵀ K_ff V
(seed 003 Eq. 71–74 projected); its Rayleigh damping r_η = β_K K̂ η̇ (``ReducedDamping``,
used by the reduced solid).  Gravity: r = −Σ m_g L̄_gᵀ Aᵀg.  A joint node k: u_k = Φ_k η
(Φ_k the node's 2 rows of V).

The body data are entries of the parameter vector p (driven by the element densities
through the eigenproblem: modal.py and sensitivity/design.py), so ∂r/∂(data) is the
ordinary ∂r/∂p of a component and the chain to ρ is applied once per gradient.
Every class takes ``modes`` = K; ``sizes(modes)`` gives (nq, np) for the block test.
"""
import numpy as np

from ..model.component import ClosedFormJacobians, Constraint, Force, register
from ..model.kinematics import rot, drot


def _jv(x):
    """J x for (..., 2) arrays (J the 90° rotation)."""
    return np.stack([-x[..., 1], x[..., 0]], -1)


def _mv(Mat, x):
    return np.einsum("...kl,...l->...k", Mat, x)


def block_layout(shapes):
    """(name -> slice, total size) of a parameter block of named arrays [(name, shape), …]."""
    o, out = 0, {}
    for name, shape in shapes:
        n = int(np.prod(shape))
        out[name] = slice(o, o + n)
        o += n
    return out, o


def unpack_blocks(p, shapes):
    """The named arrays of p's last axis (leading axes kept), in the order of ``shapes``."""
    lay, _ = block_layout(shapes)
    return tuple(p[..., lay[name]].reshape(p.shape[:-1] + tuple(shape)) for name, shape in shapes)


def _blocks(K):
    return (("m", ()), ("S0", (2,)), ("I0", ()), ("Sbar", (2, K)), ("b", (K,)), ("a", (K,)), ("M", (K, K)),
            ("G", (K, K)))


def inertia_layout(K):
    """Slices of the ReducedInertia parameter block: m, S0, I0, S̄, b, a, M̂, Ĝ."""
    return block_layout(_blocks(K))


def _unpack(p, K):
    return unpack_blocks(p, _blocks(K))


class _Modal:
    """K-dependent sizes: ``nq``/``np_`` are per instance (set before Component.__init__)."""

    def __init__(self, names, qidx, pidx, *rest, modes=1, **kw):
        self.K = int(modes)
        self.nq, self.np_ = self.sizes(self.K)
        super().__init__(names, qidx, pidx, *rest, **kw)


class ModalInertia(_Modal, Force):
    """The inertia force of a reduced body: q = (frame (``nframe``), η (K)), p the body
    data block of ``layout(K)`` (planar here, spatial in modal_solid_components.py)."""
    inertial = True
    uses_q = uses_v = uses_a = True

    @classmethod
    def sizes(cls, K):
        return cls.nframe + K, cls.layout(K)[1]


@register
class ReducedInertia(ModalInertia):
    """M(q) a + h_ω(q, v) of a reduced FFR body (module docstring); q = (R, θ, η),
    p = (m, S0, I0, S̄, b, a, M̂, Ĝ) (4 + 4K + 2K²)."""
    nq, np_ = 4, 10
    nframe, layout = 3, staticmethod(inertia_layout)

    def r(self, t, q, v, a, p):
        K = self.K
        m, S0, I0, Sb, b, av, Mh, Gh = _unpack(p, K)
        th, eta, om, etad, al, etadd = q[..., 2], q[..., 3:], v[..., 2], v[..., 3:], a[..., 2], a[..., 3:]
        ba = rot(-th, a[..., 0:2])
        S1 = S0 + _mv(Sb, eta)
        o, al_ = om[..., None], al[..., None]
        inner = (m[..., None] * ba + al_ * _jv(S1) - o ** 2 * S1 + _mv(Sb, etadd) + 2.0 * o * _jv(_mv(Sb, etad)))
        rR = rot(th, inner)
        Ge = _mv(Gh, eta)
        Me = _mv(Mh, eta)
        MTe = _mv(np.swapaxes(Mh, -1, -2), eta)
        I = I0 + 2.0 * np.sum(b * eta, -1) + np.sum(eta * Me, -1)
        rth = (np.sum(_jv(S1) * ba, -1) + al * I + np.sum((av + Ge) * etadd, -1)
               + 2.0 * om * np.sum((b + MTe) * etad, -1))
        reta = (np.einsum("...ik,...i->...k", Sb, ba) + al_ * (av + Ge) + _mv(Mh, etadd)
                - o ** 2 * (b + Me) + 2.0 * o * _mv(Gh, etad))
        return np.concatenate([rR, rth[..., None], reta], -1)

    def r_p(self, t, q, v, a, p, cols=None):
        """∂r/∂p analytically: r is linear in the body data (every term carries one
        datum), so each column is a product of the state alone — no (np × …) complex
        copies (np = 4 + 4K + 2K² columns, 884 at K = 20)."""
        K = self.K
        lay, npar = inertia_layout(K)
        th, eta, om, etad, al, etadd = q[..., 2], q[..., 3:], v[..., 2], v[..., 3:], a[..., 2], a[..., 3:]
        sh = np.broadcast_shapes(q.shape[:-1], v.shape[:-1], a.shape[:-1], p.shape[:-1])
        dt = np.result_type(q, v, a, p)
        out = np.zeros(sh + (3 + K, npar), dt)
        ba = rot(-th, a[..., 0:2])
        c, sn = np.cos(th), np.sin(th)
        A = np.stack([np.stack([c, -sn], -1), np.stack([sn, c], -1)], -2)             # (…, 2, 2)
        o2, al2 = (om ** 2)[..., None, None], al[..., None, None]
        Jm = np.broadcast_to(np.array([[0.0, -1.0], [1.0, 0.0]]), sh + (2, 2))
        W = al2 * Jm - o2 * np.eye(2)                                                  # αJ − ω²
        AW, AJ = A @ W, A @ Jm
        # r_R = A [m b_a + W S1 + S̄ η̈ + 2ω J S̄ η̇],  S1 = S0 + S̄ η
        out[..., 0:2, lay["m"].start] = a[..., 0:2]                                    # A b_a = R̈
        out[..., 0:2, lay["S0"]] = AW
        dS = (AW[..., :, :, None] * eta[..., None, None, :] + A[..., :, :, None] * etadd[..., None, None, :]
              + 2.0 * om[..., None, None, None] * AJ[..., :, :, None] * etad[..., None, None, :])
        out[..., 0:2, lay["Sbar"]] = dS.reshape(sh + (2, 2 * K))
        # r_θ = (J S1)ᵀ b_a + α I + (a + Ĝη)ᵀη̈ + 2ω (b + M̂ᵀη)ᵀη̇
        JTb = -_jv(ba)
        out[..., 2, lay["S0"]] = JTb
        out[..., 2, lay["Sbar"]] = (JTb[..., :, None] * eta[..., None, :]).reshape(sh + (2 * K,))
        out[..., 2, lay["I0"].start] = al
        out[..., 2, lay["b"]] = 2.0 * al[..., None] * eta + 2.0 * om[..., None] * etad
        out[..., 2, lay["a"]] = etadd
        out[..., 2, lay["M"]] = (al[..., None, None] * eta[..., :, None] * eta[..., None, :]
                                 + 2.0 * om[..., None, None] * eta[..., :, None] * etad[..., None, :]
                                 ).reshape(sh + (K * K,))
        out[..., 2, lay["G"]] = (etadd[..., :, None] * eta[..., None, :]).reshape(sh + (K * K,))
        # r_η = S̄ᵀ b_a + α (a + Ĝη) + M̂ η̈ − ω² (b + M̂η) + 2ω Ĝ η̇
        k = np.arange(K)
        sb = out[..., 3:, lay["Sbar"]].reshape(sh + (K, 2, K))
        sb[..., k, :, k] = np.broadcast_to(ba, (K,) + sh + (2,))          # split advanced axes: k first
        out[..., 3:, lay["Sbar"]] = sb.reshape(sh + (K, 2 * K))
        out[..., 3 + k, lay["b"].start + k] = -(om ** 2)[..., None]
        out[..., 3 + k, lay["a"].start + k] = al[..., None]
        mm = out[..., 3:, lay["M"]].reshape(sh + (K, K, K))
        mm[..., k, k, :] = np.broadcast_to((etadd - (om ** 2)[..., None] * eta)[..., None, :], sh + (K, K))
        out[..., 3:, lay["M"]] = mm.reshape(sh + (K, K * K))
        gg = out[..., 3:, lay["G"]].reshape(sh + (K, K, K))
        gg[..., k, k, :] = np.broadcast_to((al[..., None] * eta + 2.0 * om[..., None] * etad)[..., None, :],
                                           sh + (K, K))
        out[..., 3:, lay["G"]] = gg.reshape(sh + (K, K * K))
        return out if cols is None else out[..., np.asarray(cols)]

    def energy(self, t, q, v, p):
        """T = ½ Σ m_g |AᵀṘ + θ̇ J s_g + N_g V η̇|² in the body data."""
        m, S0, I0, Sb, b, av, Mh, Gh = _unpack(p, self.K)
        th, eta, om, etad = q[..., 2], q[..., 3:], v[..., 2], v[..., 3:]
        bv = rot(-th, v[..., 0:2])
        S1 = S0 + _mv(Sb, eta)
        I = I0 + 2.0 * np.sum(b * eta, -1) + np.sum(eta * _mv(Mh, eta), -1)
        return 0.5 * (m * np.sum(bv * bv, -1) + om ** 2 * I + np.sum(etad * _mv(Mh, etad), -1)
                      + 2.0 * om * np.sum(bv * _jv(S1), -1) + 2.0 * np.sum(bv * _mv(Sb, etad), -1)
                      + 2.0 * om * np.sum((av + _mv(Gh, eta)) * etad, -1))


@register
class ReducedGravity(_Modal, Force):
    """Weight of a reduced FFR body, r = −Σ_g m_g L̄_gᵀ Aᵀg: r_R = −m g,
    r_θ = −(J S1)ᵀAᵀg, r_η = −S̄ᵀAᵀg; p = (m, S0, S̄, g) (5 + 2K)."""
    nq, np_ = 4, 7
    dim, nframe = 2, 3           # the spatial solid's subclass (modal_solid_components.py): 3, 7

    @classmethod
    def sizes(cls, K):
        return cls.nframe + K, 1 + 2 * cls.dim + cls.dim * K

    def _parts(self, q, p):
        """(m, S1 = S0 + S̄η, S̄, g) from p = (m, S0, S̄, g)."""
        K, d = self.K, self.dim
        m, S0 = p[..., 0], p[..., 1:1 + d]
        Sb = p[..., 1 + d:1 + d + d * K].reshape(p.shape[:-1] + (d, K))
        g = p[..., 1 + d + d * K:1 + 2 * d + d * K]
        return m, S0 + _mv(Sb, q[..., self.nframe:]), Sb, g

    def r(self, t, q, v, a, p):
        m, S1, Sb, g = self._parts(q, p)
        ag = rot(-q[..., 2], g)
        rR = -m[..., None] * g + 0.0 * q[..., 0:2]
        rth = -np.sum(_jv(S1) * ag, -1)
        reta = -np.einsum("...ik,...i->...k", Sb, ag)
        return np.concatenate([rR, rth[..., None], reta], -1)

    def energy(self, t, q, v, p):
        """V = −g·(m R + A S1)."""
        m, S1, Sb, g = self._parts(q, p)
        return -np.sum(g * (m[..., None] * q[..., 0:2] + rot(q[..., 2], S1)), -1)


@register
class ReducedElastic(ClosedFormJacobians, _Modal, Force):
    """Elastic force of a reduced body r = K̂ η, K̂ = Vᵀ K_ff V; q = η, p = K̂ (K²)."""
    nq, np_ = 1, 1

    @staticmethod
    def sizes(K):
        return K, K * K

    def _k(self, p):
        return p.reshape(p.shape[:-1] + (self.K, self.K))

    def r(self, t, q, v, a, p):
        return _mv(self._k(p), q)

    def energy(self, t, q, v, p):
        """U = ½ ηᵀ K̂ η."""
        return 0.5 * np.sum(q * _mv(self._k(p), q), -1)

    def energy_partials(self, q, p):
        """U, ∂U/∂η = ½(K̂ + K̂ᵀ)η and ∂U/∂K̂_kl = ½ η_k η_l (the strain-energy objective)."""
        Kh = self._k(p)
        Ke = _mv(Kh, q)
        U = 0.5 * np.sum(q * Ke, -1)
        dq = 0.5 * (Ke + _mv(np.swapaxes(Kh, -1, -2), q))
        dp = 0.5 * (q[..., :, None] * q[..., None, :]).reshape(q.shape[:-1] + (self.K * self.K,))
        return U, dq, dp

    def r_p(self, t, q, v, a, p, cols=None):
        """∂(K̂η)_k/∂K̂_kl = η_l (analytic; K² columns)."""
        K = self.K
        sh = np.broadcast_shapes(q.shape[:-1], p.shape[:-1])
        out = np.zeros(sh + (K, K, K), np.result_type(q, p))
        k = np.arange(K)
        out[..., k, k, :] = np.broadcast_to(q[..., None, :], sh + (K, K))
        out = out.reshape(sh + (K, K * K))
        return out if cols is None else out[..., np.asarray(cols)]

    def jacobians(self, t, q, v, a, p):
        Kh = self._k(p)
        return np.broadcast_to(Kh, np.broadcast_shapes(q.shape[:-1], Kh.shape[:-2]) + Kh.shape[-2:]), None, None


@register
class ReducedDamping(ClosedFormJacobians, _Modal, Force):
    """Stiffness-proportional (Rayleigh) damping of a reduced body, r = β_K K̂ η̇: the
    full-order β_K K_ff(x) u̇ (solid.SolidDamping) at u̇ = V η̇ projected on V (V is
    constant in time, so Vᵀ β_K K_ff V η̇ = β_K K̂ η̇ exactly; mode i keeps the damping
    ratio ζ_i = β_K ω_i / 2 of the full-order body).  q = η (not read), v = η̇,
    p = (K̂ (K², row-major), β_K).  Linear in η̇, K̂ and β_K: ∂r/∂η̇ = β_K K̂,
    ∂r_k/∂K̂_kl = β_K η̇_l, ∂r/∂β_K = K̂ η̇; the densities enter through K̂ (modal.py's
    eigen-sensitivities, as for ReducedElastic).  No energy: it dissipates."""
    nq, np_ = 1, 2
    uses_q, uses_v = False, True

    @staticmethod
    def sizes(K):
        return K, K * K + 1

    def _parts(self, p):
        K = self.K
        return p[..., :K * K].reshape(p.shape[:-1] + (K, K)), p[..., K * K]

    def r(self, t, q, v, a, p):
        Kh, bk = self._parts(p)
        return bk[..., None] * _mv(Kh, v)

    def jacobians(self, t, q, v, a, p):
        Kh, bk = self._parts(p)
        C = bk[..., None, None] * Kh
        return None, np.broadcast_to(C, np.broadcast_shapes(v.shape[:-1], C.shape[:-2]) + C.shape[-2:]), None

    def r_p(self, t, q, v, a, p, cols=None):
        """∂(β_K K̂η̇)_k/∂K̂_kl = β_K η̇_l, ∂/∂β_K = K̂η̇ (analytic; K² + 1 columns)."""
        K = self.K
        Kh, bk = self._parts(p)
        sh = np.broadcast_shapes(v.shape[:-1], p.shape[:-1])
        out = np.zeros(sh + (K, K, K), np.result_type(v, p))
        k = np.arange(K)
        out[..., k, k, :] = np.broadcast_to((bk[..., None] * v)[..., None, :], sh + (K, K))
        out = np.concatenate([out.reshape(sh + (K, K * K)), np.broadcast_to(_mv(Kh, v), sh + (K,))[..., None]], -1)
        return out if cols is None else out[..., np.asarray(cols)]


@register
class ReducedRevolute(_Modal, Constraint):
    """A node of a reduced body pinned to a rigid point (``ContinuumRevolute`` with
    u = Φ_k η):  Φ = R_c + A(θ_c)(X + Φ_k η) − R_b − A(θ_b) s_b.
    q = (R_c, θ_c, η (K), R_b, θ_b) (6 + K); p = (X0, Y0, Lx, Ly, i/nx, j/ny, Φ_k (2K,
    row-major), P̄_b, c̄_b) (10 + 2K)."""
    nq, np_, m = 7, 12, 2

    @staticmethod
    def sizes(K):
        return 6 + K, 10 + 2 * K

    def _parts(self, q, p):
        K = self.K
        X = p[..., 0:2] + p[..., 4:6] * p[..., 2:4]
        Phi = p[..., 6:6 + 2 * K].reshape(p.shape[:-1] + (2, K))
        sb = p[..., 6 + 2 * K:8 + 2 * K] - p[..., 8 + 2 * K:10 + 2 * K]
        return X, Phi, sb

    def phi(self, t, q, p):
        K = self.K
        X, Phi, sb = self._parts(q, p)
        sc = X + _mv(Phi, q[..., 3:3 + K])
        return q[..., 0:2] + rot(q[..., 2], sc) - q[..., 3 + K:5 + K] - rot(q[..., 5 + K], sb)

    def phi_q(self, t, q, p):
        K = self.K
        X, Phi, sb = self._parts(q, p)
        th = q[..., 2]
        sc = X + _mv(Phi, q[..., 3:3 + K])
        sh = np.broadcast_shapes(q.shape[:-1], p.shape[:-1])
        Jm = np.zeros(sh + (2, 6 + K), dtype=np.result_type(q, p))
        Jm[..., 0, 0] = Jm[..., 1, 1] = 1.0
        Jm[..., 0, 3 + K] = Jm[..., 1, 4 + K] = -1.0
        Jm[..., :, 2] = drot(th, sc)
        c, s = np.cos(th)[..., None], np.sin(th)[..., None]
        Jm[..., 0, 3:3 + K] = c * Phi[..., 0, :] - s * Phi[..., 1, :]
        Jm[..., 1, 3:3 + K] = s * Phi[..., 0, :] + c * Phi[..., 1, :]
        Jm[..., :, 5 + K] = -drot(q[..., 5 + K], sb)
        return Jm

    def gamma(self, t, q, v, p):
        K = self.K
        X, Phi, sb = self._parts(q, p)
        th, w = q[..., 2], v[..., 2]
        sc = X + _mv(Phi, q[..., 3:3 + K])
        ud = _mv(Phi, v[..., 3:3 + K])
        return (-rot(th, sc) * (w ** 2)[..., None] + 2.0 * w[..., None] * drot(th, ud)
                + rot(q[..., 5 + K], sb) * (v[..., 5 + K] ** 2)[..., None])
