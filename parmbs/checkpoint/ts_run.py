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
one-file-per-step ``basic``) and runs TSAdjoint back through that stretch: the re-runs
are the sweep's provider (``_Segments``, ``TSStepper.rerun``), the reverse steps those of
the one reverse sweep every stepper's adjoint goes through (CheckpointedRun.adjoint,
Problem._adjoint_sweep; ``TSStepper.adjoint_step_into``):

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
tableau PETSc's RK adjoint gets wrong — 5dp, the adaptive default): the same sweep with
x_j from the schedule's provider (recomputed by one-step TS runs, ``TSStepper.step``),
the schedule's recomputations only.

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
before it accepts h_k (checked against the stored h_k).  A forward run killed part-way
resumes at its last stored state with TSAdapt as the uninterrupted run had it there:
TSTHETA's estimate reads the step before (y_{k−1}, t_{k−1}), stored with each adaptive
state and re-taken first (integrators/ts_resume.py); RK and ARKIMEX start at h_next.  -parmbs_ts_adapt_type contradicting
simulation.adapt is refused (``TSStepper.checkpoint_refusal``).
"""
from __future__ import annotations

import numpy as np

from ..integrators.timeloop import TimeGrid
from .restart import CheckpointedRun, _EveryProvider, _Provider, _RevolveProvider

#: steps of one forward re-run of an ``all`` sweep (the TS keeps that many states' stages)
SEGMENT = 32


class _RowProvider(_Provider):
    """``all``: x_k from its row (one row per segment start; no block reads)."""

    def state(self, k):
        if k in self.held:
            return self.held.pop(k)
        return self.st.read_rows(k, k)[0][1]


class _Segments:
    """x_{k−1}, …, x_0 of a TSAdjoint sweep from the record at k: TS re-runs from the
    stored states the schedule's provider gives (``TSCheckpointedRun._segment_base``),
    each checked bitwise against the state the sweep came from (``TSStepper.rerun``),
    whose trajectories the reverse steps run TSAdjoint back through."""

    def __init__(self, run, inner, p, x1):
        self.run, self.inner, self.p = run, inner, p
        self.stp = run.pr.stepper
        self.y1 = self.stp.ystate(x1)
        self.X = {}
        self.count = 0

    def state(self, k):
        if k not in self.X:                   # a new stretch [base, k + 1]
            pr, stp, j = self.run.pr, self.stp, k + 1
            base = self.run._segment_base(j)
            xb = self.inner.state(base)
            self.count += j - base
            H = pr.grid.h if stp.adapt is not None else None
            self.X = stp.rerun(pr, base, xb, j, self.run.T, self.y1, self.p, H)
            self.y1 = stp.ystate(xb)
        return self.X.pop(k)

    @property
    def recomputed(self):
        return self.inner.recomputed + self.count


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

    def _provider(self, p, k, x0, x1):
        """The schedule's provider (``all``: one row at a time); for TSAdjoint its states
        through TS re-runs (``_Segments``), for our own adjoint steps as they are."""
        inner = {"all": _RowProvider, "every": _EveryProvider, "revolve": _RevolveProvider}[self.sched.kind](
            self, p, k, x0)
        return inner if self.pr.stepper.uses_own_adjoint(self.pr) else _Segments(self, inner, p, x1)

    def adjoint(self, p):
        """∇ψ by CheckpointedRun's reverse sweep (Problem._adjoint_sweep) with the TS's
        steps (module docstring), continuing from the last adjoint record in the file."""
        try:
            return super().adjoint(p)
        finally:
            self.pr.stepper.close_adjoint()
