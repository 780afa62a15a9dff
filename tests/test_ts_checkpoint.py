"""HDF5 checkpoints and --restart for PETSc TS runs (issue 20 item 5;
checkpoint/ts_run.py, integrators/ts_alpha2.py).

* ts-alpha2 (TSALPHA2, our generalized-α adjoint) goes through parmbs's own
  CheckpointedRun: its forward run is one TSALPHA2 from the resume state, its
  recomputations one TSALPHA2 step each.
* the TSAdjoint schemes (ts-theta, ts-cn, ts-beuler, ts-rk; penalty, index-1, Maggi,
  matrix-r independent) store their states in the same file; the reverse sweep re-runs
  the TS from a stored state over each stored interval (all, every:K; revolve: one step
  after its provider), its trajectory in memory, and runs TSAdjoint back through it.
  A reduced ODE (Maggi, matrix-r) stores its y and its manifold Newton's first guess too.
* ts-arkimex runs our own adjoint steps on the provider's states.
* adaptive runs (simulation.adapt, TSAdapt basic; ts-theta, ts-cn, ts-beuler) store each
  accepted step's exact size; re-runs take those steps, a forward run killed part-way
  resumes at its last checkpoint (TSTHETA: from the stored step before it, which sets
  up TSAdapt's estimate; test_adaptive_forward_resumes_at_its_checkpoint).  Adaptive ts-rk and ts-arkimex: PETSc rolls a rejected attempt back
  by subtraction, so the accepted attempt does not start from y_k bit for bit; their
  states carry TSAdapt's next proposed step and a re-run repeats the rejected attempts
  (ts.py ``replays_attempts``).  The runs below have rejections whose rollback is not
  exact: re-taking the accepted step from y_k gave ∇ψ 2.1e-7 (penalty-rk-ad) and
  3.1e-10 (penalty-ark-ad) off the in-memory run, measured with revolve:3.

Contract: bitwise, not to a tolerance — the checkpointed gradient and objective
values equal the in-memory TS run's for every schedule, and a run killed (SIGKILL)
anywhere and resumed with --restart gives them too.  A TS step depends only on the
stored bits (t_k, y_k, the previous acceleration as Newton's first guess for a_k) —
the sweep checks each recomputed state against the one it came from.  Five-bar,
t_end = 0.05, h = 1e-3: N = 50 steps.
"""
from __future__ import annotations

import json
import pathlib
import signal

import parmbs  # noqa: F401  (before numpy users: parmbs/_determinism.py)
import numpy as np
import pytest

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIVEBAR = str(ROOT / "configs" / "fivebar.toml")
SHORT = ["simulation.t_end=0.05", "simulation.dt=1e-3", "simulation.theta=0.7", "simulation.rho_inf=0.9"]
RUNS = {
    "alpha2": ['simulation.integrator="ts-alpha2"'],
    "index1-theta": ['simulation.formulation="index1"', 'simulation.integrator="ts-theta"'],
    "index1-rk": ['simulation.formulation="index1"', 'simulation.integrator="ts-rk"'],
    # the index-1 ODE with Baumgarte's terms in its constraint row (α = β = 50/s)
    "index1-theta-bg": ['simulation.formulation="index1"', 'simulation.integrator="ts-theta"',
                        "simulation.index1.baumgarte.alpha=50.0", "simulation.index1.baumgarte.beta=50.0"],
    "penalty-cn": ['simulation.formulation="penalty"', 'simulation.integrator="ts-cn"'],
    "maggi-theta": ['simulation.formulation="maggi"', 'simulation.integrator="ts-theta"'],
    "maggi-theta-30": ['simulation.formulation="maggi"', 'simulation.integrator="ts-theta"', "simulation.t_end=0.03"],
    "mr-cn": ['simulation.formulation="matrix-r"', 'simulation.matrix_r.coordinates="independent"',
              'simulation.integrator="ts-cn"'],
    # (20 steps: its own sweep recomputes both stages by Newton, the slowest here)
    "index1-ark": ['simulation.formulation="index1"', 'simulation.integrator="ts-arkimex"', "simulation.t_end=0.02"],
    # adaptive (TSAdapt basic): 49 accepted steps; penalty ts-beuler: 23
    "index1-theta-ad": ['simulation.formulation="index1"', 'simulation.integrator="ts-theta"',
                        "simulation.adapt.rtol=1e-5"],
    "penalty-beuler-ad": ['simulation.formulation="penalty"', 'simulation.integrator="ts-beuler"',
                          "simulation.adapt.rtol=1e-4"],
    # a reduced ODE's adaptive run: 49 accepted steps
    "maggi-theta-ad": ['simulation.formulation="maggi"', 'simulation.integrator="ts-theta"',
                       "simulation.adapt.rtol=1e-5"],
    # adaptive RK (5dp) and ARKIMEX with rejected attempts: 12 accepted steps, 1 rejected;
    # 29 accepted, 1 rejected (t_end 0.3 s, alpha 1e5)
    "penalty-rk-ad": ['simulation.formulation="penalty"', 'simulation.integrator="ts-rk"',
                      "simulation.adapt.rtol=1e-4", "simulation.t_end=0.5"],
    "penalty-ark-ad": ['simulation.formulation="penalty"', 'simulation.integrator="ts-arkimex"',
                       "simulation.adapt.rtol=1e-3", "simulation.t_end=0.3", "simulation.penalty.alpha=1e5"],
}
#: runs whose reverse sweep is our own adjoint step (the schedule's recomputations only;
#: adaptive ts-rk runs 5dp, whose PETSc adjoint is wrong: ts.py uses_own_adjoint)
OWN = ("alpha2", "index1-ark", "penalty-rk-ad", "penalty-ark-ad")


def _sets(run, extra=()):
    return SHORT + RUNS[run] + list(extra)


_REF = {}


def reference(run):
    """In-memory TS run: objective values, adjoint gradient (TSAdjoint / our sweep)."""
    if run not in _REF:
        pr = Problem(load_config(FIVEBAR, _sets(run)))
        pr.forward()
        _REF[run] = pr.objective_values(), pr.adjoint()
        _STEPS[run] = pr.traj.steps
    return _REF[run]


_STEPS = {}


@pytest.mark.parametrize("run,schedule", [
    ("alpha2", "every:7"), ("alpha2", "revolve:3"),
    ("index1-theta", "all"), ("index1-theta", "every:7"), ("index1-theta", "revolve:3"),
    ("index1-rk", "every:7"), ("penalty-cn", "revolve:3"),
    ("maggi-theta", "every:7"), ("mr-cn", "all"), ("index1-ark", "all"),
    ("index1-theta-ad", "every:7"), ("index1-theta-ad", "revolve:3"), ("penalty-beuler-ad", "revolve:3"),
    ("penalty-rk-ad", "every:3"), ("penalty-rk-ad", "revolve:3"), ("penalty-ark-ad", "revolve:3"),
])
def test_checkpointed_ts_gradient_is_the_in_memory_one(run, schedule, tmp_path):
    values0, grad0 = reference(run)
    pr = Problem(load_config(FIVEBAR, _sets(run, [f"checkpoint.schedule={schedule}"])))
    ck = pr.use_checkpoint(tmp_path / "ck.h5")
    tr = pr.forward()
    values = pr.objective_values(tr)
    grad = pr.adjoint()
    ck.store.close()
    N = tr.steps
    assert N == (20 if run == "index1-ark" else 50) or ("-ad" in run and N > 10)
    assert ck.forward_steps == N and ck.adjoint_steps == N
    # own adjoint steps: the schedule's recomputations, as for the own steppers.
    # TSAdjoint schemes: each step re-run once for its stages — in one TS per stored
    # interval (all, every:K: N in all), or after revolve's recomputations (its count + N;
    # adaptive revolve places its checkpoints online: only ≥ N asserted)
    want = ck.sched.recomputations(N)
    if run not in OWN:
        want = N if ck.sched.kind in ("all", "every") else want + N
    if "-ad" in run and ck.sched.kind == "revolve":
        assert ck.recomputed > N, ck.recomputed
    else:
        assert ck.recomputed == want, (ck.recomputed, want)
    assert ck.recomputed > 0 or schedule == "all"
    for k in grad0:
        assert values[k] == values0[k], k
        assert np.array_equal(grad[k], grad0[k]), (k, np.max(np.abs(grad[k] - grad0[k])))


def test_fsal_rk_on_a_reduced_ode_checkpoints_bitwise(tmp_path):
    """ts-rk with the FSAL tableau 3bs (its TSAdjoint is right: TSAdjoint segments) on
    Maggi's ODE: PETSc's reuse of the last stage as the next first one (evaluated at the
    stage vector, from another manifold guess) would make a re-run from a stored state
    differ by 2.8e-17 (measured); every step evaluates its first stage afresh (ts.py:
    TSRestartStep after each step, no cached evaluation across the monitor)."""
    from parmbs._petsc import PETSc
    opts = PETSc.Options()
    opts["parmbs_ts_rk_type"] = "3bs"
    try:
        sets = _sets("maggi-theta", ['simulation.integrator="ts-rk"'])
        pr = Problem(load_config(FIVEBAR, sets))
        pr.forward()
        v0, g0 = pr.objective_values(), pr.adjoint()
        pr = Problem(load_config(FIVEBAR, sets + ["checkpoint.schedule=every:7"]))
        ck = pr.use_checkpoint(tmp_path / "ck.h5")
        tr = pr.forward()
        v, g = pr.objective_values(tr), pr.adjoint()
        ck.store.close()
    finally:
        opts.delValue("parmbs_ts_rk_type")
    assert pr.stepper._make_ts and ck.recomputed == 50
    for k in g0:
        assert v[k] == v0[k] and np.array_equal(g[k], g0[k]), (k, np.max(np.abs(g[k] - g0[k])))


def test_a_step_that_does_not_repeat_is_refused(tmp_path, monkeypatch):
    """The reverse sweep compares each recomputed TS step with the state it came from:
    a stored state off by one ulp (what a non-reproducible step would give) stops the
    sweep with the step named instead of returning another gradient."""
    from parmbs.integrators import ts as tsmod
    pr = Problem(load_config(FIVEBAR, _sets("index1-theta", ["checkpoint.schedule=all"])))
    ck = pr.use_checkpoint(tmp_path / "ck.h5")
    pr.forward()
    real = tsmod.TSStepper._run

    def nudged(self, *a, **kw):
        keep = kw.get("keep")
        if keep is not None and kw.get("start") is not None and kw.get("save"):
            kw["keep"] = lambda k, t, h, x: keep(k, t, h, (np.nextafter(x[0], np.inf),) + tuple(x[1:]))
        return real(self, *a, **kw)
    monkeypatch.setattr(tsmod.TSStepper, "_run", nudged)
    with pytest.raises(RuntimeError, match=r"step 50 \(t = 0\.05\): the TS step recomputed"):
        pr.adjoint()
    ck.store.close()


def test_a_nondeterministic_solve_is_checked_against_its_bound(tmp_path, monkeypatch):
    """A distributed solve that does not repeat bit for bit (parallel MUMPS: large
    systems, or the user's -parmbs_ts_pc_type lu; integrators/ts_determinism.py) is
    checked against the round-off bound 10 L κ ε max|y| instead of bit equality
    (index-1: κ = 1; 20 steps, ``all``: one re-run of L = 20 steps, 4.4e-14 max|y|).
    Here the solver is declared non-repeating on one rank, and the re-run states are
    moved: by one ulp (the size of MUMPS's jitter, 6.9e-18 … 1.3e-16 measured) the sweep
    goes on (bitwise, the same ulp stopped it: test_a_step_that_does_not_repeat_is_refused);
    by 1e-9 max|y| (a trajectory that did not repeat: another parameter, a changed file)
    it stops naming the step, the difference and the bound.  What the accepted jitter
    does to the gradient is measured with the real solver in tests/test_ts_mpi.py
    (test_parallel_mumps_checkpoint_within_the_bound); here the moved states enter the
    objective terms directly (ψ1 = ∫|r − r_0|², small at 0.02 s: its gradient moved by
    4.5e-13 of its own size), so only that the sweep completes is asserted."""
    from parmbs.integrators import ts as tsmod
    from parmbs.integrators.ts_determinism import DistributedSolves
    sets = _sets("index1-theta", ["simulation.t_end=0.02"])
    monkeypatch.setattr(DistributedSolves, "note_solver", lambda self, ts, kind: setattr(self, "bitwise", False))
    real = tsmod.TSStepper._run
    size = {}

    def moved(self, *a, **kw):
        keep = kw.get("keep")
        if keep is not None and kw.get("start") is not None and kw.get("save"):
            def shift(x0):
                return x0 + size["d"] * np.max(np.abs(x0)) if size["d"] else np.nextafter(x0, np.inf)
            kw["keep"] = lambda k, t, h, x: keep(k, t, h, (shift(x[0]),) + tuple(x[1:]))
        return real(self, *a, **kw)
    monkeypatch.setattr(tsmod.TSStepper, "_run", moved)
    for d in (0.0, 1e-9):
        size["d"] = d
        pr = Problem(load_config(FIVEBAR, sets + ["checkpoint.schedule=all"]))
        ck = pr.use_checkpoint(tmp_path / f"ck{d}.h5")
        pr.forward()
        if d:
            with pytest.raises(RuntimeError, match=r"step 20 \(t = 0\.02\): the TS step recomputed .* above the "
                                                   r"round-off bound .* over 20 steps"):
                pr.adjoint()
        else:
            g = pr.adjoint()
            assert all(np.all(np.isfinite(v)) for v in g.values()) and ck.recomputed == 20
        assert not pr.stepper.solves.bitwise
        ck.store.close()


def _killed_then_reopened(run, kill, tmp_path, monkeypatch):
    """``run`` with every:7 stopped in-process at ``kill`` (SimulatedKill), its file left
    as a crash leaves it, and a new Problem on that file: (problem, checkpointed run)."""
    from parmbs.checkpoint import SimulatedKill
    monkeypatch.setenv("PARMBS_TEST_FAULTS", "1")
    monkeypatch.setenv("PARMBS_CHECKPOINT_INTERVAL", "0")
    monkeypatch.setenv("PARMBS_CHECKPOINT_KILL", f"raise:{kill}")
    h5 = tmp_path / "ck.h5"
    sets = _sets(run, ["checkpoint.schedule=every:7"])
    pr = Problem(load_config(FIVEBAR, sets))
    ck = pr.use_checkpoint(h5)
    with pytest.raises(SimulatedKill):
        pr.forward()
        pr.adjoint()
    ck.store.abandon()
    monkeypatch.delenv("PARMBS_CHECKPOINT_KILL")
    pr = Problem(load_config(FIVEBAR, sets))
    return pr, pr.use_checkpoint(h5)


@pytest.mark.parametrize("run,kill", [("index1-theta", "adjoint:10"), ("index1-theta", "forward:23"),
                                      ("penalty-cn", "write:30")])
def test_resumed_every_k_sweep_same_gradient(run, kill, tmp_path, monkeypatch):
    """In-process: the run stops at ``kill`` (SimulatedKill) — inside a reverse interval
    of every:7 (TSAdjoint is part-way through the TS re-run from x_42), in the forward
    run, or between an adjoint record's data and its marker — the file is left as a
    crash leaves it, a new Problem resumes it: the in-memory gradient, bit for bit."""
    values0, grad0 = reference(run)
    pr, ck = _killed_then_reopened(run, kill, tmp_path, monkeypatch)
    resumed = ck.store.adjoint_marker[1]
    tr = pr.forward()
    values = pr.objective_values(tr)
    grad = pr.adjoint()
    ck.store.close()
    assert (0 < resumed < 50) == (kill != "forward:23")     # an adjoint record in the middle
    for k in grad0:
        assert values[k] == values0[k], k
        assert np.array_equal(grad[k], grad0[k]), (k, np.max(np.abs(grad[k] - grad0[k])))


@pytest.mark.parametrize("run,kill,k0", [("index1-theta-ad", "forward:23", 21), ("penalty-beuler-ad", "forward:12", 7),
                                         ("maggi-theta-ad", "forward:30", 28), ("penalty-ark-ad", "forward:15", 14)])
def test_adaptive_forward_resumes_at_its_checkpoint(run, kill, k0, tmp_path, monkeypatch):
    """An adaptive run stopped in its forward part resumes at its last checkpoint (every:7:
    k0), not from x_0: TSTHETA from the stored step before it (ts.py
    ``resumes_from_previous``), ARKIMEX at TSAdapt's stored proposal; the TS takes only
    the N − k0 steps after it, and ψ, ∇ψ are the uninterrupted run's bit for bit."""
    values0, grad0 = reference(run)
    pr, ck = _killed_then_reopened(run, kill, tmp_path, monkeypatch)
    taken, step = [], pr.stepper.ts_step
    pr.stepper.ts_step = lambda k, x: (taken.append(k), step(k, x))[1]
    tr = pr.forward()
    forward = list(taken)                   # (the reverse sweep's re-runs step through ts_step too)
    values = pr.objective_values(tr)
    grad = pr.adjoint()
    ck.store.close()
    assert forward[0] == k0 and len(forward) == tr.steps - k0 == _STEPS[run] - k0, (forward[:3], len(forward), tr.steps)
    for k in grad0:
        assert values[k] == values0[k], k
        assert np.array_equal(grad[k], grad0[k]), (k, np.max(np.abs(grad[k] - grad0[k])))


# ----------------------------------------------------------------------------- the CLI, killed

from test_checkpoint import _cli  # noqa: E402  (the fault-armed CLI of the checkpoint tests)


def _state(h5):
    import h5py
    with h5py.File(h5, "r") as f:
        return int(f["checkpoint"]["step"][:].max()), int(f["adjoint"]["marker"][1])


@pytest.mark.parametrize("run,kills", [
    # revolve:4 on 50 steps: killed in the forward run, between a slot's data and its
    # marker, in the reverse sweep (recomputing into slots), then resumed to the end
    ("index1-theta", ["forward:20", "write:2", "adjoint:12"]),
    ("index1-theta-bg", ["forward:20", "adjoint:12"]),
    ("alpha2", ["forward:30", "adjoint:25"]),
    # a reduced ODE (its y and manifold guess in the file), an adaptive TSAdjoint run (49
    # accepted steps: the forward part re-run from x_0 and checked at the stored state),
    # ts-arkimex (our adjoint steps; 20 steps)
    ("maggi-theta-30", ["forward:20", "adjoint:12"]),
    ("index1-theta-ad", ["forward:20", "adjoint:12"]),
    ("index1-ark", ["forward:10", "adjoint:8"]),
    # adaptive ts-rk and ts-arkimex (rejected attempts repeated by the re-runs)
    ("penalty-rk-ad", ["forward:6", "adjoint:5"]),
    ("penalty-ark-ad", ["forward:15", "adjoint:12"]),
])
def test_sigkill_then_restart_same_gradient(run, kills, tmp_path):
    values0, grad0 = reference(run)
    h5 = tmp_path / "run.h5"
    partial = h5.with_name(h5.name + ".partial")
    sets = [a for s in _sets(run, ["checkpoint.schedule=revolve:4"]) for a in ("--set", s)]
    seen = set()
    for i, kill in enumerate(kills):
        where = ["-o", h5] if i == 0 else ["--restart", h5]
        r = _cli("gradient", FIVEBAR, *sets, *where, cwd=tmp_path, PARMBS_CHECKPOINT_INTERVAL=0,
                 PARMBS_CHECKPOINT_KILL=kill)
        assert r.returncode == -signal.SIGKILL, (kill, r.returncode, r.stderr)
        assert not h5.exists()
        fwd, adj = _state(partial)
        seen.add("forward" if adj < 0 else "adjoint")
    assert seen == {"forward", "adjoint"}
    js = tmp_path / "g.json"
    r = _cli("gradient", FIVEBAR, *sets, "--restart", h5, "--json", js, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "resuming" in r.stdout
    doc = json.loads(js.read_text())
    assert doc["steps"] == _STEPS[run]
    for k in grad0:
        assert doc["objectives"][k]["value"] == values0[k], k
        g = np.array(list(doc["objectives"][k]["gradient"].values()))
        assert np.array_equal(g, grad0[k]), (k, np.max(np.abs(g - grad0[k])))


@pytest.mark.parametrize("run,extra,says", [
    # the step sequence of a checkpointed run follows simulation.adapt, not an option
    ("index1-theta", ["-parmbs_ts_adapt_type", "basic"], "TSAdapt"),
    ("index1-theta-ad", ["-parmbs_ts_adapt_type", "none"], "TSAdapt"),
    ("penalty-rk-ad", ["-parmbs_ts_adapt_type", "none"], "TSAdapt"),
])
def test_ts_checkpoint_refused_exit_2(run, extra, says, tmp_path):
    sets = [a for s in _sets(run, ["checkpoint.schedule=every:5"]) for a in ("--set", s)]
    r = _cli("gradient", FIVEBAR, *sets, *extra, cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "checkpoint.schedule" in lines[0] and says in lines[0], r.stderr


def test_plot_of_a_checkpoint_only_ts_run_refused_exit_2(tmp_path):
    """every:K keeps checkpoints only: there is no trajectory to plot (before, the TS
    path skipped this check and the plot read the file's empty /trajectory)."""
    sets = [a for s in _sets("index1-theta", ["checkpoint.schedule=every:5"]) for a in ("--set", s)]
    r = _cli("simulate", FIVEBAR, *sets, "-o", tmp_path / "s.h5", "--plot", tmp_path / "p.png", cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "--plot" in lines[0] and "every:5" in lines[0], r.stderr
    assert not list(tmp_path.glob("s.h5*")) and not (tmp_path / "p.png").exists()
