"""Modal reduction of the topopt crank's body: one design iteration (forward + adjoint +
reduction and its sensitivities), reduced vs full order, and the reduced model's error.

    .venv/bin/python benchmarks/modal_reduction.py --nx 100 --ny 40 --modes 10 20 --steps 40
    .venv/bin/python benchmarks/modal_reduction.py --nx 500 --ny 200 --modes 10 --steps 1600 --no-full \
        --attachment-only

The crank of configs/topopt-crank.toml on an nx × ny mesh (pin at [0.9 nx, ny/2], clamp
radius ≥ 1.05 hx as in benchmarks/topopt_crank.py) over the first ``--steps`` steps of
dt = 1.25e-3 (1600 = the full 2 s horizon).  Per K in ``--modes``: the reduction
(assembly + eigensolve), the forward run, the adjoint sweep over the parameter columns
(the reduced body data), the chain to the 10^5 densities (``Reduction.vjp``: one bordered
factorization + solve per mode) — each timed — and ψ, ∇ψ against the full-order run
(``--no-full`` skips it).  Each K runs twice: eigenmodes only, and with the two
attachment modes of the pin node (``reduction.attachment = true``).  ``--cpu`` times with process CPU time (shared machine).

``--iteration`` (issue 21's goal: forward + adjoint + reduction and its sensitivities +
MMA update, at 10⁵ densities over the full horizon, on 2 ranks) times one whole design
iteration as ``parmbs optimize`` runs it, with the config's [optimize] section (density
filter, V ≤ 0.5): filter, reduction, forward, adjoint, chain, filter transpose,
constraint and one MMA update, CPU *and* wall per phase, the max over ranks:

    mpirun -n 2 .venv/bin/python benchmarks/modal_reduction.py --nx 500 --ny 200 --modes 10 \
        --steps 1600 --iteration

Under mpirun the reduced model (tens of unknowns) runs replicated on every rank, as the
CLI does (parallel.replicate_small); the MMA update is distributed over the ranks.
"""
import argparse
import copy
import os
import sys
import time
import tomllib

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import parmbs  # noqa: E402,F401  (before numpy: its SIMD pinning, parmbs/_determinism.py)
import numpy as np  # noqa: E402
from parmbs.config.loader import validate          # noqa: E402
from parmbs.sensitivity.problem import Problem      # noqa: E402

CONFIG = os.path.join(os.path.dirname(__file__), "..", "configs", "topopt-crank.toml")
clock = time.perf_counter


def crank(nx, ny, steps, modes=None, attachment=False, keep_optimize=None):
    with open(CONFIG, "rb") as f:
        data = tomllib.load(f)
    c = data["continua"][0]
    c.update(nx=nx, ny=ny, points={"pin": [9 * nx // 10, ny // 2]},
             clamp_radius=max(c["clamp_radius"], 1.05 * c["size"][0] / nx))
    if modes is not None:
        c["reduction"] = {"modes": modes, "attachment": attachment}
    data["simulation"]["t_end"] = steps * data["simulation"]["dt"]
    data.pop("optimize")
    if keep_optimize is not None:
        data["optimize"] = keep_optimize
    return validate(copy.deepcopy(data), CONFIG)


def run(cfg, reduced):
    t = {}
    s = clock()
    pr = Problem(cfg)
    t["setup"] = clock() - s
    if reduced:
        red = pr.sys.continua.reductions()[0]
        red._cache = None                           # time the reduction itself
        s = clock()
        red.state(pr.sys.p)
        t["reduction"] = clock() - s
    s = clock()
    pr.forward()
    t["forward"] = clock() - s
    psi = pr.objective_values()["compliance"]
    s = clock()
    cols = pr._adjoint_columns(pr.sys.p)
    t["adjoint"] = clock() - s
    s = clock()
    g = pr.design.chain(cols, pr.sys.p)["compliance"]
    t["chain"] = clock() - s
    return pr, psi, g, t


def _rss_gb():
    """(current RSS, peak RSS) of this process, GB (/proc/self/status: VmRSS, VmHWM)."""
    with open("/proc/self/status") as f:
        kv = dict(line.split(":", 1) for line in f if ":" in line)
    return tuple(int(kv[k].split()[0]) / 1e6 for k in ("VmRSS", "VmHWM"))


def iteration(a):
    """One design iteration of ``parmbs optimize`` (optimize/driver.py ``_run_mma``), timed."""
    from mpi4py import MPI
    from parmbs import parallel
    from parmbs._petsc import PETSc
    from parmbs.optimize.constraints import Constraints
    from parmbs.flexible.density_filter import DensityFilter
    from parmbs.optimize.mma import MMA, vec_from
    world = MPI.COMM_WORLD
    with open(CONFIG, "rb") as f:
        opt_data = tomllib.load(f)
    cfg = crank(a.nx, a.ny, a.steps, a.modes[0], True, keep_optimize=opt_data["optimize"])
    wall, cpu, rss, peak = {}, {}, {}, {}

    def timed(name, fn):
        w, c = time.perf_counter(), time.process_time()
        r = fn()
        wall[name], cpu[name] = time.perf_counter() - w, time.process_time() - c
        rss[name], peak[name] = _rss_gb()
        if world.rank == 0 and a.progress:        # rank 0's own figures as each phase ends
            print(f"  [rank 0] {name:<11} CPU {cpu[name]:7.2f} s   wall {wall[name]:7.2f} s   RSS {rss[name]:.2f} GB"
                  f"   peak {peak[name]:.2f} GB", flush=True)
        return r

    def setup():
        pr0 = Problem(cfg, comm=PETSc.COMM_SELF)
        comm, _ = parallel.replicate_small(pr0.sys.n + pr0.sys.m, cfg.parallel.distribute)
        pr = pr0 if comm is PETSc.COMM_SELF or world.size == 1 else Problem(cfg, comm=comm)
        opt = cfg.optimize
        return pr0, pr, opt, Constraints(cfg, pr.design), DensityFilter(cfg, pr.design, opt.filter_radius)
    pr0, pr, opt, cons, filt = timed("set-up", setup)     # incl. the nominal design's reduction
    rho = pr.design.values(pr.sys.p)
    x0 = vec_from(PETSc.COMM_WORLD, rho)
    lo, hi = x0.getOwnershipRange()
    mma = MMA(x0, vec_from(PETSc.COMM_WORLD, pr.design.lower), vec_from(PETSc.COMM_WORLD, pr.design.upper),
              len(cons), move=opt.move)
    red = pr.sys.continua.reductions()[0]
    world.barrier()
    prof = None
    if a.profile and world.rank == 0:
        import cProfile
        prof = cProfile.Profile(time.process_time)
        prof.enable()
    phys = timed("filter", lambda: filt.apply(rho) if filt else rho)
    red._cache = None                                              # time the reduction itself:
    p = timed("reduction", lambda: pr.design.apply(pr.sys.p, phys))   # apply re-solves the basis
    timed("forward", lambda: pr.forward(p))
    vals = pr.objective_values()
    cols = timed("adjoint", lambda: pr._adjoint_columns(p))
    g = timed("chain", lambda: pr.design.chain(cols, p)["compliance"])
    fc, dfc = cons.evaluate(phys, vals, {"compliance": g})
    gobj = g
    if filt:
        dfc, gobj = timed("filter^T", lambda: (filt.transpose(dfc), filt.transpose(g)))
    timed("MMA update", lambda: mma.update(gobj[lo:hi] / abs(vals["compliance"]), fc, dfc[:, lo:hi]))
    if prof is not None:
        prof.disable()
        prof.dump_stats(a.profile)
    wmax = {k: world.allreduce(v, MPI.MAX) for k, v in wall.items()}
    cmax = {k: world.allreduce(v, MPI.MAX) for k, v in cpu.items()}
    rmax = {k: world.allreduce(v, MPI.MAX) for k, v in rss.items()}
    pmax = {k: world.allreduce(v, MPI.MAX) for k, v in peak.items()}
    call = world.gather(cpu, root=0)
    if world.rank == 0:
        print(f"{world.size} rank(s), mesh {a.nx}x{a.ny} = {a.nx * a.ny} densities, {a.steps} steps, K = "
              f"{a.modes[0]} + 2 attachment; model on {'every rank (replicated)' if pr is pr0 else 'all ranks'}; "
              f"ψ = {vals['compliance']:.6e}; max over ranks:")
        for k in wall:
            print(f"  {k:<11} CPU {cmax[k]:7.2f} s   wall {wmax[k]:7.2f} s   RSS after {rmax[k]:6.2f} GB   "
                  f"peak so far {pmax[k]:6.2f} GB")
        it = [k for k in wall if k != "set-up"]
        print("  CPU s per rank: " + "; ".join(
            f"rank {r}: " + ", ".join(f"{k} {c[k]:.2f}" for k in wall) + f"; iteration {sum(c[k] for k in it):.2f}"
            for r, c in enumerate(call)))
        print(f"  {'iteration':<11} CPU {sum(cmax[k] for k in it):7.2f} s   wall {sum(wmax[k] for k in it):7.2f} s "
              f"(sums of the per-phase maxima, set-up excluded)", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nx", type=int, default=100)
    ap.add_argument("--ny", type=int, default=40)
    ap.add_argument("--modes", type=int, nargs="+", default=[10, 20])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--no-full", action="store_true")
    ap.add_argument("--cpu", action="store_true")
    ap.add_argument("--attachment-only", action="store_true", help="skip the eigenmodes-only runs")
    ap.add_argument("--iteration", action="store_true", help="one whole MMA design iteration, CPU and wall "
                    "(K = the first --modes, with attachment modes)")
    ap.add_argument("--progress", action="store_true", help="with --iteration: rank 0 prints each phase's "
                    "CPU, wall and RSS as it ends")
    ap.add_argument("--profile", metavar="FILE", help="with --iteration: cProfile (process CPU clock) of rank "
                    "0's iteration phases, written to FILE (pstats)")
    a = ap.parse_args()
    if a.iteration:
        return iteration(a)
    global clock
    clock = time.process_time if a.cpu else time.perf_counter
    print(f"clock: {'CPU time of this process' if a.cpu else 'wall'}; mesh {a.nx}x{a.ny} = {a.nx * a.ny} "
          f"densities, {a.steps} steps of 1.25e-3 s", flush=True)
    full = None
    if not a.no_full:
        pr, psi, g, t = run(crank(a.nx, a.ny, a.steps), False)
        full = (psi, g)
        print(f"full order: n = {pr.sys.n}; set-up {t['setup']:.2f} s, forward {t['forward']:.2f} s, adjoint "
              f"{t['adjoint']:.2f} s (chain {t['chain']:.3f} s); iteration {t['forward'] + t['adjoint']:.2f} s; "
              f"ψ = {psi:.6e}", flush=True)
    for K, att in [(K, att) for K in a.modes for att in (False, True)
                   if att or not a.attachment_only]:
        pr, psi, g, t = run(crank(a.nx, a.ny, a.steps, K, att), True)
        it = t["reduction"] + t["forward"] + t["adjoint"] + t["chain"]
        line = (f"K = {K:3d}{' + 2 attachment' if att else ''}: n = {pr.sys.n}; set-up {t['setup']:.2f} s (incl. one reduction), reduction "
                f"{t['reduction']:.2f} s, forward {t['forward']:.2f} s, adjoint {t['adjoint']:.2f} s, "
                f"chain (vjp) {t['chain']:.2f} s; iteration {it:.2f} s; ψ = {psi:.6e}")
        if full is not None:
            e_psi = abs(psi - full[0]) / abs(full[0])
            e_g = np.linalg.norm(g - full[1]) / np.linalg.norm(full[1])
            cos = g @ full[1] / (np.linalg.norm(g) * np.linalg.norm(full[1]))
            line += f"; vs full: ψ {e_psi:.2e}, ∇ψ {e_g:.2e} (cos {cos:.6f})"
        print(line, flush=True)


if __name__ == "__main__":
    main()
