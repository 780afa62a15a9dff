"""Inertia, gravity and applied force elements: contributions r to M a + Φ_qᵀλ − Q = 0.

Body coordinates are the centre of mass and angle, so the mass matrix of a rigid
body is constant, M = diag(m, m, I_G), and gravity acts at q itself.
"""
import numpy as np

from .component import ClosedFormJacobians, Force, register
from .kinematics import rot, drot, dot, stack, concat


@register
class Inertia(Force):
    """r = M a = (m ẍ, m ÿ, I_G θ̈);  p = (m, I_G)."""
    nq, np_ = 3, 2
    inertial = True
    uses_q = False
    uses_a = True

    def r(self, t, q, v, a, p):
        m, I = p[..., 0], p[..., 1]
        return stack([m * a[..., 0], m * a[..., 1], I * a[..., 2] + 0.0 * q[..., 2]], -1)

    def energy(self, t, q, v, p):
        """T = ½ m |ẋ|² + ½ I_G θ̇²."""
        return 0.5 * p[..., 0] * (v[..., 0] ** 2 + v[..., 1] ** 2) + 0.5 * p[..., 1] * v[..., 2] ** 2

    def r_a(self, t, q, v, a, p):
        m, I = p[..., 0], p[..., 1]
        out = np.zeros(np.shape(m) + (3, 3))
        out[..., 0, 0] = out[..., 1, 1] = m
        out[..., 2, 2] = I
        return out


@register
class Gravity(Force):
    """r = −m g on the centre of mass;  p = (m, g_x, g_y)."""
    nq, np_ = 3, 3
    uses_q = False

    def r(self, t, q, v, a, p):
        m = p[..., 0]
        return stack([-m * p[..., 1], -m * p[..., 2], 0.0 * m], -1) + 0.0 * q

    def energy(self, t, q, v, p):
        """V = −m g·x."""
        return -p[..., 0] * (p[..., 1] * q[..., 0] + p[..., 2] * q[..., 1])


def _offsets(p, k0):
    return p[..., k0:k0 + 2] - p[..., k0 + 2:k0 + 4]


@register
class Spring(ClosedFormJacobians, Force):
    """Point-to-point spring-damper between P_a and P_b.

    l = |d|, d = r_Pb − r_Pa, e = d/l, l̇ = e·ḋ, F = k (l − l₀) + c l̇ (tension > 0).
    Q_b = −J_bᵀ F e, Q_a = +J_aᵀ F e; r = −Q.  p = (P̄a, c̄a, P̄b, c̄b, k, c, l₀).
    """
    nq, np_ = 6, 11
    uses_v = True

    @staticmethod
    def geometry(q, v, p):
        """Length l, rate l̇, direction e and the θ lever arms of both points."""
        sa, sb = _offsets(p, 0), _offsets(p, 4)
        da, db = drot(q[..., 2], sa), drot(q[..., 5], sb)
        d = q[..., 3:5] + rot(q[..., 5], sb) - q[..., 0:2] - rot(q[..., 2], sa)
        l = np.sqrt(dot(d, d))
        e = d / l[..., None]
        dd = v[..., 3:5] + db * v[..., 5, None] - v[..., 0:2] - da * v[..., 2, None]
        return l, dot(e, dd), e, da, db

    def r(self, t, q, v, a, p):
        l, ldot, e, da, db = self.geometry(q, v, p)
        F = p[..., 8] * (l - p[..., 10]) + p[..., 9] * ldot
        Fe = F[..., None] * e
        return concat([-Fe, -dot(Fe, da)[..., None], Fe, dot(Fe, db)[..., None]], -1)

    def energy(self, t, q, v, p):
        """V = ½ k (l − l₀)²; l as in ``geometry`` (the same operations, without the rate
        and lever arms: the instability guard evaluates this every 10 steps)."""
        sa, sb = _offsets(p, 0), _offsets(p, 4)
        d = q[..., 3:5] + rot(q[..., 5], sb) - q[..., 0:2] - rot(q[..., 2], sa)
        l = np.sqrt(dot(d, d))
        return 0.5 * p[..., 8] * (l - p[..., 10]) ** 2

    def _grad_hess(self, q, v, p):
        """G = ∂l/∂q (ne, 6) and H = ∂²l/∂q² (ne, 6, 6):
        H = Dᵀ (I − e eᵀ) D / l + e·∂²d/∂q²,  D = ∂d/∂q = [−I, −A R s_a, I, A R s_b]."""
        l, ldot, e, da, db = self.geometry(q, v, p)
        ne = l.shape
        D = np.zeros(ne + (2, 6), dtype=np.result_type(da, db))   # complex at a complex state
        D[..., 0, 0] = D[..., 1, 1] = -1.0
        D[..., 0, 3] = D[..., 1, 4] = 1.0
        D[..., :, 2], D[..., :, 5] = -da, db
        G = np.einsum("...i,...ik->...k", e, D)
        P = np.eye(2) - e[..., :, None] * e[..., None, :]
        H = np.einsum("...ik,...ij,...jl->...kl", D, P, D) / l[..., None, None]
        sa, sb = _offsets(p, 0), _offsets(p, 4)
        H[..., 2, 2] += dot(e, rot(q[..., 2], sa))
        H[..., 5, 5] -= dot(e, rot(q[..., 5], sb))
        return l, ldot, G, H

    def jacobians(self, t, q, v, a, p):
        """r_q = ∂(F G)/∂q = G ⊗ (k G + c H v) + F H  (l̇ = G·v);  r_v = c G ⊗ G."""
        l, ldot, G, H = self._grad_hess(q, v, p)
        k, c = p[..., 8], p[..., 9]
        F = k * (l - p[..., 10]) + c * ldot
        dF = k[..., None] * G + c[..., None] * np.einsum("...kl,...l->...k", H, v)
        GG = G[..., :, None] * G[..., None, :]
        return G[..., :, None] * dF[..., None, :] + F[..., None, None] * H, c[..., None, None] * GG, None


@register
class RotationalSpring(Force):
    """Torsion spring-damper: M = k (θ_b − θ_a − θ₀) + c (ω_b − ω_a); p = (k, c, θ₀).

    Torque −M on b and +M on a, so r_θa = −M, r_θb = +M.
    """
    nq, np_ = 6, 3
    uses_v = True

    def r(self, t, q, v, a, p):
        M = p[..., 0] * (q[..., 5] - q[..., 2] - p[..., 2]) + p[..., 1] * (v[..., 5] - v[..., 2])
        z = 0.0 * M
        return stack([z, z, -M, z, z, M], -1)

    def energy(self, t, q, v, p):
        """V = ½ k (θ_b − θ_a − θ₀)²."""
        return 0.5 * p[..., 0] * (q[..., 5] - q[..., 2] - p[..., 2]) ** 2


class _TimeLoad(Force):
    function = None

    def __init__(self, names, qidx, pidx, function=None):
        from .timefunctions import Constant
        self.function = function if function is not None else Constant()
        self.np_ = self.base_np + self.function.ncoef
        super().__init__(names, qidx, pidx)


@register
class PointForce(_TimeLoad):
    """Force F f(t) (global frame) at point P: Q = J_Pᵀ F f(t); p = (P̄, c̄, F, coeffs)."""
    nq, base_np, np_ = 3, 6, 6

    def r(self, t, q, v, a, p):
        s = _offsets(p, 0)
        F = p[..., 4:6] * self.function(t, p[..., 6:], 0)[..., None]
        F = F + 0.0 * q[..., 0:2]
        return -concat([F, dot(F, drot(q[..., 2], s))[..., None]], -1)


@register
class Torque(_TimeLoad):
    """Torque T f(t) on a body; p = (T, coeffs)."""
    nq, base_np, np_ = 3, 1, 1

    def r(self, t, q, v, a, p):
        T = p[..., 0] * self.function(t, p[..., 1:], 0) + 0.0 * q[..., 2]
        z = 0.0 * T
        return stack([z, z, -T], -1)
