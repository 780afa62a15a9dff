"""Cost of the deterministic distributed TS solve (integrators/ts_determinism.py, issue 20).

A distributed TS run (the TS, its Vecs and MPIAIJ matrices on the ranks) factors its
Newton matrix whole on every rank (PCREDUNDANT, PETSc's LU in natural order; the initial
assembly's with sequential MUMPS) when the model is below
parallel.DISTRIBUTE_MIN_UNKNOWNS, instead of parallel MUMPS.  This runs forward +
adjoint of the penalty ODE on ts-cn (the scheme with a Newton solve per step) both ways,
on the five-bar and on the closed chain of 60 bars (benchmarks/formulations.py), plus
the serial run for scale: rank 0's CPU seconds (time.process_time) and wall seconds,
and the largest relative gap of the distributed gradients to the serial one.

    mpirun -n 2 python benchmarks/ts_mpi_solves.py [--t-end 0.1] [--dt 1e-3]
"""
import argparse
import pathlib
import sys
import tempfile
import time

import parmbs  # noqa: F401  (before numpy: parmbs/_determinism.py)
import numpy as np

from parmbs._petsc import PETSc
from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from formulations import closed_chain_toml  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]


def run(path, sets, comm, mumps):
    opts = PETSc.Options()
    if mumps:
        opts.setValue("parmbs_ts_pc_type", "lu")          # the user's: parallel MUMPS
    try:
        pr = Problem(load_config(str(path), sets), comm=comm)
        PETSc.COMM_WORLD.tompi4py().Barrier()
        c0, w0 = time.process_time(), time.perf_counter()
        tr = pr.forward()
        g = pr.adjoint()
        c1, w1 = time.process_time(), time.perf_counter()
        pc = PETSc.Options().getString("parmbs_ts_pc_type", "")
        return c1 - c0, w1 - w0, tr.steps, g, pc, pr.stepper.solves.bitwise
    finally:
        if mumps:
            opts.delValue("parmbs_ts_pc_type")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--t-end", type=float, default=0.1)
    ap.add_argument("--dt", type=float, default=1e-3)
    ap.add_argument("--chain-t-end", type=float, default=0.02)
    args = ap.parse_args()
    rank = PETSc.COMM_WORLD.getRank()
    tmp = pathlib.Path(tempfile.mkdtemp())
    chain = tmp / f"chain60_{rank}.toml"
    chain.write_text(closed_chain_toml(60))
    models = [("five-bar", ROOT / "configs" / "fivebar.toml", args.t_end),
              ("chain 60", chain, args.chain_t_end)]
    if rank == 0:
        print(f"{PETSc.COMM_WORLD.getSize()} ranks, penalty ts-cn, dt {args.dt}: rank-0 CPU s / wall s, "
              "forward + adjoint; gap: max relative |Δ∇ψ| to serial", flush=True)
    for name, path, t_end in models:
        sets = [f"simulation.t_end={t_end}", f"simulation.dt={args.dt}", "simulation.progress=false",
                'simulation.formulation="penalty"', 'simulation.integrator="ts-cn"']
        ref = None
        for label, comm, mumps in (("serial (COMM_SELF)", PETSc.COMM_SELF, False),
                                   ("distributed, PCREDUNDANT (default)", PETSc.COMM_WORLD, False),
                                   ("distributed, parallel MUMPS", PETSc.COMM_WORLD, True)):
            cpu, wall, steps, g, pc, bitwise = run(path, sets, comm, mumps)
            ref = g if ref is None else ref
            gap = max(float(np.max(np.abs(g[k] - ref[k])) / np.max(np.abs(ref[k]))) for k in ref)
            if rank == 0:
                print(f"{name:<9} {label:<36} steps {steps:>4}  CPU {cpu:7.2f}  wall {wall:7.2f}  "
                      f"gap {gap:.1e}  pc {pc or '-'}  bitwise re-runs {bitwise}", flush=True)


if __name__ == "__main__":
    main()
