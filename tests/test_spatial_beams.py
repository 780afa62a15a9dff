"""Spatial ANCF beams in models (parmbs/flexible/spatial_beams.py): exact discrete
gradients of the 3-D flexible pendulum (spherical joint ground–beam root) and of a beam
carrying an Euler-parameter body (spherical and weld joints rigid–beam), the
stress_ks objective, and the config errors of ``[[spatial.beams]]``.

Bounds (tests/gradient_checks.py): adjoint vs direct and vs complex step ≤ 1e-9 (the
same linear recursions, ~N κ ε with κ ≲ 1e4 here; measured ≤ 6e-11); adjoint vs central FD
≤ 1e-6 at the relative step δ = 5e-6.  The FD errors, measured on the pendulum over 0.1 s
(the worst component, the section side): truncation C δ², clean δ² from δ = 2e-5 down
(tip speed 1.0e-6, 2.6e-7, 6.4e-8 at δ = 2e-5, 1e-5, 5e-6), and round-off noise N/δ from
the axial strains, which are differences of O(1) positions (ε_mach/strain relative in σ;
below 1e-8 here).  The horizon 0.1 s lets the strains grow to ~1e-3: over 0.03 s
(strains ~1e-4) the noise was N ≈ 1.6e-12 and no step got the stress's FD error below
~3e-7."""
import numpy as np
import pytest

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem

from conftest import CONFIGS
from gradient_checks import assert_gradients_agree, cli_one_line_error
from spatial_flex_models import SOFT, beam, spherical, toml

SHIPPED = str(CONFIGS / "spatial-flexible-pendulum.toml")
@pytest.fixture
def soft(tmp_path):
    f = tmp_path / "soft.toml"
    f.write_text(SOFT)
    return str(f)

SHORT = ["simulation.t_end=0.1", "simulation.dt=1e-2"]
EXTRA = ['design=[{name = "side", path = "spatial.beams.beam.section.side"}, '
         '{name = "rho", path = "spatial.beams.beam.density"}, {name = "E", path = "spatial.beams.beam.E"}, '
         '{name = "length", path = "spatial.beams.beam.length"}, '
         '{name = "Ax", path = "spatial.ground.points.A.x"}, {name = "gz", path = "spatial.gravity.z"}]']


@pytest.mark.parametrize("integrator,elastic", [("variational", "seed"), ("variational", "conservative"),
                                                ("genalpha", "seed")])
def test_pendulum_gradients(soft, integrator, elastic):
    sets = SHORT + EXTRA + [f"simulation.integrator={integrator}", f"spatial.beams.beam.elastic={elastic}"]
    pr = Problem(load_config(soft, sets))
    adj = assert_gradients_agree(pr, adj_cs=1e-9, fd_step=5e-6, tag=f"{integrator}/{elastic}/")
    for o, g in adj.items():
        g = np.asarray(g)
        assert np.all(np.abs(np.delete(g, 4)) > 0), o     # every other design variable moves both objectives
        # moving the pivot A translates the whole motion: neither |ṙ_tip| nor the stresses
        # change; what remains is round-off of the sums (~N ε relative)
        assert abs(g[4]) <= 1e-12 * np.max(np.abs(g)), o


def rigid_on_beam(joint):
    return toml("beam-and-body", {"A": [0.0, 0.0, 0.0]},
                beams=[beam("beam", 0.8, 3, {"shape": "tube", "outer_radius": 0.015, "inner_radius": 0.01},
                            2700.0, 7.0e8, [0.0, 0.0, 0.0], [0.6, 0.0, -0.8], omega=[0.0, 0.0, 2.0])],
                bodies=[{"name": "box", "mass": 2.0, "inertia": [0.02, 0.03, 0.04], "points": {"P": [-0.1, 0.0, 0.0]},
                         "initial": {"position": [0.58, 0.0, -0.64]},
                         "independent": ["rx", "ry", "rz"] if joint == "spherical" else ["rx"]}],
                joints=[spherical("A", "beam.root", "ground.A"), {"type": joint, "name": "tip", "a": "beam.tip",
                                                                   "b": "box.P"}],
                simulation={"t_end": 0.01, "dt": 1e-3, "integrator": "genalpha"},
                design=[("ro", "spatial.beams.beam.section.outer_radius"),
                        ("ri", "spatial.beams.beam.section.inner_radius"), ("m", "spatial.bodies.box.mass"),
                        ("Px", "spatial.bodies.box.points.P.x")],
                objectives=[{"name": "box_acc", "integrand": "vertical_acceleration_sq", "point": "box.com"},
                            {"name": "stress", "terminal": "stress_ks", "body": "beam", "ks_rho": 1e-5}])


@pytest.mark.parametrize("joint", ["spherical", "rigid"])
def test_body_on_beam_gradients(tmp_path, joint):
    """An Euler-parameter body hung from the beam tip (rigid–beam spherical or weld; the
    weld fixes the body's rotation about the beam only through the body's own
    independent rows at t₀, then through dynamics — the beam has no twist)."""
    f = tmp_path / "m.toml"
    f.write_text(rigid_on_beam(joint))       # weld: it fixes the body's orientation but for the twist
    pr = Problem(load_config(str(f)))
    # FD steps are absolute below |ρ| = 1 (Problem.finite_differences): the radii (1e-2)
    # move by 5e-7 (relative 4e-5), where the measured truncation is ≤ 3e-8 (δ² from
    # 2e-6 down) and the noise of the mass and point columns ≤ 1e-8
    assert_gradients_agree(pr, adj_cs=1e-9, fd_step=5e-7, tag=f"{joint}/")


def test_stress_ks_bounds_the_largest_axial_stress(soft):
    """KS ≥ max |σ_e| ≥ KS − ln(2 n_el)/ρ at the last state of a run (the terminal term
    evaluated by hand from the stored coordinates)."""
    from parmbs.flexible import ancf3d
    cfg = load_config(soft, SHORT)
    pr = Problem(cfg)
    pr.forward()
    sb = pr.sys.spatial_beams
    qi, pi = sb.stress_layout()
    q = pr.sys.extend(pr.traj.q[-1])
    sig = ancf3d.axial_stress(q[qi], pr.sys.p[pi])
    assert np.max(np.abs(sig)) > 0
    k = ancf3d.ks(sig, 1e-3)
    assert np.max(np.abs(sig)) <= k <= np.max(np.abs(sig)) + np.log(2 * len(sig)) / 1e-3


@pytest.mark.parametrize("sets,key", [
    (['spatial.beams.beam.section={shape = "tube", outer_radius = 0.015, inner_radius = 0.02}'],
     "spatial.beams.beam.section"),
    (['spatial.joints.A.b="beam.middle"'], "spatial.joints.A.b"),
    (["objectives.stress.ks_rho=-1.0"], "objectives.stress.ks_rho"),
    (['objectives.stress.body="nobeam"'], "objectives.stress.body"),
])
def test_config_errors(tmp_path, sets, key):
    import shutil
    shutil.copy(SHIPPED, tmp_path / "p.toml")
    extra = [a for s in sets for a in ("--set", s)]
    cli_one_line_error(["info", "p.toml", *extra], tmp_path, key)


def test_beam_beam_spherical_gradients(tmp_path):
    """Two beams chained by a spherical joint (root of the second at the tip of the
    first, first hung from ground): the beam–beam joint in a model, variational
    integrator; same bounds and FD step as the pendulum."""
    text = toml("chain", {"A": [0.0, 0.0, 0.0]},
                beams=[beam("beam", 1.2, 5, {"shape": "square", "side": 0.05}, 4000.0, 1.0e7, [0.0, 0.0, 0.0],
                            [1.0, 0.0, 0.0], omega=[0.0, 0.0, 1.0]),
                       beam("arm", 0.6, 2, {"shape": "circle", "radius": 0.03}, 4000.0, 1.0e7, [1.2, 0.0, 0.0],
                            [0.0, 1.0, 0.0])],
                joints=[spherical("A", "ground.A", "beam.root"), spherical("elbow", "beam.tip", "arm.root")],
                simulation={"t_end": 1.0, "dt": 1e-3, "integrator": "variational"},
                design=[("side", "spatial.beams.beam.section.side"), ("rho", "spatial.beams.beam.density"),
                        ("E", "spatial.beams.beam.E"), ("length", "spatial.beams.beam.length"),
                        ("arm_r", "spatial.beams.arm.section.radius")],
                objectives=[{"name": "tip_speed", "integrand": "point_velocity_sq", "point": "beam.tip"},
                            {"name": "stress", "integrand": "stress_ks", "body": "beam", "ks_rho": 1e-3}])
    f = tmp_path / "chain.toml"
    f.write_text(text)
    pr = Problem(load_config(str(f), SHORT))
    assert "SpatialBeamBeamSpherical" in pr.sys.describe()["components"]
    assert_gradients_agree(pr, adj_cs=1e-9, fd_step=5e-6, tag="chain/")
