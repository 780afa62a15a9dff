"""Hexahedral FFR solids in a model ([[spatial.solids]], parmbs/flexible/solids.py):

* rigid-body motion exact: a solid whose every node is clamped (only the frame moves)
  swinging on a spherical joint follows the Euler-parameter rigid body of the same mass
  and inertia step by step (the element sums reproduce m R̈ and 2Gᵀ(J'ω̇' + ω' × J'ω')
  to round-off, tests/test_solid.py; the regularisation constants differ only in
  round-off and are absorbed by λ_n);
* the gradient of ∫U dt over every element density of a coarse spatial-crank:
  adjoint = direct, = central differences with the step chosen by a sweep, Taylor
  order 2;
* bad input: one line naming file and key, exit 2.
"""
import copy
import tomllib

import numpy as np
import pytest

from parmbs.config.loader import validate
from parmbs.sensitivity.problem import Problem
from cli_helpers import parmbs_in_process
from gradient_checks import central_difference, taylor_orders
from test_continuum import coarse_density_run

CONFIG = "configs/spatial-crank.toml"


def crank_data(nx=10, ny=2, nz=1, **solid):
    """The shipped spatial-crank on a coarse mesh (hx = 25 mm, hy = 30 mm, hz = 10 mm):
    the clamp radius 26 mm catches the six nodes around the pivot, (0, 0, ±5 mm) and
    (±25 mm, 0, ±5 mm); the pin is node [9, 1, 1] at x = 0.2 m."""
    with open(CONFIG, "rb") as f:
        data = tomllib.load(f)
    s = data["spatial"]["solids"][0]
    s.update(nx=nx, ny=ny, nz=nz, clamp_radius=0.026, points={"pin": [9, 1, 1]})
    s.update(solid)
    return data


def problem(data):
    return Problem(validate(copy.deepcopy(data), CONFIG))


# -- rigid-body motion --------------------------------------------------------------------------

PENDULUM = """
[model]
name = "solid-pendulum"
[spatial]
gravity = [0.0, 0.0, -9.81]
[spatial.ground]
points = {{ O = [0.0, 0.0, 0.0] }}
{body}
[[spatial.joints]]
type = "spherical"
name = "S"
a = "ground.O"
b = "box.top"
[simulation]
t_end = 0.1
dt = 0.005
integrator = "trapezoidal"
newton = {{ rtol = 1e-13, atol = 1e-13, max_it = 25 }}
"""
L = (0.12, 0.08, 0.3)
SOLID = f"""
[[spatial.solids]]
name = "box"
size = {list(L)}
nx = 3
ny = 2
nz = 4
offset = {[-x / 2 for x in L]}
clamp_radius = 1.0
E = 1e9
rho0 = 2000.0
density_law = "linear"
density = 0.8
points = {{ top = [3, 2, 4] }}
initial = {{ position = [-0.06, -0.04, -0.15] }}
initial_velocity = {{ angular_velocity = [2.0, -1.0, 5.0] }}
independent = ["rx", "ry", "rz"]
"""


def rigid_body():
    m = 2000.0 * 0.8 * np.prod(L)
    J = [m / 12 * (L[1] ** 2 + L[2] ** 2), m / 12 * (L[0] ** 2 + L[2] ** 2), m / 12 * (L[0] ** 2 + L[1] ** 2)]
    return f"""
[[spatial.bodies]]
name = "box"
mass = {m!r}
inertia = {J!r}
points = {{ top = {[x / 2 for x in L]} }}
initial = {{ position = [-0.06, -0.04, -0.15] }}
initial_velocity = {{ angular_velocity = [2.0, -1.0, 5.0] }}
independent = ["rx", "ry", "rz"]
"""


def test_rigid_motion_of_a_fully_clamped_solid_is_the_rigid_body():
    trajs = []
    for body in (SOLID, rigid_body()):
        cfg = validate(tomllib.loads(PENDULUM.format(body=body)), "pendulum.toml")
        pr = Problem(cfg)
        assert pr.sys.n == 7
        traj = pr.forward()
        trajs.append(np.array(traj.q[:21]))
    solid, rigid = trajs
    moved = np.max(np.abs(rigid[-1] - rigid[0]))
    err = np.max(np.abs(solid - rigid))
    print(f"solid vs rigid body over 20 steps: {err:.2e} (motion {moved:.2e})")
    assert moved > 0.05
    # Newton stops at 1e-13 relative residual on O(1) coordinates; 20 steps of a
    # conditioning-O(10) problem: ≲ 1e-11
    assert err < 1e-11


# -- gradients over the density field ---------------------------------------------------------------

@pytest.fixture(scope="module")
def coarse_crank():
    return coarse_density_run(crank_data, problem)


def _central(pr, p0, rho, j, h):
    return central_difference(pr, p0, rho, j, h, "compliance")


def test_adjoint_matches_direct_and_finite_differences(coarse_crank):
    pr = coarse_crank
    assert len(pr.design) == 20
    g = pr.adjoint()["compliance"]
    gd = pr.direct()["compliance"]
    err_d = np.max(np.abs(g - gd)) / np.max(np.abs(g))
    print(f"adjoint vs direct: {err_d:.2e}")
    # both solve the same linear recursions: ≲ steps × κ × ε ≈ 10 × 1e4 × 1e-16
    assert err_d < 1e-9
    p0 = pr.sys.p.copy()
    rho = pr.design.values(p0)
    cols = np.random.default_rng(11).choice(len(rho), 4, replace=False)
    # the step: a sweep h = 10^-k x_j, k = 2..6, keeping the h where two successive
    # central differences agree best (truncation ∝ h² against Newton noise 1e-13 ψ/h)
    j0 = cols[0]
    steps = [10.0 ** -k * rho[j0] for k in range(2, 7)]
    fds = [_central(pr, p0, rho, j0, h) for h in steps]
    k = int(np.argmin(np.abs(np.diff(fds))))
    h_rel = steps[k] / rho[j0]
    print("FD sweep", ", ".join(f"{h:.0e}: {f:.10e}" for h, f in zip(steps, fds)), f"-> h = {h_rel:.0e} x")
    fd = [fds[k]] + [_central(pr, p0, rho, j, h_rel * rho[j]) for j in cols[1:]]
    pr.forward(p0)
    err_fd = np.max(np.abs(g[cols] - fd) / np.abs(g[cols]))
    print(f"adjoint vs central FD on 4 entries: {err_fd:.2e}")
    assert err_fd < 1e-6


def test_taylor_order_two(coarse_crank):
    """|ψ(ρ + εd) − ψ(ρ) − ε ∇ψ·d| = O(ε²) along a random direction."""
    orders = taylor_orders(coarse_crank, "compliance")
    assert np.all(np.abs(orders - 2.0) < 0.15)


def test_scalar_parameters_with_gravity_adjoint_equals_direct():
    """Material and gravity design variables (SolidGravity's and SolidInertia's r_p):
    adjoint = direct, and a central difference agrees."""
    data = crank_data(E=2e9)
    data["design"] = [{"name": "gz", "path": "spatial.gravity.z"},
                      {"name": "rho", "path": "spatial.solids.crank.rho0"},
                      {"name": "E", "path": "spatial.solids.crank.E"}]
    data["simulation"].update(t_end=0.1, dt=0.02)
    pr = problem(data)
    pr.forward()
    g, gd = pr.adjoint()["compliance"], pr.direct()["compliance"]
    assert np.max(np.abs(g - gd) / np.abs(g)) < 1e-9
    p0, rho = pr.sys.p.copy(), pr.design.values(pr.sys.p)
    for j in range(3):
        fd = _central(pr, p0, rho, j, 1e-4 * abs(rho[j]))
        assert abs(fd - g[j]) < 1e-6 * abs(g[j]), (j, fd, g[j])


# -- input errors -----------------------------------------------------------------------------------

@pytest.mark.parametrize("sets,key", [
    (["spatial.solids.crank.clamp_radius=0.001"], "spatial.solids.crank.clamp_radius"),
    (["spatial.solids.crank.points.pin=[30, 3, 1]"], "spatial.solids.crank"),
    (["spatial.joints.A.b=crank.node_1_2_3_4"], "spatial.joints.A.b"),
])
def test_bad_solid_input_is_one_line_exit_2(sets, key):
    r = parmbs_in_process("info", CONFIG, *[a for s in sets for a in ("--set", s)])   # (tests/cli_helpers.py)
    assert r.returncode == 2, r.stderr
    assert f"{CONFIG}: {key}" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_revolute_at_a_free_node_is_refused():
    """A hexahedron's node carries no rotation: a revolute joint there is an input error."""
    data = crank_data()
    data["spatial"]["joints"][0]["b"] = "crank.pin"
    with pytest.raises(Exception) as exc:
        problem(data)
    assert "spatial.joints.O.type" in str(exc.value) and "orientation" in str(exc.value)


CANTILEVER = """
[model]
name = "solid-cantilever"
[spatial]
gravity = [0.0, 0.0, -9.81]
[spatial.ground]
points = {{ O = [0.0, 0.0, 0.0], C = [0.0, 0.015, 0.015] }}
[[spatial.solids]]
name = "beam"
size = [0.3, 0.03, 0.03]
nx = 6
ny = 1
nz = 1
offset = [0.0, -0.015, -0.015]
clamp_radius = 0.0213
E = 1e9
rho0 = 2000.0
density_law = "linear"
independent = {independent}
[[spatial.joints]]
type = "{kind}"
name = "W"
a = "ground.{ground}"
b = "beam.{point}"
{axes}
[simulation]
t_end = 0.05
dt = 0.0025
integrator = "genalpha"
rho_inf = 0.8
"""


@pytest.mark.parametrize("kind,ground,point,axes", [
    ("rigid", "O", "origin", ""),
    ("rigid", "C", "node_0_1_1", ""),           # a clamped node (0, 15, 15) mm: it moves with the frame
    ("revolute", "O", "origin", 'axis_a = "ground.x"\naxis_b = "beam.x"'),
])
def test_locked_and_revolute_joints_hold_the_frame(kind, ground, point, axes):
    """A cantilever under gravity, fully locked (seed 003 Eq. 52) at its clamped end — or
    hinged about its own axis, which the symmetric load does not turn: the frame stays at
    its initial pose (to Newton's tolerance) while the free end sags (−z)."""
    cfg = validate(tomllib.loads(CANTILEVER.format(kind=kind, ground=ground, point=point, axes=axes,
                                                           independent='["rx"]' if kind == "revolute" else "[]")), "cantilever.toml")
    pr = Problem(cfg)
    traj = pr.forward()
    q = np.array(traj.q)
    frame0 = np.array([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0])
    drift = np.max(np.abs(q[:, :7] - frame0))
    names = pr.sys.solids.coordinate_names()
    tip = [names.index(f"beam.u_6_{j}_{k}.z") for j in (0, 1) for k in (0, 1)]
    sag = q[:, tip].mean(1)
    print(f"{kind} at {point}: frame drift {drift:.1e}, tip sag min {sag.min():.3e}")
    assert drift < 1e-10
    # suddenly applied weight: the free end swings down to ≤ 2δ and back towards 0;
    # δ = ρ A g L⁴/(8 E I) (Euler–Bernoulli) = 2.65e-4 m.  One fully integrated hexahedron
    # through the thickness locks in bending (stiffer), so the peak is below 2δ
    # (measured 0.9 δ); 0.4 δ and 2.2 δ (3-D shear flexibility adds ~1 % at L/h = 10)
    delta = 2000.0 * 0.03 ** 2 * 9.81 * 0.3 ** 4 / (8 * 1e9 * 0.03 ** 4 / 12)
    assert -2.2 * delta < sag.min() < -0.4 * delta
    assert sag.max() < 0.05 * abs(sag.min())
