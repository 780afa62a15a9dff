"""What a stepper declares about checkpointed runs, read by the checkpoint layer and the
CLI instead of probing its attributes (``hasattr(stepper, "forward")``).

Every stepper declares

* ``checkpoint_sweep``: how a checkpointed run's reverse sweep goes, the key of
  checkpoint.RUNS — ``"adjoint_step"`` (checkpoint/restart.py: recompute with ``step``,
  reverse with ``adjoint_step``) or ``"ts"`` (checkpoint/ts_run.py: TS re-runs and
  TSAdjoint); None: the trajectory stays in memory (schedule ``all``, no file);
* ``checkpoint_refusal()``: why this run cannot checkpoint (a message naming the
  setting), or None.

A stepper whose steps ``timeloop.march`` takes one by one (Newmark family, variational,
index-1, Maggi, matrix-r, kinematic) inherits both from ``OneStep``; the whole-run PETSc
TS steppers (ts.py, ts_alpha2.py) declare their own.  A new stepper declares them and the
checkpoint layer needs no edit (as PETSc's ``TSTrajectory`` serves every ``TSType``).
"""


class OneStep:
    """A one-step stepper: its checkpointed run is checkpoint/restart.py's CheckpointedRun."""

    checkpoint_sweep = "adjoint_step"

    def checkpoint_refusal(self):
        """Every schedule checkpoints (None)."""
        return None
