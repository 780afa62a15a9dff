"""Error control on the objectives' quadratures (``simulation.adapt.objective_atol``).

Why: the error test of timeloop.LocalError controls positions and velocities.  An
integral objective ψ_o = ∫ f_o(t, x) dt is summed with the trapezoidal weights of the
accepted grid (TimeGrid.weights), and where f_o reads accelerations (ψ = ∫ z̈² on the
Iltis) it varies much faster than q: on the Iltis' 0.04 s case at rtol 1e-6 the
trapezoidal quadrature of the (accurately computed) integrand was 9.4e-5 of ψ off, the
integrand itself 1.1e-5 (benchmarks/README.md, "Quadrature error control") — the
tolerance was not honoured although q and v were.

What: the running integrals Q_o(t) = ∫_{t_0}^t f_o dt join the local error test, as
CVODES does with quadrature variables when ``errconQ`` is set (``CVodeSetQuadErrCon``;
Hindmarsh et al., ACM TOMS 31:363, 2005; Serban & Hindmarsh, CVODES guide §4.7.5): the
error norm of a step is max(‖e_state‖, ‖e_Q‖), each a weighted RMS norm (CVODES
cvodes.c, ``cvQuadUpdateNorm``: "updates the norm old_nrm to account for all
quadratures" by taking the larger).

* Estimate: Q is integrated by the trapezoidal rule, whose local error on [t_k, t_{k+1}]
  is −h³/12 f''(ξ) (the trapezoidal rule's remainder; Hairer, Nørsett & Wanner I,
  §II.1); f'' ≈ 2 f[t_{k−1}, t_k, t_{k+1}] (second divided difference of the accepted
  integrand values and the new one).  With four nodes the mean of the last two
  differences is taken, which cancels a (−1)^k component (as LocalError's y''').  The
  first step has no second node before it (and f'(t_0) is not known): there the step is
  probed — one more step of the same h is taken from the trial state and discarded —
  and f'' ≈ 2 f[t_0, t_1, t_2] (without it the five-bar's first step of 10 ms, accepted
  by the state test, left ψ3 = ∫|r̈|² 3e-4 off).
* Weight, per unit step like the positions: the step's share of rtol times the larger
  of the step's own increment scale ½(|f_k| + |f_{k+1}|) and the mean |f| so far,
  S_{k+1}/(t_{k+1} − t_0) with S = ∫|f| dt (trapezoidal), plus ``objective_atol`` h/T:

      sc = rtol · h · max(½(|f_k| + |f_{k+1}|), S_{k+1}/(t_{k+1} − t_0)) + objective_atol · h/T.

  Summed over the accepted steps the allowed errors are ≤ rtol (∫|f| + ∫ S(t)/(t − t_0)
  dt) + objective_atol, and ∫ S/(t − t_0) dt ≤ ∫|f| dt · (1 + ln(T/τ)) for an integrand
  that starts mattering at τ: the global quadrature error is a few rtol ∫|f| (rtol ψ for
  f ≥ 0).  The running mean keeps the weight away from zero where f crosses zero (z̈² has
  double zeros); ``objective_atol`` (in ψ's units) is the floor where f ≈ 0 since t_0,
  which no relative scale can give (CVODES requires an absolute tolerance on its
  quadratures for the same reason).
* Noise: an index-3 scheme's accelerations carry its Newton/round-off position noise δq
  amplified by 1/(βh²) (and velocities by (γ/β)/h), so an acceleration integrand is
  noisy by δf = |∂f/∂q|·δq + |∂f/∂v|·(γ/β)δq/h + |∂f/∂a|·δq/(βh²) (δq measured per
  component: newton_tol.AdaptiveNewton.noise; ∂f from the objective's ``grads``).  The
  estimate turns δf into at most h δf/3 (2 f[·,·,·] ≤ 4δf/h², times h³/6; h δf/6 for the
  mean of two), so the weight gets + h δf, keeping the noise's share ≤ ⅓, as
  LocalError's tol + 2δ (computed only when the norm without it exceeds 1 — it can only
  enlarge the weights — and on the first step; it costs a gradient of each integrand): without it the Iltis' first steps chased their own noise (at
  h ≈ 1e-5 s the round-off 4ε|q| is already 1e-4 of z̈²; the step fell below dt_min).
  Multipliers' noise is not modelled (∂f/∂λ left out: no scale for δλ here).
* Newton: the noise allowance above is only as honest as δq.  With Newton stopped by
  the state test alone, δq (its bound, κ/2 of the position weight) made h δf 20–300× the
  rtol part of the weight over the Iltis' first 20 ms (0.04 s case, rtol 1e-6), and the
  steps accepted quadrature errors of that size — which the estimate had measured
  correctly (its window sums within ~20 % of the true local errors against a converged
  reference; benchmarks/README.md, "Iltis: where the remaining error was").  So Newton's
  stopping test is tied to these weights too, as newton_tol ties it to the state's:
  ``newton_cap(t, x, h)`` is the δq with h·δf(δq) = κ (rtol·h·|f(x)| + objective_atol·h/T)
  at the state x the step starts from (κ = 0.1, Hairer & Wanner II §IV.8; CVODE), and
  every forward step of such a run — adaptive, frozen replay, checkpoint recomputation —
  passes it to AdaptiveNewton.limit (timeloop.newton_cap), so replays recompute the
  same states bit for bit.  Where it lies below round-off Newton stops by its stall
  test and δq is the measured round-off.

What it does not change: the integrand values, the weights of ψ, the sweeps.  It only
chooses the step sequence, which the sensitivities freeze (timeloop module docstring),
so direct = adjoint = FD on the frozen mesh hold as before.  A resumed run restores the
last three integrand values and S from the checkpoint (``pack``/``unpack``: the extra
columns of the stored loop state, MarchState.control)."""
from __future__ import annotations

import math

import numpy as np

from .newton_tol import KAPPA


#: the alternating part of the two second differences enters the weight with this factor
ALT_GAIN = 3.0


class QuadratureError:
    """Weighted RMS norm of the trapezoidal quadrature's local error of the objectives'
    integrals (module docstring).  ``f(t, x)`` gives the weighted integrand values
    (one per integral objective) at an accepted or trial state."""

    def __init__(self, f, nq, rtol, atol_q, horizon, t_start, noise=None, unit_noise=None):
        self.f, self.nq = f, nq
        self.noise = noise                   # noise(t, x, h) → δf per objective (module docstring), or None
        # unit_noise(t, x) → g(h): δf per objective of a unit position noise δq = 1 on every
        # component at step h (newton_cap), or None
        self.unit_noise = unit_noise
        self.rtol, self.atol_q, self.horizon, self.t_start = rtol, atol_q, horizon, t_start
        self.hist = []                       # (t, f) of the last three accepted states
        self.S = np.zeros(nq)                # ∫|f| dt up to the last accepted state
        self._new = None                     # (t, f, S) of the step under test
        self._last = None                    # (t, x, f) of the last state norm() evaluated

    def start(self, t, x):
        self.hist = [(t, self._values(t, x))]
        self.S = np.zeros(self.nq)

    def _values(self, t, x):
        return np.real(np.asarray(self.f(t, x))).astype(float)

    def norm(self, t1, x1, h, probe=None):
        """‖e_Q‖ of the step to (t1, x1); ``probe()`` → (t2, x2), one more step of h
        from x1, or None: used for the first step (module docstring).  None without an
        estimate."""
        f1 = self._values(t1, x1)
        self._last = (t1, x1, f1)
        t0, f0 = self.hist[-1]
        S1 = self.S + 0.5 * h * (np.abs(f0) + np.abs(f1))
        self._new = (t1, f1, S1)
        z = [t for t, _ in self.hist] + [t1]
        y = [f for _, f in self.hist] + [f1]
        dn = None                                    # the noise: only when needed (below)
        if len(self.hist) < 2:
            dn = self._noise(t1, x1, h)              # before the probe step overwrites Newton's record
            nxt = probe() if probe is not None else None
            if nxt is None:
                return None
            z.append(nxt[0])
            y.append(self._values(*nxt))
        d2 = _dd2(z[-3:], y[-3:]) if len(self.hist) >= 2 else _dd2(z, y)
        alt = 0.0
        if len(z) >= 4:                              # mean of the last two: cancels a (−1)^k mode
            d2b = _dd2(z[-4:-1], y[-4:-1])
            d2, alt = 0.5 * (d2 + d2b), 0.5 * np.abs(d2 - d2b)
        e = h ** 3 / 12.0 * 2.0 * d2                 # trapezoidal remainder h³/12 f''
        span = t1 - self.t_start
        scale = np.maximum(0.5 * (np.abs(f0) + np.abs(f1)), S1 / span if span > 0 else 0.0)
        sc = self.rtol * h * scale + self.atol_q * h / self.horizon + ALT_GAIN * h ** 3 / 6.0 * alt
        nrm = _wrms(e, sc if dn is None else sc + h * dn)
        if dn is None and nrm > 1.0 and self.noise is not None:
            nrm = _wrms(e, sc + h * self._noise(t1, x1, h))
        return nrm

    def _noise(self, t1, x1, h):
        return np.real(np.asarray(self.noise(t1, x1, h), dtype=float)) if self.noise is not None else 0.0

    def accept(self):
        t1, f1, S1 = self._new
        self.hist.append((t1, f1))
        del self.hist[:-3]
        self.S = S1
        self._new = None

    def newton_cap(self, t, x, h):
        """The largest Newton position update δq (every component) of the step of size h
        from the accepted state x at t whose acceleration noise h·δf stays below κ of the
        weight rtol·h·|f(x)| + objective_atol·h/T (module docstring, "Newton"); None
        without ``unit_noise``.  A function of (t, x, h) only, so a replay of the step
        sequence (checkpoint recomputation, frozen runs: timeloop.newton_cap) stops Newton
        where the forward run did and recomputes its states bit for bit."""
        if self.unit_noise is None:
            return None
        g = np.real(np.asarray(self.unit_noise(t, x)(h), dtype=float))
        c = self._last                       # the accepted state's values from norm(), if it is x
        f = c[2] if c is not None and c[0] == t and c[1] is x else self._values(t, x)
        sc = self.rtol * h * np.abs(f) + self.atol_q * h / self.horizon
        ok = g > 0
        return float(np.min(KAPPA * sc[ok] / (h * g[ok]))) if np.any(ok) else None

    # -- restart (MarchState.control's extra columns) ------------------------------------
    def pack(self):
        """(f_{k−2}, f_{k−1}, f_k, S_k) flattened, NaN where a node is missing; the times
        are those of the stored estimator history (MarchState.hist)."""
        out = np.full(4 * self.nq, np.nan)
        for j, (_, f) in enumerate(self.hist[-3:][::-1]):     # f_k first
            out[(2 - j) * self.nq:(3 - j) * self.nq] = f
        out[3 * self.nq:] = self.S
        return out

    def unpack(self, extra, times):
        """Restore from ``pack()``'s columns and the times t_{k−2}, t_{k−1}, t_k of the
        accepted states (the last three of MarchState.hist)."""
        extra = np.asarray(extra, dtype=float)
        self.hist = []
        for j, t in enumerate(times[-3:][::-1]):
            f = extra[(2 - j) * self.nq:(3 - j) * self.nq]
            if np.all(np.isnan(f)):
                break
            self.hist.insert(0, (t, f.copy()))
        self.S = extra[3 * self.nq:].copy()


def _wrms(e, sc):
    if np.all(sc > 0):                  # the usual case: the same ratios without the masks and errstate
        r = np.abs(e) / sc              # (no division by zero to silence; the same r as below)
        return math.sqrt(float(np.mean(r * r))) if r.size else 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(sc > 0, np.abs(e) / sc, np.where(e == 0, 0.0, math.inf))
    return math.sqrt(float(np.mean(r * r))) if r.size else 0.0


def _dd2(z, y):
    """Second divided difference y[z_0, z_1, z_2] of three distinct nodes."""
    a = (y[1] - y[0]) / (z[1] - z[0])
    b = (y[2] - y[1]) / (z[2] - z[1])
    return (b - a) / (z[2] - z[0])
