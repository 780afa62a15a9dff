"""Iltis over the speed bump (issue 10 benchmark): the ratios, from one run.

    python benchmarks/vehicle.py                      # configs/iltis.toml as shipped
    python benchmarks/vehicle.py --set simulation.t_end=1.5 --set simulation.dt=2e-3
    python benchmarks/vehicle.py --no-fd              # skip the 12 forward runs of FD

Measures CPU seconds of this process (``time.process_time``: other jobs sharing the
cores do not inflate them; the run is serial) of

* one forward run            → forward CPU ÷ simulated time  (goal < 1: faster than real time)
* one adjoint gradient       → adjoint ÷ forward             (6 design variables)
* one direct gradient        → direct ÷ forward
* central finite differences → FD ÷ adjoint                  (2 × 6 forward runs, steps FD_STEP)

and prints the gradients' agreement (max relative |adjoint − direct|, |adjoint − FD|).
Model: seed 004 §5.2 (docs/iltis.md), design variables k_L1, k_L2, c1, c2, k1, k2.
"""
import argparse
import pathlib

import parmbs  # noqa: F401  (before numpy: parmbs/_determinism.py pins numpy's CPU features for same-bytes results)
import numpy as np

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem
from vehicle_ratios import measure

ROOT = pathlib.Path(__file__).resolve().parent.parent


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config", nargs="?", default=str(ROOT / "configs" / "iltis.toml"))
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--no-fd", action="store_true")
    a = ap.parse_args()
    pr = Problem(load_config(a.config, a.set))
    measure(pr, a.config, None if a.no_fd else (lambda: central_differences(pr)),
            f"central, 2 x {len(pr.design.names)} forward runs, relative steps {FD_STEP}")


# Relative central-difference steps.  Over the bump the truncation error of the central
# difference dominates (it falls as h²: k1 at 1e-6 → 4.7e-3, at 1e-8 → 4.5e-7 relative on
# a 2 s run; k2 at 1e-8 → 5.2e-5, at 1e-9 → 6.7e-7): ψ is very strongly curved in the
# strut stiffnesses (eq. 5.5a: k s with s ≈ 0.44 m) and markedly in k_L and c, so the
# steps are small; the Newton solutions converge far below their tolerance, so rounding
# noise stays below these differences.
FD_STEP = {"k_L1": 1e-6, "k_L2": 1e-6, "c1": 1e-6, "c2": 1e-6, "k1": 1e-9, "k2": 1e-9}


def central_differences(pr):
    """Central differences on the step sequence of the last run (frozen: the shipped file
    takes error-controlled steps, and adjoint/direct differentiate its accepted steps)."""
    p0 = pr.sys.p.copy()
    rho = pr.design.values(p0)
    out = {ob.name: np.zeros(len(rho)) for ob in pr.objectives}
    with pr.frozen_steps():
        for j, name in enumerate(pr.design.names):
            h = FD_STEP.get(name, 1e-6) * max(abs(rho[j]), 1.0)
            vals = []
            for s in (+1, -1):
                r = rho.copy()
                r[j] += s * h
                p = pr.design.apply(p0, r)
                vals.append(pr.objective_values(pr.forward(p), p))
            for k in out:
                out[k][j] = (vals[0][k] - vals[1][k]) / (2 * h)
        pr.forward(p0)
    return out


if __name__ == "__main__":
    main()
