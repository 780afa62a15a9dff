"""Distributed TS solves that repeat, and the check of a recomputed TS stretch (issue 20).

Why.  A checkpointed TS run re-runs stretches of the forward integration from stored
states for TSAdjoint (checkpoint/ts_run.py) and compares each re-run state with the stored
one.  Parallel MUMPS on 2 ranks is not bitwise repeatable when the ranks' timing
varies (its contribution blocks are summed in the order they arrive): 40 fresh
factorizations of one distributed 36 × 36 matrix gave 5 distinct solutions up to
1.3e-16 apart (PCREDUNDANT: 40 identical), and a distributed checkpointed run under
load stopped with "the TS step recomputed from the checkpoint differs from the stored
state by 6.94e-18".  The project's rule is "same input, same bytes; where MPI makes that
impossible, the bound is stated and tested".  So:

* **small distributed systems** (n + m below parallel.DISTRIBUTE_MIN_UNKNOWNS, i.e.
  distributed on request, ``parallel.distribute = "always"``): the TS's Newton matrix
  and the initial assembly's are factored whole on every rank (PCREDUNDANT; inside it
  PETSc's LU in natural order for the TS — the serial run's factorization — and
  sequential MUMPS for the initial assembly, whose saddle rows need pivoting).  The TS,
  its Vecs and MPIAIJ matrices stay distributed; the solve repeats bit for bit, and the
  recomputed states must equal the stored ones bit for bit, as on one rank.  Cost:
  benchmarks/README.md "Deterministic distributed TS solves".
* **large distributed systems** (from DISTRIBUTE_MIN_UNKNOWNS up, where one rank cannot
  be asked to hold the whole factor), or a user's own solver
  (``-parmbs_ts_pc_type lu``: parallel MUMPS again; an iterative KSP): a re-run of L
  steps may differ from the stored states by the solves' round-off carried over the
  stretch.  Estimate (the distributed-vs-serial estimate of tests/test_ts_mpi.py): each
  Newton solve's result differs by κ ε |y| (κ: condition of the TS Jacobian ∂F/∂y +
  shift ∂F/∂ẏ — ≈ α for the penalty ODE, M + αΦ_qᵀΦ_q; ≈ 1 for the index-1 and reduced
  ODEs, I − θh G_y at the step sizes used), and over L steps of a non-growing motion these
  add up: ‖y_re-run − y_stored‖∞ ≤ 10 L κ ε max|y| (the 10 for the few operations per
  step).  A re-run within the bound is accepted (the gradient is then that of the re-run
  stages, off the uninterrupted run's by the same relative bound); beyond it the sweep
  stops naming step, difference and bound — a trajectory that did not repeat (another
  parameter, a changed file) is many orders larger (tests/test_ts_checkpoint.py).

Explicit ts-rk has no TS solve: its distributed run is bitwise whatever the PC.
"""
from __future__ import annotations

import numpy as np

from ..parallel import DISTRIBUTE_MIN_UNKNOWNS

EPS = float(np.finfo(float).eps)

#: the factor of the round-off bound 10 L κ ε max|y| (module docstring)
OPS_PER_STEP = 10


class DistributedSolves:
    """The solver choice of one TSStepper and the recompute check that goes with it."""

    def __init__(self, dist, unknowns, sim):
        self.dist = dist
        #: n + m below the distribution threshold: factored whole on every rank
        self.small = unknowns < DISTRIBUTE_MIN_UNKNOWNS
        #: κ of the TS Jacobian (module docstring): α for the penalty ODE, else 1
        self.kappa = float(sim.penalty.alpha) if sim.formulation == "penalty" else 1.0
        #: whether re-runs repeat bit for bit (set per TS by note_solver)
        self.bitwise = True

    def ts_options(self, defaults):
        """Make a small distributed TS solve PCREDUNDANT in ``defaults`` (the TS's config
        options, prefix parmbs_ts_): only where the config asks for a direct LU (pc_type
        "lu" or nothing); a user's -parmbs_ts_pc_type on the command line wins over it."""
        if not (self.dist and self.small) or defaults.get("pc_type", "lu") != "lu":
            return
        defaults["pc_type"] = "redundant"
        defaults.setdefault("redundant_pc_type", "lu")
        # the serial run's factorization: PETSc's LU in natural order (ts.py's default)
        defaults.setdefault("redundant_pc_factor_mat_ordering_type",
                            defaults.get("pc_factor_mat_ordering_type", "natural"))

    def init_options(self):
        """The initial assembly's extra options (prefix parmbs_init_): PCREDUNDANT with
        sequential MUMPS (pivoting) on a small distributed run, else none."""
        if not (self.dist and self.small):
            return {}
        return {"pc_type": "redundant", "redundant_pc_type": "lu", "redundant_pc_factor_mat_solver_type": "mumps",
                "redundant_mat_mumps_icntl_7": 0}

    def note_solver(self, ts, kind):
        """After ts.setFromOptions: the re-runs of this TS repeat bit for bit on one rank,
        for explicit RK (no solve) and with PCREDUNDANT; otherwise the bound applies."""
        if not self.dist or kind == "ts-rk":
            self.bitwise = True
            return
        self.bitwise = ts.getSNES().getKSP().getPC().getType() == "redundant"

    def bound(self, steps, y):
        """‖Δy‖∞ a re-run of ``steps`` steps may show (0 when bitwise)."""
        if self.bitwise:
            return 0.0
        return OPS_PER_STEP * max(int(steps), 1) * self.kappa * EPS * float(np.max(np.abs(y), initial=0.0))

    def mismatch(self, y_rerun, y_stored, steps):
        """None when the re-run state is acceptable, else the reason (after 'differs from
        the stored state')."""
        if np.array_equal(y_rerun, y_stored):
            return None
        d = float(np.max(np.abs(np.asarray(y_rerun) - np.asarray(y_stored))))
        b = self.bound(steps, y_stored)
        if d <= b:
            return None
        if self.bitwise:
            return f"by {d:.3g}"
        return (f"by {d:.3g}, above the round-off bound {b:.3g} of a distributed solve over {steps} steps "
                f"(10 L κ ε max|y|, κ = {self.kappa:g}: integrators/ts_determinism.py)")
