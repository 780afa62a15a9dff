"""Dense LU with partial pivoting for the compiled Newton step (issue 19).

The Newton matrices of small models (tens of unknowns) are factored here, inside the
compiled step, instead of by PETSc: a PETSc KSP call and a LAPACK call from numpy each
cost more than the factorization itself at this size (benchmarks/README.md, prototype
b1 vs a2).  The elimination is LAPACK getrf's (right-looking, row interchanges by the
largest |pivot| in the column, first one on ties), written as scalar loops: no threads,
no library, so the result does not depend on the machine's BLAS or on the run.
"""
import numpy as np
from ._jit import njit


@njit(cache=True)
def lu_factor(A):
    """A = P L U in place of a copy: returns (LU, piv, ok); ok is False at an exactly
    zero pivot column (a singular matrix)."""
    N = A.shape[0]
    LU = A.copy()
    piv = np.arange(N)
    for k in range(N):
        p, big = k, abs(LU[k, k])
        for i in range(k + 1, N):
            if abs(LU[i, k]) > big:
                p, big = i, abs(LU[i, k])
        if big == 0.0:
            return LU, piv, False
        if p != k:
            for j in range(N):
                LU[k, j], LU[p, j] = LU[p, j], LU[k, j]
            piv[k], piv[p] = piv[p], piv[k]
        inv = 1.0 / LU[k, k]
        for i in range(k + 1, N):
            LU[i, k] *= inv
            f = LU[i, k]
            if f != 0.0:
                for j in range(k + 1, N):
                    LU[i, j] -= f * LU[k, j]
    return LU, piv, True


@njit(cache=True)
def lu_solve(LU, piv, b):
    """x with P L U x = b (forward then backward substitution)."""
    N = LU.shape[0]
    x = np.empty(N)
    for i in range(N):
        x[i] = b[piv[i]]
    for i in range(N):
        s = x[i]
        for j in range(i):
            s -= LU[i, j] * x[j]
        x[i] = s
    for i in range(N - 1, -1, -1):
        s = x[i]
        for j in range(i + 1, N):
            s -= LU[i, j] * x[j]
        x[i] = s / LU[i, i]
    return x


@njit(cache=True)
def lu_solve_T(LU, piv, b):
    """x with (P L U)ᵀ x = b: Uᵀ w = b (forward), Lᵀ z = w (backward, unit diagonal),
    x = P z, i.e. x[piv[i]] = z[i] — the transposed solve of the adjoint step from the
    same factors."""
    N = LU.shape[0]
    z = np.empty(N)
    for i in range(N):
        s = b[i]
        for j in range(i):
            s -= LU[j, i] * z[j]
        z[i] = s / LU[i, i]
    for i in range(N - 1, -1, -1):
        s = z[i]
        for j in range(i + 1, N):
            s -= LU[j, i] * z[j]
        z[i] = s
    x = np.empty(N)
    for i in range(N):
        x[piv[i]] = z[i]
    return x
