"""The five-bar from Python: load the TOML model, run it, take its gradients.

The same model as ``parmbs gradient configs/fivebar.toml`` (López Varela, Dopico,
Luaces 2025, doi:10.1016/j.compstruc.2024.107642; Zhu 2014), driven through the
library instead of the command line:

1. ``load_config`` reads and validates the TOML (``--set``-style overrides allowed);
2. ``Problem`` builds the model, its stepper, design variables and objectives;
3. ``forward(p)`` runs the simulation at parameters p and returns the trajectory
   (numpy arrays t, q, v, a, lam);
4. ``objective_values()`` and ``adjoint()`` / ``direct()`` evaluate ψ and dψ/dρ along
   that trajectory — exact derivatives of the discrete computation.

Run:  python examples/fivebar.py [--t-end 1.0]
"""
import argparse
import os

import parmbs  # noqa: F401  first, before numpy: it pins numpy's SIMD math (parmbs/_determinism.py)
import numpy as np
from parmbs.config import load_config
from parmbs.io.hdf5 import coordinate_names
from parmbs.sensitivity.problem import Problem

CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs", "fivebar.toml")


def run(t_end=1.0):
    """ψ and the adjoint and direct gradients of the five-bar over [0, t_end]."""
    # 1. the model: the TOML file plus overrides, exactly as --set would apply them
    cfg = load_config(CONFIG, [f"simulation.t_end={t_end}", "simulation.progress=false"])
    # 2. the problem: model, stepper, design space (cfg.design), objectives (cfg.objectives)
    pr = Problem(cfg)
    names = list(pr.design.names)
    rho = pr.design.values(pr.sys.p)          # design values ρ (here: from the file)
    # 3. forward run at the file's parameters p = sys.p
    traj = pr.forward(pr.sys.p)
    coords = coordinate_names(pr.sys)      # one name per column of q
    # 4. objectives and gradients along this trajectory (no p: the trajectory's own)
    values = pr.objective_values()
    adjoint = pr.adjoint()
    direct = pr.direct()
    return dict(names=names, rho=rho, t=traj.t, q=traj.q, coords=coords,
                values=values, adjoint=adjoint, direct=direct)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--t-end", type=float, default=1.0)
    res = run(ap.parse_args().t_end)
    i = res["coords"].index("B12.x")
    print(f"{len(res['t']) - 1} steps; B12 centre of mass x(t_end) = {res['q'][-1, i]:.6f}")
    print("design:", ", ".join(f"{n} = {v:g}" for n, v in zip(res["names"], res["rho"])))
    for o, psi in res["values"].items():
        ga, gd = res["adjoint"][o], res["direct"][o]
        rel = np.max(np.abs(ga - gd)) / np.max(np.abs(gd))
        print(f"{o} = {psi:.10e}   adjoint vs direct: max relative difference {rel:.1e}")
        for n, g in zip(res["names"], ga):
            print(f"  d{o}/d{n:<6} = {g: .10e}")


if __name__ == "__main__":
    main()
