"""Spatial ANCF beams and natural-coordinate bodies in the XDMF export
(parmbs/io/spatial_flex_view.py, io/xdmf.py), on the double wishbone at t₀:

* each drawn tube ends at its nodes' positions (s₁(0) = s₃(1) = 1, the other shape
  functions 0 there: exact up to a rounding), is straight (at t₀ r′ is along the chord,
  so the Hermite line is the chord: 1e-12 relative) and as long as its configured length
  to the assembly's tolerance (the weld's angle row sets the second tube's chord: Newton
  to 1e-12 relative on O(1) m positions, ≤ 4e-12 of a 0.4 m tube; measured 2.4e-12; 1e-10);
* the drawn chassis points coincide with the roots of the tubes they hold (spherical
  joints chassis.Pj – bj.root; the assembly solves them to Newton's 1e-12 relative, so
  1e-10 m on O(1) m positions);
* ``parmbs export --xdmf`` draws 16 tubes × 4 segments, the chassis' 24 points and
  3 axes and the wheels' 4 points and 3 axes each: 119 cells."""
import os
import subprocess
import sys

import numpy as np

from parmbs.config import load_config
from parmbs.io.spatial_flex_view import beam_lines, natural_bodies
from parmbs.io.xdmf_read import read_xdmf
from parmbs.sensitivity.problem import Problem

from conftest import CONFIGS

CONFIG = str(CONFIGS / "double-wishbone.toml")


def test_tubes_and_chassis_points_at_t0():
    pr = Problem(load_config(CONFIG, ["simulation.t_end=0.001"]))
    pr.forward()
    q0 = pr.traj.q[:1]
    lines = beam_lines(pr.sys, q0)
    assert len(lines) == 16
    bodies = natural_bodies(pr.sys, q0)
    _, chassis, _ = bodies["chassis"]
    for j in range(1, 17):
        line = lines[f"b{j}"][0]
        L = pr.sys.p[pr.sys.spatial_beams.beams[f"b{j}"].p["length"]]
        seg = np.linalg.norm(np.diff(line, axis=0), axis=1)
        nodes = pr.sys.extend(q0[0])[pr.sys.spatial_beams.beams[f"b{j}"].element(0)].reshape(4, 3)
        assert np.max(np.abs(line[[0, -1]] - nodes[[0, 2]])) <= 4 * np.finfo(float).eps, j
        assert abs(seg.sum() - L) <= 1e-10 * L, j
        chord = line[-1] - line[0]
        assert np.linalg.norm(np.cross(line[1:-1] - line[0], chord)) <= 1e-12 * L * L, j
        assert np.linalg.norm(chassis[f"P{j}"][0] - line[0]) <= 1e-10, j


def test_export_draws_tubes_and_bodies(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(CONFIGS.parent)}
    h5, xdmf = tmp_path / "dw.h5", tmp_path / "dw.xdmf"
    for args in (["simulate", CONFIG, "-o", str(h5), "--set", "simulation.t_end=0.002", "-q"],
                 ["export", "--xdmf", str(xdmf), str(h5)]):
        r = subprocess.run([sys.executable, "-m", "parmbs", *args], capture_output=True, text=True, cwd=tmp_path,
                           env=env, timeout=300)
        assert r.returncode == 0, r.stderr
    frames = read_xdmf(str(xdmf))
    assert len(frames) == 3
    assert "119 cells" in r.stdout, r.stdout
