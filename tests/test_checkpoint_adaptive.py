"""HDF5 checkpoints of adaptive runs (simulation.adapt; parmbs/checkpoint/store.py,
restart.py): the file keeps the accepted t_k, h_k and, with every stored state, the
step-size loop's state, so

* a checkpointed run (schedules ``all``, ``every:K``) gives the in-memory run's
  steps, objective values and gradient bit for bit, with the theoretical number of
  recomputed steps, although the file was allocated for t_end/dt steps and had to grow
  (and was compacted to N at the end);
* a run interrupted anywhere — at a forward step, between a write and its marker,
  while the file is being grown, in the adjoint sweep — and resumed with ``--restart``
  takes exactly the uninterrupted run's steps and gives its gradient bit for bit
  (the resumed controller continues from the stored next h, the PI controller's last
  error — a digital filter's history — and the estimator's nodes; resuming from h alone
  takes other steps — checked);
* ``revolve:C`` places its forward checkpoints online (N unknown: equidistant, thinned
  by doubling, on ⌈C/2⌉ slots) and its reverse sweep recomputes no more than the
  binomial bound over the gaps it left.

Bitwise, not to a tolerance: the forward step is deterministic (serial) and every
number of the sweep is recomputed from the same bits (the fixed-step tests in
test_checkpoint.py hold the same contract)."""
from __future__ import annotations

import json
import pathlib
import signal
import subprocess
import sys

import parmbs  # noqa: F401  (before numpy users: parmbs/_determinism.py)
import numpy as np
import pytest

from parmbs.checkpoint.schedules import revolve_cost
from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIVEBAR = str(ROOT / "configs" / "fivebar.toml")
# 31 accepted steps, 2 rejected (rtol 1.3e-5: velocities' error per step since branch noise18,
# timeloop.py; rtol 3e-4 took 31 steps before it and 11 after); dt = 0.05 is only the first
# step, and the file's first capacity t_end/dt = 4 steps: it grows to 16, 32 and is
# compacted to 31
ADAPT = ["simulation.t_end=0.2", "simulation.adapt.rtol=1.3e-5", "simulation.adapt.atol=1.3e-5",
         "simulation.dt=0.05"]


def _problem(extra=()):
    return Problem(load_config(FIVEBAR, ADAPT + list(extra)))


@pytest.fixture(scope="module")
def reference():
    pr = _problem()
    tr = pr.forward()
    return tr.grid, pr.objective_values(), pr.adjoint(), pr.direct()


def _grid_of(h5):
    import h5py
    with h5py.File(h5, "r") as f:
        return f["grid"]["t"][:], f["grid"]["h"][:], int(f["checkpoint"].attrs["steps"])


@pytest.mark.parametrize("schedule", ["all", "every:1", "every:7", "revolve:1", "revolve:3", "revolve:6",
                                      "revolve:100"])
def test_checkpointed_adaptive_run_is_the_in_memory_run(schedule, reference, tmp_path):
    grid0, values0, grad0, direct0 = reference
    N = grid0.steps
    assert N == 31 and grid0.h.max() > 3 * grid0.h.min()
    pr = _problem([f"checkpoint.schedule={schedule}"])
    assert pr.nsteps == 4                              # the estimate the file is allocated for
    run = pr.use_checkpoint(tmp_path / "ck.h5")
    tr = pr.forward()
    slots = None if run.store.slot_step is None else run.store.slot_step.copy()
    values = pr.objective_values(tr)
    grad = pr.adjoint()
    d = pr.direct() if schedule == "all" else None
    run.store.close()
    assert tr.grid == grid0 and pr.grid == grid0 and pr.nsteps == N
    assert run.forward_steps == N and run.adjoint_steps == N
    if run.sched.kind != "revolve":
        assert run.recomputed == run.sched.recomputations(N)
    else:
        # online placement: at most B = ⌈C/2⌉ slots used, so F ≥ C − B are free when the
        # reverse sweep starts; it reverses each gap l_j between stored states (x_N held)
        # with ≥ F + 1 slots, i.e. in at most Griewank's t(l_j, F + 1) forward steps
        C = run.sched.count
        used = np.sort(slots[slots >= 0])
        assert used[0] == 0 and len(used) <= min((C + 1) // 2, N + 1)
        F = run.store.S - len(used)
        gaps = np.diff(np.append(used, N))
        bound = sum(revolve_cost(int(g), F + 1) for g in gaps)
        assert run.recomputed <= bound, (run.recomputed, bound)
        if C == 1:
            assert run.recomputed == run.sched.recomputations(N)      # x_0 alone: the same sweep
    if schedule == "every:7":           # 31 steps: four whole segments of 7 recompute 6 each,
        assert run.recomputed == 6 * 4   # the tail x_28..x_31 is still held from the forward run
    for k in grad0:
        assert values[k] == values0[k], k
        assert np.array_equal(grad[k], grad0[k]), (k, np.max(np.abs(grad[k] - grad0[k])))
        if d is not None:
            assert np.array_equal(d[k], direct0[k]), k
    t, h, steps = _grid_of(tmp_path / "ck.h5")        # grown, then compacted to N
    assert steps == N and np.array_equal(t, grid0.t) and np.array_equal(h, grid0.h)
    assert not (tmp_path / "ck.h5.grow").exists()


@pytest.mark.parametrize("kill", ["forward:9", "forward:20", "write:3"])
def test_resumed_forward_takes_the_same_steps(kill, reference, tmp_path, monkeypatch):
    """In-process: the run stops at ``kill`` (SimulatedKill), the file is left as a crash
    leaves it, a new Problem resumes it: same grid and gradient, bit for bit."""
    grid0, values0, grad0, _ = reference
    _killed_and_resumed(["checkpoint.schedule=every:3"], kill, grid0, grad0, tmp_path, monkeypatch)


def _killed_and_resumed(extra, kill, grid0, grad0, tmp_path, monkeypatch):
    """The run stopped at ``kill`` (SimulatedKill, in-process) and resumed by a new Problem
    takes the steps ``grid0`` and gives the gradient ``grad0`` bit for bit."""
    from parmbs.checkpoint import SimulatedKill
    monkeypatch.setenv("PARMBS_TEST_FAULTS", "1")
    monkeypatch.setenv("PARMBS_CHECKPOINT_INTERVAL", "0")
    monkeypatch.setenv("PARMBS_CHECKPOINT_KILL", f"raise:{kill}")
    h5 = tmp_path / "ck.h5"
    pr = _problem(extra)
    run = pr.use_checkpoint(h5)
    with pytest.raises(SimulatedKill):
        pr.forward()
    run.store.abandon()
    monkeypatch.delenv("PARMBS_CHECKPOINT_KILL")
    pr = _problem(extra)
    run = pr.use_checkpoint(h5)
    k0 = run.resume_point()
    assert 0 < k0 < grid0.steps
    tr = pr.forward()
    grad = pr.adjoint()
    run.store.close()
    assert tr.resumed_from == k0 and run.forward_steps == grid0.steps - k0
    assert pr.grid == grid0
    for k in grad0:
        assert np.array_equal(grad[k], grad0[k]), k


@pytest.mark.parametrize("memory, kill", [('simulation.adapt.controller="H312b"', "forward:9"),
                                          ("simulation.adapt.grow_after=3", "forward:8")])
@pytest.mark.parametrize("schedule", ["all", "every:3"])
def test_controller_memory_resumed_takes_the_same_steps(schedule, memory, kill, tmp_path, monkeypatch):
    """A controller with a history beyond the last error keeps it in the control row, and
    resumed it takes the uninterrupted run's steps and gradient: a digital filter
    (``simulation.adapt.controller``, integrators/step_filter.py; H312b, whose history
    (c_{n−1}, c_{n−2}, ρ_{n−1}, ρ_{n−2}) is all four), resumed after step 9; the PI
    controller with ``grow_after`` 3 (timeloop.py, "Ratchet": the run of small growths and
    its smallest factor), killed at step 8 — in this run steps 6 and 7 propose small
    growths and step 8 releases one, so x_6 and x_7, where the two schedules resume, carry
    a run of 1 and 2.  With the history left out of the restore all four cases fail here."""
    extra = [memory, f"checkpoint.schedule={schedule}"]
    pr0 = _problem(extra)
    pr0.forward()
    _killed_and_resumed(extra, kill, pr0.grid, pr0.adjoint(), tmp_path, monkeypatch)


def test_resuming_from_h_alone_would_take_other_steps(reference):
    """What the stored loop state is for: a run resumed at x_9 with only the step it
    would have taken next (no PI memory, no estimator nodes) takes other steps."""
    from parmbs.integrators.timeloop import MarchState, march
    grid0 = reference[0]
    pr = _problem()
    x = pr.stepper.initial(pr.t0, pr.sys.p)
    st = MarchState(pr.t0, x)
    seen = {}

    def keep(k, t, h, xk):
        if k == 9:
            seen.update(x=xk, h=st.h_next)
    march(pr.stepper, pr.sys.p, 0.2, x, 0, pr.t0, keep, adapt=pr.adapt, state=st)
    (g, _), _ = march(pr.stepper, pr.sys.p, 0.2, seen["x"], 9, grid0.t[9], lambda *a: None, adapt=pr.adapt,
                      h_prev=seen["h"], state=MarchState(pr.t0, x))
    assert g.h[0] == grid0.h[9]                        # the first step is the same ...
    assert not np.array_equal(g.h, grid0.h[9:])        # ... the controller's later ones are not


# ----------------------------------------------------------------------------- the CLI, killed

from test_checkpoint import _cli, _env, _partial  # noqa: E402  (the fault-armed CLI of the checkpoint tests)


def _state(h5):
    import h5py
    with h5py.File(h5, "r") as f:
        ck = f["checkpoint"]
        fwd = int(f["trajectory"].attrs["valid_steps"]) if "trajectory" in f else int(ck["step"][:].max())
        return fwd, int(f["adjoint"]["marker"][1]), int(ck.attrs["steps"])


@pytest.mark.parametrize("schedule,kills", [
    # capacity 4 → the run grows the file at x_5 and x_17; 31 steps, a write per step
    ("all", ["forward:5", "grow:1", "write:4", "forward:8", "grow:1", "adjoint:5", "write:3", "adjoint:10"]),
    ("every:3", ["forward:7", "write:2", "grow:1", "forward:5", "adjoint:4", "write:1", "adjoint:6"]),
    # online revolve, 2 of 4 slots: x_0, x_1, x_2, x_4, x_8, x_16 written (each one dropping
    # an earlier); the 2nd write of the second run (x_16) is torn
    ("revolve:4", ["forward:7", "write:2", "grow:1", "forward:5", "adjoint:4", "write:1", "adjoint:6"]),
])
def test_sigkill_chain_then_restart_same_steps_and_gradient(schedule, kills, reference, tmp_path):
    """SIGKILLs at forward steps, between a write and its marker, between the grown
    copy and its rename, and at adjoint steps; each run restarts the previous one; the
    result has the uninterrupted run's steps and gradient, bit for bit."""
    import h5py
    grid0, values0, grad0, _ = reference
    h5 = tmp_path / "run.h5"
    sets = [a for s in ADAPT + [f"checkpoint.schedule={schedule}"] for a in ("--set", s)]
    seen, grown = set(), 0
    for i, kill in enumerate(kills):
        where = ["-o", h5] if i == 0 else ["--restart", h5]
        r = _cli("gradient", FIVEBAR, *sets, *where, cwd=tmp_path, PARMBS_CHECKPOINT_INTERVAL=0,
                 PARMBS_CHECKPOINT_KILL=kill)
        assert r.returncode == -signal.SIGKILL, (kill, r.returncode, r.stderr)
        assert not h5.exists()
        grown += pathlib.Path(str(_partial(h5)) + ".grow").exists()
        fwd, adj, cap = _state(_partial(h5))
        seen.add("forward" if adj < 0 else "adjoint")
    assert seen == {"forward", "adjoint"} and grown == kills.count("grow:1")
    js = tmp_path / "g.json"
    r = _cli("gradient", FIVEBAR, *sets, "--restart", h5, "--json", js, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "resuming" in r.stdout
    doc = json.loads(js.read_text())
    assert doc["steps"] == grid0.steps
    for k in grad0:
        assert doc["objectives"][k]["value"] == values0[k], k
        g = np.array(list(doc["objectives"][k]["gradient"].values()))
        assert np.array_equal(g, grad0[k]), (k, np.max(np.abs(g - grad0[k])))
    t, h, steps = _grid_of(h5)
    assert steps == grid0.steps and np.array_equal(t, grid0.t) and np.array_equal(h, grid0.h)
    with h5py.File(h5, "r") as f:
        if schedule == "all":
            assert np.array_equal(f["trajectory"]["t"][:], grid0.t)
            assert f["trajectory"].attrs["valid_steps"] == f["trajectory"].attrs["steps"] == grid0.steps


def test_simulate_restart_after_kill_same_trajectory(reference, tmp_path):
    """simulate -o, killed mid-forward, --restart: the file holds the uninterrupted
    in-memory trajectory, row for row."""
    import h5py
    pr = _problem()
    tr = pr.forward()
    h5 = tmp_path / "sim.h5"
    sets = [a for s in ADAPT for a in ("--set", s)]
    r = _cli("simulate", FIVEBAR, *sets, "-o", h5, cwd=tmp_path, PARMBS_CHECKPOINT_INTERVAL=0,
             PARMBS_CHECKPOINT_KILL="forward:11")
    assert r.returncode == -signal.SIGKILL
    r = _cli("simulate", FIVEBAR, *sets, "--restart", h5, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "forward from step 10" in r.stdout and "adaptive steps" in r.stdout + r.stderr
    with h5py.File(h5, "r") as f:
        g = f["trajectory"]
        for name, ref in (("t", tr.t), ("q", tr.q), ("v", tr.v), ("a", tr.a), ("lambda", tr.lam)):
            assert np.array_equal(g[name][:], ref), name


def test_external_sigkill_and_restart(tmp_path):
    """Real SIGKILLs from outside at arbitrary moments (a write per step), then
    --restart: the uninterrupted run's steps and gradient, bit for bit."""
    import time
    extra = ["simulation.t_end=2.0", "checkpoint.schedule=every:4"]     # 1556 steps
    pr = _problem(extra)
    grid0 = pr.forward().grid
    grad0 = pr.adjoint()
    h5 = tmp_path / "run.h5"
    sets = [a for s in ADAPT + extra for a in ("--set", s)]
    progress = []
    for i, delay in enumerate((1.5, 1.5, 1.5)):
        where = ["-o", h5] if not _partial(h5).exists() else ["--restart", h5]
        p = subprocess.Popen([sys.executable, "-m", "parmbs", "gradient", FIVEBAR, *sets, *map(str, where)],
                             cwd=tmp_path, env=_env(PARMBS_CHECKPOINT_INTERVAL=0), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.wait()
        if _partial(h5).exists():
            try:
                progress.append(_state(_partial(h5))[:2])
            except OSError:     # killed while creating the file: a fresh start next time
                _partial(h5).unlink()
    js = tmp_path / "g.json"
    where = ["--restart", h5] if _partial(h5).exists() or h5.exists() else ["-o", h5]
    r = _cli("gradient", FIVEBAR, *sets, *where, "--json", js, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(js.read_text())
    assert doc["steps"] == grid0.steps
    for k in grad0:
        g = np.array(list(doc["objectives"][k]["gradient"].values()))
        assert np.array_equal(g, grad0[k]), k
    t, h, _ = _grid_of(h5)
    assert np.array_equal(t, grid0.t) and np.array_equal(h, grid0.h)
    print("N", grid0.steps, "progress at the kills (forward step, adjoint step):", progress)
