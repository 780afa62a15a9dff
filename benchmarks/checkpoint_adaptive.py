"""Checkpoints of an adaptive run (issue 18, item 4), measured in one run: for each
schedule, the five-bar's adaptive run through an HDF5 checkpoint file — accepted
steps N, slots, forward steps recomputed by the adjoint sweep — beside the in-memory
run (objectives and gradient must be bit-identical) and, for ``revolve:C``, the
offline optimum t(N, C) + 1 − N that a run knowing N in advance would recompute
(the online placement, schedules.Revolve.online_slot, cannot know N); column "N
known": the schedule's recomputations for a fixed-step run of N steps.

Usage: python benchmarks/checkpoint_adaptive.py [--set key=value ...] [--schedules revolve:10,...]
"""
import argparse
import os
import pathlib
import tempfile

import parmbs  # noqa: F401  (before numpy: parmbs/_determinism.py)
import numpy as np

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEFAULT = ["simulation.t_end=1.0", "simulation.adapt.rtol=3e-4", "simulation.adapt.atol=3e-4"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", action="append", default=None, help="config override (default: %s)" % DEFAULT)
    ap.add_argument("--schedules", default="all,every:10,revolve:10,revolve:20,revolve:100")
    a = ap.parse_args()
    sets = a.set if a.set is not None else DEFAULT
    cfg = str(ROOT / "configs" / "fivebar.toml")
    pr = Problem(load_config(cfg, sets))
    tr = pr.forward()
    v0, g0 = pr.objective_values(), pr.adjoint()
    N = tr.grid.steps
    print(f"five-bar, {' '.join(sets)}: {N} accepted steps, {tr.rejected} rejected; "
          f"the file is allocated for t_end/dt = {Problem(load_config(cfg, sets)).nsteps} steps")
    print(f"{'schedule':<13} {'slots':>6} {'used':>5} {'recomputed':>10} {'N known':>12}  same ψ, ∇ψ")
    with tempfile.TemporaryDirectory() as d:
        for s in a.schedules.split(","):
            pr = Problem(load_config(cfg, sets + [f"checkpoint.schedule={s}"]))
            run = pr.use_checkpoint(os.path.join(d, s.replace(":", "_") + ".h5"))
            pr.forward()
            used = "" if run.store.slot_step is None else int((run.store.slot_step >= 0).sum())
            v, g = pr.objective_values(), pr.adjoint()
            run.store.close()
            same = all(v[k] == v0[k] for k in v0) and all(np.array_equal(g[k], g0[k]) for k in g0)
            opt = run.sched.recomputations(N)
            print(f"{s:<13} {run.store.S:>6} {used!s:>5} {run.recomputed:>10} {opt:>12}  {same}")


if __name__ == "__main__":
    main()
