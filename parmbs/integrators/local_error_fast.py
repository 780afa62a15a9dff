"""timeloop.LocalError.norm once the history is full, by updates: the same numbers, fewer
numpy calls (issue 18, "adaptive never slower than fixed").

Why: on the five-bar with the compiled Arnold–Brüls step (one numba call, ≈ 40 µs) the
error estimate was the larger part of an adaptive step — ≈ 90 small numpy calls per
step: the third divided difference y[z_{k−2}, …, z_{k+1}] and its predecessor
y[z_{k−3}, …, z_k] recomputed from the four or five nodes for q and for v apart, then
the weighted norm per part (benchmarks/README.md, "Adaptive vs fixed").

What: with the history full (four accepted states, LocalError.norm's five-node case)
the estimate is ½ (y[z_{k−2}, …, z_{k+1}] + y[z_{k−3}, …, z_k]) on y = (q, v) stacked.
The second term and the last entries of the lower levels, y[z_{k−1}, z_k] and
y[z_{k−2}, z_{k−1}, z_k], are those the previous accepted step computed for its
candidate (Newton's recursion of divided differences: each level's newest entry needs
only the new node and the previous newest entry of the level below).  So each step
computes three new entries (the recursion's newest diagonal) instead of twelve, on one
stacked vector instead of two.

Same numbers, bit for bit: every entry is computed by the same expression, in the same
order, as timeloop._dd computes it (elementwise operations on the stacked vector are the
operations on q and v apart); the norm's two sums are the same dot products on the q and
v halves, added in the same order; ``tests/test_adaptive_fast_norm.py`` compares the
accepted step sequences of both paths.  Anything else — the first steps (confluent
data), a resumed history whose cached entries are not those of the last accepted state,
complex or non-float64 states — takes LocalError's general path (``norm`` returns None).
"""
import math

import numpy as np

from .newton_tol import NOISE_GAIN

F64 = np.dtype(np.float64)


class FastNorm:
    """The newest divided-difference diagonal of the accepted states (y = (q, v) stacked):
    y_k, y[z_{k−1}, z_k], y[z_{k−2}, z_{k−1}, z_k], y[z_{k−3}, …, z_k] and |y_k| (the
    weights' scale), valid for the history entry ``key`` (LocalError.hist[-1], by
    identity)."""

    def __init__(self):
        from .timeloop import V_PER_STEP      # (timeloop imports this module)
        self.v_per_step = V_PER_STEP
        self.reset()

    def reset(self):
        self.key = None
        self.diag = None
        self.cand = None

    def accept(self, t, entry):
        """The accepted state's history entry (t, q, v): the candidate's diagonal becomes
        the cached one if that candidate was this state, else the cache is dropped."""
        c, self.cand = self.cand, None
        if c is not None and c[0] == t and c[1] is entry[1] and c[2] is entry[2]:
            self.key, self.diag = entry, c[3]
        else:
            self.key = self.diag = None

    def _rebuild(self, hist):
        """The diagonal of the last four accepted states, as timeloop._dd's levels."""
        z = [t for t, _, _ in hist[-4:]]
        ys = [np.concatenate((q, v)) for _, q, v in hist[-4:]]
        l1 = [(ys[i + 1] - ys[i]) / (z[i + 1] - z[i]) for i in range(3)]
        l2 = [(l1[i + 1] - l1[i]) / (z[i + 2] - z[i]) for i in range(2)]
        l3 = (l2[1] - l2[0]) / (z[3] - z[0])
        self.key, self.diag = hist[-1], (ys[3], l1[2], l2[1], l3, np.abs(ys[3]))

    def norm(self, est, t1, q1, v1, h):
        """LocalError.norm(t1, (q1, v1, …), h) with a full history, or None (its general
        path then)."""
        hist = est.hist
        if not (q1.dtype == v1.dtype == F64 and hist[-1][1].dtype == hist[-1][2].dtype == F64):
            return None
        if self.key is not hist[-1]:
            self._rebuild(hist)
        y0, d1o, d2o, d3o, abs0 = self.diag
        n = q1.shape[0]
        if y0.shape[0] != n + v1.shape[0]:
            return None
        y1 = np.concatenate((q1, v1))
        d1 = (y1 - y0) / (t1 - hist[-1][0])
        d2 = (d1 - d1o) / (t1 - hist[-2][0])
        d3 = (d2 - d2o) / (t1 - hist[-3][0])
        abs1 = np.abs(y1)
        self.cand = (t1, q1, v1, (y1, d1, d2, d3, abs1))
        e = est.C * h ** 3 * 6.0 * (0.5 * (d3 + d3o))
        if est.noise is not None:
            dq = np.real(est.noise(q1))
        else:
            dq = est.ntol[0] + est.ntol[1] * float(np.max(np.abs(q1)))
        share = h / est.horizon
        tol = est.atol + est.rtol * np.maximum(abs0, abs1)
        tol[:n] *= share
        if not self.v_per_step:
            tol[n:] *= share
        noise = np.empty_like(tol)
        noise[:n] = NOISE_GAIN * dq
        noise[n:] = NOISE_GAIN * (est.v_gain * dq / h)
        over = noise > tol
        r = e / (tol + noise)
        rq, rv = r[:n], r[n:]
        acc = float(rq @ rq)
        acc += float(rv @ rv)
        floor_hit = bool(over.any())
        decided = False
        if floor_hit:
            rr = np.where(over, r * r, 0.0)
            acc_floor = float(np.sum(rr[:n]))
            acc_floor += float(np.sum(rr[n:]))
            decided = acc_floor > 0.5 * acc
        est._floor = (floor_hit, decided)
        return math.sqrt(acc / r.size)
