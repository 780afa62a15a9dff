"""Checkpoints of PETSc TS runs (issue 20 item 5), measured in one run: for each engine
and schedule, the five-bar's forward + adjoint through an HDF5 checkpoint file beside
the in-memory TS run — wall time, forward steps recomputed by the schedule's provider,
and whether ψ and ∇ψ are bit-identical.  For the TSAdjoint schemes the count includes
the TS re-runs TSAdjoint needs for the stages (checkpoint/ts_run.py: N for all
and every:K, revolve's recomputations + N); the own steppers' count of the schedule
(``sched.recomputations``) beside it.  Engines whose sweep is our own adjoint step
(ts-alpha2, ts-arkimex, ts-rk 5dp) recompute the schedule's count only.
CPU seconds of the process beside the wall time (the machine is shared); "rejected": the
adaptive forward run's rejected attempts (TSAdapt).

Usage: python benchmarks/ts_checkpoint.py [--set key=value ...] [--schedules all,every:10,...]
       [--only NAME,NAME]
"""
import argparse
import pathlib
import tempfile
import time

import parmbs  # noqa: F401  (before numpy: parmbs/_determinism.py)
import numpy as np

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem

ROOT = pathlib.Path(__file__).resolve().parents[1]
ENGINES = {
    "ts-alpha2": ['simulation.integrator="ts-alpha2"', "simulation.rho_inf=0.9"],
    "index1 ts-theta": ['simulation.formulation="index1"', 'simulation.integrator="ts-theta"',
                        "simulation.theta=0.7"],
    "penalty ts-cn": ['simulation.formulation="penalty"', 'simulation.integrator="ts-cn"'],
    "maggi ts-theta": ['simulation.formulation="maggi"', 'simulation.integrator="ts-theta"', "simulation.theta=0.7"],
    "matrix-r ts-cn": ['simulation.formulation="matrix-r"', 'simulation.matrix_r.coordinates="independent"',
                       'simulation.integrator="ts-cn"'],
    "index1 ts-arkimex": ['simulation.formulation="index1"', 'simulation.integrator="ts-arkimex"'],
    "index1 ts-theta adapt": ['simulation.formulation="index1"', 'simulation.integrator="ts-theta"',
                              "simulation.theta=0.7", "simulation.adapt={rtol=1e-5, atol=1e-7}"],
    # adaptive RK (5dp) and ARKIMEX: re-runs repeat the rejected attempts (ts.py replays_attempts)
    "index1 ts-rk adapt": ['simulation.formulation="index1"', 'simulation.integrator="ts-rk"',
                           "simulation.adapt={rtol=1e-8, atol=1e-10}"],
    "penalty ts-arkimex adapt": ['simulation.formulation="penalty"', 'simulation.integrator="ts-arkimex"',
                                 "simulation.penalty.alpha=1e5", "simulation.adapt={rtol=1e-4, atol=1e-6}"],
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", action="append", default=["simulation.t_end=0.5", "simulation.dt=1e-3"])
    ap.add_argument("--schedules", default="all,every:10,revolve:20")
    ap.add_argument("--only", default=",".join(ENGINES), help="engines, comma-separated")
    a = ap.parse_args()
    cfg = str(ROOT / "configs" / "fivebar.toml")
    print(f"five-bar, {' '.join(a.set)}")
    print(f"{'engine':<22} {'schedule':<11} {'wall s':>7} {'cpu s':>7} {'steps':>5} {'recomputed':>10} "
          f"{'schedule':>9}  same ψ, ∇ψ  rejected")
    for name in a.only.split(","):
        sets = ENGINES[name]
        pr = Problem(load_config(cfg, a.set + sets))
        t, c = time.perf_counter(), time.process_time()
        pr.forward()
        v0, g0 = pr.objective_values(), pr.adjoint()
        N = pr.traj.steps
        print(f"{name:<22} {'in memory':<11} {time.perf_counter() - t:7.2f} {time.process_time() - c:7.2f} {N:>5} "
              f"{0:>10} {0:>9}", flush=True)
        for sch in a.schedules.split(","):
            with tempfile.TemporaryDirectory() as d:
                pr = Problem(load_config(cfg, a.set + sets + [f"checkpoint.schedule={sch}"]))
                ck = pr.use_checkpoint(pathlib.Path(d) / "ck.h5")
                t, c = time.perf_counter(), time.process_time()
                tr = pr.forward()
                v, g = pr.objective_values(tr), pr.adjoint()
                wall, cpu = time.perf_counter() - t, time.process_time() - c
                ck.store.close()
            same = all(v[k] == v0[k] and np.array_equal(g[k], g0[k]) for k in g0)
            print(f"{name:<22} {sch:<11} {wall:7.2f} {cpu:7.2f} {tr.steps:>5} {ck.recomputed:>10} "
                  f"{ck.sched.recomputations(N):>9}  {same!s:<10} {getattr(tr, 'rejected', 0)}", flush=True)


if __name__ == "__main__":
    main()
