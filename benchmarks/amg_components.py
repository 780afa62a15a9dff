"""Per-rank cost components of the topology crank's full-order step on the continuum
Schur solver (MUMPS or Krylov + AMG for the elastic block), and a cost model from them.

    [PETSC_OPTIONS="-parmbs_schur_ksp_type gmres -parmbs_schur_pc_type gamg"] \\
        mpirun -n P .venv/bin/python benchmarks/amg_components.py --steps 3 [--nx 500 --ny 200]

Runs the forward and adjoint sweeps of K steps, timing with each rank's CPU clock
(``time.process_time``: the shared machine's load makes wall time meaningless) the
parts of a step, per step and as the maximum over ranks:

* ``F-solve``: the KSP solve of the elastic block F (distributed: MUMPS's or the AMG's
  work splits over the ranks), without the gather of its solution to every rank;
* ``gather``: the gathers of nf-vectors to every rank (the F solutions' VecScatter
  toAll, RowSplit's Allgatherv of the row-split products) — communication;
* ``J_ff matvec``: the refinement's product with the exact J_ff, a scipy matrix held
  whole on every rank — replicated work;
* ``rest``: everything else in the step (state updates, border arithmetic, residual
  rows, objective partials, the per-element ∂R/∂x): measured as step − the above,
  a mix of replicated O(nf) numpy work and row/element-split work.

Microbenchmarks on the same communicator give α (latency of an 8-byte allreduce) and
β (time per byte of a gather to all ranks); the cost model in benchmarks/README.md
("Full-order crank on ranks: cost model") combines them with the step components.
"""
import argparse
import copy
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import parmbs  # noqa: F401,E402  (before numpy: parmbs/_determinism.py pins numpy's CPU features for same-bytes results)
import numpy as np

from parmbs.config.loader import validate          # noqa: E402
from parmbs.sensitivity.problem import Problem      # noqa: E402
from topopt_crank import CONFIG, crank_config       # noqa: E402
clock = time.process_time


class Timers:
    def __init__(self):
        self.t = {}

    def wrap(self, obj, name, key):
        inner = getattr(obj, name)

        def timed(*a, **k):
            s = clock()
            try:
                return inner(*a, **k)
            finally:
                self.t[key] = self.t.get(key, 0.0) + clock() - s
        setattr(obj, name, timed)

    def snap(self):
        return dict(self.t)


def micro(comm, nf, reps=20):
    """(α s, β s/byte, t_gather s) on this communicator: allreduce of one double, gather to
    all of an nf-vector (the F solution's scatter)."""
    from parmbs._petsc import PETSc
    mpi = comm.tompi4py()
    from mpi4py import MPI
    x = np.ones(1)
    y = np.empty(1)
    mpi.Barrier()
    s = clock()
    for _ in range(200):
        mpi.Allreduce(x, y, op=MPI.SUM)
    alpha = (clock() - s) / 200
    v = PETSc.Vec().createMPI(nf, comm=comm)
    v.set(1.0)
    sc, w = PETSc.Scatter.toAll(v)
    mpi.Barrier()
    s = clock()
    for _ in range(reps):
        sc.scatter(v, w, addv=PETSc.InsertMode.INSERT, mode=PETSc.ScatterMode.FORWARD)
    tg = (clock() - s) / reps
    beta = tg / (8.0 * nf)
    for o in (v, w, sc):
        o.destroy()
    return alpha, beta, tg


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--nx", type=int)
    ap.add_argument("--ny", type=int)
    a = ap.parse_args()
    from parmbs._petsc import PETSc
    data = crank_config(a.nx, a.ny)
    c = data["continua"][0]
    if a.steps < 2:
        ap.error("--steps must be at least 2")
    data["simulation"]["t_end"] = a.steps * data["simulation"]["dt"]
    cfg = validate(copy.deepcopy(data), CONFIG)
    comm = PETSc.COMM_WORLD
    P, rank = comm.getSize(), comm.getRank()
    pr = Problem(cfg)
    sch = pr.stepper.schur
    st = sch.st
    T = Timers()
    ksp = sch.ksp

    # the F-solve without its gather: time the KSP call inside _fsolve by wrapping _fsolve
    # and subtracting the scatter, which is timed by re-running it (same sizes) below
    T.wrap(sch, "_fsolve", "fsolve_total")
    T.wrap(sch, "matvec", "J_ff matvec")
    T.wrap(st.rows, "gather", "rowsplit gather")
    marks = {}

    def on_step(k, t, x):
        if k == 1:               # after the first step (it builds F's factorization / hierarchy)
            marks["fwd0"] = (clock(), T.snap(), sch.nfsolve, sch.nkspit)

    mark = lambda: (clock(), T.snap(), sch.nfsolve, sch.nkspit)
    stp = pr.stepper
    inner_adj, inner_init = stp.adjoint_step, stp.init.adjoint
    nadj = [0]

    def adjoint_step(*args):             # steps K−1..1 are timed; the sweep's first (step K)
        out = inner_adj(*args)           # solves F⁻ᵀ of the border basis, once per design
        nadj[0] += 1
        if nadj[0] == 1:
            marks["adj0"] = mark()
        return out

    def init_adjoint(*args):
        marks["adj1"] = mark()
        return inner_init(*args)
    stp.adjoint_step, stp.init.adjoint = adjoint_step, init_adjoint

    s0 = clock()
    pr.forward(on_step=on_step)
    marks["fwd1"] = mark()
    pr.adjoint()
    alpha, beta, tg = micro(comm, st.nf) if P > 1 else (0.0, 0.0, 0.0)

    def part(m0, m1, nsteps):
        (c0, t0, n0, k0), (c1, t1, n1, k1) = marks[m0], marks[m1]
        d = {k: t1.get(k, 0.0) - t0.get(k, 0.0) for k in set(t0) | set(t1)}
        nsolve = n1 - n0
        gat = nsolve * tg
        out = {"step": (c1 - c0) / nsteps,
               "F-solve": (d.get("fsolve_total", 0.0) - gat) / nsteps,
               "gather": (gat + d.get("rowsplit gather", 0.0)) / nsteps,
               "J_ff matvec": d.get("J_ff matvec", 0.0) / nsteps,
               "F-solves": nsolve / nsteps, "Krylov its": (k1 - k0) / nsteps}
        out["rest"] = out["step"] - out["F-solve"] - out["gather"] - out["J_ff matvec"]
        return out

    # forward: steps 2..K; adjoint: steps K−1..1 of the sweep (its first step, K, which
    # solves F⁻ᵀ of the border basis once per design, and the initial-state adjoint are not in)
    fwd, adj = part("fwd0", "fwd1", a.steps - 1), part("adj0", "adj1", a.steps - 1)
    mpi = comm.tompi4py()
    from mpi4py import MPI
    keys = ["step", "F-solve", "gather", "J_ff matvec", "rest", "F-solves", "Krylov its"]
    mx = {}
    for name, d in (("forward", fwd), ("adjoint", adj)):
        vals = np.array([d[k] for k in keys])
        out = np.empty_like(vals)
        mpi.Allreduce(vals, out, op=MPI.MAX)
        mx[name] = dict(zip(keys, out))
    if rank == 0:
        pc = ksp.getPC().getType() if sch.iterative else "lu/mumps"
        print(f"ranks {P}, {c['nx']}x{c['ny']}, nf = {st.nf}, elastic block {ksp.getType()} + {pc}; "
              f"{a.steps} steps; CPU s per step, max over ranks; load {os.getloadavg()[0]:.1f}")
        print("| sweep | " + " | ".join(keys) + " |")
        for name in ("forward", "adjoint"):
            print(f"| {name} | " + " | ".join(f"{mx[name][k]:.3f}" if k not in ("F-solves", "Krylov its")
                                              else f"{mx[name][k]:.1f}" for k in keys) + " |")
        print(f"alpha (allreduce) {alpha * 1e6:.1f} us, gather of nf doubles {tg * 1e3:.2f} ms "
              f"(beta {beta * 1e9:.2f} ns/byte); total CPU {clock() - s0:.1f} s")


if __name__ == "__main__":
    main()
