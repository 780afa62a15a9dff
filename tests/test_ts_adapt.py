"""Adaptive PETSc TS runs (TSAdapt "basic", simulation.adapt; issue 20 item 3): the
gradient over the accepted steps — TSAdjoint, the own tangent sweep — against central
finite differences on the frozen step sequence (TSStepper.freeze replays the accepted
steps with fixed steps), and the adapt type as a PETSc option.

Double pendulum, penalty α = 1e5, t_end = 0.2, rtol 1e-4, atol 1e-6: 138 accepted steps
of 7.8e-4 … 2.5e-3 (dt = 1e-3 is only the first step).

Bounds and their estimates (measured on this case):
* TSAdjoint vs direct: round-off amplified by the penalty matrix M + αΦ_qᵀΦ_q,
  ∝ α (tests/test_penalty.py: ~1e-12 at α = 1e5); measured ≤ 1e-11 (ts-beuler),
  ≤ 6e-12 (ts-theta) of max |∇ψ|; bound 1e-9.
* vs FD at relative step s = 1e-5: truncation C s² with C ≈ 30 (measured error
  3.1e-5, 3.1e-7, 2.9e-9 at s = 1e-3, 1e-4, 1e-5: ∝ s²), noise η/s with η ≈ 1e-14
  relative round-off of ψ at α = 1e5 → ≈ 3e-9 + 1e-9; measured ≤ 3.2e-9; bound 1e-6.
* the replay at the nominal parameters repeats the adaptive run up to the round-off
  of h_k = t_{k+1} − t_k recomputed from the stored times and the Newton tolerance:
  measured 1.5e-12 in y; bound 1e-9.
"""
import os
import pathlib
import subprocess
import sys
import json

import numpy as np
import pytest

from parmbs.config.loader import load_config
from parmbs.sensitivity.problem import Problem

from test_index1_ts import assert_agree

ROOT = pathlib.Path(__file__).resolve().parents[1]
DP = ROOT / "configs" / "double-pendulum.toml"
ADAPT = "simulation.adapt={rtol=1e-4, atol=1e-6}"


def problem(integrator, *extra):
    cfg = load_config(DP, ["simulation.t_end=0.2", "simulation.dt=1e-3", 'simulation.formulation="penalty"',
                           f'simulation.integrator="{integrator}"', "simulation.theta=0.7",
                           "simulation.penalty.alpha=1e5", *extra])
    return Problem(cfg)


def central_fd(pr, rel):
    """Central differences of the objectives (each run on the stepper's current mesh)."""
    p0 = pr.sys.p.copy()
    rho = pr.design.values(p0)
    g = {o.name: np.zeros(len(rho)) for o in pr.objectives}
    for j in range(len(rho)):
        h = rel * max(abs(rho[j]), 1.0)
        vals = []
        for s in (1, -1):
            r = rho.copy()
            r[j] += s * h
            p = pr.design.apply(p0, r)
            vals.append(pr.objective_values(pr.forward(p), p))
        for k in g:
            g[k][j] = (vals[0][k] - vals[1][k]) / (2 * h)
    return g


@pytest.mark.parametrize("integrator", ["ts-beuler", "ts-theta"])
def test_adaptive_tsadjoint_vs_direct_and_fd_on_the_frozen_steps(integrator):
    pr = problem(integrator, ADAPT)
    traj = pr.forward()
    h = np.diff(traj.t)
    assert traj.t[-1] == pytest.approx(0.2, abs=1e-14)       # MATCHSTEP: ends at t_end
    assert traj.steps != pr.nsteps and h.max() / h.min() > 2   # the steps did adapt
    ga = pr.adjoint()
    gd = pr.direct()
    assert pr.traj.steps == traj.steps and np.array_equal(pr.traj.t, traj.t)   # deterministic re-runs
    pr.stepper.freeze(traj.t)
    replay = pr.forward()
    assert np.array_equal(replay.t, traj.t)
    assert np.max(np.abs(replay.y - traj.y)) <= 1e-9 * np.max(np.abs(traj.y))
    assert_agree(ga, gd, central_fd(pr, 1e-5), f"{integrator} ({traj.steps} steps, FD on the frozen steps)")


def test_weights_are_the_trapezoid_rule_on_the_accepted_times():
    from parmbs.integrators.ts import time_weights
    t = np.array([0.0, 0.1, 0.3, 0.35])
    assert np.allclose(time_weights(t), [0.05, 0.15, 0.125, 0.025], rtol=0, atol=1e-15)
    assert time_weights(t) @ (2 * t) == pytest.approx(0.35 ** 2, rel=1e-14)   # exact for linear g


def gradient_steps(*args, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PETSC_OPTIONS"}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    js = tmp_path / "g.json"
    base = ["--set", "simulation.t_end=0.05", "--set", "simulation.dt=1e-3",
            "--set", 'simulation.formulation="penalty"', "--set", 'simulation.integrator="ts-beuler"']
    r = subprocess.run([sys.executable, "-m", "parmbs", "gradient", str(DP), *base, "-q", "--json", str(js), *args],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(js.read_text())["steps"]


def test_adapt_type_is_a_petsc_option(tmp_path):
    """-parmbs_ts_adapt_type basic makes a fixed-step config adaptive (with the
    simulation.adapt defaults); none makes an adaptive config take its fixed dt."""
    assert gradient_steps(tmp_path=tmp_path) == 50
    assert gradient_steps("-parmbs_ts_adapt_type", "basic", tmp_path=tmp_path) != 50
    assert gradient_steps("--set", ADAPT, tmp_path=tmp_path) != 50
    assert gradient_steps("--set", ADAPT, "-parmbs_ts_adapt_type", "none", tmp_path=tmp_path) == 50
