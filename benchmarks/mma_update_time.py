"""Wall time of one distributed MMA update at the topology crank's size (issue 21's design iteration).

    python benchmarks/mma_update_time.py [--n 100000] [--updates 5]
    mpirun -n 2 python benchmarks/mma_update_time.py

n design variables in [0, 1], one constraint row (the volume fraction), move 0.2, random
objective gradients of the size a compliance-type ψ/|ψ⁰| has (≈ 1/n): the update is an
interior-point solve whose cost does not depend on the gradients' values much.  Rank 0
prints each update's wall time (between barriers).
"""
import argparse
import time

import parmbs  # noqa: F401  (imports petsc4py, Debian's or the user's, before numpy's SIMD check)
from parmbs._petsc import PETSc
from parmbs.optimize.mma import MMA, vec_from

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--updates", type=int, default=5)
    n = ap.parse_args().n
    updates = ap.parse_args().updates
    comm = PETSc.COMM_WORLD
    mpi = comm.tompi4py()
    x0, lo, hi = (vec_from(comm, np.full(n, v)) for v in (0.5, 0.0, 1.0))
    mma = MMA(x0, lo, hi, 1, move=0.2)
    a, b = x0.getOwnershipRange()
    g0 = np.random.default_rng(0).standard_normal(n)[a:b] / n
    g1 = np.full((1, b - a), 1.0 / n)
    times = []
    for k in range(updates):
        mpi.Barrier()
        t = time.perf_counter()
        mma.update(g0 * (1 + 0.1 * k), np.array([0.01 * (-1) ** k]), g1)
        mpi.Barrier()
        times.append(time.perf_counter() - t)
    if comm.rank == 0:
        print(f"{comm.size} rank(s), n = {n}: MMA update " + ", ".join(f"{t:.3f}" for t in times) + " s wall")


if __name__ == "__main__":
    main()
