"""Distance driver (``[[joints]] type = "distance_driver"``, model/joints.py
DistanceDriver): a prescribed-length actuator between two points.  A pendulum whose
tip is pulled by a length actuator from a ground point: the distance follows f(t) to
Newton's tolerance, the motion is fully prescribed (the pendulum angle follows from
the circle intersection), and the gradients in the actuator's function are exact.

Its derivative blocks (Φ_q, the Hessian, γ against Φ̈) are checked by the generic
block test, tests/test_components.py.
"""
import parmbs  # noqa: F401 — first (numpy SIMD determinism: parmbs/_determinism.py)
import numpy as np

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem

from conftest import CONFIGS
from gradient_checks import assert_gradients_agree

G = np.array([1.0, 1.0])
L0, AMP, OM = 1.9318516525781366, 0.2, 2.0      # |tip(−60°) − G| and the stroke


def _config(tmp_path):
    text = (CONFIGS / "pendulum.toml").read_text()
    text = text.replace('points = { O = [0.0, 0.0] }', 'points = { O = [0.0, 0.0], G = [1.0, 1.0] }')
    text = text.replace('independent = ["angle"]\n', '')
    text = text.replace('[simulation]', f'''[[joints]]
type = "distance_driver"
name = "actuator"
a = "ground.G"
b = "bar.tip"
function = {{ type = "harmonic", amplitude = {AMP}, omega = {OM}, offset = {L0} }}

[simulation]''')
    head, _, _ = text.partition("[[design]]")
    text = head + '''[[design]]
name = "m"
path = "bodies.bar.mass"

[[design]]
name = "stroke"
path = "joints.actuator.function.amplitude"

[[design]]
name = "omega"
path = "joints.actuator.function.omega"

[[objectives]]
name = "tip_deviation"
integrand = "point_deviation_sq"
point = "bar.tip"

[[objectives]]
name = "final_angle"
terminal = "angle"
body = "bar"
'''
    p = tmp_path / "pendulum-actuated.toml"
    p.write_text(text)
    return p


def problem(tmp_path, t_end=0.5):
    return Problem(load_config(str(_config(tmp_path)), [f"simulation.t_end={t_end}", "simulation.progress=false"]))


def test_distance_follows_the_function_and_fixes_the_motion(tmp_path):
    """|r_tip − r_G| = L0 + A sin ωt at every step (Newton: position updates ≤ 1e-12
    relative; bound 1e-10), and the angle is the circle intersection's: the tip at
    distance 1 from O and f(t) from G, on the branch the run starts on (bound 1e-9)."""
    pr = problem(tmp_path, t_end=1.0)
    tr = pr.forward()
    i = 3 * pr.sys.body_index["bar"]
    th = tr.q[:, i + 2]
    tip = tr.q[:, i:i + 2] + 0.5 * np.stack([np.cos(th), np.sin(th)], 1)   # com at 0.5 along the bar
    dist = np.linalg.norm(tip - G, axis=1)
    f = L0 + AMP * np.sin(OM * tr.t)
    assert np.max(np.abs(dist - f)) <= 1e-10
    # law of cosines in the triangle O, G, tip: |G|² + 1 − 2|G| cos(φ_G − θ) = f²
    phiG = np.arctan2(G[1], G[0])
    c = (G @ G + 1.0 - f ** 2) / (2 * np.linalg.norm(G))
    expect = phiG - np.arccos(c)           # the tip below the line OG (the start at −60°)
    assert abs(expect[0] - (-np.pi / 3)) <= 1e-9
    assert np.max(np.abs(th - expect)) <= 1e-9


def test_distance_driver_gradients_agree(tmp_path):
    """adjoint = direct = complex step ≤ 1e-9; central FD ≤ 1e-6 (estimates as
    tests/test_ggl.py: 500 steps · κ 1e3 · ε ≈ 5e-11; FD δ = 1e-5: truncation 1e-10,
    Newton noise 1e-12/2δ ≈ 1e-7)."""
    pr = problem(tmp_path)
    adj = assert_gradients_agree(pr)
    # the angle is kinematic: independent of the mass, dependent on the stroke
    j_m, j_s = pr.design.names.index("m"), pr.design.names.index("stroke")
    assert abs(adj["final_angle"][j_m]) <= 1e-10 * abs(adj["final_angle"][j_s])
