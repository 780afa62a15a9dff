"""Test hook: a failure on ONE rank of a parallel run, in the middle of a forward run or
an adjoint sweep (the other ranks are, or soon will be, inside a collective call).

``PARMBS_RANK_FAIL=RANK:PHASE:STEP[:MODE[:CALL]]``

* ``PHASE`` ``forward``: after forward step STEP (x_STEP computed); ``adjoint``: after
  reverse step STEP (μ_STEP computed) — ``Problem.forward`` / ``Problem._adjoint_sweep``
  (the in-memory and checkpointed index-3 paths; not the whole-run PETSc TS steppers);
  ``evaluation`` (STEP 0): after an evaluation of ``parmbs optimize``, its forward run
  and gradient done and before the ranks agree on its outcome
  (``optimize/driver.try_evaluate_all``: past the evaluation's last collective call);
* ``MODE`` ``raise`` (default): StepError on rank RANK only, as a rank-local check of a
  local slice would raise; ``nan``: rank RANK's copy of the state (forward) or of μ
  (adjoint) becomes NaN — a non-finite value on one rank, which the next collective
  Newton/KSP decision must turn into the same failure on every rank; ``bug``: a
  RuntimeError on rank RANK only (an unexpected exception, not a failed computation);
* ``CALL``: fire at the CALL-th time this rank reaches (PHASE, STEP) (default 1: the first
  forward run; ``parmbs optimize`` evaluations run forward again).

Unset, the hook is one attribute test per step.  tests/test_rank_failure.py.

Every fault-injection hook of parmbs (this one, ``PARMBS_CHECKPOINT_KILL`` in
checkpoint/store.py, ``PARMBS_OPTIMIZE_KILL`` and ``PARMBS_OPTIMIZE_FAIL`` in
optimize/log.py) reads its variable through ``test_env``: it is inert unless
``PARMBS_TEST_FAULTS=1`` is set as well, so a stray variable in a user's environment
can never kill or fail a production run.  The tests set both.
"""
from __future__ import annotations

import os

import numpy as np


#: the switch that arms the fault-injection hooks (tests only)
SWITCH = "PARMBS_TEST_FAULTS"


def enabled() -> bool:
    return os.environ.get(SWITCH, "") == "1"


def test_env(name) -> str:
    """The value of the hook variable ``name``, or "" unless ``PARMBS_TEST_FAULTS=1``."""
    return os.environ.get(name, "") if enabled() else ""


class _RankFault:
    def __init__(self, spec=None):
        spec = test_env("PARMBS_RANK_FAIL") if spec is None else spec
        parts = spec.split(":") if spec else []
        self.active = len(parts) >= 3
        if self.active:
            self.rank, self.phase, self.step = int(parts[0]), parts[1], int(parts[2])
            self.mode = parts[3] if len(parts) > 3 and parts[3] else "raise"
            self.call = int(parts[4]) if len(parts) > 4 else 1
            if (self.phase not in ("forward", "adjoint", "evaluation") or self.mode not in ("raise", "nan", "bug")
                    or (self.phase == "evaluation" and self.mode == "nan")):
                raise ValueError(f"PARMBS_RANK_FAIL={spec!r}: RANK:forward|adjoint:STEP[:raise|nan|bug[:CALL]] "
                                 "or RANK:evaluation:0[:raise|bug[:CALL]]")
        self.count = 0

    def __call__(self, phase, k, value):
        """``value`` (a tuple of arrays), possibly poisoned; raises on the chosen rank/step."""
        if not self.active or phase != self.phase or k != self.step:
            return value
        from ._petsc import PETSc
        if PETSc.COMM_WORLD.getRank() != self.rank:
            return value
        self.count += 1
        if self.count != self.call:
            return value
        if self.mode == "nan":
            return tuple(np.full_like(np.asarray(v), np.nan) for v in value)
        if self.mode == "bug":
            raise RuntimeError(f"PARMBS_RANK_FAIL: injected bug at {phase} step {k} on rank {self.rank}")
        from .errors import StepError
        raise StepError(f"PARMBS_RANK_FAIL: {phase} step {k} failed on rank {self.rank} only")


rank_fault = _RankFault()
