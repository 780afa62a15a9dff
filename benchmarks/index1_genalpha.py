"""The flexible slider-crank under [Wehrle 2024]'s own scheme (index-1 generalized-α with
Baumgarte terms, formulations/index1_genalpha.py) beside parmbs's index-3 generalized-α.

    .venv/bin/python benchmarks/index1_genalpha.py [--set k=v ...]

Both at the paper's setting (Δt = 1e-4 s, ϱ∞ = 0.55, 0.025 s, undamped beams) unless
``--set`` says otherwise.  Printed per scheme: the six outputs ψ, the norm of their
adjoint gradients, the constraint drift max_k |Φ(q_k)| (index-3: the Newton tolerance),
Newton iterations and CPU seconds (forward + adjoint).  Baumgarte α = β = 1000 1/s
(≈ 1/(10 Δt)); the paper names Baumgarte's method but gives no coefficients.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import parmbs                                       # noqa: E402,F401  (before numpy)
import numpy as np                                  # noqa: E402
from parmbs.config.loader import load_config      # noqa: E402
from parmbs.sensitivity.problem import Problem     # noqa: E402

CONFIG = os.path.join(os.path.dirname(__file__), "..", "configs", "slider-crank-flex.toml")
PAPER = ["simulation.dt=1e-4", "simulation.integrator=genalpha", "simulation.rho_inf=0.55",
         "beams.crank.stiffness_damping=0.0", "beams.rod.stiffness_damping=0.0"]
SCHEMES = {
    "index3 genalpha": ['simulation.formulation="index3"'],
    "index1 genalpha + Baumgarte": ['simulation.formulation="index1"', "simulation.index1.baumgarte.alpha=1000.0",
                                    "simulation.index1.baumgarte.beta=1000.0"],
    "index1 genalpha, no Baumgarte": ['simulation.formulation="index1"'],
}


def run(sets):
    pr = Problem(load_config(CONFIG, sets + ["simulation.progress=false"]))
    t0 = time.process_time()
    tr = pr.forward()
    vals = pr.objective_values()
    grads = pr.adjoint()
    cpu = time.process_time() - t0
    drift = max(np.max(np.abs(pr.stepper._eval(tr.t[k], tr.x(k), pr.sys.p).phi())) for k in range(tr.steps + 1))
    return vals, grads, drift, int(np.sum(tr.newton_its)), cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", action="append", default=[])
    a = ap.parse_args()
    rows = {name: run(PAPER + sets + a.set) for name, sets in SCHEMES.items()}
    names = list(next(iter(rows.values()))[0])
    print("| scheme | " + " | ".join(names) + " | max abs Φ | Newton its | CPU s |")
    print("|---|" + "---|" * (len(names) + 3))
    for scheme, (vals, grads, drift, its, cpu) in rows.items():
        print(f"| {scheme} | " + " | ".join(f"{vals[k]:.6e}" for k in names)
              + f" | {drift:.1e} | {its} | {cpu:.1f} |")
    print()
    print("| scheme | " + " | ".join(f"‖∇{k}‖" for k in names) + " |")
    print("|---|" + "---|" * len(names))
    for scheme, (vals, grads, *_ ) in rows.items():
        print(f"| {scheme} | " + " | ".join(f"{np.linalg.norm(grads[k]):.4e}" for k in names) + " |")


if __name__ == "__main__":
    main()
