"""Spatial rigid bodies (parmbs/spatial): forward dynamics of the shipped spatial models —
constraints (joints and pᵀp = 1) at every step, energy of undamped models, initial
conditions."""
import numpy as np
import pytest

from parmbs.config import load_config
from parmbs.model.evaluation import StateEval
from parmbs.sensitivity.problem import Problem

from conftest import CONFIGS


def run(name, overrides):
    pr = Problem(load_config(str(CONFIGS / f"{name}.toml"), overrides))
    return pr, pr.forward()


def energy(pr, tr):
    return np.array([StateEval(pr.sys, tr.t[k], *tr.x(k), pr.sys.p).energy() for k in range(tr.steps + 1)])


@pytest.mark.parametrize("integrator", ["trapezoidal", "genalpha"])
def test_double_pendulum_constraints_and_energy(integrator):
    """0.2 s at dt = 1e-3: every constraint row (joints and normalisation) ≤ 1e-10 at every
    step, energy conserved to 1e-5 relative (undamped)."""
    pr, tr = run("spatial-double-pendulum", ["simulation.t_end=0.2", f"simulation.integrator={integrator}"])
    viol = max(np.max(np.abs(StateEval(pr.sys, tr.t[k], *tr.x(k), pr.sys.p).phi())) for k in range(tr.steps + 1))
    E = energy(pr, tr)
    drift = np.max(np.abs(E - E[0])) / abs(E[0])
    print(f"{integrator}: max |Φ| = {viol:.2e}, relative energy drift {drift:.2e}")
    assert viol <= 1e-10
    assert drift <= 1e-5
