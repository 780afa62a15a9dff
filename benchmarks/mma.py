"""MMA update time at 10^5 design variables, serial and on 2 ranks (issue 6), one run.

The update is parmbs.optimize.mma.MMA.update (asymptotes, move limits, the primal-dual
subproblem solve; every n-sum an Allreduce).  The functions are a synthetic stand-in
for a density topology problem so only MMA is timed: f₀(x) = Σⱼ wⱼ/xⱼ (a
compliance-like, decreasing, convex term), one volume constraint mean(x) ≤ 0.4 and one
general constraint Σ vⱼ xⱼ² /n ≤ 0.3; x ∈ [0.01, 1], x⁰ = 0.5.  The serial run is this
process; the 2-rank run is ``mpirun -n 2`` of this file with ``--worker``.  Each run
times ``--updates`` updates after one warm-up and prints the mean wall time and the
CPU time of the slower rank (on a shared, loaded machine the CPU ratio is the honest one).

Usage: python benchmarks/mma.py [--n 100000] [--updates 10]
"""
import argparse
import os
import re
import subprocess
import sys
import time

import numpy as np


def measure(n, updates):
    from parmbs._petsc import PETSc
    from parmbs.optimize.mma import MMA, vec_from
    comm = PETSc.COMM_WORLD
    rng = np.random.default_rng(0)
    w, v = rng.uniform(0.5, 1.5, n), rng.uniform(0.5, 1.5, n)
    xv = vec_from(comm, np.full(n, 0.5))
    lo, hi = xv.getOwnershipRange()
    mma = MMA(xv, vec_from(comm, np.full(n, 0.01)), vec_from(comm, np.ones(n)), m=2)
    wl, vl = w[lo:hi], v[lo:hi]
    mpi = comm.tompi4py()
    times, cpu = [], []
    for k in range(updates + 1):
        x = mma.x.getArray(readonly=True).copy()
        sums = mpi.allreduce(np.array([x.sum(), (vl * x * x).sum()]))
        fval = np.array([sums[0] / n / 0.4 - 1.0, sums[1] / n / 0.3 - 1.0])
        dfdx = np.array([np.full(len(x), 1.0 / n / 0.4), 2 * vl * x / n / 0.3])
        df0 = -wl / x**2 / n
        mpi.barrier()
        t, c = time.perf_counter(), time.process_time()
        mma.update(df0, fval, dfdx)
        c = time.process_time() - c
        mpi.barrier()
        if k > 0:                        # the first update is a warm-up
            times.append(time.perf_counter() - t)
            cpu.append(mpi.allreduce(c, op=__import__("mpi4py").MPI.MAX))
    xs = np.concatenate(mpi.allgather(mma.x.getArray(readonly=True).copy()))
    return float(np.mean(times)), float(np.mean(cpu)), xs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--updates", type=int, default=10)
    ap.add_argument("--worker", action="store_true")
    a = ap.parse_args()
    if a.worker:
        t, c, xs = measure(a.n, a.updates)
        from mpi4py import MPI
        if MPI.COMM_WORLD.rank == 0:
            np.save(os.environ["PARMBS_MMA_BENCH_X"], xs)
            print(f"TIME {t:.6f} CPU {c:.6f} RANKS {MPI.COMM_WORLD.size}")
        return
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    t1, c1, x1 = measure(a.n, a.updates)
    print(f"MMA update, n = {a.n}, m = 2: serial  {t1 * 1e3:7.1f} ms wall, {c1 * 1e3:7.1f} ms CPU "
          f"per update (mean of {a.updates})")
    import tempfile
    tmp = os.path.join(tempfile.mkdtemp(), "x.npy")
    env = dict(os.environ, PARMBS_MMA_BENCH_X=tmp, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")
    r = subprocess.run(["mpirun", "-n", "2", sys.executable, __file__, "--worker", "--n", str(a.n),
                        "--updates", str(a.updates)], capture_output=True, text=True, env=env)
    m = re.search(r"TIME ([0-9.eE+-]+) CPU ([0-9.eE+-]+) RANKS 2", r.stdout)
    if not m:
        sys.exit(f"mpirun run failed:\n{r.stdout}\n{r.stderr}")
    t2, c2 = float(m.group(1)), float(m.group(2))
    x2 = np.load(tmp)
    diff = np.max(np.abs(x2 - x1))
    print(f"                          2 ranks {t2 * 1e3:7.1f} ms wall, {c2 * 1e3:7.1f} ms CPU (slower rank)")
    print(f"speed-up serial / 2 ranks: wall {t1 / t2:.2f}, CPU {c1 / c2:.2f}; "
          f"max |x_serial - x_2ranks| after {a.updates + 1} updates = {diff:.1e}")


if __name__ == "__main__":
    main()
