"""Joints and point loads at nodes of floating-frame (FFR) beams.

Every side of a joint is written in one form that covers rigid bodies, ground and FFR
beam nodes: six coordinates (R_x, R_y, θ, u, v, φ) and six parameters
(P̄x, P̄y, c̄x, c̄y, L, f), with the point at

    r = R + A(θ) w,   w = s̄ + (u, v),   s̄ = (P̄x − c̄x + f L, P̄y − c̄y)

and the section angle θ + φ.  A rigid body is (x, y, θ of its centre of mass; u, v, φ
→ ground's zero slots) with f = 0 (exactly ``model/joints.py``'s r = x + A(θ)(P̄ − c̄));
ground has all six coordinates in zero slots; node k of an FFR beam is
(frame R, θ; its elastic u_k, v_k, φ_k, or zero slots where the reference conditions
remove them) with P̄ = c̄ = 0, f = k/n_el, so its body-frame position is (k L/n_el, 0)
plus the elastic displacement (seed 001 §3.2: "frame point plus deformation").

* revolute (2 rows): Φ = r_a − r_b,
  γ = Σ_side ±(−A w θ̇² + 2 θ̇ A J̃ ẇ)  (r̈ = R̈ + θ̈ A J̃ w + A ẅ + that);
* weld (3 rows): r_a − r_b and (θ_b + φ_b) − (θ_a + φ_a) − θ₀ (θ₀ = ``joints.J.angle``).

Φ_q and γ are analytic; the Hessians and parameter blocks are complex-step defaults.
"""
import numpy as np

from ..model.component import Constraint, register
from ..model.forces import _TimeLoad
from ..model.kinematics import rot, drot, concat

SIDE_NQ = SIDE_NP = 6


def side_offset(p):
    """s̄ (…, 2) from the six side parameters."""
    return stack2(p[..., 0] - p[..., 2] + p[..., 5] * p[..., 4], p[..., 1] - p[..., 3])


def stack2(a, b):
    a, b = np.broadcast_arrays(a, b)
    return np.stack([a, b], -1)


def side_point(q, p):
    """(r, w) of a side: q (…, 6), p (…, 6)."""
    w = side_offset(p) + q[..., 3:5]
    return q[..., 0:2] + rot(q[..., 2], w), w


def side_jacobian(q, p):
    """∂r/∂q (…, 2, 6) of one side."""
    w = side_offset(p) + q[..., 3:5]
    th = q[..., 2]
    c, s = np.cos(th), np.sin(th)
    J = np.zeros(w.shape[:-1] + (2, 6), dtype=np.result_type(q, p))
    J[..., 0, 0] = J[..., 1, 1] = 1.0
    J[..., :, 2] = drot(th, w)
    J[..., 0, 3], J[..., 0, 4] = c, -s
    J[..., 1, 3], J[..., 1, 4] = s, c
    return J


def side_gamma(q, v, p):
    """Velocity part of r̈: −A w θ̇² + 2 θ̇ A J̃ ẇ."""
    w = side_offset(p) + q[..., 3:5]
    th, thd = q[..., 2], v[..., 2]
    return -rot(th, w) * (thd ** 2)[..., None] + 2.0 * thd[..., None] * drot(th, v[..., 3:5])


def side_hessian(q, p, lam):
    """∂((∂r/∂q)ᵀλ)/∂q (…, 6, 6) of one side: with w = s̄ + (u, v),
    (∂r/∂q)ᵀλ = (λ, λ·A J̃ w, Aᵀλ, 0), so the only entries are
    θθ: −λ·A w  and  θ(u, v) = (u, v)θ: (A J̃)ᵀ λ."""
    w = side_offset(p) + q[..., 3:5]
    th = q[..., 2]
    H = np.zeros(np.broadcast_shapes(w.shape[:-1], lam.shape[:-1]) + (6, 6), dtype=np.result_type(q, p, lam))
    H[..., 2, 2] = -np.sum(lam * rot(th, w), -1)
    c = -drot(-th, lam)                                 # (A J̃)ᵀλ = J̃ᵀ Aᵀ λ
    H[..., 2, 3:5] = c
    H[..., 3:5, 2] = c
    return H


class _FfrPair(Constraint):
    nq = 2 * SIDE_NQ
    np_ = 2 * SIDE_NP

    def hess_lam(self, t, q, p, lam):
        """Analytic ∂(Φ_qᵀλ)/∂q of the position rows (side a minus side b; the weld's
        angle row is linear in q)."""
        lp = lam[..., 0:2]
        Ha = side_hessian(q[..., :6], p[..., :6], lp)
        Hb = side_hessian(q[..., 6:12], p[..., 6:12], lp)
        H = np.zeros(np.broadcast_shapes(Ha.shape[:-2], Hb.shape[:-2]) + (12, 12), dtype=np.result_type(Ha, Hb))
        H[..., :6, :6] = Ha
        H[..., 6:, 6:] = -Hb
        return H

    def _pos(self, q, p):
        ra, _ = side_point(q[..., :6], p[..., :6])
        rb, _ = side_point(q[..., 6:12], p[..., 6:12])
        return ra - rb

    def _pos_q(self, q, p):
        Ja, Jb = side_jacobian(q[..., :6], p[..., :6]), side_jacobian(q[..., 6:12], p[..., 6:12])
        return concat([Ja, -Jb], -1)

    def _pos_gamma(self, q, v, p):
        return side_gamma(q[..., :6], v[..., :6], p[..., :6]) - side_gamma(q[..., 6:12], v[..., 6:12], p[..., 6:12])


@register
class FfrRevolute(_FfrPair):
    """Φ = r_a − r_b (2 rows) between any two of rigid body, ground, FFR beam node."""
    m = 2

    def phi(self, t, q, p):
        return self._pos(q, p)

    def phi_q(self, t, q, p):
        return self._pos_q(q, p)

    def gamma(self, t, q, v, p):
        return self._pos_gamma(q, v, p)


@register
class FfrWeld(_FfrPair):
    """Φ = (r_a − r_b, θ_b + φ_b − θ_a − φ_a − θ₀) (3 rows); p = (side a, side b, θ₀)."""
    m = 3
    np_ = 2 * SIDE_NP + 1

    def phi(self, t, q, p):
        ang = q[..., 8] + q[..., 11] - q[..., 2] - q[..., 5] - p[..., 12]
        r = self._pos(q, p)
        return concat([r, ang[..., None]], -1)

    def phi_q(self, t, q, p):
        J = self._pos_q(q, p)
        row = np.zeros(J.shape[:-2] + (1, 12), dtype=J.dtype)
        row[..., 0, [8, 11]] = 1.0
        row[..., 0, [2, 5]] = -1.0
        return np.concatenate([J, row], -2)

    def gamma(self, t, q, v, p):
        g = self._pos_gamma(q, v, p)
        z = 0.0 * g[..., :1] + 0.0 * p[..., 12, None]
        return concat([g, z], -1)


@register
class FfrPointForce(_TimeLoad):
    """Force F f(t) (global frame) at an FFR side point: r = −(∂r_P/∂q)ᵀ F f(t);
    p = (6 side parameters, F_x, F_y, coefficients)."""
    nq, base_np, np_ = 6, SIDE_NP + 2, SIDE_NP + 2

    def r(self, t, q, v, a, p):
        F = p[..., 6:8] * self.function(t, p[..., 8:], 0)[..., None]
        return -np.einsum("...ij,...i->...j", side_jacobian(q, p[..., :6]), F)


def side_velocity(q, v, p):
    """ṙ of a side point (objectives)."""
    return np.einsum("...ij,...j->...i", side_jacobian(q, p), v)


def side_angle(q):
    """θ + φ: the section angle at a side point."""
    return q[..., 2] + q[..., 5]

