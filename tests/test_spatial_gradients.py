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


# (genalpha's step derivatives are checked in tests/test_sensitivity.py; its spatial
# blocks are these same components)
@pytest.mark.parametrize("integrator", ["trapezoidal"])
def test_double_pendulum_gradients(integrator):
    pr = Problem(load_config(str(CONFIGS / "spatial-double-pendulum.toml"),
                             ["simulation.t_end=0.03", "simulation.dt=3e-3", f"simulation.integrator={integrator}",
                              "simulation.stabilization=ggl",     # the file's former setting
                              "simulation.rho_inf=0.7"] + EXTRA_DESIGN))
    pr.forward()
    adj, dir_, fd = pr.adjoint(), pr.direct(), pr.finite_differences(1e-5)
    for k in adj:
        print(f"{integrator}/{k}: adj {np.asarray(adj[k])} |adj-dir|={rel(dir_[k], adj[k]):.1e} "
              f"|adj-fd|={rel(fd[k], adj[k]):.1e}")
        assert rel(dir_[k], adj[k]) <= 1e-9, k
        assert rel(fd[k], adj[k]) <= 1e-6, k


def test_gradients_through_joints_drivers_and_full_inertia(tmp_path):
    """The welded pair (full 3×3 inertia: the off-diagonal design path changes both
    symmetric entries) and the driven hinge + rail (driver coefficients, a joint point):
    adjoint = direct ≤ 1e-9, = central FD ≤ 1e-6."""
    import test_spatial_joints as M
    text = M.RIGID.replace('angular_velocity = [0.5, -1.0, 2.0] }', 'angular_velocity = [0.5, -1.0, 2.0] }\n'
                           'independent = ["x", "y", "z", "rx", "ry", "rz"]')
    text = text.replace('bryant = [0.1, 0.2, 0.3] }\n[[spatial.joints]]',
                        'bryant = [0.1, 0.2, 0.3] }\nindependent = []\n[[spatial.joints]]')
    text = text.replace("t_end = 0.15\ndt = 3e-3", "t_end = 0.03\ndt = 3e-3") + """
[[design]]
name = "Jxy_B"
path = "spatial.bodies.B.inertia.xy"
[[design]]
name = "WAx"
path = "spatial.bodies.A.points.W.x"
[[design]]
name = "wx_A"
path = "spatial.bodies.A.initial_velocity.angular_velocity.x"
[[objectives]]
name = "weld_load"
integrand = "reaction_sq"
joint = "weld"
"""
    drv = M.DRIVEN.replace("t_end = 0.15\ndt = 3e-3", "t_end = 0.03\ndt = 3e-3") + """
[[design]]
name = "c1"
path = "spatial.joints.steer.function.coefficients.1"
[[design]]
name = "amp"
path = "spatial.joints.lift.function.amplitude"
[[design]]
name = "Pz"
path = "spatial.bodies.arm.points.P.z"
[[objectives]]
name = "hinge_load"
integrand = "reaction_sq"
joint = "hinge"
[[objectives]]
name = "lift_force"
integrand = "reaction_sq"
joint = "lift"
"""
    assert "t_end = 0.03" in text and "t_end = 0.03" in drv
    for name, body in (("rigid", text), ("driven", drv)):
        f = tmp_path / f"{name}.toml"
        f.write_text(body)
        pr = Problem(load_config(str(f)))
        pr.forward()
        adj, dir_, fd = pr.adjoint(), pr.direct(), pr.finite_differences(1e-5)
        assert np.all(np.any([np.abs(np.asarray(g)) > 0 for g in adj.values()], axis=0))   # every ρ matters
        for k in adj:
            print(f"{name}/{k}: adj {np.asarray(adj[k])} |adj-dir|={rel(dir_[k], adj[k]):.1e} "
                  f"|adj-fd|={rel(fd[k], adj[k]):.1e}")
            assert rel(dir_[k], adj[k]) <= 1e-9, k
            assert rel(fd[k], adj[k]) <= 1e-6, k
