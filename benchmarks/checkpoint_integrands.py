"""The checkpointed forward run's per-step cost over the in-memory one (issue 19/22, integ18):
CPU per step of ``Problem.forward`` in memory and of its ``objective_values`` (the FD
columns of ``optimize.gradient = "fd"`` run so), and of the checkpointed forward
(``parmbs simulate -o``, ``use_checkpoint``) with the part spent in
``CheckpointedRun._integrands`` (every objective's integrand at every step), by
``time.process_time`` pairs; one warm-up forward first; ``--repeat`` rounds.  Checks that
the checkpointed ψ equals the in-memory ψ bit for bit.

Usage:  python benchmarks/checkpoint_integrands.py [--config configs/double-wishbone-opt.toml]
        [--t-end 0.3] [--repeat 2] [--set key=value ...]
"""
import argparse
import os
import tempfile
import time

import parmbs  # noqa: F401  (first: numpy's SIMD features, parmbs/_determinism.py)
import numpy as np

from parmbs.checkpoint import restart
from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="configs/double-wishbone-opt.toml")
    ap.add_argument("--t-end", type=float, default=0.3)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--set", action="append", default=[])
    a = ap.parse_args()
    cfg = load_config(a.config, [f"simulation.t_end={a.t_end}"] + a.set)
    acc = [0.0, 0]
    inner = restart.CheckpointedRun._integrands

    def timed(self, *args):
        t0 = time.process_time()
        try:
            return inner(self, *args)
        finally:
            acc[0] += time.process_time() - t0
            acc[1] += 1
    restart.CheckpointedRun._integrands = timed

    pr = Problem(cfg)
    pr.forward()                                   # warm-up (numba caches, first calls)
    N = pr.nsteps
    for _ in range(a.repeat):
        t0 = time.process_time()
        pr.forward()
        t1 = time.process_time()
        mem = pr.objective_values()
        t2 = time.process_time()
        print(f"in memory:    forward {1e3 * (t1 - t0) / N:.3f} ms/step, objective_values "
              f"{1e3 * (t2 - t1) / N:.3f} ms/step")
    with tempfile.TemporaryDirectory() as d:
        for r in range(a.repeat):
            ck = Problem(cfg)
            ck.use_checkpoint(os.path.join(d, f"ck{r}.h5"))
            acc[:] = [0.0, 0]
            t0 = time.process_time()
            vals = ck.forward().values
            t1 = time.process_time()
            print(f"checkpointed: forward {1e3 * (t1 - t0) / N:.3f} ms/step, of it _integrands "
                  f"{1e3 * acc[0] / max(acc[1], 1):.3f} ms/step")
            same = all(np.float64(vals[k]).tobytes() == np.float64(mem[k]).tobytes() for k in mem)
            print(f"  ψ bitwise the in-memory ψ: {same}")


if __name__ == "__main__":
    main()
