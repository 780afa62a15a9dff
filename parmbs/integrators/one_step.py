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
  own controller), so ``Problem.frozen_steps`` replays them through its ``freeze(t)``.

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

    def checkpoint_refusal(self):
        """Every schedule checkpoints (None)."""
        return None
