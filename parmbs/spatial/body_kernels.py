"""Closed-form Jacobians of the Euler-parameter inertia forces (bodies.py), replacing
the complex-step r_q / r_a / r_v of ``SpatialInertia`` and ``SpatialGyroscopic`` on the
Newton and sensitivity hot paths (the same numbers to round-off).

G(p) = [−e, −ẽ + e0 I] is linear in p, with the identity G(p) x = −G(x) p for any
4-vectors p, x (so ∂(G(p) x)/∂p = −G(x)), and for a 3-vector y

    G(p)ᵀ y = [−eᵀy ; e × y + e0 y] = Y(y) p,     Y(y) = [[0, −yᵀ], [y, −ỹ]].

* SpatialInertia  r = (m r̈, 4 GᵀJ'G p̈):
      r_a = diag(m I, 4 GᵀJ'G),   r_q (p-block) = 4 (Y(y) − GᵀJ'G(p̈)),  y = J'G p̈.
* SpatialGyroscopic  r = 2 Gᵀh, h = ω' × J'ω', ω' = 2 G ṗ,  h_ω = ω̃'J' − (J'ω')~:
      r_q = 2 (Y(h) − 2 Gᵀ h_ω G(ṗ)),   r_v = 4 Gᵀ h_ω G.
"""
import numpy as np

from .kinematics import G_matrix, cross, mv, skew


def _Y(y):
    """Y(y) (..., 4, 4) with G(p)ᵀ y = Y(y) p."""
    out = np.zeros(y.shape[:-1] + (4, 4), y.dtype)
    out[..., 0, 1:] = -y
    out[..., 1:, 0] = y
    out[..., 1:, 1:] = -skew(y)
    return out


def inertia_jacobians(q, a, m, J):
    """(r_q, r_a) of SpatialInertia; q, a (..., 7), m (...), J (..., 3, 3)."""
    p, pdd = q[..., 3:7], a[..., 3:7]
    G = G_matrix(p)
    GT = np.swapaxes(G, -1, -2)
    JG = J @ G
    lead = np.broadcast_shapes(q.shape[:-1], a.shape[:-1], m.shape)
    rq = np.zeros(lead + (7, 7))
    rq[..., 3:7, 3:7] = 4.0 * (_Y(mv(JG, pdd)) - GT @ (J @ G_matrix(pdd)))
    ra = np.zeros(lead + (7, 7))
    ra[..., 0:3, 0:3] = m[..., None, None] * np.eye(3)
    ra[..., 3:7, 3:7] = 4.0 * (GT @ JG)
    return rq, ra


def gyroscopic_jacobians(q, v, J):
    """(r_q, r_v) of SpatialGyroscopic; q = p, v = ṗ (..., 4), J (..., 3, 3)."""
    G = G_matrix(q)
    GT = np.swapaxes(G, -1, -2)
    w = 2.0 * mv(G, v)
    Jw = mv(J, w)
    h = cross(w, Jw)
    hw = skew(w) @ J - skew(Jw)
    GThw = GT @ hw
    return 2.0 * (_Y(h) - 2.0 * (GThw @ G_matrix(v))), 4.0 * (GThw @ G)
