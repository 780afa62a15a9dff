"""Tests of parmbs.config: loading, defaults, overrides, design paths, and errors.

Every bad input must raise ConfigError whose ``key`` names the offending entry
(by entity name) and whose text names the file.
"""
from __future__ import annotations

import hashlib

import pytest

from parmbs.config import Config, ConfigError, load_config

PENDULUM = """\
[model]
name = "double_pendulum"

[ground]
points = { O = [0.0, 0.0], P = [1.0, 0.0] }

[[bodies]]
name = "A1"
mass = 1.0
inertia = 0.1
com = [0.5, 0.0]
points = { O = [0.0, 0.0], B = [1.0, 0.0] }
independent = ["angle"]

[[bodies]]
name = "A2"
mass = 2.0
inertia = 0.2
points = { B = [0.0, 0.0], C = [1.0, 0.0] }
initial = { x = 1.5 }

[[joints]]
type = "revolute"
name = "J1"
a = "ground.O"
b = "A1.O"

[[joints]]
type = "revolute"
name = "J2"
a = "A1.B"
b = "A2.B"

[[forces]]
type = "spring"
name = "S1"
a = "ground.P"
b = "A2.C"
stiffness = 10.0
length = 1.0

[simulation]
t_end = 1.0
dt = 1e-3

[[design]]
name = "m1"
path = "bodies.A1.mass"
lower = 0.5
upper = 2.0

[[objectives]]
name = "psi"
integrand = "point_deviation_sq"
point = "A2.C"
"""

MINIMAL = """\
[model]
name = "one"

[[bodies]]
name = "B"
mass = 1
inertia = 2
"""

RICH_EXTRA = """
[[joints]]
type = "driver"
name = "D1"
coordinate = "A2.angle"
function = { type = "polynomial", coefficients = [0.0, 1.0, 0.5] }

[[forces]]
type = "force"
name = "F1"
point = "A2.C"
value = [0.0, -3.0]
function = { type = "harmonic", amplitude = 2.0, omega = 3.0 }

[[forces]]
type = "torque"
name = "T1"
body = "A1"
value = 0.7

[[forces]]
type = "rotational_spring"
name = "R1"
a = "ground"
b = "A1"
stiffness = 4.0
angle = 0.25
"""


def write(tmp_path, text, name="cfg.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def edit(text, replacements=(), append=""):
    for old, new in replacements:
        assert text.count(old) == 1, f"anchor {old!r} not unique in base config"
        text = text.replace(old, new)
    return text + append


# ----------------------------------------------------------------------------- bad inputs

BAD = [
    # id, replacements, appended text, overrides, expected key
    ("unknown-top-level-key", [], "\n[foo]\nbar = 1\n", [], "foo"),
    ("unknown-key-in-body", [("mass = 1.0", "mass = 1.0\nmas = 2.0")], "", [], "bodies.A1.mas"),
    ("mass-is-string", [("mass = 1.0", 'mass = "heavy"')], "", [], "bodies.A1.mass"),
    ("mass-is-numeric-string", [("mass = 1.0", 'mass = "1.0"')], "", [], "bodies.A1.mass"),
    ("bool-where-number", [("inertia = 0.1", "inertia = true")], "", [], "bodies.A1.inertia"),
    ("negative-mass", [("mass = 1.0", "mass = -1.0")], "", [], "bodies.A1.mass"),
    ("zero-inertia", [("inertia = 0.2", "inertia = 0")], "", [], "bodies.A2.inertia"),
    ("nan-in-vector", [("com = [0.5, 0.0]", "com = [nan, 0.0]")], "", [], "bodies.A1.com[0]"),
    ("inf-t_end", [("t_end = 1.0", "t_end = inf")], "", [], "simulation.t_end"),
    ("vector-too-long", [('name = "double_pendulum"', 'name = "d"\ngravity = [0, 1, 2]')], "", [],
     "model.gravity"),
    ("dangling-body-in-joint", [('b = "A2.B"', 'b = "A9.B"')], "", [], "joints.J2.b"),
    ("dangling-point-in-joint", [('b = "A2.B"', 'b = "A2.X"')], "", [], "joints.J2.b"),
    ("malformed-point-ref", [('b = "A2.B"', 'b = "A2"')], "", [], "joints.J2.b"),
    ("joint-ground-ground", [('b = "A1.O"', 'b = "ground.P"')], "", [], "joints.J1.b"),
    ("joint-same-body", [('b = "A2.B"', 'b = "A1.O"')], "", [], "joints.J2.b"),
    ("duplicate-body-name", [('name = "A2"', 'name = "A1"')], "", [], "bodies.A1.name"),
    ("body-named-ground", [('name = "A2"', 'name = "ground"')], "", [], "bodies.ground.name"),
    ("missing-model", [('[model]\nname = "double_pendulum"\n', "")], "", [], "model"),
    ("dt-zero", [("dt = 1e-3", "dt = 0.0")], "", [], "simulation.dt"),
    ("dt-negative", [("dt = 1e-3", "dt = -1e-3")], "", [], "simulation.dt"),
    ("dt-exceeds-t_end", [("dt = 1e-3", "dt = 2.0")], "", [], "simulation.dt"),
    ("integrator-formulation-mismatch", [("dt = 1e-3", 'dt = 1e-3\nformulation = "penalty"')], "", [],
     "simulation.integrator"),
    ("rho_inf-too-big", [("dt = 1e-3", "dt = 1e-3\nrho_inf = 1.5")], "", [], "simulation.rho_inf"),
    ("unknown-integrator", [("dt = 1e-3", 'dt = 1e-3\nintegrator = "euler"')], "", [], "simulation.integrator"),
    ("unknown-stabilization", [("dt = 1e-3", 'dt = 1e-3\nstabilization = "baumgarte"')], "", [],
     "simulation.stabilization"),
    ("ggl-with-penalty", [("dt = 1e-3", 'dt = 1e-3\nformulation = "penalty"\nintegrator = "ts-cn"\n'
                                        'stabilization = "ggl"')], "", [], "simulation.stabilization"),
    ("ggl-with-variational", [], "", ["simulation.integrator=variational", "simulation.stabilization=ggl"],
     "simulation.stabilization"),
    ("genalpha_form-unknown", [], "", ['simulation.integrator=genalpha', 'simulation.genalpha_form=bruls'],
     "simulation.genalpha_form"),
    ("genalpha_form-with-ggl", [], "", ['simulation.integrator=genalpha', 'simulation.stabilization=ggl',
                                        'simulation.genalpha_form=arnold-bruls'], "simulation.genalpha_form"),
    ("output_every-float", [("dt = 1e-3", "dt = 1e-3\noutput_every = 1.5")], "", [], "simulation.output_every"),
    ("newton-max_it-zero", [("dt = 1e-3", "dt = 1e-3\nnewton = { max_it = 0 }")], "", [],
     "simulation.newton.max_it"),
    ("design-path-bad-field", [('path = "bodies.A1.mass"', 'path = "bodies.A1.color"')], "", [], "design.m1.path"),
    ("design-path-dangling-body", [('path = "bodies.A1.mass"', 'path = "bodies.A9.mass"')], "", [],
     "design.m1.path"),
    ("design-path-vector-not-scalar", [('path = "bodies.A1.mass"', 'path = "bodies.A1.com"')], "", [],
     "design.m1.path"),
    ("design-lower-ge-upper", [("lower = 0.5", "lower = 2.0")], "", [], "design.m1.upper"),
    ("objective-unknown-point", [('point = "A2.C"', 'point = "A2.Z"')], "", [], "objectives.psi.point"),
    ("objective-missing-point", [('point = "A2.C"\n', "")], "", [], "objectives.psi.point"),
    ("objective-no-kind", [('integrand = "point_deviation_sq"\n', "")], "", [], "objectives.psi.integrand"),
    ("objective-unknown-spring", [('integrand = "point_deviation_sq"', 'terminal = "spring_elongation_sq"\n'
                                   'force = "S9"')], "", [], "objectives.psi.force"),
    ("optimize-unknown-objective", [], '\n[optimize]\nobjective = "nope"\n', [], "optimize.objective"),
    ("set-unknown-entry", [], "", ["bodies.ZZ.mass=2"], "bodies.ZZ.mass"),
    ("set-unknown-key", [], "", ["simulation.foo=1"], "simulation.foo"),
    ("set-below-scalar", [], "", ["simulation.dt.x=1"], "simulation.dt.x"),
    ("set-wrong-type", [], "", ["simulation.dt=fast"], "simulation.dt"),
    ("set-no-equals", [], "", ["simulation.dt"], "<set>"),
    ("toml-syntax-error", [("mass = 1.0", "mass = = 1.0")], "", [], "<toml>"),
    ("schedule-revolve-0", [], '\n[checkpoint]\nschedule = "revolve:0"\n', [], "checkpoint.schedule"),
    ("schedule-garbage", [], '\n[checkpoint]\nschedule = "sometimes"\n', [], "checkpoint.schedule"),
    ("unknown-force-type", [('type = "spring"', 'type = "bungee"')], "", [], "forces.S1.type"),
    ("unknown-independent-coordinate", [('independent = ["angle"]', 'independent = ["theta"]')], "", [],
     "bodies.A1.independent[0]"),
    ("duplicate-independent", [('independent = ["angle"]', 'independent = ["x", "x"]')], "", [],
     "bodies.A1.independent"),
    ("driver-unknown-body", [], '\n[[joints]]\ntype = "driver"\nname = "D1"\ncoordinate = "A7.angle"\n'
     'function = { type = "polynomial", coefficients = [0.0] }\n', [], "joints.D1.coordinate"),
    ("driver-empty-polynomial", [], '\n[[joints]]\ntype = "driver"\nname = "D1"\ncoordinate = "A2.angle"\n'
     'function = { type = "polynomial", coefficients = [] }\n', [], "joints.D1.function.coefficients"),
    ("prismatic-zero-axis", [], '\n[[joints]]\ntype = "prismatic"\nname = "P1"\na = "ground.O"\nb = "A2.C"\n'
     "axis = [0.0, 0.0]\n", [], "joints.P1.axis"),
    ("force-on-ground", [], '\n[[forces]]\ntype = "force"\nname = "F1"\npoint = "ground.O"\nvalue = [1, 0]\n',
     [], "forces.F1.point"),
    ("bookkeeping-key-in-file", [], "", ['source="x"'], "source"),
]


@pytest.mark.parametrize("replacements, append, overrides, key", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_input(tmp_path, replacements, append, overrides, key):
    path = write(tmp_path, edit(PENDULUM, replacements, append), name="bad_case.toml")
    with pytest.raises(ConfigError) as info:
        load_config(path, overrides)
    err = info.value
    assert err.key == key, str(err)
    assert "bad_case.toml" in str(err)
    assert str(err) == f"{err.file}: {err.key}: {err.message}"
    assert "\n" not in str(err)
    assert "pydantic" not in str(err).lower() and "errors.pydantic.dev" not in str(err)


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "nowhere.toml")
    assert info.value.key == "<file>"
    assert "nowhere.toml" in str(info.value)


def test_messages_are_readable(tmp_path):
    path = write(tmp_path, edit(PENDULUM, [("mass = 1.0", 'mass = "abc"')]))
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.message == "expected a number, got str 'abc'"

    path = write(tmp_path, edit(PENDULUM, [('b = "A2.B"', 'b = "A2.X"')]))
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.message == "unknown point 'X' on body 'A2' (known: com, B, C)"

    path = write(tmp_path, edit(PENDULUM, [("mass = 1.0", "mass = = 1")]))
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert "line 9" in info.value.message

    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, PENDULUM), ["simulation.dt=fast"])
    assert "from --set simulation.dt=fast" in info.value.message


# ----------------------------------------------------------------------------- good inputs


def test_minimal_config_defaults(tmp_path):
    cfg = load_config(write(tmp_path, MINIMAL))
    assert isinstance(cfg, Config)
    assert cfg.model.gravity == (0.0, -9.81)
    body = cfg.bodies[0]
    assert body.mass == 1.0 and isinstance(body.mass, float)
    assert body.com == (0.0, 0.0) and body.points == {} and body.independent == []
    assert (body.initial.x, body.initial.y, body.initial.angle) == (0.0, 0.0, 0.0)
    assert cfg.ground.points == {} and cfg.joints == [] and cfg.forces == []
    sim = cfg.simulation
    assert (sim.formulation, sim.integrator, sim.rho_inf, sim.beta, sim.gamma) == (
        "index3", "trapezoidal", 0.9, 0.25, 0.5)
    assert sim.newton.max_it == 25 and sim.newton.rtol == 1e-12
    assert sim.petsc_options == {"ksp_type": "preonly", "pc_type": "lu"}
    assert cfg.sensitivity.method == "adjoint" and cfg.sensitivity.fd_step == 1e-6
    assert cfg.checkpoint.schedule == "all" and cfg.checkpoint.file == "run.h5"
    assert cfg.optimize.method == "tao-blmvm" and cfg.parallel.groups == 1
    assert cfg.source.endswith("cfg.toml")


def test_full_config_loads(tmp_path):
    cfg = load_config(write(tmp_path, PENDULUM + RICH_EXTRA))
    assert [j.type for j in cfg.joints] == ["revolute", "revolute", "driver"]
    assert [f.type for f in cfg.forces] == ["spring", "force", "torque", "rotational_spring"]
    assert cfg.forces[1].function.omega == 3.0 and cfg.forces[1].function.phase == 0.0


def test_overrides(tmp_path):
    path = write(tmp_path, PENDULUM)
    cfg = load_config(path, ["simulation.dt=5e-4", "forces.S1.stiffness=50", "bodies.A1.mass=2",
                             "model.gravity=[0,-9.8]", "simulation.integrator=genalpha",
                             "bodies.A2.initial.angle=0.3", "checkpoint.schedule=every:10",
                             "simulation.petsc_options.pc_type=svd"])
    assert cfg.simulation.dt == 5e-4
    assert cfg.forces[0].stiffness == 50.0
    assert cfg.bodies[0].mass == 2.0
    assert cfg.model.gravity == (0.0, -9.8)
    assert cfg.simulation.integrator == "genalpha"
    assert cfg.bodies[1].initial.angle == 0.3 and cfg.bodies[1].initial.x == 1.5
    assert cfg.checkpoint.schedule == "every:10"
    assert cfg.simulation.petsc_options["pc_type"] == "svd"
    # vector components of a vector present in the file
    assert load_config(path, ["bodies.A1.com.y=0.25"]).bodies[0].com == (0.5, 0.25)


def test_sha256_tracks_file_and_overrides(tmp_path):
    path = write(tmp_path, PENDULUM)
    plain = load_config(path)
    assert plain.text_sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    a = load_config(path, ["simulation.dt=5e-4"])
    b = load_config(path, ["simulation.dt=2.5e-4"])
    assert len({plain.text_sha256, a.text_sha256, b.text_sha256}) == 3
    assert load_config(path, ["simulation.dt=5e-4"]).text_sha256 == a.text_sha256


PATHS = {
    "model.gravity.y": -9.81,
    "ground.points.P.x": 1.0,
    "bodies.A1.mass": 1.0,
    "bodies.A2.inertia": 0.2,
    "bodies.A1.com.x": 0.5,
    "bodies.A1.points.B.x": 1.0,
    "bodies.A2.initial.x": 1.5,
    "bodies.A2.initial_velocity.angle": 0.0,
    "forces.S1.stiffness": 10.0,
    "forces.S1.damping": 0.0,
    "forces.S1.length": 1.0,
    "forces.F1.value.y": -3.0,
    "forces.F1.function.omega": 3.0,
    "forces.T1.value": 0.7,
    "forces.R1.angle": 0.25,
    "joints.D1.function.coefficients.2": 0.5,
}


@pytest.mark.parametrize("path, nominal", PATHS.items())
def test_resolve_path_and_with_value(tmp_path, path, nominal):
    cfg = load_config(write(tmp_path, PENDULUM + RICH_EXTRA))
    assert cfg.resolve_path(path) == nominal
    new = cfg.with_value(path, nominal + 0.125)
    assert new.resolve_path(path) == nominal + 0.125
    assert cfg.resolve_path(path) == nominal  # original untouched
    assert new.text_sha256 != cfg.text_sha256 and new.source == cfg.source
    # everything else is unchanged
    back = new.with_value(path, nominal)
    assert back.to_dict() == cfg.to_dict()


def test_with_value_errors(tmp_path):
    cfg = load_config(write(tmp_path, PENDULUM, name="wv.toml"))
    with pytest.raises(ConfigError) as info:
        cfg.with_value("bodies.A1.mass", -1.0)
    assert info.value.key == "bodies.A1.mass" and "wv.toml" in str(info.value)
    with pytest.raises(ConfigError) as info:
        cfg.with_value("bodies.A1.nothing", 1.0)
    assert info.value.key == "bodies.A1.nothing"
    with pytest.raises(ConfigError):
        cfg.resolve_path("simulation.dt")  # not a design path


def test_to_toml_round_trip(tmp_path):
    cfg = load_config(write(tmp_path, PENDULUM + RICH_EXTRA), ["simulation.dt=5e-4"])
    text = cfg.to_toml()
    assert "source" not in text and "text_sha256" not in text
    again = load_config(write(tmp_path, text, name="resolved.toml"))
    assert again.to_dict() == cfg.to_dict()
    assert again == cfg.model_copy(update={"source": again.source, "text_sha256": again.text_sha256})
    # and the resolved text is a fixed point
    assert again.to_toml() == text


def test_file_petsc_options_add_to_the_default(tmp_path):
    """A file's table adds to the direct-LU default, as ``--set`` does: a table holding only
    a MUMPS option used to replace the default and run GMRES + ILU without a word."""
    sim_table = '\n[simulation]\npetsc_options = { pc_factor_mat_solver_type = "mumps" }\n'
    cfg = load_config(write(tmp_path, MINIMAL + sim_table))
    assert cfg.simulation.petsc_options == {"ksp_type": "preonly", "pc_type": "lu",
                                            "pc_factor_mat_solver_type": "mumps"}
    gmres = '\n[simulation]\npetsc_options = { ksp_type = "gmres", pc_type = "ilu" }\n'
    assert load_config(write(tmp_path, MINIMAL + gmres)).simulation.petsc_options == {
        "ksp_type": "gmres", "pc_type": "ilu"}


@pytest.mark.parametrize("table", ['{ pc_type = "ilu" }', '{ ksp_type = "preonly", pc_type = "gamg" }'])
def test_preonly_with_an_inexact_preconditioner_is_refused(tmp_path, table):
    path = write(tmp_path, MINIMAL + f"\n[simulation]\npetsc_options = {table}\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.key == "simulation.petsc_options" and "preonly" in info.value.message
