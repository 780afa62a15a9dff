"""Newton's stopping test in adaptive runs, coupled to the local error tolerance.

The local error estimate of an adaptive run (timeloop.LocalError) is computed from
Newton iterates, so it carries their termination error: in the acceleration-form
steppers q = q̂ + βh² a and v = v̂ + γh a, so a Newton iterate that is δq_i off in
position component i is δv_i = (γ/β) δq_i / h off in velocity (the velocity level of
an index-3 DAE is an index-2 variable: h⁻¹ amplification).  With a fixed Newton
tolerance (``simulation.newton``, 1e-12 by default) that noise exceeded the
per-unit-step error weight of many steps, and the steps followed Newton's tolerance,
not rtol/atol (five-bar: 62 of 263 steps; Iltis: every step).  Iterating Newton to
round-off on every step (branch ``conv18``) removed that on the five-bar but, on the
Iltis, stopped at round-off-stalled iterates up to 1e-12 off while the weights assumed
1e-15, and the controller chased that noise down to h = 5e-7 (11× the steps).

Here both halves are tied to the error tolerance, as in stiff integrators:

* **The stopping test is the error test's weights times κ = 0.1** (Hairer & Wanner,
  Solving ODEs II, §IV.8, eq. 8.10: stop when the estimated iteration error is below
  κ·Tol, κ ∈ [1e-2, 1e-1]; SUNDIALS CVODE(S): the Newton correction's WRMS norm — in
  the local error test's weights — below 0.1 × the error test's constant, ``CORTES =
  0.1``, ``CVodeSetNonlinConvCoef``; Hindmarsh et al., ACM TOMS 31:363, 2005).  For
  each position component i the last update |Δq_i| must satisfy
  2 |Δq_i| ≤ κ w_q,i and 2 (γ/β) |Δq_i| / h ≤ κ w_v,i, with LocalError's weights
  w_q = (atol + rtol |q_i|) h/T (per unit step) and w_v = atol + rtol |v_i| (per step:
  timeloop.V_PER_STEP) — plus 4ε|q|_max, below which no update can go.  Newton is never stopped looser than ``simulation.newton``
  (the adjoint assumes the iterate exact; that accuracy stays what the file asks).
* **Where round-off stops the updates first**, the iteration ends once an update no
  longer contracts (> ½ the previous) and is within ``simulation.newton`` (as branch
  ``conv18``), and the error estimate is told the *measured* noise: the last update
  |Δq_i| per component (``last_dq``), an upper bound of the remaining iteration error
  when it contracts, and the size of the round-off when it stalls.  LocalError weighs
  component i by tol_i + 2 noise_i, so noise can enlarge a weight but never drive h
  down (no spiral: smaller h → larger δv ∝ 1/h → smaller h).

So with the coupled test the noise term 2 δ_i is at most κ = 0.1 of every weight and
the error estimate is decided by the tolerance; only stalled (round-off) iterates leave a floor, and
that floor is measured, not assumed.  The compiled kernels (parmbs/compiled/) and the
Newton loops without a per-component test read the scalar ``atol``/``rtol`` set per
step by ``set_h``: the smallest allowed δq (the atol part of the weights) and 4ε.  A
compiled step that stalls above it fails and is redone by the numpy Newton (newmark.py),
which has the stall test.
"""
from __future__ import annotations

import numpy as np

#: κ: Newton stops at this fraction of the error test's weights (HW II §IV.8; CVODE's CORTES)
KAPPA = 0.1
#: relative round-off below which no Newton update can be asked to go (4ε)
ROUNDOFF = 4.0 * np.finfo(float).eps
#: the noise enters the error weights with this factor (timeloop.LocalError: the estimate
#: turns noise δ into ≤ 8Cδ = ⅔δ for C = 1/12; the weight tol + 2δ keeps its ratio ≤ ⅓)
NOISE_GAIN = 2.0


def _timeloop():
    """The timeloop module (it imports this one; a function-level ``from .timeloop import``
    at every step cost more than the rest of ``set_h``)."""
    global _TL
    if _TL is None:
        from . import timeloop
        _TL = timeloop
    return _TL


_TL = None


class AdaptiveNewton:
    """Newton settings of an adaptive run (module docstring).  Duck-types
    config.schema.Newton (``atol``, ``rtol``, ``max_it``: the scalar test, reset per
    step by ``set_h``) and adds the per-component test ``done`` used by the numpy
    acceleration-form Newton loops (newmark.newton_acceleration_form, ggl.py)."""

    def __init__(self, newton, rtol, atol, horizon, v_gain):
        self.file = newton                    # simulation.newton as given
        self.user_atol, self.user_rtol, self.max_it = newton.atol, newton.rtol, newton.max_it
        self.err_rtol, self.err_atol, self.horizon, self.v_gain = rtol, atol, horizon, v_gain
        self.atol, self.rtol = newton.atol, newton.rtol
        self._rtol_h = min(self.user_rtol, ROUNDOFF)     # set_h's scalar rtol (constant)
        self.h = None
        self._key = None                      # (h, V_PER_STEP) of _atol_h, set_h's scalar test
        self.last_dq = None
        self.cap = None

    def set_h(self, h):
        """Step size of the next step: the scalar test and a fresh noise record.  The
        scalar test depends on h alone (and timeloop.V_PER_STEP): computed again only when
        they change — the controller keeps h for runs of steps (its hysteresis), and this
        was ≈ 1 µs of an adaptive five-bar step (benchmarks/README.md, "Adaptive vs fixed:
        one call for estimate and controller")."""
        h = float(h.real)                     # as float(np.real(h)), without its array dispatch
        key = (h, _timeloop().V_PER_STEP)
        if key != self._key:
            self.h, self._key = h, key
            self._atol_h = min(self.user_atol, self._allowed(self.err_atol, self.err_atol, min))
        self.atol = self._atol_h
        self.rtol = self._rtol_h
        self.last_dq = None
        self.cap = None

    def limit(self, cap):
        """A further bound on every |Δq_i| of the next step's last update (after
        ``set_h``): the quadratures' error test (quad_error.QuadratureError.newton_cap)
        asks that the acceleration noise δq/(βh²) of an integrand stay below κ of its
        weight."""
        self.cap = float(cap)
        self.atol = min(self.atol, self.cap)

    def _allowed(self, wq, wv, minimum=np.minimum):
        """Largest |Δq_i| whose noise is ≤ κ of the weights wq (position), wv (velocity);
        ``minimum=min`` for two floats (``set_h``, every step: np.minimum's scalar call
        cost more than the rest — the smaller of the two either way)."""
        h, s = self.h, self.h / self.horizon
        return (KAPPA / NOISE_GAIN) * minimum(wq * s, wv * (1.0 if _timeloop().V_PER_STEP else s) * h / self.v_gain)

    def done(self, dq, q1, v1, prev):
        """Stop after this update?  ``dq``: |Δq_i| of the update (per component), ``q1``,
        ``v1`` the iterate, ``prev`` max |Δq| of the previous update (inf at the first).
        Records ``last_dq`` when it stops (module docstring)."""
        dq = np.real(np.abs(dq))
        qabs, dmax = np.abs(q1), float(np.max(dq)) if dq.size else 0.0
        qmax = float(np.max(qabs)) if qabs.size else 0.0
        if dmax > self.user_atol + self.user_rtol * qmax:
            return False                          # never looser than simulation.newton
        if self.h is None:                        # not inside an adaptive step: the file's test
            self.last_dq = dq
            return True
        allowed = self._allowed(self.err_atol + self.err_rtol * qabs, self.err_atol + self.err_rtol * np.abs(v1))
        if self.cap is not None:
            allowed = np.minimum(allowed, self.cap)
        if np.all(dq <= allowed + ROUNDOFF * qmax) or dmax > 0.5 * prev:
            self.last_dq = dq
            return True
        return False

    def noise(self, q1):
        """Per-component position noise δq_i of the step just taken: the recorded last
        update, or (a compiled kernel's step) the scalar test it met (``noise_law``)."""
        qmax = float(np.max(np.abs(q1)))
        dqv, a, b = self.noise_law()
        if dqv is not None:
            return np.maximum(dqv, a * qmax)
        return a + b * qmax

    def noise_law(self):
        """``noise`` as (dqv, a, b) of |q1|_max: δq_i = max(dqv_i, a |q1|_max) with the
        recorded last update dqv, else the scalar a + b |q1|_max — the form the compiled
        estimate takes (compiled/local_error.py)."""
        if self.last_dq is not None:
            return self.last_dq, ROUNDOFF, 0.0
        return None, self.atol, max(self.rtol, ROUNDOFF)
