"""Error control on the forward sensitivities (``simulation.adapt.sensitivities``).

Why: the error test of timeloop.LocalError controls positions and velocities, and the
gradient of an adaptive run is the exact derivative of the scheme on the *frozen*
accepted step sequence (timeloop module docstring).  Where a fast event moves with the
design — the passive walker's heel strike, a smooth penalty contact switching within
≈ 1 ms whose time moves by ≈ 0.5 s per unit of the slope parameter — the state's mesh
can be fine enough for x(t) while the sensitivity s = dx/dρ, which carries the event's
time derivative ẋ·dt_event/dρ (a spike of the event's height over its duration), is
under-resolved: on ``configs/passive-walker.toml`` (t_end 1.2 s) ψ converged to 1.6e-5
between rtol 1e-3 and 1e-4 while ∇ψ changed 0.15–0.36 (benchmarks/README.md, "Passive
dynamic walker").

What: the direct sensitivities are carried along the forward run (one tangent step,
``stepper.tangent_step``, per trial step that passed the state test) and each column's
local error joins the error test, as CVODES does with ``errconS``
(``CVodeSetSensErrCon``; Serban & Hindmarsh, "CVODES: the sensitivity-enabled ODE
solver in SUNDIALS", ASME IDETC 2005, and the CVODES guide §2.6: "the sensitivity
variables may be included in the local error test"): the error norm of a step is the
largest of the state's norm and each sensitivity column's norm (CVODES cvodes.c
``cvSensNorm``/``cvSensUpdateNorm``: the maximum over the sensitivity vectors).

* Estimate: the state's, column by column — a LocalError on (s_q, s_v) of each column
  (C h³ s''' from the divided differences of the accepted sensitivities and the new one;
  the initial ds/dt and d²s/dt² are the tangent's v- and a-blocks: confluent data at t_0).
* Tolerance **per step** for positions and velocities (``PER_STEP`` = 1: ‖e_S‖ ≤ 1 with
  the weights atol + rtol |s|, no share h/T), as CVODES' local error test, which is per
  step for states and sensitivities alike.  Not the state positions' per-unit-step share:
  measured on the walker (rtol 1e-3, t_end 0.6 s), the per-unit-step test asked h ≈ 2e-7 s
  for 2 ms at the swing knee's strike (≈ 2600 trial steps) and at the heel strike (0.5653
  s) drove h to dt_min = 1e-8 s with ‖e_S‖ still ≈ 1 (the run failed), on the slope
  column; per step the same run took 1100 trial steps to 0.6 s (h ≥ 1.5e-7) and the 0.7 s
  gradient changed 6.7e-3 / 7.5e-4 / 3.4e-4 between rtol 1e-3 and 1e-4 (without the
  sensitivities: 5.8 / 0.82 / 3.1e-2; benchmarks/README.md, "Passive dynamic walker").
* Scaled as
  CVODES' default (``pbar``): column j is multiplied by p̄_j = |ρ_j| (1 where ρ_j = 0),
  so its absolute tolerance is atol / p̄_j and rtol is relative to |s_j| (CVODES'
  ``CV_EE``: rtolS = rtol, atolS = atol / |p̄_j|).
* Noise: the tangent is one linear solve at the converged state; its round-off floor is
  taken as ``ROUNDOFF`` |s_q|_max per position (the velocities' (γ/β)/h amplification as
  the state's, LocalError).  The state's Newton noise δq also moves the tangent
  (∂s/∂x δq), which is not modelled; Newton stops at κ of the state's weights.

What it does not change: the states' equations, the objectives, the sweeps.  It only
chooses the step sequence, which the gradients freeze; direct = adjoint = FD on the
frozen mesh hold as before.  Cost: one tangent step (nd columns) per trial step that
passes the state test, and the finer mesh it asks for.  In-memory runs of parmbs's own
one-step steppers only (config/checks.py refuses the rest)."""
from __future__ import annotations

import numpy as np

#: round-off floor of the tangent's positions, relative to the largest |s_q| of the column
ROUNDOFF = 8.0 * np.finfo(float).eps
#: the sensitivities' tolerance is per step (×1/PER_STEP), not per unit step (module docstring)
PER_STEP = 1.0


class SensitivityError:
    """Local error norm of the forward sensitivities of a step (module docstring).

    ``tangent(t, x0, x1, dx0)``: dx_{k+1}/dρ (the stepper's tangent_step with its h set
    to the step's); ``dx0``: dx_0/dρ (blocks (q, v, a, …), each (·, nd)); ``scale``: p̄
    (nd,)."""

    def __init__(self, adapt, C, v_gain, tangent, dx0, scale):
        from .timeloop import LocalError
        self.tangent = tangent
        self.scale = np.asarray(scale, dtype=float)
        self.dx = dx0
        self.est = [LocalError(adapt, C, (0.0, ROUNDOFF), v_gain) for _ in range(len(self.scale))]
        self._cand = None
        self.steps = 0                       # tangent steps taken (trial steps that passed the state test)

    def _cols(self, dx):
        return [(np.ascontiguousarray(dx[0][:, j]) * s, np.ascontiguousarray(dx[1][:, j]) * s,
                 np.ascontiguousarray(dx[2][:, j]) * s) for j, s in enumerate(self.scale)]

    def start(self, t, initial):
        for e, c in zip(self.est, self._cols(self.dx)):
            e.start(t, c, initial)

    def norm(self, t, x, t1, x1, h):
        """The largest column norm of the step (t, x) → (t1, x1) of size h, or None (no
        estimate yet)."""
        dx1 = self.tangent(t, x, x1, self.dx)
        cols = self._cols(dx1)
        self._cand = (t1, dx1, cols)
        worst = None
        for e, c in zip(self.est, cols):
            e.horizon = h * PER_STEP             # the share h/T of LocalError: 1/PER_STEP (module docstring)
            r = e.norm(t1, c, h)
            if r is not None:
                worst = r if worst is None else max(worst, r)
        self.steps += 1
        return worst

    def accept(self, t1):
        tc, dx1, cols = self._cand
        assert tc == t1, "SensitivityError.accept without the step's norm"
        for e, c in zip(self.est, cols):
            e.accept(t1, c)
        self.dx, self._cand = dx1, None
