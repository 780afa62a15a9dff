import os

# Not set here: OMPI_MCA_ess_singleton_isolated=1 (isolated Open MPI singletons skip the
# `orted` daemon, 280 → 220 ms CPU per `python -m parmbs` start).  Measured (2026-11-28,
# Open MPI 4.1.4): with it, about 1 in 100 CLI starts, 6 at a time, exited 1 with no
# output at all — Python had started, its atexit handlers never ran (an exit below
# Python): 3/300 twice, 0/300 without it.  Under the two-worker suite that failed a random CLI test in
# two of three fresh-clone runs (rc 1, empty stdout and stderr).  Users' runs never set it.

# numba's kernels for LLVM's "generic" x86-64 (numba's NUMBA_CPU_NAME=generic: no CPU
# model, no instruction-set extension beyond x86-64's SSE2) instead of the host's: on an
# AMD EPYC with AVX-512 (LLVM's "znver3" and its features) LLVM's code generation took
# 1.8 times as long: a cold tests/numba_warm.py (every kernel family: the suite's
# compile) 316 s CPU against 172 s (in a fresh-clone CI its two shares were 321 s of the
# two workers' 1657 s).  The same IR without fast-math
# flags (no fused multiply-add, no reassociation): the same numbers bit for bit
# (benchmarks/numba_warm_hash.py, every run's trajectory and gradients) and the same step
# cost (benchmarks/README.md, "Serial-suite CPU, round 4").  Set before numba is imported
# (it reads the variable once); every process the suite starts inherits it, so all load
# one cache entry per kernel.  Users' runs keep numba's default (the host CPU).
os.environ.setdefault("NUMBA_CPU_NAME", "generic")

# parmbs first, before any test module imports numpy: its thread and SIMD pinning
# (parmbs/_determinism.py) only takes full effect before numpy loads
import parmbs  # noqa: F401,E402

import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs"


@pytest.fixture
def config_path():
    return lambda name: str(CONFIGS / f"{name}.toml")


#: the background cache filler (tests/numba_warm.py) of a whole-suite session, if started
_WARM = []


def pytest_collection_finish(session):
    """A session of most of the suite (≥ 400 tests, not under mpirun) fills numba's kernel
    cache with tests/numba_warm.py (its docstring: a cold kernel family costs 13-42 s CPU
    in whichever test needs it first, ~160 s in all).  Serially it runs niced in the
    background, on the second core, while the tests run.  Under pytest-xdist (`make test`:
    ``-n 2``) both cores run tests, so each worker first compiles its share of the
    families (``numba_warm.py i/n``) and waits for it — measured in a fresh clone, two
    shares: ~35-45 s CPU each, side by side — instead of each worker compiling a family
    again when both need it before it is cached (the cache only saves work: the same
    machine code, never another number), and no compile inside a test's subprocess
    time-out.  A family warmed once is skipped by later sessions (numba_warm.py).  Single
    files and the MPI run do not warm; PARMBS_TEST_NO_WARM=1 turns it off."""
    import importlib.util
    import subprocess
    import sys
    if (len(session.items) < 400 or os.environ.get("PARMBS_TEST_NO_WARM") or "OMPI_COMM_WORLD_SIZE" in os.environ
            or importlib.util.find_spec("numba") is None):
        return
    script = pathlib.Path(__file__).parent / "numba_warm.py"
    worker = os.environ.get("PYTEST_XDIST_WORKER")          # "gw0", "gw1", ... under pytest-xdist
    quiet = dict(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if worker:
        share = f"{int(worker[2:])}/{os.environ.get('PYTEST_XDIST_WORKER_COUNT', '1')}"
        try:
            # a hang guard only (≈ 40 s CPU; ~16 min of wall at load 27): on expiry the
            # tests compile what is missing themselves (numba keeps each kernel cached as done)
            subprocess.run([sys.executable, str(script), share], timeout=900, **quiet)
        except subprocess.TimeoutExpired:
            pass
        return
    _WARM.append(subprocess.Popen([sys.executable, str(script)], preexec_fn=lambda: os.nice(10), **quiet))


def pytest_sessionfinish(session):
    for p in _WARM:
        if p.poll() is None:
            p.terminate()
        p.wait()


def pytest_configure(config):
    config.addinivalue_line("markers", "slurm: submits jobs/ scripts to a private SLURM on localhost "
                            "(tests/slurm_cluster.py); serial suite only")


def record_file(path):
    """Where a run's HDF5 output is now: ``path`` once the run is complete, else its
    in-progress ``path.partial`` (a killed, stopped or failed checkpointed run or
    optimization keeps its resumable state there: parmbs/io/outputs.py)."""
    path = pathlib.Path(path)
    part = path.with_name(path.name + ".partial")
    return part if part.exists() else path


#: the environment switch that arms parmbs's fault-injection hooks (parmbs/faults.py)
FAULTS = {"PARMBS_TEST_FAULTS": "1"}


def signal_after_first_iterate(p, sig=None, timeout=300):
    """Send ``sig`` (SIGUSR1: what ``sbatch --signal`` delivers) to the running
    ``parmbs optimize`` process ``p`` (stdout piped, text) once it prints iterate 1,
    then wait for it; returns ``(stdout rest, stderr)``.  The stop-at-a-safe-point tests
    all start this way."""
    import signal
    for line in p.stdout:
        if line.startswith("it    1"):
            p.send_signal(signal.SIGUSR1 if sig is None else sig)
            break
    return p.communicate(timeout=timeout)
