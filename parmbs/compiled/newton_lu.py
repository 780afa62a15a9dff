"""The Newton matrix's LU in the compiled Newmark steps: dense below a size, sparse above.

The compiled Newmark-family steps (compiled/newmark_step.py, compiled/newmark_adjoint.py)
factor J = [[Σ w (r_a + γh r_v + βh² r_q) + w_f βh² ∂(Φ_qᵀλ)/∂q, w_f Φ_qᵀ], [Φ_q, 0]]
once per Newton iteration (forward) or per step (tangent, adjoint).  Two factorizations:

* compiled/dense.py, partial pivoting, N³/3 multiply-adds: the fastest for small models
  (the five-bar, N = 22), where the sparse one's bookkeeping and refinement cost more
  than the few thousand multiply-adds they save;
* compiled/sparse_lu.py, the vehicle steps' (compiled/ab_step.py): a static constrained
  minimum-degree order computed once per model from J's pattern (``order``, Python),
  the numeric factorization on that pattern every iteration, each solve refined once.
  A 60-link chain (N = 300): 9·10⁶ multiply-adds dense, ~10⁴ sparse.

``S``, the compiled functions' last argument, chooses: None the dense LU (numba prunes the
sparse branch, so the small models' compiled code is the dense-only code of before), or
the tuple (perm, ptr, idx, jp, ji) of ``sparse_order`` — the order, its symbolic pattern
and J's CSR pattern (the numpy path's SparseOperator pattern, a superset of every entry
the kernels write).  ``SPARSE_FROM`` (compiled/__init__.py) is the measured crossover.
``factor`` returns (LU, piv, ok) in both cases (piv: the row pivots, or the sparse
order), so a caller holds one set of variables.
"""
import numpy as np
from ._jit import njit

from . import dense, sparse_lu


def sparse_order(N, n, op):
    """(perm, ptr, idx, jp, ji): sparse_lu.order of J's pattern (the SparseOperator's
    ``op.pattern``) and that pattern, int64."""
    jp, ji = (np.asarray(a, np.int64) for a in (op.pattern.indptr, op.pattern.indices))
    return (*sparse_lu.order(N, n, jp, ji), jp, ji)


@njit(cache=True)
def clear(J, S):
    """J = 0 before an evaluation: every entry (dense), or the entries of J's pattern,
    the only ones the sparse factorization and refinement read (N² → nnz writes: 12 of
    the ~75 µs of a Newton iteration of the 60-link chain, benchmarks/README.md)."""
    if S is None:
        J[:, :] = 0.0
        return
    jp, ji = S[3], S[4]
    for i in range(J.shape[0]):
        for a in range(jp[i], jp[i + 1]):
            J[i, ji[a]] = 0.0


@njit(cache=True)
def factor(J, S):
    """(LU, piv, ok) of J: dense.lu_factor when S is None, else sparse_lu.factor in S's
    order (piv = the order); ok False at a zero (or, sparse, non-finite) pivot."""
    if S is None:
        return dense.lu_factor(J)
    perm, ptr, idx, jp, ji = S
    A, ok = sparse_lu.factor(J, jp, ji, perm, ptr, idx)
    return A, perm, ok


@njit(cache=True)
def solve(J, LU, piv, S, b, transpose):
    """x with J x = b, or Jᵀ x = b when ``transpose`` (the adjoint step's solve), from
    ``factor``'s (LU, piv); sparse: refined once (sparse_lu._refine)."""
    if S is None:
        return dense.lu_solve_T(LU, piv, b) if transpose else dense.lu_solve(LU, piv, b)
    perm, ptr, idx, jp, ji = S
    if transpose:
        return sparse_lu.solve_T_refined(J, jp, ji, LU, perm, ptr, idx, b)
    return sparse_lu.solve_refined(J, jp, ji, LU, perm, ptr, idx, b)
