"""One time loop: the step sequence (t_k, h_k, accept/reject) of every forward run.

``march`` owns the loop over steps for every one-step stepper (Newmark family,
variational, index-1, Maggi, matrix-r): in-memory runs (``Problem.forward``) and
checkpointed runs (``CheckpointedRun.forward``) give it a ``keep(k, t, h, x)``
callback for each accepted state and otherwise share every line.  PETSc TS runs
(integrators/ts.py, ts_alpha2.py) step through ``march_ts``: one TSStep per accepted
step (ts_steps.py), TSAdapt choosing an adaptive run's steps and rejecting inside it, the
guard, ``keep`` and progress this module's.  The step sequence is one of

* **fixed**: h_k = ``simulation.dt`` for every step (t_k = t_0 + k dt, as always);
* **adaptive** (``simulation.adapt``): the local error of each step is estimated and
  kept below the tolerance by a PI step-size controller; steps whose error is too
  large, or whose Newton iteration fails, are rejected and retried with a smaller h;
* **frozen**: a given ``TimeGrid`` replayed step by step (no control) — the accepted
  sequence of an adaptive run, for finite differences, complex step and ``verify``,
  which must compare runs on the same mesh.

Sensitivities of adaptive runs differentiate the *accepted* step sequence with the
step sizes frozen (h_k does not depend on ρ), as PETSc's TSAdjoint does: the direct
and adjoint gradients are exact derivatives of the discrete scheme on that mesh, and
FD replays the same mesh (``Problem.frozen_grid``), so all three compare like with
like.  The derivative of the step-size selection itself is left out on purpose: it
is piecewise constant almost everywhere (a rejected/accepted decision flips) and of
the order of the tolerance, i.e. of the discretisation error, not of the solution.
Where an event that moves with the design (a contact switch) makes the frozen-mesh
sensitivities converge much later than the state, ``simulation.adapt.sensitivities``
puts them in the error test (sens_error.py, CVODES' errconS).

Error estimate (``LocalError``): the principal local error term of the second-order
one-step schemes here is C h³ y''' for y = q and y = v (C = 1/12 for the trapezoidal
rule and Newmark β = ¼, |β − 1/6| for other Newmark β — Zienkiewicz & Xie 1991,
"A simple error estimator and adaptive time stepping procedure for dynamic analysis",
Earthquake Eng. Struct. Dyn. 20:871–887, eq. 7).  y''' is estimated from the
accepted states by divided differences over the last three states and the new one
(with the consistent initial v₀, a₀ as confluent data at t₀) — the variable-step
backward-difference estimate PETSc's TSALPHA2 also uses (TSEvaluateWLTE_Alpha2),
taken one order higher to match the scheme's order.  It needs only q and v, so it is
the same for every formulation (multipliers and accelerations are excluded: in the
index-3 schemes they carry the h⁻² round-off amplification, not a truncation error).

Error norm: weighted RMS over the q and v components,
‖e‖ = sqrt(mean((e_i / (atol + rtol max(|y_k,i|, |y_k+1,i|)))²)), as PETSc's
TSErrorWeightedNorm with ``-ts_adapt_wnormtype 2``, taken **per unit step**: a step
is accepted when ‖e‖ · T/h ≤ 1 (T = t_end − t_0), i.e. the local error per unit time
is below tol/T, so the errors of all steps add up to about the tolerance (Hairer,
Nørsett & Wanner I, §II.4, "error per unit step").  Measured on the five-bar
(benchmarks/README.md): the global error of ψ and ∇ψ is 0.2–0.3 × rtol; with the
per-step criterion it was ~60 × rtol at rtol 1e-6 (global error ∝ tol^(2/3)).  As the
scaled error goes with h² (not h³), the controller's exponents are those of order 2.

Noise floor (parmbs/integrators/newton_tol.py): in the acceleration-form schemes
v = v̂ + γh a and q = q̂ + βh² a, so a Newton iterate δq off in position is δv = (γ/β) δq/h
off in velocity (h⁻¹ amplification: the velocity level of an index-3 DAE is an index-2
variable).  The divided difference turns noise δ into ≈ 8C δ; the weights therefore
include 2 δ, so the controller never chases its own noise:
``sc_i = atol + rtol max(|y_k,i|, |y_k+1,i|) (· share) + 2 δ_i``.  δ_i is *measured*: the
last Newton update of component i, at least 4ε|q|_max (round-off), and Newton's stopping
test is tied to the weights (2 δ_i ≤ κ sc_i, κ = 0.1: Hairer & Wanner II §IV.8 eq. 8.10;
CVODE's nonlinear convergence coefficient 0.1), so noise never decides a step unless
round-off stops Newton first.  ``floor_hits`` counts accepted steps where 2 δ_i exceeded
the tolerance part of some weight, ``floor_decided`` those where such components carried
more than half of ‖e‖² (the CLI reports the former).  Steppers whose Newton loop has no
per-component test (variational, Maggi, matrix-r) keep ``simulation.newton`` and δ = its
tolerance.

Velocities per step, positions per unit step: the velocity part's share of the
tolerance is 1, not h/T (``V_PER_STEP``).  With the per-unit-step share the velocity
weight (atol + rtol|v|) h/T falls below the round-off floor 2(γ/β)·4ε|q|/h of every
index-3 stepper wherever h² < 8(γ/β)ε|q| T/atol — on the Iltis (|q|_max ≈ 1.1, T = 3 s,
atol 1e-6) for every h below 1.1e-4 s, i.e. for most of its steps, whatever Newton does
(63 855 of 65 121 steps floor-decided with Newton to round-off, branch ``conv18``), and
for t_end = 0.04 s the controller chased that floor below dt_min.  Per step, the same
floor is reached only at h ≈ 8(γ/β)ε|q|/atol (4e-9 s there).  This is the index-2
scaling of RADAU5 (Hairer & Wanner's code for Solving ODEs II: "in estimating the error
the index 2 variables are multiplied by h, the index 3 variables by h²", its IWORK(5–7)),
with time in units of the horizon T: e_v·(h/T) ≤ tol_v·(h/T) per unit step is e_v ≤ tol_v
per step.  Positions — the index-1 level, the configuration every output depends on —
keep the per-unit-step control, whose global error is ≈ tol; the velocities' local
errors enter the positions multiplied by h, so their per-step
control adds at most ≈ T·tol_v to the positions' global error.

Controller: PI (Gustafsson 1991; Hairer & Wanner, Solving ODEs II, §IV.2 eq. 2.43c)
h_new = h · safety · ‖e_n‖^(−0.7/2) · ‖e_{n−1}‖^(0.4/2) (‖e‖ the scaled error), safety 0.9, the factor
clipped to [0.2, 5] (PETSc TSAdapt basic: safety 0.9, clip [0.1, 10]); a proposed
growth below ``grow_min`` (1.3×) keeps h (hysteresis, as RADAU5 keeps h for factors in [1, 1.2] —
Hairer & Wanner II §IV.8 — and CVODE does not grow h by less than 1.5×): every change
of h excites the parasitic root of generalized-α (α_m ≠ α_f: the acceleration variable
lags by (α_m − α_f) h), and without the hysteresis the estimator saw those transients
and spiralled down — five-bar, genalpha, 0.5 s at rtol 1e-4: 64 rejections and h down
to 6.5e-6 without, 1 rejection and h ≥ 3.4e-4 with; after a rejection no growth; a Newton failure quarters the step.  h stays in
[dt_min, dt_max]; the last step lands on t_end exactly.  The factor is
``simulation.adapt.grow_min`` (1.3 by default): with CVODE's 1.5 the five-bar's Arnold–Brüls
grid reaches a uniform grid's ∇ψ error per step (error × N² 107–108 against 108–110 fixed;
1.3 gives 123–128, 1.1 161, no hysteresis 178–189: each small growth of h leaves ∇ψ an
error a uniform grid does not have) — benchmarks/README.md, "Adaptive vs fixed: the
controller's hysteresis and cubic weights".

Ratchet (``simulation.adapt.grow_after`` = n, absent by default): the hysteresis keeps h
whenever the proposed growth is below ``grow_min``, so a model whose proposals stay in [1,
grow_min) only ever shrinks h — the trapezoidal + GGL spatial double pendulum at rtol 1e-6:
1 growth in 723 steps, 247 shrinks (benchmarks/README.md, "Adaptive vs fixed: digital-filter
controllers").  With n, after n accepted steps in a row each proposing a growth
fac_j ∈ [1, grow_min), h grows by min_j fac_j — a growth every one of those steps allowed
— and the count starts again; a shrink, a growth ≥ grow_min or a rejection ends the run.
RADAU5 keeps h for factors in [1, 1.2] (Hairer & Wanner II §IV.8) to save Jacobians, and the
smoothness argument for step sequences (Söderlind, "Digital filters in adaptive
time-stepping", ACM TOMS 29, 2003: every change of h is a perturbation the method's error
propagation sees) is why h changes rarely here: the release changes h at most once every n
steps, by a factor the error estimate allowed n times over.  The run and its minimum are the
controller's memory in the adaptive checkpoint (MarchState.mem), so a resumed run takes the
same steps; the compiled estimate returns the PI factor before the hysteresis
(compiled/local_error.S_FAC) and Controller.accepted applies the same rule, so the compiled
and the Python path take the same steps bit for bit.  Measured: benchmarks/README.md,
"Adaptive vs fixed: releasing the hysteresis ratchet".

Shrink hysteresis (``simulation.adapt.keep_min`` = s, absent by default: every proposed
shrink is taken): on an accepted step a proposed factor in (s, 1) keeps h too, as CVODE
keeps h for every factor in (eta_min_fx, eta_max_fx) = (0, 1.5) after a successful step
(SUNDIALS cvode_impl.h, ETA_MIN_FX_DEFAULT / ETA_MAX_FX_DEFAULT): a step whose error passed
the test is not followed by a small cut; if the next one fails, the rejection shrinks h.
The five-bar's PI grid shrinks h on 1532 of 5054 accepted steps at rtol 1e-5 (≈ 0.8 % each);
without them its ∇ψ error per step is a uniform grid's (benchmarks/README.md, "Adaptive vs
fixed: releasing the hysteresis ratchet").  The compiled estimate applies it as the PI
controller (compiled/local_error.S_KEEP).
"""
from __future__ import annotations

import cmath
import math
from dataclasses import dataclass

import numpy as np

from ..faults import rank_fault
from .newmark import StepError
from .divided_differences import LEVELS, Diagonal
from .quadrature import cubic_weights
from .newton_tol import NOISE_GAIN, AdaptiveNewton
from .step_filter import DigitalFilter

SAFETY = 0.9
FAC_MIN, FAC_MAX = 0.2, 5.0
K_I, K_P = 0.7 / 2.0, 0.4 / 2.0          # PI exponents: the scaled error ‖e‖ T/h goes with h²
K_REJECT = 1.0 / 2.0
NEWTON_FAIL_FACTOR = 0.25
#: velocities' share of the tolerance is 1 (per step), positions' h/T (module docstring)
V_PER_STEP = True


class StepSizeError(StepError):
    """The step size fell below dt_min (message names step and time)."""


class TimeGrid:
    """Accepted times t_0 … t_N and step sizes h_0 … h_{N−1} of one run.

    h_k is stored, not recomputed as t_{k+1} − t_k: a fixed-step run keeps h_k =
    dt exactly (as before this module existed), and a replay uses the same bits."""

    def __init__(self, t, h, floor_hits=0, floor_decided=0):
        self.t = np.asarray(t, dtype=float)
        self.h = np.asarray(h, dtype=float)
        self.floor_hits = floor_hits      # adaptive: steps where the noise floor set some weight (LocalError)
        self.floor_decided = floor_decided  # ... and carried most of the error norm (not kept across a restart)
        if len(self.t) != len(self.h) + 1:
            raise ValueError("a time grid has one more time than steps")

    @classmethod
    def fixed(cls, t0, dt, nsteps):
        return cls(t0 + dt * np.arange(nsteps + 1), np.full(nsteps, float(dt)))

    @property
    def steps(self):
        return len(self.h)

    def weights(self, rule="trapezoid"):
        """Quadrature weights of ∫ f dt on this grid (``simulation.quadrature``,
        integrators/quadrature.py).  Trapezoid: w_0 = h_0/2, w_k = (h_{k−1} + h_k)/2,
        w_N = h_{N−1}/2 (equal to dt, dt/2 at the ends on a fixed grid, bit for bit)."""
        if rule == "cubic":
            return cubic_weights(self.t, self.h)
        w = np.zeros(self.steps + 1)
        if self.steps:
            w[:-1] += 0.5 * self.h
            w[1:] += 0.5 * self.h
        return w

    def weight(self, k):
        """w_k alone (the checkpointed loop adds w_k f_k once h_k is known)."""
        lo = 0.5 * self.h[k - 1] if k > 0 else 0.0
        hi = 0.5 * self.h[k] if k < self.steps else 0.0
        return lo + hi

    def __eq__(self, other):
        return (isinstance(other, TimeGrid) and np.array_equal(self.t, other.t)
                and np.array_equal(self.h, other.h))


@dataclass
class Adapt:
    """The resolved ``simulation.adapt`` settings of one run."""
    rtol: float
    atol: float
    dt0: float
    dt_min: float
    dt_max: float
    horizon: float = 1.0        # T = t_end − t_0 of the whole run (the per-unit-step scale)
    objective_atol: float | None = None   # quadratures in the error test (quad_error.py)
    grow_min: float = 1.3       # a proposed growth below this factor keeps h (hysteresis; module docstring)
    grow_after: int | None = None   # ... unless n accepted steps in a row proposed one (module docstring, "ratchet")
    keep_min: float = 1.0       # an accepted step's proposed shrink above this factor keeps h (1: none kept)
    controller: str = "pi"      # "pi" (Controller) or a digital filter of step_filter.FILTERS (FilterController)

    @classmethod
    def of(cls, sim, t0=0.0):
        a = sim.adapt
        if a is None:
            return None
        span = sim.t_end - t0
        dt_max = a.dt_max if a.dt_max is not None else span / 10.0
        dt_min = a.dt_min if a.dt_min is not None else 1e-10 * span
        return cls(a.rtol, a.atol, min(max(sim.dt, dt_min), dt_max), dt_min, dt_max, span, a.objective_atol,
                   grow_min=a.grow_min, controller=a.controller or "pi", grow_after=a.grow_after,
                   keep_min=1.0 if a.keep_min is None else a.keep_min)


_COMPLETE = (LEVELS, LEVELS)             # Diagonal.known with q's and v's third differences
_F64 = np.dtype(np.float64)
_NONE = np.empty(0)                      # no measured noise (compiled/local_error.py's dqv)


class LocalError:
    """Weighted RMS norm of the estimated local error C h³ y''' of a step (module
    docstring), from the accepted states kept here (the last four) and the newest
    diagonal of their divided-difference table on y = (q, v) stacked
    (divided_differences.Diagonal): each candidate costs three new entries.

    Why updates: on the five-bar with the compiled Arnold–Brüls step (one numba call,
    ≈ 40 µs) recomputing the differences from the nodes, q and v apart, was ≈ 90 small
    numpy calls a step and the larger part of an adaptive step (benchmarks/README.md,
    "Adaptive overhead cut").  ``compiled`` (runs whose step is compiled): once the
    diagonal is complete, the update and the weighted ratios are one compiled call
    (compiled/local_error.py, the same operations: bitwise this path's numbers), ≈ 25
    numpy calls fewer a step ("Adaptive overhead: one compiled call"), and with ``ctl`` (a
    Controller; set by the loop when this norm alone decides: no quadrature, sensitivity
    or MPI verdict) the same call proposes the step after an acceptance, ``h_accept``
    (Controller.accepted; "Adaptive vs fixed: one call for estimate and controller"); a
    stepper that ``fuses_estimate`` (the compiled Arnold–Brüls and Newmark-family steps)
    computes that call inside its own step call (``request`` before the step, ``fused``;
    "Adaptive vs fixed: the fixed step's Python path").

    ``noise``: δq of the step just taken, per component or scalar (a callable of q1;
    newton_tol.AdaptiveNewton.noise), or None: Newton's scalar tolerance; ``noise_law``
    the same as (dqv, a, b) (AdaptiveNewton.noise_law) for the compiled call."""

    def __init__(self, adapt, C=1.0 / 12.0, newton_tol=(1e-12, 1e-12), v_gain=2.0, noise=None, noise_law=None,
                 compiled=False):
        self.rtol, self.atol, self.C = adapt.rtol, adapt.atol, C
        self.horizon = adapt.horizon
        self.ntol = newton_tol               # (atol_N, rtol_N) of Newton on q
        self.v_gain = v_gain                 # γ/β: δv = (γ/β) δq / h
        # δq of the step just taken, per component or scalar (newton_tol.AdaptiveNewton.noise);
        # None: Newton's scalar tolerance (steppers without the coupled test)
        self.noise = noise
        self.noise_law = noise_law
        self._kernel = self._S = self._buf = self._ws = self._cl = self._req = None
        self.ctl = None                      # a Controller: the compiled call proposes h_accept
        self.h_accept = None                 # its proposal for the last norm() call, or None
        if compiled:
            from ..compiled import local_error as cl
            self._kernel = cl.estimate_step
            S = np.zeros(cl.S_SIZE)          # the call's constants (compiled/local_error.py)
            S[[cl.S_ATOL, cl.S_RTOL, cl.S_HORIZON, cl.S_VPER, cl.S_GAIN, cl.S_VGAIN]] = \
                (adapt.atol, adapt.rtol, adapt.horizon, float(V_PER_STEP), NOISE_GAIN, v_gain)
            S[[cl.S_SAFETY, cl.S_KI, cl.S_KP, cl.S_FMIN, cl.S_FMAX, cl.S_GROW, cl.S_DTMAX, cl.S_DTMIN]] = \
                (SAFETY, K_I, K_P, FAC_MIN, FAC_MAX, adapt.grow_min, adapt.dt_max, adapt.dt_min)
            S[cl.S_KEEP] = adapt.keep_min
            self._S, self._buf, self._cl = S, None, cl
        self.floor_hits = 0                  # accepted steps where the floor was the larger weight of some component
        self.floor_decided = 0               # ... and those components carried more than half of the norm
        self._floor = (False, False)
        self.hist = []                       # (t, q, v) of the last accepted states
        self.v0a0 = None                     # (v_0, a_0) at t_0: confluent data
        self._diag = None                    # Diagonal of hist
        self._cand = None                    # (t1, q1, v1, Diagonal) of the last norm() call

    def start(self, t, x, initial):
        """A run from x at t (``initial``: x is x_0 with consistent v_0, a_0)."""
        self.t0 = t
        self.v0a0 = (np.asarray(x[1]), np.asarray(x[2])) if initial else None
        self.resume([(t, np.asarray(x[0]), np.asarray(x[1]))])

    def resume(self, hist):
        """The accepted states (t, q, v) of a resumed run (MarchState.hist; after
        ``start`` with its initial state): the table is rebuilt from them."""
        self.hist = list(hist)
        t, q, v = self.hist[0]
        confluent = self.v0a0 is not None and t == self.t0     # the nodes begin at t_0: its v_0, a_0
        d = Diagonal.start(t, q, v, self.v0a0 if confluent else None)
        for t, q, v in self.hist[1:]:
            d = d.push(t, q, v)
        self._diag, self._cand = d, None

    def accept(self, t, x):
        self.floor_hits += self._floor[0]
        self.floor_decided += self._floor[1]
        self._floor = (False, False)
        q, v = x[0], x[1]
        if type(q) is not np.ndarray or type(v) is not np.ndarray:
            q, v = np.asarray(q), np.asarray(v)
        self.hist.append((t, q, v))
        del self.hist[:-4]
        c, self._cand = self._cand, None
        self._diag = c[3] if c is not None and c[0] == t and c[1] is q and c[2] is v else self._diag.push(t, q, v)

    def request(self, t1, h):
        """Before a step to t1 of size h by a stepper that ``fuses_estimate`` (its
        ``estimate_into`` is ``fused()``, a compiled/local_error.Request): its ``args``, the
        compiled estimate's arguments, when that estimate applies to the step's result —
        the diagonal in the buffers B (so complete: _norm_compiled put it there) and the
        noise Newton's scalar law (a compiled step records no update; AdaptiveNewton.set_h
        has run) — else None, and ``norm`` computes it as without a request."""
        req, buf = self._req, self._buf
        req.out = None
        L = self._diag.levels
        cur = 0 if L is buf[0] else 1 if L is buf[1] else -1
        law = self.noise_law() if self.noise_law is not None else None if self.noise is not None else \
            (None, self.ntol[0], self.ntol[1])
        if cur < 0 or law is None or law[0] is not None:
            req.args = None
            return
        z, ep = self._diag.z, self.ctl.err_prev
        req.args = (self._ws, cur, z[-1], z[-2], z[-3], t1, self.C * h ** 3 * 6.0, law[1], law[2],
                    math.nan if ep is None else ep, len(self.hist) >= 4)

    def fused(self):
        """The Request a stepper that ``fuses_estimate`` is given as ``estimate_into`` (the
        loop calls ``request`` before each step), or None when the estimate is not
        compiled or does not propose the step (no ``ctl``)."""
        if self._kernel is None or self.ctl is None:
            return None
        if self._buf is None:
            self._buffers(2 * self._diag.n)
        if self._req is None:
            self._req = self._cl.Request()
        return self._req

    def _buffers(self, m):
        """The two 8 × m buffers of the compiled estimate, the current diagonal in one, the
        candidate's written to the other, and S: views of one array, the fused call's
        workspace (compiled/local_error.workspace)."""
        self._ws, B, self._S = self._cl.workspace(m, self._S)
        self._buf = (B[0], B[1])

    def norm(self, t1, x1, h):
        """‖e‖ of the step to (t1, x1); math.inf when x1 has a non-finite entry; None when
        there is no estimate yet (a run resumed from one state without its history: the
        first step is then taken at the stored h, which the interrupted run had accepted).

        y''' ≈ 3! y[z_{k−2}, …, z_{k+1}], the mean with y[z_{k−3}, …, z_k] once four states
        are kept (cancels a (−1)^k mode); on the first step (nodes t_0, t_0, t_0, t_1) only
        the positions' difference exists and the norm is theirs.  After a ``request`` the
        step's own compiled call may have computed it (the Request's ``out``)."""
        self.h_accept = None
        req = self._req
        if req is not None and req.out is not None:          # the step's call estimated (request)
            out, req.out = req.out, None
            return self._compiled_result(t1, x1, out[0], self._buf[1 - req.args[1]], out[1], out[2] != 0.0)
        d = self._diag
        if self._kernel is not None and d.known == _COMPLETE and 4 <= len(x1) <= 5:
            q1, v1, buf = x1[0], x1[1], self._buf
            if (type(q1) is np.ndarray and type(v1) is np.ndarray and q1.dtype == v1.dtype == _F64
                    and (buf is not None and (d.levels is buf[0] or d.levels is buf[1])    # float rows
                         or d.levels[0].dtype == _F64)):
                return self._norm_compiled(t1, x1, h)
        q1, v1 = np.asarray(x1[0]), np.asarray(x1[1])
        if not _finite(x1):
            return math.inf
        cand = self._diag.push(t1, q1, v1)
        self._cand = (t1, q1, v1, cand)
        d3, m = cand.third()
        if d3 is None:
            return None
        if len(self.hist) >= 4:
            d3 = 0.5 * (d3 + self._diag.levels[3])
        n = q1.shape[0]
        abs0, abs1 = self._diag.absy, cand.absy
        if m < d3.shape[0]:                                    # the first step: the positions alone
            d3, abs0, abs1 = d3[:m], abs0[:m], abs1[:m]
        e = self.C * h ** 3 * 6.0 * d3                    # C h³ y''', y''' ≈ 3! y[4 nodes]
        if self.noise is not None:                             # measured (newton_tol.py)
            dq = np.real(self.noise(q1))
        else:                                                  # Newton's scalar tolerance
            dq = self.ntol[0] + self.ntol[1] * float(cand.absy[:n].max())     # |q1|_max
        # per unit step: the step's share h/T of the tolerance (module docstring)
        share = h / self.horizon
        tol = self.atol + self.rtol * np.maximum(abs0, abs1)
        tol[:n] *= share
        noise = np.empty(m)
        noise[:n] = NOISE_GAIN * dq
        if m > n:
            if not V_PER_STEP:
                tol[n:] *= share
            noise[n:] = NOISE_GAIN * (self.v_gain * dq / h)
        over = noise > tol
        r = (e.real if e.dtype.kind == "c" else e) / (tol + noise)
        rq, rv = r[:n], r[n:]
        acc = float(rq @ rq)
        if m > n:
            acc += float(rv @ rv)
        floor_hit = bool(over.any())
        decided = False
        if floor_hit:
            rr = np.where(over, r * r, 0.0)
            acc_floor = float(np.sum(rr[:n]))
            if m > n:
                acc_floor += float(np.sum(rr[n:]))
            decided = acc_floor > 0.5 * acc
        self._floor = (floor_hit, decided)
        return math.sqrt(acc / m) if m else 0.0

    def _law(self, q1):
        """The noise as (dqv, a, b) (newton_tol.AdaptiveNewton.noise_law)."""
        if self.noise_law is not None:
            return self.noise_law()
        if self.noise is None:                                 # Newton's scalar tolerance
            return None, self.ntol[0], self.ntol[1]
        dq = np.real(self.noise(q1))                           # any other callable: its values
        return (np.ascontiguousarray(dq, dtype=float), 0.0, 0.0) if np.ndim(dq) else (None, float(dq), 0.0)

    def _norm_compiled(self, t1, x1, h):
        """``norm`` with the diagonal complete, in one compiled call (compiled/local_error.py):
        the same numbers.  The new Diagonal's levels are the first four rows of the array W
        the call writes (its |y| the fifth; r, tol, noise the next three): one of two
        buffers, the other holding the current diagonal's."""
        d = self._diag
        L, z = d.levels, d.z
        buf = self._buf
        if buf is not None and L is buf[0]:
            W = buf[1]
        elif buf is not None and L is buf[1]:
            W = buf[0]
        else:                                   # the first call (levels a list): P with |y| as row 4
            L = np.array([*L[:4], d.absy])
            if buf is None or buf[0].shape[1] != L.shape[1]:
                self._buffers(L.shape[1])
                buf = self._buf
            W = buf[0]
        q1 = x1[0]
        dqv, a, b = self._law(q1)
        ctl = self.ctl
        ep = math.nan if ctl is None or ctl.err_prev is None else ctl.err_prev
        S = self._S
        err = self._kernel(L, W, *x1[:4], x1[4] if len(x1) > 4 else _NONE, _NONE if dqv is None else dqv, S,
                           z[-1], z[-2], z[-3], t1, self.C * h ** 3 * 6.0, h, a, b, ep, len(self.hist) >= 4)
        return self._compiled_result(t1, x1, err, W, S.item(self._cl.S_HNEXT), S.item(self._cl.S_OVER) != 0.0)

    def _compiled_result(self, t1, x1, err, W, h_next, over):
        """``norm``'s result from the compiled estimate: ``err``, the new diagonal W, the
        proposed step and whether the noise exceeded some weight."""
        if err < 0.0:                                          # x1 has a non-finite entry
            return math.inf
        d = self._diag
        z = d.z
        S = self._S
        self._cand = (t1, x1[0], x1[1], Diagonal(z[1:] + [t1], W, d.known, d.n, W[4]))
        if self.ctl is not None:
            self.h_accept = h_next
            if self.ctl.ad.grow_after is not None:             # the PI factor before the hysteresis
                self.ctl.fac_pending = S.item(self._cl.S_FAC)
        decided = False
        if over:
            n = d.n
            r = W[5]
            rr = np.where(W[7] > W[6], r * r, 0.0)
            acc_floor = float(np.sum(rr[:n]))
            acc_floor += float(np.sum(rr[n:]))
            decided = acc_floor > 0.5 * S.item(self._cl.S_ACC)
        self._floor = (over, decided)
        return err


class Controller:
    """PI step-size controller (module docstring); with ``grow_after`` = n its hysteresis
    lets a growth through after n accepted steps in a row that all proposed one below
    ``grow_min`` (``run`` of them so far, ``run_min`` the smallest proposal; module
    docstring, "ratchet")."""

    def __init__(self, adapt):
        self.ad = adapt
        self.err_prev = None
        self.run, self.run_min = 0, 0.0       # grow_after: small growths proposed in a row, their minimum
        self.fac_pending = None               # grow_after: the compiled estimate's PI factor (LocalError)

    def after_accept(self, h, err):
        e = max(err, 1e-10)
        fac = SAFETY * e ** -K_I * (self.err_prev ** K_P if self.err_prev is not None else 1.0)
        fac = min(FAC_MAX, max(FAC_MIN, fac))
        fac = self._hysteresis(fac)
        self.err_prev = e
        return self._clip(h * fac)

    def _hysteresis(self, fac):
        """The factor an accepted step takes for the PI factor ``fac``: 1 (keep h) for a growth
        below grow_min (after ``grow_after`` such steps in a row, ``_release``) and for a
        shrink above ``keep_min`` (module docstring)."""
        ad = self.ad
        if 1.0 <= fac < ad.grow_min:        # no small increases
            return 1.0 if ad.grow_after is None else self._release(fac)
        if ad.grow_after is not None:
            self.run = 0
        return 1.0 if ad.keep_min < fac < 1.0 else fac     # no small decreases (keep_min < 1)

    def _release(self, fac):
        """The factor of an accepted step whose PI factor ``fac`` is a growth below grow_min,
        with ``grow_after`` = n: 1 (keep h) until n such steps in a row, then the smallest of
        their n factors — a growth each of them proposed (module docstring, "ratchet")."""
        self.run_min = fac if self.run == 0 else min(self.run_min, fac)
        self.run += 1
        if self.run < self.ad.grow_after:
            return 1.0
        self.run = 0
        return self.run_min

    def accepted(self, h, err, h_next):
        """``after_accept(h, err)`` whose result ``h_next`` the compiled estimate computed
        (LocalError.h_accept, or None: computed here).  With ``grow_after`` the compiled
        call's PI factor before the hysteresis (``fac_pending``, compiled/local_error.S_FAC:
        bitwise after_accept's) goes through the same release rule here."""
        if h_next is None:
            return self.after_accept(h, err)
        self.err_prev = max(err, 1e-10)
        if self.ad.grow_after is None:
            return h_next
        return self._clip(h * self._hysteresis(self.fac_pending))

    def rejected(self):
        """A rejected step ends a run of small growths (``grow_after``)."""
        self.run = 0

    def after_reject(self, h, err):
        fac = min(1.0, max(FAC_MIN, SAFETY * max(err, 1e-10) ** -K_REJECT))
        return self._clip(h * fac, floor=False)

    def _clip(self, h, floor=True):
        h = min(h, self.ad.dt_max)
        return max(h, self.ad.dt_min) if floor else h

    @staticmethod
    def of(adapt):
        """The controller ``adapt.controller`` names: this PI controller or a digital filter."""
        return Controller(adapt) if adapt.controller == "pi" else FilterController(adapt)

    def memory(self):
        """The history beyond ``err_prev`` a resumed run needs (MarchState.mem): none, or with
        ``grow_after`` the run of small growths and its smallest factor (``RUN_MEM`` floats)."""
        return () if self.ad.grow_after is None else (float(self.run), self.run_min)

    RUN_MEM = 2

    def restore(self, mem):
        if self.ad.grow_after is not None and len(mem) == self.RUN_MEM:
            self.run, self.run_min = int(mem[0]), float(mem[1])


class FilterController(Controller):
    """A digital filter of Söderlind's (``simulation.adapt.controller``; step_filter.py)
    proposes the step after an acceptance; rejections as the PI controller's, no
    hysteresis.  ``err_prev`` is kept (the compiled estimate's argument: its own PI
    proposal, ``h_next``, is not used here)."""

    MEM = 4                                  # the filter's history: c_{n−1}, c_{n−2}, ρ_{n−1}, ρ_{n−2}

    def __init__(self, adapt):
        super().__init__(adapt)
        self.filter = DigitalFilter(adapt.controller)

    def after_accept(self, h, err):
        rho = self.filter.ratio(err)
        self.err_prev = max(err, 1e-10)
        return self._clip(h * min(FAC_MAX, max(FAC_MIN, rho)))

    def accepted(self, h, err, h_next):
        return self.after_accept(h, err)

    def memory(self):
        return tuple(self.filter.mem)

    def restore(self, mem):
        if len(mem) == self.MEM:
            self.filter.mem = [float(m) for m in mem]


def memory_width(adapt):
    """Floats of the controller's history in MarchState.control (0: the PI controller's none;
    with ``grow_after`` its run, 2; a digital filter's, 4)."""
    if adapt is None:
        return 0
    if adapt.controller == "pi":
        return 0 if adapt.grow_after is None else Controller.RUN_MEM
    return FilterController.MEM


def newton_data(stepper):
    """(atol_N, rtol_N) of the stepper's Newton and its γ/β (module docstring)."""
    nt = getattr(stepper, "newton", None)
    nt = getattr(nt, "file", nt)          # newton_tol.AdaptiveNewton: the file's settings
    tol = (nt.atol, nt.rtol) if nt is not None and hasattr(nt, "atol") else (1e-12, 1e-12)
    return tol, getattr(stepper, "gamma", 0.5) / getattr(stepper, "beta", 0.25)


def error_constant(stepper):
    """C of the principal local error term C h³ y''' (module docstring)."""
    beta = getattr(stepper, "beta", 0.25)
    return max(abs(beta - 1.0 / 6.0), 1.0 / 12.0)


class MarchState:
    """The adaptive loop's state after an accepted step x_k — what a resumed run needs
    to take exactly the steps of an uninterrupted one (parmbs/checkpoint stores it
    with x_k):

    * ``h_next``: the step the PI controller proposed after step k;
    * ``err_prev``: ‖e‖ of step k (the controller's I-part memory; None before the
      first estimate);
    * ``hist``: (t_j, q_j, v_j) of the accepted states k−3 … k (LocalError's nodes;
      x_k itself last);
    * ``floor_hits``, ``rejected``: the counters reported at the end;
    * ``t_start``: t_0 of the whole run (the end-of-run sliver test and progress use
      the whole span, not the resumed part);
    * ``x0``: the initial state (its v_0, a_0 are the confluent data of the first
      estimates);
    * ``quad``: with error control on the objectives' quadratures (quad_error.py), the
      last three integrand values and ∫|f| dt (QuadratureError.pack), else None;
    * ``mem``: the controller's history beyond ``err_prev`` (Controller.memory; ``mem_width``
      floats: a digital filter's 4, the PI controller's 0, or 2 with ``grow_after``).

    ``march(adapt=…, state=s)`` keeps ``s`` current before every ``keep`` call; with
    ``s.hist`` set on entry it resumes from it instead of starting afresh."""

    def __init__(self, t_start=0.0, x0=None, mem_width=0):
        self.t_start, self.x0 = t_start, x0
        self.mem_width = mem_width
        self.mem = ()
        self.h_next = None
        self.err_prev = None
        self.hist = None
        self.floor_hits = 0
        self.rejected = 0
        self.quad = None

    def control(self):
        """(h_next, err_prev (NaN: none), floor_hits, rejected) as four floats, then ``mem``
        (``mem_width`` floats), then ``quad`` (if any)."""
        c = np.array([self.h_next, math.nan if self.err_prev is None else self.err_prev,
                      float(self.floor_hits), float(self.rejected), *self.mem])
        return c if self.quad is None else np.concatenate([c, self.quad])

    def restore(self, control, hist):
        """The state stored by ``control()`` and the history nodes (t, q, v)."""
        c = np.asarray(control, dtype=float)
        self.h_next = float(c[0])
        self.err_prev = None if math.isnan(c[1]) else float(c[1])
        self.floor_hits, self.rejected = int(c[2]), int(c[3])
        w = 4 + self.mem_width
        self.mem = tuple(float(m) for m in c[4:w])
        self.quad = c[w:].copy() if len(c) > w else None
        self.hist = [(float(t), np.asarray(q), np.asarray(v)) for t, q, v in hist]
        return self


def march(stepper, p, t_end, x, k0, t0, keep, *, dt=None, adapt=None, grid=None, guard=None,
          progress=None, h_prev=None, comm=None, state=None, quad=None, sens=None):
    """Advance x from step k0 at time t0 to t_end; ``keep(k, t, h_prev, x)`` is called for
    every accepted state x_k (k > k0) with h_prev = h_{k−1}.  The step sequence: ``adapt``
    (an Adapt: chosen here), else ``grid`` (a whole-run TimeGrid whose steps k0 … N are
    taken: fixed dt or a frozen replay), else fixed ``dt``.  Returns ((the TimeGrid —
    whole run for fixed/frozen, steps k0 … N for adaptive —, Newton iterations per
    accepted step), rejected steps).  ``comm`` (mpi4py, distributed runs): the accept/reject verdict is
    agreed by one allreduce so every rank takes the same step sequence.  ``quad`` (a
    quad_error.QuadratureError, adaptive runs): the objectives' quadratures join the
    error test (``simulation.adapt.objective_atol``).  ``sens`` (a
    sens_error.SensitivityError, adaptive runs): the forward sensitivities join it
    (``simulation.adapt.sensitivities``)."""
    if adapt is None:
        if grid is None:
            grid = TimeGrid.fixed(t0, dt, int(round((t_end - t0) / dt)))
        return _march_fixed(stepper, p, x, k0, grid, keep, guard, progress, quad), 0
    own = getattr(stepper, "march_adaptive", None)
    if own is not None:          # PETSc TSALPHA2: TSAdapt chooses the steps (integrators/ts_alpha2.py)
        return own(p, t_end, x, k0, t0, keep, adapt, guard, progress, state)
    return _march_adaptive(stepper, p, t_end, x, k0, t0, keep, adapt, guard, progress, h_prev, comm, state, quad,
                           sens)


def set_step(stepper, h, cap=None, newton=True):
    """The step size of the stepper's next step/tangent/adjoint call (steppers read
    ``self.h`` at every call); ``cap``: a further bound on Newton's last position
    update (newton_cap).  ``newton=False``: the call solves no Newton system (tangent and
    adjoint steps), so an adaptive run's Newton test (AdaptiveNewton.set_h) is left as it
    is — every forward step sets it again (≈ 1 µs of a five-bar adjoint step;
    benchmarks/README.md, "Adaptive vs fixed: the fixed step's Python path")."""
    stepper.h = h
    if not newton:
        return
    nt = getattr(stepper, "newton", None)
    if isinstance(nt, AdaptiveNewton):
        nt.set_h(h)
        if cap is not None:
            nt.limit(cap)


def newton_cap(quad, t, x, h):
    """Newton's bound from the objectives' quadrature test for the step of size h from x
    at t (quad_error.QuadratureError.newton_cap), or None (no ``quad``).  Every forward
    step of a run with ``simulation.adapt.objective_atol`` — adaptive, frozen replay,
    checkpoint recomputation — takes it, so they stop Newton alike."""
    return quad.newton_cap(t, x, h) if quad is not None else None


def _march_fixed(stepper, p, x, k0, grid, keep, guard, progress, quad=None):
    """Steps k0 … N of ``grid`` (fixed dt, or a frozen replay); returns (grid, Newton
    iterations of these steps).  A whole-run stepper that owns its time loop (PETSc
    TSALPHA2: integrators/ts_alpha2.py) takes the steps itself (``march_fixed``, same
    contract) — a checkpointed run then stores what it keeps."""
    own = getattr(stepper, "march_fixed", None)
    if own is not None:
        return own(p, x, k0, grid, keep, guard, progress)
    N = grid.steps
    its = np.zeros(N - k0, np.int64)
    for k in range(k0, N):
        set_step(stepper, grid.h[k], newton_cap(quad, grid.t[k], x, grid.h[k]))
        x, its[k - k0] = stepper.step(k, grid.t[k], x, p)
        x = rank_fault("forward", k + 1, x)           # test hook (parmbs/faults.py); off: x
        if guard is not None:
            guard.check(k + 1, grid.t[k + 1], x)      # exit 1 on a blown-up run (guard.py)
        keep(k + 1, grid.t[k + 1], grid.h[k], x)
        if progress:
            progress(k + 1, N)
    return grid, its


def march_ts(stepper, x, k0, keep, guard, progress, N, span=None):
    """The time loop of a PETSc TS run (integrators/ts.py, ts_alpha2.py): PETSc only takes
    the step, ``stepper.ts_step(k, x)`` one accepted TSStep (integrators/ts_steps.py; an
    adaptive run's rejected attempts stay inside it) returning (t_{k+1}, h_k, x_{k+1},
    Newton iterations), until ``stepper.ts_finished()``.  The guard, ``keep`` and progress
    are this loop's, as in the own steppers' loops: ``progress(k, N)``, with ``span`` =
    (t_0, t_end) of a variable step sequence the share of the time span in N parts.
    Returns the Newton iterations per step."""
    its = []
    k = k0
    while not stepper.ts_finished():
        t, h, x, it = stepper.ts_step(k, x)
        k += 1
        if guard is not None:
            guard.check(k, t, x[:4])                  # exit 1 on a blown-up run (guard.py)
        keep(k, t, h, x)
        its.append(it)
        if progress:
            progress(k if span is None else min(N, int(round(N * (t - span[0]) / (span[1] - span[0])))), N)
    return np.array(its, np.int64)


def _finite(x):
    """Every entry of every block of x finite: one dot per block (a non-finite entry makes
    it non-finite), the exact per-entry test only when some dot is not finite (an
    overflowing but finite block) — as guard.py's check."""
    return all(cmath.isfinite(np.dot(y, y)) for y in x) or all(np.all(np.isfinite(y)) for y in x)


def _probe(stepper, p, k, t, x, h, t_end):
    """(t + h, x_{k+1}) of one more step of h from a trial state, or None (past t_end, or
    Newton failed): the first step's quadrature estimate (quad_error.py).  The step size
    is unchanged, so nothing of the stepper's set-up differs from the step just taken."""
    if t + h > t_end:
        return None
    try:
        x2, _ = stepper.step(k, t, x, p)
    except StepError:
        return None
    return (t + h, x2) if all(np.all(np.isfinite(y)) for y in x2) else None


def _march_adaptive(stepper, p, t_end, x, k0, t0, keep, ad, guard, progress, h_prev, comm, state, quad=None,
                    sens=None):
    ntol, v_gain = newton_data(stepper)
    nt = getattr(stepper, "newton", None)
    an = isinstance(nt, AdaptiveNewton)
    est = LocalError(ad, error_constant(stepper), ntol, v_gain, noise=nt.noise if an else None,
                     noise_law=nt.noise_law if an else None,
                     compiled=getattr(stepper, "compiled", None) is not None)
    ctl = Controller.of(ad)
    if quad is None and sens is None and comm is None:     # the norm alone decides: the compiled call proposes h
        est.ctl = ctl
    rejected = 0
    if state is not None and state.hist is not None:      # resumed: the stored loop state
        est.start(state.t_start, state.x0, initial=True)
        est.resume(state.hist)
        est.floor_hits = state.floor_hits
        ctl.err_prev = state.err_prev
        ctl.restore(state.mem)
        h, rejected = state.h_next, state.rejected
        span = t_end - state.t_start
        if quad is not None:
            quad.unpack(state.quad, [t for t, *_ in state.hist])
    else:
        est.start(t0, x, initial=(k0 == 0))
        if quad is not None:
            quad.start(t0, x)
        if sens is not None:
            sens.start(t0, initial=(k0 == 0))
        h = ad.dt0 if h_prev is None else min(max(h_prev, ad.dt_min), ad.dt_max)
        span = t_end - (t0 if state is None else state.t_start)
    # the stepper's compiled call estimates too (one dispatch a step; LocalError.request):
    # when the norm alone decides and no test hook replaces the step's result
    req = est.fused() if getattr(stepper, "fuses_estimate", False) and not rank_fault.active else None
    fuse = req is not None
    if fuse:
        stepper.estimate_into = req
    try:
        return _adaptive_steps(stepper, p, t_end, x, k0, t0, keep, ad, guard, progress, comm, state, quad, sens,
                               est, ctl, h, rejected, span, fuse)
    finally:
        if fuse:
            stepper.estimate_into = None


def _adaptive_steps(stepper, p, t_end, x, k0, t0, keep, ad, guard, progress, comm, state, quad, sens, est, ctl, h,
                    rejected, span, fuse):
    """_march_adaptive's loop over steps."""
    T, H, its = [t0], [], []
    t, k = t0, k0
    t_start = t_end - span
    tiny = 1e-12 * max(abs(t_end), span)
    while t_end - t > tiny:
        last = t + 1.1 * h >= t_end - tiny          # no sliver of a step at the end
        hk = t_end - t if last else h
        t1 = t_end if last else t + hk
        set_step(stepper, hk, newton_cap(quad, t, x, hk))
        if fuse:
            est.request(t1, hk)
        try:
            x1, it = stepper.step(k, t, x, p)
            failed = None
        except StepError as e:                        # Newton failed: a smaller step
            x1, it, failed = None, 0, e
        if failed is None:
            x1 = rank_fault("forward", k + 1, x1)
            err = est.norm(t1, x1, hk)                # math.inf: a non-finite x1
            if quad is not None and err is not None and err < math.inf:
                eq = quad.norm(t1, x1, hk, lambda: _probe(stepper, p, k + 1, t1, x1, hk, t_end))
                # CVODES errconQ: the larger of the two norms
                err = err if eq is None else max(err, eq)
            if sens is not None and err is not None and err <= 1.0:
                es = sens.norm(t, x, t1, x1, hk)      # CVODES errconS: the largest of the norms
                err = err if es is None else max(err, es)
        else:
            err = math.inf
        if comm is not None:
            from mpi4py import MPI
            err = comm.allreduce(err if err is not None else -1.0, op=MPI.MAX)
            err = None if err < 0 else err
        if err is not None and not err <= 1.0:
            rejected += 1
            h = hk * NEWTON_FAIL_FACTOR if failed is not None or not math.isfinite(err) else \
                ctl.after_reject(hk, err)
            ctl.rejected()
            if h < ad.dt_min:
                why = f"Newton failed ({failed})" if failed is not None else f"local error {err:.3g} x the tolerance"
                raise StepSizeError(f"step {k + 1} (t = {t:.6g}): the step size fell below dt_min = {ad.dt_min:.3g} s "
                                    f"({why}); loosen simulation.adapt.rtol/atol or lower dt_min")
            continue
        x = x1
        if guard is not None:
            guard.h = hk
            guard.check(k + 1, t1, x, finite=True)     # est.norm rejected a non-finite x1
        est.accept(t1, x)
        if quad is not None:
            quad.accept()
        if sens is not None:
            sens.accept(t1)
        k, t = k + 1, t1
        T.append(t)
        H.append(hk)
        its.append(it)
        h = ctl.accepted(hk, err if err is not None else 1.0, est.h_accept)
        if state is not None:
            state.h_next, state.err_prev, state.hist = h, ctl.err_prev, est.hist
            state.mem = ctl.memory()
            state.floor_hits, state.rejected = est.floor_hits, rejected
            state.quad = quad.pack() if quad is not None else None
        keep(k, t, hk, x)
        if progress:
            progress(max(1, min(999, int(1000 * (t - t_start) / span))) if t < t_end else 1000, 1000)
    return (TimeGrid(np.array(T), np.array(H), est.floor_hits, est.floor_decided), np.array(its, np.int64)), rejected
