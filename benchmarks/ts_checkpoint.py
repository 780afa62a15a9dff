"""Checkpoints of PETSc TS runs (issue 20 item 5), measured in one run: for each engine
and schedule, the five-bar's forward + adjoint through an HDF5 checkpoint file beside
the in-memory TS run — wall time, forward steps recomputed by the schedule's provider,
and whether ψ and ∇ψ are bit-identical.  For the TSAdjoint schemes the count includes
the TS re-runs TSAdjoint needs for the stages (integrators/ts_checkpoint.py: N for all
and every:K, revolve's recomputations + N); the own steppers' count of the schedule
(``sched.recomputations``) beside it.

Usage: python benchmarks/ts_checkpoint.py [--set key=value ...] [--schedules all,every:10,...]
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
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", action="append", default=["simulation.t_end=0.5", "simulation.dt=1e-3"])
    ap.add_argument("--schedules", default="all,every:10,revolve:20")
    a = ap.parse_args()
    cfg = str(ROOT / "configs" / "fivebar.toml")
    print(f"five-bar, {' '.join(a.set)}")
    print(f"{'engine':<16} {'schedule':<11} {'wall s':>7} {'recomputed':>10} {'schedule':>9}  same ψ, ∇ψ")
    for name, sets in ENGINES.items():
        pr = Problem(load_config(cfg, a.set + sets))
        t = time.perf_counter()
        pr.forward()
        v0, g0 = pr.objective_values(), pr.adjoint()
        N = pr.traj.steps
        print(f"{name:<16} {'in memory':<11} {time.perf_counter() - t:7.2f} {0:>10} {0:>9}")
        for sch in a.schedules.split(","):
            with tempfile.TemporaryDirectory() as d:
                pr = Problem(load_config(cfg, a.set + sets + [f"checkpoint.schedule={sch}"]))
                ck = pr.use_checkpoint(pathlib.Path(d) / "ck.h5")
                t = time.perf_counter()
                tr = pr.forward()
                v, g = pr.objective_values(tr), pr.adjoint()
                wall = time.perf_counter() - t
                ck.store.close()
            same = all(v[k] == v0[k] and np.array_equal(g[k], g0[k]) for k in g0)
            print(f"{name:<16} {sch:<11} {wall:7.2f} {ck.recomputed:>10} {ck.sched.recomputations(N):>9}  {same}")


if __name__ == "__main__":
    main()
