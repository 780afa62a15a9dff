"""Vehicle objective integrands on spatial bodies (parmbs/spatial/objectives.py).

* r̈_Pz from (q, q̇, q̈) equals the second time derivative of the point's height z_P(t)
  along a prescribed tumbling motion (5-point stencil of point_position);
* ω'·u' equals the yaw–pitch–roll rate formula φ̇ − ψ̇ sin θ for u' = body x, and ω'·û
  for a skew axis;
* the complex-step partials ∂g/∂(q, v, a, p) that Term.grads uses equal central
  differences (the adjoint/direct gradients of a model are in tests/test_buggy.py).
"""
import numpy as np
import pytest

from parmbs.model.component import cs_jacobian
from parmbs.spatial import kinematics as K
from parmbs.spatial.objectives import (FNS, EX, _roll_rate_sq_fixed, roll_rate,
                                       vertical_acceleration)


def _rx(a):
    return K.from_axis_angle([1, 0, 0], a)


def _ry(a):
    return K.from_axis_angle([0, 1, 0], a)


def _rz(a):
    return K.from_axis_angle([0, 0, 1], a)


def angles(t):
    """Yaw ψ, pitch θ, roll φ of a prescribed motion (all three non-trivial)."""
    return 0.7 * np.sin(1.3 * t) + 0.2, 0.4 * np.cos(0.9 * t), 0.5 * np.sin(2.1 * t + 0.3)


def angle_rates(t):
    return 0.7 * 1.3 * np.cos(1.3 * t), -0.4 * 0.9 * np.sin(0.9 * t), 0.5 * 2.1 * np.cos(2.1 * t + 0.3)


def pose(t):
    """q(t) = (r(t), p(t)) with A(p) = Rz(ψ) Ry(θ) Rx(φ) (vehicle yaw-pitch-roll)."""
    psi, th, phi = angles(t)
    p = K.quat_product(K.quat_product(_rz(psi), _ry(th)), _rx(phi))
    r = np.array([3.0 * t, 0.2 * np.sin(t), 0.4 + 0.05 * np.sin(7 * t)])
    return np.concatenate([r, p])


def derivs(t, h=1e-3):
    """q, q̇, q̈ by 5-point stencils (errors O(h⁴) ≈ 1e-11 here)."""
    f = [pose(t + k * h) for k in (-2, -1, 0, 1, 2)]
    v = (f[0] - 8 * f[1] + 8 * f[3] - f[4]) / (12 * h)
    a = (-f[0] + 16 * f[1] - 30 * f[2] + 16 * f[3] - f[4]) / (12 * h * h)
    return f[2], v, a


S = np.array([1.1, -0.3, 0.25])      # a "front of the chassis" point, body-local


@pytest.mark.parametrize("t", [0.0, 0.37, 1.9])
def test_vertical_acceleration_is_second_derivative_of_height(t):
    q, v, a = derivs(t)
    h = 1e-3
    z = [K.point_position(pose(t + k * h), S)[2] for k in (-2, -1, 0, 1, 2)]
    zdd = (-z[0] + 16 * z[1] - 30 * z[2] + 16 * z[3] - z[4]) / (12 * h * h)
    got = vertical_acceleration(q, v, a, S)
    assert abs(zdd) > 0.1                         # a motion that really accelerates P
    assert abs(got - zdd) <= 1e-6 * max(1.0, abs(zdd))


@pytest.mark.parametrize("t", [0.0, 0.37, 1.9])
def test_roll_rate_is_body_x_rate(t):
    q, v, _ = derivs(t)
    psi_d, th_d, phi_d = angle_rates(t)
    psi, th, phi = angles(t)
    expected = phi_d - psi_d * np.sin(th)         # ω'_x for z-y'-x'' angles
    assert abs(roll_rate(q, v, EX) - expected) <= 1e-8
    # unnormalised axis: the same rate, and a skew axis gives ω'·û
    assert abs(roll_rate(q, v, 3.0 * EX) - expected) <= 1e-8
    wy = th_d * np.cos(phi) + psi_d * np.cos(th) * np.sin(phi)
    u = np.array([1.0, 1.0, 0.0])
    assert abs(roll_rate(q, v, u) - (expected + wy) / np.sqrt(2)) <= 1e-8


def test_roll_rate_ignores_yaw_at_zero_pitch():
    """A car that only yaws (turning) and rolls: the roll rate is φ̇ whatever ψ̇ is."""
    for psi_d in (0.0, 0.8, -2.0):
        t, h = 0.3, 1e-3
        qs = [K.quat_product(_rz(psi_d * s), _rx(0.2 * np.sin(3 * s))) for s in (t - h, t, t + h)]
        q = np.concatenate([np.zeros(3), qs[1]])
        v = np.concatenate([np.zeros(3), (qs[2] - qs[0]) / (2 * h)])
        assert abs(roll_rate(q, v, EX) - 0.6 * np.cos(3 * t)) <= 1e-6


def _args(kind, t=0.37):
    q, v, a = derivs(t)
    # off the constraint manifold on purpose: the partials are of the function itself
    q = q + np.array([0, 0, 0, 0.01, -0.02, 0.0, 0.015])
    p = S if kind == "vertical_acceleration_sq" else np.array([0.9, 0.2, -0.1])
    return [t, q, v, a, np.zeros(0), p, np.zeros(2)]


@pytest.mark.parametrize("kind", sorted(FNS))
def test_complex_step_partials_equal_central_differences(kind):
    fn = FNS[kind]
    args = _args(kind)
    for i in (1, 2, 3, 5):                       # q, v, a, p
        cs = cs_jacobian(fn, args, i)
        x = np.asarray(args[i], float)
        fd = np.zeros_like(x)
        for j in range(len(x)):
            e = np.zeros_like(x)
            e[j] = 1e-6 * max(1.0, abs(x[j]))
            up, dn = list(args), list(args)
            up[i], dn[i] = x + e, x - e
            fd[j] = (fn(*up) - fn(*dn)) / (2 * e[j])
        scale = max(np.max(np.abs(cs)), 1e-30)
        assert np.max(np.abs(cs - fd)) <= 1e-7 * scale, (kind, i)
        if kind == "roll_rate_sq" and i == 3:
            assert np.all(cs == 0)                # the rate does not read accelerations
        if kind == "roll_rate_sq" and i == 1:
            assert np.all(cs[:3] == 0)            # nor positions


def test_fixed_axis_equals_parametrised_body_x():
    args = _args("roll_rate_sq")
    fixed = _roll_rate_sq_fixed(*args[:5], np.zeros(1), args[6], axis=EX)
    args[5] = EX
    assert fixed == pytest.approx(FNS["roll_rate_sq"](*args), rel=1e-14)
    d = cs_jacobian(lambda *a: _roll_rate_sq_fixed(*a, axis=EX), [*args[:5], np.zeros(1), args[6]], 2)
    assert np.allclose(d, cs_jacobian(FNS["roll_rate_sq"], args, 2), rtol=1e-13, atol=0)


# --------------------------------------------------------------------- on a spatial model
OBJECTIVES = """
[[objectives]]
name = "tip_vertical_acc"
integrand = "vertical_acceleration_sq"
point = "lower.tip"

[[objectives]]
name = "upper_roll"
integrand = "roll_rate_sq"
body = "upper"

[[objectives]]
name = "lower_roll_skew"
integrand = "roll_rate_sq"
body = "lower"
axis = "lower.w"
terminal = "roll_rate_sq"
"""


def _pendulum(tmp_path, extra=OBJECTIVES):
    from conftest import CONFIGS
    text = (CONFIGS / "spatial-double-pendulum.toml").read_text()
    text = text.replace('points = { top = [0.0, 0.0, 0.5], tip = [0.0, 0.0, -0.5] }',
                        'points = { top = [0.0, 0.0, 0.5], tip = [0.0, 0.0, -0.5] }\naxes = { w = [1.0, 2.0, 0.5] }')
    text = text[:text.index("[[objectives]]")] + extra
    f = tmp_path / "dp.toml"
    f.write_text(text)
    return f


def test_spatial_model_objectives_values_and_gradients(tmp_path):
    """Values equal the integrand evaluated on the stored trajectory by hand; adjoint =
    direct (1e-9) = central FD (1e-6) on the spatial double pendulum (0.05 s).
    FD: Richardson's (4 D(h) − D(2h))/3 of central differences D at h = 2e-4 relative:
    the h² truncation cancels (D(1e-4) alone is off by 3.5e-7 to 7e-7 from truncation)
    and the round-off noise δψ/h of ψ on the index-3 accelerations stays small; at
    h = 1e-5 the noise alone reached 0.8e-6 (numpy path) and 1.4e-6 (compiled path).
    Measured with Richardson: ≤ 3.4e-8 on both paths."""
    from parmbs.config import load_config
    from parmbs.sensitivity.problem import Problem
    pr = Problem(load_config(str(_pendulum(tmp_path)), ["simulation.t_end=0.05", "simulation.dt=1e-3",
                                                        "simulation.integrator=trapezoidal",   # as written
                                                        "simulation.progress=false"]))
    tr = pr.forward()
    vals = pr.objective_values()
    sp, p = pr.sys.spatial, pr.sys.p
    lo, up = sp.bodies["lower"], sp.bodies["upper"]
    ql = lambda X: X[:, lo.offset:lo.offset + 7]           # noqa: E731
    qu = lambda X: X[:, up.offset:up.offset + 7]           # noqa: E731
    s_tip = p[sp.point_pidx("lower.tip")]
    acc = vertical_acceleration(ql(tr.q), ql(tr.v), ql(tr.a), s_tip)
    fd_acc = np.gradient(np.gradient(K.point_position(ql(tr.q), s_tip)[:, 2], tr.t), tr.t)
    assert np.max(np.abs(acc - fd_acc)[2:-2]) <= 2e-2 * np.max(np.abs(acc))   # the stored a is z̈
    assert vals["tip_vertical_acc"] == pytest.approx(np.sum(pr.w * acc ** 2), rel=1e-12)
    roll = roll_rate(qu(tr.q), qu(tr.v), EX)
    assert vals["upper_roll"] == pytest.approx(np.sum(pr.w * roll ** 2), rel=1e-12)
    w = roll_rate(ql(tr.q), ql(tr.v), np.array([1.0, 2.0, 0.5]))
    assert vals["lower_roll_skew"] == pytest.approx(np.sum(pr.w * w ** 2) + w[-1] ** 2, rel=1e-12)
    assert min(vals.values()) > 0
    adj, dir_ = pr.adjoint(), pr.direct()
    d1, d2 = pr.finite_differences(2e-4), pr.finite_differences(4e-4)
    fd = {k: (4 * d1[k] - d2[k]) / 3 for k in d1}
    for k in adj:
        scale = np.max(np.abs(adj[k]))
        print(k, adj[k], np.max(np.abs(dir_[k] - adj[k])) / scale, np.max(np.abs(fd[k] - adj[k])) / scale)
        assert np.max(np.abs(dir_[k] - adj[k])) <= 1e-9 * scale, k
        assert np.max(np.abs(fd[k] - adj[k])) <= 1e-6 * scale, k


@pytest.mark.parametrize("extra,key,msg", [
    ('[[objectives]]\nname = "o"\nintegrand = "vertical_acceleration_sq"\npoint = "lower.nope"\n',
     "objectives.o.point", "unknown point 'nope'"),
    ('[[objectives]]\nname = "o"\nintegrand = "vertical_acceleration_sq"\n', "objectives.o.point", "required"),
    ('[[objectives]]\nname = "o"\nintegrand = "roll_rate_sq"\nbody = "ghost"\n', "objectives.o.body",
     "needs a spatial body"),
    ('[[objectives]]\nname = "o"\nintegrand = "roll_rate_sq"\nbody = "lower"\naxis = "upper.x"\n',
     "objectives.o.axis", "must be on the body 'lower'"),
    ('[[objectives]]\nname = "o"\nintegrand = "roll_rate_sq"\nbody = "lower"\naxis = "lower.v"\n',
     "objectives.o.axis", "unknown axis 'v'"),
])
def test_bad_objective_references_name_the_key(tmp_path, extra, key, msg):
    from parmbs.config import ConfigError, load_config
    with pytest.raises(ConfigError) as e:
        load_config(str(_pendulum(tmp_path, extra)))
    assert e.value.key == key and msg in e.value.message, (e.value.key, e.value.message)
