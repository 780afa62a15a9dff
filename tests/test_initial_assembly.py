"""Initial assembly of a geometry no configuration satisfies: one clear message, exit 2
(the tolerance on |Φ| is scaled by the guess, so a diverged Newton run cannot pass)."""
from pathlib import Path

import pytest

from cli_helpers import parmbs_in_process

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("o4x", ["20.0", "200.0"])
def test_impossible_geometry_exits_2(o4x, tmp_path):
    r = parmbs_in_process("simulate", str(ROOT / "configs" / "fourbar.toml"),    # (tests/cli_helpers.py)
                          "--set", f"ground.points.O4=[{o4x},0.0]", "--set", "simulation.t_end=0.01", cwd=tmp_path)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert "fourbar.toml: bodies.*.initial: initial assembly did not converge" in r.stderr
