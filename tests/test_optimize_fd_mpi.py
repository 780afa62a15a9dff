"""``optimize.gradient = "fd"`` under mpirun -n 2 on a model too small to distribute
(replicated: every rank holds the whole serial model): the FD columns are split over the
ranks (optimize/driver.py ``_fd_gradients``) and gathered, and the result is the serial
one bit for bit — the §6.2 rigid–spring–beam optimization over 0.02 s, as
tests/test_optimize_fd.py.  A failure in one rank's column ends on both ranks with the
same one-line error (``PARMBS_RANK_FAIL``, parmbs/faults.py)."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from parmbs.config import load_config
from parmbs.optimize import Optimization

from conftest import CONFIGS

RSB = CONFIGS / "rigid-spring-beam-opt.toml"
SETS = ["simulation.t_end=0.02", "simulation.progress=false", "optimize.gradient=fd"]


def _opt(path, sets, comm=None):
    lines = []
    return Optimization(load_config(str(RSB), SETS + sets), path, comm=comm, out=lines.append), lines


@pytest.mark.mpi(min_size=2)
def test_split_fd_equals_serial_bit_for_bit(tmp_path):
    from mpi4py import MPI
    from parmbs._petsc import PETSc
    comm = MPI.COMM_WORLD
    base = comm.bcast(str(tmp_path), root=0)
    par, lines = _opt(f"{base}/p.h5", ["optimize.max_it=3"])
    assert par.fd_split and f"fd: 2 columns split over {comm.size} ranks" in lines
    ser, _ = _opt(f"{base}/s{comm.rank}.h5", ["optimize.max_it=3"], comm=PETSc.COMM_SELF)   # each rank: serial
    assert not ser.fd_split
    vp, gp = par.evaluate_all(par.rho0)
    vs, gs = ser.evaluate_all(ser.rho0)
    assert vp == vs
    assert all(gp[k].tobytes() == gs[k].tobytes() for k in gs), (gp, gs)
    assert np.all(gs[par.objective] != 0)         # both columns computed (on different ranks)
    cp, rp = par.run()
    cs, rs = ser.run()
    assert cp == cs == 0
    assert rp.tobytes() == rs.tobytes()
    hp, hs = par.history[:, :5], ser.history[:, :5]   # (column 5: wall time)
    assert len(hp) >= 2 and hp.tobytes() == hs.tobytes(), (hp, hs)
    assert all(r.tobytes() == rp.tobytes() for r in comm.allgather(rp))


def _mpirun(tmp_path, spec, *sets):
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        pytest.skip("mpirun not installed")
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_mpi_yield_when_idle": "1", "PARMBS_RANK_FAIL": spec,
           "PARMBS_FAILURE_TIMEOUT": "600", "PARMBS_TEST_FAULTS": "1"}
    args = [a for s in SETS + list(sets) for a in ("--set", s)]
    try:
        return subprocess.run([mpirun, "--oversubscribe", "-n", "2", sys.executable, "-m", "parmbs", "optimize",
                               str(RSB), *args, "-o", "o.h5"], capture_output=True, text=True, timeout=300,
                              env=env, cwd=tmp_path)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"hung: PARMBS_RANK_FAIL={spec}\n{e.stderr}")


def test_failure_in_one_ranks_column(tmp_path):
    """Rank 1's second forward run is its first FD column (j = 1) at the initial design:
    it fails there alone (StepError), rank 0 finishes column 0 and meets it in the
    columns' gather, and both raise rank 1's error — the initial design fails on both
    ranks together: exit 1, one error line, no abort (the agreement's wait is 600 s, so a
    lone failure would show as a hang, not as an abort)."""
    r = _mpirun(tmp_path, "1:forward:5:raise:2")
    assert r.returncode == 1, (r.stdout, r.stderr)
    errors = [l for l in r.stderr.splitlines() if l.startswith("parmbs: error:")]
    assert errors == [f"parmbs: error: {RSB}: computation failed: initial design: PARMBS_RANK_FAIL: forward step 5 "
                      "failed on rank 1 only"], r.stderr
    assert "MPI_ABORT" not in r.stderr and "Traceback" not in r.stderr
    assert "fd: 2 columns split over 2 ranks" in r.stdout


def test_bug_in_one_ranks_column(tmp_path):
    """An unexpected exception (a bug) in rank 1's column reaches rank 0 too (rebuilt from
    the gather): every rank leaves with it, and the CLI's handling of a bug on a parallel
    run applies (traceback, "unexpected exception", MPI_Abort) — not a hang."""
    r = _mpirun(tmp_path, "1:forward:5:bug:2")
    assert r.returncode != 0, (r.stdout, r.stderr)
    assert "RuntimeError: PARMBS_RANK_FAIL: injected bug at forward step 5 on rank 1" in r.stderr
    errors = [l for l in r.stderr.splitlines() if l.startswith("parmbs: error:")]
    assert errors and all(l.startswith("parmbs: error: unexpected exception on rank ") for l in errors), r.stderr
