"""The automatic choice of the rows that hold the given initial velocities (spatial
bodies without ``independent`` lists) is that of exact arithmetic, not of round-off.

Before: LAPACK's pivoted QR broke the exact ties between candidate rows by round-off, so
the every-joint chain started with the base's z-velocity 0.84 or 0.24 depending only on
whether numpy was imported before parmbs (a different OpenBLAS kernel), and a driven
variant's objective changed from 2.05 to 5.74.
"""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from parmbs.spatial.spatial_set import pivoted_rows
from matrix_r_spatial_models import CHAIN

ROOT = Path(__file__).resolve().parents[1]


def test_ties_go_to_the_first_candidate_whatever_the_round_off():
    """Rows with exactly equal norms, perturbed by 1e-14 relative (round-off ≪ the tie
    tolerance 1e-8): the same pick every time, the first of the tied rows."""
    rng = np.random.default_rng(3)
    Q = np.linalg.qr(rng.standard_normal((6, 6)))[0]           # any orthonormal basis
    C = np.vstack([np.eye(6)[[0, 1, 2, 0, 1, 2, 3, 4]], 0.5 * np.eye(6)[[5]]]) @ Q
    picks = {tuple(pivoted_rows(C * (1 + 1e-14 * rng.standard_normal(C.shape)), 6)) for _ in range(50)}
    assert picks == {(0, 1, 2, 6, 7, 8)}


def test_a_clear_winner_is_still_picked():
    """No tie: the longest remaining row wins, as in Businger–Golub pivoting."""
    C = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    assert pivoted_rows(C, 1) == [1]
    assert sorted(pivoted_rows(C, 2)) == [0, 1]


PROBE = """
import sys
if sys.argv[1] == "numpy-first":
    import numpy
import parmbs
from parmbs.config import load_config
from parmbs.model.system import System
s = System(load_config(sys.argv[2], []))
print(sorted(r.names[0] for _, r, _ in s.independent))
"""


def test_the_choice_does_not_depend_on_the_import_order(tmp_path):
    """numpy imported first keeps OpenBLAS's own kernels (parmbs/_determinism.py cannot
    pin them any more): the chosen rows must be the same, and the free base's given
    velocities among them."""
    cfg = tmp_path / "chain.toml"
    cfg.write_text(CHAIN)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests")]))
    env.pop("OPENBLAS_CORETYPE", None)
    out = [subprocess.run([sys.executable, "-c", PROBE, order, str(cfg)], env=env, check=True,
                          capture_output=True, text=True).stdout.strip().splitlines()[-1]
           for order in ("parmbs-first", "numpy-first")]
    assert out[0] == out[1]
    assert all(f"base.{c}" in out[0] for c in ("x", "y", "z", "rx", "ry", "rz"))
