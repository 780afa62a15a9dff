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
* the steps of Problem's one reverse sweep and one direct loop: ``adjoint_step_into``
  (∇ψ in and out whole), ``tangent_start``, ``tangent_step_at`` (``OneStep``'s: by
  ``adjoint_step``/``tangent_step``); ``own_adjoint_terms``: μ and dx are not the
  record's (q, v, a, λ) blocks, so the stepper gives the objective partials (``adjoint_local``,
  ``tangent_local``) and initial terms (``adjoint_finish``) too (PETSc TS: its ODE's y).

A stepper whose steps ``timeloop.march`` takes one by one (Newmark family, variational,
index-1, Maggi, matrix-r, kinematic, and ts-alpha2's steps) inherits them from
``OneStep``; the PETSc TS steppers (ts.py) and dopri5 (formulations/index1_dopri.py)
declare their own.  A new stepper declares them and the checkpoint layer needs no edit
(as PETSc's ``TSTrajectory`` serves every ``TSType``).
"""

#: ``whole_runs`` of a stepper that runs forward, direct and adjoint itself (ts-alpha2, dopri5)
WHOLE = frozenset(("forward", "direct", "adjoint"))


class OneStep:
    """A one-step stepper: its checkpointed run is checkpoint/restart.py's CheckpointedRun."""

    checkpoint_sweep = "adjoint_step"

    #: every run steps through Problem's loops (a stepper may add one: Maggi's adjoint ODEs)
    whole_runs = frozenset()

    #: Problem's grid holds an adaptive run's steps
    freezes_steps = False

    #: μ is the record's blocks: Problem's objective partials and initial-state terms
    own_adjoint_terms = False

    def tangent_start(self, dx0, p):
        return dx0

    def tangent_step_at(self, k, traj, dx, p):
        return self.tangent_step(traj.t[k], traj.x(k), traj.x(k + 1), dx, p)

    def adjoint_step_into(self, k, T, x0, x1, mu, grad, p):
        mu, dg = self.adjoint_step(T[k], x0, x1, mu, p)
        return mu, grad + dg

    def checkpoint_refusal(self):
        """Every schedule checkpoints (None)."""
        return None
