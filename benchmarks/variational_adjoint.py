"""Where the variational adjoint sweep's time goes (issues 19, 22; branch adjw19): the CPU
of one adjoint evaluation of configs/double-wishbone-opt.toml (the forward run and the
sweep with one column per objective, what ``parmbs optimize`` runs per iteration, in
memory), and of the sweep's parts, per step.

Each part is wrapped by a ``time.process_time`` pair (class attributes: every instance;
≈ 1 µs a call, counted in); parts nest (``excl`` is a part's CPU minus that of the wrapped
parts it calls).  The unwrapped figures (forward, sweep, their ratio) come from a run
without wrappers, min of ``--repeat``, after a warm-up evaluation of 10 steps (and with
``--repeat`` > 1 one of the whole horizon).

Usage:  python benchmarks/variational_adjoint.py [--t-end 0.3] [--repeat 2] [--no-parts]
        [--set key=value ...]
"""
import argparse
import pathlib
import sys
import time
from collections import defaultdict

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import parmbs  # noqa: E402,F401  (before numpy: one SIMD choice, DESIGN.md)
import numpy as np  # noqa: E402
from parmbs.config import load_config  # noqa: E402
from parmbs.sensitivity.problem import Problem  # noqa: E402

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "configs" / "double-wishbone-opt.toml"


def timed(f, key, acc, stack):
    """f wrapped by a ``time.process_time`` pair: inclusive and exclusive CPU and calls in acc[key]."""
    def w(*a, **kw):
        stack.append(0.0)
        t0 = time.process_time()
        try:
            return f(*a, **kw)
        finally:
            dt = time.process_time() - t0
            child = stack.pop()
            e = acc[key]
            e[0] += dt
            e[1] += dt - child
            e[2] += 1
            if stack:
                stack[-1] += dt
    return w


def parts():
    """(object, attribute) of the sweep's parts."""
    from parmbs.integrators import variational as V
    from parmbs.model.assembly import BlockPattern, SparseOperator
    from parmbs.model.evaluation import StateEval, LocalOperator
    from parmbs.sensitivity.problem import Problem as P
    out = [(P, "_adjoint_local"), (P, "_adjoint_finish"), (V.Variational, "adjoint_step"),
           (V.Variational, "_linearize"), (V.Variational, "_set_J"), (V.Variational, "_set_S"),
           (SparseOperator, "set_values"), (SparseOperator, "solve"), (BlockPattern, "values"),
           (LocalOperator, "__matmul__"), (LocalOperator, "T")]
    out += [(StateEval, m) for m in ("__init__", "residual", "force_blocks", "phi_q_blocks", "K", "Cv", "Ma", "G",
                                     "phi_q_w_q", "gamma_q", "gamma_v", "phi_t_q", "R_p", "phi_p", "phi_t_p",
                                     "gamma_p", "phi_q_w_p", "phi_t")]
    try:                           # the compiled adjoint step (branch adjw19)
        from parmbs.compiled import variational_adjoint as VA, saddle_lu as SL
        out += [(V.Variational, "_linearize_compiled"), (V.Variational, "_adjoint_step_compiled"),
                (VA.CompiledAdjoint, "linear_data"), (VA.CompiledAdjoint, "solve"), (VA, "tmatmul"),
                (SL.CompiledSaddleLU, "set_data")]
    except ImportError:
        pass
    return out


def wrap(acc, stack):
    saved = []
    for obj, name in parts():
        f = obj.__dict__[name] if isinstance(obj, type) else getattr(obj, name)
        if isinstance(f, staticmethod):
            saved.append((obj, name, f))
            setattr(obj, name, staticmethod(timed(f.__func__, f"{obj.__name__}.{name}", acc, stack)))
            continue
        if isinstance(f, property):
            saved.append((obj, name, f))
            setattr(obj, name, property(timed(f.fget, f"{getattr(obj, '__name__', obj)}.{name}", acc, stack)))
            continue
        saved.append((obj, name, f))
        setattr(obj, name, timed(f, f"{getattr(obj, '__name__', obj)}.{name}", acc, stack))
    return saved


def unwrap(saved):
    for obj, name, f in saved:
        setattr(obj, name, f)


def evaluation(pr, p):
    """(forward CPU, sweep CPU, gradients): one forward run + one adjoint sweep."""
    c0 = time.process_time()
    pr.forward(p)
    c1 = time.process_time()
    g = pr.adjoint(p)
    return c1 - c0, time.process_time() - c1, g


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--t-end", type=float, default=0.3)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--no-parts", action="store_true")
    ap.add_argument("--set", action="append", default=[])
    a = ap.parse_args()
    pr = Problem(load_config(str(CONFIG), [f"simulation.t_end={a.t_end}", "simulation.progress=false"] + a.set))
    p = pr.sys.p.copy()
    N = pr.nsteps
    warm = Problem(load_config(str(CONFIG), ["simulation.t_end=0.01", "simulation.progress=false"] + a.set))
    evaluation(warm, warm.sys.p.copy())                      # warm-up (numba caches, PETSc), 10 steps
    evaluation(pr, p) if a.repeat > 1 else None              # and this Problem's first factorizations
    runs = [evaluation(pr, p) for _ in range(a.repeat)]
    fw, sw = min(r[0] for r in runs), min(r[1] for r in runs)
    g = runs[-1][2]
    same = all(np.array_equal(g[k], r[2][k]) for r in runs for k in g)
    print(f"{N} steps, {len(g)} objectives, {pr.stepper.nd} design columns; compiled: {pr.stepper.compiled_note or 'on'}")
    print(f"forward {fw:.2f} s CPU ({1e3 * fw / N:.2f} ms/step), adjoint sweep {sw:.2f} s CPU "
          f"({1e3 * sw / N:.2f} ms/step), sweep / forward {sw / fw:.2f}, evaluation {fw + sw:.2f} s; "
          f"min of {a.repeat}; gradients bitwise equal across runs: {same}")
    print("sha1 of the gradients:", __import__("hashlib").sha1(b"".join(g[k].tobytes() for k in sorted(g))).hexdigest())
    if a.no_parts:
        return
    acc, stack = defaultdict(lambda: [0.0, 0.0, 0]), []
    saved = wrap(acc, stack)
    try:
        pr.forward(p)
        acc.clear()
        c0 = time.process_time()
        pr.adjoint(p)
        tot = time.process_time() - c0
    finally:
        unwrap(saved)
    print(f"\nwrapped sweep: {1e3 * tot / N:.2f} ms/step; per step (ms): inclusive, exclusive, calls/step")
    for k, (inc, exc, n) in sorted(acc.items(), key=lambda kv: -kv[1][0]):
        print(f"  {k:40s} {1e3 * inc / N:8.3f} {1e3 * exc / N:8.3f} {n / N:6.1f}")


if __name__ == "__main__":
    main()
