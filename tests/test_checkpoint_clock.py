"""The adjoint checkpoint write is collective, and *when* it happens is decided by a
clock: rank 0's decision is the one every rank follows (CheckpointStore.save_adjoint).
Run under ``mpirun -n 2`` with the ranks' clocks made to disagree as far as possible
(rank 0's clock stands still, rank 1's jumps an hour per reading): before, rank 1
entered the write's broadcast at every step while rank 0 went on stepping, and the job
hung; now it finishes with the gradient of a run on 2 ranks with true clocks.

The reference was a serial run: MUMPS on 2 ranks and PETSc's LU on 1 round differently
(1.4e-11 relative here; 1.03e-10 measured against rtol 1e-10 on an AVX-512 machine, where
numpy's SVML noise added to it, parmbs/_determinism.py).  Against a 2-rank run the only
difference left is the run-to-run spread of 2-rank runs (README "Same input, same
bytes": usually none, at most 8e-12 relative measured), so rtol 1e-10 has a margin ≥ 10."""
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
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_mpi_yield_when_idle": "1", "PARMBS_CHECKPOINT_INTERVAL": "10"}
    ref = subprocess.run([mpirun, "--oversubscribe", "-n", "2", sys.executable, "-m", "parmbs", "gradient", FIVEBAR,
                          *SETS, "--set", f"checkpoint.file={tmp_path / 'ref.h5'}", "--json",
                          str(tmp_path / "ref.json")], capture_output=True, text=True, timeout=150, env=env,
                         cwd=tmp_path)
    assert ref.returncode == 0, ref.stderr[-2000:]
    script = tmp_path / "skew.py"
    script.write_text(SCRIPT)
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
