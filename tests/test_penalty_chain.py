"""The penalty formulation on PETSc TS is robust on the 20-link closed chain (issue 20
item 7): the chain of benchmarks/formulations.py (20 bars on a half circle between two
pivots, 21 revolute joints, 60 coordinates, 42 constraints, 18 DOF) at the default
α = 1e7, ts-cn, h = 1e-3.

It failed twice before: in step 1, where the α-scaled residual rose 1.26e4-fold after
the first Newton update (9.8 -> 1.2e5, then 1e-3, 7e-7) and SNES's divergence test
(dtol 1e4) stopped it; and at t = 0.125, where Newton from PETSc's extrapolated
initial guess diverged.  Now: no divergence test, Newton from the current state
(integrators/ts.py).

Bounds:
* constraint violation: the penalty ODE's stabilisation (ξ = 1, ω = 10) keeps |Φ| at
  its discretisation level, measured 7.1e-7 over 1 s for α = 1e6 ... 1e7 (2.0e-6 at
  α = 1e5); bound 1e-5 on 0.2 s;
* TSAdjoint vs direct: round-off amplified by M + αΦ_qᵀΦ_q, linear in α (measured
  with the earlier extrapolated guess: 8.2e-12, 4.6e-11, 4.8e-10 of max |∇ψ| at
  α = 1e5, 1e6, 1e7, ≈ 5e-17 α); now 2.8e-10 (dev) and 2.5e-10 (speed) at α = 1e7;
  bound 1e-15 α (= 1e-8 at the default α).
"""
import importlib.util
import pathlib

import numpy as np
import pytest

from parmbs.config.loader import load_config
from parmbs.model.evaluation import StateEval
from parmbs.sensitivity.problem import Problem

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("bench_formulations", ROOT / "benchmarks" / "formulations.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    path = tmp_path_factory.mktemp("chain") / "closed-chain.toml"
    path.write_text(mod.closed_chain_toml(20))
    return path


def problem(path, t_end, *extra):
    return Problem(load_config(path, [f"simulation.t_end={t_end}", "simulation.dt=1e-3", "simulation.progress=false",
                                      'simulation.formulation="penalty"', 'simulation.integrator="ts-cn"', *extra]))


def test_default_alpha_runs_past_the_former_failures(chain):
    pr = problem(chain, 0.2)
    assert pr.stepper.mod.alpha == 1e7 and pr.sys.n == 60 and pr.sys.m == 42
    tr = pr.forward()
    assert tr.steps == 200 and np.all(np.isfinite(tr.y))
    phi = max(np.max(np.abs(StateEval(pr.sys, tr.t[k], tr.q[k], tr.v[k], tr.a[k], tr.lam[k], pr.sys.p).phi()))
              for k in range(0, 201, 10))
    print(f"chain, α = 1e7: Newton/step {np.mean(tr.newton_its):.2f} (max {np.max(tr.newton_its)}), max |Φ| {phi:.1e}")
    assert phi <= 1e-5
    assert np.max(tr.newton_its) < pr.config.simulation.newton.max_it


def test_tsadjoint_vs_direct_at_the_default_alpha(chain):
    pr = problem(chain, 0.02)
    ga = pr.adjoint()
    gd = pr.direct()
    bound = 1e-15 * pr.stepper.mod.alpha
    for k in ga:
        e = np.max(np.abs(ga[k] - gd[k])) / np.max(np.abs(ga[k]))
        print(f"chain {k}: TSAdjoint vs direct {e:.1e} (bound {bound:.0e})")
        assert e <= bound
