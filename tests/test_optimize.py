"""`parmbs optimize`: TAO on the adjoint gradient, exact restart after a stop, a
SIGKILL (during forward, adjoint and the record write) or SIGUSR1; bad input.

Model: the five-bar over 0.5 s (dt = 1e-2), ψ1 over its five design variables.  Its
optimum is the static balance of the initial configuration, ψ* = 0 (seed 004 §5.1)."""
import os
import signal
import subprocess
import sys

import h5py
import numpy as np
import pytest

from parmbs.config import load_config
from parmbs.optimize import Optimization

from conftest import CONFIGS, FAULTS, record_file, signal_after_first_iterate

FIVEBAR = CONFIGS / "fivebar.toml"
SETS = ["simulation.t_end=0.5", "simulation.dt=1e-2", "optimize.objective=psi1",
        "optimize.max_it=20", "simulation.progress=false"]


def run_api(path, restart=False, extra=()):
    cfg = load_config(str(FIVEBAR), SETS + list(extra))
    opt = Optimization(cfg, path, restart=restart, out=lambda *a: None)
    code, rho = opt.run()
    x = None
    if opt.mpi.rank == 0:                     # one reader (HDF5 file locks)
        with h5py.File(record_file(path), "r") as f:
            x = f["optimize/x"][:f["optimize"].attrs["evaluations"]]
    return rho, opt.mpi.bcast(x, root=0), opt.history


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The uninterrupted run."""
    return run_api(tmp_path_factory.mktemp("opt") / "ref.h5")


def test_converges_to_static_balance(reference):
    rho, x, hist = reference
    psi0, psi_end = hist[0, 1], hist[-1, 1]
    print(f"psi {psi0:.3e} -> {psi_end:.3e} in {int(hist[-1, 0])} iterations, {len(x)} evaluations")
    assert psi_end < 1e-12 * psi0
    assert hist[-1, 2] <= 1e-8                 # gatol met


def test_restart_after_stop_is_exact(reference, tmp_path):
    path = tmp_path / "r.h5"
    run_api(path, extra=["optimize.max_it=3"])            # stops early (max_it is not part of the hash)
    rho, x, hist = run_api(path, restart=True)
    assert np.array_equal(x, reference[1])                # the same evaluation sequence, bit for bit
    assert np.array_equal(rho, reference[0])
    assert np.array_equal(hist[:, :5], reference[2][:, :5])


def _cli(args, env_extra=None):
    env = dict(os.environ, PYTHONUNBUFFERED="1", **(env_extra or {}))
    return subprocess.Popen([sys.executable, "-m", "parmbs", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def _sets():
    return [a for s in SETS for a in ("--set", s)]


@pytest.mark.parametrize("event", ["forward", "adjoint", "write"])
def test_sigkill_then_resume(reference, tmp_path, event):
    path = tmp_path / "k.h5"
    p = _cli(["optimize", FIVEBAR, "-o", path, *_sets()], {"PARMBS_OPTIMIZE_KILL": f"{event}:4", **FAULTS})
    out, err = p.communicate(timeout=600)
    assert p.returncode == -signal.SIGKILL, (p.returncode, out, err)
    assert not path.exists()                             # the record is renamed onto path when done
    with h5py.File(record_file(path), "r") as f:
        done = int(f["optimize"].attrs["evaluations"])
    assert done == 3                                     # the 4th evaluation never counted
    r = subprocess.run([sys.executable, "-m", "parmbs", "optimize", FIVEBAR, "--restart", path, *_sets()],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "resumed: 3 evaluations replayed" in r.stdout
    with h5py.File(path, "r") as f:
        x = f["optimize/x"][:f["optimize"].attrs["evaluations"]]
        rho = f["optimize/design"][:]
    assert np.array_equal(x, reference[1])
    assert np.array_equal(rho, reference[0])


def test_sigusr1_stops_at_a_safe_point(reference, tmp_path):
    path = tmp_path / "s.h5"
    p = _cli(["optimize", FIVEBAR, "-o", path, *_sets()])
    out, err = signal_after_first_iterate(p, timeout=600)
    assert p.returncode == 0, err
    assert "stopped on SIGUSR1 at a safe point" in out and "--restart" in out
    with h5py.File(record_file(path), "r") as f:
        n = int(f["optimize"].attrs["evaluations"])
        assert 2 <= n < len(reference[1])
    rho, x, _ = run_api(path, restart=True)
    assert np.array_equal(x, reference[1]) and np.array_equal(rho, reference[0])


def test_signal_during_setup_stops_before_the_first_evaluation(reference, tmp_path):
    """`parmbs optimize` holds its SIGTERM/SIGUSR1 handlers from start-up to exit: a
    signal that arrives while the problem is set up stops the run before its first
    evaluation (exit 0, a complete record with 0 evaluations, not finished), and the
    resumed run is the uninterrupted one.  The record is created atomically."""
    from parmbs.optimize.driver import _Signals
    path, lines = tmp_path / "early.h5", []
    with _Signals() as sig:
        os.kill(os.getpid(), signal.SIGUSR1)               # a real signal, during set-up
        opt = Optimization(load_config(str(FIVEBAR), SETS), path, out=lines.append, signals=sig)
        code, rho = opt.run()
    assert code == 0 and rho is None
    assert any(line.startswith("stopped on SIGUSR1") for line in lines), lines
    assert not list(tmp_path.glob("*.creating-*"))
    with h5py.File(record_file(path), "r") as f:
        assert int(f["optimize"].attrs["evaluations"]) == 0 and not f["optimize"].attrs["finished"]
    rho, x, _ = run_api(path, restart=True)
    assert np.array_equal(x, reference[1]) and np.array_equal(rho, reference[0])
    with h5py.File(path, "r") as f:
        assert f["optimize"].attrs["finished"]


def _one_line_error(r, *needles):
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])


def test_bad_input(tmp_path, reference):
    run = lambda *a: subprocess.run([sys.executable, "-m", "parmbs", "optimize", FIVEBAR, *map(str, a)],
                                    capture_output=True, text=True, timeout=300)
    _one_line_error(run("-o", tmp_path / "a.h5", *_sets(), "--set", "optimize.objective=nope"),
                    "optimize.objective", "nope")
    _one_line_error(run("-o", tmp_path / "b.h5", *_sets(), "--set", "optimize.method=mma"),
                    "design.Ls1.lower", "mma")                     # MMA needs finite bounds
    _one_line_error(run("-o", tmp_path / "b.h5", *_sets(), "--set",
                        "optimize.constraints=[{objective='psi2',upper=1.0}]"),
                    "optimize.constraints", "mma")                 # TAO: bounds only
    _one_line_error(run("--restart", tmp_path / "missing.h5", *_sets()), "missing.h5", "no such file")
    # an existing record is never overwritten by a fresh run
    path = tmp_path / "c.h5"
    run_api(path, extra=["optimize.max_it=1"])
    _one_line_error(run("-o", path, *_sets()), "c.h5", "--restart")
    # another config
    _one_line_error(run("--restart", path, *_sets(), "--set", "bodies.A1.mass=2"), "resolved_sha256")
    # a corrupted evaluation row
    with h5py.File(path, "r+") as f:
        f["optimize/x"][1, 0] += 1e-3
    _one_line_error(run("--restart", path, *_sets()), "/optimize/x[1]", "checksum")
