"""Spatial joints and drivers in running models (parmbs/spatial/joints.py, drivers.py),
each against a closed-form property of its motion:

* translational / cylindrical: a body on an inclined frictionless axis under gravity
  moves by s = v0 t + ½ (g·d) t² (the trapezoidal rule integrates a constant acceleration
  exactly), keeps its orientation (translational) or spins at a constant rate about the
  axis (cylindrical; axis = a principal axis of a symmetric body);
* rigid: two bodies welded together fly freely — the system's centre of mass follows
  the parabola r0 + v0 t + ½ g t² exactly (joint forces cancel in Σ m a), the relative
  orientation stays at its initial value;
* universal: a pendulum hung by a universal joint (ground x, body y) has 2 DOF and never
  twists: the relative angular velocity has no component along u_a × u_b;
* revolute driver: the rotation from the initial pose equals f(t); coordinate driver:
  the COM coordinate equals f(t);
* initial conditions: pᵀp = 1 and pᵀṗ = 0 exactly at t0, the given angular velocity.
"""
import numpy as np
import pytest

from parmbs.config import load_config
from parmbs.model.evaluation import StateEval
from parmbs.sensitivity.problem import Problem, physical
from parmbs.spatial.kinematics import omega_global, rotation
from parmbs.spatial.outputs import rotation_angles

S2 = np.sqrt(0.5)
G = np.array([0.0, 0.0, -9.81])

SLIDER = """
[model]
name = "slider"
[spatial]
gravity = [0.0, 0.0, -9.81]
[spatial.ground]
points = {{ O = [0.0, 0.0, 0.0] }}
axes = {{ d = [1.0, 0.0, 1.0] }}
[[spatial.bodies]]
name = "s"
mass = 2.0
inertia = [0.3, 0.3, 0.1]
initial = {{ position = [0.0, 0.0, 0.0], bryant = [0.0, 0.7853981633974483, 0.0] }}
initial_velocity = {{ velocity = [0.5, 0.0, 0.5], angular_velocity = [{w}, 0.0, {w}] }}
[[spatial.joints]]
type = "{kind}"
name = "J"
a = "ground.O"
b = "s.com"
axis_a = "ground.d"
axis_b = "s.z"
{extra}
[simulation]
t_end = 0.15
dt = 3e-3
"""


def run_text(tmp_path, text, overrides=()):
    f = tmp_path / "m.toml"
    f.write_text(text)
    pr = Problem(load_config(str(f), list(overrides)))
    return pr, pr.forward()


def max_phi(pr, tr):
    """Largest |Φ| over the steps (tr.x(k): the stepper's state, whose trailing blocks —
    the Arnold–Brüls pseudo-acceleration — StateEval does not take)."""
    return max(np.max(np.abs(StateEval(pr.sys, tr.t[k], *physical(tr.x(k)), pr.sys.p).phi()))
               for k in range(tr.steps + 1))


@pytest.mark.parametrize("kind", ["translational", "cylindrical"])
def test_slider_on_inclined_axis(tmp_path, kind):
    w = 3.0 * S2 if kind == "cylindrical" else 0.0          # spin 3 rad/s about the axis
    pr, tr = run_text(tmp_path, SLIDER.format(kind=kind, w=w, extra=""))
    d = np.array([S2, 0.0, S2])
    s = tr.q[:, 0:3] @ d
    expect = (np.array([0.5, 0.0, 0.5]) @ d) * tr.t + 0.5 * (G @ d) * tr.t ** 2
    off = tr.q[:, 0:3] - s[:, None] * d                     # distance from the axis
    spin = np.array([omega_global(tr.q[k, 3:7], tr.v[k, 3:7]) @ d for k in range(tr.steps + 1)])
    print(f"{kind}: |s − s_exact| = {np.max(np.abs(s - expect)):.2e}, off-axis {np.max(np.abs(off)):.2e}, "
          f"spin {spin.min():.12f}..{spin.max():.12f}")
    assert pr.sys.n - pr.sys.m == (1 if kind == "translational" else 2)
    assert max_phi(pr, tr) <= 1e-10
    assert np.max(np.abs(s - expect)) <= 1e-9
    assert np.max(np.abs(off)) <= 1e-10
    assert np.max(np.abs(spin - (3.0 if kind == "cylindrical" else 0.0))) <= 1e-6
    if kind == "translational":
        assert np.max(np.abs(rotation_angles(pr.sys, tr.q)["s"])) <= 1e-9


RIGID = """
[model]
name = "welded"
[spatial]
gravity = [0.0, 0.0, -9.81]
[[spatial.bodies]]
name = "A"
mass = 1.5
inertia = [0.2, 0.3, 0.4]
points = { W = [0.4, 0.0, 0.0] }
initial = { position = [0.0, 0.0, 0.0], bryant = [0.1, 0.2, 0.3] }
initial_velocity = { velocity = [1.0, 0.0, 2.0], angular_velocity = [0.5, -1.0, 2.0] }
[[spatial.bodies]]
name = "B"
mass = 0.7
inertia = [[0.05, 0.01, 0.0], [0.01, 0.08, 0.0], [0.0, 0.0, 0.1]]
points = { W = [-0.3, 0.1, 0.0] }
initial = { position = [0.7, -0.1, 0.0], bryant = [0.1, 0.2, 0.3] }
[[spatial.joints]]
type = "rigid"
name = "weld"
a = "A.W"
b = "B.W"
[simulation]
t_end = 0.15
dt = 3e-3
"""


def test_rigid_joint_free_flight(tmp_path):
    """A and B's velocities follow from A's (rigid body): B lists no independent
    coordinates, A all six."""
    text = RIGID.replace('angular_velocity = [0.5, -1.0, 2.0] }', 'angular_velocity = [0.5, -1.0, 2.0] }\n'
                         'independent = ["x", "y", "z", "rx", "ry", "rz"]')
    text = text.replace('bryant = [0.1, 0.2, 0.3] }\n[[spatial.joints]]',
                        'bryant = [0.1, 0.2, 0.3] }\nindependent = []\n[[spatial.joints]]')
    pr, tr = run_text(tmp_path, text)
    m = np.array([1.5, 0.7])
    rc = (m[0] * tr.q[:, 0:3] + m[1] * tr.q[:, 7:10]) / m.sum()
    vc0 = (m[0] * tr.v[0, 0:3] + m[1] * tr.v[0, 7:10]) / m.sum()
    expect = rc[0] + np.outer(tr.t, vc0) + 0.5 * np.outer(tr.t ** 2, G)
    rel = [rotation(tr.q[k, 3:7]).T @ rotation(tr.q[k, 10:14]) for k in range(tr.steps + 1)]
    wA = omega_global(tr.q[0, 3:7], tr.v[0, 3:7])
    wB = omega_global(tr.q[0, 10:14], tr.v[0, 10:14])
    print(f"rigid: COM parabola error {np.max(np.abs(rc - expect)):.2e}, "
          f"relative rotation drift {max(np.max(np.abs(r - rel[0])) for r in rel):.2e}")
    assert pr.sys.n - pr.sys.m == 6
    assert np.allclose(wA, [0.5, -1.0, 2.0], atol=1e-12) and np.allclose(wB, wA, atol=1e-12)
    assert max_phi(pr, tr) <= 1e-10
    assert np.max(np.abs(rc - expect)) <= 1e-9
    assert max(np.max(np.abs(r - rel[0])) for r in rel) <= 1e-9


UNIVERSAL = """
[model]
name = "cardan-pendulum"
[spatial]
gravity = [0.0, 0.0, -9.81]
[spatial.ground]
points = { O = [0.0, 0.0, 0.0] }
[[spatial.bodies]]
name = "bob"
mass = 1.0
inertia = [0.1, 0.12, 0.02]
points = { top = [0.0, 0.0, 1.0] }
initial = { position = [0.0, 0.0, -1.0] }
initial_velocity = { velocity = [-0.5, 1.0, 0.0], angular_velocity = [1.0, 0.5, 0.0] }
[[spatial.joints]]
type = "universal"
name = "U"
a = "ground.O"
b = "bob.top"
axis_a = "ground.x"
axis_b = "bob.y"
[simulation]
t_end = 0.15
dt = 2e-3
integrator = "genalpha"
"""


def test_universal_joint_pendulum(tmp_path):
    pr, tr = run_text(tmp_path, UNIVERSAL)
    twist = []
    for k in range(tr.steps + 1):
        A = rotation(tr.q[k, 3:7])
        w = omega_global(tr.q[k, 3:7], tr.v[k, 3:7])
        n = np.cross([1.0, 0.0, 0.0], A @ [0.0, 1.0, 0.0])
        twist.append(w @ n / np.linalg.norm(n))
    E = np.array([StateEval(pr.sys, tr.t[k], *tr.x(k), pr.sys.p).energy() for k in range(tr.steps + 1)])
    print(f"universal: max twist rate {np.max(np.abs(twist)):.2e} rad/s, energy drift {np.ptp(E) / abs(E[0]):.2e}")
    assert pr.sys.n - pr.sys.m == 2
    assert max_phi(pr, tr) <= 1e-10
    assert np.max(np.abs(twist)) <= 1e-6
    assert np.ptp(E) <= 1e-4 * abs(E[0])


DRIVEN = """
[model]
name = "driven"
[spatial]
gravity = [0.0, 0.0, -9.81]
[spatial.ground]
points = { O = [0.0, 0.0, 0.0] }
axes = { h = [0.0, 1.0, 1.0] }
[[spatial.bodies]]
name = "arm"
mass = 1.0
inertia = [0.1, 0.1, 0.02]
points = { P = [0.0, 0.0, 0.5] }
axes = { h = [0.0, 1.0, 1.0] }
initial = { position = [0.0, 0.0, -0.5] }
[[spatial.bodies]]
name = "slider"
mass = 1.0
inertia = [0.1, 0.1, 0.1]
initial = { position = [1.0, 0.0, 0.0] }
[[spatial.joints]]
type = "revolute"
name = "hinge"
a = "ground.O"
b = "arm.P"
axis_a = "ground.h"
axis_b = "arm.h"
[[spatial.joints]]
type = "driver"
name = "steer"
joint = "hinge"
function = { type = "polynomial", coefficients = [0.0, 0.8, 1.5] }
[[spatial.joints]]
type = "translational"
name = "rail"
a = "ground.O"
b = "slider.com"
axis_a = "ground.z"
axis_b = "slider.z"
[[spatial.joints]]
type = "driver"
name = "lift"
coordinate = "slider.z"
function = { type = "harmonic", amplitude = 0.2, omega = 5.0, offset = 0.0 }
[simulation]
t_end = 0.15
dt = 3e-3
"""


def test_drivers(tmp_path):
    pr, tr = run_text(tmp_path, DRIVEN)
    f = 0.8 * tr.t + 1.5 * tr.t ** 2
    ang = rotation_angles(pr.sys, tr.q)["arm"]
    z = tr.q[:, 7 + 2]
    print(f"drivers: |θ − f| = {np.max(np.abs(ang - f)):.2e}, |z − f| = {np.max(np.abs(z - 0.2 * np.sin(5 * tr.t))):.2e}")
    assert pr.sys.n - pr.sys.m == 0
    assert np.max(np.abs(ang - f)) <= 1e-9
    assert np.max(np.abs(z - 0.2 * np.sin(5 * tr.t))) <= 1e-12
    # the rotation is about the hinge axis: the COM stays on the circle of radius 0.5 about it
    h = np.array([0.0, S2, S2])
    r = tr.q[:, 0:3]
    assert np.max(np.abs(np.linalg.norm(r - np.outer(r @ h, h), axis=1) - 0.5 * np.sqrt(0.5))) <= 1e-9


def test_initial_conditions_consistent(tmp_path):
    """Inconsistent COM guesses of the double pendulum are corrected; pᵀp = 1 and pᵀṗ = 0
    hold exactly at t0; the independent rotations carry the given ω."""
    from conftest import CONFIGS
    cfg = load_config(str(CONFIGS / "spatial-double-pendulum.toml"), ["simulation.t_end=0.002"])
    pr = Problem(cfg)
    tr = pr.forward()
    q, v = tr.q[0], tr.v[0]
    for b in (0, 7):
        e, ed = q[b + 3:b + 7], v[b + 3:b + 7]
        assert abs(e @ e - 1.0) <= 1e-14
        assert abs(e @ ed) <= 1e-14
    assert max_phi(pr, tr) <= 1e-12
    # the stepper's whole Arnold-Bruls state (5 blocks) in StateEval's place: a clear error, not an IndexError
    assert len(tr.x(0)) == 5
    with pytest.raises(ValueError, match="physical"):
        StateEval(pr.sys, tr.t[0], *tr.x(0), pr.sys.p)
    assert np.allclose(omega_global(q[3:7], v[3:7]), [0.0, 0.0, 2.0], atol=1e-12)
    # upper bar hangs from O: its COM is 0.5 m below O along the tilted bar axis
    assert np.allclose(q[0:3], -rotation(q[3:7]) @ [0.0, 0.0, 0.5], atol=1e-12)
    assert len(pr.sys.independent) == pr.sys.n - pr.sys.m
