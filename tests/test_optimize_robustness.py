"""Robustness of `parmbs optimize` (issue 6): a resumed run repeats the uninterrupted one.

* MMA step halvings after failed trials (driver.py, ``MMA_HALVINGS``) are part of the
  state on disk (``/optimize/mma/meta*``, log.MMAState): a run SIGKILLed after some
  halvings and resumed gives up after the same total number of halvings, at the same
  design, as the uninterrupted run — before the count was stored the resumed run started
  a fresh budget of 4 and took a 5th halving (a step the uninterrupted run never takes)
  and went on.  Failures are injected with ``PARMBS_OPTIMIZE_FAIL`` (the n-th evaluation
  of a process fails), the kill with ``PARMBS_OPTIMIZE_KILL``.
* A record of the older layout ((4,) meta: no halving count) still resumes.
"""
import os
import signal
import subprocess
import sys

import h5py
import numpy as np
import pytest

from parmbs.integrators.newmark import StepError
from parmbs.optimize import driver

from test_optimize_failed_trial import MMA_SETS, PLATE, run_api
from conftest import FAULTS, record_file, signal_after_first_iterate

N = driver.MMA_HALVINGS
#: the uninterrupted run: evaluation 1 (x_0) works, 2 (x_1) and its N halvings fail
FAIL_ALL = list(range(2, 3 + N))
SETS = MMA_SETS + ["optimize.max_it=6"]


def _mma_state(path):
    """(current state (5, nd), meta) of the record's valid MMA slot, and the logged x rows."""
    with h5py.File(record_file(path), "r") as f:
        g = f["optimize/mma"]
        slot = int(g.attrs["current"])
        k = int(f["optimize"].attrs["evaluations"])
        return g[f"state{slot}"][...], g[f"meta{slot}"][...], f["optimize/x"][:k]


@pytest.fixture(scope="module")
def gave_up(tmp_path_factory):
    """The uninterrupted run: N halvings of the step to x_1, then StepError."""
    path = tmp_path_factory.mktemp("rob") / "ref.h5"
    with pytest.raises(StepError, match=f"MMA iterate 1: .*after {N} halvings"):
        run_api(PLATE, SETS, path, fail=FAIL_ALL)
    return _mma_state(path)


# kill points: (PARMBS_OPTIMIZE_KILL, evaluations failing in the killed run, in the resumed run)
#  forward:4 -- during the evaluation at x_1 halved twice (state with 2 halvings on disk)
#  write:4   -- while the state of the 2nd halving is written (its slot not yet valid: the
#               state with 1 halving is the valid one, its x is evaluated again and fails again)
KILLS = {"forward:4": ([2, 3], [1, 2, 3]), "write:4": ([2, 3], [1, 2, 3, 4])}


@pytest.mark.parametrize("kill", list(KILLS))
def test_mma_halvings_survive_a_kill(gave_up, tmp_path, kill):
    fail_first, fail_resumed = KILLS[kill]
    path = tmp_path / "k.h5"
    env = dict(os.environ, PYTHONUNBUFFERED="1", PARMBS_OPTIMIZE_FAIL=",".join(map(str, fail_first)),
               PARMBS_OPTIMIZE_KILL=kill, **FAULTS)
    sets = [a for s in SETS for a in ("--set", s)]
    r = subprocess.run([sys.executable, "-m", "parmbs", "optimize", str(PLATE), "-o", str(path), *sets],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == -signal.SIGKILL, (r.returncode, r.stdout, r.stderr)
    done = 2 if kill == "forward:4" else 1
    assert _mma_state(path)[1][3] == done                 # the halvings on disk so far
    with pytest.raises(StepError, match=f"MMA iterate 1: .*after {N} halvings"):
        run_api(PLATE, SETS, path, fail=fail_resumed, restart=True)
    state, meta, x = _mma_state(path)
    ref_state, ref_meta, ref_x = gave_up
    assert np.array_equal(state, ref_state)               # the same last trial x = x_0 + 2^-N (x_1 - x_0)
    assert np.array_equal(meta, ref_meta) and meta[3] == N
    assert np.array_equal(x, ref_x)


def test_old_record_without_halving_count_resumes(tmp_path):
    """A record whose MMA slots hold the older (4,) meta resumes (0 halvings, as those
    versions did) and continues the uninterrupted sequence; its slots are rewritten in
    the current (6,) layout as the run goes on."""
    ref = run_api(PLATE, SETS, tmp_path / "ref.h5", fail=[2])
    path = tmp_path / "old.h5"
    run_api(PLATE, SETS, path, fail=[2], extra=["optimize.max_it=2"])
    with h5py.File(path, "r+") as f:                       # the layout before the count
        g = f["optimize/mma"]
        for s in (0, 1):
            meta = g[f"meta{s}"][...]
            old = np.array([*meta[:3], 0.0])
            old[3] = driver.MMAState._crc(g[f"state{s}"][...], old)
            del g[f"meta{s}"]
            g.create_dataset(f"meta{s}", data=old)
    rho, (x, f, _), hist, lines = run_api(PLATE, SETS, path, restart=True)
    assert lines[0].startswith("resumed: MMA state after 2 updates from")
    assert np.array_equal(x, ref[1][0]) and np.array_equal(f, ref[1][1]) and np.array_equal(rho, ref[0])
    with h5py.File(path, "r") as f:
        assert {f[f"optimize/mma/meta{s}"].shape for s in (0, 1)} == {(driver.MMAState.META,)}


# -- the resume command printed after SIGTERM / SIGUSR1 ------------------------------------------
def test_resume_command_repeats_the_overrides(tmp_path):
    """After SIGUSR1 the run prints the command that resumes it, with every --set (a
    restart without them is refused: another resolved config), quoted for a shell; that
    command, run as printed, continues to the uninterrupted result."""
    import shlex
    spaced = "optimize.constraints=[{kind = 'volume_fraction', field = 'plates.P.density', lower = 0.8}]"
    sets = [spaced if s.startswith("optimize.constraints=") else s for s in SETS]
    ref = run_api(PLATE, SETS, tmp_path / "ref.h5")
    path = tmp_path / "s.h5"
    argv = ["optimize", str(PLATE), "-o", str(path), *[a for s in sets for a in ("--set", s)]]
    p = subprocess.Popen([sys.executable, "-m", "parmbs", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    out, err = signal_after_first_iterate(p, timeout=300)
    assert p.returncode == 0, err
    resume = [l for l in out.splitlines() if l.startswith("stopped on SIGUSR1")]
    assert len(resume) == 1, out
    words = shlex.split(resume[0].split("resume with: ", 1)[1])
    assert words == ["parmbs", "optimize", str(PLATE), "--restart", str(path),
                     *[a for s in sets for a in ("--set", s)]]
    r = subprocess.run([sys.executable, "-m", "parmbs", *words[1:]], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "resumed: MMA state after" in r.stdout
    with h5py.File(path, "r") as f:
        x = f["optimize/x"][:f["optimize"].attrs["evaluations"]]
        rho = f["optimize/design"][:]
    assert np.array_equal(x, ref[1][0]) and np.array_equal(rho, ref[0])
