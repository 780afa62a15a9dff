"""Initial assembly of a geometry no configuration satisfies: one clear message, exit 2
(the tolerance on |Φ| is scaled by the guess, so a diverged Newton run cannot pass)."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("o4x", ["20.0", "200.0"])
def test_impossible_geometry_exits_2(o4x, tmp_path):
    r = subprocess.run([sys.executable, "-m", "parmbs", "simulate", str(ROOT / "configs" / "fourbar.toml"),
                        "--set", f"ground.points.O4=[{o4x},0.0]", "--set", "simulation.t_end=0.01"],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert "fourbar.toml: bodies.*.initial: initial assembly did not converge" in r.stderr
