"""``-log_view`` shows parmbs's phases as PETSc log stages and its own work as events
(parmbs/_log.py; issue 20 item 6): the forward run, adjoint and direct sweeps are
stages, one forward/tangent/adjoint step of an own stepper and the residual and
Jacobian assembly are events, and the step events are counted once per step.

Each case is a subprocess of the real CLI on a 10-step run (~1 s each): -log_view
prints at PetscFinalize, i.e. at the end of the process.
"""
from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).parents[1]
FIVEBAR = str(ROOT / "configs" / "fivebar.toml")
DOUBLE = str(ROOT / "configs" / "double-pendulum.toml")
STEPS = 10
SHORT = ["--set", f"simulation.t_end={STEPS * 1e-3}", "--set", "simulation.dt=1e-3"]
PENALTY = ["--set", 'simulation.formulation="penalty"', "--set", 'simulation.integrator="ts-beuler"']


def cli(*args, mpi=0):
    env = {k: v for k, v in os.environ.items() if k != "PETSC_OPTIONS"}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, "-m", "parmbs", *args, "-log_view"]
    if mpi:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        cmd = [shutil.which("mpirun"), "--oversubscribe", "-n", str(mpi), *cmd]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def stages(text):
    """{stage name: seconds} of the "Summary of Stages" table."""
    block = text.split("Summary of Stages:", 1)[1].split("\n\n", 1)[0]
    return {m[1].strip(): float(m[2]) for m in re.finditer(r"^\s*\d+:\s+([^:]+):\s+(\S+)", block, re.M)}


def events(text, stage):
    """{event: count} of the event table of ``stage`` (its first, per-event, listing)."""
    part = text.split(f"--- Event Stage ", 1)[1]
    for sec in re.split(r"^--- Event Stage \d+: ", "--- Event Stage " + part, flags=re.M)[1:]:
        name, _, body = sec.partition("\n")
        if name.strip() == stage:
            return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+) ", body, re.M)}
    raise AssertionError(f"no event table for stage {stage!r}")


def test_simulate_shows_the_forward_stage_and_one_newton_event_per_step():
    # the numpy path's events (the compiled step of small models assembles nothing: below)
    out = cli("simulate", FIVEBAR, *SHORT, "--set", "simulation.compiled=off")
    st = stages(out)
    assert "parmbs forward" in st and st["parmbs forward"] > 0, st
    assert "parmbs adjoint" not in st                       # a stage only when its phase ran
    ev = events(out, "parmbs forward")
    assert ev["ParmbsNewton"] == STEPS, ev                  # one event per step
    assert ev["ParmbsResidual"] > STEPS and ev["ParmbsAssemble"] > STEPS, ev
    assert ev["KSPSolve"] >= STEPS                          # PETSc's own events sit in our stage


def test_compiled_step_is_one_newton_event_per_step():
    """The compiled step (parmbs/compiled) is logged as ParmbsNewton too; it evaluates
    and factors inside numba, so the forward stage has no residual/assembly events per
    step (only the initial state's) and no KSPSolve per step."""
    pytest.importorskip("numba")
    out = cli("simulate", FIVEBAR, *SHORT)
    ev = events(out, "parmbs forward")
    assert ev["ParmbsNewton"] == STEPS, ev
    assert ev.get("ParmbsAssemble", 0) < STEPS and ev.get("KSPSolve", 0) < STEPS, ev


@pytest.mark.parametrize("method,stage,event", [("adjoint", "parmbs adjoint", "ParmbsAdjStep"),
                                                ("direct", "parmbs direct", "ParmbsTangent")])
def test_gradient_shows_its_sweep_as_a_stage(method, stage, event):
    out = cli("gradient", FIVEBAR, *SHORT, "--method", method)
    st = stages(out)
    assert {"parmbs forward", stage} <= set(st), st
    assert events(out, stage)[event] == STEPS
    assert "ParmbsNewton" not in events(out, stage)        # the sweep re-runs no forward step


def test_ts_adjoint_is_petsc_s_tsadjoint_inside_the_adjoint_stage():
    out = cli("gradient", DOUBLE, *SHORT, *PENALTY)
    assert {"parmbs forward", "parmbs adjoint"} <= set(stages(out))
    assert events(out, "parmbs adjoint")["TSAdjointStep"] == STEPS
    # the TS adjoint reuses the CLI forward's TS and its trajectory (integrators/ts_kept.py):
    # one forward run, not a second one with a trajectory
    assert events(out, "parmbs forward")["TSStep"] == STEPS


@pytest.mark.parametrize("mpi", [0, 2])
def test_checkpoint_io_is_a_stage(mpi, tmp_path):
    """The HDF5 checkpoint store's reads and writes (rank 0's, checkpoint/store.py) are
    the "parmbs checkpoint I/O" stage (before, the stage was registered but never entered:
    -log_view did not list it); a TS run with every:3 (its reverse sweep reads the
    stored states, writes adjoint records).  On 2 ranks only rank 0 enters it."""
    if mpi and shutil.which("mpirun") is None:
        pytest.skip("no mpirun")
    out = cli("gradient", FIVEBAR, *SHORT, "--set", 'simulation.formulation="index1"', "--set",
              'simulation.integrator="ts-theta"', "--set", 'checkpoint.schedule="every:3"', "-o",
              str(tmp_path / "g.h5"), mpi=mpi)
    st = stages(out)
    assert {"parmbs forward", "parmbs adjoint", "parmbs checkpoint I/O"} <= set(st), st
    assert st["parmbs checkpoint I/O"] > 0, st


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="no mpirun")
def test_two_ranks_agree_on_the_stages():
    out = cli("gradient", FIVEBAR, *SHORT, "--set", 'parallel.distribute="always"', mpi=2)
    assert out.count("PETSc Performance Summary") == 1 and "with 2 processors" in out
    st = stages(out)
    assert {"parmbs forward", "parmbs adjoint"} <= set(st), st
    assert events(out, "parmbs adjoint")["ParmbsAdjStep"] == STEPS
