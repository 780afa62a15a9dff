"""The ride objective of seed 004 eq. (5.13), Ψ = ∫ z̈⁴ dt (integrand
``vertical_acceleration_4``, parmbs/spatial/objectives.py), on the spatial double
pendulum: its value is the trapezoidal quadrature of the fourth power of the point's
vertical acceleration (the same weights as ``vertical_acceleration_sq``), and its
adjoint gradient equals the direct one and central differences."""
import numpy as np
import pytest

from parmbs.config import load_config
from parmbs.io.hdf5 import coordinate_names
from parmbs.integrators.trajectory import quadrature_weights
from parmbs.sensitivity.problem import Problem

from conftest import CONFIGS

SET = ["simulation.t_end=0.06", "simulation.dt=3e-3", "simulation.integrator=genalpha",
       'objectives=[{name = "psi2", integrand = "vertical_acceleration_sq", point = "lower.com"}, '
       '{name = "psi4", integrand = "vertical_acceleration_4", point = "lower.com"}]']


def test_fourth_power_of_vertical_acceleration():
    pr = Problem(load_config(str(CONFIGS / "spatial-double-pendulum.toml"), SET))
    traj = pr.forward()
    az = np.asarray(traj.a)[:, coordinate_names(pr.sys).index("lower.z")]
    w = quadrature_weights(traj.steps, 3e-3)
    vals = pr.objective_values(traj)
    assert np.max(np.abs(az)) > 0.1
    assert vals["psi2"] == pytest.approx(np.dot(w, az ** 2), rel=1e-12)
    assert vals["psi4"] == pytest.approx(np.dot(w, az ** 4), rel=1e-12)
    adj, dirc, fd = pr.adjoint(), pr.direct(), pr.finite_differences(1e-5)
    g = np.asarray(adj["psi4"])
    assert np.all(np.abs(g) > 0)
    np.testing.assert_allclose(dirc["psi4"], g, rtol=1e-9, atol=0)
    assert np.max(np.abs(np.asarray(fd["psi4"]) - g)) <= 1e-6 * np.max(np.abs(g))
