"""The objective partials ∂ψ/∂x_k of a whole stored trajectory, computed in blocks of steps.

The adjoint and direct sweeps need, at every step k and for every objective, the
weighted partials of its integrand c_k w g(x_k) (objectives.Term.grads: complex-step,
one numpy call per block and state).  On a small model that per-state overhead was
the largest part of the compiled adjoint sweep (benchmarks/README.md, issue 19:
~250 µs of numpy calls per step for the five-bar's three objectives, against ~60 µs for
the compiled adjoint step).  When every objective's integrand is a planar ``Term``
(elementwise over leading axes) and the trajectory is in memory, ``LocalGradTable``
evaluates ``Term.grads_batch`` on ``BLOCK`` steps at once — the same complex-step
arithmetic per state, so the same numbers (tests/test_compiled_adjoint.py) — and
hands out step k's stacked arrays (one column per objective), as
``Problem._adjoint_local`` returns them.  The terminal term (step N only) and every
other integrand kind stay with the per-state path.
"""
import numpy as np

from .objectives import Term

#: steps per block: memory BLOCK·(3n + m)·(objectives) floats, per-call overhead / BLOCK
BLOCK = 256


class LocalGradTable:
    def __init__(self, problem, traj, p, refs):
        self.pr, self.traj, self.p, self.refs = problem, traj, p, refs
        self.N = traj.steps
        self.last = self.N if any(ob.terminal for ob in problem.objectives) else self.N + 1
        self._block = None

    @staticmethod
    def usable(problem, traj):
        """Every objective has an integrand ``Term`` of the elementwise kinds, the
        trajectory's states are arrays (in memory) and the stepper's sensitivities are in
        their blocks (not ``own_adjoint_terms``)."""
        obs = problem.objectives
        return bool(obs) and not problem.stepper.own_adjoint_terms \
            and all(isinstance(ob.integrand, Term) and ob.integrand.batchable() for ob in obs) \
            and all(isinstance(getattr(traj, k, None), np.ndarray) for k in ("q", "v", "a", "lam"))

    def get(self, k):
        """(μ blocks (·, K), ∂ψ/∂ρ (nd, K), ∂ψ/∂ref (2, K)) of step k, or None (the
        per-state path: step N with a terminal term)."""
        if k >= self.last:
            return None
        b = self._block
        if b is None or not b[0] <= k < b[1]:
            k0 = (k // BLOCK) * BLOCK
            b = self._block = (k0, min(k0 + BLOCK, self.last), self._compute(k0, min(k0 + BLOCK, self.last)))
        gx, gp, gr = b[2]
        i = k - b[0]
        return [g[i] for g in gx], gp[i], gr[i]

    def block(self, k):
        """(g_x blocks (B, ·, K), ∂ψ/∂ρ (B, nd, K), ∂ψ/∂ref (B, 2, K)) of the block holding
        step k < ``last``, row i = step (k // BLOCK)·BLOCK + i (sensitivity/adjoint_batch.py)."""
        self.get(k)
        return self._block[2]

    def _compute(self, k0, k1):
        pr, tr = self.pr, self.traj
        sl = slice(k0, k1)
        X = (tr.q[sl], tr.v[sl], tr.a[sl], tr.lam[sl])
        nd, dm = pr.design.nswept, pr.design.sweep_map
        cols = []
        for ob, ref in zip(pr.objectives, self.refs):
            dx, dp, dref = ob.integrand.grads_batch(pr.sys, X, self.p, ref, dm, nd)
            c = (pr.w[sl] * ob.weight)[:, None]           # c_k·w, as _local_grads: (c·w)·d + 0
            cols.append(([0.0 + c * d for d in dx], 0.0 + c * dp, 0.0 + c * dref))
        gx = [np.stack([cl[0][i] for cl in cols], -1) for i in range(4)]
        # a stepper's trailing state blocks (problem.state_blocks): no objective reads them
        gx += [np.zeros((k1 - k0, e.shape[1], len(cols))) for e in getattr(tr, "extra", ())]
        return gx, np.stack([cl[1] for cl in cols], -1), np.stack([cl[2] for cl in cols], -1)
