"""Digital-filter step-size controllers: ``simulation.adapt.controller`` = one of ``FILTERS``.

G. Söderlind, "Digital filters in adaptive time-stepping", ACM TOMS 29 (2003) 1–26, and
G. Söderlind & L. Wang, "Adaptive time-stepping and computational stability", JCAM 185
(2006) 225–243, as PETSc implements them (TSADAPTDSP, src/ts/adapt/impls/dsp/adaptdsp.c:
its filter table, its inputs, its limiter and its history).  After an accepted step n with
scaled error ‖e_n‖ (timeloop.LocalError, ≤ 1 accepted) and order k of that error in h:

    c_n = (θ / ‖e_n‖)^(1/k)
    ρ_n = c_n^β1 · c_{n−1}^β2 · c_{n−2}^β3 · ρ_{n−1}^(−α2) · ρ_{n−2}^(−α3)
    ρ_n ← 1 + κ atan((ρ_n − 1) / κ)                 (the limiter, κ = 1)
    h_{n+1} = h_n · min(FAC_MAX, max(FAC_MIN, ρ_n)),  then clipped to [dt_min, dt_max]

with (β1, β2, β3, α2, α3) = (b1, b2, b3, a2, a3) / scale from ``FILTERS`` (adaptdsp.c's
``filterlist``), c and ρ of the steps before the first = 1 (TSAdaptRestart_DSP), and only
accepted steps entering the history (a rejection leaves it as it was: TSAdaptRollBack_DSP).
ρ_{n−1} is the limited filter output, not the ratio the clips and the landing on t_end
make of it — as adaptdsp.c stores ``rho0``.  H211b, for instance, is
ρ_n = c_n^(1/4) c_{n−1}^(1/4) ρ_{n−1}^(−1/4): a low-pass filter on the error sequence,
which suppresses the step-to-step (−1)^n oscillation of h that a PI controller lets through.

Differences from PETSc, the rest of parmbs's loop (timeloop.py): k = 2 (the scaled error
per unit step goes with h²), the step is accepted when ‖e_n‖ ≤ 1 (PETSc: when ρ_n ≥ 0.81), so
the target θ is below 1: θ = 0.5, the fixed point of the PI controller (0.9 ‖e‖^(−0.15) = 1 at
‖e‖ = 0.9^(1/0.15) ≈ 0.50), so that an rtol gives about the PI controller's steps; a rejected
step is retried with the PI controller's rejection factor (timeloop.Controller.after_reject);
``grow_min`` (the PI controller's hysteresis) does not apply.

Measured (benchmarks/README.md, "Adaptive vs fixed: digital-filter controllers"): H211b,
H211PI, H312b and PI42 change h on every step and cost the Arnold–Brüls models (five-bar,
Iltis) accuracy per step — adaptive ÷ fixed at equal error 1.3–2.1 on the five-bar against the
PI controller's 0.9–1.15 —, while on the trapezoidal + GGL double pendulum they halve the PI
controller's ψ excess (2.2–2.5 → 1.1–1.5); so the PI controller stays the default.
"""
from __future__ import annotations

import math

#: PETSc's filterlist (adaptdsp.c): name: (scale, (b1, b2, b3), (a2, a3))
FILTERS = {
    "basic": (1, (1, 0, 0), (0, 0)),
    "PI30": (3, (1, 0, 0), (0, 0)),
    "PI42": (5, (3, -1, 0), (0, 0)),
    "PI33": (3, (2, -1, 0), (0, 0)),
    "PI34": (10, (7, -4, 0), (0, 0)),
    "PC11": (1, (2, -1, 0), (-1, 0)),
    "PC47": (10, (11, -7, 0), (-10, 0)),
    "PC36": (10, (9, -6, 0), (-10, 0)),
    "H0211": (2, (1, 1, 0), (1, 0)),
    "H211b": (4, (1, 1, 0), (1, 0)),
    "H211PI": (6, (1, 1, 0), (0, 0)),
    "H0312": (4, (1, 2, 1), (3, 1)),
    "H312b": (8, (1, 2, 1), (3, 1)),
    "H312PID": (18, (1, 2, 1), (0, 0)),
    "H0321": (4, (5, 2, -3), (-1, -3)),
    "H321": (18, (6, 1, -5), (-15, -3)),
}
TARGET = 0.5          # θ: the scaled error the filter aims at (module docstring)
ORDER = 2.0           # k: ‖e‖ ∝ h^k
KAPPA = 1.0           # the limiter's κ (adaptdsp.c: Limiter(rho0, 1))


def limiter(rho, kappa=KAPPA):
    """1 + κ atan((ρ − 1)/κ): smooth, ≈ ρ near 1, within 1 ± κπ/2 (adaptdsp.c ``Limiter``)."""
    return 1.0 + kappa * math.atan((rho - 1.0) / kappa)


class DigitalFilter:
    """The filter ``name`` of ``FILTERS`` with its history (c_{n−1}, c_{n−2}, ρ_{n−1},
    ρ_{n−2}); ``ratio(err)`` is ρ_n of an accepted step with scaled error ``err`` and moves
    the history on."""

    def __init__(self, name, target=TARGET, order=ORDER):
        scale, b, a = FILTERS[name]
        self.beta = tuple(x / scale for x in b)
        self.alpha = tuple(x / scale for x in a)
        self.target, self.order = target, order
        self.mem = [1.0, 1.0, 1.0, 1.0]          # c_{n−1}, c_{n−2}, ρ_{n−1}, ρ_{n−2}

    def ratio(self, err):
        c1, c2, r1, r2 = self.mem
        b1, b2, b3 = self.beta
        a2, a3 = self.alpha
        c0 = (self.target / max(err, 1e-10)) ** (1.0 / self.order)
        rho = c0 ** b1 * c1 ** b2 * c2 ** b3 * r1 ** -a2 * r2 ** -a3
        rho = limiter(rho)
        self.mem = [c0, c1, rho, r1]
        return rho
