"""The adaptive loop's local error estimate of one candidate step in one compiled call
(integrators/timeloop.LocalError.norm).

Why: with the compiled Arnold–Brüls step (one numba call, ≈ 40 µs on the five-bar) the
estimate's ≈ 30 numpy calls of ~1 µs on arrays of a few dozen entries — the finiteness
test of the candidate, the newest diagonal of the divided-difference table
(divided_differences.Diagonal.push), the mean of the last two third differences, the
weights, the measured noise, the ratios and their sums of squares — were the larger part
of what an adaptive step paid beyond a fixed one (benchmarks/README.md, "Adaptive
overhead: one compiled call").  Here they are one call.

The same operations in the same order as the numpy path (Diagonal.push: (y − below) /
(t1 − z_j) level by level; 0.5 (d3 + d3_prev); e = s · d3 with s = 6 C h³ computed by the
caller; the weights atol + rtol max(|y_k|, |y_k+1|), the positions' times h/T; the noise
2 δ, 2 (γ/β) δ / h; r = e / (tol + noise); r_q·r_q + r_v·r_v by ``np.dot``, which numba
hands to the BLAS ddot numpy's ``@`` calls), elementwise and without reassociation (numba
without fastmath), so the numbers are bitwise those of that path where numba's BLAS is
numpy's (tests/test_local_error.py checks both).  The floor bookkeeping of the rare steps
where the noise sets a weight stays numpy's on the caller's side.  Used when the run's
step is compiled (as the guard's compiled/monitor.py) and the diagonal is complete (four
levels of q and v).
"""
import numpy as np
from ._jit import njit

from .monitor import _bad


@njit(cache=True)
def estimate(P, absy0, z1, z2, z3, t1, q1, v1, a1, l1, e1, mean, s, atol, rtol, share, v_share, dqv, dq_a, dq_b,
             gain, v_gain, h):
    """One candidate x1 = (q1, v1, a1, l1[, e1]) at t1 (``e1`` a trailing block, or empty; as
    separate arguments: a tuple's type costs numba's dispatcher tens of µs) after the
    diagonal whose levels 0–3 are the rows of P, whose last three nodes are z1, z2, z3
    (newest first) and whose newest |y| is ``absy0``.  Returns (finite, W, noise > tol
    somewhere, Σ r_q² + Σ r_v²) with W's rows the new diagonal's levels 0–3, its |y|, r =
    e / (tol + noise), tol and noise (one array: each returned array costs the dispatcher
    about as much as the arithmetic here); ``finite`` False (x1 has a non-finite entry):
    nothing else computed.  ``mean``: average the new level 3 with P's (four states kept);
    ``s`` = 6 C h³; the weights' share: ``share`` on positions, ``v_share`` on velocities
    (1.0 for the numpy path's none: w · 1.0 is w); noise δ_i = max(dqv_i, dq_a |q1|_max) if
    ``dqv`` has entries, else dq_a + dq_b |q1|_max (newton_tol.AdaptiveNewton.noise_law);
    ``gain`` = NOISE_GAIN, ``v_gain`` = γ/β."""
    if _bad(q1) or _bad(v1) or _bad(a1) or _bad(l1) or _bad(e1):              # the guard's test
        return False, np.empty((8, 0)), False, 0.0
    n = q1.shape[0]
    M = 2 * n
    W = np.empty((8, M))
    d1, d2, d3 = t1 - z1, t1 - z2, t1 - z3
    qmax = 0.0
    for i in range(M):
        y = q1[i] if i < n else v1[i - n]
        W[0, i] = y
        a = abs(y)
        W[4, i] = a
        if i < n and a > qmax:
            qmax = a
        W[1, i] = (y - P[0, i]) / d1
        W[2, i] = (W[1, i] - P[1, i]) / d2
        W[3, i] = (W[2, i] - P[2, i]) / d3
    measured = dqv.shape[0] > 0
    rq = dq_a * qmax
    dq_s = dq_a + dq_b * qmax
    over = False
    for i in range(M):
        j = i if i < n else i - n
        dq = (dqv[j] if dqv[j] >= rq else rq) if measured else dq_s
        b0, b1 = absy0[i], W[4, i]
        w = atol + rtol * (b0 if b0 >= b1 else b1)
        if i < n:
            w *= share
            nz = gain * dq
        else:
            w *= v_share
            nz = gain * (v_gain * dq / h)
        dd = 0.5 * (W[3, i] + P[3, i]) if mean else W[3, i]
        e = s * dd
        W[5, i] = e / (w + nz)
        W[6, i] = w
        W[7, i] = nz
        if nz > w:
            over = True
    rp, rv = W[5, :n], W[5, n:]
    acc = np.dot(rp, rp)
    acc += np.dot(rv, rv)
    return True, W, over, acc
