"""Maggi's formulation (seed 004 §2.5, §3.1.4, §3.2.4) with the trapezoidal rule:
exact discrete gradients, constraints held to Newton's tolerance, convergence to the
index-3 gradients, the choice of independent coordinates and its errors."""
import numpy as np
import pytest

from parmbs.config import ConfigError, load_config
from parmbs.model.system import ModelError
from parmbs.sensitivity.problem import Problem

from conftest import CONFIGS
from formulation_checks import check_convergence_to_index3, check_gradients, drift, problem


@pytest.mark.parametrize("name", ["fivebar", "double-pendulum"])
def test_adjoint_direct_fd_agree(name):
    check_gradients(name, "maggi", with_cs=name == "fivebar")


def test_constraints_hold_to_newton_tolerance():
    """Positions and velocities are solved from the constraints every step (maggi.py
    docstring): the bound is max |Φ| ≤ 1e-10, max |Φ̇| ≤ 1e-9 with tolerances 1e-12."""
    ph, phd = drift("maggi", 1e-2)
    print(f"maggi drift: |Φ| {ph:.2e}, |Φ̇| {phd:.2e}")
    assert ph <= 1e-10 and phd <= 1e-9


@pytest.mark.parametrize("name", ["fivebar", "double-pendulum"])
def test_gradients_approach_index3(name):
    check_convergence_to_index3(name, "maggi")


def test_independent_coordinates_choice():
    """Another valid DOF set (A1.angle, B3B.angle) gives another discrete scheme: same
    trajectory to O(h²), its own exact gradient; the default is the bodies' lists."""
    default = problem("fivebar", "maggi")
    assert default.stepper.ind_names == ["A1.angle", "B12.angle"]
    other = problem("fivebar", "maggi", extra=['simulation.maggi.independent=["A1.angle", "B3B.angle"]'])
    assert other.stepper.ind_names == ["A1.angle", "B3B.angle"]
    t1, t2 = default.forward(), other.forward()
    assert 0 < np.max(np.abs(t1.q - t2.q)) < 1e-4
    adj, dir_ = other.adjoint(), other.direct()
    for k in adj:
        assert np.max(np.abs(adj[k] - dir_[k])) <= 1e-9 * np.max(np.abs(adj[k]))


@pytest.mark.parametrize("value,cls,words", [
    ('["A1.angle", "A1.foo"]', ConfigError, "'A1.foo' is not a coordinate"),
    ('["A1.angle", "nobody.x"]', ConfigError, "'nobody.x' is not a coordinate"),
    ('["A1.angle", "A1.angle"]', ConfigError, "duplicate"),
    ('["A1.angle"]', ModelError, "2 degrees of freedom"),
    ('["A1.x", "A1.y"]', ModelError, "do not determine the configuration"),
])
def test_bad_independent_coordinates(value, cls, words):
    """Each bad choice is one error naming simulation.maggi.independent."""
    with pytest.raises(cls) as e:
        cfg = load_config(str(CONFIGS / "fivebar.toml"), ["simulation.formulation=maggi",
                                                           f"simulation.maggi.independent={value}"])
        pr = Problem(cfg)
        pr.stepper.initial(0.0, pr.sys.p)
    assert "simulation.maggi.independent" in str(e.value) and words in str(e.value)
