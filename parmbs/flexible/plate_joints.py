"""Revolute and weld joints between plate nodes and rigid bodies (or ground).

Reuses ``joints._PointPair`` (the ANCF-beam joints): each side gives a position r and
a direction d with their Jacobians; the same Φ = (r_a − r_b[, (A(θ₀)d_a) × d_b])
serves.  A *plate* side is a node and its neighbour along the plate's local x
(q = (r_node, r_nb), p = (σ,) with σ = ±1): r = r_node, d = σ (r_nb − r_node) — the
element edge through the node, which points along the plate's x axis when
undeformed.  Both are linear in q, so the plate side adds nothing to γ or to the
revolute's Hessian.
"""
import numpy as np

from .joints import _PointPair, _side

PLATE_NQ, PLATE_NP = 4, 1
_NQ = {"rigid": 3, "plate": PLATE_NQ}
_NP = {"rigid": 4, "plate": PLATE_NP}


def _plate_side(q, v, p):
    sgn = p[..., 0:1]
    r = q[..., 0:2] + 0.0 * sgn
    d = sgn * (q[..., 2:4] - q[..., 0:2])
    lead = np.broadcast_shapes(q.shape[:-1], p.shape[:-1])
    Jr = np.zeros(lead + (2, 4), dtype=np.result_type(q, p))
    Jd = np.zeros_like(Jr)
    for i in range(2):
        Jr[..., i, i] = 1.0
        Jd[..., i, i] = -p[..., 0]
        Jd[..., i, 2 + i] = p[..., 0]
    if v is None:
        return r, d, Jr, Jd
    rd = v[..., 0:2] + 0.0 * sgn
    dd = sgn * (v[..., 2:4] - v[..., 0:2])
    return r, d, Jr, Jd, rd, dd, 0.0 * rd, 0.0 * dd


class _PlatePair(_PointPair):
    side_nq, side_np = _NQ, _NP

    def _sides(self, q, p, v=None):
        qa, qb = self._split(q, self.na)
        pa, pb = p[..., :self.pa], p[..., self.pa:self.pa + self.pb]
        va, vb = (None, None) if v is None else self._split(v, self.na)
        return tuple(_plate_side(qs, vs, ps) if kind == "plate" else _side(kind, qs, vs, ps)
                     for kind, qs, vs, ps in zip(self.kinds, (qa, qb), (va, vb), (pa, pb)))


PLATE_JOINT_CLASSES = {(kinds, weld): _PlatePair.pair(kinds, weld)
                       for kinds in (("rigid", "plate"), ("plate", "rigid"), ("plate", "plate"))
                       for weld in (False, True)}
