import os

# Not set here: OMPI_MCA_ess_singleton_isolated=1 (isolated Open MPI singletons skip the
# `orted` daemon, 280 → 220 ms CPU per `python -m parmbs` start).  Measured (2026-11-28,
# Open MPI 4.1.4): with it, about 1 in 100 CLI starts, 6 at a time, exited 1 with no
# output at all — Python had started, its atexit handlers never ran (an exit below
# Python): 3/300 twice, 0/300 without it.  Under the two-worker suite that failed a random CLI test in
# two of three fresh-clone runs (rc 1, empty stdout and stderr).  Users' runs never set it.

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


#: the serial suite's files by CPU, largest first (each file's CPU incl. its subprocesses,
#: benchmarks/pytest_cpu_per_file.py; benchmarks/README.md, "Per-file CPU of the serial
#: suite"; the files measured before that run was stopped).  Files not named here follow,
#: most tests first.
HEAVY_FIRST = (
    "test_verify_configs.py",       # 173.6 s (the 2026-11-28 two-worker run, load 9-15)
    "test_ts_checkpoint.py",        # 67.6 s
    "test_checkpoint.py",           # 36.7 s
    "test_no_data_loss.py",         # 35.0 s
    "test_cli.py",                  # 25.0 s
    "test_bad_input.py",            # 18.3 s
    "test_optimize_mma.py",         # 15.1 s
)


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist's ``--dist loadfile`` (``make test``) a free worker takes the next
    whole file in collection order.  xdist's own order (most tests first) puts files with a
    few long tests last, where one worker runs them while the other has nothing left.  Here
    the heaviest files by measured CPU go first, then the rest by number of tests (xdist's
    order), so the last files to start are short and both workers finish near together
    (longest first).  Makefile passes ``--no-loadscope-reorder`` so xdist keeps this order.
    A file's tests keep their order (a stable sort); serial runs are not reordered."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    rank = {name: i for i, name in enumerate(HEAVY_FIRST)}
    count = {}
    for it in items:
        count[it.path] = count.get(it.path, 0) + 1
    items.sort(key=lambda it: (rank.get(it.path.name, len(rank)), -count[it.path]))


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
