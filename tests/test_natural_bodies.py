"""Natural-coordinate rigid bodies (parmbs/spatial/natural.py, natural_set.py; seed 000
§5.2): the constant mass matrix gives the rigid body's kinetic energy; a heavy spatial
pendulum in natural coordinates under the variational integrator follows the same
pendulum in Euler parameters (trapezoidal rule) to the schemes' O(h²); exact gradients
of a body hung from a spatial beam (spherical and weld joints) under the variational
integrator.

Bounds: the pendulum comparison at h = 1e-3 over 0.3 s: both schemes are second order,
error ~ (ωh)² ω t |r| ≈ (5e-3)² · 1.5 · 0.5 ≈ 2e-5 m each; 1e-4 m.  Gradients as
tests/test_spatial_beams.py (adjoint = direct ≤ 1e-9; FD ≤ 1e-6 at δ = 5e-6, measured
≤ 1.5e-7)."""
import numpy as np
import pytest

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem
from parmbs.spatial.kinematics import from_bryant, rotation
from parmbs.spatial.natural import NaturalInertia

from gradient_checks import assert_gradients_agree
from spatial_flex_models import beam, spherical, toml


def test_mass_matrix_gives_rigid_kinetic_energy():
    rng = np.random.default_rng(4)
    m = 2.5
    Jb = np.array([[0.3, 0.02, -0.01], [0.02, 0.4, 0.03], [-0.01, 0.03, 0.5]])
    A = rotation(from_bryant([0.3, -0.7, 1.1]))
    v, w = rng.normal(size=3), rng.normal(size=3)
    qd = np.r_[v, *(np.cross(w, A[:, k]) for k in range(3))]        # ė_k = ω × e_k
    p = np.array([m, Jb[0, 0], Jb[1, 1], Jb[2, 2], Jb[0, 1], Jb[0, 2], Jb[1, 2]])
    T = NaturalInertia(["b"], [range(12)], [range(7)]).energy(0.0, np.zeros(12), qd, p)
    assert np.isclose(T, 0.5 * m * v @ v + 0.5 * w @ (A @ Jb @ A.T) @ w, rtol=1e-13)


def pendulum(section, integrator):
    """A heavy body on a spherical joint (``section``: "natural_bodies" or "bodies")."""
    body = {"name": "bob", "mass": 1.5, "inertia": [0.02, 0.05, 0.06], "points": {"P": [-0.4, 0.05, 0.0]},
            "initial": {"position": [0.4, -0.05, 0.0], "bryant": [0.2, 0.0, 0.1]},
            "initial_velocity": {"angular_velocity": [1.0, 0.5, 2.0]}, "independent": ["rx", "ry", "rz"]}
    return toml("heavy-pendulum", {"O": [0.0, 0.0, 0.0]}, **{"natural" if section == "natural_bodies" else "bodies":
                                                             [body]},
                joints=[spherical("O", "ground.O", "bob.P")],
                simulation={"t_end": 0.3, "dt": 1e-3, "integrator": integrator})


def test_natural_pendulum_follows_euler_pendulum(tmp_path):
    """Same body, same initial state (the given orientation and angular velocity): COM
    paths agree to the two schemes' discretization error."""
    out = {}
    for section, integrator in (("natural_bodies", "variational"), ("bodies", "trapezoidal")):
        f = tmp_path / f"{section}.toml"
        f.write_text(pendulum(section, integrator))
        pr = Problem(load_config(str(f)))
        out[section] = pr.forward().q[:, 0:3]
    d = np.max(np.abs(out["natural_bodies"] - out["bodies"]))
    assert np.max(np.abs(out["bodies"][-1] - out["bodies"][0])) > 0.1        # it moved
    print(f"max COM difference {d:.2e} m")
    assert d < 1e-4, d


def on_beam(joint):
    return toml("natural-on-beam", {"A": [0.0, 0.0, 0.0]},
                beams=[beam("beam", 1.0, 3, {"shape": "square", "side": 0.04}, 4000.0, 1.0e8, [0.0, 0.0, 0.0],
                            [1.0, 0.0, 0.0], omega=[0.0, 0.0, 1.0], elastic="conservative")],
                natural=[{"name": "box", "mass": 0.8, "inertia": [0.004, 0.006, 0.008],
                          "points": {"P": [-0.1, 0.0, 0.0]}, "initial": {"position": [1.1, 0.0, 0.0]},
                          "independent": ["rx", "ry", "rz"] if joint == "spherical" else ["rx"]}],
                joints=[spherical("A", "ground.A", "beam.root"),
                        {"type": joint, "name": "tip", "a": "box.P", "b": "beam.tip"}],
                simulation={"t_end": 0.1, "dt": 1e-2, "integrator": "variational"},
                design=[("side", "spatial.beams.beam.section.side"), ("m", "spatial.natural_bodies.box.mass"),
                        ("Jyy", "spatial.natural_bodies.box.inertia.yy"),
                        ("Px", "spatial.natural_bodies.box.points.P.x")],
                objectives=[{"name": "box_speed", "integrand": "point_velocity_sq", "point": "box.com"},
                            {"name": "stress", "integrand": "stress_ks", "body": "beam", "ks_rho": 1e-4},
                            {"name": "tip_load", "integrand": "reaction_sq", "joint": "tip"}])


@pytest.mark.parametrize("joint", ["spherical", "rigid"])
def test_natural_body_on_beam_gradients(tmp_path, joint):
    f = tmp_path / "m.toml"
    f.write_text(on_beam(joint))             # weld: the body's independent rows are ["rx"] only
    pr = Problem(load_config(str(f)))
    # no complex step here: its error follows Newton's stopping point (the imaginary part
    # converges with the real one), measured 4e-10 on this model — too close to 1e-9
    adj = assert_gradients_agree(pr, adj_cs=None, fd_step=5e-6, tag=f"{joint}/")
    assert np.all(np.abs(adj["box_speed"]) > 0)


def rigid_spring_beam(law):
    return toml("rigid-spring-beam-3d", {"A": [0.0, 0.0, 0.0], "D": [0.6, 0.3, 0.0]},
                natural=[{"name": "bar", "mass": 1.6, "inertia": [1e-5, 0.0133, 0.0133],
                          "points": {"A": [-0.15, 0.0, 0.0], "B": [0.15, 0.0, 0.0]},
                          "initial": {"position": [0.15, 0.0, 0.0]},
                          "initial_velocity": {"angular_velocity": [0.0, 0.0, 2.0]}, "independent": ["rx", "ry", "rz"]}],
                beams=[beam("beam", 0.4, 2, {"shape": "square", "side": 0.01}, 3700.0, 7.0e7, [0.6, 0.3, 0.0],
                            [-0.6, -0.8, 0.0], omega=[0.0, 0.0, -5.0], elastic="conservative")],
                joints=[spherical("A", "ground.A", "bar.A"), spherical("D", "ground.D", "beam.root")],
                forces=[{"type": "spring_damper", "name": "BC", "a": "bar.B", "b": "beam.tip", "law": law,
                         "stiffness": 100.0, "damping": 2.0, "length": 0.1}],
                simulation={"t_end": 0.05, "dt": 5e-3, "integrator": "variational"},
                design=[("k", "spatial.forces.BC.stiffness"), ("c", "spatial.forces.BC.damping"),
                        ("Dx", "spatial.ground.points.D.x"), ("L", "spatial.beams.beam.length")],
                objectives=[{"name": "dB", "integrand": "point_velocity_sq", "point": "bar.B"},
                            {"name": "spring", "integrand": "stress_ks", "body": "beam", "ks_rho": 1e-4}])


@pytest.mark.parametrize("law", ["relative", "linear"])
def test_rigid_spring_beam_gradients(tmp_path, law):
    """Seed §6.2's assembly in 3-D: a natural-coordinate bar and a beam on spherical ground
    joints, joined by a spring-damper (law "relative": the seed's damper on the whole
    relative velocity, Eq. 43; "linear": on ℓ̇) from the bar's end to the beam's tip;
    variational integrator.  Bounds as above."""
    f = tmp_path / "rsb.toml"
    f.write_text(rigid_spring_beam(law))
    pr = Problem(load_config(str(f)))
    assert "SpatialNaturalBeamSpringDamper" in pr.sys.describe()["components"]
    adj = assert_gradients_agree(pr, adj_cs=None, fd_step=5e-6, tag=f"{law}/")
    assert np.all(np.abs(adj["dB"]) > 0)


def test_relative_damper_acts_on_the_whole_relative_velocity():
    """Seed Eq. 43/65: with the points at rest distance (no spring force) and a relative
    velocity w across the line, law "relative" gives the force −c w on C (the body's
    translational rows), law "linear" none (ℓ̇ = 0)."""
    from parmbs.flexible.ancf3d_joints import SPRINGS
    cls = SPRINGS[("natural", "natural")]
    q = np.zeros(24)
    q[3:12] = np.eye(3).reshape(-1)
    q[12:15] = [1.0, 0.0, 0.0]
    q[15:24] = np.eye(3).reshape(-1)
    v = np.zeros(24)
    w = np.array([0.0, 0.3, -0.2])
    v[0:3] = w                                       # body a translates across the line
    p = np.r_[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 50.0, 4.0, 1.0]   # s'_a, s'_b, k, c, ℓ₀ = distance
    for law, expect in (("relative", 4.0 * w), ("linear", 0.0 * w)):
        r = cls(["s"], [range(24)], [range(9)], law=law).r(0.0, q, v, 0 * v, p)
        assert np.allclose(r[0:3], expect, atol=1e-14), (law, r[0:3])     # r = −Q: +c w
