"""Where the PETSc TS of a ``ts-*`` run lives: its vectors and matrices on the problem's
communicator (issue 20 item 4).

One rank (or a replicated run on COMM_SELF, parallel.replicate_small): sequential Vecs
and AIJ matrices, the operations of the serial code exactly.  Several ranks: the TS,
its state y = (q, v) (2n), the residual, the cost gradients λ (2n) and μ (nd) are MPI
Vecs in PETSc's default contiguous split; the Jacobians ∂F/∂y + shift ∂F/∂ẏ and ∂F/∂ρ
are MPIAIJ / MPIDENSE with each rank filling its own rows; the Newton solve is PETSc's
parallel LU (MUMPS, -parmbs_ts_pc_factor_mat_solver_type to change it).  The model
itself is evaluated whole on every rank from the gathered state (``get``): the rigid
models here are small, and the rows a rank owns are then a slice of the same numbers
every rank computed — what is distributed is the TS's linear algebra.

What differs from serial: the LU (MUMPS's pivoting and ordering instead of PETSc's
natural-order LU) and the reductions of the Newton norms; the trajectories agree to
the round-off of the Newton solves carried by the dynamics (tests/test_ts_mpi.py
states the bound).
"""
import numpy as np

from .._petsc import PETSc
from ..model.assembly import BlockPattern


class TSLayout:
    def __init__(self, comm, model):
        self.comm = comm
        self.dist = comm.getSize() > 1
        self.mod = model
        N = model.N
        if self.dist:
            v = PETSc.Vec().createMPI(N, comm=comm)
            self.lo, self.hi = v.getOwnershipRange()
            v.destroy()
            p = PETSc.Vec().createMPI(max(model.nd, 1), comm=comm)
            self.plo, self.phi = p.getOwnershipRange()
            p.destroy()
            mpi = comm.tompi4py()
            #: rows per rank (Allgatherv counts) of a state and a parameter vector
            self._counts = np.array(mpi.allgather(self.hi - self.lo), np.int64)
            self._pcounts = np.array(mpi.allgather(self.phi - self.plo), np.int64)
            idx = getattr(model, "idx", None)
            #: the penalty pattern's CSR of this rank's rows (dense models: None)
            self.pattern = BlockPattern(N, idx, (self.lo, self.hi)) if idx is not None else None
        else:
            self.lo, self.hi = 0, N
            self.plo, self.phi = 0, max(model.nd, 1)

    # -- vectors -------------------------------------------------------------------------------
    def vec(self):
        """A state-sized Vec (2n) of the TS."""
        if not self.dist:
            return PETSc.Vec().createSeq(self.mod.N)
        return PETSc.Vec().createMPI((self.hi - self.lo, self.mod.N), comm=self.comm)

    def pvec(self):
        """A parameter-sized Vec (max(nd, 1)): μ, laid out as ∂F/∂ρ's columns."""
        n1 = max(self.mod.nd, 1)
        if not self.dist:
            return PETSc.Vec().createSeq(n1)
        return PETSc.Vec().createMPI((self.phi - self.plo, n1), comm=self.comm)

    def get(self, v):
        """The whole of ``v`` on every rank (collective when distributed: Allgatherv into a
        fresh array, as the serial path's copy — no pickled pieces)."""
        if not self.dist:
            return v.getArray(readonly=True).copy()
        counts = self._counts if v.getSize() == self.mod.N else self._pcounts
        out = np.empty(int(counts.sum()))
        self.comm.tompi4py().Allgatherv(np.ascontiguousarray(v.getArray(readonly=True)), [out, counts])
        return out

    @staticmethod
    def set(v, full):
        """v's own rows from the whole array ``full`` (same on every rank)."""
        lo, hi = v.getOwnershipRange()
        v.setArray(full[lo:hi])

    @staticmethod
    def add(v, full):
        """v += full, on v's own rows."""
        lo, hi = v.getOwnershipRange()
        v.setArray(v.getArray(readonly=True) + full[lo:hi])

    # -- matrices --------------------------------------------------------------------------------
    def mat(self):
        """∂F/∂y + shift ∂F/∂ẏ: the model's AIJ, or an MPIAIJ of its pattern's own rows."""
        mod = self.mod
        if not self.dist:
            return mod.create_mat()
        N, nl = mod.N, self.hi - self.lo
        if self.pattern is not None:
            A = PETSc.Mat().createAIJ(((nl, N), (nl, N)), csr=(self.pattern.indptr, self.pattern.indices),
                                      comm=self.comm)
            A.setOption(PETSc.Mat.Option.NEW_NONZERO_ALLOCATION_ERR, True)
        else:                                   # dense blocks (index-1 ODE)
            A = PETSc.Mat().createAIJ(((nl, N), (nl, N)), nnz=(nl, N - nl), comm=self.comm)
        A.setUp()
        return A

    def fill(self, A, blocks):
        """A = the model's blocks (each rank its own rows; the values every rank computed)."""
        mod = self.mod
        if not self.dist:
            mod.fill(A, blocks)
            return
        if self.pattern is not None:
            A.setValuesCSR(self.pattern.indptr, self.pattern.indices, self.pattern.values(blocks))
        else:
            rows = np.arange(self.lo, self.hi, dtype=PETSc.IntType)
            cols = np.arange(mod.N, dtype=PETSc.IntType)
            A.setValues(rows, cols, np.ascontiguousarray(np.asarray(blocks)[self.lo:self.hi]).ravel())
        A.assemble()

    def dense_p(self):
        """∂F/∂ρ (2n × nd), dense, rows split as the state's."""
        mod = self.mod
        if not self.dist:
            J = PETSc.Mat().createDense([mod.N, mod.nd], comm=PETSc.COMM_SELF)
        else:
            J = PETSc.Mat().createDense(((self.hi - self.lo, mod.N), (self.phi - self.plo, mod.nd)),
                                        comm=self.comm)
        J.setUp()
        return J

    def fill_p(self, A, Fp):
        """A = ∂F/∂ρ (own rows)."""
        A.zeroEntries()
        A.setValues(np.arange(self.lo, self.hi, dtype=PETSc.IntType), np.arange(Fp.shape[1], dtype=PETSc.IntType),
                    np.ascontiguousarray(Fp[self.lo:self.hi]).ravel())
        A.assemble()
