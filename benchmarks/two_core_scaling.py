"""Does this machine's second core add compute and memory bandwidth?  (issue 21's MUMPS question)

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/two_core_scaling.py

Runs two kernels alone, then two copies at once (two processes), and prints each copy's
rate and the ratio two-at-once ÷ alone:

* streaming copy of 320 MB arrays (`np.copyto`, read + write, far beyond the caches):
  memory bandwidth;
* a 600 × 600 dense matrix product (BLAS dgemm, one thread): compute.

A ratio near 1 means the two cores do not share the resource (two ranks get twice the
throughput); near 0.5 means they split it.  Run it on an idle machine: another job on a
core halves the "at once" rates.
"""
import multiprocessing as mp
import time

import numpy as np


def copy_rate(_=None):
    a = np.ones(40_000_000)
    b = np.empty_like(a)
    np.copyto(b, a)
    t = time.perf_counter()
    for _ in range(10):
        np.copyto(b, a)
    return 2 * a.nbytes * 10 / (time.perf_counter() - t) / 1e9


def dgemm_rate(_=None):
    rng = np.random.default_rng(0)
    a, b = rng.random((600, 600)), rng.random((600, 600))
    a @ b
    t = time.perf_counter()
    for _ in range(30):
        a @ b
    return 30 * 2 * 600**3 / (time.perf_counter() - t) / 1e9


def main():
    ctx = mp.get_context("spawn")
    for name, f, unit in (("copy bandwidth", copy_rate, "GB/s"), ("dgemm", dgemm_rate, "GFLOP/s")):
        alone = f()
        with ctx.Pool(2) as pool:
            both = pool.map(f, range(2))
        print(f"{name}: alone {alone:.1f} {unit}; two at once {both[0]:.1f} + {both[1]:.1f} {unit}; "
              f"per copy, at once ÷ alone {min(both) / alone:.2f}–{max(both) / alone:.2f}")


if __name__ == "__main__":
    main()
