"""HDF5 checkpoints and restart for the TSAdjoint-driven PETSc TS runs (integrators/ts.py:
``ts-beuler``, ``ts-theta``, ``ts-cn``, ``ts-rk`` on the penalty and index-1 formulations).

The store, the schedules (``all``, ``every:K``, ``revolve:C``) and their providers are
parmbs's own (parmbs/checkpoint): the forward run writes every state the schedule keeps
— x_k = (q_k, v_k, a_k, λ_k) at the TS's own time t_k — and the reverse sweep gets x_k
for k = N−1, …, 0 from a provider, which reads stored states and recomputes the others
with one TS step each (``TSStepper.step``).  What changes is the reverse step: it is
PETSc's TSAdjoint, which needs the step's stages (the θ stage, the RK stages) from a
TSTrajectory.  petsc4py 3.18 wraps no TSTrajectory (TSTrajectorySet/Get, which would let
us fill one from the file, take the stages from the TS at the time of the call), so
each reverse step k recomputes the forward step from x_k in a one-step TS that keeps its
trajectory in memory (``-ts_trajectory_type memory``, never PETSc's one-file-per-step
``basic``) and runs TSAdjoint over that step (``TSStepper.ts_adjoint_step``).  Cost: one
forward step per reverse step on top of the schedule's recomputations (so ``all`` costs
N, ``every:K`` about 2N, revolve its Griewank count + N forward steps); memory: the
schedule's states, never the whole TS trajectory.

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

from ..checkpoint.restart import CheckpointedRun, _AllProvider, _EveryProvider, _RevolveProvider
from .timeloop import TimeGrid


class _StateAt:
    """State k as a trajectory (what TSStepper._ygrads and Problem._local_grads read)."""

    def __init__(self, T, k, x, steps):
        self.t, self.steps, self._x = T, steps, x
        self.y = {k: np.r_[x[0], x[1]]}
        self.a = {k: x[2]}

    def x(self, k):
        return self._x


class TSCheckpointedRun(CheckpointedRun):
    def __init__(self, problem, store):
        st = problem.stepper
        st._problem = problem                 # (march_fixed, step: the TS needs the run's problem)
        # the TS's own times t_{k+1} = t_k + h (ts.py fixed_times), weights h/2, h, …, h/2
        T = st.fixed_times(problem)
        problem._set_grid(TimeGrid(T, np.full(problem.nsteps, float(st.h))))
        super().__init__(problem, store)

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
        provider = {"all": _AllProvider, "every": _EveryProvider, "revolve": _RevolveProvider}[self.sched.kind](
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
        y1 = np.r_[x1[0], x1[1]]
        for j in range(k - 1, -1, -1):
            xj = provider.state(j)
            stp.ts_adjoint_step(pr, j, self.T[j], xj, y1, lams, mus, p)
            stp.add_local(pr, j, _StateAt(self.T, j, xj, N), p, refs, lams, mus, grefs)
            y1 = np.r_[xj[0], xj[1]]
            self.adjoint_steps += 1
            pr._tick(N - j, N)
            st.kill("adjoint")
            ly = np.stack([L.get(v) for v in lams], -1)
            g = np.stack([L.get(v)[:nd] for v in mus], -1)
            st.save_adjoint(j, xj, [ly[:n], ly[n:], np.zeros((n, nobj)), np.zeros((m, nobj))], g,
                            np.stack(grefs, -1), values, force=(j == 0))
        self.recomputed += provider.recomputed
        self.held.clear()
        return stp.adjoint_finish(pr, x0[0], p, lams, mus, grefs)
