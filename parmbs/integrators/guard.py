"""Instability guard of fixed-step runs: stop a run whose numbers cannot be vouched for.

Why.  The trapezoidal rule (Newmark β = ¼, γ = ½) applied to the index-3 equations
M a + Φ_qᵀλ = Q, Φ = 0 has no numerical damping: its amplification matrix has a double
eigenvalue −1 on the algebraic (a, λ) components, so a perturbation of the
accelerations and multipliers comes back with alternating sign every step — a (−1)ᵏ
mode that is undamped in the linear case and grows under nonlinear coupling and
round-off (Arnold & Brüls, Multibody Syst. Dyn. 18 (2007) 185–202, §3; Hairer & Wanner,
Solving ODEs II, §VII.3 on Runge–Kutta/trapezoidal methods for index-3 problems; the
seed-001 digest on generalized-α).  Positions converge while a and λ turn into noise
and finally into a blow-up (the double pendulum at 45°: tip speed 1.6e20, exit 0).
The same (−1)ᵏ signature precedes the nonlinear (energy) blow-up of stiff elastic
models under the trapezoidal rule (the flexible pendulum: Newton failure at 3.817 s).
Generalized-α with ρ∞ < 1 damps the mode (amplification ρ∞ at the Nyquist frequency).

What is monitored (O(n) per step, two previous accelerations kept):

* non-finite q, v, a or λ: stop at once;
* the Nyquist ((−1)ᵏ) part of the accelerations against their smooth part,

      N_k = ‖a_{k+1} − 2a_k + a_{k−1}‖∞ / 4,    S_k = ‖a_{k+1} + 2a_k + a_{k−1}‖∞ / 4,

  (for a_k = c(−1)ᵏ: N = |c|, S = 0; for a smooth a: N ≈ h²‖ä‖/4 ≪ S).  With N̂_k the
  median of the last W values of N (persistence), S*_k the largest S so far and N₀ the
  largest N̂ of the first W steps after the window filled (the level the run starts
  with), the run stops when both

      N̂_k > THETA · max(S*_k, N_FLOOR)      (the mode is a sizeable part of a)
      N̂_k > GROWTH · N₀                      (and it grew: not a bounded mode)

  Only a: in the index-3 schemes the mode lives in a and λ together (M a + Φ_qᵀλ = Q
  couples them), and a has a floor from the Newton tolerance (below) while λ of an
  unloaded joint has none.

THETA = 0.25.  A resolved component a = A cos ωt sampled at step h has N/S = tan²(ωh/2)
(exact for the sampled cosine); 0.25 is tan(ωh/2) = ½, ωh = 0.93, fewer than 6.8 steps
per period of a component as large as the largest acceleration of the run — one the
second-order schemes already get wrong by ~(ωh)²/12 ≈ 7 % in phase per period.

GROWTH = 10.  A *bounded* alternating mode also exceeds THETA: the trapezoidal rule maps
an unresolved stiff mode (ωh ≫ 1) to tan(ω̃h/2) = ωh/2, near the Nyquist frequency,
with its amplitude conserved (tests/test_dynamics.py's oscillator at ωh = 5: N/S ≈ 6).
Such a mode is present from its excitation on and keeps (trapezoidal, |ρ| = 1) or
loses (generalized-α, |ρ| = ρ∞ < 1 per step) its amplitude, so N̂/N₀ stays ≈ 1 up to
the median's fluctuation; the unstable modes grow by orders of magnitude (ratios
below), so ten times the start level separates them by a wide margin on both sides.

Measured (trapezoidal, dt = 1e-3; N̂ first above THETA·S*): double pendulum at 45°
(the shipped file) t = 4.1 s, N̂/N₀ ≈ 1e5 — its Newton fails near 6.6 s, the run that
continues returns a tip speed of 1.6e20; at 30° t ≈ 9.1 s, ×1e4; the four-bar with its
constant-speed driver grows linearly (1.5e-3 per step), t ≈ 0.25 s; the flexible pendulum
of the verify Taylor run (ε = 1e-2, Newton fails at t = 3.817 s) ≈ 3.7 s, N̂ from ≈ 5
to > 1e4.  Stable runs: flexible pendulum nominal N̂/S* ≤ 0.03; double pendulum with
generalized-α (ρ∞ = 0.9) ≈ 1e-5.  W = 8: an impact or a switched load changes Δ²a over
at most 3 consecutive steps (a one-step spike), fewer than half the window, so the
median ignores it; a growing mode is caught W/2 steps late, negligible against its
growth time (≈ 500 steps per decade on the double pendulum).

* the energy of a closed model (no driver — no constraint with ∂Φ/∂t —, no applied
  load: every force element has a potential or is inertial, dampers only dissipate;
  gyroscopic and Euler-parameter regularisation forces do no work): every
  ENERGY_EVERY steps, E = Σ (kinetic + potential) of the elements (StateEval.energy)
  against E₀ of the first state; the run stops when

      E_k − E₀ > max(ENERGY_GAIN · T*_k, ENERGY_FLOOR · A*_k),

  T*_k the largest kinetic energy so far, A*_k the largest Σ|E_element| (the size of
  the terms E sums).  ENERGY_FLOOR = 1e-8 ≈ √ε: E is a sum of terms of size A* with
  round-off ~ 1e-15 A* and a Newton error ~ rtol = 1e-12 relative; a model at rest
  (T* → 0, an optimum of the five-bar: T* = 1.7e-17 J, E − E₀ = 7e-15 J of 10 J terms)
  must not stop on that noise.

  The exact motion keeps E = E₀ and dampers lower it; the trapezoidal rule conserves E
  of linear models exactly and of nonlinear ones to O(h²) with a bounded oscillation,
  generalized-α dissipates (Chung–Hulbert; Krenk, "Energy conservation in Newmark
  based time integration algorithms", CMAME 195 (2006)).  A *gain* of a tenth of the
  largest kinetic energy is the numerical scheme feeding the motion — the nonlinear
  instability of undamped implicit schemes on stiff elastic models (Kuhl & Crisfield,
  IJNME 45 (1999); Simo & Tarnow, ZAMP 43 (1992)) that the flexible pendulum shows
  before Newton fails.  Measured: that run's gain reaches 0.1 T* at t ≈ 3.1 s (Newton
  fails at 3.817 s); the nominal flexible pendulum and the trapezoidal double pendulum
  (energy drift ≤ 1e-4 over 10 s, tests/test_dynamics.py) stay ≥ 10× below.  The
  alternating-mode test above does not see that run early: its smooth accelerations
  grow with the alternating part (N̂/S* ≤ 0.15 up to the failure).

N_FLOOR: Newton stops when the position update βh²‖Δa‖ is ≤ atol + rtol‖q‖∞
(newmark.newton_acceleration_form), so the accelerations carry an error up to
(atol + rtol‖q‖∞)/(βh²) that may alternate; the floor is 10× that (β = ¼), so a model
at rest (S ≈ 0) never fires on Newton's own noise.

``simulation.guard = false`` switches the monitor off (non-finite states still stop the
run: a NaN is never a result).  The guard only stops runs; it never changes a number,
so gradients and checkpoints are unaffected.  After a checkpoint resume the window
restarts at the resume step (the first W steps there are not checked).
"""
import cmath
from collections import deque

import numpy as np

from ..model.component import Constraint, Force
from .newmark import StepError

#: the alternating part must exceed this fraction of the largest smooth acceleration (estimate above)
THETA = 0.25
#: ... as the median of this many consecutive steps (an isolated impact spans ≤ 3)
WINDOW = 8
#: ... and grew by this factor over its level at the start (a bounded mode keeps ≈ 1)
GROWTH = 10.0
#: energy gain limit, in units of the largest kinetic energy so far (closed models; estimate above)
ENERGY_GAIN = 0.1
#: ... and of the size of the energy terms (round-off and Newton noise of E; estimate above)
ENERGY_FLOOR = 1e-8
#: the energy is evaluated every this many steps (O(n) each, ~ one residual evaluation)
ENERGY_EVERY = 10
#: forces without a potential that do no work (Euler-parameter bodies, spatial/bodies.py)
ZERO_POWER = ("SpatialGyroscopic", "EulerRegularization")
#: the arrays the compiled monitor takes (compiled/monitor.py); other dtypes take the numpy path
F64 = np.dtype(np.float64)
#: acceleration floor in units of Newton's acceleration resolution (atol + rtol‖q‖)/(βh²)
FLOOR_FACTOR = 10.0


class InstabilityError(StepError):
    """The guard stopped the run (exit 1; the message names step, time, what grew and what to change)."""


def closed(system):
    """True when no element feeds energy into the model (the energy test applies): no
    rheonomic constraint (a class overriding Constraint.phi_t), and every force class
    has a potential/kinetic energy (dampers of those classes only dissipate) or is one
    of ZERO_POWER.  Applied loads (``force``, ``torque``) have none: not closed."""
    if system is None:
        return False
    if any(type(g).phi_t is not Constraint.phi_t for g in system.constraints):
        return False
    return all(type(g).energy is not Force.energy or type(g).__name__ in ZERO_POWER for g in system.forces)


def advice(sim):
    """What to change, for the integrator of ``sim`` (one clause)."""
    integ = getattr(sim, "integrator", "")
    if integ in ("trapezoidal", "newmark"):
        if getattr(sim, "stabilization", "none") == "ggl":
            return 'use integrator = "genalpha" with rho_inf = 0.9 (numerically damped) or a smaller dt'
        # the index-2 (GGL) form removes the index-3 rule's growing (−1)ᵏ mode (integrators/ggl.py)
        return ('use integrator = "genalpha" with rho_inf = 0.9 (numerically damped), stabilization = "ggl" '
                '(index 2) or a smaller dt')
    if integ in ("genalpha", "hht", "wbz", "ts-alpha2") and getattr(sim, "rho_inf", 0.0) >= 0.95:
        return f"lower rho_inf (now {sim.rho_inf:g}; 0.8 damps more) or use a smaller dt"
    return "use a smaller dt"


def _MPI_MAX():
    from mpi4py import MPI
    return MPI.MAX


def _first_non_finite(blocks, start=0):
    """Index of the first non-finite block from ``start`` on (−1: none).  One dot per
    block (a non-finite entry makes it non-finite); the exact O(n) test runs only then,
    so an overflowing but finite dot never stops a run."""
    if all(cmath.isfinite(np.dot(y, y)) for y in blocks[start:]):
        return -1
    return next((i for i in range(start, len(blocks)) if not np.all(np.isfinite(blocks[i]))), -1)


class Guard:
    """Per-run monitor: ``start(k, t, x, p)`` at the first state of the loop (initial or resumed),
    ``check(k, t, x)`` after each step; raises InstabilityError.  ``enabled = False`` keeps
    only the non-finite check."""

    def __init__(self, sim, system=None, enabled=None, comm=None):
        """``comm``: the (mpi4py) communicator of a distributed run.  Every rank holds the
        whole state, so the instability tests below see the same numbers and decide alike;
        only a non-finite value can be local to one rank (a fault on its copy), so that
        verdict is agreed by one allreduce per step — every rank then raises together and
        no rank is left waiting in the next collective solve."""
        self.sim, self.sys = sim, system
        self.comm = comm if comm is not None and comm.Get_size() > 1 else None
        self.enabled = getattr(sim, "guard", True) if enabled is None else enabled
        self.closed = closed(system)
        nt = sim.newton
        self.h = sim.dt
        self.tol = (nt.atol, nt.rtol)
        self.alternating = True   # the (−1)^k monitor (equal steps only; off for adaptive runs)
        self._monitor = None      # compiled/monitor.monitor once use_compiled()
        self.start(0, 0.0, None)

    def use_compiled(self):
        """Take the per-step numbers from one compiled call (compiled/monitor.py): for runs
        whose step is compiled, so numba is importable and its cache usable."""
        from ..compiled.monitor import monitor
        self._monitor = monitor

    def start(self, k, t, x, p=None):
        """Reset at the loop's first state x_k at t_k (p: the run's parameters, for the energy)."""
        self.a1 = self.a0 = None           # a_{k−1}, a_k
        self.smax = 0.0
        self.peak = 0.0                    # largest N̂ / scale seen (tests, benchmarks)
        self.growth = 0.0                  # largest N̂ / N₀ seen
        self.n0 = 0.0                      # N₀: the level of the first WINDOW medians
        self.nbase = 0                     # medians counted into N₀
        self.recent = deque(maxlen=WINDOW)
        self.p, self.k0 = p, k
        self.e0 = None                     # E₀ (closed models), T*, largest gain / T*
        self.tmax = self.egain = self.eabs = 0.0
        self._egroups = None
        if x is not None:
            self.a0 = np.asarray(x[2])
            if self.enabled and self.closed and p is not None:
                self.e0, self.tmax, self.eabs = self._energy(t, x)

    def _energy(self, t, x):
        """(E, T, A): total and kinetic energy of state x, Σ|E_element|.

        The force groups with an energy and their parameters are gathered once per run
        (p is the run's), each evaluation indexes q, v per group: the same local arrays
        and sums as a StateEval's force tuples, without building its evaluation plan
        (~200 µs of a 5-group model's 220 µs per call)."""
        if self._egroups is None:
            self._egroups = [(g, self.p[g.pidx]) for g in self.sys.forces if type(g).energy is not Force.energy]
        q, v = x[0], x[1]
        if np.shape(q) == np.shape(v) and np.asarray(q).dtype == np.asarray(v).dtype:
            qe, ve = self.sys.extend(np.stack([q, v]))
        else:
            qe, ve = self.sys.extend(q), self.sys.extend(v)
        E = T = A = 0.0
        for g, p in self._egroups:
            eg = np.real(g.energy(t, qe[g.qidx], ve[g.qidx], p))
            e = float(np.sum(eg))
            E += e
            T += e if g.inertial else 0.0
            A += float(np.sum(np.abs(eg)))
        return E, T, A

    def _stop(self, k, t, what):
        raise InstabilityError(f"step {k} (t = {t:.6g}): unstable run: {what}; {advice(self.sim)} "
                               f"(simulation.guard = false switches this check off)")

    def check(self, k, t, x, finite=False):
        """x = x_k (q, v, a, λ) at t_k, after step k.  ``finite``: the caller has already
        found every block of x finite (the adaptive loop: LocalError.norm rejects a
        candidate with a non-finite entry, on every rank through the loop's allreduce of
        the error) — with the (−1)ᵏ monitor off (unequal steps) nothing per step is then
        left but the energy test: not the compiled call whose non-finite test was the
        estimate's again and whose N, S go unused (≈ 6 µs of a five-bar step;
        benchmarks/README.md, "Adaptive vs fixed: the fixed step's Python path").

        The per-step numbers — a non-finite block, the alternating and smooth parts N, S
        of the accelerations, ‖q‖∞ — come from one compiled call when the model's step is
        compiled (compiled/monitor.py, ``use_compiled``), else from a few numpy calls:
        one dot per block for the non-finite test (a non-finite entry makes it
        non-finite; the exact per-block test runs only then, so an overflowing but finite
        dot never stops a run), Δ²a and the smooth part sharing 2a_k.  Both compute the
        same operations in the same order: the same numbers.  The median of the window
        is that of a sorted list (the value np.median gives: the middle element, or the
        mean of the middle two).  benchmarks/README.md, "instability guard"."""
        if finite and not self.alternating:
            if self.enabled and self.e0 is not None and (k - self.k0) % ENERGY_EVERY == 0:
                self._check_energy(k, t, x)
            return
        a0, a1 = self.a0, self.a1
        a = x[2]
        nums = None
        if self._monitor is not None and len(x) >= 4 and all(y.dtype == F64 for y in x):
            bad, *nums = self._monitor(x[0], x[1], a, x[3], a if a0 is None else a0, a if a1 is None else a1)
            if bad < 0 and len(x) > 4:          # a stepper's trailing blocks (Arnold–Brüls pseudo-accelerations)
                bad = _first_non_finite(x, 4)
        else:
            bad = _first_non_finite(x)
        if self.comm is not None:
            bad = self.comm.allreduce(bad, op=_MPI_MAX())
        if bad >= 0:
            name = ("q", "v", "a", "lambda")[bad] if bad < 4 else f"state block {bad}"
            raise InstabilityError(f"step {k} (t = {t:.6g}): unstable run: non-finite {name} "
                                   f"(the run blew up); {advice(self.sim)}")
        if not self.enabled:
            return
        if self.e0 is not None and (k - self.k0) % ENERGY_EVERY == 0:
            self._check_energy(k, t, x)
        a = np.asarray(a)
        self.a1, self.a0 = a0, a.copy()
        if a1 is None or a.size == 0 or not self.alternating:
            return
        if nums is not None:
            nyq, smooth, qmax = nums
        else:
            a2 = 2.0 * a0
            d = a - a2
            d += a1                             # a − 2a_k + a_{k−1}, in that order
            sm = a + a2
            sm += a1
            nyq = 0.25 * float(np.abs(d).max())
            smooth = 0.25 * float(np.abs(sm).max())
            qmax = None
        if smooth > self.smax:
            self.smax = smooth
        self.recent.append(nyq)
        if len(self.recent) < WINDOW:
            return
        w = sorted(self.recent)
        h = WINDOW // 2
        med = w[h] if WINDOW % 2 else (w[h - 1] + w[h]) / 2.0
        if self.nbase < WINDOW:             # the start level N₀
            self.n0 = max(self.n0, med)
            self.nbase += 1
            return
        atol, rtol = self.tol
        if qmax is None:
            qmax = float(np.abs(x[0]).max())
        floor = FLOOR_FACTOR * (atol + rtol * qmax) / (0.25 * self.h * self.h)
        scale = max(self.smax, floor)
        self.peak = max(self.peak, med / scale)
        self.growth = max(self.growth, med / self.n0 if self.n0 > 0 else np.inf)
        if med > THETA * scale and med > GROWTH * self.n0:
            grew = f"{med / self.n0:.3g} x its level at the start" if self.n0 > 0 else "from 0 at the start"
            self._stop(k, t, f"the alternating (-1)^k part of the accelerations grew to {med:.3g} "
                             f"({grew}), "
                             f"{med / scale:.2f} x their largest smooth value {scale:.3g} (limit {THETA:g})")

    def _check_energy(self, k, t, x):
        E, T, A = self._energy(t, x)
        self.tmax, self.eabs = max(self.tmax, T), max(self.eabs, A)
        if self.tmax <= 0.0:
            return
        gain = (E - self.e0) / self.tmax
        self.egain = max(self.egain, gain)
        if gain > ENERGY_GAIN and E - self.e0 > ENERGY_FLOOR * self.eabs:
            self._stop(k, t, f"the energy of this model without energy input grew by {E - self.e0:.3g}, "
                             f"{gain:.2f} x its largest kinetic energy {self.tmax:.3g} (limit {ENERGY_GAIN:g})")
