"""The adjoint checkpoint write is collective, and *when* it happens is decided by a
clock: rank 0's decision is the one every rank follows (CheckpointStore.save_adjoint).
Run under ``mpirun -n 2`` with the ranks' clocks made to disagree as far as possible
(rank 0's clock stands still, rank 1's jumps an hour per reading): before, rank 1
entered the write's broadcast at every step while rank 0 went on stepping, and the job
hung; now it finishes with the gradient of a serial run."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
FIVEBAR = str(ROOT / "configs" / "fivebar.toml")
SETS = ["--set", "simulation.t_end=0.05", "--set", "checkpoint.schedule=every:5"]

SCRIPT = """
import itertools, sys, time
from mpi4py import MPI
from parmbs import cli
import parmbs.checkpoint.store as store

rank = MPI.COMM_WORLD.Get_rank()
ticks = itertools.count()
fake = (lambda: 0.0) if rank == 0 else (lambda: 3600.0 * next(ticks))
store.time = type("FakeTime", (), {"monotonic": staticmethod(fake)})
sys.exit(cli.main(sys.argv[1:]))
"""


def _grad(path):
    doc = json.loads(Path(path).read_text())
    return {o: np.array(list(d["gradient"].values())) for o, d in doc["objectives"].items()}


def test_ranks_with_disagreeing_clocks_write_together(tmp_path):
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        pytest.skip("mpirun not installed")
    from parmbs.cli import main
    assert main(["gradient", FIVEBAR, *SETS, "--set", f"checkpoint.file={tmp_path / 'ref.h5'}",
                 "--json", str(tmp_path / "ref.json")]) == 0
    script = tmp_path / "skew.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_mpi_yield_when_idle": "1", "PARMBS_CHECKPOINT_INTERVAL": "10"}
    cmd = [mpirun, "--oversubscribe", "-n", "2", sys.executable, str(script), "gradient", FIVEBAR, *SETS,
           "--set", f"checkpoint.file={tmp_path / 'run.h5'}", "--json", str(tmp_path / "run.json")]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=150, env=env, cwd=tmp_path)
    except subprocess.TimeoutExpired:
        pytest.fail("mpirun -n 2 with disagreeing clocks hung in the adjoint checkpoint write")
    assert r.returncode == 0, r.stderr[-2000:]
    ref, got = _grad(tmp_path / "ref.json"), _grad(tmp_path / "run.json")
    for name in ref:
        np.testing.assert_allclose(got[name], ref[name], rtol=1e-10, atol=1e-14)
