"""`parmbs optimize` with method = "mma" and [[optimize.constraints]].

Model: the plate pendulum coarsened to 4 × 2 elements over 10 steps; minimize the
strain energy ∫ U dt over the 8 element densities subject to volume fraction ≥ 0.8
(lighter plates have less strain energy under self-weight, so the bound is active).
Checks: convergence to a feasible point with the constraint active and a lower ψ than
the uniform feasible design; stop/restart, SIGKILL (forward, adjoint, write) + restart
and SIGUSR1 give the uninterrupted iterate sequence; the config's constraint errors."""
import os
import signal
import subprocess
import sys

import h5py
import numpy as np
import pytest

from parmbs.config import ConfigError, load_config
from parmbs.io.hdf5 import HDF5Error
from parmbs.optimize import Optimization

from conftest import CONFIGS, FAULTS, record_file, signal_after_first_iterate

PLATE = CONFIGS / "plate-pendulum.toml"
VOL = 0.8
# dt 2e-3 (10 steps): the file's dt-converged 2.5e-4 is 8x the work; the optimiser is under test here
SETS = ["optimize.method=mma", "optimize.objective=compliance",
        f"optimize.constraints=[{{kind='volume_fraction',field='plates.P.density',lower={VOL}}}]",
        "simulation.t_end=0.02", "simulation.dt=2e-3", "simulation.progress=false", "optimize.max_it=30",
        "plates.P.nx=4", "plates.P.ny=2", "plates.P.points={tip=[4,0]}"]


def run_api(path, restart=False, extra=()):
    cfg = load_config(str(PLATE), SETS + list(extra))
    lines = []
    opt = Optimization(cfg, path, restart=restart, out=lines.append)
    code, rho = opt.run()
    x = None
    if opt.mpi.rank == 0:
        with h5py.File(record_file(path), "r") as f:
            x = f["optimize/x"][:f["optimize"].attrs["evaluations"]]
    return rho, opt.mpi.bcast(x, root=0), opt.history, lines


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    return run_api(tmp_path_factory.mktemp("mma") / "ref.h5")


def test_converges_feasible_and_active(reference, tmp_path):
    rho, x, hist, lines = reference
    assert any(l.startswith("done: converged") for l in lines), lines[-3:]
    vol = rho.mean()
    print(f"psi {hist[0, 1]:.6e} -> {hist[-1, 1]:.6e} in {int(hist[-1, 0])} updates; volume fraction {vol:.9f}")
    assert vol >= VOL - 1e-6 * VOL                      # feasible (ctol = 1e-6 relative)
    assert abs(vol - VOL) < 1e-5                        # and active
    assert hist[-1, 2] <= 1e-6 and hist[-1, 3] <= 1e-6  # violation and step columns
    assert np.all(rho >= 0.01) and np.all(rho <= 1.0)
    # better than the uniform design of the same volume (feasible, not optimal)
    opt = Optimization(load_config(str(PLATE), SETS), tmp_path / "u.h5", out=lambda *a: None)
    psi_uniform, _ = opt.evaluate(np.full(len(rho), VOL))
    opt.log.close()
    assert hist[-1, 1] < psi_uniform < hist[0, 1]


def test_objective_constraint_from_infeasible_start(tmp_path):
    """min ∫|r_tip − r_tip(0)|² dt  s.t.  ∫U dt ≤ 1e-6: the all-solid start violates the
    compliance bound 4.6-fold; the constraint gradient from the same adjoint sweep
    (one more adjoint column) brings MMA to a feasible design within two updates."""
    extra = ["optimize.objective=tip", "optimize.constraints=[{objective='compliance',upper=1e-6}]",
             "optimize.max_it=3"]
    rho, x, hist, lines = run_api(tmp_path / "o.h5", extra=extra)
    assert "compliance <= 1e-06" in lines[0]
    assert hist[0, 2] > 1.0 and np.all(hist[2:, 2] == 0.0)
    opt = Optimization(load_config(str(PLATE), SETS + extra), tmp_path / "check.h5", out=lambda *a: None)
    vals, grads = opt.evaluate_all(rho)
    opt.log.close()
    assert vals["compliance"] <= 1e-6 and set(grads) == {"tip", "compliance"}


def test_constraint_rows():
    """Each bound is one row (c − upper)/|upper| or (lower − c)/|lower|, gradient alike."""
    from parmbs.optimize.constraints import Constraints
    from parmbs.sensitivity.problem import Problem
    cfg = load_config(str(PLATE), ["optimize.method=mma", "optimize.constraints=[{objective='tip',lower=2.0,"
                                   "upper=4.0},{kind='volume_fraction',field='plates.P.density',upper=0.5}]"])
    design = Problem(cfg).design
    cons = Constraints(cfg, design)
    assert len(cons) == 3 and cons.objectives == ["tip"]
    rho = np.linspace(0.1, 0.9, len(design))
    g = np.arange(len(design), dtype=float)
    f, df = cons.evaluate(rho, {"tip": 3.0}, {"tip": g})
    assert np.allclose(f, [(3.0 - 4.0) / 4.0, (2.0 - 3.0) / 2.0, (rho.mean() - 0.5) / 0.5], rtol=1e-15)
    assert np.array_equal(df[0], g / 4.0) and np.array_equal(df[1], -g / 2.0)
    assert np.allclose(df[2], 1.0 / len(design) / 0.5, rtol=1e-15)


def test_state_in_hdf5(reference, tmp_path):
    """The state on disk: the two slots, the current one checksummed, iteration = updates."""
    path = tmp_path / "s.h5"
    run_api(path, extra=["optimize.max_it=3"])
    with h5py.File(path, "r") as f:
        g = f["optimize/mma"]
        slot = int(g.attrs["current"])
        meta, state = g[f"meta{slot}"][:], g[f"state{slot}"][:]
        assert int(meta[0]) == 3 and state.shape == (5, 8)
        x = f["optimize/x"][:f["optimize"].attrs["evaluations"]]
        assert f["optimize/history"].attrs["columns"].startswith("iteration,objective,max_violation")
    assert np.array_equal(x, reference[1][:4])            # x_0 … x_3 evaluated (max_it reached at x_3)
    assert np.array_equal(state[0], x[3])                 # x after 3 updates
    assert np.array_equal(state[1], x[2]) and np.array_equal(state[2], x[1])   # xold1, xold2
    assert np.all(state[3] < state[0]) and np.all(state[4] > state[0])        # low < x < upp


def test_restart_after_stop_is_exact(reference, tmp_path):
    path = tmp_path / "r.h5"
    run_api(path, extra=["optimize.max_it=4"])
    rho, x, hist, lines = run_api(path, restart=True)
    assert "resumed: MMA state after 4 updates" in lines[0]
    assert np.array_equal(x, reference[1])
    assert np.array_equal(rho, reference[0])
    assert np.array_equal(hist[:, :5], reference[2][:, :5])


def _asymptote_width(path):
    """max over j of (x − low, upp − x)/(upper − lower) in the record's current MMA state,
    x the iterate the asymptotes were set at (xold1: the state's x is the update's result)."""
    with h5py.File(record_file(path), "r") as f:
        g = f["optimize/mma"]
        _, x, _, low, upp = g[f"state{int(g.attrs['current'])}"][:]
    return max(np.max(x - low), np.max(upp - x)) / (1.0 - 0.01)        # the densities' bounds


def test_asymax_bounds_the_asymptotes_and_a_restart_may_change_it(reference, tmp_path):
    """optimize.asymax reaches MMA (from update 3 on, Svanberg's clip of the asymptotes to
    asymax·(upper − lower) around x), and a restart may set it (a continuation of the same
    problem): the iterates before it are the reference run's, those after it differ."""
    path = tmp_path / "a.h5"
    run_api(path, extra=["optimize.max_it=4"])
    wide = _asymptote_width(path)
    rho, x, hist, lines = run_api(path, restart=True, extra=["optimize.max_it=8", "optimize.asymax=0.2"])
    assert "resumed: MMA state after 4 updates" in lines[0]
    assert np.array_equal(x[:5], reference[1][:5])
    assert len(x) >= 7 and not np.array_equal(x[5:7], reference[1][5:7])
    narrow = _asymptote_width(path)
    print(f"asymptote half-width / range: {wide:.3f} after 4 updates (asymax 10), {narrow:.3f} after 8 (asymax 0.2)")
    assert wide > 0.3                                   # Svanberg's: asyinit 0.5 widened or shrunk by 0.7
    assert narrow <= 0.2 * (1 + 1e-12)                  # clipped: x − (x − 0.2·range), rounding only


def test_raa0_and_epsimin_reach_mma_and_a_restart_may_change_them(reference, tmp_path):
    """optimize.raa0 / optimize.epsimin (MMA's convexity term and last barrier, mma.py) reach
    the update, and a restart may set them (how the same problem is stepped): the record is
    accepted, the iterates before the change are the reference run's, those after differ."""
    path = tmp_path / "r.h5"
    run_api(path, extra=["optimize.max_it=4"])
    rho, x, hist, lines = run_api(path, restart=True, extra=["optimize.max_it=8", "optimize.raa0=0.1",
                                                             "optimize.epsimin=1e-4"])
    assert "resumed: MMA state after 4 updates" in lines[0]
    assert np.array_equal(x[:5], reference[1][:5])
    diff = np.max(np.abs(x[5:7] - reference[1][5:7]))
    print(f"max |x - x_ref| at iterates 5-6 after the change: {diff:.2e}")
    assert len(x) >= 7 and diff > 1e-3       # raa0 = 0.1, 10^4 x the default: a much stiffer model (measured 3.7e-2)


def _as_if_older(path, cfg, keys):
    """Make the record look written before the [optimize] ``keys`` existed: drop them from
    its /config and store the hash that code computed (the same resolved config without them)."""
    import tomllib
    import tomli_w
    from parmbs.checkpoint.store import resolved_sha256
    from parmbs.optimize.driver import RUN_LENGTH_KEYS
    with h5py.File(record_file(path), "r+") as f:
        d = tomllib.loads(f["config"][()].decode())
        for k in keys:
            del d["optimize"][k]
        del f["config"]
        f.create_dataset("config", data=tomli_w.dumps(d), dtype=h5py.string_dtype("utf-8"))
        ignore = [("optimize", k) for k in (*RUN_LENGTH_KEYS, *keys)]
        f["optimize"].attrs["resolved_sha256"] = resolved_sha256(cfg, ignore=ignore)


def test_record_older_than_a_schema_key_resumes(reference, tmp_path):
    """A record written before optimize.gradient/fd_step existed resumes while those keys
    are at their defaults (the behaviour its code had: checkpoint/record_match.keys_added_since), exactly;
    a non-default value of such a key is another optimization."""
    path = tmp_path / "o.h5"
    run_api(path, extra=["optimize.max_it=4"])
    _as_if_older(path, load_config(str(PLATE), SETS), ("gradient", "fd_step"))
    with pytest.raises(HDF5Error, match="fd_step = '[(]not set[)]' in the record, 0.02 now"):
        run_api(path, restart=True, extra=["optimize.fd_step=0.02"])
    rho, x, hist, lines = run_api(path, restart=True)
    assert "resumed: MMA state after 4 updates" in lines[0]
    assert np.array_equal(x, reference[1]) and np.array_equal(rho, reference[0])


def _cli(args, env_extra=None):
    env = dict(os.environ, PYTHONUNBUFFERED="1", **(env_extra or {}))
    return subprocess.Popen([sys.executable, "-m", "parmbs", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def _sets(extra=()):
    return [a for s in SETS + list(extra) for a in ("--set", s)]


def _record(path):
    with h5py.File(path, "r") as f:
        return f["optimize/x"][:f["optimize"].attrs["evaluations"]], f["optimize/design"][:]


SHORT = ["optimize.max_it=5"]          # the first 6 iterates are enough to compare


@pytest.mark.parametrize("event", ["forward:3", "adjoint:3", "write:3", "write:4"])
def test_sigkill_then_resume(reference, tmp_path, event):
    """write:3 = the 2nd evaluation row, write:4 = the 2nd MMA state (between data and counter)."""
    path = tmp_path / "k.h5"
    p = _cli(["optimize", PLATE, "-o", path, *_sets(SHORT)], {"PARMBS_OPTIMIZE_KILL": event, **FAULTS})
    out, err = p.communicate(timeout=600)
    assert p.returncode == -signal.SIGKILL, (p.returncode, out, err)
    r = subprocess.run([sys.executable, "-m", "parmbs", "optimize", PLATE, "--restart", path, *_sets(SHORT)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "resumed: MMA state after" in r.stdout
    x, rho = _record(path)
    assert np.array_equal(x, reference[1][:6])
    assert np.array_equal(rho, reference[1][5])
    assert os.path.exists(tmp_path / "k.png")


def test_sigusr1_stops_at_a_safe_point(reference, tmp_path):
    path = tmp_path / "u.h5"
    p = _cli(["optimize", PLATE, "-o", path, *_sets(SHORT)])
    out, err = signal_after_first_iterate(p, timeout=600)
    assert p.returncode == 0, err
    assert "stopped on SIGUSR1 at a safe point" in out and "--restart" in out
    rho, x, _, _ = run_api(path, restart=True, extra=SHORT)
    assert np.array_equal(x, reference[1][:6]) and np.array_equal(rho, reference[1][5])


@pytest.mark.parametrize("constraint, key", [
    ("{objective='nope',upper=1.0}", "optimize.constraints[0].objective"),
    ("{objective='tip',upper=1.0,foo=1}", "optimize.constraints[0].foo"),
    ("{objective='tip'}", "optimize.constraints[0].upper"),
    ("{objective='tip',upper=1.0,lower=2.0}", "optimize.constraints[0].upper"),
    ("{kind='volume_fraction',upper=0.5}", "optimize.constraints[0].field"),
    ("{kind='volume_fraction',field='plates.Q.density',upper=0.5}", "optimize.constraints[0].field"),
    ("{kind='volume_fraction',objective='tip',upper=0.5}", "optimize.constraints[0]"),
])
def test_constraint_config_errors(constraint, key):
    with pytest.raises(ConfigError) as e:
        load_config(str(PLATE), ["optimize.method=mma", f"optimize.constraints=[{constraint}]"])
    assert e.value.key == key and "plate-pendulum.toml" in str(e.value)


def test_tao_refuses_constraints():
    with pytest.raises(ConfigError) as e:
        load_config(str(PLATE), ["optimize.constraints=[{objective='tip',upper=1.0}]"])
    assert e.value.key == "optimize.constraints" and "mma" in e.value.message


PENDULUM_SETS = ["optimize.method=mma", "optimize.objective=tip_deviation", "optimize.move=1.0",
                 "optimize.max_it=1", "simulation.t_end=0.05", "simulation.dt=1e-2", "simulation.progress=false",
                 "design=[{name='theta0', path='bodies.bar.initial.angle', lower=-3.0, upper=0.0}]"]


def _pendulum_run(path, descent):
    lines = []
    sets = PENDULUM_SETS + [f"optimize.descent={str(descent).lower()}"]
    opt = Optimization(load_config(str(CONFIGS / "pendulum.toml"), sets), path, out=lines.append)
    adjoint, sweeps = opt.problem.adjoint, []
    opt.problem.adjoint = lambda *a, **k: sweeps.append(1) or adjoint(*a, **k)
    opt.run()
    with h5py.File(record_file(path), "r") as f:
        x = f["optimize/x"][:2, 0]
    return opt.history, x, [l for l in lines if l.startswith("trial rejected")], len(sweeps)


def test_descent_guard_rejects_a_rising_iterate(tmp_path):
    """optimize.descent: the pendulum's ∫|r_tip − r_tip(0)|² dt over 5 steps is ≈ ∝ cos²θ₀
    (least at hanging, θ₀ = −π/2); from θ₀ = −60° MMA's first step (monotone model, move 1,
    asyinit 0.5) goes 0.9·0.5 of the range [−3, 0] to −2.4 rad, beyond hanging, where ψ is
    2.2× higher.  Without the guard that is iterate 1; with it the trial is rejected and
    iterate 1 is the halved step x⁰ + ½(x¹ − x⁰) (the same trial: equal to rounding), below ψ(x⁰)."""
    hist, x, rejected, sweeps = _pendulum_run(tmp_path / "plain.h5", False)
    hist_d, x_d, rejected_d, sweeps_d = _pendulum_run(tmp_path / "descent.h5", True)
    print(f"psi {hist[0, 1]:.4e} -> {hist[1, 1]:.4e} (plain), {hist_d[1, 1]:.4e} (descent); "
          f"theta0 {x[0]:.6f} -> {x[1]:.6f}, {x_d[1]:.6f}")
    assert hist[1, 1] > 2 * hist[0, 1] and not rejected          # the overshoot the guard is for
    assert abs(x[1] - (-np.pi / 3 - 0.45 * 3.0)) < 0.01            # MMA's step to its asymptote bound
    assert len(rejected_d) == 1 and "of iterate 0" in rejected_d[0]
    assert hist_d[1, 1] < hist_d[0, 1]
    assert abs(x_d[1] - (x[0] + 0.5 * (x[1] - x[0]))) <= 4 * np.finfo(float).eps * abs(x[1])
    # the rejected trial paid its forward run only: adjoint sweeps at iterates 0 and 1, none for it
    assert sweeps == 2 and sweeps_d == 2
