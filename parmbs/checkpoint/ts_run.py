"""HDF5 checkpoints and restart for the PETSc TS runs of integrators/ts.py (``ts-beuler``,
``ts-theta``, ``ts-cn``, ``ts-rk``, ``ts-arkimex`` on the penalty, index-1, Maggi and
matrix-r independent formulations; fixed or adaptive steps).

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

Our own adjoint steps (``ts-arkimex``, which PETSc 3.18 cannot adjoin, and ts-rk on a
tableau PETSc's RK adjoint gets wrong — 5dp, the adaptive default): the reverse sweep
of TSStepper.own_adjoint with x_j from the schedule's provider (recomputed by one-step
TS runs, ``TSStepper.step``), the schedule's recomputations only.

Reduced ODEs (Maggi, matrix-r independent): y is not recovered bit for bit from
x = (q, v, a, λ), and the manifold Newton's result depends in its last bits on its first
guess (the last solution), so both are trailing blocks of the stored state
(``TSStepper.extra_state``); a re-run starts from them, and every adjoint step and
objective term starts from its state's stored guess (``TSStepper.reseed``), in memory
as here (an FSAL RK tableau's first stage is evaluated afresh every step: ts.py).

Adaptive runs (``simulation.adapt``, TSAdapt basic; every TS scheme): the forward run is
one TS with TSAdapt (``TSStepper.march_adaptive``) and keeps each accepted step's exact
size (the attempt's h the callbacks saw, not t_{k+1} − t_k, which differs in the last
bits); the file holds t_k and h_k (parmbs's adaptive store).  ts-theta, ts-cn and
ts-beuler re-run those steps without TSAdapt (``hs``: bitwise the forward run's; TSTHETA
restores y_k by a copy after a rejected attempt).  ts-rk and ts-arkimex do not: PETSc
rolls a rejected attempt back by subtraction (TSRollBack_RK, _ARKIMEX), so the accepted
attempt starts from y_k only up to round-off, and a step taken from the stored y_k at
h_k differs (penalty 5dp, 0.5 s, rtol 1e-4, revolve:3: ∇ψ 2.1e-7 off; 3bs: a re-run
state 3.5e-11 off).  Their states carry TSAdapt's proposal for the next step
(``h_next``, ``TSStepper.replays_attempts``), and a re-run starts from x_k with TSAdapt
at that step size, repeating the rejected attempts and their rollbacks bit for bit
before it accepts h_k (checked against the stored h_k).  TSAdapt's estimate
reads the scheme's previous steps (TSTHETA: y_{k−1}), which a TS started at a stored
state lacks, so a forward run killed part-way is re-run from x_0 and checked bitwise at
the state it resumes from (integrators/rerun.py).  -parmbs_ts_adapt_type contradicting
simulation.adapt is refused (``TSStepper.checkpoint_refusal``).
"""
from __future__ import annotations

import numpy as np

from ..integrators.timeloop import TimeGrid
from .restart import CheckpointedRun, _EveryProvider, _Provider, _RevolveProvider

#: steps of one forward re-run of an ``all`` sweep (the TS keeps that many states' stages)
SEGMENT = 32


class _StateAt:
    """State k as a trajectory (what TSStepper._ygrads and Problem._local_grads read)."""

    def __init__(self, T, k, x, steps, stepper):
        self.t, self.steps, self._x = T, steps, tuple(x[:4])
        self.y = {k: stepper.ystate(x)}
        self.a = {k: x[2]}

    def x(self, k):
        return self._x


class _Pair:
    """Steps k and k + 1 as a trajectory (what the own adjoint steps read: t, y)."""

    def __init__(self, T, k, xk, xk1, stepper):
        self.t = T
        self.y = {k: stepper.ystate(xk), k + 1: stepper.ystate(xk1)}


def _guess(stepper, x):
    """A reduced ODE's stored manifold guess of x (None otherwise)."""
    return x[5] if stepper.reduced else None


def _pack(stepper, ly, n, m):
    """λ_y (rows of y, one column per objective) as an adjoint record's (μ_q, μ_v, μ_a, μ_λ):
    y's halves in μ_q and μ_v (a reduced y = (z, ż) is shorter than (q, v): zero-padded)."""
    d, nobj = stepper.mod.n, ly.shape[1]
    mq, mv = np.zeros((n, nobj)), np.zeros((n, nobj))
    mq[:d], mv[:d] = ly[:d], ly[d:]
    return [mq, mv, np.zeros((n, nobj)), np.zeros((m, nobj))] + [np.zeros((w, nobj)) for _, w in stepper.extra_state]


def _unpack(stepper, mu):
    d = stepper.mod.n
    return np.r_[np.asarray(mu[0])[:d], np.asarray(mu[1])[:d]]


class _RowProvider(_Provider):
    """``all``: x_k from its row (one row per segment start; no block reads)."""

    def state(self, k):
        if k in self.held:
            return self.held.pop(k)
        return self.st.read_rows(k, k)[0][1]


class TSCheckpointedRun(CheckpointedRun):
    def __init__(self, problem, store):
        st = problem.stepper
        st._problem = problem                 # (march_*, step: the TS needs the run's problem)
        if problem.adapt is None:
            # the TS's own times t_{k+1} = t_k + h (ts.py fixed_times), weights h/2, h, …, h/2
            T = st.fixed_times(problem)
            problem._set_grid(TimeGrid(T, np.full(problem.nsteps, float(st.dt))))
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
        st.reseed(_guess(st, x))
        view = _StateAt(self.T, N, x, N, st)
        parts = [st._ygrads(pr, ob, N, view, p, ref) for ob, ref in zip(pr.objectives, refs)]
        gy = np.stack([pt[0] for pt in parts], -1)
        mu = _pack(st, gy, n, m)
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
        if stp.uses_own_adjoint(pr):
            return self._own_adjoint(p, k, x1, mu, grad, gref, values, provider, x0, refs)
        n, m, nd = pr.sys.n, pr.sys.m, stp.mod.nd
        nobj = len(pr.objectives)
        lams, mus, grefs = stp.cost_vectors(nobj)
        L = stp.layout
        ly0 = _unpack(stp, mu)
        for i in range(nobj):
            L.set(lams[i], ly0[:, i])
            L.set(mus[i], np.array(grad[:, i]) if nd else np.zeros(1))
            grefs.append(np.array(gref[:, i]))
        stp._kcache = None
        N = self.N

        def after(j, xj):
            """λ_j += ∂ψ_j/∂y_j …, then the adjoint record after reverse step j."""
            stp.add_local(pr, j, _StateAt(self.T, j, xj, N, stp), p, refs, lams, mus, grefs)
            self.adjoint_steps += 1
            pr._tick(N - j, N)
            st.kill("adjoint")
            ly = np.stack([L.get(v) for v in lams], -1)
            g = np.stack([L.get(v)[:nd] for v in mus], -1)
            st.save_adjoint(j, xj, _pack(stp, ly, n, m), g, np.stack(grefs, -1), values, force=(j == 0))

        y1 = stp.ystate(x1)
        j = k
        while j > 0:
            # all / every:K: one TS over the stored interval [base, j] and TSAdjoint back
            # through it; revolve: the provider's x_{j−1} and a one-step TS
            base = self._segment_base(j)
            xb = provider.state(base)
            self.recomputed += j - base
            stp.ts_adjoint_segment(pr, base, xb, j, self.T, y1, lams, mus, p, after)
            y1 = stp.ystate(xb)
            j = base
        self.recomputed += provider.recomputed
        self.held.clear()
        return stp.adjoint_finish(pr, x0[0], p, lams, mus, grefs)

    def _own_adjoint(self, p, k, x1, mu, grad, gref, values, provider, x0, refs):
        """∇ψ by our own adjoint steps (ts-arkimex; ts-rk on a tableau PETSc's RK adjoint
        gets wrong, ts.py ``uses_own_adjoint``): the steps of TSStepper.own_adjoint with
        x_j from the schedule's provider (recomputed by one-step TS runs, ``step``), in the
        same order and arithmetic as the in-memory sweep, the adjoint record after each."""
        pr, st, stp = self.pr, self.store, self.pr.stepper
        n, m, N = pr.sys.n, pr.sys.m, self.N
        stp._kcache = None                      # (a sweep resumed from the file: no TS run made it)
        step = stp.own_step()
        lam, grad, gref = _unpack(stp, mu), np.array(grad), np.array(gref)
        xs1 = x1
        for j in range(k - 1, -1, -1):
            xj = provider.state(j)
            stp.reseed(_guess(stp, xs1))
            lam, dg = step(j, _Pair(self.T, j, xj, xs1, stp), lam, p)
            stp.reseed(_guess(stp, xj))
            view = _StateAt(self.T, j, xj, N, stp)
            parts = [stp._ygrads(pr, ob, j, view, p, ref) for ob, ref in zip(pr.objectives, refs)]
            gy, gp, gr = (np.stack([pt[i] for pt in parts], -1) for i in range(3))
            lam, grad, gref = lam + gy, grad + dg + gp, gref + gr
            self.adjoint_steps += 1
            pr._tick(N - j, N)
            st.kill("adjoint")
            st.save_adjoint(j, xj, _pack(stp, lam, n, m), grad, gref, values, force=(j == 0))
            xs1 = xj
        self.recomputed += provider.recomputed
        self.held.clear()
        return stp.own_finish(pr, x0[0], p, lam, grad, gref)
