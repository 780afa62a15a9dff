"""A ball sliding on a plane with friction (configs/spatial-ball.toml): penalty contact
and regularised friction in a full simulation — physics (rest height, μ g deceleration,
rolling at 5/7 v₀) and exact discrete gradients (adjoint = direct, = central FD)."""
import numpy as np
import pytest

from parmbs.config import ConfigError, load_config
from parmbs.sensitivity.problem import Problem

from conftest import CONFIGS


@pytest.fixture(scope="module")
def ball():
    pr = Problem(load_config(str(CONFIGS / "spatial-ball.toml"), ["simulation.integrator=trapezoidal"]))  # as written
    pr.forward()
    return pr


def test_ball_rest_height_sliding_deceleration_and_rolling_speed(ball):
    """z stays at ρ − (m g/k + δ/2) (static penalty solution); while sliding v_x = v₀ − μ g t
    (friction μ F_n, |v_slip| ≫ ε); after t = 2 v₀/(7 μ g) the ball rolls at 5/7 v₀ with
    ω ρ = v (no slip).  Tolerances: O(dt²) trapezoidal error (dt = 2.5 ms), ε/|v_slip|."""
    tr, sys_ = ball.traj, ball.sys
    i = sys_.spatial.bodies["ball"].offset
    t, q, v = np.asarray(tr.t), np.asarray(tr.q), np.asarray(tr.v)
    g, mu, k, delta, rho, v0 = 9.81, 0.3, 1e5, 1e-4, 0.1, 1.0
    z_static = rho - (g / k + delta / 2)
    assert np.max(np.abs(q[:, i + 2] - z_static)) < 2e-7
    sliding = (t > 0.02) & (t < 0.08)
    assert np.max(np.abs(v[sliding, i] - (v0 - mu * g * t[sliding]))) < 2e-4 * v0
    rolling = t > 0.13
    assert np.max(np.abs(v[rolling, i] - 5.0 / 7.0 * v0)) < 1e-4 * v0
    p, pd = q[rolling, i + 3:i + 7], v[rolling, i + 3:i + 7]
    wy = 2.0 * (p[:, 0] * pd[:, 2] - pd[:, 0] * p[:, 2] + p[:, 3] * pd[:, 1] - p[:, 1] * pd[:, 3])
    assert np.max(np.abs(wy * rho - v[rolling, i])) < 1e-4 * v0


def test_ball_gradients_adjoint_direct_fd(ball):
    adj, dir_ = ball.adjoint(), ball.direct()
    fd = ball.finite_differences(1e-5)
    a, d, f = adj["vx_sq"], dir_["vx_sq"], fd["vx_sq"]
    assert np.all(np.abs(a) > 1e-3)
    assert np.max(np.abs(a - d)) / np.max(np.abs(a)) <= 1e-9
    assert np.max(np.abs(a - f)) / np.max(np.abs(a)) <= 1e-6


@pytest.mark.parametrize("edit,key", [
    (("friction = 0.3", "friction = -0.3"), "spatial.forces"),
    (('point = "ball.com"', 'point = "ball.nose"'), "spatial.forces.ground.point"),
    (('point = "ball.com"', 'point = "rock.com"'), "spatial.forces.ground.point"),
    (('type = "plane"', 'type = "table"\nx = [0.0, 1.0]\nz = [0.0, 0.1]'), "spatial.road"),
    (('type = "plane"', 'type = "function"\nshape = "bump"\nwavelength = 2.0'), "spatial.road"),
    (('radius = 0.1', 'radius = 0.1\nnormal = [0.0, 0.0, 1.0]'), "spatial.forces"),
    (('type = "contact"', 'type = "tyre"\nwheel = "ball"\naxis = "ball.w"'), "spatial.forces"),
])
def test_bad_spatial_force_input_names_the_key(tmp_path, edit, key):
    """Invalid [[spatial.forces]] / [spatial.road] input is a ConfigError naming the key."""
    src = (CONFIGS / "spatial-ball.toml").read_text()
    old, new = edit
    assert old in src
    with pytest.raises(ConfigError) as info:
        load_config(_write(tmp_path, src.replace(old, new, 1)))
    assert key in str(info.value), str(info.value)


def _write(tmp_path, text):
    path = tmp_path / "ball.toml"
    path.write_text(text)
    return str(path)


def test_plane_surface_contact_equals_road_contact(tmp_path):
    """surface = "plane" (origin, normal, no road) builds a PlaneContact whose residual
    equals the RoadContact's on the same plane z = 0."""
    from parmbs.model.system import System
    src = (CONFIGS / "spatial-ball.toml").read_text()
    plane = src.replace('[spatial.road]\ntype = "plane"\n', "").replace(
        "slip_velocity = 1e-2", 'slip_velocity = 1e-2\nsurface = "plane"\nnormal = [0.0, 0.0, 2.0]')
    systems = [System(load_config(_write(tmp_path, s))) for s in (src, plane)]
    kinds = [[type(f).__name__ for f in s_.forces] for s_ in systems]
    assert "RoadContact" in kinds[0] and "PlaneContact" in kinds[1]
    rng = np.random.default_rng(2)
    q, v = rng.uniform(-0.1, 0.1, 7), rng.uniform(-1, 1, 7)
    q[2], q[3:7], v[2] = 0.0995, [1.0, 0.0, 0.0, 0.0], -0.5       # in contact, approaching
    out = []
    for s_ in systems:
        c = next(f for f in s_.forces if "Contact" in type(f).__name__)
        ext = s_.extend(np.r_[q])[c.qidx]
        out.append(c.r(0.0, ext, s_.extend(np.r_[v])[c.qidx], 0 * ext, s_.p[c.pidx]))
    assert np.abs(out[0]).max() > 1.0
    assert np.allclose(out[0], out[1], rtol=1e-13, atol=1e-12)


def test_quarter_car_over_bump_gradients():
    """configs/spatial-quarter-car.toml (tyre of seed 004 eqs. 5.6–5.10 on a sin⁴ bump,
    suspension spring-damper), shortened: a 1 cm bump moved to x₀ = 0.05 m so that the
    wheel crosses it within 0.1 s without lifting off.  The tyre load really varies
    (> 10 %), and the
    gradient of ∫ z̈² of the sprung mass w.r.t. the tyre stiffness and the suspension
    damping is adjoint = direct (1e-9) = central FD (1e-6)."""
    cfg = load_config(str(CONFIGS / "spatial-quarter-car.toml"),
                      ["spatial.road.x0=0.05", "spatial.road.length=0.3", "spatial.road.height=0.01",
                       "simulation.t_end=0.1",
                       "simulation.dt=1e-2"])
    pr = Problem(cfg)
    tr = pr.forward()
    tyre = next(f for f in pr.sys.forces if type(f).__name__ == "Tyre")
    Fn = [tyre.forces(pr.sys.extend(tr.q[k])[tyre.qidx], pr.sys.extend(tr.v[k])[tyre.qidx],
                      pr.sys.p[tyre.pidx])[2][0] for k in range(tr.steps + 1)]
    assert max(Fn) > 1.1 * Fn[0] and min(Fn) > 0.0
    adj, dir_, fd = pr.adjoint(), pr.direct(), pr.finite_differences(1e-5)
    a, d, f = adj["comfort"], dir_["comfort"], fd["comfort"]
    print("quarter car:", a, f"|adj-dir| {np.max(np.abs(a - d)) / np.max(np.abs(a)):.1e}",
          f"|adj-fd| {np.max(np.abs(a - f)) / np.max(np.abs(a)):.1e}")
    assert np.all(np.abs(a) > 0)
    assert np.max(np.abs(a - d)) / np.max(np.abs(a)) <= 1e-9
    assert np.max(np.abs(a - f)) / np.max(np.abs(a)) <= 1e-6


ALL_TYPES = """
[model]
name = "all-spatial-forces"
[spatial]
gravity = [0.0, 0.0, -9.81]
[spatial.road]
type = "table"
x = [-1.0, 0.0, 1.0, 2.0]
z = [0.0, 0.01, 0.0, 0.02]
[spatial.ground]
points = { DC = [1.045, 0.297, 0.632], M = [0.0, 0.0, 1.0] }
[[spatial.bodies]]
name = "arm"
mass = 6.0
inertia = [0.052099, 0.023235, 0.068864]
points = { DA = [0.0, 0.0, 0.0], M = [0.0, 0.0, 0.0] }
axes = { s = [0.0, 1.0, 0.0] }
initial = { position = [1.045, 0.5, 0.241] }
[[spatial.forces]]
type = "spring_damper"
name = "strut"
law = "iltis"
a = "ground.DC"
b = "arm.DA"
[[spatial.forces]]
type = "spring_damper"
name = "leaf"
a = "ground.DC"
b = "arm.DA"
stiffness = 35906.0
length = 0.5
[[spatial.forces]]
type = "bump_stop"
name = "stop"
a = "ground.DC"
b = "arm.DA"
stiffness = 1e7
length = 0.93
[[spatial.forces]]
type = "bushing"
name = "mount"
a = "ground.M"
b = "arm.M"
stiffness = [1e3, 2e3, 3e3]
rotational_stiffness = [10.0, 20.0, 30.0]
[[spatial.forces]]
type = "contact"
name = "touch"
point = "arm.com"
radius = 0.3
stiffness = 1e5
friction = 0.5
[[spatial.forces]]
type = "tyre"
name = "tyre"
wheel = "arm"
axis = "arm.s"
radius = 0.3
stiffness = 2e5
[[spatial.forces]]
type = "force"
name = "push"
point = "arm.DA"
value = [0.0, 0.0, 10.0]
function = { type = "harmonic", amplitude = 1.0, omega = 2.0 }
[[spatial.forces]]
type = "torque"
name = "twist"
body = "arm"
value = [0.0, 5.0, 0.0]
[simulation]
t_end = 0.01
dt = 1e-3
[[design]]
name = "k_mount_y"
path = "spatial.forces.mount.stiffness.y"
[[design]]
name = "c_strut"
path = "spatial.forces.strut.damping"
"""


def test_every_force_type_is_wired(tmp_path):
    """One config with every [[spatial.forces]] type on a table road: one group per
    kind, the documented parameter names (vector entries as design variables), and at
    the Iltis table 5.4 strut points the seed's nominal strut force (−128 N tension,
    eq. 5.5) — read through the System's parameter vector."""
    from parmbs.model.system import System
    sys_ = System(load_config(_write(tmp_path, ALL_TYPES)))
    kinds = {type(f).__name__: f for f in sys_.forces}
    force_kinds = {"SpatialNonlinearSpringDamper", "SpatialSpring", "SpatialBumpStop", "SpatialBushing",
                   "RoadContact", "Tyre", "SpatialPointForce", "SpatialTorque"}
    assert force_kinds <= set(kinds)
    idx = sys_.params.index
    for path in ("spatial.forces.strut.stiffness", "spatial.forces.strut.spring.a3", "spatial.forces.strut.damper.d4",
                 "spatial.forces.strut.breakpoints.v_hi", "spatial.forces.leaf.length", "spatial.forces.stop.smoothing",
                 "spatial.forces.mount.rotational_stiffness.z", "spatial.forces.touch.friction",
                 "spatial.forces.tyre.kappa_c", "spatial.forces.push.value.z", "spatial.forces.push.function.omega",
                 "spatial.forces.twist.value.y"):
        assert path in idx, path
    assert sys_.p[idx["spatial.forces.strut.stiffness"]] == 2.8397e7
    strut = kinds["SpatialNonlinearSpringDamper"]
    q = sys_.extend(sys_.q_guess)[strut.qidx]
    l, ldot = strut.geometry(q, 0 * q, sys_.p[strut.pidx])[4:6]
    assert abs(strut.tension(l, ldot, sys_.p[strut.pidx])[0] + 128.0) < 0.05
    qe, ve = sys_.extend(sys_.q_guess), sys_.extend(0.1 * np.ones(sys_.n))
    for name in sorted(force_kinds):     # the [[spatial.forces]] elements (body inertia is 0 at a = 0)
        f = kinds[name]
        r = f.r(0.3, qe[f.qidx], ve[f.qidx], 0 * qe[f.qidx], sys_.p[f.pidx])
        assert np.all(np.isfinite(r)) and np.any(r != 0.0), name
