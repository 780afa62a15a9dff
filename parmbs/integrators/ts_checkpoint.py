"""HDF5 checkpoints and restart for the TSAdjoint-driven PETSc TS runs (integrators/ts.py:
``ts-beuler``, ``ts-theta``, ``ts-cn``, ``ts-rk`` on the penalty and index-1 formulations).

The store, the schedules (``all``, ``every:K``, ``revolve:C``) and their providers are
parmbs's own (parmbs/checkpoint): the forward run writes every state the schedule keeps
— x_k = (q_k, v_k, a_k, λ_k) at the TS's own time t_k.  What changes is the reverse
step: it is PETSc's TSAdjoint, which needs each step's stages (the θ stage, the RK
stages) from a TSTrajectory.  petsc4py 3.18 wraps no TSTrajectory (and
TSTrajectorySet, which would let us fill one from the file, takes the stages from the
TS at the time of the call), so the sweep re-runs the TS from a stored state with its
trajectory kept in memory (``-ts_trajectory_type memory``, never PETSc's
one-file-per-step ``basic``) and runs TSAdjoint back through that stretch
(``TSStepper.ts_adjoint_segment``):

* ``every:K``: one TS per stored interval [jK, (j+1)K] — N forward steps in all, the
  schedule's own recomputations included (they were K − 1 per interval);
* ``all``: the same over intervals of ``SEGMENT`` steps from stored rows — N steps;
* ``revolve:C``: the provider gives x_{k−1} (Griewank's recomputations into the free
  slots, one TS step each, ``TSStepper.step``) and a one-step TS re-runs step k−1 for
  TSAdjoint — revolve's count + N forward steps; memory: C states, never the whole TS
  trajectory.

Bitwise: a TS step depends on (t_k, y_k, h) and on the first guess of the consistent
acceleration a_k (the previous one), all of which the store holds bit for bit: the
fixed-step TS reaches the times t_{k+1} = t_k + h it is started at
(``TSStepper.fixed_times``), Newton starts from y_k, and TSAdjoint's step reads only
the stages of that step and the cost gradients (λ, μ), which the adjoint record holds
(μ_q, μ_v = λ_y; grad = μ).  Each recomputed y_{k+1} is compared with the state the
sweep came from (RuntimeError if a bit differs), so a gradient is never returned from
a trajectory that did not repeat.

Adaptive TS runs (TSAdapt) are refused (``TSStepper.checkpoint_refusal``): TSAdapt's
error estimate reads the previous steps, which a TS started at a stored state lacks.
"""
from __future__ import annotations

import numpy as np

from ..checkpoint.restart import CheckpointedRun, _EveryProvider, _Provider, _RevolveProvider
from .timeloop import TimeGrid

#: steps of one forward re-run of an ``all`` sweep (the TS keeps that many states' stages)
SEGMENT = 32


class _StateAt:
    """State k as a trajectory (what TSStepper._ygrads and Problem._local_grads read)."""

    def __init__(self, T, k, x, steps):
        self.t, self.steps, self._x = T, steps, x
        self.y = {k: np.r_[x[0], x[1]]}
        self.a = {k: x[2]}

    def x(self, k):
        return self._x


class _RowProvider(_Provider):
    """``all``: x_k from its row (one row per segment start; no block reads)."""

    def state(self, k):
        if k in self.held:
            return self.held.pop(k)
        return self.st.read_rows(k, k)[0][1]


class TSCheckpointedRun(CheckpointedRun):
    def __init__(self, problem, store):
        st = problem.stepper
        st._problem = problem                 # (march_fixed, step: the TS needs the run's problem)
        # the TS's own times t_{k+1} = t_k + h (ts.py fixed_times), weights h/2, h, …, h/2
        T = st.fixed_times(problem)
        problem._set_grid(TimeGrid(T, np.full(problem.nsteps, float(st.h))))
        super().__init__(problem, store)

    def _segment_base(self, j):
        """The state the reverse sweep re-runs the TS from to reach x_j: the stored state
        before j (every:K: the multiple of K; all: up to SEGMENT steps back), j − 1 for
        revolve (its provider places the intermediate checkpoints)."""
        kind = self.sched.kind
        if kind == "every":
            K = self.sched.count
            return ((j - 1) // K) * K
        if kind == "all":
            return max(0, j - SEGMENT)
        return j - 1

    def _adjoint_seed(self, N, x, p, refs):
        """The adjoint record at N: μ_q, μ_v = ∂ψ_N/∂y_N (TSAdjoint's λ), μ_a = μ_λ = 0,
        grad = ∂ψ_N/∂ρ, gref — per objective column."""
        pr, st = self.pr, self.pr.stepper
        n, m = pr.sys.n, pr.sys.m
        st._kcache = None
        view = _StateAt(self.T, N, x, N)
        parts = [st._ygrads(pr, ob, N, view, p, ref) for ob, ref in zip(pr.objectives, refs)]
        gy = np.stack([pt[0] for pt in parts], -1)
        nobj = len(parts)
        mu = [gy[:n], gy[n:], np.zeros((n, nobj)), np.zeros((m, nobj))]
        return mu, np.stack([pt[1] for pt in parts], -1), np.stack([pt[2] for pt in parts], -1)

    def adjoint(self, p):
        """∇ψ by TSAdjoint one step at a time (module docstring), continuing from the
        last adjoint record in the file."""
        pr, st = self.pr, self.store
        stp = pr.stepper
        rec = st.load_adjoint()
        if rec is None:
            self.forward(p)
            rec = st.load_adjoint()
        k, x1, mu, grad, gref, values = rec
        x0 = stp.initial(pr.t0, p)
        refs = [ob.reference(pr.sys, x0[0], p) for ob in pr.objectives]
        provider = {"all": _RowProvider, "every": _EveryProvider, "revolve": _RevolveProvider}[self.sched.kind](
            self, p, k, x0)
        n, m, nd = pr.sys.n, pr.sys.m, stp.mod.nd
        nobj = len(pr.objectives)
        lams, mus, grefs = stp.cost_vectors(nobj)
        L = stp.layout
        for i in range(nobj):
            L.set(lams[i], np.r_[mu[0][:, i], mu[1][:, i]])
            L.set(mus[i], np.array(grad[:, i]) if nd else np.zeros(1))
            grefs.append(np.array(gref[:, i]))
        stp._kcache = None
        N = self.N

        def after(j, xj):
            """λ_j += ∂ψ_j/∂y_j …, then the adjoint record after reverse step j."""
            stp.add_local(pr, j, _StateAt(self.T, j, xj, N), p, refs, lams, mus, grefs)
            self.adjoint_steps += 1
            pr._tick(N - j, N)
            st.kill("adjoint")
            ly = np.stack([L.get(v) for v in lams], -1)
            g = np.stack([L.get(v)[:nd] for v in mus], -1)
            st.save_adjoint(j, xj, [ly[:n], ly[n:], np.zeros((n, nobj)), np.zeros((m, nobj))], g,
                            np.stack(grefs, -1), values, force=(j == 0))

        y1 = np.r_[x1[0], x1[1]]
        j = k
        while j > 0:
            # all / every:K: one TS over the stored interval [base, j] and TSAdjoint back
            # through it; revolve: the provider's x_{j−1} and a one-step TS
            base = self._segment_base(j)
            xb = provider.state(base)
            self.recomputed += j - base
            stp.ts_adjoint_segment(pr, base, xb, j, self.T, y1, lams, mus, p, after)
            y1 = np.r_[xb[0], xb[1]]
            j = base
        self.recomputed += provider.recomputed
        self.held.clear()
        return stp.adjoint_finish(pr, x0[0], p, lams, mus, grefs)
