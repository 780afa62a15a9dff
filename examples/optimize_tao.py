"""PETSc TAO on a parmbs model from Python, with adjoint gradients.

Minimises ψ1 = ∫ |r₂ − r₂₀|² dt of the five-bar (built in Python, fivebar_api.py)
over the two spring lengths with TAO's bound-constrained limited-memory
variable-metric method (blmvm), bounds ±20 %.  Each TAO evaluation is one forward
run and one adjoint sweep (``parmbs.api.objective_function``).  ``parmbs optimize``
does the same with a record on disk and restarts (parmbs/optimize/driver.py); this is
the few lines to write when TAO is part of your own script.

petsc4py calls (petsc4py.PETSc.TAO reference): ``create``, ``setType``,
``setSolution``, ``setObjectiveGradient(f(tao, x, g) -> value, g)``,
``setVariableBounds``, ``setTolerances``, ``setMaximumIterations``, ``solve``,
``getSolution``, ``getSolutionStatus``.  ``setFromOptions`` applies ``tao_*`` entries
of the PETSc options database (``PETSc.Options()["tao_monitor"] = None``).

Run:  python examples/optimize_tao.py [--t-end 0.5] [--maxit 10]
"""
import argparse

import parmbs  # noqa: F401  first, before numpy: it pins numpy's SIMD math (parmbs/_determinism.py)
import numpy as np

from parmbs._petsc import PETSc
from parmbs.api import objective_function, problem
from fivebar_api import build

OBJECTIVE = "psi1"


def run(t_end=0.5, maxit=10):
    m = build(t_end).drop("design", "m_A1", "xG_A1", "L_A1")     # design: Ls1, Ls2
    m.simulation(progress=False)
    pr = problem(m)
    f = objective_function(pr, OBJECTIVE)
    rho0 = np.asarray(pr.design.values(pr.sys.p), float)
    history = []

    def objective_gradient(tao, x, g):
        psi, grad = f(x.getArray(readonly=True).copy())
        g.setArray(grad)
        history.append(psi)
        return psi

    comm = PETSc.COMM_SELF                         # one design vector per process
    x = PETSc.Vec().createSeq(len(rho0), comm=comm)
    x.setArray(rho0)
    lb, ub = x.duplicate(), x.duplicate()
    lb.setArray(0.8 * rho0)
    ub.setArray(1.2 * rho0)
    tao = PETSc.TAO().create(comm)
    tao.setType("blmvm")
    tao.setSolution(x)
    tao.setObjectiveGradient(objective_gradient, x.duplicate())
    tao.setVariableBounds(lb, ub)
    tao.setTolerances(gatol=1e-10, grtol=1e-8)
    tao.setMaximumIterations(maxit)
    tao.setFromOptions()
    tao.solve()
    its, psi, gnorm, _, _, reason = tao.getSolutionStatus()
    rho = tao.getSolution().getArray().copy()
    tao.destroy()
    return dict(names=list(pr.design.names), rho0=rho0, rho=rho, psi0=history[0], psi=psi, gnorm=gnorm,
                its=its, reason=reason, evaluations=f.evaluations)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--t-end", type=float, default=0.5)
    ap.add_argument("--maxit", type=int, default=10)
    a = ap.parse_args()
    out = run(a.t_end, a.maxit)
    print(f"{OBJECTIVE}: {out['psi0']:.10e} -> {out['psi']:.10e} in {out['its']} TAO iterations, "
          f"{out['evaluations']} forward + adjoint runs (reason {out['reason']}, |grad| {out['gnorm']:.3e})")
    for n, r0, r in zip(out["names"], out["rho0"], out["rho"]):
        print(f"  {n:<4} {r0:.6f} -> {r:.6f}")


if __name__ == "__main__":
    main()
