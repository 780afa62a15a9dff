"""Run the ``parmbs`` command line inside the test process (issue 19's suite time).

``parmbs_in_process(*args, cwd=...)`` calls ``parmbs.cli.main(argv)`` — the function
``python -m parmbs`` runs (parmbs/__main__.py: ``sys.exit(main())``), so the same code
parses the arguments, maps each exception to its exit code and one ``parmbs: error:``
line (``cli._failure_line``) and prints — and returns what ``subprocess.run(...,
capture_output=True, text=True)`` would: a ``CompletedProcess`` with ``returncode``,
``stdout`` and ``stderr``.  Output is caught at the file descriptors (PETSc's and numba's
C-level writes too), stdout and stderr apart, as a pipe sees them (not a terminal).

A ``python -m parmbs`` start costs 0.5–0.9 s CPU (interpreter, ``import parmbs``,
pydantic's validators, numba's cache loads: benchmarks/README.md, suite19b) before the
command does anything; a bad-input case itself takes milliseconds.

Use it only where the process boundary is not what the test checks.  Keep a real
``python -m parmbs`` for: kills (SIGKILL, signals) and ``--restart`` after them;
``mpirun``; environment variables read at start-up (``PETSC_OPTIONS``, the fault switch
``PARMBS_TEST_FAULTS``, ``NUMBA_*``, ``OMP_*``); PETSc options on the command line (PETSc
already runs in this process: they would go into its database, not to PetscInitialize —
refused here); user code that may exit or is imported by name from ``cwd`` (a
``callable = "mod:f"`` objective: ``sys.modules``/``sys.path`` of this process); a
terminal (tqdm); and at least one test per exit-code class (0, 1, 2) so the real
process's exit code and the absence of a traceback at the top level stay covered
(tests/test_cli.py keeps them).

Each call checks that the run left this process as it found it — PETSc's options database
(except the options parmbs holds for a config's ``simulation.petsc_options``, which the
library keeps by its documented rule: parmbs/petsc_options.py ``set_config_options``),
warnings filters, cwd, ``os.environ``, ``sys.path``, user modules kept in ``sys.modules``, Python-level signal handlers,
logging handlers and levels (a logger new since, made by a module the run imported first, only if it has handlers), matplotlib's rcParams but the backend (the plot commands select Agg), numpy's error state and print options — and fails with the
difference if not, so a leak into the next test is an error here, not a puzzle there.
``main()`` sets SIGPIPE to the Unix default on purpose (parmbs/cli.py
``_default_sigpipe``: for the process it ends with); that one is put back first.
"""
import contextlib
import logging
import os
import signal
import subprocess
import sys
import tempfile
import warnings

import numpy as np

__all__ = ["parmbs_in_process", "petsc_options", "process_state"]


def petsc_options(args):
    """The PETSc options among ``parmbs ARGS`` (``-parmbs_ts_adapt_type basic``), as
    parmbs/cli.py splits them off; a run with any needs a real process."""
    from parmbs import cli
    from parmbs._petsc import split_petsc_args
    return split_petsc_args([str(a) for a in args], cli._own_options(cli.build_parser()))[1]


def parmbs_in_process(*args, cwd=None):
    """``python -m parmbs ARGS`` (run in ``cwd``) as ``cli.main``; a ``CompletedProcess``."""
    from parmbs import cli, compiled  # noqa: F401
    from parmbs._petsc import PETSc  # noqa: F401  (PETSc runs before the snapshot)
    argv = [str(a) for a in args]
    petsc = petsc_options(argv)
    assert not petsc, f"PETSc options {petsc} need a real process (PETSc already runs here)"
    before = process_state()
    pipe = signal.getsignal(signal.SIGPIPE)
    old_cwd = os.getcwd()
    try:
        with _captured() as (out, err):
            if cwd is not None:
                os.chdir(cwd)
            try:
                code = cli.main(argv)
            finally:
                os.chdir(old_cwd)
    finally:
        signal.signal(signal.SIGPIPE, pipe)
    _check_unchanged(before, process_state(), argv)
    return subprocess.CompletedProcess(["parmbs", *argv], code, out.text, err.text)


class _Text:
    text = ""


@contextlib.contextmanager
def _captured():
    """stdout and stderr (file descriptors 1, 2 and ``sys.stdout``/``sys.stderr``) into
    two temporary files; their text in the yielded holders' ``text`` afterwards."""
    holders = _Text(), _Text()
    streams = ("stdout", "stderr")
    for s in streams:
        getattr(sys, s).flush()
    with tempfile.TemporaryFile() as f1, tempfile.TemporaryFile() as f2:
        saved_fd = [os.dup(1), os.dup(2)]
        saved_py = [sys.stdout, sys.stderr]
        try:
            os.dup2(f1.fileno(), 1)
            os.dup2(f2.fileno(), 2)
            sys.stdout = open(1, "w", encoding="utf-8", errors="replace", buffering=1, closefd=False)
            sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", buffering=1, closefd=False)
            yield holders
        finally:
            for s in streams:
                getattr(sys, s).flush()
            sys.stdout, sys.stderr = saved_py
            for fd, keep in zip((1, 2), saved_fd):
                os.dup2(keep, fd)
                os.close(keep)
            for h, f in zip(holders, (f1, f2)):
                f.seek(0)
                h.text = f.read().decode("utf-8", errors="replace")


def process_state():
    """What a command must leave as it found it (see the module doc)."""
    from parmbs import petsc_options
    from parmbs._petsc import PETSc
    held = set(petsc_options._FROM_CONFIG)
    loggers = [logging.getLogger()] + [lg for lg in logging.Logger.manager.loggerDict.values()
                                        if isinstance(lg, logging.Logger)]
    sigs = {}
    for s in signal.valid_signals():
        try:
            sigs[int(s)] = signal.getsignal(s)
        except (ValueError, OSError):
            pass
    return {
        "PETSc options": {k: v for k, v in PETSc.Options().getAll().items() if k not in held},
        "warnings filters": list(warnings.filters),
        "cwd": os.getcwd(),
        "environment": dict(os.environ),
        "sys.path": list(sys.path),
        "user modules": sorted(m for m in sys.modules if m.startswith("parmbs_user_")),
        "signal handlers": sigs,
        "logging": {lg.name: (lg.level, list(lg.handlers), lg.disabled) for lg in loggers},
        "numpy error state": np.geterr(),
        "numpy print options": np.get_printoptions(),
        "matplotlib rcParams": _rc(),
    }


def _rc():
    """matplotlib's settings but the backend (parmbs's plot commands select Agg, the one a
    headless test process has anyway); None if matplotlib is not imported yet."""
    mpl = sys.modules.get("matplotlib")
    if mpl is None:
        return None
    return {k: v for k, v in mpl.rcParams.items() if k not in ("backend", "backend_fallback")}


def _check_unchanged(before, after, argv):
    changed = []
    for what, b in before.items():
        a = after[what]
        if a == b or (what == "matplotlib rcParams" and b is None):     # (first imported by the run)
            continue
        if isinstance(b, dict) and isinstance(a, dict):
            keys = sorted({k for k in set(a) | set(b) if a.get(k, "<none>") != b.get(k, "<none>")}, key=str)
            if what == "logging":           # a logger first made by a module imported now: fine if bare
                keys = [k for k in keys if k in b or a[k][1]]
                if not keys:
                    continue
            diff = ", ".join(f"{k}: {b.get(k, '<none>')!r} -> {a.get(k, '<none>')!r}" for k in keys[:8])
        else:
            diff = f"{b!r} -> {a!r}"
        changed.append(f"{what} ({diff})")
    assert not changed, f"parmbs {' '.join(argv)} in-process changed this process: " + "; ".join(changed)
