"""pytest plugin: CPU seconds (user + sys of the test process and of every child it
waited for: CLI subprocesses, mpirun and its ranks) and wall seconds per test file.

    PYTHONPATH=$PWD:$PWD/benchmarks SUITE_CPU_OUT=/tmp/cpu.tsv \\
        nice -n 10 .venv/bin/python -m pytest -q -p pytest_cpu_per_file -n 2 --dist loadfile tests
    .venv/bin/python benchmarks/pytest_cpu_per_file.py /tmp/cpu.tsv    # the table, largest first

Each (xdist worker) process appends a ``file  cpu  wall  worker  starts  cli  child-cpu``
line to ``SUITE_CPU_OUT`` when it finishes a file (a stopped run keeps the files done); a
file's CPU includes its module fixtures (made in its first test's set-up).  ``starts``:
the processes the test process started (``subprocess.Popen``, which ``run``,
``check_output`` and ``mpirun`` starts go through), ``cli`` those of them that run
``-m parmbs`` (or ``parmbs.cli``'s ``main`` under ``-c``), ``child-cpu`` the CPU of the
children waited for (included in ``cpu``).  The line ``<warm>`` is tests/conftest.py's
numba_warm.py share of that worker.
"""
import os
import resource
import sys
import time

import subprocess

import pytest

_CPU = {}
_WALL = {}
_KIDS = {}                  # file -> [processes started, of them parmbs CLI runs, children's CPU]
_STARTS = [0, 0]            # processes started so far, parmbs CLI runs among them


def _cpu():
    s = resource.getrusage(resource.RUSAGE_SELF)
    return s.ru_utime + s.ru_stime + _child_cpu()


def _child_cpu():
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return c.ru_utime + c.ru_stime


def _is_cli(args):
    a = [str(x) for x in args] if isinstance(args, (list, tuple)) else str(args).split()
    return any(x == "-m" and y == "parmbs" for x, y in zip(a, a[1:])) or any("parmbs.cli" in x for x in a)


def pytest_configure(config):
    init = subprocess.Popen.__init__
    if getattr(init, "_counted", False):
        return

    def counted(self, args, *a, **kw):
        _STARTS[0] += 1
        _STARTS[1] += _is_cli(args)
        return init(self, args, *a, **kw)
    counted._counted = True
    subprocess.Popen.__init__ = counted


@pytest.hookimpl(hookwrapper=True)
def pytest_collection_finish(session):
    c0, w0 = _cpu(), time.perf_counter()
    yield
    _CPU["<warm>"] = _cpu() - c0
    _WALL["<warm>"] = time.perf_counter() - w0
    _write("<warm>")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    c0, w0, k0, (n0, m0) = _cpu(), time.perf_counter(), _child_cpu(), _STARTS
    yield
    f = item.location[0]
    _CPU[f] = _CPU.get(f, 0.0) + _cpu() - c0
    _WALL[f] = _WALL.get(f, 0.0) + time.perf_counter() - w0
    k = _KIDS.setdefault(f, [0, 0, 0.0])
    k[0] += _STARTS[0] - n0
    k[1] += _STARTS[1] - m0
    k[2] += _child_cpu() - k0
    if nextitem is None or nextitem.location[0] != f:     # the file is done (loadfile: whole)
        _write(f)


def _write(f):
    out = os.environ.get("SUITE_CPU_OUT")
    if not out:
        return
    w = os.environ.get("PYTEST_XDIST_WORKER", "main")
    n, m, kc = _KIDS.pop(f, [0, 0, 0.0])
    with open(out, "a") as fh:
        fh.write(f"{f}\t{_CPU.pop(f):.2f}\t{_WALL.pop(f):.2f}\t{w}\t{n}\t{m}\t{kc:.2f}\n")


def pytest_sessionfinish(session):
    for f in list(_CPU):
        _write(f)


def main(path, top=20):
    rows = [ln.split("\t") for ln in open(path).read().splitlines() if ln.strip()]
    rows = [r + ["", "", ""][:7 - len(r)] for r in rows]         # (files written before the counts)
    rows.sort(key=lambda r: -float(r[1]))
    tot = {}
    for f, c, w, k, *_ in rows:
        tot[k] = tot.get(k, [0.0, 0.0])
        tot[k][0] += float(c)
        tot[k][1] += float(w)
    print("| file | CPU s | wall s | worker | processes started | of them `-m parmbs` | their CPU s |\n"
          "|---|---|---|---|---|---|---|")
    for f, c, w, k, n, m, kc in rows[:top]:
        print(f"| {f} | {float(c):.1f} | {float(w):.1f} | {k.strip()} | {n} | {m} | {kc} |")
    for k, (c, w) in sorted(tot.items()):
        print(f"worker {k.strip()}: CPU {c:.1f} s, wall {w:.1f} s")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 20)
