"""Spatial translation driver (``[[spatial.joints]] type = "driver"``, ``motion =
"translation"``, spatial/drivers.py TranslationDriver): the quarter car's cart driven
along its rail at a prescribed speed (a rig or a test track at constant speed).  The
cart's displacement along the axis follows f(t) exactly, the gradient in the driver's
coefficient is exact, and a translation driver on a revolute joint is refused in one
line.  The block test (tests/test_components.py) checks its Φ_q, γ, Φ_t and ∂/∂p.
"""
import parmbs  # noqa: F401 — first (numpy SIMD determinism: parmbs/_determinism.py)
import numpy as np

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem

from conftest import CONFIGS
from gradient_checks import assert_gradients_agree, cli_one_line_error

DRIVER = '''
[[spatial.joints]]
type = "driver"
name = "speed"
joint = "{joint}"
motion = "translation"
function = {{ type = "polynomial", coefficients = [0.0, 4.0, 1.5] }}
'''


def _config(tmp_path, joint="rail"):
    text = (CONFIGS / "spatial-quarter-car.toml").read_text()
    head, sep, tail = text.partition("[[spatial.forces]]")
    text = head + DRIVER.format(joint=joint) + "\n" + sep + tail
    text = text.replace('velocity = [5.0, 0.0, 0.0]', 'velocity = [4.0, 0.0, 0.0]')   # ḟ(0) = 4 m/s
    text += '''
[[design]]
name = "v0"
path = "spatial.joints.speed.function.coefficients.1"
'''
    p = tmp_path / "quarter-car-driven.toml"
    p.write_text(text)
    return p


def problem(tmp_path, t_end):
    return Problem(load_config(str(_config(tmp_path)), [f"simulation.t_end={t_end}", "simulation.dt=1e-3",
                                                         "simulation.progress=false"]))


def test_cart_follows_the_prescribed_displacement(tmp_path):
    """x_cart(t) = 4t + 1.5t² (d₀ = 0: the cart starts at O) at every step to Newton's
    tolerance (1e-12 relative updates; bound 1e-10 m): the index-3 position constraint."""
    pr = problem(tmp_path, 0.2)
    tr = pr.forward()
    from parmbs.io.hdf5 import coordinate_names
    names = coordinate_names(pr.sys)
    i = next(k for k, n in enumerate(names) if n.startswith("cart.") and n.endswith("x"))
    x = 4.0 * tr.t + 1.5 * tr.t ** 2
    print(f"max |x_cart − f(t)| = {np.max(np.abs(tr.q[:, i] - x)):.2e}")
    assert np.max(np.abs(tr.q[:, i] - x)) <= 1e-10


def test_translation_driver_gradient_agrees(tmp_path):
    """Over 0.1 s the wheel reaches the bump (x₀ = 0.3 m at t ≈ 0.07 s), so the speed
    moves the objective.  adjoint = direct ≤ 1e-9; central FD ≤ 1e-6 (estimates as
    tests/test_ggl.py: 100 steps · κ 1e4 · ε ≈ 1e-10; FD δ = 1e-5: truncation 1e-10,
    Newton noise 1e-7)."""
    pr = problem(tmp_path, 0.1)
    adj = assert_gradients_agree(pr, adj_cs=None)
    j = pr.design.names.index("v0")
    assert all(abs(adj[o][j]) > 1e-3 * np.max(np.abs(adj[o])) for o in adj)     # the speed matters


def test_translation_driver_needs_a_sliding_joint(tmp_path):
    p = _config(tmp_path, joint="axle")
    cli_one_line_error(["simulate", p, "--set", "simulation.t_end=0.001"], tmp_path,
                       "spatial.joints.speed.joint", "translational")
