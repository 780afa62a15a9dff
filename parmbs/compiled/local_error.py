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

The same call also proposes the next step after an acceptance (timeloop.Controller.
after_accept's PI formula, hysteresis and clip, the same operations: bitwise its numbers)
when the run's error is this norm alone (no quadrature or sensitivity test, no MPI
verdict).  Its cost is the dispatcher's: on the five-bar (24 components) the arithmetic
is well under 1 µs, while each array argument or returned array costs numba's dispatcher
≈ 0.3 µs and a returned tuple with a new array ≈ 2 µs (benchmarks/README.md, "Adaptive vs
fixed: one call for estimate and controller").  So the caller passes the output array W
(two buffers, alternating: the candidate's diagonal and the accepted one), the constants
in one array S, the proposal and sums come back in S, and the norm is the return value.

``with_step`` is the same call made from inside a step kernel (ab_step.
ab_newton_step_estimate, newmark_step.newton_step_estimate), so an adaptive step is one dispatch from Python, as a fixed
one: the buffers and S one workspace array, the per-step scalars plain arguments
(``Request``).
"""
import math

import numpy as np
from ._jit import njit

from .monitor import _bad


# S: the constants of a run (LocalError.__init__), then the outputs of a call
S_ATOL, S_RTOL, S_HORIZON, S_VPER, S_GAIN, S_VGAIN = 0, 1, 2, 3, 4, 5
S_SAFETY, S_KI, S_KP, S_FMIN, S_FMAX, S_GROW, S_DTMAX, S_DTMIN = 6, 7, 8, 9, 10, 11, 12, 13
S_OVER, S_ACC, S_HNEXT, S_FAC = 14, 15, 16, 17
S_KEEP = 18                 # keep_min (1.0: no shrink kept), a constant like S_GROW
S_SIZE = 19


@njit(cache=True)
def estimate_step(P, W, q1, v1, a1, l1, e1, dqv, S, z1, z2, z3, t1, s, h, dq_a, dq_b, err_prev, mean):
    """‖e‖ of one candidate x1 = (q1, v1, a1, l1[, e1]) at t1 (``e1`` a trailing block, or
    empty; separate arguments: a tuple's type costs numba's dispatcher tens of µs), −1.0
    when x1 has a non-finite entry (nothing else computed), after the diagonal whose levels
    0–3 are the rows of P and whose newest |y| is P's row 4; z1, z2, z3 its last three nodes
    (newest first).  W (8 × 2n, written): the new diagonal's levels 0–3, its |y|, r = e /
    (tol + noise), tol and noise.  S: the constants (S_* above) in, and out S[S_OVER] (1.0:
    noise > tol somewhere), S[S_ACC] = Σ r_q² + Σ r_v², S[S_HNEXT] the step the controller
    proposes if this step is accepted (``err_prev`` its I-part memory, NaN: none), S[S_FAC]
    its PI factor before the hysteresis (Controller.accepted applies ``grow_after``'s rule to it).
    ``mean``: average the new level 3 with P's (four states kept); ``s`` = 6 C h³; the
    weights' share h/T on positions, on velocities too unless S[S_VPER]; noise δ_i =
    max(dqv_i, dq_a |q1|_max) if ``dqv`` has entries, else dq_a + dq_b |q1|_max
    (newton_tol.AdaptiveNewton.noise_law)."""
    if _bad(q1) or _bad(v1) or _bad(a1) or _bad(l1) or _bad(e1):              # the guard's test
        return -1.0
    atol, rtol, gain, v_gain = S[S_ATOL], S[S_RTOL], S[S_GAIN], S[S_VGAIN]
    share = h / S[S_HORIZON]
    v_share = 1.0 if S[S_VPER] != 0.0 else share
    n = q1.shape[0]
    M = 2 * n
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
        b0, b1 = P[4, i], W[4, i]
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
    err = math.sqrt(acc / M)
    S[S_OVER] = 1.0 if over else 0.0
    S[S_ACC] = acc
    # timeloop.Controller.after_accept, operation by operation
    e = 1e-10 if 1e-10 > err else err                                        # max(err, 1e-10)
    fac = S[S_SAFETY] * e ** -S[S_KI] * (err_prev ** S[S_KP] if not math.isnan(err_prev) else 1.0)
    fac = fac if fac > S[S_FMIN] else S[S_FMIN]                              # min(FAC_MAX, max(FAC_MIN, fac))
    fac = fac if fac < S[S_FMAX] else S[S_FMAX]
    S[S_FAC] = fac                                                           # before the hysteresis (grow_after)
    if 1.0 <= fac < S[S_GROW]:
        fac = 1.0
    elif S[S_KEEP] < fac < 1.0:
        fac = 1.0
    hn = h * fac
    hn = S[S_DTMAX] if S[S_DTMAX] < hn else hn
    S[S_HNEXT] = S[S_DTMIN] if S[S_DTMIN] > hn else hn
    return err


class Request:
    """What the adaptive loop hands a step kernel that also estimates (the stepper's
    ``estimate_into``; timeloop.LocalError.request): ``args`` the estimate's arguments
    after the step's own — the workspace ``ws`` (``workspace``: the two diagonal buffers
    and S in one array, one argument for numba's dispatcher), cur (the buffer holding the
    current diagonal), the nodes z1, z2, z3, t1, s = 6 C h³, the noise law's a, b, err_prev
    (NaN: none) and ``mean`` — or None: no estimate with this step; ``out`` (err, proposed
    h, noise-over flag) once the step's call estimated (``with_step``), else None.
    Per-step values travel as arguments, not as writes into S: a float argument costs
    numba's dispatcher ≈ 20 ns, a numpy item assignment from Python 5–10× that
    (benchmarks/README.md, "Adaptive vs fixed: the fixed step's Python path")."""
    __slots__ = ("args", "out")

    def __init__(self):
        self.args = self.out = None

    def call(self, plain, fused, args, n):
        """A compiled step: ``plain(*args)`` (n results, the last of them the status) when no
        estimate is asked (``args`` None), else ``fused(*args, *self.args)``, its trailing
        estimate (err, proposed h, noise-over flag) kept in ``out`` when the step converged
        (status 0); the step's n results either way.  ``self`` may be None (no request)."""
        if self is None or self.args is None:
            return plain(*args)
        r = fused(*args, *self.args)
        if r[n - 1] == 0:
            self.out = r[n:]
        return r[:n]


def workspace(m, S):
    """(ws, B, S'): one array holding the two 8 × m diagonal buffers B (B[cur] the current
    diagonal and its |y|, B[1 − cur] written with the candidate's) and then S's values
    (S' the view that replaces S)."""
    ws = np.empty(16 * m + S.shape[0])
    ws[16 * m:] = S
    return ws, ws[:16 * m].reshape(2, 8, m), ws[16 * m:]


@njit(cache=True)
def with_step(q1, v1, a1, l1, e1, h, ws, cur, z1, z2, z3, t1, s, dq_a, dq_b, err_prev, mean):
    """(‖e‖, the proposed next step, 1.0 if the noise exceeded some weight) of the step
    of size h that just produced x1 = (q1, v1, a1, l1, e1): ``estimate_step`` on the
    diagonal in buffer ``cur`` of the workspace ``ws``, the new one written to the other
    (``Request``).  Called by the step kernels' ``*_estimate`` entry points
    (ab_step.ab_newton_step_estimate, newmark_step.newton_step_estimate): the estimate
    without a dispatch of its own."""
    m = 2 * q1.shape[0]
    B = ws[:16 * m].reshape((2, 8, m))
    S = ws[16 * m:]
    err = estimate_step(B[cur], B[1 - cur], q1, v1, a1, l1, e1, np.empty(0), S, z1, z2, z3, t1, s, h, dq_a, dq_b,
                        err_prev, mean)
    return err, S[S_HNEXT], S[S_OVER]
