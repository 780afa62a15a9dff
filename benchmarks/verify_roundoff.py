"""Why adjoint and direct differ on the heavy top (issue 17): round-off, amplified.

For each horizon and integrator: |adjoint − direct| / |g| per design variable, and the
round-off deviation σ measured by parmbs verify (sensitivity/verify.py: one seeded
rounding per step and the LU backward error per solve, 3 trials), as σ/|g|.  If the gap
is round-off, it grows with the horizon like σ and stays within a few σ; a wrong
derivative block would instead give a gap of fixed relative size from the first steps
(and complex step of single steps would disagree with the tangent step: it agrees to
1e-15 on every step checked).

    python benchmarks/verify_roundoff.py [--config configs/heavy-top.toml] [--t-end 0.05 0.1 0.25]
"""
import argparse

import parmbs  # noqa: F401  (before numpy: parmbs/_determinism.py pins numpy's CPU features for same-bytes results)
import numpy as np

from parmbs.config import load_config
from parmbs.sensitivity import verify as V
from parmbs.sensitivity.problem import Problem


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="configs/heavy-top.toml")
    ap.add_argument("--t-end", type=float, nargs="+", default=[0.05, 0.1, 0.25])
    ap.add_argument("--integrators", nargs="+", default=["trapezoidal", "genalpha"])
    a = ap.parse_args()
    for integ in a.integrators:
        for te in a.t_end:
            pr = Problem(load_config(a.config, [f"simulation.t_end={te}", f"simulation.integrator={integ}"]))
            pr.forward()
            adj, dirg = pr.adjoint(), pr.direct()
            sig = V.roundoff_sigma(pr, adj, dirg)
            for o in adj:
                g = np.abs(np.asarray(dirg[o]))
                gap = np.abs(np.asarray(adj[o]) - np.asarray(dirg[o])) / g
                print(f"{integ:<12} t_end {te:<6g} {o}: " + "  ".join(
                    f"{n} gap {gap[j]:.1e} σ {sig[o][j] / g[j]:.1e}" for j, n in enumerate(pr.design.names)))


if __name__ == "__main__":
    main()
