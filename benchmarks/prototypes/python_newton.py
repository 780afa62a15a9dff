"""The Python side shared by the prototypes whose Newton loop is not compiled: the
trapezoidal predictor and ``newton_acceleration_form``'s loop (parmbs
integrators/newmark.py) around any ``eval_RJ(q, v, a, λ) -> (R, J)`` returning the
dense residual and Newton matrix, solved with ``numpy.linalg.solve`` (LAPACK dgesv)."""
import numpy as np

BETA, GAMMA = 0.25, 0.5        # trapezoidal rule


def newton(qp, vp, a0, lam0, bh2, gh, tol, eval_RJ, k, t1):
    a, lam = a0.copy(), lam0.copy()
    n = len(a)
    dq = np.inf
    for it in range(1, tol.max_it + 1):
        q1 = qp + bh2 * a
        R, J = eval_RJ(q1, vp + gh * a, a, lam)
        dz = np.linalg.solve(J, -R)
        a += dz[:n]
        lam += dz[n:]
        dq = bh2 * np.max(np.abs(dz[:n]))
        if not np.all(np.isfinite(dz)):
            break
        if dq <= tol.atol + tol.rtol * np.max(np.abs(q1)):
            return (qp + bh2 * a, vp + gh * a, a, lam), it
    raise RuntimeError(f"step {k + 1} (t = {t1:.6g}): Newton did not converge (last update {dq:.2e})")


def run(x0, h, nsteps, tol, eval_RJ):
    """Forward run from x0 = (q, v, a, λ); returns (Q (nsteps+1, n), Newton iterations,
    final (q, v, a, λ))."""
    q, v, a, lam = (np.array(x, dtype=float) for x in x0)
    bh2, gh = BETA * h * h, GAMMA * h
    Q = np.empty((nsteps + 1, len(q)))
    Q[0] = q
    its = 0
    for k in range(nsteps):
        qp = q + h * v + (0.5 - BETA) * h * h * a
        vp = v + (1 - GAMMA) * h * a
        (q, v, a, lam), it = newton(qp, vp, a, lam, bh2, gh, tol, eval_RJ, k, (k + 1) * h)
        its += it
        Q[k + 1] = q
    return Q, its, (q, v, a, lam)
