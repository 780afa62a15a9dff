"""Technique (b1) of issue 19: a dense LAPACK operator in place of the PETSc one.

``DenseOperator`` has the interface the Newmark steppers use of
``parmbs.model.assembly.SparseOperator`` (``set_values(blocks)``, ``solve``,
``solve_many``, ``transpose``) and the same CSR summation of the local blocks
(``BlockPattern.values``: one bincount), but writes the values into a dense numpy
(N, N) array and solves with ``numpy.linalg.solve`` (LAPACK dgesv: LU with partial
pivoting; PETSc's serial LU factors in natural order without pivoting).  No PETSc
objects on the per-step path; component evaluation is parmbs's, unchanged.
Serial only (the matrix is replicated).
"""
import numpy as np

from parmbs.model.assembly import BlockPattern


class DenseOperator:
    def __init__(self, N, blocks):
        self.N = N
        self.pattern = BlockPattern(N, blocks)
        rows = np.repeat(np.arange(N), np.diff(self.pattern.indptr))
        self.flat = rows * N + self.pattern.indices.astype(np.int64)
        self.A = np.zeros((N, N))

    def set_values(self, vals):
        data = self.pattern.values(vals)
        A = np.zeros(self.N * self.N)
        A[self.flat] = data
        self.A = A.reshape(self.N, self.N)

    def solve(self, rhs, transpose=False):
        A = self.A.T if transpose else self.A
        if np.iscomplexobj(rhs):                    # real matrix, complex rhs (complex step)
            return self.solve(rhs.real, transpose) + 1j * self.solve(rhs.imag, transpose)
        return np.linalg.solve(A, rhs)

    def solve_many(self, B, transpose=False):
        return self.solve(B, transpose)


def use_dense(stepper):
    """Swap the stepper's Newton operator for a DenseOperator of the same pattern
    (the initial-state solve keeps its PETSc operator)."""
    op = DenseOperator(stepper.op.N, stepper.blocks)
    stepper.op = stepper.lin = op
    return op
