"""Issue 19: the compiled step (parmbs/compiled) against the numpy path, in one run.

Five-bar as shipped (index-3 generalized-α, ρ∞ = 0.9, dt = 1e-3), both paths built from
the same config, ``simulation.compiled = "off"`` vs ``"auto"``; CPU time
(time.process_time), min of --repeat:

* forward: ``Problem.forward`` (the whole loop: guard, trajectory arrays) in steps/s,
  and the bare ``stepper.step`` loop (what the step itself costs);
* gradient: forward + ``Problem.adjoint`` (all objectives, one sweep); the adjoint
  steps run numpy on both paths (tangent/adjoint steps are not compiled yet), so the
  share of the compiled path's gradient time still in numpy is adjoint ÷ gradient;
* agreement: max relative differences of q, v, a, λ over the run and of each gradient.

The compile (or cache load) time is the one-line note of the first compiled stepper in
the process.  Cold compile: give an empty cache directory,
    NUMBA_CACHE_DIR=$(mktemp -d) PYTHONPATH=$PWD .venv/bin/python benchmarks/compiled.py
Warm: run again with the same directory (or without the variable: parmbs/compiled/__pycache__).
"""
import parmbs  # noqa: F401  (first: parmbs/_determinism.py pins threads and numpy's SIMD)

import argparse
import time

import numpy as np

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem


def cpu_min(fn, repeat):
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t0)
    return best, out


def bare_steps(pr, x0, p):
    """The step loop alone (no guard, no trajectory arrays)."""
    x, T = x0, pr.t0 + pr.h * np.arange(pr.nsteps + 1)
    for k in range(pr.nsteps):
        x, _ = pr.stepper.step(k, T[k], x, p)
    return x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="configs/fivebar.toml")
    ap.add_argument("--t-end", type=float, default=5.0)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    sets = [f"simulation.t_end={args.t_end}", "simulation.progress=false"]
    res = {}
    for mode in ("off", "auto"):
        t0, w0 = time.process_time(), time.perf_counter()
        pr = Problem(load_config(args.config, sets + [f"simulation.compiled={mode}"]))
        setup = (time.process_time() - t0, time.perf_counter() - w0)
        if mode == "auto":
            if pr.stepper.compiled is None:
                raise SystemExit(f"{args.config}: the compiled path is not used for this model")
            print(pr.stepper.compiled_note or "compiled: kernels already loaded in this process")
        p = pr.sys.p
        x0 = pr.stepper.initial(pr.t0, p)
        tb, _ = cpu_min(lambda: bare_steps(pr, x0, p), args.repeat)
        tf, tr = cpu_min(pr.forward, args.repeat)
        ta, g = cpu_min(pr.adjoint, args.repeat)
        res[mode] = dict(pr=pr, tr=tr, g=g, bare=tb, fwd=tf, adj=ta, setup=setup)
    N = res["off"]["pr"].nsteps
    print(f"{args.config}: {N} steps, n + m = {res['off']['pr'].sys.n + res['off']['pr'].sys.m}, "
          f"CPU s, min of {args.repeat}")
    print("| path | set-up s (CPU / wall) | step loop steps/s | forward steps/s | forward s | adjoint s "
          "| gradient s (fwd + adj) | adjoint ÷ forward |")
    print("|---|---|---|---|---|---|---|---|")
    for mode, name in (("off", "numpy + PETSc"), ("auto", "compiled")):
        r = res[mode]
        print(f"| {name} | {r['setup'][0]:.2f} / {r['setup'][1]:.2f} | {N / r['bare']:.0f} | {N / r['fwd']:.0f} "
              f"| {r['fwd']:.3f} | {r['adj']:.3f} | {r['fwd'] + r['adj']:.3f} | {r['adj'] / r['fwd']:.2f} |")
    o, c = res["off"], res["auto"]
    print(f"ratios compiled ÷ numpy: step loop ×{o['bare'] / c['bare']:.1f}, forward ×{o['fwd'] / c['fwd']:.1f}, "
          f"gradient ×{(o['fwd'] + o['adj']) / (c['fwd'] + c['adj']):.2f}; share of the compiled gradient "
          f"still numpy (adjoint sweep): {c['adj'] / (c['fwd'] + c['adj']):.0%}")
    rel = lambda A, B: float(np.max(np.abs(A - B)) / np.max(np.abs(A)))
    print("agreement over the run (max rel. difference): "
          + ", ".join(f"{k} {rel(getattr(o['tr'], k), getattr(c['tr'], k)):.1e}" for k in ("q", "v", "a", "lam"))
          + "; gradients " + ", ".join(f"{k} {rel(o['g'][k], c['g'][k]):.1e}" for k in o["g"]))


if __name__ == "__main__":
    main()
