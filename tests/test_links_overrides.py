"""A ``--set`` on a value that a ``[[design]] drives`` expression sets (config/links.py,
``check_overrides``) is an error naming the --set, the driven path and the design
entry — before, the override was silently replaced by the expression (``--set
beams.beam.length=2.0`` on configs/rigid-spring-beam-opt.toml ran length 1.0).
Overrides of the design value itself or of [parameters] stay allowed."""

import pytest

from parmbs.config import ConfigError, load_config

from cli_helpers import parmbs_in_process
from conftest import CONFIGS

RSB = CONFIGS / "rigid-spring-beam-opt.toml"      # D_x drives beams.beam.{initial.x, length, initial.angle}, ...


@pytest.mark.parametrize("override, path, drive", [
    ("beams.beam.length=2.0", "beams.beam.length", "design.D_x.drives[1]"),
    ("beams.0.length=2.0", "beams.beam.length", "design.D_x.drives[1]"),          # by index
    ("beams.beam.initial={x=0.1, y=0.0, angle=3.14}", "beams.beam.initial.x", "design.D_x.drives[0]"),
    ("bodies.cap.initial.angle=0.3", "bodies.cap.initial.angle", "design.D_x.drives[3]"),
    ("beams.beam.initial.y=0.2", "beams.beam.initial.y", "design.D_y.drives[0]"),
])
def test_set_on_a_driven_value_is_an_error(override, path, drive):
    key = "--set " + override.partition("=")[0]
    with pytest.raises(ConfigError) as e:
        load_config(str(RSB), ["simulation.dt=1e-3", override])
    assert e.value.key == key
    assert f"sets {path}, which [[design]] {drive.split('.')[1]!r} drives ({drive}.expression" in e.value.message


@pytest.mark.parametrize("override, path, value", [
    ("ground.points.D.x=1.6", "ground.points.D.x", 1.6),      # the design value itself
    ("parameters.X_C=1.6", "parameters.X_C", None),           # what the expressions read
    ("beams.beam.length=1.0", "beams.beam.length", 1.0),      # the file's value: changes nothing
])
def test_allowed_overrides(override, path, value):
    cfg = load_config(str(RSB), [override])
    if value is not None:
        assert cfg.resolve_path(path) == value
    else:
        assert cfg.parameters["X_C"] == 1.6


def test_cli_one_line_exit_2():
    r = parmbs_in_process("info", str(RSB), "--set", "beams.beam.length=2.0")    # (tests/cli_helpers.py)
    assert r.returncode == 2 and r.stdout == "", (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert lines == [f"parmbs: error: {RSB}: --set beams.beam.length: sets beams.beam.length, which [[design]] "
                     "'D_x' drives (design.D_x.drives[1].expression = 'l') and so overwrites; change the design "
                     "value or a [parameters] entry instead"]
