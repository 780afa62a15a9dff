"""Where one index-3 time step goes (issue 19, first step): forward and adjoint step
of a small model (default: the five-bar, trapezoidal, dt = 1e-3, t_end = 1 s).

Prints, for the forward run and for the adjoint sweep of ``parmbs gradient --method
adjoint`` (``Problem.forward`` then ``Problem.adjoint``):

* steps/s and CPU time per step (``time.process_time``, min of ``--repeat`` unprofiled
  runs: CPU time is what time-sharing with other jobs does not inflate);
* a breakdown by the functions a step calls (cProfile cumulative time of each, as a
  share of the profiled total; cProfile's own per-call overhead inflates the
  Python-heavy parts, so read the shares, not the absolute profiled times);
* the top entries by self time (tottime), and self time grouped by where it is spent
  (component kernels, evaluation glue, PETSc assembly/solves, numpy internals, ...).

Usage:  python benchmarks/profile_step.py [--config configs/fivebar.toml] [--t-end 1]
        [--repeat 3] [--top 20] [--set key=value ...]
"""
import argparse
import cProfile
import pstats
import time
from collections import defaultdict

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem

def _rows():
    """(label, function or C-method name) whose cumulative time the breakdown prints,
    indented by nesting (a child's time is part of its parent's)."""
    from parmbs.integrators.newmark import NewmarkFamily
    from parmbs.model.evaluation import StateEval, LocalOperator
    from parmbs.model.assembly import SparseOperator, ColumnSolves
    from parmbs.sensitivity.problem import Problem as P
    fwd = [
        ("step (NewmarkFamily.step)", NewmarkFamily.step),
        ("  StateEval(...): gather of local arrays", StateEval.__init__),
        ("  residual R (components + scatter)", StateEval.residual),
        ("  Φ (constraint rows of R)", StateEval.phi),
        ("  _set_matrix: Newton matrix", NewmarkFamily._set_matrix),
        ("    force_blocks (∂r/∂q,v,a)", StateEval.force_blocks),
        ("    hess_blocks (∂(Φ_qᵀλ)/∂q)", StateEval.hess_blocks),
        ("    phi_q_blocks (Φ_q)", StateEval.phi_q_blocks),
        ("    SparseOperator.set_values (CSR data, setValuesCSR, assemble)", SparseOperator.set_values),
        ("  SparseOperator.solve (PETSc KSP preonly/LU: factor + solve)", SparseOperator.solve),
        ("    KSP.solve itself (C)", "<method 'solve' of 'petsc4py.PETSc.KSP' objects>"),
    ]
    adj = [
        ("adjoint_step (NewmarkFamily.adjoint_step)", NewmarkFamily.adjoint_step),
        ("  StateEval(...) at x_{k+1}: gather", StateEval.__init__),
        ("  _set_matrix: the Newton matrix again, at x_{k+1}", NewmarkFamily._set_matrix),
        ("  solve_many, transposed (one column per objective)", ColumnSolves.solve_many),
        ("    KSP.solveTranspose itself (C)", "<method 'solveTranspose' of 'petsc4py.PETSc.KSP' objects>"),
        ("  K(): ∂R/∂q as LocalOperator (blocks memoized from _set_matrix)", StateEval.K),
        ("  LocalOperator products Kᵀν, Gᵀν, Cvᵀν, R_pᵀν, Φ_pᵀν", LocalOperator.__matmul__),
        ("  R_p: ∂R/∂ρ blocks (complex step over design columns)", StateEval.R_p),
        ("  phi_p: ∂Φ/∂ρ blocks (complex step)", StateEval.phi_p),
        ("_adjoint_local: objective partials ∂ψ/∂x_k, ∂ψ/∂ρ (complex step)", P._adjoint_local),
    ]
    return fwd, adj


def bucket(filename, func):
    """Coarse home of a function's self time."""
    if any(s in filename for s in ("model/joints", "model/forces", "model/kinematics", "model/component")):
        return "component kernels (numpy, incl. complex-step blocks)"
    if "model/evaluation" in filename:
        return "StateEval glue (gather, scatter, memo)"
    if "model/assembly" in filename:
        return "assembly.py (CSR values, scatter_add, solve wrapper)"
    if "petsc4py" in func or "petsc4py" in filename:
        return "PETSc calls (setValuesCSR, assemble, KSP solve, Vec)"
    if "integrators" in filename or "formulations" in filename:
        return "stepper logic (newmark.py)"
    if "sensitivity" in filename:
        return "objective partials / sweep (sensitivity/)"
    if "numpy" in filename or filename == "~":
        return "numpy / builtins (C functions: ufuncs, concatenate, bincount...)"
    return "other Python"


def cum(stats, target):
    """Cumulative time and calls of a Python function (by its code object) or of a C
    method (by cProfile's name for it)."""
    if isinstance(target, str):
        key = ("~", 0, target)
    else:
        code = target.__code__
        key = (code.co_filename, code.co_firstlineno, code.co_name)
    v = stats.stats.get(key)
    return (v[3], v[1]) if v else (0.0, 0)


def profile(fn):
    prof = cProfile.Profile()
    prof.runcall(fn)
    return pstats.Stats(prof)


def report(title, st, rows, steps, top):
    total = sum(v[2] for v in st.stats.values())
    print(f"\n{title}: cProfile total {total:.3f} s for {steps} steps")
    print(f"  {'function (cumulative)':<72} {'share':>6} {'calls/step':>10}")
    for label, target in rows:
        t, n = cum(st, target)
        print(f"  {label:<72} {t / total:>6.1%} {n / steps:>10.1f}")
    groups = defaultdict(float)
    for (fn, line, func), v in st.stats.items():
        groups[bucket(fn, func)] += v[2]
    print("  self time by home:")
    for k, v in sorted(groups.items(), key=lambda kv: -kv[1]):
        print(f"    {k:<70} {v / total:>6.1%}")
    print(f"  top {top} by self time:")
    items = sorted(st.stats.items(), key=lambda kv: -kv[1][2])[:top]
    for (fn, line, func), (cc, nc, tt, ct, _) in items:
        where = func if fn == "~" else f"{fn.split('/parmbs/')[-1].split('site-packages/')[-1]}:{line}({func})"
        print(f"    {tt / total:>6.1%} {nc / steps:>8.1f}/step  {where}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="configs/fivebar.toml")
    ap.add_argument("--t-end", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--set", action="append", default=[])
    args = ap.parse_args()
    ov = [f"simulation.t_end={args.t_end}", "simulation.progress=false"] + args.set
    pr = Problem(load_config(args.config, ov))
    fwd, adj = [], []
    for _ in range(args.repeat):
        t0 = time.process_time()
        tr = pr.forward()
        t1 = time.process_time()
        pr.adjoint()
        t2 = time.process_time()
        fwd.append(t1 - t0)
        adj.append(t2 - t1)
    N = tr.steps
    f, a = min(fwd), min(adj)
    print(f"{args.config}: {pr.sys.n} coordinates, {pr.sys.m} constraints, {N} steps, "
          f"Newton iterations/step {tr.newton_its.mean():.2f}, {len(pr.objectives)} objectives, "
          f"{pr.design.ncols} design columns")
    print(f"forward: CPU {f:.3f} s (min of {args.repeat}: {', '.join(f'{x:.3f}' for x in fwd)}), "
          f"{N / f:.0f} steps/s, {1e6 * f / N:.0f} µs/step")
    print(f"adjoint: CPU {a:.3f} s (min of {args.repeat}: {', '.join(f'{x:.3f}' for x in adj)}), "
          f"{N / a:.0f} steps/s, {1e6 * a / N:.0f} µs/step;  adjoint ÷ forward {a / f:.2f}")
    fwd_rows, adj_rows = _rows()
    report("forward run", profile(pr.forward), fwd_rows, N, args.top)
    report("adjoint sweep (after a forward run)", profile(pr.adjoint), adj_rows, N, args.top)


if __name__ == "__main__":
    main()
