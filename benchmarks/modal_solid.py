"""K-convergence of the modally reduced spatial crank toward the full-order solid: ψ and ∇ψ
of ∫U dt over every element density, reduced (``spatial.solids.crank.reduction``) vs
full order, per K, with and without the pin's attachment modes.

    .venv/bin/python benchmarks/modal_solid.py --steps 40 --modes 4 8 16 32

configs/spatial-crank.toml as shipped (20 × 6 × 2 = 240 hexahedra, 1278 elastic
coordinates), at element densities drawn uniformly in [0.3, 1] (seed 5: a non-uniform
design, so the gradient is not symmetric), over the first ``--steps`` steps of its
dt = 1.25e-3.  Errors: |ψ_K − ψ|/|ψ| and max|∇ψ_K − ∇ψ|/max|∇ψ| against the full-order
run; each reduced run is forward + adjoint (the chain through the eigenproblem
included), timed with process CPU time (``--cpu``) or wall.
"""
import argparse
import copy
import os
import sys
import time
import tomllib

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import parmbs  # noqa: E402,F401  (before numpy: its SIMD pinning, parmbs/_determinism.py)
import numpy as np  # noqa: E402
from parmbs.config.loader import validate          # noqa: E402
from parmbs.sensitivity.problem import Problem      # noqa: E402

CONFIG = os.path.join(os.path.dirname(__file__), "..", "configs", "spatial-crank.toml")


def crank(steps, reduction=None, seed=5):
    with open(CONFIG, "rb") as f:
        data = tomllib.load(f)
    s = data["spatial"]["solids"][0]
    nel = s["nx"] * s["ny"] * s["nz"]
    s["density"] = np.random.default_rng(seed).uniform(0.3, 1.0, nel).tolist()
    s["stiffness_damping"] = 0.0     # full and reduced alike, undamped: the README's rows (measured so)
    if reduction is not None:
        s["reduction"] = reduction
    data["simulation"]["t_end"] = steps * data["simulation"]["dt"]
    return validate(copy.deepcopy(data), CONFIG)


def run(cfg, clock):
    t0 = clock()
    pr = Problem(cfg)
    traj = pr.forward()
    psi = pr.objective_values(traj, pr.sys.p)["compliance"]
    t1 = clock()
    g = np.asarray(pr.adjoint()["compliance"])
    t2 = clock()
    if not (np.isfinite(psi) and np.all(np.isfinite(g))):
        raise SystemExit("non-finite ψ or gradient")
    return pr, psi, g, t1 - t0, t2 - t1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--modes", type=int, nargs="+", default=[4, 8, 16, 32])
    ap.add_argument("--cpu", action="store_true", help="process CPU time instead of wall")
    a = ap.parse_args()
    clock = time.process_time if a.cpu else time.perf_counter
    pr, psi, g, tf, ta = run(crank(a.steps), clock)
    print(f"full order: {pr.sys.n} coordinates, psi {psi:.10e}, forward {tf:.2f} s, adjoint {ta:.2f} s")
    print("| K | attachment | coordinates | forward s | adjoint + chain s | ψ error | ∇ψ error |")
    print("|---|---|---|---|---|---|---|")
    for K in a.modes:
        for att in (False, True):
            prr, psir, gr, tfr, tar = run(crank(a.steps, {"modes": K, "attachment": att}), clock)
            print(f"| {K} | {'yes' if att else 'no'} | {prr.sys.n} | {tfr:.2f} | {tar:.2f} | "
                  f"{abs(psir - psi) / abs(psi):.1e} | {np.max(np.abs(gr - g)) / np.max(np.abs(g)):.1e} |", flush=True)


if __name__ == "__main__":
    main()
