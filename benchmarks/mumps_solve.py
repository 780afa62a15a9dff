"""The MUMPS path's F-solves alone, per rank: the crank's elastic block F at 10⁵
(500 × 200), factored as a run factors it, then K solves F x = b and K transposed solves
with random right-hand sides, each phase timed with every rank's own CPU clock and
wall clock; also the border basis Z = F⁻¹[e_i, Φ_k] column by column (as
``ContinuumSchurOperator._solved``) against one MatMatSolve of all columns.

    mpirun -n 2 .venv/bin/python benchmarks/mumps_solve.py [--nx 500 --ny 200] [--solves 10]
    PETSC_OPTIONS="-parmbs_schur_mat_mumps_icntl_13 1" mpirun -n 2 ...   # an option to compare

Per phase it prints, per rank, CPU s and wall s per solve: the MUMPS solve (KSPSolve:
PETSc's scatter of b to MUMPS's distributed right-hand side, MUMPS JOB = 3, the scatter
of MUMPS's distributed solution back to F's layout), and the gather of the solution to
every rank (``Scatter.toAll``, what ``_fsolve`` returns).  On a loaded machine CPU time
includes a rank's polling while it waits for the other (MPI busy-waits), so it is an
upper bound of the work; the difference between options is what it compares.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import parmbs  # noqa: F401,E402
import numpy as np  # noqa: E402

from topopt_crank import crank_config  # noqa: E402
import copy  # noqa: E402
from parmbs.config.loader import validate  # noqa: E402
from parmbs.sensitivity.problem import Problem  # noqa: E402
from parmbs._petsc import PETSc  # noqa: E402


def timed(comm, fn, k):
    """(CPU s, wall s) per call of fn over k calls, this rank's, after a barrier."""
    comm.barrier()
    c0, w0 = time.process_time(), time.perf_counter()
    for i in range(k):
        fn(i)
    return (time.process_time() - c0) / k, (time.perf_counter() - w0) / k


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nx", type=int)
    ap.add_argument("--ny", type=int)
    ap.add_argument("--solves", type=int, default=10)
    a = ap.parse_args()
    data = crank_config(a.nx, a.ny)
    data["simulation"]["t_end"] = 1 * data["simulation"]["dt"]
    cfg = validate(copy.deepcopy(data), "configs/topopt-crank.toml")
    pr = Problem(cfg)
    comm = PETSc.COMM_WORLD
    mpi = comm.tompi4py()
    rank, size = comm.getRank(), comm.getSize()
    c0, w0 = time.process_time(), time.perf_counter()
    pr.forward()                          # one step: F factored at the step's coefficients
    t_fwd = (time.process_time() - c0, time.perf_counter() - w0)
    sch = pr.stepper.schur
    ksp, x, b = sch.ksp, sch.x, sch.b
    Ff = ksp.getPC().getFactorMatrix()
    info = {"INFOG(7) ordering used": Ff.getMumpsInfog(7), "INFOG(20) est. factor entries": Ff.getMumpsInfog(20),
            "INFOG(29) factor entries": Ff.getMumpsInfog(29),
            "RINFOG(3) factor flops": Ff.getMumpsRinfog(3), "ICNTL(13)": Ff.getMumpsIcntl(13),
            "ICNTL(20)": Ff.getMumpsIcntl(20), "ICNTL(21)": Ff.getMumpsIcntl(21),
            "ICNTL(28)": Ff.getMumpsIcntl(28), "INFOG(23) ICNTL(6) used": Ff.getMumpsInfog(23), "INFOG(32) analysis type": Ff.getMumpsInfog(32)}
    loc = {"INFO(23) pivots": Ff.getMumpsInfo(23), "INFO(27) factor entries": Ff.getMumpsInfo(27),
           "RINFO(3) elimination flops": f"{Ff.getMumpsRinfo(3):.3g}"}
    rng = np.random.default_rng(rank)
    R = rng.standard_normal((x.getLocalSize(), a.solves))
    phases = {}

    def solve(i, transpose=False):
        b.setArray(R[:, i])
        (ksp.solveTranspose if transpose else ksp.solve)(b, x)
    solve(0)                              # (first solve: MUMPS's solve-phase set-up)
    solve(0, True)
    phases["solve"] = timed(comm, solve, a.solves)
    phases["solve transposed"] = timed(comm, lambda i: solve(i, True), a.solves)
    if size > 1:
        phases["gather to all (toAll)"] = timed(comm, lambda i: sch._all.scatter(
            x, sch._x_all, addv=PETSc.InsertMode.INSERT, mode=PETSc.ScatterMode.FORWARD), a.solves)
    # the border basis: column by column (the code) and one MatMatSolve
    st = sch.st
    E = np.zeros((st.nf, len(sch._units[False]) + 4 * len(sch._frame_b)))
    E[sch._units[False], np.arange(len(sch._units[False]))] = 1.0
    for k in range(len(sch._frame_b)):
        E[:, len(sch._units[False]) + 4 * k:len(sch._units[False]) + 4 * k + 4] = st.basis(k)
    ncol = E.shape[1]
    cols = [np.ascontiguousarray(E[:, j]) for j in range(ncol)]
    phases[f"Z column by column ({ncol} solves), per column"] = timed(
        comm, lambda i: [sch._fsolve(c, False) for c in cols], 1)
    phases[f"Z column by column ({ncol} solves), per column"] = tuple(
        v / ncol for v in phases[f"Z column by column ({ncol} solves), per column"])
    nl = x.getLocalSize()
    Bm = PETSc.Mat().createDense(((nl, st.nf), (ncol, ncol)), array=np.asfortranarray(E[sch.fr0:sch.fr0 + nl]),
                                 comm=comm)
    Xm = PETSc.Mat().createDense(((nl, st.nf), (ncol, ncol)), comm=comm)
    Xm.setUp()
    Ff.matSolve(Bm, Xm)                   # warm
    phases[f"Z by one MatMatSolve ({ncol} columns), per column"] = tuple(
        v / ncol for v in timed(comm, lambda i: Ff.matSolve(Bm, Xm), 1))
    Zc = np.stack([sch._fsolve(c, False) for c in cols], 1)
    Zm = Xm.getDenseArray()
    dz = np.max(np.abs(Zm - Zc[sch.fr0:sch.fr0 + nl])) / np.max(np.abs(Zc))
    allp = mpi.gather(phases)
    allloc = mpi.gather(loc)
    allf = mpi.gather(t_fwd)
    if rank == 0:
        print(f"ranks {size}, nf = {st.nf}, load average {os.getloadavg()[0]:.1f}; "
              f"PETSC_OPTIONS={os.environ.get('PETSC_OPTIONS', '')!r}")
        print("  " + ", ".join(f"{k} {v:g}" for k, v in info.items()))
        for r, lo in enumerate(allloc):
            print(f"  rank {r}: " + ", ".join(f"{k} {v}" for k, v in lo.items())
                  + f"; set-up + 1 forward step (factorization, border basis) CPU {allf[r][0]:.2f} s, wall {allf[r][1]:.2f} s")
        print(f"  MatMatSolve = column-by-column solves to {dz:.1e} (max relative)")
        for name in phases:
            print(f"  {name}: " + "; ".join(f"rank {r} CPU {p[name][0] * 1e3:.1f} ms, wall {p[name][1] * 1e3:.1f} ms"
                                            for r, p in enumerate(allp)))


if __name__ == "__main__":
    main()
