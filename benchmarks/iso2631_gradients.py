"""ISO 2631-1 ride objectives on a vehicle: values, adjoint vs direct, central FD per design
variable (parmbs/sensitivity/ride.py; figures in benchmarks/README.md "ISO 2631-1 ride
measures").

    python benchmarks/iso2631_gradients.py configs/iltis-four-post-white.toml --t-end 0.2 \\
        --point chassis.com --step 1e-4 --step k1=1e-9 --step k2=1e-9 --set optimize.objective=aw

Objectives: a_w (W_k, z), VDV (W_k, z) and a_w (W_d, x) of ``--point``; ``--step``
sets the relative central-difference step of every variable (``NAME=STEP``: of one;
variables with a narrow box need a small one: the Iltis strut stiffness k).  Prints one
line per objective and per variable; wall times of forward, adjoint and direct.
"""
import argparse
import time

import parmbs  # noqa: F401  (before numpy: parmbs/_determinism.py)
import numpy as np

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config")
    ap.add_argument("--t-end", type=float, required=True)
    ap.add_argument("--point", default="chassis.com")
    ap.add_argument("--step", action="append", default=[], help="STEP or NAME=STEP (relative)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    a = ap.parse_args()
    P = a.point
    ride = (f'objectives=[{{name = "aw", integrand = "iso2631_rms", point = "{P}"}}, '
            f'{{name = "vdv", integrand = "iso2631_vdv", point = "{P}"}}, '
            f'{{name = "awx", integrand = "iso2631_rms", point = "{P}", direction = "x", weighting = "Wd"}}]')
    pr = Problem(load_config(a.config, [f"simulation.t_end={a.t_end!r}", ride, *a.set]))
    t = time.perf_counter()
    traj = pr.forward()
    print(f"forward {time.perf_counter() - t:.1f} s, {traj.steps} steps; values {pr.objective_values()}")
    t = time.perf_counter()
    adj = pr.adjoint()
    print(f"adjoint {time.perf_counter() - t:.1f} s")
    t = time.perf_counter()
    dirc = pr.direct()
    print(f"direct {time.perf_counter() - t:.1f} s")
    for k in adj:
        print(f"{k}: gradient {np.asarray(adj[k])}  |adj - dir|/|adj| "
              f"{np.max(np.abs(adj[k] - dirc[k])) / np.max(np.abs(adj[k])):.1e}")
    names = list(pr.design.names)
    steps = {n: 1e-6 for n in names}
    for s in a.step:                  # in order: STEP sets all, NAME=STEP one
        if "=" in s:
            n, v = s.split("=", 1)
            steps[n] = float(v)
        else:
            steps = {n: float(s) for n in names}
    p0 = traj.p.copy()
    rho0 = pr.design.values(p0)
    for j, n in enumerate(names):
        h = steps[n] * abs(rho0[j])
        vals = []
        for sgn in (1, -1):
            r = rho0.copy()
            r[j] += sgn * h
            with pr.frozen_steps():
                vals.append(pr.objective_values(pr.forward(pr.design.apply(p0, r))))
        for k in adj:
            fd = (vals[0][k] - vals[1][k]) / (2 * h)
            print(f"{n} (step {steps[n]:.0e}) {k}: adjoint {adj[k][j]: .10e}  FD {fd: .10e}  "
                  f"rel {abs(fd - adj[k][j]) / abs(adj[k][j]):.1e}")


if __name__ == "__main__":
    main()
