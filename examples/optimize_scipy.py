"""scipy.optimize.minimize on a parmbs model, with adjoint gradients.

Minimises ψ1 = ∫ |r₂ − r_ref|² dt of the five-bar (configs/fivebar.toml) over the two
spring lengths (L-BFGS-B, bounds ±20 %); every evaluation is one forward run and one
adjoint sweep, whatever the number of design variables.

The pattern (what ``parmbs optimize`` does with TAO or MMA, here with scipy):

    p = pr.design.apply(pr.sys.p, rho)     # design values ρ → model parameters p
    pr.forward(p)                          # the simulation at p
    psi = pr.objective_values()[name]      # ψ(ρ) along that trajectory
    grad = pr.adjoint()[name]              # dψ/dρ along the same trajectory

``objective_values`` and ``adjoint`` take the parameters of the last ``forward``: a
gradient is never taken along a trajectory of other parameters (asking for it with a
different p is a ValueError), so run ``forward(p)`` for every new ρ, as below.

Run:  python examples/optimize_scipy.py [--t-end 0.5] [--maxiter 10]
"""
import argparse
import os

import parmbs  # noqa: F401  first, before numpy: it pins numpy's SIMD math (parmbs/_determinism.py)
import numpy as np
from scipy.optimize import minimize

from parmbs.config import load_config
from parmbs.config.loader import validate
from parmbs.sensitivity.problem import Problem

CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs", "fivebar.toml")
OBJECTIVE = "psi1"


def spring_problem(t_end):
    """The five-bar with only the spring lengths as design variables: the config is a
    plain dict of TOML values, edited and validated again like a file."""
    base = load_config(CONFIG, [f"simulation.t_end={t_end}", "simulation.progress=false"])
    data = base.to_dict()
    data["design"] = [d for d in data["design"] if d["name"] in ("Ls1", "Ls2")]
    return Problem(validate(data, CONFIG))


class Evaluator:
    """ψ and dψ/dρ for scipy (``jac=True``): one forward and one adjoint per new ρ."""

    def __init__(self, pr, objective):
        self.pr, self.objective, self.count = pr, objective, 0

    def __call__(self, rho):
        pr = self.pr
        p = pr.design.apply(pr.sys.p, np.asarray(rho, float))
        pr.forward(p)
        self.count += 1
        return pr.objective_values()[self.objective], pr.adjoint()[self.objective]


def run(t_end=0.5, maxiter=10):
    pr = spring_problem(t_end)
    rho0 = pr.design.values(pr.sys.p)
    f = Evaluator(pr, OBJECTIVE)
    psi0 = f(rho0)[0]
    res = minimize(f, rho0, jac=True, method="L-BFGS-B",
                   bounds=[(0.8 * r, 1.2 * r) for r in rho0], options={"maxiter": maxiter})
    return dict(names=list(pr.design.names), rho0=rho0, psi0=psi0, result=res, evaluations=f.count)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--t-end", type=float, default=0.5)
    ap.add_argument("--maxiter", type=int, default=10)
    a = ap.parse_args()
    out = run(a.t_end, a.maxiter)
    res = out["result"]
    print(f"{OBJECTIVE}: {out['psi0']:.10e} -> {res.fun:.10e} in {res.nit} iterations, "
          f"{out['evaluations']} forward + adjoint runs ({res.message})")
    for n, r0, r in zip(out["names"], out["rho0"], res.x):
        print(f"  {n:<4} {r0:.6f} -> {r:.6f}")
    print(f"  max |dψ/dρ| at the end: {np.max(np.abs(res.jac)):.3e}")


if __name__ == "__main__":
    main()
