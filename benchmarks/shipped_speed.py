"""Forward and gradient CPU of one config *as shipped* (issue 19's "spatial double
pendulum ≥ 5000 steps/s" is a goal on the shipped file, whatever scheme it ships).

One process, CPU time (time.process_time), min of --repeat:

* set-up: ``Problem(config)`` — System, stepper and, on the compiled path, the kernels'
  warm-up (numba compile on an empty ``NUMBA_CACHE_DIR``, cache load otherwise; the
  compiled note says which);
* first forward + adjoint (untimed beyond their first-use CPU, printed);
* forward: ``Problem.forward`` (guard, trajectory arrays included) in steps/s;
* adjoint: ``Problem.adjoint`` (every objective, one sweep); gradient = forward + adjoint.

Runs against any tree: ``PYTHONPATH=TREE python benchmarks/shipped_speed.py TREE/configs/X.toml``
(the "before" of a change is main's tree with main's file).
"""
import parmbs  # noqa: F401  (first: parmbs/_determinism.py pins threads and numpy's SIMD)

import argparse
import time

import numpy as np

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem


def cpu(fn):
    t0 = time.process_time()
    out = fn()
    return time.process_time() - t0, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override (repeatable)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    sets = ["simulation.progress=false", *args.set]
    t_setup, pr = cpu(lambda: Problem(load_config(args.config, sets)))
    sim = pr.config.simulation
    st = pr.stepper
    scheme = (f"{sim.integrator}{'+ggl' if sim.stabilization == 'ggl' else ''}"
              f"{'+' + sim.genalpha_form if sim.integrator == 'genalpha' else ''}")
    print(f"{args.config}: {scheme}, dt {sim.dt:g}, {pr.nsteps} steps, stepper {type(st).__name__}, "
          f"compiled {'yes' if getattr(st, 'compiled', None) is not None else 'no'}")
    t_f1, _ = cpu(pr.forward)
    t_a1, _ = cpu(pr.adjoint)
    print(f"set-up {t_setup:.3f} s CPU; first forward {t_f1:.3f} s, first adjoint {t_a1:.3f} s")
    tf, ta = np.inf, np.inf
    for _ in range(args.repeat):
        tf = min(tf, cpu(pr.forward)[0])
        g = cpu(pr.adjoint)
        ta = min(ta, g[0])
    print(f"forward {tf:.4f} s = {pr.nsteps / tf:.0f} steps/s ({1e6 * tf / pr.nsteps:.1f} µs/step); "
          f"adjoint {ta:.4f} s; gradient (forward + adjoint) {tf + ta:.4f} s; adjoint ÷ forward {ta / tf:.2f} "
          f"(min of {args.repeat})")
    for k, v in g[1].items():
        print(f"  {k}: psi {pr.objective_values(pr.traj)[k]:.12e}, |grad| {np.linalg.norm(v):.12e}")


if __name__ == "__main__":
    main()
