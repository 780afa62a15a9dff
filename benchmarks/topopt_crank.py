"""topopt-crank at scale: forward and adjoint times, adjoint ÷ forward, step time ÷
linear-solve time, in one run.

    .venv/bin/python benchmarks/topopt_crank.py                    # shipped 500×200 mesh, 3 steps
    .venv/bin/python benchmarks/topopt_crank.py --steps 5 --nx 100 --ny 40 --profile
    mpirun -n 2 .venv/bin/python benchmarks/topopt_crank.py --cpu     # rank 0 prints

The shipped config has 10^5 elements (design variables) and 200 steps of 0.01 s.  A
full run is long on the serial solver path, so ``--steps K`` runs the first K steps
(t_end = K·dt) and the 200-step figures are *extrapolated* linearly from the measured
per-step times (labelled as such).  The linear-solve time is the time spent inside
the KSP (factorization + triangular solves) of the stepper's Newton operator,
measured by wrapping ``SparseOperator.solve``; "step ÷ solve" is the forward step
time over that.  ``--profile`` prints the cProfile top 25 of forward + adjoint (``--profile-out PREFIX``: every
rank also writes its stats to PREFIX.RANK, for a per-rank breakdown); ``--cpu`` times with
the process CPU time instead of wall-clock time (use it on a shared machine);
``--check`` compares g·d with a central difference of ψ along a random direction d
(two more forward runs) — the gradient check at full scale.
"""
import argparse
import copy
import cProfile
import os
import pstats
import sys
import time
import tomllib

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import parmbs  # noqa: F401,E402  (before numpy: parmbs/_determinism.py pins numpy's CPU features for same-bytes results)
import numpy as np

from parmbs.config.loader import validate          # noqa: E402
from parmbs.sensitivity.problem import Problem      # noqa: E402

clock = time.perf_counter
CONFIG = os.path.join(os.path.dirname(__file__), "..", "configs", "topopt-crank.toml")


def crank_config(nx=None, ny=None):
    """The shipped crank's TOML data, on an nx × ny mesh if given (pin at node
    [0.9 nx, ny/2], the clamp radius at least one element)."""
    with open(CONFIG, "rb") as f:
        data = tomllib.load(f)
    c = data["continua"][0]
    if nx or ny:
        nx, ny = nx or c["nx"], ny or c["ny"]
        c.update(nx=nx, ny=ny, points={"pin": [9 * nx // 10, ny // 2]},
                 clamp_radius=max(c["clamp_radius"], 1.05 * c["size"][0] / nx))
    return data


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--nx", type=int)
    ap.add_argument("--ny", type=int)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--profile-out", metavar="PREFIX",
                    help="with --profile: every rank dumps its cProfile stats to PREFIX.RANK "
                         "(pstats format; the clock of --cpu)")
    ap.add_argument("--check", action="store_true",
                    help="also check g·d against a central difference of ψ along a random direction d")
    ap.add_argument("--no-schur", action="store_true",
                    help="the plain path: element-assembled Newton matrix, one LU per Newton iteration "
                         "(default: flexible/continuum_schur.py)")
    ap.add_argument("--cpu", action="store_true",
                    help="time with this process's CPU time (time.process_time): robust on a shared, "
                         "oversubscribed machine; the default is wall-clock time")
    a = ap.parse_args()
    global clock
    clock = time.process_time if a.cpu else time.perf_counter
    print(f"clock: {'CPU time of this process' if a.cpu else 'wall'}")
    data = crank_config(a.nx, a.ny)
    c = data["continua"][0]
    full_steps = int(round(data["simulation"]["t_end"] / data["simulation"]["dt"]))
    data["simulation"]["t_end"] = a.steps * data["simulation"]["dt"]
    cfg = validate(copy.deepcopy(data), CONFIG)

    if a.no_schur:
        from parmbs._petsc import PETSc
        PETSc.Options().setValue("parmbs_continuum_schur", "false")
    t0 = clock()
    pr = Problem(cfg)
    t_setup = clock() - t0
    n, m = pr.sys.n, pr.sys.m
    print(f"model: {c['nx']}x{c['ny']} = {c['nx'] * c['ny']} elements, design variables {len(pr.design)}, "
          f"unknowns n+m = {n + m}; set-up (System, patterns) {t_setup:.1f} s", flush=True)

    op = pr.stepper.lin          # the Newton solver: SparseOperator (LU) or ContinuumSchurOperator
    solve_t = {"t": 0.0, "n": 0}
    inner_solve = op.solve

    def timed_solve(rhs, transpose=False):
        s = clock()
        try:
            return inner_solve(rhs, transpose)
        finally:
            solve_t["t"] += clock() - s
            solve_t["n"] += 1
    op.solve = timed_solve

    prof = cProfile.Profile(clock) if a.profile else None
    if prof:
        prof.enable()
    step_t = []
    t_init = [0.0]
    marks = {}

    sch = pr.stepper.schur
    fs = {}                  # F-solve counters (Schur path) at the marks

    def on_step(k, t, x):
        now = clock()
        if k == 0:
            t_init[0] = now - marks["start"]
            solve_t.update(t=0.0, n=0)
            if sch is not None:
                fs["steps0"] = (sch.nfsolve - getattr(sch, 'nfsolve_factor', 0), sch.nfactor)
        else:
            step_t.append(now - marks["last"])
        marks["last"] = now

    marks["start"] = clock()
    w0 = time.perf_counter()
    traj = pr.forward(on_step=on_step)
    t_fwd = clock() - marks["start"]
    w_fwd = time.perf_counter() - w0
    fwd_solve, fwd_nsolve = solve_t["t"], solve_t["n"]
    if sch is not None:
        fs["adj0"] = (sch.nfsolve - getattr(sch, 'nfsolve_factor', 0), sch.nfactor)
    solve_t.update(t=0.0, n=0)
    adj_steps = []
    inner_adj = pr.stepper.adjoint_step

    def timed_adjoint_step(*args):
        s = clock()
        out = inner_adj(*args)
        adj_steps.append(clock() - s)
        return out
    pr.stepper.adjoint_step = timed_adjoint_step
    init_adj = []
    inner_init = pr.stepper.init.adjoint

    def timed_init_adjoint(*args):
        s = clock()
        out = inner_init(*args)
        init_adj.append(clock() - s)
        return out
    pr.stepper.init.adjoint = timed_init_adjoint
    init_fs = []

    def timed_init_adjoint_fs(*args):
        if sch is not None:
            init_fs.append(sch.nfsolve - getattr(sch, 'nfsolve_factor', 0))
        return timed_init_adjoint(*args)
    pr.stepper.init.adjoint = timed_init_adjoint_fs
    t1 = clock()
    w1 = time.perf_counter()
    g = pr.adjoint()["compliance"]
    t_adj = clock() - t1
    w_adj = time.perf_counter() - w1
    if prof:
        prof.disable()
    steps = np.array(step_t)
    its = traj.newton_its
    from parmbs._petsc import PETSc
    comm = PETSc.COMM_WORLD
    # rank 0 prints (its own CPU time); every rank runs the check's forward runs
    say = print if comm.getRank() == 0 else (lambda *x, **k: None)
    say(f"ranks: {comm.getSize()}; wall: forward {w_fwd:.1f} s, adjoint {w_adj:.1f} s; "
          f"load average {os.getloadavg()[0]:.1f}")
    if comm.getSize() > 1:                 # every rank's own forward / adjoint time
        per = comm.tompi4py().allgather((t_fwd, t_adj))
        say("  per rank forward / adjoint: " + ", ".join(f"rank {r} {f:.1f} / {b:.1f} s"
                                                       for r, (f, b) in enumerate(per)))
    say(f"forward: {t_fwd:.2f} s for {a.steps} steps (initial state {t_init[0]:.2f} s; "
          f"per step {steps.mean():.2f} s, Newton iterations {list(its)})")
    say(f"  linear solves in the steps: {fwd_solve:.2f} s in {fwd_nsolve} solves")
    say(f"  step time / linear-solve time: {steps.sum() / fwd_solve:.2f}")
    say(f"adjoint: {t_adj:.2f} s (KSP solves {solve_t['t']:.2f} s); gradient over {len(g)} densities, "
          f"|g| = {np.linalg.norm(g):.3e}")
    say(f"adjoint / forward ({a.steps} steps, measured): {t_adj / t_fwd:.2f}")
    if sch is not None:
        say(f"  Schur solver: {sch.nfactor} factorizations of the elastic block, {sch.nfsolve} solves with it, "
              f"{sch.nrefine} refinement sweeps"
              + (f", {sch.nkspit} Krylov iterations ({sch.ksp.getType()} + {sch.ksp.getPC().getType()})"
                 if sch.iterative else ""))
        (s0, f0), (s1, f1) = fs["steps0"], fs["adj0"]
        s2 = init_fs[0] if init_fs else sch.nfsolve - getattr(sch, 'nfsolve_factor', 0)
        say(f"  F-solves per forward step {(s1 - s0) / a.steps:.2f}, per adjoint step {(s2 - s1) / a.steps:.2f} "
            f"(without the {getattr(sch, 'nfsolve_factor', 0)} once per factorization: probe, F⁻¹ of the border basis); "
            f"factorizations in the forward steps {f1 - f0}, in the adjoint {sch.nfactor - f1}")
    once = sum(init_adj)                                   # initial-state adjoint
    per_adj = (t_adj - once) / a.steps                     # adjoint step + objective partials
    say(f"  adjoint per step {per_adj:.2f} s (of which adjoint_step {np.mean(adj_steps):.2f} s; forward "
          f"per step {steps.mean():.2f} s: ratio {per_adj / steps.mean():.2f}); initial-state adjoint {once:.2f} s")
    fwd_full = t_init[0] + full_steps * steps.mean()
    adj_full = once + full_steps * per_adj
    say(f"EXTRAPOLATED to {full_steps} steps (linear in the measured per-step times): "
          f"forward ≈ {fwd_full:.0f} s, adjoint ≈ {adj_full:.0f} s, adjoint / forward ≈ {adj_full / fwd_full:.2f}; "
          f"design iteration (forward + adjoint, without the MMA update) ≈ {fwd_full + adj_full:.0f} s")
    if a.steps >= 2:
        # the first forward step factors F (and solves its border basis), the first adjoint
        # step its transposed basis: once per design, not per step
        part = (t_adj - once - sum(adj_steps)) / a.steps   # objective partials per step
        fs_, as_ = steps[1:].mean(), np.mean(adj_steps[1:]) + part
        fwd2 = t_init[0] + steps[0] + (full_steps - 1) * fs_
        adj2 = once + adj_steps[0] + part + (full_steps - 1) * as_
        say(f"  step times: forward {[round(s, 2) for s in steps]}, adjoint_step {[round(s, 2) for s in adj_steps]} "
            f"(+ {part:.2f} objective partials each)")
        say(f"EXTRAPOLATED, first steps once (they hold the factorization) and the later steps' mean: "
            f"forward step {fs_:.2f} s, adjoint step {as_:.2f} s (ratio {as_ / fs_:.2f}); forward ≈ {fwd2:.0f} s, "
            f"adjoint ≈ {adj2:.0f} s, design iteration ≈ {fwd2 + adj2:.0f} s")
    import resource                       # peak memory of every rank (Linux: ru_maxrss in KiB)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20
    rss = comm.tompi4py().allgather(rss) if comm.getSize() > 1 else [rss]
    say("max RSS per rank (forward + adjoint): " + ", ".join(f"rank {r} {x:.2f} GiB" for r, x in enumerate(rss)))
    if a.check:
        p0 = pr.sys.p.copy()
        rho = pr.design.values(p0)
        d = np.random.default_rng(0).uniform(-1.0, 1.0, len(rho)) * rho
        h = 1e-4
        vals = []
        for sgn in (1, -1):
            p = pr.design.apply(p0, rho + sgn * h * d)
            vals.append(pr.objective_values(pr.forward(p), p)["compliance"])
        fd = (vals[0] - vals[1]) / (2 * h)
        say(f"check: g·d = {g @ d:.10e}, central difference (h = {h:g}) = {fd:.10e}, "
              f"relative difference {abs(g @ d - fd) / abs(fd):.2e}")
    if prof and a.profile_out:
        prof.dump_stats(f"{a.profile_out}.{comm.getRank()}")
    if prof and comm.getRank() == 0:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
        pstats.Stats(prof).sort_stats("tottime").print_stats(20)


if __name__ == "__main__":
    main()
