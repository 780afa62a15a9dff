"""What a stepper declares about its runs, read by Problem, the checkpoint layer, the
verification and the CLI instead of probing its attributes (``hasattr(stepper, "forward")``).

Every stepper declares

* ``checkpoint_sweep``: how a checkpointed run's reverse sweep goes, the key of
  checkpoint.RUNS — ``"adjoint_step"`` (checkpoint/restart.py: recompute with ``step``,
  reverse with ``adjoint_step``) or ``"ts"`` (checkpoint/ts_run.py: TS re-runs and
  TSAdjoint); None: the trajectory stays in memory (schedule ``all``, no file);
* ``checkpoint_refusal()``: why this run cannot checkpoint (a message naming the
  setting), or None;
* ``whole_runs``: the runs it makes whole by its own method of that name instead of
  Problem's step loops (timeloop.march, Problem._direct_columns/_adjoint_columns) —
  ``"forward"`` (``forward(problem, p, progress, on_step)``), ``"direct"``
  (``direct(problem, p)``), ``"adjoint"`` (``adjoint(problem, p)``); ``WHOLE`` all three;
* ``freezes_steps``: an adaptive run's steps are chosen inside the stepper (TSAdapt, its
  own controller), so ``Problem.frozen_steps`` replays them through its ``freeze(t)``;
* the reverse step of Problem's one sweep, ``adjoint_step_into(k, T, x_k, x_{k+1}, μ, ∇ψ, p)``
  → (μ_k, ∇ψ with step k's term): ``OneStep``'s adds ``adjoint_step``'s increment;
* the tangent step of Problem's one direct loop, ``tangent_step_at(k, traj, dx, p)``, from
  the tangent state ``tangent_start(dx_0, p)``: ``OneStep``'s are ``tangent_step`` and dx_0;
* ``fuses_estimate``: its compiled step also computes the adaptive loop's local error
  estimate when ``estimate_into`` is a request (compiled/local_error.Request, from
  timeloop.LocalError.fused; the
  Arnold–Brüls step: compiled/ab_step.ab_newton_step_estimate; the Newmark family's:
  compiled/newmark_step.newton_step_estimate) — one compiled call a step instead of two;
* ``own_adjoint_terms``: the adjoint and tangent states are the stepper's own, not the
  record's (q, v, a, λ) blocks — the stepper then gives the objective partials at a state
  (``adjoint_local``; ``tangent_local``) and the initial-state terms (``adjoint_finish``)
  that Problem gives the others (PETSc TS: λ_y and dy/dρ of its ODE, ts.py).

A stepper whose steps ``timeloop.march`` takes one by one (Newmark family, variational,
index-1, Maggi, matrix-r, kinematic) inherits them from ``OneStep``; the whole-run PETSc
TS steppers (ts.py, ts_alpha2.py) and dopri5 (formulations/index1_dopri.py) declare their own.  A new stepper declares them and the
checkpoint layer needs no edit (as PETSc's ``TSTrajectory`` serves every ``TSType``).
"""

#: ``whole_runs`` of a stepper that runs forward, direct and adjoint itself (PETSc TS, dopri5)
WHOLE = frozenset(("forward", "direct", "adjoint"))


class OneStep:
    """A one-step stepper: its checkpointed run is checkpoint/restart.py's CheckpointedRun."""

    checkpoint_sweep = "adjoint_step"

    #: every run steps through Problem's loops (a stepper may add one: Maggi's adjoint ODEs)
    whole_runs = frozenset()

    #: Problem's grid holds an adaptive run's steps
    freezes_steps = False

    #: the step computes no local error estimate (``estimate_into`` unused)
    fuses_estimate = False
    estimate_into = None

    #: μ is the record's blocks: Problem's objective partials and initial-state terms
    own_adjoint_terms = False

    def tangent_start(self, dx0, p):
        """The tangent state of Problem's direct loop from dx_0/dρ (the record's blocks)."""
        return dx0

    def tangent_step_at(self, k, traj, dx, p):
        """Tangent step k → k+1 of Problem's direct loop along ``traj``: ``tangent_step``'s."""
        return self.tangent_step(traj.t[k], traj.x(k), traj.x(k + 1), dx, p)

    def adjoint_step_into(self, k, T, x0, x1, mu, grad, p):
        """Reverse step k+1 → k of Problem._adjoint_sweep: (μ_k, ∇ψ + ``adjoint_step``'s increment)."""
        mu, dg = self.adjoint_step(T[k], x0, x1, mu, p)
        return mu, grad + dg

    def checkpoint_refusal(self):
        """Every schedule checkpoints (None)."""
        return None
