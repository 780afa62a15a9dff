"""The passive dynamic walker (configs/passive-walker.toml, built by
configs/passive_walker_build.py; [Zhu 2014] §5.3.2 on Hsu's data): planar contact,
regularised friction, knee stops and stance locks in one model.

The gradient check runs the first 0.02 s after heel strike on the shipped model's
adaptive steps: the stance foot sinks in (normal law through its onset band, friction
in its slip regime), the trailing foot lifts off through the band and its knee lock
lets go — every branch of the three new force kinds, on the frozen accepted grid.
The gait itself (period, step length against Hsu's fixed point) is measured by
benchmarks/passive_walker.py over whole steps (too slow for the suite).
"""
import subprocess
import sys

import parmbs  # noqa: F401 — first (numpy SIMD determinism: parmbs/_determinism.py)
import numpy as np

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem

from conftest import CONFIGS
from gradient_checks import assert_gradients_agree, cli_one_line_error

BUILD = CONFIGS / "passive_walker_build.py"


def test_shipped_config_is_the_builders_output(tmp_path):
    """configs/passive-walker.toml is what the builder writes (edit the script, not the file)."""
    out = tmp_path / "pw.toml"
    subprocess.run([sys.executable, str(BUILD), str(out)], check=True, timeout=60)
    assert out.read_text() == (CONFIGS / "passive-walker.toml").read_text()


def test_gradients_through_contact_and_lift_off():
    """adjoint = direct ≤ 1e-9 (both solve the same linear recurrences: N κ ε, measured
    ≤ 1e-15); central FD at δ = 3e-5 ≤ 1e-6: the FD error is Newton noise (it grows as δ
    shrinks: max 1e-7 at δ = 3e-5, 3e-7 at 1e-5, 9e-7 at 3e-6 relative to max |∇ψ|, the
    noise 1e-12/2δ amplified by ψ's small gradients); truncation δ² ~ 1e-9."""
    pr = Problem(load_config(str(CONFIGS / "passive-walker.toml"),
                             ["simulation.t_end=0.02", "simulation.progress=false"]))
    tr = pr.forward()
    sysm = pr.sys
    # the run visits the regimes the docstring names: stance foot pressed in, swing foot out
    n = np.array(pr.config.forces[[f.name for f in pr.config.forces].index("foot1")].normal)
    n = n / np.linalg.norm(n)

    def foot_gap(shank):
        i = 3 * sysm.body_index[shank]
        th = tr.q[:, i + 2]
        P = tr.q[:, i:i + 2] + 0.375 * np.stack([np.sin(th), -np.cos(th)], 1)   # foot 0.375 below the com
        return P @ n

    assert foot_gap("shank2")[-1] < -1e-4          # stance foot in contact (≥ 0.1 mm)
    assert foot_gap("shank1")[-1] > 1e-3           # trailing foot lifted (≥ 1 mm)
    assert_gradients_agree(pr, adj_cs=None, fd_step=3e-5)


def test_bad_contact_key_is_one_line(tmp_path):
    """A bad contact key is one line naming file and key, exit 2."""
    text = (CONFIGS / "passive-walker.toml").read_text().replace("slip_velocity = 0.01", "slip_velocity = -0.01", 1)
    p = tmp_path / "bad.toml"
    p.write_text(text)
    cli_one_line_error(["info", p], tmp_path, "bad.toml", "forces.foot1.slip_velocity")
