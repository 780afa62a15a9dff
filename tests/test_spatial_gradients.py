"""Exact discrete gradients of spatial models (parmbs/spatial): adjoint = direct to 1e-9
relative, = central finite differences to 1e-6, for design variables that move mass,
inertia (diagonal and off-diagonal), point coordinates (hence the initial assembly),
initial angular velocity and gravity."""
import numpy as np
import pytest

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem

from conftest import CONFIGS

EXTRA_DESIGN = ["design=[{name = \"m_upper\", path = \"spatial.bodies.upper.mass\"}, "
                "{name = \"Jxx_lower\", path = \"spatial.bodies.lower.inertia.xx\"}, "
                "{name = \"L_upper\", path = \"spatial.bodies.upper.points.bottom.z\"}, "
                "{name = \"w_upper\", path = \"spatial.bodies.upper.initial_velocity.angular_velocity.z\"}, "
                "{name = \"g_z\", path = \"spatial.gravity.z\"}]"]


def rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300)


@pytest.mark.parametrize("integrator", ["trapezoidal", "genalpha"])
def test_double_pendulum_gradients(integrator):
    pr = Problem(load_config(str(CONFIGS / "spatial-double-pendulum.toml"),
                             ["simulation.t_end=0.06", "simulation.dt=3e-3", f"simulation.integrator={integrator}",
                              "simulation.rho_inf=0.7"] + EXTRA_DESIGN))
    pr.forward()
    adj, dir_, fd = pr.adjoint(), pr.direct(), pr.finite_differences(1e-5)
    for k in adj:
        print(f"{integrator}/{k}: adj {np.asarray(adj[k])} |adj-dir|={rel(dir_[k], adj[k]):.1e} "
              f"|adj-fd|={rel(fd[k], adj[k]):.1e}")
        assert rel(dir_[k], adj[k]) <= 1e-9, k
        assert rel(fd[k], adj[k]) <= 1e-6, k
