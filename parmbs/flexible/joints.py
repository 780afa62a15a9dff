"""Joints and loads at points of ANCF beams, and the beams' initial-assembly rows.

A joint side is either *rigid* (body coordinates (x, y, θ) and parameters
(P̄x, P̄y, c̄x, c̄y), exactly as the rigid joints in ``model/joints.py``; ground is a
rigid side with zero coordinates) or *beam* (the 8 coordinates of the element the
point lies on and the 5 beam-point parameters of ``ancf.beam_point_xi``).  Each side
provides its position r, a direction d (rigid: the body x axis A(θ)e₁; beam: the
slope r′ = ∂r/∂x) and their Jacobians.  Beam points are linear in the element
coordinates, so they add nothing to γ.

* revolute (2 rows):  Φ = r_a − r_b
* weld     (3 rows):  Φ = (r_a − r_b, (A(θ₀) d_a) × d_b),  θ₀ the initial relative angle
  (a parameter, ``joints.NAME.angle``): the beam tangent keeps its angle to the body
  (or to the other beam's tangent) at the joint.

The same formulas serve every side combination; the registered classes are the
combinations (rigid–beam, beam–rigid, beam–beam), so the generic block test visits
each.
"""
import numpy as np

from ..model.component import Constraint, register
from ..model.forces import _TimeLoad
from ..model.kinematics import rot, drot, dot, concat
from .ancf import BEAM_POINT_NP, beam_point_matrices

SIDE_NQ = {"rigid": 3, "beam": 8}
SIDE_NP = {"rigid": 4, "beam": BEAM_POINT_NP}
E1 = np.array([1.0, 0.0])


def cross(x, y):
    return x[..., 0] * y[..., 1] - x[..., 1] * y[..., 0]


def _side(kind, q, v, p):
    """r, d, ∂r/∂q (…,2,nq), ∂d/∂q, ṙ, ḋ and the velocity parts of r̈, d̈."""
    if kind == "rigid":
        s = p[..., 0:2] - p[..., 2:4]
        th = q[..., 2]
        e1 = E1 + 0.0 * s
        r = q[..., 0:2] + rot(th, s)
        d = rot(th, e1)
        lead = np.broadcast_shapes(r.shape[:-1], q.shape[:-1])
        Jr = np.zeros(lead + (2, 3), dtype=np.result_type(q, p))
        Jd = np.zeros_like(Jr)
        Jr[..., 0, 0] = Jr[..., 1, 1] = 1.0
        Jr[..., :, 2] = drot(th, s)
        Jd[..., :, 2] = drot(th, e1)
        if v is None:
            return r, d, Jr, Jd
        w = v[..., 2]
        rd = v[..., 0:2] + drot(th, s) * w[..., None]
        dd = drot(th, e1) * w[..., None]
        return (r, d, Jr, Jd, rd, dd, -rot(th, s) * (w ** 2)[..., None], -d * (w ** 2)[..., None])
    S, Sp = beam_point_matrices(p), beam_point_matrices(p, deriv=True)
    r = np.einsum("...ij,...j->...i", S, q)
    d = np.einsum("...ij,...j->...i", Sp, q)
    if v is None:
        return r, d, S, Sp
    rd = np.einsum("...ij,...j->...i", S, v)
    dd = np.einsum("...ij,...j->...i", Sp, v)
    return r, d, S, Sp, rd, dd, 0.0 * rd, 0.0 * dd


class _PointPair(Constraint):
    kinds = ("rigid", "beam")
    weld = False
    side_nq, side_np = SIDE_NQ, SIDE_NP        # coordinates, parameters of a side kind

    def __init__(self, names, qidx, pidx, rows):
        ka, kb = self.kinds
        self.na, self.nb = self.side_nq[ka], self.side_nq[kb]
        self.pa, self.pb = self.side_np[ka], self.side_np[kb]
        super().__init__(names, qidx, pidx, rows)

    @classmethod
    def pair(cls, kinds, weld):
        """Register the joint of this family for side kinds (a, b), named e.g.
        ``RigidBeamWeld``: a revolute (2 rows) or a weld (3 rows, one more parameter,
        θ₀).  One rule for the beam joints here and the plate joints (plate_joints.py)."""
        ka, kb = kinds
        attrs = dict(kinds=kinds, weld=weld, nq=cls.side_nq[ka] + cls.side_nq[kb],
                     np_=cls.side_np[ka] + cls.side_np[kb] + (1 if weld else 0), m=3 if weld else 2,
                     __doc__=f"{'Weld' if weld else 'Revolute'} joint, side a {ka}, side b {kb}.",
                     __module__=cls.__module__)
        name = f"{ka.capitalize()}{kb.capitalize()}{'Weld' if weld else 'Revolute'}"
        return register(type(name, (cls,), attrs))

    def _split(self, x, n1):
        return x[..., :n1], x[..., n1:]

    def _sides(self, q, p, v=None):
        qa, qb = self._split(q, self.na)
        pa, pb = p[..., :self.pa], p[..., self.pa:self.pa + self.pb]
        va, vb = (None, None) if v is None else self._split(v, self.na)
        return _side(self.kinds[0], qa, va, pa), _side(self.kinds[1], qb, vb, pb)

    def _rot0(self, p, x):
        return rot(p[..., self.pa + self.pb], x)

    def phi(self, t, q, p):
        A, B = self._sides(q, p)
        rows = [A[0] - B[0]]
        if self.weld:
            rows.append(cross(self._rot0(p, A[1]), B[1])[..., None])
        return concat(rows, -1)

    def phi_q(self, t, q, p):
        A, B = self._sides(q, p)
        Jr = np.concatenate(_bcast_last([A[2], -B[2]]), -1)
        if not self.weld:
            return Jr
        ua = self._rot0(p, A[1])
        # rotate each column of ∂d_a/∂q: A(θ₀) acts on the 2-vector axis
        Jda = np.swapaxes(self._rot0(p[..., None, :], np.swapaxes(A[3], -1, -2)), -1, -2)
        row_a = Jda[..., 0, :] * B[1][..., 1, None] - Jda[..., 1, :] * B[1][..., 0, None]
        row_b = ua[..., 0, None] * B[3][..., 1, :] - ua[..., 1, None] * B[3][..., 0, :]
        row = np.concatenate(_bcast_last([row_a, row_b]), -1)[..., None, :]
        return np.concatenate(_bcast_last([Jr, row], axis=-2), -2)

    def hess_lam(self, t, q, p, lam):
        """Revolute: beam sides are linear, a rigid side adds −λ·A(θ)s at θθ (±);
        weld: complex step of Φ_qᵀλ."""
        if self.weld:
            return super().hess_lam(t, q, p, lam)
        H = np.zeros(np.broadcast_shapes(q.shape[:-1], p.shape[:-1], lam.shape[:-1]) + (self.nq, self.nq),
                     dtype=np.result_type(q, p, lam))
        qa, qb = self._split(q, self.na)
        for kind, qs, ps, sign, k in ((self.kinds[0], qa, p[..., :self.pa], -1.0, 2),
                                      (self.kinds[1], qb, p[..., self.pa:self.pa + self.pb], 1.0, self.na + 2)):
            if kind == "rigid":
                H[..., k, k] = sign * dot(lam, rot(qs[..., 2], ps[..., 0:2] - ps[..., 2:4]))
        return H

    def gamma(self, t, q, v, p):
        A, B = self._sides(q, p, v)
        g = A[6] - B[6]
        if not self.weld:
            return g
        g3 = (cross(self._rot0(p, A[7]), B[1]) + 2.0 * cross(self._rot0(p, A[5]), B[5])
              + cross(self._rot0(p, A[1]), B[7]))
        return np.concatenate(_bcast_last([g, g3[..., None]]), -1)


def _bcast_last(arrays, axis=-1):
    """Broadcast every axis but ``axis`` (for concatenation)."""
    nd = max(a.ndim for a in arrays)
    arrays = [a.reshape((1,) * (nd - a.ndim) + a.shape) for a in arrays]
    ax = axis % nd
    shapes = [tuple(1 if i == ax else s for i, s in enumerate(a.shape)) for a in arrays]
    lead = np.broadcast_shapes(*shapes)
    return [np.broadcast_to(a, tuple(a.shape[i] if i == ax else lead[i] for i in range(nd))) for a in arrays]


JOINT_CLASSES = {(kinds, weld): _PointPair.pair(kinds, weld)
                 for kinds in (("rigid", "beam"), ("beam", "rigid"), ("beam", "beam"))
                 for weld in (False, True)}
RigidBeamRevolute = JOINT_CLASSES[(("rigid", "beam"), False)]
RigidBeamWeld = JOINT_CLASSES[(("rigid", "beam"), True)]
BeamBeamRevolute = JOINT_CLASSES[(("beam", "beam"), False)]
BeamBeamWeld = JOINT_CLASSES[(("beam", "beam"), True)]


@register
class BeamPointForce(_TimeLoad):
    """Force F f(t) (global frame) at a beam point: Q = S(ξ)ᵀ F f(t);
    p = (5 beam-point parameters, F, coeffs)."""
    nq, base_np, np_ = 8, BEAM_POINT_NP + 2, BEAM_POINT_NP + 2

    def r(self, t, q, v, a, p):
        S = beam_point_matrices(p[..., :BEAM_POINT_NP])
        F = p[..., 5:7] * self.function(t, p[..., 7:], 0)[..., None]
        return -np.einsum("...ij,...i->...j", S, F) + 0.0 * q


# -- initial assembly: a straight, unstretched beam in a pose ---------------------------------


@register
class BeamShape(Constraint):
    """One row of "node k lies on the straight unstretched beam through node 0":
    q = (node 0, node k) (8), p = (L, k/n_el); ``component`` selects the row:
    0, 1: r_k − r_0 − s_k r′_0 (x, y) with s_k = L k/n_el;  2, 3: r′_k − r′_0."""
    nq, np_, m = 8, 2, 1

    def __init__(self, names, qidx, pidx, rows, component=0):
        self.component = component
        super().__init__(names, qidx, pidx, rows)

    def phi(self, t, q, p):
        c = self.component
        if c < 2:
            val = q[..., 4 + c] - q[..., c] - p[..., 0] * p[..., 1] * q[..., 2 + c]
        else:
            val = q[..., 4 + c] - q[..., c] + 0.0 * p[..., 0]
        return val[..., None]

    def phi_q(self, t, q, p):
        c = self.component
        J = np.zeros(np.broadcast_shapes(q.shape[:-1], p.shape[:-1]) + (1, 8), dtype=np.result_type(q, p))
        J[..., 0, 4 + c] = 1.0
        J[..., 0, c] = -1.0
        if c < 2:
            J[..., 0, 2 + c] = -p[..., 0] * p[..., 1]
        return J

    def gamma(self, t, q, v, p):
        return 0.0 * self.phi(t, q, p) + 0.0 * v[..., :1]


@register
class BeamPose(Constraint):
    """One row fixing the pose of a beam's root frame (node 0), q = node 0 (4), p = (value,):
    ``x``/``y``: r_0 − value;  ``angle``: A(value)e₁ × r′_0 = 0 (the root tangent
    points at the given angle);  ``unit``: |r′_0|² − 1 (value unused)."""
    nq, np_, m = 4, 1, 1

    def __init__(self, names, qidx, pidx, rows, coordinate="angle"):
        self.coordinate = coordinate
        super().__init__(names, qidx, pidx, rows)

    def phi(self, t, q, p):
        c, v0 = self.coordinate, p[..., 0]
        if c in ("x", "y"):
            val = q[..., 0 if c == "x" else 1] - v0
        elif c == "angle":
            val = np.cos(v0) * q[..., 3] - np.sin(v0) * q[..., 2]
        else:
            val = q[..., 2] ** 2 + q[..., 3] ** 2 - 1.0 + 0.0 * v0
        return val[..., None]

    def phi_q(self, t, q, p):
        c, v0 = self.coordinate, p[..., 0]
        J = np.zeros(np.broadcast_shapes(q.shape[:-1], p.shape[:-1]) + (1, 4), dtype=np.result_type(q, p))
        if c in ("x", "y"):
            J[..., 0, 0 if c == "x" else 1] = 1.0
        elif c == "angle":
            J[..., 0, 2] = -np.sin(v0)
            J[..., 0, 3] = np.cos(v0)
        else:
            J[..., 0, 2] = 2.0 * q[..., 2]
            J[..., 0, 3] = 2.0 * q[..., 3]
        return J

    def gamma(self, t, q, v, p):
        z = 0.0 * (q[..., 0] + p[..., 0] + v[..., 0])
        if self.coordinate == "unit":
            z = z + 2.0 * (v[..., 2] ** 2 + v[..., 3] ** 2)
        return z[..., None]
