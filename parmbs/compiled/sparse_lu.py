"""Sparse LU with a static elimination order for the compiled vehicle steps (issue 19).

The Newton matrix of a vehicle model, J = [[M + γ'h C + β'h² K, Φ_qᵀ], [Φ_q, 0]], is
sparse (the Iltis: N = 266, 7 076 entries) and of fixed pattern.  A dense LU costs N³/3
multiply-adds (6.3·10⁶ for the Iltis: 3.5 ms in compiled/dense.py, measured), the
sparse elimination in the order chosen here 1.7·10⁵ (benchmarks/README.md, issue-19
vehicle section).  The order is computed once per model (``order``, Python, ~10 ms)
and the numeric factorization (``factor``) runs in compiled code every Newton
iteration without pivoting.

Order: greedy minimum degree on the symmetric pattern (George & Liu, Computer Solution
of Large Sparse Positive Definite Systems, 1981, ch. 5), with one restriction — a
multiplier λ_i is eliminated only after every coordinate its constraint rows touch
(its q-neighbours).  Then the λ pivot is not the structural zero of the saddle point
but its Schur complement −Φ_q,i A⁻¹ Φ_q,iᵀ over those coordinates (nonzero when the
constraint's own columns have full rank — the same condition PETSc's natural-order
LU, the numpy path's solver below 200 unknowns, relies on, q before λ, which does not
pivot either).  An exactly zero or non-finite pivot returns ok = False: the caller
redoes the step on the numpy path (which pivots, or reports).

The symbolic factorization is that of the elimination graph: eliminating node k joins
its remaining neighbours into a clique; L's column k and U's row k have the pattern of
those neighbours (the same set: the pattern is symmetric).  Ties in the degree go to
the lowest index, so the order, and the numbers, are the same in every run.
"""
import numpy as np
from ._jit import njit


def order(N, n, indptr, indices):
    """(perm, ptr, idx): the elimination order (perm[k] = unknown eliminated k-th) and,
    in the permuted numbering, each pivot's later neighbours idx[ptr[k]:ptr[k+1]]
    (sorted).  ``indptr``/``indices``: the CSR pattern of J (any symmetric superset);
    unknowns ≥ n are the multipliers (module docstring)."""
    adj = [set() for _ in range(N)]
    for i in range(N):
        for j in indices[indptr[i]:indptr[i + 1]]:
            j = int(j)
            if i != j:
                adj[i].add(j)
                adj[j].add(i)
    qn = [sum(1 for j in adj[i] if j < n) if i >= n else 0 for i in range(N)]
    alive, perm, nbrs = set(range(N)), [], []
    while alive:
        best = min(((len(adj[i]), i) for i in alive if qn[i] == 0), default=None)
        if best is None:                       # cannot happen: a q node is always eligible
            raise ValueError("no eligible pivot")
        i = best[1]
        perm.append(i)
        alive.remove(i)
        nb = sorted(adj[i])
        nbrs.append(nb)
        for j in nb:
            adj[j].discard(i)
            if i < n <= j:
                qn[j] -= 1
        for j in nb:
            adj[j].update(k for k in nb if k != j)
        adj[i] = set()
    inv = np.empty(N, np.int64)
    inv[perm] = np.arange(N)
    ptr = np.zeros(N + 1, np.int64)
    idx = []
    for k, nb in enumerate(nbrs):
        loc = sorted(int(inv[j]) for j in nb)
        idx += loc
        ptr[k + 1] = ptr[k] + len(loc)
    return np.asarray(perm, np.int64), ptr, np.asarray(idx, np.int64)


def flops(ptr):
    """Multiply-adds of one factorization: Σ_k |L_k| |U_k|."""
    d = np.diff(ptr)
    return int(np.sum(d * d))


@njit(cache=True)
def factor(J, jp, ji, perm, ptr, idx):
    """(LU, ok): P J Pᵀ = L U in place of a permuted copy of J's pattern (jp, ji: CSR; the
    rest of J is zero) — unit L below, U on and above the diagonal — only on the symbolic
    pattern (ptr, idx)."""
    N = J.shape[0]
    pos = np.empty(N, np.int64)
    for k in range(N):
        pos[perm[k]] = k
    A = np.zeros((N, N))
    for i in range(N):
        for a in range(jp[i], jp[i + 1]):
            A[pos[i], pos[ji[a]]] = J[i, ji[a]]
    return A, eliminate(A, ptr, idx)


@njit(cache=True)
def eliminate(A, ptr, idx):
    """``factor``'s elimination in place on the permuted matrix A; False at a zero or
    non-finite pivot."""
    N = A.shape[0]
    for k in range(N):
        piv = A[k, k]
        if piv == 0.0 or not np.isfinite(piv):
            return False
        inv = 1.0 / piv
        for a in range(ptr[k], ptr[k + 1]):
            i = idx[a]
            f = A[i, k] * inv
            A[i, k] = f
            if f != 0.0:
                for b in range(ptr[k], ptr[k + 1]):
                    j = idx[b]
                    A[i, j] -= f * A[k, j]
    return True


@njit(cache=True)
def solve(A, perm, ptr, idx, b):
    """x with J x = b from ``factor``'s LU."""
    N = A.shape[0]
    y = np.empty(N)
    for i in range(N):
        y[i] = b[perm[i]]
    for k in range(N):
        yk = y[k]
        if yk != 0.0:
            for a in range(ptr[k], ptr[k + 1]):
                i = idx[a]
                y[i] -= A[i, k] * yk
    for k in range(N - 1, -1, -1):
        s = y[k]
        for a in range(ptr[k], ptr[k + 1]):
            j = idx[a]
            s -= A[k, j] * y[j]
        y[k] = s / A[k, k]
    x = np.empty(N)
    for i in range(N):
        x[perm[i]] = y[i]
    return x


@njit(cache=True)
def solve_T(A, perm, ptr, idx, b):
    """x with Jᵀ x = b from ``factor``'s LU: (P J Pᵀ)ᵀ = Uᵀ Lᵀ, so Uᵀ y = P b (forward,
    column by column of U's rows), Lᵀ z = y (backward, unit diagonal), x = Pᵀ z — the
    transposed solve of the adjoint step from the same factors."""
    N = A.shape[0]
    y = np.empty(N)
    for i in range(N):
        y[i] = b[perm[i]]
    for k in range(N):
        yk = y[k] / A[k, k]
        y[k] = yk
        if yk != 0.0:
            for a in range(ptr[k], ptr[k + 1]):
                j = idx[a]
                y[j] -= A[k, j] * yk
    for k in range(N - 1, -1, -1):
        s = y[k]
        for a in range(ptr[k], ptr[k + 1]):
            i = idx[a]
            s -= A[i, k] * y[i]
        y[k] = s
    x = np.empty(N)
    for i in range(N):
        x[perm[i]] = y[i]
    return x


@njit(cache=True)
def _refine(J, rp, ci, A, perm, ptr, idx, b, transpose):
    """``solve`` (``solve_T`` when ``transpose``) and one step of iterative refinement,
    x += solve(b − J x) (b − Jᵀx), the residual over J's pattern (rp, ci: CSR of J's
    nonzero pattern, symmetric: row i of Jᵀ has the columns of row i of J).  The
    elimination order trades pivot size for fill: on the Iltis the factors grow by
    ~3·10⁸ over J (measured), the plain solve is then accurate to ~7·10⁻⁸ relative, one
    refinement step to ~3·10⁻¹⁵ — compiled/dense.py's partially pivoted LU of the same
    matrix: ~1·10⁻¹⁴ (benchmarks/README.md).  Cost: one product over the 7·10³ entries
    and one more solve, ~15 % of a factorization."""
    x = solve_T(A, perm, ptr, idx, b) if transpose else solve(A, perm, ptr, idx, b)
    N = b.shape[0]
    r = np.empty(N)
    for i in range(N):
        s = b[i]
        for a in range(rp[i], rp[i + 1]):
            j = ci[a]
            s -= (J[j, i] if transpose else J[i, j]) * x[j]
        r[i] = s
    d = solve_T(A, perm, ptr, idx, r) if transpose else solve(A, perm, ptr, idx, r)
    for i in range(N):
        x[i] += d[i]
    return x


@njit(cache=True)
def solve_refined(J, rp, ci, A, perm, ptr, idx, b):
    """x with J x = b, refined once (``_refine``)."""
    return _refine(J, rp, ci, A, perm, ptr, idx, b, False)


@njit(cache=True)
def solve_T_refined(J, rp, ci, A, perm, ptr, idx, b):
    """x with Jᵀ x = b, refined once (``_refine``): the adjoint step's solve."""
    return _refine(J, rp, ci, A, perm, ptr, idx, b, True)
