"""The K_ff factorization of a modal reduction (modal.py): serial SuperLU, or for very
large bodies a Cholesky factorization by MUMPS distributed over the ranks.

Why.  The reduction of a floating-frame body factors its clamped stiffness K_ff once per
design (shift-invert eigensolve, attachment modes, the deflated CGs of the eigen-adjoint).
``scipy.sparse.linalg.splu`` (COLAMD, L and U both stored) is what the ≤ 10⁵-element
crank uses; its fill on the 2000 × 500 mesh (1.0·10⁶ elements, 2·10⁶ elastic
coordinates) is ~35× that of 500 × 200 (L + U = 71·10⁶ entries there, measured), and the
reduced model runs replicated on every rank (parallel.replicate_small), so each rank
would hold one such LU.  Above ``MUMPS_MIN_DOFS`` free dofs the factor is instead one
MUMPS Cholesky (LDLᵀ of the SPD K_ff, nested-dissection ordering, only L stored) on
PETSc.COMM_WORLD, its factors split over the ranks: every rank passes the same replicated
K_ff and right-hand sides (the replicated reduced model computes them identically) and
gets the whole solution back (Allgatherv), so the callers stay replicated numpy.

Collective: on more than one rank every ``solve`` must be called by all ranks in the
same order — which the replicated reduction does (one deterministic code path, the same
bytes on every rank).  Serial results below the threshold are SuperLU's, bit for bit as
before; above it 2 ranks = 1 rank to round-off (MUMPS' distributed factorization).
Options: prefix ``parmbs_modal_`` (e.g. ``-parmbs_modal_mat_mumps_icntl_7 5``);
``-parmbs_modal_mumps_min_dofs N`` moves the threshold (0: MUMPS for every body with a
sparse eigensolve — the 10⁵-density crank then factors and solves faster, not bit for
bit as before).
"""
import numpy as np
import scipy.sparse.linalg as spla

MUMPS_MIN_DOFS = 1_000_000      # free dofs from which K_ff is factored by MUMPS (docstring)


def factor(Kf):
    """A factorization of the SPD K_ff with ``solve(B)`` for B (n,) or (n, k): SuperLU below
    ``MUMPS_MIN_DOFS`` free dofs (or the PETSc option ``-parmbs_modal_mumps_min_dofs N``),
    else the distributed MUMPS Cholesky."""
    from .._petsc import PETSc
    use = Kf.shape[0] >= PETSc.Options().getInt("parmbs_modal_mumps_min_dofs", MUMPS_MIN_DOFS)
    if use:
        # petsc4py defers destroying objects on a communicator other than COMM_SELF when
        # they are garbage-collected (destruction may be collective): the factors of
        # earlier designs stay allocated until this collective clean-up (measured at
        # 500 × 200: +0.3 GB per reduction without it, none after the first with it)
        PETSc.garbage_cleanup(PETSc.COMM_WORLD)
        return MumpsCholesky(Kf)
    return spla.splu(Kf.tocsc())


class MumpsCholesky:
    """K_ff (replicated scipy sparse, symmetric positive definite) factored by MUMPS
    Cholesky on PETSc.COMM_WORLD; ``solve`` takes and returns replicated arrays."""

    def __init__(self, Kf):
        from .._petsc import PETSc
        from mpi4py import MPI
        self.PETSc = PETSc
        comm = PETSc.COMM_WORLD
        self.mpi = comm.tompi4py()
        n = Kf.shape[0]
        self.n = n
        P, r = self.mpi.size, self.mpi.rank
        cuts = [n * k // P for k in range(P + 1)]
        lo, hi = cuts[r], cuts[r + 1]
        self.lo, self.hi = lo, hi
        self.counts = np.diff(cuts).astype(np.int64)
        self.displs = np.asarray(cuts[:-1], np.int64)
        rows = Kf.tocsr()[lo:hi]
        rows.sort_indices()
        it = PETSc.IntType
        A = PETSc.Mat().createAIJ(size=((hi - lo, n), (hi - lo, n)),
                                  csr=(rows.indptr.astype(it), rows.indices.astype(it), rows.data), comm=comm)
        A.setOption(PETSc.Mat.Option.SPD, True)
        del rows
        ksp = PETSc.KSP().create(comm)
        ksp.setOptionsPrefix("parmbs_modal_")
        ksp.setOperators(A)
        ksp.setType("preonly")
        pc = ksp.getPC()
        pc.setType("cholesky")
        pc.setFactorSolverType("mumps")
        ksp.setFromOptions()
        ksp.setUp()
        self.A, self.ksp = A, ksp
        self.b, self.x = A.createVecs()
        self._MPI = MPI

    def solve(self, B):
        """K_ff⁻¹ B for B (n,) or (n, k), replicated: one MUMPS solve per column, or for
        k > 1 one multi-right-hand-side solve (MatMatSolve)."""
        B = np.asarray(B, float)
        one = B.ndim == 1
        Bc = B[:, None] if one else B
        k = Bc.shape[1]
        loc = self.hi - self.lo
        if k == 1:
            self.b.getArray()[:] = Bc[self.lo:self.hi, 0]
            self.ksp.solve(self.b, self.x)
            Xl = self.x.getArray(readonly=True)[:, None]
        else:
            PETSc = self.PETSc
            comm = self.A.getComm()
            Bm = PETSc.Mat().createDense(((loc, self.n), (None, k)), array=np.asfortranarray(Bc[self.lo:self.hi]),
                                         comm=comm)
            Xm = PETSc.Mat().createDense(((loc, self.n), (None, k)), comm=comm)
            Xm.setUp()
            self.ksp.getPC().getFactorMatrix().matSolve(Bm, Xm)
            Xl = np.array(Xm.getDenseArray(readonly=True))
            Bm.destroy()
            Xm.destroy()
        # gather the row blocks: every rank sends its (loc, k) block row-major
        out = np.empty((self.n, k))
        self.mpi.Allgatherv(np.ascontiguousarray(Xl), [out, self.counts * k, self.displs * k, self._MPI.DOUBLE])
        return out[:, 0] if one else out
