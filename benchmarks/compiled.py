"""Issue 19: the compiled step (parmbs/compiled) against the numpy path, in one run.

Five-bar as shipped (index-3 generalized-α, ρ∞ = 0.9, dt = 1e-3), both paths built from
the same config, ``simulation.compiled = "off"`` vs ``"auto"``; CPU time
(time.process_time), min of --repeat:

* forward: ``Problem.forward`` (the whole loop: guard, trajectory arrays) in steps/s,
  and the bare ``stepper.step`` loop (what the step itself costs);
* gradient: forward + ``Problem.adjoint`` (all objectives, one sweep), and the direct
  sweep ``Problem.direct`` (tangent steps, one column per design variable);
* three paths: numpy + PETSc (``compiled = "off"``), compiled as it was before the
  compiled tangent/adjoint steps (``auto``, but the tangent/adjoint steps and the
  objective partials per state on numpy — ``numpy_sensitivities``), and compiled;
* agreement: max relative differences of q, v, a, λ over the run and of each gradient.

The compile (or cache load) time is the one-line note of the first compiled stepper in
the process.  Cold compile: give an empty cache directory,
    NUMBA_CACHE_DIR=$(mktemp -d) PYTHONPATH=$PWD .venv/bin/python benchmarks/compiled.py
Warm: run again with the same directory (or without the variable: parmbs/compiled/__pycache__).

``--guard``: instead, only the compiled forward: ``Problem.forward`` against the bare step
loop in one process (the cost outside the step, µs per step) and ``Guard.check`` alone,
replayed over the stored trajectory (integrators/guard.py; min of --repeat).

``--compile``: instead, the CPU time of the first compiled forward (``Problem``
construction: the step's warm-up), adjoint and direct sweep in this process, on a
5-step run — the numba compile when ``NUMBA_CACHE_DIR`` is an empty directory, the cache
load otherwise (one process per model: kernels compiled for one model are in memory).

``--crossover 4,10,20,40,60``: instead, the CPU time per step of ``Problem.forward`` and
``Problem.adjoint`` (runs of ≥ 0.2 s or 400 steps) on the numpy path and the compiled
path with the dense and with the sparse LU (compiled/newton_lu.py) for hanging chains
of that many links (benchmarks/gradient.py's model, N = 5·links unknowns), the compiled
path forced beyond ``compiled.MAX_UNKNOWNS`` — the measurement that sets
``compiled.SPARSE_FROM`` and ``MAX_UNKNOWNS``.

``--sweep``: instead, only the compiled path's ``Problem.forward`` and ``Problem.adjoint``
(µs per step, adjoint ÷ forward; first use untimed).

``--chain 60``: instead, the gradient (forward + adjoint, 5 design variables, the
chain's objectives; ``--chain-steps`` steps) of that chain on the numpy path, as shipped
(``auto``: the sparse LU of compiled/newton_lu.py), and on the compiled path with the
dense LU forced (issue 19's goal "60-link chain gradient ≥ 5× faster"); first use
(compile) untimed; the agreement of each compiled run with the numpy one.
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


def numpy_sensitivities(pr):
    """The compiled path as before the compiled tangent/adjoint steps: those steps on numpy
    (NewmarkFamily._compiled_real false) and the objective partials state by state
    (no sensitivity/local_table.py)."""
    import contextlib
    pr.stepper._compiled_real = lambda *a: False
    pr._local_table = lambda *a: contextlib.nullcontext(None)


def guard_cost(config, sets, repeat):
    """Problem.forward vs the bare step loop, and Guard.check alone (module docstring)."""
    pr = Problem(load_config(config, sets))
    if pr.stepper.compiled is None:
        raise SystemExit(f"{config}: the compiled path is not used for this model")
    p, N = pr.sys.p, pr.nsteps
    x0 = pr.stepper.initial(pr.t0, p)
    pr.forward()
    tf, tr = cpu_min(pr.forward, repeat)
    tb, _ = cpu_min(lambda: bare_steps(pr, x0, p), repeat)
    X, g = [tr.x(k) for k in range(N + 1)], pr.guard

    def replay():
        g.start(0, tr.t[0], X[0], p)
        for k in range(1, N + 1):
            g.check(k, tr.t[k], X[k])

    tg, _ = cpu_min(replay, repeat)
    print(f"{config}: {N} steps, CPU min of {repeat}: forward {N / tf:.0f} steps/s, bare step loop {N / tb:.0f} "
          f"steps/s, outside the step {1e6 * (tf - tb) / N:.1f} µs/step, Guard.check alone {1e6 * tg / N:.1f} "
          f"µs/step (energy test {'on' if g.e0 is not None else 'off'})")


def compile_cost(config, sets):
    """CPU (wall) s of the first compiled forward step, adjoint and direct sweep (module docstring)."""
    def first(fn):
        t0, w0 = time.process_time(), time.perf_counter()
        out = fn()
        return out, (time.process_time() - t0, time.perf_counter() - w0)

    pr, f = first(lambda: Problem(load_config(config, sets + ["simulation.t_end=0.005"])))
    if pr.stepper.compiled is None:
        raise SystemExit(f"{config}: the compiled path is not used for this model")
    pr.forward()
    _, a = first(pr.adjoint)
    _, d = first(pr.direct)
    print(f"{config}: first use, CPU s (wall s): forward step {f[0]:.1f} ({f[1]:.1f}), adjoint {a[0]:.1f} "
          f"({a[1]:.1f}), tangent {d[0]:.1f} ({d[1]:.1f}), total {f[0] + a[0] + d[0]:.1f} CPU s")


def crossover(links, repeat):
    """Step and adjoint-step time numpy vs compiled dense vs compiled sparse on chains of
    ``links`` links (module docstring)."""
    import pathlib
    import sys
    import tempfile
    sys.path.insert(0, str(pathlib.Path(__file__).parent))
    from gradient import chain_toml
    from parmbs import compiled
    limit, sparse_from = compiled.MAX_UNKNOWNS, compiled.SPARSE_FROM
    compiled.MAX_UNKNOWNS = 10 ** 9
    print(f"CPU µs per step (forward: Problem.forward; adjoint: Problem.adjoint, 2 objectives, 1 design "
          f"variable), min of {repeat}")
    print("| links | N = n + m | numpy fwd | dense fwd | sparse fwd | numpy adj | dense adj | sparse adj "
          "| sparse ÷ dense fwd, adj |\n|---|---|---|---|---|---|---|---|---|")
    for L in links:
        f = pathlib.Path(tempfile.mkdtemp()) / "chain.toml"
        f.write_text(chain_toml(L, 50, 1))
        per = {}
        for mode, sf in (("numpy", None), ("dense", 10 ** 9), ("sparse", 0)):
            compiled.SPARSE_FROM = sparse_from if sf is None else sf
            pr = Problem(load_config(str(f), [f"simulation.compiled={'off' if sf is None else 'on'}"]))
            assert (pr.stepper.compiled is None) == (sf is None)
            assert sf is None or (pr.stepper.compiled.S is None) == (mode == "dense")
            pr.forward()
            pr.adjoint()
            k = 50
            while True:                                # enough steps for ~0.2 s a run
                pr = Problem(load_config(str(f), [f"simulation.compiled={'off' if sf is None else 'on'}",
                                                  f"simulation.t_end={k * 1e-3!r}"]))
                tf, _ = cpu_min(pr.forward, 1)
                if tf > 0.2 or k >= 400:
                    break
                k *= 2
            tf, _ = cpu_min(pr.forward, repeat)
            ta, _ = cpu_min(pr.adjoint, repeat)
            per[mode] = (1e6 * tf / k, 1e6 * ta / k)
        print(f"| {L} | {pr.sys.n + pr.sys.m} | " + " | ".join(f"{per[m][0]:.0f}" for m in per) + " | "
              + " | ".join(f"{per[m][1]:.0f}" for m in per)
              + f" | {per['sparse'][0] / per['dense'][0]:.2f}, {per['sparse'][1] / per['dense'][1]:.2f} |",
              flush=True)
    compiled.MAX_UNKNOWNS, compiled.SPARSE_FROM = limit, sparse_from


def sweep_cost(config, sets, repeat):
    """Only the compiled path: ``Problem.forward`` and ``Problem.adjoint`` of one Problem,
    CPU min of ``repeat`` (module docstring, ``--sweep``)."""
    pr = Problem(load_config(config, sets))
    if pr.stepper.compiled is None:
        raise SystemExit(f"{config}: the compiled path is not used for this model")
    pr.forward()
    pr.adjoint()                                       # first use (compile or cache load) not timed
    tf, _ = cpu_min(pr.forward, repeat)
    ta, _ = cpu_min(pr.adjoint, repeat)
    N = pr.nsteps
    print(f"{config}: {N} steps, CPU min of {repeat}: forward {tf:.3f} s ({1e6 * tf / N:.1f} µs/step), adjoint "
          f"{ta:.3f} s ({1e6 * ta / N:.1f} µs/step), adjoint ÷ forward {ta / tf:.2f}")


def chain_gradient(links, steps, ndesign, repeat):
    """Gradient (forward + adjoint) of the hanging chain (module docstring, ``--chain``):
    numpy + PETSc, as shipped (``auto``), and the compiled path with the dense LU forced
    (past ``compiled.SPARSE_FROM`` and ``MAX_UNKNOWNS``)."""
    import pathlib
    import sys
    import tempfile
    sys.path.insert(0, str(pathlib.Path(__file__).parent))
    from gradient import chain_toml
    from parmbs import compiled
    limit, sparse_from = compiled.MAX_UNKNOWNS, compiled.SPARSE_FROM
    f = pathlib.Path(tempfile.mkdtemp()) / "chain.toml"
    f.write_text(chain_toml(links, steps, ndesign))
    rows, runs = [], {}
    for mode, name in (("off", "numpy + PETSc"), ("auto", "as shipped (`auto`)"),
                       ("dense", "compiled, dense LU forced")):
        compiled.MAX_UNKNOWNS, compiled.SPARSE_FROM = (10 ** 9, 10 ** 9) if mode == "dense" else (limit, sparse_from)
        pr = Problem(load_config(str(f), [f"simulation.compiled={'on' if mode == 'dense' else mode}"]))
        c = pr.stepper.compiled
        pr.forward()
        pr.adjoint()                                   # first use (compile or cache load) not timed
        tf, tr = cpu_min(pr.forward, repeat)
        ta, g = cpu_min(pr.adjoint, repeat)
        runs[mode] = (tr, g)
        how = "no" if c is None else "dense LU" if c.S is None else "sparse LU"
        rows.append((name, how, tf, ta))
    compiled.MAX_UNKNOWNS, compiled.SPARSE_FROM = limit, sparse_from
    print(f"chain of {links} links, N = n + m = {pr.sys.n + pr.sys.m}, {steps} steps, {ndesign} design variables, "
          f"{len(pr.objectives)} objective(s), CPU s, min of {repeat}")
    print("| path | compiled step | forward s | adjoint s | gradient s | adjoint ÷ forward | forward, adjoint, "
          "gradient: numpy's ÷ this |")
    print("|---|---|---|---|---|---|---|")
    b = rows[0]
    for name, c, tf, ta in rows:
        print(f"| {name} | {c} | {tf:.3f} | {ta:.3f} | {tf + ta:.3f} | {ta / tf:.2f} | {b[2] / tf:.2f}, "
              f"{b[3] / ta:.2f}, {(b[2] + b[3]) / (tf + ta):.2f} |")
    rel = lambda A, B: float(np.max(np.abs(A - B)) / np.max(np.abs(A)))
    for mode in ("auto", "dense"):
        (t0, g0), (t1, g1) = runs["off"], runs[mode]
        print(f"{mode} vs numpy (max rel. difference): "
              + ", ".join(f"{k} {rel(getattr(t0, k), getattr(t1, k)):.1e}" for k in ("q", "v", "a", "lam"))
              + "; gradients " + ", ".join(f"{k} {rel(g0[k], g1[k]):.1e}" for k in g0))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="configs/fivebar.toml")
    ap.add_argument("--t-end", type=float, default=5.0)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="config override (repeatable), e.g. to pin the scheme a row was measured with")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--crossover", help="comma list of chain lengths (module docstring)")
    ap.add_argument("--chain", type=int, help="links of the chain whose gradient is timed (module docstring)")
    ap.add_argument("--chain-steps", type=int, default=200)
    ap.add_argument("--sweep", action="store_true", help="only the compiled forward and adjoint (docstring)")
    ap.add_argument("--guard", action="store_true", help="only the forward's cost outside the step (docstring)")
    ap.add_argument("--compile", action="store_true", help="only the first-use (compile) times (docstring)")
    args = ap.parse_args()
    if args.crossover:
        return crossover([int(c) for c in args.crossover.split(",")], args.repeat)
    if args.chain:
        return chain_gradient(args.chain, args.chain_steps, 5, args.repeat)
    sets = [f"simulation.t_end={args.t_end}", "simulation.progress=false", *args.set]
    if args.guard:
        return guard_cost(args.config, sets, args.repeat)
    if args.sweep:
        return sweep_cost(args.config, sets, args.repeat)
    if args.compile:
        return compile_cost(args.config, ["simulation.progress=false", *args.set])
    res = {}
    for mode in ("off", "before", "auto"):
        t0, w0 = time.process_time(), time.perf_counter()
        pr = Problem(load_config(args.config, sets + [f"simulation.compiled={'off' if mode == 'off' else 'auto'}"]))
        setup = (time.process_time() - t0, time.perf_counter() - w0)
        if mode != "off":
            if pr.stepper.compiled is None:
                raise SystemExit(f"{args.config}: the compiled path is not used for this model")
            print(pr.stepper.compiled_note or "compiled: kernels already loaded in this process")
        if mode == "before":
            numpy_sensitivities(pr)
        p = pr.sys.p
        x0 = pr.stepper.initial(pr.t0, p)
        tb, _ = cpu_min(lambda: bare_steps(pr, x0, p), args.repeat)
        tf, tr = cpu_min(pr.forward, args.repeat)
        ta, g = cpu_min(pr.adjoint, args.repeat)
        if mode == "auto" and pr.stepper.compiled.sens_note:
            print(pr.stepper.compiled.sens_note)
        td, gd = cpu_min(pr.direct, args.repeat)
        res[mode] = dict(pr=pr, tr=tr, g=g, gd=gd, bare=tb, fwd=tf, adj=ta, dir=td, setup=setup)
    N = res["off"]["pr"].nsteps
    print(f"{args.config}: {N} steps, n + m = {res['off']['pr'].sys.n + res['off']['pr'].sys.m}, "
          f"CPU s, min of {args.repeat}")
    print("| path | set-up s (CPU / wall) | step loop steps/s | forward steps/s | forward s | adjoint s "
          "| gradient s (fwd + adj) | adjoint ÷ forward | direct s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for mode, name in (("off", "numpy + PETSc"), ("before", "compiled forward, numpy sensitivities (before)"),
                       ("auto", "compiled (forward, tangent, adjoint)")):
        r = res[mode]
        print(f"| {name} | {r['setup'][0]:.2f} / {r['setup'][1]:.2f} | {N / r['bare']:.0f} | {N / r['fwd']:.0f} "
              f"| {r['fwd']:.3f} | {r['adj']:.3f} | {r['fwd'] + r['adj']:.3f} | {r['adj'] / r['fwd']:.2f} "
              f"| {r['dir']:.3f} |")
    o, b, c = res["off"], res["before"], res["auto"]
    grad = lambda r: r["fwd"] + r["adj"]
    print(f"ratios compiled ÷ numpy: step loop ×{o['bare'] / c['bare']:.1f}, forward ×{o['fwd'] / c['fwd']:.1f}, "
          f"gradient ×{grad(o) / grad(c):.2f} (before ×{grad(o) / grad(b):.2f}); compiled ÷ before: adjoint "
          f"×{b['adj'] / c['adj']:.1f}, gradient ×{grad(b) / grad(c):.1f}, direct ×{b['dir'] / c['dir']:.1f}")
    rel = lambda A, B: float(np.max(np.abs(A - B)) / np.max(np.abs(A)))
    print("agreement compiled vs numpy over the run (max rel. difference): "
          + ", ".join(f"{k} {rel(getattr(o['tr'], k), getattr(c['tr'], k)):.1e}" for k in ("q", "v", "a", "lam"))
          + "; adjoint gradients " + ", ".join(f"{k} {rel(o['g'][k], c['g'][k]):.1e}" for k in o["g"])
          + "; direct " + ", ".join(f"{k} {rel(o['gd'][k], c['gd'][k]):.1e}" for k in o["gd"]))
    print("compiled vs before, same compiled trajectory: adjoint "
          + ", ".join(f"{k} {rel(b['g'][k], c['g'][k]):.1e}" for k in b["g"])
          + "; direct " + ", ".join(f"{k} {rel(b['gd'][k], c['gd'][k]):.1e}" for k in b["gd"]))


if __name__ == "__main__":
    main()
