"""The reduced topology crank's MMA record: its history, and the dt-convergence of ψ and
∇ψ at a design of the record (issue 21 item 4: "stable and dt-converged over its full
horizon" at the designs the optimization visits, not only at the uniform start).

    .venv/bin/python benchmarks/modal_topopt.py RECORD.h5 [--iterate K] [--modes 10] [--nx 100 --ny 40]

RECORD.h5: ``parmbs optimize configs/topopt-crank.toml --set
'continua.crank.reduction={modes=10, attachment=true}' ...`` (complete or ``.partial``).
At iterate K (default: the last evaluated) the physical densities x̃ = F ρ_K (the
config's density filter) are set on the reduced model, and ψ = ∫U dt and its adjoint
gradient over the 10⁵ densities are computed at the config's dt and at dt/2 over the
full horizon (benchmarks/convergence.py's criterion: both relative changes ≤ 1e-3).
``--nx/--ny``: a record of the coarsened crank (``--set continua.crank.nx=…`` with the pin
at node [0.9 nx, ny/2], as benchmarks/topopt_run.py sets it).
"""
import argparse
import copy
import os
import sys
import time
import tomllib

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import parmbs  # noqa: E402,F401  (before numpy: its SIMD pinning)
import h5py  # noqa: E402
import numpy as np  # noqa: E402
from parmbs.config.loader import validate  # noqa: E402
from parmbs.flexible.density_filter import DensityFilter  # noqa: E402
from parmbs.sensitivity.problem import Problem  # noqa: E402

CONFIG = os.path.join(os.path.dirname(__file__), "..", "configs", "topopt-crank.toml")
TOL = 1e-3


def record(path):
    """(x rows, history rows) of an optimize record, complete or in progress."""
    os.environ.setdefault("HDF5_USE_FILE_LOCKING", "FALSE")       # a run may hold the .partial open
    with h5py.File(path, "r") as f:
        n = int(f["optimize"].attrs["evaluations"])
        return f["optimize/x"][:n], f["optimize/history"][:n]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("record")
    ap.add_argument("--iterate", type=int, default=-1)
    ap.add_argument("--modes", type=int, default=10)
    ap.add_argument("--nx", type=int, help="mesh of the record (default: the config's 500 x 200)")
    ap.add_argument("--ny", type=int)
    a = ap.parse_args()
    x, hist = record(a.record)
    k = a.iterate if a.iterate >= 0 else len(x) - 1
    print(f"{a.record}: {len(x)} evaluations; iterate {k}: ψ = {hist[k, 1]:.6e}, violation {hist[k, 2]:.2e}, "
          f"step {hist[k, 3]:.2e}, mean ρ = {x[k].mean():.4f}", flush=True)
    with open(CONFIG, "rb") as f:
        data = tomllib.load(f)
    data["continua"][0]["reduction"] = {"modes": a.modes, "attachment": True}
    if a.nx:
        data["continua"][0].update(nx=a.nx, ny=a.ny, points={"pin": [9 * a.nx // 10, a.ny // 2]})
    out = {}
    for dt in (data["simulation"]["dt"], data["simulation"]["dt"] / 2):
        d = copy.deepcopy(data)
        d["simulation"]["dt"] = dt
        cfg = validate(d, CONFIG)
        t = time.perf_counter()
        pr = Problem(cfg)
        filt = DensityFilter(cfg, pr.design, cfg.optimize.filter_radius)
        p = pr.design.apply(pr.sys.p, filt.apply(x[k]))
        pr.forward(p)
        psi = pr.objective_values()["compliance"]
        g = pr.adjoint()["compliance"]
        out[dt] = (psi, g)
        print(f"dt = {dt:.6g} s ({pr.nsteps} steps): ψ = {psi:.10e}, ‖∇ψ‖ = {np.linalg.norm(g):.6e} "
              f"({time.perf_counter() - t:.0f} s wall)", flush=True)
    (p1, g1), (p2, g2) = out.values()
    e_psi, e_g = abs(p1 - p2) / abs(p2), np.linalg.norm(g1 - g2) / np.linalg.norm(g2)
    print(f"dt → dt/2: ψ {e_psi:.1e}, ∇ψ {e_g:.1e}: {'converged' if max(e_psi, e_g) <= TOL else 'NOT converged'} "
          f"(criterion {TOL:g})")


if __name__ == "__main__":
    main()
