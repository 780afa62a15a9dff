"""Where the variational step's component time goes, per component kind (issue 19/22,
branch cwish20): the CPU of every group method a forward run calls (``r``,
``jacobians``, ``phi``, ``phi_q``, ``gamma``, ``phi_t``), summed per kind, per step.

Each method of each group is wrapped by a ``time.process_time`` pair (≈ 1 µs a call,
counted in); the step's total is the unwrapped run's CPU (min of ``--repeat``), and the
remainder (StateEval glue, scatter, assembly, LU) is printed as "rest".

``--blocks``: instead, the CPU per step of the step's parts (StateEval construction,
residual, force_blocks, phi, phi_q_blocks, gamma, BlockPattern.values, the compiled LU's
factorization and refined solves, the LocalOperator products), nested as they call each other.

``--compare``: the compiled step with one call per Newton iteration
(compiled/variational_newton.py) against the per-group compiled step (cwish20), two
Problems in one process, forwards alternating (``--repeat`` rounds): CPU per step of each
and the largest differences of their trajectories, relative to each quantity's largest entry.

Usage:  python benchmarks/variational_kinds.py [--config configs/double-wishbone-opt.toml]
        [--t-end 0.1] [--repeat 2] [--blocks | --compare] [--set key=value ...]
"""
import argparse
import time
from collections import defaultdict

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem

METHODS = ("r", "jacobians", "phi", "phi_q", "gamma", "phi_t")


def timed(f, key, acc):
    """f wrapped by a ``time.process_time`` pair: its CPU and calls added to acc[key]."""
    def w(*a, **kw):
        t0 = time.process_time()
        try:
            return f(*a, **kw)
        finally:
            acc[key][0] += time.process_time() - t0
            acc[key][1] += 1
    return w


def wrap(pr, acc):
    """Wrap the numpy groups and, under the compiled step, the groups it evaluates
    (compiled/variational_kinds.py proxies, labelled "(kernel)")."""
    groups = list(pr.sys.forces) + list(pr.sys.constraints)
    cs = getattr(pr.stepper, "compiled", None)
    if cs is not None and hasattr(cs, "forces"):
        groups += [g for g in cs.forces + cs.constraints if g not in groups]
    for g in groups:
        name = type(g).__name__ if not hasattr(g, "setup") else f"{type(g.g).__name__} (kernel)"
        for m in METHODS:
            f = getattr(g, m, None)
            if f is None:
                continue

            setattr(g, m, timed(f, (name, m), acc))


def wrap_blocks(acc):
    """process_time wrappers around the step's parts (class attributes: every instance)."""
    from parmbs.compiled import saddle_lu as SL, variational_newton as VN
    from parmbs.integrators import variational as V
    from parmbs.model.assembly import BlockPattern
    from parmbs.model.evaluation import StateEval, LocalOperator
    for obj, name in ((StateEval, "__init__"), (StateEval, "residual"), (StateEval, "force_blocks"),
                      (StateEval, "phi"), (StateEval, "phi_q_blocks"), (StateEval, "gamma"), (StateEval, "phi_t"),
                      (BlockPattern, "values"), (SL, "factor_csr"), (SL, "solve_refined_csr"),
                      (SL.CompiledSaddleLU, "set_values"), (SL.CompiledSaddleLU, "solve"), (LocalOperator, "__matmul__"),
                      (V.Variational, "step"), (V.Variational, "_step"), (V.Variational, "_set_J"), (V.Variational, "_set_S"),
                      (V.Variational, "_project"), (VN.FusedNewton, "begin"), (VN.FusedNewton, "evaluate"),
                      (VN.FusedNewton, "project"), (VN, "fused")):
        setattr(obj, name, timed(getattr(obj, name), f"{getattr(obj, '__name__', obj)}.{name}", acc))


def compare(args):
    """``--compare`` (module docstring)."""
    import numpy as np
    sets = [f"simulation.t_end={args.t_end}", "simulation.progress=false"] + args.set
    fused, group = (Problem(load_config(args.config, sets)) for _ in range(2))
    assert fused.stepper.compiled.newton is not None, fused.stepper.compiled.newton_note
    group.stepper.compiled.newton = None                  # the per-group compiled step (cwish20)
    tf, tg = fused.forward(), group.forward()             # warm-up
    cpu = {"fused": [], "per-group": []}
    for _ in range(args.repeat):
        for name, pr in (("fused", fused), ("per-group", group)):
            t0 = time.process_time()
            pr.forward()
            cpu[name].append(time.process_time() - t0)
    N = tf.steps
    print(f"{args.config}: {N} steps, Newton iterations/step {tf.newton_its.mean():.2f} (fused), "
          f"{tg.newton_its.mean():.2f} (per group)")
    for name, c in cpu.items():
        print(f"  {name:<10} CPU {1e3 * min(c) / N:.2f} ms/step (min of {len(c)}: "
              f"{', '.join(f'{1e3 * x / N:.2f}' for x in c)})")
    for k in ("q", "v", "a", "lam"):
        x, y = getattr(tf, k), getattr(tg, k)
        print(f"  {k:<4} max |fused - per-group| / max |per-group| = {np.max(np.abs(x - y)) / np.max(np.abs(y)):.2e}")
    of, og = fused.objective_values(tf), group.objective_values(tg)
    print(f"  objectives: max relative difference {max(abs(of[k] - og[k]) / abs(og[k]) for k in og):.2e}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="configs/double-wishbone-opt.toml")
    ap.add_argument("--t-end", type=float, default=0.1)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--blocks", action="store_true")
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--compare", action="store_true")
    args = ap.parse_args()
    if args.compare:
        return compare(args)
    pr = Problem(load_config(args.config, [f"simulation.t_end={args.t_end}", "simulation.progress=false"]
                             + args.set))
    pr.forward()                                          # warm-up (compiles, caches)
    cpu = []
    for _ in range(args.repeat):
        t0 = time.process_time()
        tr = pr.forward()
        cpu.append(time.process_time() - t0)
    N = tr.steps
    acc = defaultdict(lambda: [0.0, 0])
    if args.blocks:
        wrap_blocks(acc)
        t0 = time.process_time()
        pr.forward()
        wrapped = time.process_time() - t0
        print(f"{args.config}: {N} steps; CPU {1e3 * min(cpu) / N:.2f} ms/step (min of {args.repeat}), "
              f"wrapped run {1e3 * wrapped / N:.2f} ms/step")
        for k, (t, n) in sorted(acc.items(), key=lambda kv: -kv[1][0]):
            print(f"  {k:<48} {1e3 * t / N:7.3f} ms/step {n / N:6.1f} calls/step")
        return
    wrap(pr, acc)
    t0 = time.process_time()
    pr.forward()
    wrapped = time.process_time() - t0
    tot = min(cpu)
    print(f"{args.config}: {N} steps, Newton iterations/step {tr.newton_its.mean():.2f}; "
          f"CPU {1e3 * tot / N:.2f} ms/step (min of {args.repeat}: "
          f"{', '.join(f'{1e3 * c / N:.2f}' for c in cpu)}), wrapped run {1e3 * wrapped / N:.2f} ms/step")
    kinds = defaultdict(float)
    for (k, m), (t, n) in acc.items():
        kinds[k] += t
    comp = sum(kinds.values())
    print(f"  {'kind':<38} {'ms/step':>8} {'share':>6}   per method (ms/step, calls/step)")
    for k, t in sorted(kinds.items(), key=lambda kv: -kv[1]):
        per = ", ".join(f"{m} {1e3 * acc[(k, m)][0] / N:.2f} ({acc[(k, m)][1] / N:.1f})"
                        for m in METHODS if (k, m) in acc and acc[(k, m)][1])
        print(f"  {k:<38} {1e3 * t / N:8.3f} {t / wrapped:6.1%}   {per}")
    print(f"  {'all component methods':<38} {1e3 * comp / N:8.3f} {comp / wrapped:6.1%}")
    print(f"  {'rest (glue, scatter, assembly, LU)':<38} {1e3 * (wrapped - comp) / N:8.3f} "
          f"{(wrapped - comp) / wrapped:6.1%}")


if __name__ == "__main__":
    main()
