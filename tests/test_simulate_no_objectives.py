"""`parmbs simulate -o` on a model without objectives writes and resumes its trajectory
(the forward seeds no adjoint record then: there is nothing to differentiate)."""
import subprocess
import sys
from pathlib import Path

import h5py

ROOT = Path(__file__).resolve().parents[1]


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "parmbs", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def test_simulate_output_without_objectives(tmp_path):
    text = (ROOT / "configs" / "pendulum.toml").read_text()
    cfg = tmp_path / "plain.toml"
    cfg.write_text(text.split("[[objectives]]")[0])     # objectives are the file's last tables
    sets = ["--set", "simulation.t_end=0.02", "--set", "simulation.progress=false"]
    r = _cli("simulate", str(cfg), "-o", "run.h5", *sets, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    with h5py.File(tmp_path / "run.h5", "r") as f:
        q = f["/trajectory/q"][...]
    assert q.shape[0] == 21
    r = _cli("simulate", str(cfg), "--restart", "run.h5", *sets, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
