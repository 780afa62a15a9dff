"""tests/numba_warm.py's runs one by one: CPU of each run and a sha256 of what it computed
(the trajectory's q, v, a, λ, the adjoint and the direct gradients), so two code
generation settings (or two branches) can be compared run by run, bit for bit.

    NUMBA_CACHE_DIR=$(mktemp -d) OMP_NUM_THREADS=1 PYTHONPATH=$PWD .venv/bin/python benchmarks/numba_warm_hash.py
    NUMBA_CPU_NAME=generic NUMBA_CACHE_DIR=$(mktemp -d) ... benchmarks/numba_warm_hash.py

One line per run: CPU s, sha256 (16 hex digits), the run; then the whole process's CPU.
A cold cache makes the CPU column the families' compile cost (numba_warm.py's docstring).
"""
import hashlib
import sys
import tempfile
import time
from pathlib import Path

import parmbs  # noqa: F401  (first: thread and SIMD pinning, the source-keyed cache directory)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def _digest(pr):
    h = hashlib.sha256()
    tr = pr.forward()
    for k in ("q", "v", "a", "lam"):
        h.update(getattr(tr, k).tobytes())
    for how in (pr.adjoint, pr.direct):
        for name, g in sorted(how().items()):
            h.update(name.encode() + g.tobytes())
    return h.hexdigest()[:16]


def main():
    import numba_warm as W
    from parmbs.config import load_config
    from parmbs.sensitivity.problem import Problem
    c00 = time.process_time()
    with tempfile.TemporaryDirectory(prefix="parmbs-hash-") as d:
        for name, _, runs in W.groups(Path(d)):
            c0 = time.process_time()
            for run in runs:
                c = time.process_time()
                if callable(run):
                    run()
                    print(f"{time.process_time() - c:6.1f}  {'-' * 16}  {name}: {run.__name__}", flush=True)
                    continue
                path, *sets = run
                try:
                    dig = _digest(Problem(load_config(str(path), [*W.QUIET, *sets])))
                except Exception as e:      # noqa: BLE001 — printed, compared as text
                    dig = f"{type(e).__name__}: {e}"[:60]
                print(f"{time.process_time() - c:6.1f}  {dig}  {name}: {Path(path).name} {' '.join(sets)}", flush=True)
            print(f"{time.process_time() - c0:6.1f}  family {name}", flush=True)
    print(f"{time.process_time() - c00:6.1f}  whole process (CPU s)", flush=True)


if __name__ == "__main__":
    main()
