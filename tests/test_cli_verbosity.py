"""-q/--quiet, -v/--verbose and the progress of every sweep (cli.py ``_Sweep``,
io/progress.py, ``Problem.adjoint/direct/finite_differences(progress=...)``).

The CLI runs are subprocesses of the five-bar over 20 steps (~2 s each); the progress
bar is checked with stderr on a pseudo-terminal, where io/progress.py draws it."""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
FIVEBAR = str(ROOT / "configs" / "fivebar.toml")
SHORT = ["--set", "simulation.t_end=0.02"]          # 20 steps of dt = 1e-3


def _env():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("PETSC_OPTIONS", None)
    return env


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "parmbs", *args], capture_output=True, text=True,
                          env=_env(), cwd=ROOT, timeout=120)


def _cli_tty(*args):
    """Run with stderr on a pseudo-terminal: (returncode, stdout, stderr as text)."""
    import fcntl
    import struct
    import termios
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))   # a 0-column pty: empty bars
    p = subprocess.Popen([sys.executable, "-m", "parmbs", *args], stdout=subprocess.PIPE, stderr=slave,
                         env=_env(), cwd=ROOT)
    os.close(slave)
    chunks = []
    while True:
        try:
            b = os.read(master, 65536)
        except OSError:                 # EIO: the child closed the terminal
            break
        if not b:
            break
        chunks.append(b)
    os.close(master)
    out = p.stdout.read().decode()
    p.stdout.close()
    return p.wait(timeout=120), out, b"".join(chunks).decode(errors="replace")


def _results(stdout):
    """The result lines of `gradient`: 'psi = ...' and '  dpsi/d... = ...'."""
    return [ln for ln in stdout.splitlines() if ln.startswith(("psi", "  dpsi"))]


def test_gradient_quiet_default_verbose():
    d, q, v = (_cli("gradient", FIVEBAR, *SHORT, *f) for f in ([], ["-q"], ["--verbose"]))
    assert (d.returncode, q.returncode, v.returncode) == (0, 0, 0), (d.stderr, q.stderr, v.stderr)
    res = _results(d.stdout)
    assert len(res) == 3 * 6                        # 3 objectives, 5 design variables each
    # -q: the result lines and nothing else; the same bytes as the default run's
    assert q.stdout.splitlines() == res and q.stderr == ""
    # default: a header line too (after the compiled steps' compile/cache lines, parmbs/compiled);
    # nothing on stderr (20 steps: no progress line under 2 s)
    lines = d.stdout.splitlines()
    if importlib.util.find_spec("numba"):
        assert lines.pop(0).startswith("compiled: one numba")
        assert lines.pop(0).startswith("compiled: adjoint step kernels")     # its first use in the process
    assert lines[0].startswith("fivebar: adjoint gradient, 20 steps")
    assert d.stderr == ""
    # -v: the default stdout (bar the measured times) and one line per sweep on stderr
    assert _results(v.stdout) == res and len(v.stdout.splitlines()) == len(d.stdout.splitlines())
    err = v.stderr.splitlines()
    assert err[0].startswith("parmbs: forward: 20 steps in ") and "steps/s" in err[0]
    assert err[1].startswith("parmbs: forward: Newton iterations per step: mean ")
    assert err[2].startswith("parmbs: adjoint: 20 steps in ") and len(err) == 3


def test_flags_before_command_and_after_petsc_options():
    """-v/-q are parmbs' own: `-v` is not taken for a PETSc option (parmbs/_petsc.py
    split_petsc_args) when written after one, and works before the command too."""
    v = _cli("gradient", FIVEBAR, *SHORT, "--method", "fd", "-parmbs_ksp_type", "preonly", "-v")
    assert v.returncode == 0, v.stderr
    err = v.stderr.splitlines()
    assert any(ln.startswith("parmbs: fd: 5 columns in ") and "columns/s" in ln for ln in err), err
    assert not any("warning" in ln for ln in err), err      # -parmbs_ksp_type was read, -v not PETSc's
    q = _cli("-q", "simulate", FIVEBAR, *SHORT)
    assert q.returncode == 0 and q.stderr == ""
    assert q.stdout.splitlines() and all(ln.startswith("  ") and " = " in ln for ln in q.stdout.splitlines())
    both = _cli("simulate", FIVEBAR, *SHORT, "-q", "-v")
    assert both.returncode == 2 and both.stderr.count("\n") == 1 and "-q/--quiet" in both.stderr


def test_sweep_progress_on_a_terminal():
    """On a terminal every sweep draws its bar: forward and direct steps, fd columns;
    -q and simulation.progress = false draw none."""
    rc, out, err = _cli_tty("gradient", FIVEBAR, *SHORT, "--method", "direct")
    assert rc == 0, err
    assert "parmbs forward" in err and "parmbs direct" in err and "20/20" in err
    rc, out, err = _cli_tty("gradient", FIVEBAR, *SHORT, "--method", "fd")
    assert rc == 0 and "parmbs fd" in err and "5/5" in err and "column" in err
    for quiet in (["-q"], ["--set", "simulation.progress=false"]):
        rc, out, err = _cli_tty("gradient", FIVEBAR, *SHORT, "--method", "direct", *quiet)
        assert rc == 0 and "parmbs forward" not in err and "parmbs direct" not in err, err


@pytest.fixture(scope="module")
def problem():
    from parmbs.config import load_config
    from parmbs.sensitivity.problem import Problem
    return Problem(load_config(FIVEBAR, ["simulation.t_end=0.01", "simulation.progress=false"]))


def _recorded(fn):
    calls = []
    res = fn(lambda k, N: calls.append((k, N)))
    return res, calls


def test_problem_sweeps_report_every_step(problem, tmp_path):
    """adjoint and direct report k = 1..N of N once each, finite differences column
    j = 1..J; the gradients are those of a run without a callback."""
    pr = problem
    N, J = pr.nsteps, len(pr.design.names)
    pr.forward()
    for name in ("adjoint", "direct"):
        g, calls = _recorded(lambda cb: getattr(pr, name)(progress=cb))
        assert calls == [(k, N) for k in range(1, N + 1)], (name, calls)
        ref = getattr(pr, name)()
        assert all(np.array_equal(g[o], ref[o]) for o in ref)
    g, calls = _recorded(lambda cb: pr.finite_differences(1e-6, progress=cb))
    assert calls == [(j, J) for j in range(1, J + 1)]
    # a checkpointed adjoint (every:4, recomputing between checkpoints) reports its reverse steps
    from parmbs.config import load_config
    from parmbs.sensitivity.problem import Problem
    ck = Problem(load_config(FIVEBAR, ["simulation.t_end=0.01", "simulation.progress=false",
                                       "checkpoint.schedule=every:4"]))
    run = ck.use_checkpoint(str(tmp_path / "ck.h5"))
    try:
        ck.forward()
        g, calls = _recorded(lambda cb: ck.adjoint(progress=cb))
    finally:
        run.store.close()
    assert calls == [(k, N) for k in range(1, N + 1)]


def test_plain_progress_lines_name_sweep_and_unit():
    import io
    from parmbs.io.progress import PlainProgress
    s = io.StringIO()
    pg = PlainProgress("fd", stream=s, min_interval=0.0, unit="column")
    for j in range(1, 5):
        pg(j, 4)
    lines = s.getvalue().splitlines()
    assert lines[-1].startswith("parmbs: fd: column 4/4 (100.0 %), ") and "columns/s, ETA 0:00" in lines[-1]
    # resumed at step 50 of 100: the rate counts the steps of this run only
    s = io.StringIO()
    pg = PlainProgress("adjoint", stream=s, min_interval=0.0)
    pg(51, 100)
    assert pg.k0 == 50 and "step 51/100" in s.getvalue()
