"""Issue 19, first step: per-step cost prototypes on the five-bar (index-3 trapezoidal,
dt = 1e-3), all measured in one run against the current parmbs path.

Techniques (each runs the same forward trajectory from parmbs's initial state and is
compared with parmbs's q at t_end, relative ∞-norm difference):

  current  parmbs ``Problem.forward`` (numpy component kernels, PETSc AIJ + KSP preonly/LU)
  b1       parmbs unchanged but the Newton operator swapped for a dense numpy/LAPACK one
           (dense_operator.py): no PETSc objects per step; also its adjoint sweep
  b2       plain numpy written for the step (numpy_lean.py): per-kind vectorized residual
           and Newton matrix, parameter-only quantities computed once per design, one
           bincount each for R and J, numpy.linalg.solve; no compilation
  a1       numba kernels per kind (numba_kernels.py), one compiled call per Newton
           iterate, Newton loop in Python, numpy.linalg.solve
  a2       numba: one compiled call per step (kernels + Newton + own dense LU)
  a3       numba: the whole run in one compiled call (upper bound of a2's per-call cost)
  a4       numba as a2, but the spring's r_q, r_v and the joint's ∂(Φ_qᵀλ)/∂q by complex step
           inside compiled code (numba_cs.py): parmbs's "hand-write r and Φ_q only" design
  c        CasADi SX of the same residual, R and J as one casadi Function (casadi_step.py):
           c-vm (CasADi's virtual machine) and, with --casadi-codegen, c-jit (generated C
           compiled with gcc -O2 and loaded as an external)

Times are CPU (time.process_time), min of --repeat runs.  numba: the import and the first
call (compile, or load from the cache with cache=True) are timed separately; run twice
with the same --numba-cache-dir, the first with --clear-cache, for cold and warm figures.

Usage (a venv with numba, casadi; never the project venv):
  NUMBA_CACHE_DIR=/tmp/nbcache PYTHONPATH=$PWD /tmp/venv-kernels/bin/python \
      benchmarks/prototypes/step_prototypes.py [--t-end 1] [--repeat 3] [--clear-cache]
"""
import os
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # before numpy: see README (tiny dense solves)
import argparse
import shutil
import sys
import time

import numpy as np

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from model_arrays import ModelArrays  # noqa: E402
import python_newton  # noqa: E402


def cpu_min(fn, repeat):
    """(min CPU time, all times, last result) of ``repeat`` calls of fn."""
    ts, out = [], None
    for _ in range(repeat):
        t0 = time.process_time()
        out = fn()
        ts.append(time.process_time() - t0)
    return min(ts), ts, out


def rel(q, ref):
    return float(np.max(np.abs(q - ref)) / np.max(np.abs(ref)))


def diffs(x, xref):
    """Relative ∞-norm differences of the final (q, v, a, λ) to parmbs's."""
    return tuple(rel(np.asarray(a), np.asarray(b)) for a, b in zip(x, xref))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="configs/fivebar.toml")
    ap.add_argument("--t-end", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--clear-cache", action="store_true", help="empty NUMBA_CACHE_DIR first (cold compile)")
    ap.add_argument("--only", default="current,b1,b2,a,c", help="comma list of current,b1,b2,a,c")
    ap.add_argument("--casadi-codegen", action="store_true", help="also c-jit: generate C, gcc -O2, load")
    args = ap.parse_args()
    only = set(args.only.split(","))
    cfg = load_config(args.config, [f"simulation.t_end={args.t_end}", "simulation.progress=false"])
    pr = Problem(cfg)
    sim = cfg.simulation
    if (sim.formulation, sim.integrator) != ("index3", "trapezoidal"):
        print(f"{args.config}: simulation.integrator: the prototypes implement index3 trapezoidal only")
        sys.exit(2)
    h, N, tol, p = sim.dt, pr.nsteps, sim.newton, pr.sys.p
    rows = []          # (technique, steps/s, CPU s, ×current, rel diff q(t_end), note)

    tf, tfs, traj = cpu_min(pr.forward, args.repeat)
    ta, tas, g_ref = cpu_min(pr.adjoint, args.repeat)
    ref = traj.x(N)
    x0 = tuple(np.array(x) for x in traj.x(0))
    its_ref = int(traj.newton_its.sum())
    rows.append(("current (numpy + PETSc)", N / tf, tf, 1.0, (0.0,) * 4,
                 f"Newton its {its_ref}; adjoint {ta:.3f} s, adjoint÷forward {ta / tf:.2f}"))
    print(f"{args.config}: n = {pr.sys.n}, m = {pr.sys.m}, {N} steps of {h}; CPU min of {args.repeat}")
    print(f"current: forward {tfs}, adjoint {tas}")

    if "b1" in only:
        from dense_operator import use_dense
        pr1 = Problem(cfg)
        use_dense(pr1.stepper)
        t1, t1s, tr1 = cpu_min(pr1.forward, args.repeat)
        a1_, a1s, g1 = cpu_min(pr1.adjoint, args.repeat)
        gd = max(float(np.max(np.abs(g1[k] - g_ref[k])) / np.max(np.abs(g_ref[k]))) for k in g_ref)
        rows.append(("b1 parmbs + dense LAPACK operator", N / t1, t1, tf / t1, diffs(tr1.x(N), ref),
                     f"Newton its {int(tr1.newton_its.sum())}; adjoint {a1_:.3f} s (×{ta / a1_:.2f}), "
                     f"adjoint÷forward {a1_ / t1:.2f}, gradient rel diff {gd:.1e}"))
        print(f"b1: forward {t1s}, adjoint {a1s}")

    ma = ModelArrays(pr.sys)
    if "b2" in only:
        from numpy_lean import LeanModel
        t0 = time.process_time()
        lean = LeanModel(ma, p, h)
        setup = time.process_time() - t0
        tb, tbs, (Qb, itsb, xb) = cpu_min(lambda: python_newton.run(x0, h, N, tol, lean.eval_RJ), args.repeat)
        rows.append(("b2 plain numpy, fused per kind, dense solve", N / tb, tb, tf / tb, diffs(xb, ref),
                     f"Newton its {itsb}; set-up per design {1e3 * setup:.2f} ms"))
        print(f"b2: {tbs}")

    if "a" in only:
        cache = os.environ.get("NUMBA_CACHE_DIR")
        if args.clear_cache and cache and os.path.isdir(cache):
            shutil.rmtree(cache)
        t0 = time.process_time()
        import numba_kernels as nk
        t_import = time.process_time() - t0
        arrs = (*ma.stacked("Inertia", 3, 2), *ma.stacked("Gravity", 3, 3), *ma.stacked("Spring", 6, 11),
                *ma.stacked("Revolute", 6, 8, 2))
        iq, ip, _, gq, gp, _, sq, sp, _, rq, rp, rr = arrs
        kin = (iq, ip, gq, gp, sq, sp, rq, rp, rr)
        n, bh2, gh = pr.sys.n, 0.25 * h * h, 0.5 * h
        q0, v0, a0, l0 = x0
        first = {}
        t0 = time.process_time()
        nk.eval_RJ(q0, v0, a0, l0, p, n, bh2, gh, *kin)
        first["eval_RJ"] = time.process_time() - t0
        t0 = time.process_time()
        nk.newton_step(q0, v0, a0, l0, p, n, bh2, gh, tol.atol, tol.rtol, tol.max_it, *kin)
        first["newton_step"] = time.process_time() - t0
        Qw = np.empty((N + 1, n))
        t0 = time.process_time()
        nk.run_steps(q0, v0, a0, l0, p, n, h, 1, tol.atol, tol.rtol, tol.max_it, *kin, Qw)
        first["run_steps"] = time.process_time() - t0
        mode = ("cold: cache cleared, compile" if args.clear_cache else
                "cache as found (warm if an earlier run compiled this source)" if cache else "NUMBA_CACHE_DIR unset")
        note = (f"import numba + kernels {t_import:.2f} s; first calls, {mode}: "
                + ", ".join(f"{k} {v:.2f} s" for k, v in first.items()))
        print("numba:", note)

        ev = lambda q, v, a, lam: nk.eval_RJ(q, v, a, lam, p, n, bh2, gh, *kin)
        ta1, ta1s, (Qa1, itsa1, xa1) = cpu_min(lambda: python_newton.run(x0, h, N, tol, ev), args.repeat)
        rows.append(("a1 numba kernels, Python Newton, numpy solve", N / ta1, ta1, tf / ta1, diffs(xa1, ref),
                     f"Newton its {itsa1}"))

        def run_a2(step_fn=nk.newton_step):
            q, v, a, lam = (x.copy() for x in x0)
            Q = np.empty((N + 1, n))
            Q[0] = q
            its = 0
            for k in range(N):
                qp = q + h * v + 0.25 * h * h * a
                vp = v + 0.5 * h * a
                q, v, a, lam, it, st = step_fn(qp, vp, a, lam, p, n, bh2, gh, tol.atol, tol.rtol, tol.max_it, *kin)
                if st:
                    raise RuntimeError(f"step {k + 1}: status {st}")
                its += it
                Q[k + 1] = q
            return Q, its, (q, v, a, lam)
        ta2, ta2s, (Qa2, itsa2, xa2) = cpu_min(run_a2, args.repeat)
        rows.append(("a2 numba, one compiled call per step (own LU)", N / ta2, ta2, tf / ta2, diffs(xa2, ref),
                     f"Newton its {itsa2}; {note}"))

        def run_a3():
            Q = np.empty((N + 1, n))
            its, st, k, *xN = nk.run_steps(*(x.copy() for x in x0), p, n, h, N, tol.atol, tol.rtol, tol.max_it,
                                           *kin, Q)
            if st:
                raise RuntimeError(f"step {k}: status {st}")
            return Q, its, xN
        ta3, ta3s, (Qa3, itsa3, xa3) = cpu_min(run_a3, args.repeat)
        rows.append(("a3 numba, whole run in one call", N / ta3, ta3, tf / ta3, diffs(xa3, ref),
                     f"Newton its {itsa3}"))
        t0 = time.process_time()
        import numba_cs
        t_cs_import = time.process_time() - t0
        t0 = time.process_time()
        numba_cs.newton_step(q0, v0, a0, l0, p, n, bh2, gh, tol.atol, tol.rtol, tol.max_it, *kin)
        t_cs_first = time.process_time() - t0
        ta4, ta4s, (Qa4, itsa4, xa4) = cpu_min(lambda: run_a2(numba_cs.newton_step), args.repeat)
        rows.append(("a4 numba as a2, derived blocks by complex step in compiled code", N / ta4, ta4, tf / ta4,
                     diffs(xa4, ref), f"Newton its {itsa4}; import {t_cs_import:.2f} s, first call {t_cs_first:.2f} s "
                                      f"({mode})"))
        print(f"a1 {ta1s}, a2 {ta2s}, a3 {ta3s}, a4 {ta4s}")

    if "c" in only:
        try:
            import casadi_step
        except ImportError as e:
            print(f"c: skipped ({e})")
        else:
            for mode in ("vm", "jit") if args.casadi_codegen else ("vm",):
                t0, w0, c0 = time.process_time(), time.perf_counter(), os.times()
                cm = casadi_step.CasadiModel(ma, p, h, mode)
                c1 = os.times()
                build = (time.process_time() - t0 + c1.children_user - c0.children_user
                         + c1.children_system - c0.children_system)
                build_wall = time.perf_counter() - w0
                tc, tcs, (Qc, itsc, xc) = cpu_min(lambda: python_newton.run(x0, h, N, tol, cm.eval_RJ), args.repeat)
                rows.append((f"c-{mode} CasADi R,J Function, Python Newton", N / tc, tc, tf / tc, diffs(xc, ref),
                             f"Newton its {itsc}; graph + AD (+ gcc) {build:.2f} s CPU, {build_wall:.2f} s wall"))
                print(f"c-{mode}: {tcs}")

    print(f"\n| technique | steps/s | CPU s ({N} steps) | × current | rel. diff q, v, a, λ at t_end | notes |")
    print("|---|---|---|---|---|---|")
    for name, sps, t, x, d, note in rows:
        print(f"| {name} | {sps:.0f} | {t:.3f} | {x:.1f} | {', '.join(f'{e:.0e}' for e in d)} | {note} |")


if __name__ == "__main__":
    main()
