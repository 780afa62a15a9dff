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

from ..model.component import register
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
    def __init__(self, names, qidx, pidx, rows):
        ka, kb = self.kinds
        self.na, self.nb = _NQ[ka], _NQ[kb]
        self.pa, self.pb = _NP[ka], _NP[kb]
        super(_PointPair, self).__init__(names, qidx, pidx, rows)

    def _sides(self, q, p, v=None):
        qa, qb = self._split(q, self.na)
        pa, pb = p[..., :self.pa], p[..., self.pa:self.pa + self.pb]
        va, vb = (None, None) if v is None else self._split(v, self.na)
        return tuple(_plate_side(qs, vs, ps) if kind == "plate" else _side(kind, qs, vs, ps)
                     for kind, qs, vs, ps in zip(self.kinds, (qa, qb), (va, vb), (pa, pb)))


def _pair(kinds, weld):
    ka, kb = kinds
    attrs = dict(kinds=kinds, weld=weld, nq=_NQ[ka] + _NQ[kb],
                 np_=_NP[ka] + _NP[kb] + (1 if weld else 0), m=3 if weld else 2,
                 __doc__=f"{'Weld' if weld else 'Revolute'} joint, side a {ka}, side b {kb}.")
    name = f"{ka.capitalize()}{kb.capitalize()}{'Weld' if weld else 'Revolute'}"
    return register(type(name, (_PlatePair,), attrs))


PLATE_JOINT_CLASSES = {(kinds, weld): _pair(kinds, weld)
                       for kinds in (("rigid", "plate"), ("plate", "rigid"), ("plate", "plate"))
                       for weld in (False, True)}
