"""Adaptive ts-alpha2 (issue 20 item 3; integrators/ts_alpha2.py): TSALPHA2 with TSAdapt
"basic" on its own error estimate, our generalized-α adjoint over the accepted steps
(step sizes frozen), checked against the direct sweep and against central finite
differences that replay the same steps (Problem.frozen_steps).

Five-bar, t_end = 0.1, rho_inf = 0.9, rtol 1e-4, atol 1e-6, first step 1e-3: 36
accepted steps of 1e-3 … 4.2e-3, 2 rejected (measured).

Bounds and their estimates (measured on this case):
* adjoint vs direct: the same discrete equations transposed (NewmarkFamily's sweeps on
  the accepted grid), so round-off of N = 36 steps × the index-3 amplification:
  measured 1.7e-16 … 1.6e-15 (ψ1, ψ2), 2.9e-15 … 7.6e-15 (ψ3, accelerations) of
  max |∇ψ| (two runs); bound 1e-9.
* vs central FD at relative step s = 1e-4 on the frozen steps: truncation C s² with
  C ≈ 3 (measured 2.9e-6, 2.9e-8 at s = 1e-3, 1e-4: ∝ s²), noise η/s with η ≈ 1e-13
  relative (Newton's termination; 1e-8 at s = 1e-5, 2e-7 at s = 1e-6: ∝ 1/s) →
  ≈ 3e-8 + 1e-9; measured 2.9e-8 (ψ1), 2.0e-8, 1.8e-8; bound 1e-6.
* the replay at the nominal parameters takes the stored h_k and t_k, the bits the
  adaptive run used (t_k + h, h from TSGetTimeStep): bitwise.
"""
import pathlib

import parmbs  # noqa: F401  (before numpy users: parmbs/_determinism.py)
import numpy as np
import pytest

from parmbs._petsc import PETSc
from parmbs.config.loader import load_config
from parmbs.sensitivity.problem import Problem
from gradient_checks import assert_gradients_agree

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIVEBAR = ROOT / "configs" / "fivebar.toml"
SETS = ["simulation.t_end=0.1", "simulation.dt=1e-3", 'simulation.integrator="ts-alpha2"',
        "simulation.rho_inf=0.9"]
ADAPT = "simulation.adapt={rtol=1e-4, atol=1e-6}"


def problem(*extra):
    return Problem(load_config(FIVEBAR, SETS + list(extra)))


def test_adaptive_alpha2_gradient_is_direct_and_fd_on_the_accepted_steps():
    pr = problem(ADAPT)
    tr = pr.forward()
    h = np.diff(tr.t)
    assert tr.t[0] == 0.0 and abs(tr.t[-1] - 0.1) <= 1e-14       # MATCHSTEP: ends at t_end
    # the TS's own times: t_{k+1} = t_k + h_k, the sum PETSc forms (not h_k = t_{k+1} − t_k)
    assert np.array_equal(tr.grid.t, tr.t) and np.array_equal(tr.t[1:], tr.t[:-1] + tr.grid.h)
    assert tr.steps != 100 and h.max() / h.min() > 2              # the steps did adapt
    assert pr.grid == tr.grid and pr.nsteps == tr.steps           # the sweeps' and weights' grid
    again = problem(ADAPT).forward()                              # same input, same bytes
    assert np.array_equal(again.t, tr.t) and np.array_equal(again.q, tr.q) and np.array_equal(again.lam, tr.lam)
    with pr.frozen_steps():
        replay = pr.forward()
    assert np.array_equal(replay.t, tr.t) and np.array_equal(replay.q, tr.q) and np.array_equal(replay.lam, tr.lam)
    # forward (adaptive again: the same steps), adjoint, direct, FD on the frozen steps
    assert_gradients_agree(pr, adj_dir=1e-9, adj_cs=None, adj_fd=1e-6, fd_step=1e-4,
                           tag=f"adaptive ts-alpha2, {tr.steps} steps ({tr.rejected} rejected) ")
    assert pr.grid == tr.grid                                     # FD replayed it; the nominal grid is back


def test_adapt_type_none_keeps_the_fixed_steps():
    """-parmbs_ts_adapt_type none: an adaptive config takes its fixed dt (the bits of
    the config without [simulation.adapt]); basic makes a fixed config adaptive."""
    opts = PETSc.Options()
    fixed = problem().forward()
    try:
        opts.setValue("parmbs_ts_adapt_type", "none")
        none = problem(ADAPT).forward()
        opts.setValue("parmbs_ts_adapt_type", "basic")
        basic = problem().forward()
    finally:
        opts.delValue("parmbs_ts_adapt_type")
    assert none.steps == fixed.steps == 100
    assert np.array_equal(none.q, fixed.q) and np.array_equal(none.lam, fixed.lam)
    assert basic.steps != 100 and abs(basic.t[-1] - 0.1) <= 1e-14


# ----------------------------------------------------------------------------- HDF5 checkpoints
# The file keeps the accepted t_k, h_k (checkpoint/store.py, as for the own adaptive
# steppers); the forward run is one adaptive TSALPHA2 (march_adaptive), the reverse
# sweep recomputes from stored states on the stored steps (a frozen replay: the bits of
# the adaptive run).  A run killed in its forward part is re-run from x_0 on --restart
# (TSAdapt's history is not in the file; the re-run's x_k0 is checked against the
# stored one).  Contract: bitwise, as every checkpoint test.

_REF = {}


def reference():
    if not _REF:
        pr = problem(ADAPT)
        tr = pr.forward()
        _REF.update(grid=tr.grid, values=pr.objective_values(), grad=pr.adjoint())
    return _REF


@pytest.mark.parametrize("schedule", ["all", "every:7", "revolve:4"])
def test_checkpointed_adaptive_alpha2_is_the_in_memory_run(schedule, tmp_path):
    ref = reference()
    pr = problem(ADAPT, f"checkpoint.schedule={schedule}")
    ck = pr.use_checkpoint(tmp_path / "ck.h5")
    tr = pr.forward()
    values = pr.objective_values(tr)
    grad = pr.adjoint()
    ck.store.close()
    N = ref["grid"].steps
    assert tr.grid == ref["grid"] and pr.grid == ref["grid"]
    assert ck.forward_steps == N and ck.adjoint_steps == N
    assert (ck.recomputed > 0) == (schedule != "all")
    with h5py_file(tmp_path / "ck.h5") as f:                # the file's grid: the accepted steps
        assert np.array_equal(f["grid"]["t"][:], ref["grid"].t) and np.array_equal(f["grid"]["h"][:N], ref["grid"].h)
    for k in ref["grad"]:
        assert values[k] == ref["values"][k], k
        assert np.array_equal(grad[k], ref["grad"][k]), (k, np.max(np.abs(grad[k] - ref["grad"][k])))


def h5py_file(path):
    import h5py
    return h5py.File(path, "r")


@pytest.mark.parametrize("schedule,kills", [
    ("every:7", ["forward:20", "adjoint:12"]),
    ("all", ["forward:25", "write:5", "adjoint:5"]),     # write:5: a row of the resumed forward run
])
def test_sigkill_then_restart_same_gradient(schedule, kills, tmp_path):
    import json
    import signal
    from test_checkpoint import _cli, _partial
    ref = reference()
    h5 = tmp_path / "run.h5"
    sets = [a for s in SETS + [ADAPT, f"checkpoint.schedule={schedule}"] for a in ("--set", s)]
    for i, kill in enumerate(kills):
        where = ["-o", h5] if i == 0 else ["--restart", h5]
        r = _cli("gradient", FIVEBAR, *sets, *where, cwd=tmp_path, PARMBS_CHECKPOINT_INTERVAL=0,
                 PARMBS_CHECKPOINT_KILL=kill)
        assert r.returncode == -signal.SIGKILL, (kill, r.returncode, r.stderr)
        assert not h5.exists() and _partial(h5).exists()
        with h5py_file(_partial(h5)) as f:             # killed in the phase named (adjoint marker < 0: forward)
            assert (int(f["adjoint"]["marker"][1]) >= 0) == kill.startswith("adjoint"), kill
    js = tmp_path / "g.json"
    r = _cli("gradient", FIVEBAR, *sets, "--restart", h5, "--json", js, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "resuming" in r.stdout
    doc = json.loads(js.read_text())
    assert doc["steps"] == ref["grid"].steps
    for k in ref["grad"]:
        assert doc["objectives"][k]["value"] == ref["values"][k], k
        g = np.array(list(doc["objectives"][k]["gradient"].values()))
        assert np.array_equal(g, ref["grad"][k]), (k, np.max(np.abs(g - ref["grad"][k])))


def test_a_resumed_forward_that_does_not_repeat_is_refused(tmp_path, monkeypatch):
    """A run interrupted in its forward part is re-run from x_0 on resume and its x_k0
    compared with the stored state: an initial state off by one ulp (what a
    non-reproducible run would give) stops the run with the step named instead of
    continuing from another trajectory."""
    from parmbs.checkpoint import SimulatedKill
    monkeypatch.setenv("PARMBS_TEST_FAULTS", "1")
    monkeypatch.setenv("PARMBS_CHECKPOINT_INTERVAL", "0")
    monkeypatch.setenv("PARMBS_CHECKPOINT_KILL", "raise:forward:20")
    h5 = tmp_path / "ck.h5"
    pr = problem(ADAPT, "checkpoint.schedule=every:7")
    ck = pr.use_checkpoint(h5)
    with pytest.raises(SimulatedKill):
        pr.forward()
    ck.store.abandon()
    monkeypatch.delenv("PARMBS_CHECKPOINT_KILL")
    pr = problem(ADAPT, "checkpoint.schedule=every:7")
    nm = pr.stepper.nm
    real = nm.initial
    monkeypatch.setattr(nm, "initial", lambda t0, p: (np.nextafter(real(t0, p)[0], np.inf),) + tuple(real(t0, p)[1:]))
    ck = pr.use_checkpoint(h5)
    with pytest.raises(RuntimeError, match=r"step 14 \(t = .*\): the adaptive TSALPHA2 run re-run"):
        pr.forward()
    ck.store.abandon()


def test_step_size_floor_is_an_error_naming_step_and_time():
    """TSAdapt basic would accept a step at its minimum whatever its error; ts-alpha2
    stops instead when a rejection takes h below dt_min (as the own controller:
    StepSizeError, exit 1 in the CLI).  rtol 1e-10 cannot be met at dt_min = 2e-4
    (the first step, 1e-3, is rejected down to ~1e-4)."""
    from parmbs.integrators.timeloop import StepSizeError
    pr = problem("simulation.adapt={rtol=1e-10, atol=1e-12, dt_min=2e-4}")
    with pytest.raises(StepSizeError, match=r"^step 1 \(t = 0\): the step size fell below dt_min = 0\.0002 s"):
        pr.forward()
