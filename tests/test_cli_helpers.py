"""tests/cli_helpers.py's in-process ``parmbs``: output caught as a pipe would, the exit
code returned, and a run that leaves this process changed fails loudly."""
import os
import signal
import sys
import warnings

import numpy as np
import pytest

from cli_helpers import parmbs_in_process, petsc_options


def _fake_main(monkeypatch, body):
    from parmbs import cli
    monkeypatch.setattr(cli, "main", body)


def test_output_of_python_and_of_the_descriptors_and_the_exit_code(monkeypatch, tmp_path):
    def main(argv):
        print("to stdout", argv)
        print("to stderr", file=sys.stderr)
        os.write(1, b"fd 1\n")              # (C code: PETSc, numba)
        os.write(2, b"fd 2\n")
        assert os.getcwd() == str(tmp_path)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)   # what cli._default_sigpipe does
        return 7
    _fake_main(monkeypatch, main)
    pipe = signal.getsignal(signal.SIGPIPE)
    r = parmbs_in_process("info", tmp_path / "x.toml", cwd=tmp_path)
    assert r.returncode == 7
    assert r.stdout == f"to stdout ['info', '{tmp_path / 'x.toml'}']\nfd 1\n"
    assert r.stderr == "to stderr\nfd 2\n"
    assert signal.getsignal(signal.SIGPIPE) == pipe and os.getcwd() != str(tmp_path)


@pytest.mark.parametrize("what", ["environment", "warnings filters", "signal handlers", "numpy error state",
                                  "logging"])
def test_a_leak_fails_loudly(monkeypatch, what):
    import logging
    handler = logging.NullHandler()
    undo = {"environment": lambda: os.environ.pop("PARMBS_TEST_LEAK", None),
            "warnings filters": lambda: warnings.filters.pop(0),
            "signal handlers": lambda: signal.signal(signal.SIGUSR2, signal.SIG_DFL),
            "numpy error state": lambda: np.seterr(all="warn", under="ignore"),
            "logging": lambda: logging.getLogger("parmbs").removeHandler(handler)}
    leak = {"environment": lambda: os.environ.__setitem__("PARMBS_TEST_LEAK", "1"),
            "warnings filters": lambda: warnings.filters.insert(0, ("ignore", None, Warning, None, 0)),
            "signal handlers": lambda: signal.signal(signal.SIGUSR2, signal.SIG_IGN),
            "numpy error state": lambda: np.seterr(all="raise"),
            "logging": lambda: logging.getLogger("parmbs").addHandler(handler)}
    _fake_main(monkeypatch, lambda argv: leak[what]() or 0)
    state = np.geterr()
    try:
        with pytest.raises(AssertionError, match=what):
            parmbs_in_process("info")
    finally:
        undo[what]()
        np.seterr(**state)


def test_petsc_options_need_a_real_process():
    assert petsc_options(["simulate", "c.toml", "-o", "x.h5", "-ksp_monitor", "--set", "a=1"]) == ["-ksp_monitor"]
    with pytest.raises(AssertionError, match="need a real process"):
        parmbs_in_process("info", "c.toml", "-log_view")
