"""The Krylov + algebraic-multigrid solve of the elastic block F of continuum_schur.py,
beside its MUMPS factorization, chosen by the solver's PETSc options:

    -parmbs_schur_ksp_type gmres -parmbs_schur_pc_type gamg      (PETSc's smoothed aggregation)
    -parmbs_schur_ksp_type gmres -parmbs_schur_pc_type hypre     (BoomerAMG)

Why it needs something.  F = Σ cM M + cG G + cK K of a free-floating continuum: the
body's clamp is a constraint of the border, so K is singular on the three in-plane
rigid motions and F is K regularized only by cM M, ~10⁻⁹ of it (continuum_schur.py).
An AMG that does not know those motions cannot represent them on its coarse levels
and stalls (measured on the crank 100 × 40: GAMG without them, GMRES stopped at its
iteration limit, KSP reason −3).  Smoothed aggregation reproduces a given near-null
space exactly on every level (Vaněk, Mandel & Brezina, Computing 56, 1996), so F
carries the rigid modes as its near-null space (``MatSetNearNullSpace``; hypre's
BoomerAMG ignores it).

Reuse.  The MUMPS path keeps F's factorization over Newton iterations, steps and the
adjoint sweep, and refactors per design with the symbolic analysis kept (same
pattern).  The AMG counterpart: the hierarchy is built when F is (re)assembled
(``_factor``), applied by every solve until the next; GAMG keeps its prolongators
across re-assemblies (``PCGAMGSetReuseInterpolation``: the aggregates of one design
serve the next, only the Galerkin products are redone) unless
``-parmbs_schur_pc_gamg_reuse_interpolation false`` is given.

Exactness is not the Krylov solve's job: the Schur operator refines against the exact
matrix and stops on its own residual test (continuum_schur.solve), so the Krylov
tolerance only sets how many refinement sweeps a solve takes.
"""
import ctypes

import numpy as np

from .._petsc import PETSc


def orthonormal(Z, comm):
    """Columns of the row-distributed Z (this rank's rows) orthonormalized over all ranks
    (Cholesky QR, twice for round-off: Yamamoto et al. 2015); MatNullSpace wants them so."""
    mpi = comm.tompi4py() if comm.getSize() > 1 else None
    for _ in range(2):
        Gm = Z.T @ Z
        if mpi is not None:
            from mpi4py import MPI
            Gl, Gm = Gm.copy(), np.empty_like(Gm)
            mpi.Allreduce(Gl, Gm, op=MPI.SUM)
        R = np.linalg.cholesky(Gm).T
        Z = np.linalg.solve(R.T, Z.T).T
    return Z


def attach_rigid_modes(F, Z_local, comm):
    """Set the rigid modes (this rank's rows of continuum_structured.rigid_modes) as F's
    near-null space."""
    Z = orthonormal(np.asarray(Z_local, float), comm)
    vecs = []
    for j in range(Z.shape[1]):
        v = F.createVecRight()
        v.setArray(np.ascontiguousarray(Z[:, j]))
        vecs.append(v)
    ns = PETSc.NullSpace().create(constant=False, vectors=vecs, comm=comm)
    F.setNearNullSpace(ns)
    ns.destroy()
    for v in vecs:
        v.destroy()


def _user_set(ksp, name):
    return PETSc.Options().hasName((ksp.getOptionsPrefix() or "") + name)


def configure(ksp):
    """GAMG: keep the prolongators across re-assemblies of F (module doc), unless the
    user said otherwise."""
    pc = ksp.getPC()
    if pc.getType() == "gamg" and not _user_set(ksp, "pc_gamg_reuse_interpolation"):
        from ..petsc_options import _libpetsc
        lib = _libpetsc()
        lib.PCGAMGSetReuseInterpolation.argtypes = [ctypes.c_void_p, ctypes.c_int]
        if lib.PCGAMGSetReuseInterpolation(ctypes.c_void_p(pc.handle), 1) != 0:
            raise RuntimeError("PCGAMGSetReuseInterpolation failed")
