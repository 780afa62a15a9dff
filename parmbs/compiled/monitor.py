"""The instability guard's per-step numbers in one compiled call (integrators/guard.py).

``Guard.check`` needs, after every step, whether a block of the state is non-finite,
the alternating and smooth parts of the accelerations

    N = ‖a_{k+1} − 2a_k + a_{k−1}‖∞ / 4,    S = ‖a_{k+1} + 2a_k + a_{k−1}‖∞ / 4,

and ‖q‖∞ (Newton's acceleration floor).  In numpy that is ~10 calls of ~1 µs on arrays
of a few dozen entries — as much as the compiled step itself on the five-bar
(benchmarks/README.md, "instability guard"); here it is one call.  The same operations
in the same order as the numpy path of guard.py ((a − 2a_k) + a_{k−1}; max of |·|,
exact), so the numbers are bitwise those of that path.  Used when the model's step is
compiled (numba importable and its cache usable: compiled.why_not).
"""
import numpy as np
from ._jit import njit


@njit(cache=True)
def _bad(y):
    for i in range(y.shape[0]):
        if not np.isfinite(y[i]):
            return True
    return False


@njit(cache=True)
def monitor(q, v, a, lam, a0, a1):
    """(index of the first non-finite block of (q, v, a, λ) or −1, N, S, ‖q‖∞); with a
    non-finite block the other three are 0."""
    if _bad(q):
        return 0, 0.0, 0.0, 0.0
    if _bad(v):
        return 1, 0.0, 0.0, 0.0
    if _bad(a):
        return 2, 0.0, 0.0, 0.0
    if _bad(lam):
        return 3, 0.0, 0.0, 0.0
    nyq, smooth, qmax = 0.0, 0.0, 0.0
    for i in range(a.shape[0]):
        a2 = 2.0 * a0[i]
        nyq = max(nyq, abs((a[i] - a2) + a1[i]))
        smooth = max(smooth, abs((a[i] + a2) + a1[i]))
    for i in range(q.shape[0]):
        qmax = max(qmax, abs(q[i]))
    return -1, 0.25 * nyq, 0.25 * smooth, qmax
