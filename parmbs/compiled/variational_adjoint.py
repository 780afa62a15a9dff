"""The variational adjoint step's linearization, transposed solves and transposed products
in compiled code (issues 19, 22; benchmarks/README.md "The double wishbone's adjoint sweep
in compiled code", branch adjw19).

``Variational.adjoint_step`` (integrators/variational.py) is the exact transpose of the
tangent step, stages in reverse (seed 000 Eqs. 25–27 in one-step form):

    stage 2:  Sᵀ ζ = [μ_v; 0],           S = [[M, G_{n+1}ᵀ], [G_{n+1}, 0]],
    stage 1:  Jᵀ ν = [μ_A; 0],           J = [[M + (h²/4)K_m + (h/2)C_m, G_nᵀ], [G_{n+1}, 0]],

with one column per objective, the products (∂R/∂x)ᵀ ζ, (∂R/∂x)ᵀ ν of every stage and
the design terms −(∂R/∂ρ)ᵀ ν.  Before it, ``_linearize`` rebuilds J and S at the step's
states and recovers Λ_n = (J⁻¹[−(M A + F_m); 0])[n:] and ξ = (S⁻¹[p̃; −Φ_t])[n:].  On the
double wishbone (17 columns, N = 394) the numpy/PETSc step spent 28 ms of which ~9 ms in
36 MUMPS solves, ~6 ms in the LocalOperator products and ~3 ms assembling J and S
(benchmarks/variational_adjoint.py).  Here:

* J's and S's CSR values and the right-hand sides of Λ and ξ come from the forward step's
  ``fused`` calls (compiled/variational_newton.py: mode 1 at (q_n, v_n, A) with Λ = 0 gives
  [M A + F_m; (2/h²)Φ] and J; mode 2 at (q_{n+1}, q_{n+½}, v_{n+½}) S and [p̃; −Φ_t]) — or,
  without the fused step, the numpy blocks of ``_set_J``/``_set_S`` — factored by
  compiled/saddle_lu.py (the forward's static order);
* every solve, direct or transposed, of all columns in one call (``solve_many_csr``):
  sparse_lu.solve / solve_T's operations with each factor entry read once for all
  columns (the factors copied once per factorization into pattern order, ``pack``), one
  refinement step with the residual over J's CSR values (b − J x or b − Jᵀ x: the same
  factors, no Jᵀ factored);
* the products Aᵀ Y of the LocalOperators (local blocks B_e with row and column maps)
  by ``tmatmul``, all columns at once, element by element.

J's G_{n+1} is taken at q_n + h v_n + (h²/2)A with A = (2/h²)(q_{n+1} − q_n − h v_n), which
is q_{n+1} to round-off (the numpy path uses the stored q_{n+1}); with the LU's other
elimination order and the products' other summation order, the gradients differ from the
numpy/PETSc path's by round-off amplified by the stiff tubes
(tests/test_compiled_variational.py holds the bound).  Bitwise the same from run to run:
a step depends on (t, x_n, x_{n+1}, μ_{n+1}, p) only, so checkpointed sweeps repeat the
in-memory one.  Complex inputs (complex step) and a zero pivot take the numpy/PETSc path.
"""
import numpy as np

from ._jit import njit
from . import sparse_lu
from .saddle_lu import CompiledSaddleLU, PivotFailure


@njit(cache=True)
def pack(A, ptr, idx):
    """(L, U, d): ``factor_csr``'s LU (P J Pᵀ = L U in the dense work array) read once into
    pattern order, L[a] = A[idx[a], k] (L's column k), U[a] = A[k, idx[a]] (U's row k) for
    a in ptr[k]:ptr[k+1], d = U's diagonal: the solves then read the factors contiguously
    (the column reads of L strode across A's rows), the same numbers in the same order."""
    N = A.shape[0]
    nnz = ptr[N]
    L, U, d = np.empty(nnz), np.empty(nnz), np.empty(N)
    for kk in range(N):
        d[kk] = A[kk, kk]
        for a in range(ptr[kk], ptr[kk + 1]):
            L[a] = A[idx[a], kk]
            U[a] = A[kk, idx[a]]
    return L, U, d


@njit(cache=True)
def _lu_many(L, U, d, perm, ptr, idx, B, transpose):
    """X with J X = B (Jᵀ X = B when ``transpose``) from ``factor_csr``'s LU (P J Pᵀ = L U:
    sparse_lu.solve, solve_T) packed by ``pack``, all columns at once: each factor entry is
    read once for the k columns (column c gets sparse_lu's operations on it in the same
    order)."""
    N, k = B.shape
    Y = np.empty((N, k))
    for i in range(N):
        for c in range(k):
            Y[i, c] = B[perm[i], c]
    s = np.empty(k)
    if not transpose:
        for kk in range(N):                       # L y = P b (unit lower, by columns)
            for a in range(ptr[kk], ptr[kk + 1]):
                i = idx[a]
                f = L[a]
                for c in range(k):
                    Y[i, c] -= f * Y[kk, c]
        for kk in range(N - 1, -1, -1):           # U z = y (by rows)
            for c in range(k):
                s[c] = Y[kk, c]
            for a in range(ptr[kk], ptr[kk + 1]):
                j = idx[a]
                w = U[a]
                for c in range(k):
                    s[c] -= w * Y[j, c]
            dk = d[kk]
            for c in range(k):
                Y[kk, c] = s[c] / dk
    else:
        for kk in range(N):                       # Uᵀ y = P b (by U's rows)
            dk = d[kk]
            for c in range(k):
                Y[kk, c] = Y[kk, c] / dk
            for a in range(ptr[kk], ptr[kk + 1]):
                j = idx[a]
                w = U[a]
                for c in range(k):
                    Y[j, c] -= w * Y[kk, c]
        for kk in range(N - 1, -1, -1):           # Lᵀ z = y (unit, by L's columns)
            for c in range(k):
                s[c] = Y[kk, c]
            for a in range(ptr[kk], ptr[kk + 1]):
                i = idx[a]
                f = L[a]
                for c in range(k):
                    s[c] -= f * Y[i, c]
            for c in range(k):
                Y[kk, c] = s[c]
    X = np.empty((N, k))
    for i in range(N):
        for c in range(k):
            X[perm[i], c] = Y[i, c]
    return X


@njit(cache=True)
def solve_many_csr(data, jp, ji, L, U, d, perm, ptr, idx, B, transpose):
    """X with J X = B (Jᵀ X = B when ``transpose``) from ``factor_csr``'s LU (``pack``ed),
    all columns at once, refined once (x += solve(b − J x), b − Jᵀ x with ``transpose``)
    with the residual over J's CSR values (rows jp, columns ji; no Jᵀ factored or stored)."""
    N, k = B.shape
    X = _lu_many(L, U, d, perm, ptr, idx, B, transpose)
    Rr = np.empty((N, k))
    for i in range(N):
        for c in range(k):
            Rr[i, c] = B[i, c]
    if transpose:
        for i in range(N):
            for a in range(jp[i], jp[i + 1]):
                j = ji[a]
                w = data[a]
                for c in range(k):
                    Rr[j, c] -= w * X[i, c]
    else:
        for i in range(N):
            for a in range(jp[i], jp[i + 1]):
                j = ji[a]
                w = data[a]
                for c in range(k):
                    Rr[i, c] -= w * X[j, c]
    D = _lu_many(L, U, d, perm, ptr, idx, Rr, transpose)
    for i in range(N):
        for c in range(k):
            X[i, c] += D[i, c]
    return X


@njit(cache=True)
def _lu_one(L, U, d, perm, ptr, idx, b, transpose):
    """``_lu_many`` of one column b (N,): the same operations in the same order, without
    the loops over columns (Λ and ξ of the linearization: one column each)."""
    N = b.shape[0]
    y = np.empty(N)
    for i in range(N):
        y[i] = b[perm[i]]
    if not transpose:
        for kk in range(N):
            yk = y[kk]
            for a in range(ptr[kk], ptr[kk + 1]):
                y[idx[a]] -= L[a] * yk
        for kk in range(N - 1, -1, -1):
            s = y[kk]
            for a in range(ptr[kk], ptr[kk + 1]):
                s -= U[a] * y[idx[a]]
            y[kk] = s / d[kk]
    else:
        for kk in range(N):
            yk = y[kk] / d[kk]
            y[kk] = yk
            for a in range(ptr[kk], ptr[kk + 1]):
                y[idx[a]] -= U[a] * yk
        for kk in range(N - 1, -1, -1):
            s = y[kk]
            for a in range(ptr[kk], ptr[kk + 1]):
                s -= L[a] * y[idx[a]]
            y[kk] = s
    x = np.empty(N)
    for i in range(N):
        x[perm[i]] = y[i]
    return x


@njit(cache=True)
def solve_one_csr(data, jp, ji, L, U, d, perm, ptr, idx, b, transpose):
    """``solve_many_csr`` of one column b (N,) (the same operations in the same order)."""
    N = b.shape[0]
    x = _lu_one(L, U, d, perm, ptr, idx, b, transpose)
    r = b.copy()
    if transpose:
        for i in range(N):
            xi = x[i]
            for a in range(jp[i], jp[i + 1]):
                r[ji[a]] -= data[a] * xi
    else:
        for i in range(N):
            s = r[i]
            for a in range(jp[i], jp[i + 1]):
                s -= data[a] * x[ji[a]]
            r[i] = s
    dx = _lu_one(L, U, d, perm, ptr, idx, r, transpose)
    for i in range(N):
        x[i] += dx[i]
    return x


@njit(cache=True)
def tmatmul_part(rows, cols, B, Y, out):
    """out[cols[e, b]] += Σ_a B[e, a, b] Y[rows[e, a]] for every column of Y: one local
    part (rows (ne, a), cols (ne, b), B (ne, a, b)) of a LocalOperator, transposed; −1
    indices drop (a −1 row reads zero)."""
    ne, na, nb = B.shape
    k = Y.shape[1]
    for e in range(ne):
        for b_ in range(nb):
            j = cols[e, b_]
            if j < 0:
                continue
            for a in range(na):
                i = rows[e, a]
                if i < 0:
                    continue
                w = B[e, a, b_]
                if w != 0.0:
                    for c in range(k):
                        out[j, c] += w * Y[i, c]


def tmatmul(op, Y):
    """opᵀ Y (op a LocalOperator, Y real (rows, k)); its assembled extras (structured
    continua) by their own products."""
    out = np.zeros((op.shape[1], Y.shape[1]))
    Yc = np.ascontiguousarray(Y, dtype=np.float64)
    for rows, cols, B in op.parts:
        tmatmul_part(np.ascontiguousarray(rows, dtype=np.int64), np.ascontiguousarray(cols, dtype=np.int64),
                     np.ascontiguousarray(B, dtype=np.float64), Yc, out)
    for e in op.extra:
        out = out + e.T @ Yc
    return out


class CompiledAdjoint:
    """The compiled operators of the variational adjoint (and tangent) step: J and S of the
    step's linearization (their own factors: the forward's are left alone, a checkpointed
    sweep recomputes forward steps in between)."""

    def __init__(self, cv):
        order = (cv.J.perm, cv.J.ptr, cv.J.idx, cv.J.jp, cv.J.ji)
        self.J, self.S = CompiledSaddleLU(cv.J, order), CompiledSaddleLU(cv.S, order)
        self.newton = cv.newton
        self._packed = {}          # id(operator) -> (its LU, pack(LU)): the last factorization's

    def linear_data(self, t, q0, v0, A, q1, qm, vm, p, h):
        """(J's CSR values, M A + F_m, S's CSR values, [p̃; −Φ_t]) by the fused step's calls
        (None without it)."""
        fn = self.newton
        if fn is None:
            return None
        fn.begin(t + h, q0, p, h)
        R, data = fn.evaluate(q0, v0, A, np.zeros(fn.m), h)
        Jd, r1 = data.copy(), R[:fn.n].copy()
        z = fn._none
        from .variational_newton import fused
        dS, _ = fused(2, q1, qm, vm, z, h, fn.baseS, *fn.packed, fn.fdr1, z, fn._iz, fn._iz, fn.gn_slot,
                      fn.g1_slot, fn.R, z)
        return Jd, r1, dS[:fn.nnz].copy(), fn.R[:fn.N].copy()

    def solve(self, op, B, transpose=False):
        """X with op X = B (opᵀ when ``transpose``), B (N,) or (N, k); PivotFailure when not finite."""
        B2 = np.ascontiguousarray(B if B.ndim == 2 else B[:, None], dtype=np.float64)
        packed = self._packed.get(id(op))
        if packed is None or packed[0] is not op.LU:          # once per factorization
            packed = self._packed[id(op)] = (op.LU, *pack(op.LU, op.ptr, op.idx))
        if B.ndim == 1:
            X = solve_one_csr(op.data, op.jp, op.ji, *packed[1:], op.perm, op.ptr, op.idx, B2[:, 0].copy(), transpose)
            if not np.all(np.isfinite(X)):
                raise PivotFailure("non-finite solution")
            return X
        X = solve_many_csr(op.data, op.jp, op.ji, *packed[1:], op.perm, op.ptr, op.idx, B2, transpose)
        if not np.all(np.isfinite(X)):
            raise PivotFailure("non-finite solution")
        return X if B.ndim == 2 else X[:, 0]


def warm_up():
    """Compile (or load) the kernels above on a 2 × 2 saddle point."""
    jp, ji = np.array([0, 2, 3], np.int64), np.array([0, 1, 0], np.int64)
    perm, ptr, idx = sparse_lu.order(2, 1, jp, ji)
    from .saddle_lu import factor_csr
    data = np.array([2.0, 1.0, 1.0])
    LU, _ = factor_csr(data, jp, ji, perm, ptr, idx)
    for tr in (False, True):
        solve_many_csr(data, jp, ji, *pack(LU, ptr, idx), perm, ptr, idx, np.ones((2, 2)), tr)
        solve_one_csr(data, jp, ji, *pack(LU, ptr, idx), perm, ptr, idx, np.ones(2), tr)
    tmatmul_part(np.zeros((1, 1), np.int64), np.zeros((1, 1), np.int64), np.ones((1, 1, 1)), np.ones((1, 2)),
                 np.zeros((1, 2)))
