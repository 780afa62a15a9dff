"""A bug (unexpected exception) on one rank of `mpirun -n 2 parmbs …` aborts the whole
job with the traceback, instead of leaving the other rank waiting in a collective."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import sys
from parmbs import cli
from parmbs._petsc import PETSc

def boom(args):
    comm = PETSc.COMM_WORLD.tompi4py()
    if comm.Get_rank() == 0:
        raise RuntimeError("injected bug")
    comm.barrier()          # rank 1 would wait here forever without the abort
    return 0

cli.COMMANDS["info"] = boom
sys.exit(cli.main(["info", sys.argv[1]]))
"""


def test_exception_on_one_rank_aborts_the_job(tmp_path):
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        pytest.skip("mpirun not installed")
    script = tmp_path / "boom.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_mpi_yield_when_idle": "1"}
    r = subprocess.run([mpirun, "--oversubscribe", "-n", "2", sys.executable, str(script),
                        str(ROOT / "configs" / "fourbar.toml")],
                       capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert r.returncode != 0
    assert "injected bug" in r.stderr                       # the traceback is shown
    assert "unexpected exception on rank 0" in r.stderr
