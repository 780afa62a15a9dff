"""Closed-form residual and Jacobians (r, r_q, r_v) of the point-to-point force elements
(forces.PointToPoint: spring-dampers, the Iltis strut, bump stops), one geometry
evaluation per iterate.

Why: ``SpatialElement.jacobians`` evaluates r in complex arithmetic over 28
perturbations (14 q- and 14 v-columns); on the Iltis the force elements were a third
of the forward time.  Here only the scalar law T(l, l̇) is complex-stepped (two
perturbations of ne scalars), the kinematics is differentiated by hand — exact, the
same numbers to round-off.

With the Euler-parameter algebra of joint_kernels.py (J(p, s') = ∂(A s')/∂p, linear
in p; K(c, s') the constant Hessian of cᵀA(p)s'), body k's point and its velocity

    P = r + ½ J(p, s') p,      v_P = ṙ + J(p, s') ṗ,      ∂v_P/∂p = J(ṗ, s'),

d = P_b − P_a, ḋ = v_Pb − v_Pa, l = |d|, e = d/l, l̇ = eᵀḋ, F = T(l, l̇) e.  With
D = ∂d/∂q = [−I, −J_a, I, J_b] = ∂ḋ/∂v (3 × 14) and D_v = ∂ḋ/∂q = [0, −J(ṗ_a), 0, J(ṗ_b)]:

    r   = Dᵀ F                              (= (−point_load_a, point_load_b), forces.py)
    F_d = e (T_l eᵀ + T_l̇ ḋᵀP) + T P,   P = (I − e eᵀ)/l,     F_ḋ = T_l̇ e eᵀ
    r_q = Dᵀ (F_d D + F_ḋ D_v) + blocks (p_a,p_a) −K(F, s'_a), (p_b,p_b) K(F, s'_b)
    r_v = Dᵀ F_ḋ D.

Complex-step safe in q, v and p (r_p complex-steps through ``residual``).
"""
import numpy as np

from ..model.component import CS_H
from .joint_kernels import c_tensor, j_of, k_of

IDENTITY = np.array([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0])


class P2PGeometry:
    """d, ḋ, l, e, l̇ and the side Jacobians of a point-to-point group at (q, v, p)."""

    def __init__(self, q, v, p):
        qa = q[..., 0:7] + p[..., 3:4] * IDENTITY
        qb = q[..., 7:14] + p[..., 7:8] * IDENTITY
        self.pa, self.pb = qa[..., 3:7], qb[..., 3:7]
        self.Ca, self.Cb = c_tensor(p[..., 0:3]), c_tensor(p[..., 4:7])
        self.Ja, self.Jb = j_of(self.pa, self.Ca), j_of(self.pb, self.Cb)
        pda, pdb = v[..., 3:7], v[..., 10:14]
        Pa = qa[..., 0:3] + 0.5 * (self.Ja @ self.pa[..., None])[..., 0]
        Pb = qb[..., 0:3] + 0.5 * (self.Jb @ self.pb[..., None])[..., 0]
        self.vel = (pda, pdb)
        self.d = Pb - Pa
        self.dd = (v[..., 7:10] + (self.Jb @ pdb[..., None])[..., 0]
                   - v[..., 0:3] - (self.Ja @ pda[..., None])[..., 0])
        self.l = np.sqrt(np.sum(self.d * self.d, -1))
        self.e = self.d / self.l[..., None]
        self.ldot = np.sum(self.e * self.dd, -1)

    def D(self):
        """∂d/∂q = ∂ḋ/∂v (..., 3, 14)."""
        lead = self.Ja.shape[:-2]
        I = np.broadcast_to(np.eye(3), lead + (3, 3))
        return np.concatenate([-I, -self.Ja, I, self.Jb], -1)


def residual(G, T):
    """r = Dᵀ F, F = T e: (−F, −J_aᵀF, F, J_bᵀF)."""
    F = T[..., None] * G.e
    ja = (F[..., None, :] @ G.Ja)[..., 0, :]
    jb = (F[..., None, :] @ G.Jb)[..., 0, :]
    return np.concatenate([-F, -ja, F, jb], -1)


def law_derivatives(tension, G, p):
    """(T, T_l, T_l̇) of the scalar law by one complex-step call over two perturbations."""
    lc = G.l + np.array([1j * CS_H, 0.0]).reshape((2,) + (1,) * G.l.ndim)
    ldc = G.ldot + np.array([0.0, 1j * CS_H]).reshape((2,) + (1,) * G.l.ndim)
    Tc = tension(lc, ldc, p)
    return Tc[0].real, Tc[0].imag / CS_H, Tc[1].imag / CS_H


def jacobians(G, T, Tl, Tld, Dv_needed=True):
    """(r_q, r_v) of module docstring (real geometry)."""
    e, l = G.e, G.l[..., None, None]
    P = (np.eye(3) - e[..., :, None] * e[..., None, :]) / l
    eeT = e[..., :, None] * e[..., None, :]
    Fd = (e[..., :, None] * (Tl[..., None, None] * e[..., None, :]
                             + Tld[..., None, None] * (G.dd[..., None, :] @ P))
          + T[..., None, None] * P)
    Fdd = Tld[..., None, None] * eeT
    D = G.D()
    DT = np.swapaxes(D, -1, -2)
    pda, pdb = G.vel
    Jva, Jvb = j_of(pda, G.Ca), j_of(pdb, G.Cb)
    FddD = Fdd @ D
    rv = DT @ FddD
    Fq = Fd @ D
    Fq[..., 3:7] -= Fdd @ Jva
    Fq[..., 10:14] += Fdd @ Jvb
    rq = DT @ Fq
    F = T[..., None] * e
    rq[..., 3:7, 3:7] -= k_of(F, G.Ca)
    rq[..., 10:14, 10:14] += k_of(F, G.Cb)
    return rq, rv
