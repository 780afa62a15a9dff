"""Batch-parallel gradients: 2 groups vs 1, and the inputs of the parallel cost model.

    mpirun -n 2 python benchmarks/batches.py [--links 10] [--steps 100] [--cases 8] [--repeat 2]

One run prints:
  1. calibration (rank 0 alone): forward step, direct base / per-column, adjoint
     base / per-objective cost, in seconds and in forward-step units (the inputs of
     ``parmbs.sensitivity.batch.CostModel``);
  2. DDM (direct) with 64 design variables on a pendulum chain (benchmarks/gradient.py's
     generator): 1 group of 1 rank vs 2 groups of 1 rank, speed-up, parallel
     efficiency T1 / (2 T2), the Amdahl bound of the replicated forward run, and
     the equality of the gradients;
  3. adjoint over ``--cases`` load cases ([[scenarios]] with different gravity and
     spring stiffness): 1 group vs 2 groups;
  4. communication on this machine: Split, the error-flag allreduce, and the
     result gather (distributed PETSc Vec → every rank) for 10^3 … 10^6 entries;
  5. the cost model extrapolated to 64 and 1024 ranks (see benchmarks/README.md).
Times are the minimum over ``--repeat`` runs (the machine may be shared).
"""
from __future__ import annotations

import argparse
import math
import os
import pathlib
import sys
import tempfile
import time

import parmbs  # noqa: F401  (before numpy: parmbs/_determinism.py pins numpy's CPU features for same-bytes results)
import numpy as np
from mpi4py import MPI

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from gradient import chain_toml  # noqa: E402

from parmbs import parallel  # noqa: E402
from parmbs._petsc import PETSc  # noqa: E402
from parmbs.config import load_config  # noqa: E402
from parmbs.sensitivity.batch import batch_gradient  # noqa: E402
from parmbs.sensitivity.problem import Problem  # noqa: E402

W = MPI.COMM_WORLD


def say(*a):
    if W.rank == 0:
        print(*a, flush=True)


def quiet_barrier():
    """A barrier that sleeps while waiting: MPI's blocking barrier spins at 100 % CPU,
    which on a 2-core machine would slow down the rank being timed."""
    req = W.Ibarrier()
    while not req.Test():
        time.sleep(2e-4)


def best(fn, repeat):
    """min wall time of fn() over ``repeat`` runs, timed between barriers on all ranks."""
    ts, out = [], None
    for _ in range(repeat):
        quiet_barrier()
        t0 = time.perf_counter()
        out = fn()
        quiet_barrier()
        ts.append(time.perf_counter() - t0)
    return min(ts), out


def on_rank0_alone(fn, repeat):
    """Time fn() on rank 0 with a 1-rank layout while the other ranks wait (the '1 group' run)."""
    res = [None]

    def run():
        if W.rank == 0:
            res[0] = fn()
    t, _ = best(run, repeat)
    return t, res[0]


def cpu_line(r1, r2, G):
    """Efficiency from each rank's CPU time in its batches (waits excluded): robust to
    other jobs time-sharing the cores, which stretch wall times but not CPU times."""
    c1 = W.bcast(r1.timing["cpu_s_per_rank"][0] if W.rank == 0 else None, root=0)
    c2 = r2.timing["cpu_s_per_rank"]
    return (f"  CPU time in batches: 1 group {c1:7.3f} s    {G} groups "
            f"{' + '.join(f'{c:.3f}' for c in c2)} s    CPU efficiency {c1 / (G * max(c2)):6.1%}")


def scenarios_toml(cases):
    out = []
    for i in range(cases):
        out.append(f'[[scenarios]]\nname = "case{i}"\n'
                   f'set = {{ "model.gravity.y" = {-9.81 * (1 + 0.05 * i)}, "forces.K1.stiffness" = {0.5 + 0.1 * i} }}\n')
    return "".join(out)


def calibrate(path, steps, repeat):
    """Per-step costs on rank 0 alone: forward, direct base/column, adjoint base/objective."""
    cfg = load_config(path)
    lo, hi = 8, len(cfg.design)
    sub = {k: cfg.model_copy(update={"design": cfg.design[:k]}) for k in (lo, hi)}
    one_obj = cfg.model_copy(update={"objectives": cfg.objectives[:1]})
    r = {}

    def t_of(c, what):
        pr = Problem(c, comm=PETSc.COMM_SELF)
        ts = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            pr.forward()
            tf = time.perf_counter() - t0
            t0 = time.perf_counter()
            getattr(pr, what)()
            ts.append((tf, time.perf_counter() - t0))
        return min(x[0] for x in ts), min(x[1] for x in ts)
    if W.rank == 0:
        f, dlo = t_of(sub[lo], "direct")
        _, dhi = t_of(sub[hi], "direct")
        _, a1 = t_of(one_obj, "adjoint")
        _, a2 = t_of(cfg, "adjoint")
        col = (dhi - dlo) / (hi - lo)
        r = dict(forward=f, tangent_column=col, tangent_base=dhi - hi * col,
                 adjoint_column=max(a2 - a1, 0.0), adjoint_base=a1 - max(a2 - a1, 0.0))
        r = {k: v / steps for k, v in r.items()}
    quiet_barrier()
    return W.bcast(r, root=0)


def comm_costs(repeat):
    """Split, allreduce (error flag) and gather_owned(n) on COMM_WORLD, seconds."""
    out = {}
    t, lay = best(lambda: parallel.make_layout(W.size), repeat)
    out["split"] = t
    n_iter = 2000
    W.Barrier()
    t0 = time.perf_counter()
    for _ in range(n_iter):
        parallel.raise_if_any_failed(lay, None)
    out["allreduce"] = W.allreduce(time.perf_counter() - t0, op=MPI.MAX) / n_iter
    for n in (10 ** 3, 10 ** 5, 10 ** 6):
        lo, hi = n * lay.group_index // lay.groups, n * (lay.group_index + 1) // lay.groups
        idx = np.arange(lo, hi)
        vals = np.random.default_rng(1).random(hi - lo)

        def g():
            vec, arr = parallel.gather_owned(lay, n, idx, vals)
            vec.destroy()
            return arr
        t, arr = best(g, repeat)
        out[f"gather_{n}"] = t
    lay.free()
    return out


def extrapolate(cal, comm, nd, steps):
    """Predicted efficiency at P ranks (one rank per group) from the measured inputs.

    Compute: a group's DDM time is steps·(forward + tangent_base + ⌈N/P⌉·tangent_column)
    (the forward run and the per-step tangent set-up are replicated in every group);
    a group's adjoint time over S load cases is ⌈S/P⌉·steps·(forward + adjoint_base +
    K·adjoint_column).  Communication: Split α_s·log2 P, error-flag allreduce α·log2 P,
    gather of n entries to every rank α·log2 P + β·8n (α: measured 2-rank allreduce,
    α_s: measured 2-rank split, β: slope of the measured 10^3 → 10^6 gathers).
    Returns rows (work, size, {P: efficiency}) and (α, β).
    """
    alpha = comm["allreduce"]
    beta = max(comm["gather_1000000"] - comm["gather_1000"], 1e-12) / (8 * (10 ** 6 - 10 ** 3))
    F = steps * (cal["forward"] + cal["tangent_base"])
    c = steps * cal["tangent_column"]
    A = steps * (cal["forward"] + cal["adjoint_base"] + 2 * cal["adjoint_column"])
    Ps = (2, 64, 1024)

    def comm_t(P, n):
        L = math.log2(P)
        return comm["split"] * L + alpha * L + (alpha * L + beta * 8 * n)
    rows = []
    for N in (nd, 10 ** 4, 10 ** 5):
        rows.append(("DDM", f"N = {N}", {P: (F + N * c) / (P * (F + math.ceil(N / P) * c + comm_t(P, 2 * (N + 1))))
                                          for P in Ps}))
    for per in (1, 8):
        rows.append(("adjoint", f"S = {per}·P", {P: per * P * A / (P * (per * A + comm_t(P, per * P * 2 * (nd + 1))))
                                                 for P in Ps}))
    return rows, alpha, beta


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--links", type=int, default=10)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--ndesign", type=int, default=64)
    ap.add_argument("--cases", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    if W.size != 2:
        say(f"note: measured on {W.size} rank(s); the ratios below are '{W.size} groups vs 1'")
    say(f"load before: {os.getloadavg()[0]:.2f} (1-min average, {os.cpu_count()} cores)")
    tmp = W.bcast(tempfile.mkdtemp(prefix="parmbs-bench-") if W.rank == 0 else None, root=0)
    ddm = os.path.join(tmp, "chain.toml")
    cases = os.path.join(tmp, "chain-cases.toml")
    if W.rank == 0:
        base = chain_toml(args.links, args.steps, args.ndesign)
        pathlib.Path(ddm).write_text(base)
        pathlib.Path(cases).write_text(chain_toml(args.links, args.steps, 8) + scenarios_toml(args.cases))
    W.Barrier()
    G = W.size

    # 1. calibration
    cal = calibrate(ddm, args.steps, args.repeat)
    fs = cal["forward"]
    say(f"\nchain of {args.links} links ({3 * args.links} coordinates), {args.steps} steps")
    say("calibration (rank 0 alone), per time step:")
    for k, v in cal.items():
        say(f"  {k:<15} {v * 1e3:8.3f} ms   {v / fs:6.3f} forward steps")

    # 2. DDM, 64 design variables
    cfg = load_config(ddm)
    self_lay = parallel.make_layout(1, world=MPI.COMM_SELF) if W.rank == 0 else None
    t1, r1 = on_rank0_alone(lambda: batch_gradient(cfg, "direct", self_lay), args.repeat)
    lay = parallel.make_layout(G)
    t2, r2 = best(lambda: batch_gradient(cfg, "direct", lay), args.repeat)
    diff = 0.0
    if W.rank == 0:
        for o in r1.objectives:
            g = r1.total_gradients[o]
            diff = max(diff, float(np.max(np.abs(r2.total_gradients[o] - g)) / np.max(np.abs(g))))
    F = cal["forward"] + cal["tangent_base"]
    N = args.ndesign
    bound = (F + N * cal["tangent_column"]) / (G * (F + math.ceil(N / G) * cal["tangent_column"]))
    say(f"\nDDM, {N} design variables, 2 objectives: plan '{r2.plan.strategy}' "
        f"{[sum(len(t.units) for t in b) for b in r2.plan.batches]} (estimated balance "
        f"{min(r2.plan.cost) / max(r2.plan.cost):.3f})")
    say(f"  1 group  {t1:7.3f} s    {G} groups {t2:7.3f} s    speed-up {t1 / t2:5.2f}    "
        f"efficiency {t1 / (G * t2):6.1%}    Amdahl bound (replicated forward + tangent set-up) "
        f"{bound:6.1%}    max rel. gradient difference {diff:.1e}")
    say(cpu_line(r1, r2, G))

    # 3. adjoint over load cases
    ccfg = load_config(cases)
    t1a, ra1 = on_rank0_alone(lambda: batch_gradient(ccfg, "adjoint", self_lay), args.repeat)
    t2a, ra2 = best(lambda: batch_gradient(ccfg, "adjoint", lay), args.repeat)
    diff = 0.0
    if W.rank == 0:
        for s in ra1.values:
            for o in ra1.objectives:
                g = ra1.gradients[s][o]
                diff = max(diff, float(np.max(np.abs(ra2.gradients[s][o] - g)) / np.max(np.abs(g))))
    say(f"\nadjoint, {args.cases} load cases x 2 objectives, 8 design variables: plan '{ra2.plan.strategy}' "
        f"{[len(b) for b in ra2.plan.batches]} scenarios per group")
    say(f"  1 group  {t1a:7.3f} s    {G} groups {t2a:7.3f} s    speed-up {t1a / t2a:5.2f}    "
        f"efficiency {t1a / (G * t2a):6.1%}    max rel. gradient difference {diff:.1e}")
    say(cpu_line(ra1, ra2, G))
    for r in (r1, r2, ra1, ra2):
        if r is not None:
            r.destroy()
    lay.free()
    if self_lay is not None:
        self_lay.free()

    # 4. communication
    cc = comm_costs(max(args.repeat, 3))
    say(f"\ncommunication on {W.size} ranks: split {cc['split'] * 1e6:.0f} us, error-flag allreduce "
        f"{cc['allreduce'] * 1e6:.2f} us, gather to all ranks: "
        + ", ".join(f"n={n:.0e} {cc[f'gather_{n}'] * 1e3:.2f} ms" for n in (10 ** 3, 10 ** 5, 10 ** 6)))

    # 5. cost model
    rows, alpha, beta = extrapolate(cal, cc, N, args.steps)
    say(f"\ncost model, one rank per group (alpha = {alpha * 1e6:.2f} us per log2 P stage, "
        f"beta = {beta * 1e9:.3f} ns/byte, split {cc['split'] * 1e6:.0f} us per stage; all measured above)")
    say(f"  {'work':<8} {'size':<12}" + "".join(f"{f'P = {P}':>10}" for P in rows[0][2]))
    for work, size, eff in rows:
        say(f"  {work:<8} {size:<12}" + "".join(f"{e:>10.1%}" for e in eff.values()))
    need = 18 * (cal["forward"] + cal["tangent_base"]) / cal["tangent_column"]
    say(f"  DDM reaches 95 % on 2 groups from N ~ {need:.0f} design variables "
        f"(N·column >= 18·(forward + tangent set-up))")
    say(f"\nload after: {os.getloadavg()[0]:.2f}")
    W.Barrier()
    if W.rank == 0:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
