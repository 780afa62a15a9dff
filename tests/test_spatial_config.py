"""Bad [spatial] input: exit code 2, one line naming the file and the key, no traceback
(config/spatial_schema.py, spatial_checks.py, paths.py, spatial/spatial_set.py)."""
import pytest

from parmbs.cli import main
from parmbs.config import load_config

BASE = """
[model]
name = "bad"
[spatial]
gravity = [0.0, 0.0, -9.81]
[spatial.ground]
points = { O = [0.0, 0.0, 0.0] }
axes = { z = [0.0, 0.0, 1.0] }
[[spatial.bodies]]
name = "arm"
mass = 1.0
inertia = [0.1, 0.1, 0.02]
points = { A = [0.0, 0.0, 0.5] }
axes = { u = [0.0, 0.0, 1.0] }
initial = { position = [0.0, 0.0, -0.5] }
[[spatial.joints]]
type = "revolute"
name = "hinge"
a = "ground.O"
b = "arm.A"
axis_a = "ground.z"
axis_b = "arm.u"
[simulation]
t_end = 0.01
dt = 1e-3
"""

CASES = [
    ("dangling point", ('b = "arm.A"', 'b = "arm.X"'), "spatial.joints.hinge.b", "unknown point 'X'"),
    ("dangling body", ('b = "arm.A"', 'b = "leg.A"'), "spatial.joints.hinge.b", "unknown spatial body 'leg'"),
    ("zero axis", ("axes = { u = [0.0, 0.0, 1.0] }", "axes = { u = [0.0, 0.0, 0.0] }"),
     "spatial.bodies.arm.axes.u", "nonzero"),
    ("axis on the other body", ('axis_a = "ground.z"', 'axis_a = "arm.u"'), "spatial.joints.hinge.axis_a",
     "same body"),
    ("unknown axis", ('axis_b = "arm.u"', 'axis_b = "arm.w"'), "spatial.joints.hinge.axis_b", "unknown axis 'w'"),
    ("non-positive mass", ("mass = 1.0", "mass = 0.0"), "spatial.bodies.arm.mass", "> 0"),
    ("negative principal inertia", ("inertia = [0.1, 0.1, 0.02]", "inertia = [0.1, -0.1, 0.02]"),
     "spatial.bodies.arm.inertia", "must be > 0"),
    ("malformed inertia", ("inertia = [0.1, 0.1, 0.02]", "inertia = [0.1, 0.1]"),
     "spatial.bodies.arm.inertia", "expected [J_xx, J_yy, J_zz]"),
    ("non-SPD inertia", ("inertia = [0.1, 0.1, 0.02]", "inertia = [[0.1, 0.2, 0.0], [0.2, 0.1, 0.0], [0.0, 0.0, 0.1]]"),
     "spatial.bodies.arm.inertia", "positive definite"),
    ("asymmetric inertia", ("inertia = [0.1, 0.1, 0.02]", "inertia = [[0.1, 0.01, 0.0], [0.0, 0.1, 0.0], [0.0, 0.0, 0.1]]"),
     "spatial.bodies.arm.inertia", "symmetric"),
    ("non-unit orientation", ("initial = { position = [0.0, 0.0, -0.5] }",
                              "initial = { position = [0.0, 0.0, -0.5], orientation = [1.0, 0.1, 0.0, 0.0] }"),
     "spatial.bodies.arm.initial", "unit Euler parameters"),
    ("two orientations", ("initial = { position = [0.0, 0.0, -0.5] }",
                          "initial = { position = [0.0, 0.0, -0.5], orientation = [1.0, 0.0, 0.0, 0.0], bryant = [0.0, 0.0, 0.0] }"),
     "spatial.bodies.arm.initial", "either"),
    ("unknown joint type", ('type = "revolute"', 'type = "hinge"'), "spatial.joints.hinge.type", "unknown type 'hinge'"),
    ("axes on a spherical joint", ('type = "revolute"\nname = "hinge"', 'type = "spherical"\nname = "hinge"'),
     "spatial.joints.hinge", "unknown key"),
    ("ground named body", ('name = "arm"', 'name = "ground"'), "spatial.bodies.ground.name", "reserved"),
    ("principal inertia has no xy", ("[simulation]", '[[design]]\nname = "d"\npath = "spatial.bodies.arm.inertia.xy"\n[simulation]'),
     "design.d.path", "principal inertia has no 'xy'"),
    ("unknown design body", ("[simulation]", '[[design]]\nname = "d"\npath = "spatial.bodies.leg.mass"\n[simulation]'),
     "design.d.path", "no spatial body named 'leg'"),
    ("independent on some bodies only", ("[[spatial.joints]]", '[[spatial.bodies]]\nname = "b2"\nmass = 1.0\n'
                                         'inertia = [0.1, 0.1, 0.1]\nindependent = ["x"]\n[[spatial.joints]]'),
     "spatial.bodies.arm.independent", "every spatial body"),
]


@pytest.mark.parametrize("what,edit,key,text", CASES, ids=[c[0] for c in CASES])
def test_bad_spatial_input_exits_2(tmp_path, capsys, what, edit, key, text):
    assert edit[0] in BASE, what
    f = tmp_path / "bad.toml"
    f.write_text(BASE.replace(edit[0], edit[1], 1))
    assert main(["info", str(f)]) == 2
    err = capsys.readouterr().err.strip()
    print(err)
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert f"{f}: {key}" in err, err
    assert text in err, err


def test_driver_needs_a_revolute_and_universal_needs_perpendicular_axes(tmp_path, capsys):
    f = tmp_path / "bad.toml"
    f.write_text(BASE.replace('type = "revolute"', 'type = "spherical"').replace('axis_a = "ground.z"\naxis_b = "arm.u"\n', "")
                 + '[[spatial.joints]]\ntype = "driver"\nname = "steer"\njoint = "hinge"\n'
                   'function = { type = "polynomial", coefficients = [0.0, 1.0] }\n')
    assert main(["info", str(f)]) == 2
    err = capsys.readouterr().err
    assert f"{f}: spatial.joints.steer.joint: 'hinge' is not a revolute or cylindrical joint" in err
    f.write_text(BASE.replace('type = "revolute"', 'type = "universal"'))   # u ∥ z: not perpendicular
    assert main(["info", str(f)]) == 2
    err = capsys.readouterr().err
    assert "spatial.joints.hinge.axis_b" in err and "perpendicular" in err, err


def test_good_base_and_design_paths(tmp_path):
    """The base model loads; spatial design paths resolve; with_value of an off-diagonal
    inertia keeps the matrix symmetric."""
    f = tmp_path / "ok.toml"
    f.write_text(BASE.replace("inertia = [0.1, 0.1, 0.02]",
                              "inertia = [[0.1, 0.01, 0.0], [0.01, 0.1, 0.0], [0.0, 0.0, 0.02]]"))
    assert main(["info", str(f)]) == 0
    cfg = load_config(str(f))
    assert cfg.resolve_path("spatial.bodies.arm.inertia.xy") == 0.01
    assert cfg.resolve_path("spatial.bodies.arm.points.A.z") == 0.5
    assert cfg.resolve_path("spatial.gravity.z") == -9.81
    assert cfg.resolve_path("spatial.ground.points.O.y") == 0.0
    new = cfg.with_value("spatial.bodies.arm.inertia.xy", 0.02)
    J = new.spatial.bodies[0].inertia
    assert J[0][1] == J[1][0] == 0.02


def test_set_overrides_address_3_vectors(tmp_path):
    """--set spatial.gravity.z=… and a body point's z (x, y, z of 3-vectors, loader.list_index)."""
    f = tmp_path / "ok.toml"
    f.write_text(BASE)
    cfg = load_config(str(f), ["spatial.gravity.z=-1.62", "spatial.bodies.arm.points.A.z=0.6"])
    assert cfg.spatial.gravity == (0.0, 0.0, -1.62)
    assert cfg.spatial.bodies[0].points["A"] == (0.0, 0.0, 0.6)
