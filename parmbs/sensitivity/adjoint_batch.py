"""The in-memory adjoint sweep by blocks of compiled steps (issue 19: adjoint ÷ forward).

With the compiled adjoint step (compiled/newmark_adjoint.py) the five-bar's sweep cost
~49 µs per step, of which ~35 µs inside the compiled step and ~14 µs of Python around
it: the Python → numba call (argument typing, the stepper's wrapper and log event),
the sweep's loop and the objective-partials look-up (benchmarks/README.md, "Adjoint
sweep by blocks").  Here the sweep hands numba one block of the objective-partials
table (sensitivity/local_table.py, ``BLOCK`` steps) at a time and
``newmark_adjoint.adjoint_sweep`` runs those steps in one call: the same compiled step,
the same additions in the same order as ``Problem._adjoint_sweep`` (μ_k = μ + g_x,
∇ψ = (∇ψ + Δ∇ψ) + g_ρ), so the gradients are the per-step sweep's bit for bit
(tests/test_compiled_adjoint.py); inside the call each state's blocks are evaluated
once and serve both steps that read the state (compiled/newmark_adjoint.py, "by
parts").  Memory: the table's block (BLOCK·(3n + m + nd + 2)·K floats) and one state's
blocks (4 N² + 2 N·nd floats); nothing stored per step.

Taken only where nothing needs the steps one by one: a compiled stepper on real
arrays, the trajectory and the partials table in memory, no ``on_step`` observer
(sensitivity/history.py), no checkpointing, no injected fault (parmbs/faults.py), no
PETSc logging (``-log_view`` counts the ParmbsAdjStep event once per step: parmbs/
_log.py); ``progress`` is told every step once, after its block.  A singular J stops
the block; the per-step sweep then takes that step on the numpy path, which reports it.
"""
import numpy as np

from ..faults import rank_fault
from .local_table import BLOCK


def usable(problem, state, p, mu):
    """The batched sweep applies to this sweep (module docstring)."""
    from .._petsc import PETSc
    st, table = problem.stepper, getattr(problem, "_table", None)
    c = getattr(st, "compiled", None)
    extra = getattr(c, "extra_blocks", 0)                 # trailing blocks its kernel carries
    return (not PETSc.Log.isActive() and table is not None and c is not None
            and len(mu) == 4 + extra and getattr(state, "__self__", None) is table.traj
            and len(table.traj.extra) == extra
            and getattr(problem, "_on_step", None) is None and not rank_fault.active
            and hasattr(st, "_compiled_real") and st._compiled_real(p, tuple(mu), table.traj.x(0)))


def sweep(problem, p, k1, mu, grad, gref, T):
    """Reverse steps from k1 down by blocks: (μ, ∇ψ, g_ref, k) with k the state reached
    (0 when the whole sweep ran; else the per-step sweep goes on from x_k)."""
    from ..integrators.timeloop import set_step
    st, table, tr = problem.stepper, problem._table, problem._table.traj
    c = st.compiled
    f = lambda y: np.ascontiguousarray(y, dtype=np.float64)
    Q, V, A, L = (f(y) for y in (tr.q, tr.v, tr.a, tr.lam))
    T, H = f(T), f(problem.grid.h)
    mu = [f(y).reshape(len(y), -1) for y in mu]
    grad, gref = f(grad), f(gref)
    if tr.extra:                                          # the Arnold–Brüls state: compiled/ab_stepper.py
        return _sweep_extra(problem, p, k1, mu, grad, gref, T, Q, V, A, L, H)
    mq, mv, ma, ml = mu
    dm, Kdf, Kdp, Kds = c._design(st.design_map, st.nd)

    def block(b0, k, gx, gp, gr, mu, grad, gref):
        *mu, grad, gref, k_end = c.adjoint_blocks(
            Q, V, A, L, T, H, b0, k, *mu, grad, gref, b0, *(f(g) for g in gx[:4]), f(gp), f(gr), f(p),
            float(st.beta), float(st.gamma), float(st.am), float(st.af), dm, int(st.nd), c.timed, c.Kf, c.Kp, c.Ks,
            Kdf, Kdp, Kds, c.S)
        return mu, grad, gref, k_end
    return _by_blocks(problem, k1, block, [mq, mv, ma, ml], grad, gref)


def _by_blocks(problem, k1, block, mu, grad, gref):
    """The reverse loop of both sweeps: from k1 down, one compiled call per block of the
    partials table (``block(b0, k, g_x, g_ρ, g_ref, μ, ∇ψ, g_ref) → (μ, ∇ψ, g_ref, k_end)``),
    progress told every step once; stops early where a call stops short of its block's
    start (a zero pivot: the per-step sweep goes on from x_k)."""
    from ..integrators.timeloop import set_step
    st, table = problem.stepper, problem._table
    k = k1
    while k > 0:
        b0 = ((k - 1) // BLOCK) * BLOCK
        gx, gp, gr = table.block(k - 1)
        mu, grad, gref, k_end = block(b0, k, gx, gp, gr, mu, grad, gref)
        if getattr(problem, "_progress", None) is not None:      # every step once, as the per-step sweep
            for j in range(k - 1, k_end - 1, -1):
                problem._tick(problem.nsteps - j, problem.nsteps)
        k = k_end
        if k != b0:
            break
    set_step(st, problem.grid.h[k if k < k1 else k1 - 1], newton=False)
    return mu, grad, gref, k


def _sweep_extra(problem, p, k1, mu, grad, gref, T, Q, V, A, L, H):
    """``sweep`` for a state with a trailing block (the Arnold–Brüls pseudo-acceleration:
    ab_adjoint.ab_adjoint_sweep, μ five blocks, the table's fifth g_x block zero)."""
    st = problem.stepper

    def block(b0, k, gx, gp, gr, mu, grad, gref):
        return st.compiled.adjoint_blocks(Q, V, A, L, T, H, b0, k, mu, grad, gref, b0, gx, gp, gr, p,
                                          st.beta, st.gamma, st.am, st.af, st.design_map, st.nd)
    return _by_blocks(problem, k1, block, mu, grad, gref)
