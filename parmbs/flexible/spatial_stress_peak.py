"""``stress_ks_time``: the peak over time of a spatial beam's axial stress, as an integrand
(the seed's §6.3 stress constraints, Eq. 56: −400 ≤ σ_beam_j(t) ≤ 400 MPa at every t).

``stress_ks`` integrates the KS over elements, ψ = ∫ KS_e|σ_e| dt: bounding it bounds
the *time mean* of the stress, not its maximum.  A bound for every t needs an aggregate
over the time steps too.  A Kreisselmeier–Steinhauser aggregate over steps n, elements
e and the sign of σ,

    KS_T = (1/ρ) ln Σ'_n Σ_e,± exp(ρ (±σ_e(t_n)))         (Σ'_n: end steps halved),

is ln of a sum, not a sum — but the constraint KS_T ≤ σ_lim is the same as

    Σ'_n Σ_e,± exp(ρ (±σ_e(t_n) − σ_lim)) ≤ 1,

and the left side is (1/Δt) ∫ g dt with the trapezoidal rule (the weights of every
integrand, integrators/trajectory.quadrature_weights) of

    g = Σ_e,± exp(ρ (±σ_e − σ_lim)),                                   (this integrand)

so ``integrand = "stress_ks_time"`` with ``weight = 1/Δt`` and ``upper = 1`` is the KS
constraint over time and elements, differentiated exactly by the discrete adjoint like
every other integrand (complex-step safe: ``Term.grads``).  What it guarantees: every
term is below the sum, so at interior steps max_e |σ_e(t_n)| ≤ σ_lim, and at t₀ and
t_end (weight ½) ≤ σ_lim + ln 2/ρ.  How conservative: a stress peak at σ_max lasting τ
(within 1/ρ of σ_max) contributes ≈ (τ/Δt) exp(ρ(σ_max − σ_lim)), so the constraint
holds σ_max below σ_lim by ≈ ln(τ/Δt)/ρ (e.g. ρ = 1e-7 /Pa, τ = 50 steps: 39 MPa).
With weight = 1/Δt the value reads as KS_T = σ_lim + ln(ψ)/ρ (``ks_over_time``):
≥ the max of |σ| over interior steps and elements, ≤ the max over all steps + ln(2 n_el (N + 1))/ρ.

Keys: ``body`` (a spatial beam), ``ks_rho`` = ρ [1/Pa], ``stress_limit`` = σ_lim [Pa].
Overflow: exp(ρ(σ − σ_lim)) is finite up to σ − σ_lim = 709/ρ (7 GPa at ρ = 1e-7); a
larger stress gives ψ = inf, which the run reports as non-finite.
"""
import numpy as np

from .ancf3d import element_stress


def stress_ks_time(t, q, v, a, lam, p, ref, elems, rho, limit, h=0.0):
    """g = Σ_e,± exp(ρ(±σ_e − σ_lim)) of one beam (elements ``elems`` of its q); h > 0:
    σ_e at the midpoint (``stress_point = "midpoint"``, spatial_beam_objectives.py)."""
    sig = element_stress(q[..., elems], v[..., elems], p[..., None, :], h)   # (..., E)
    return np.sum(np.exp(rho * (sig - limit)) + np.exp(rho * (-sig - limit)), -1)


def ks_over_time(psi, rho, limit):
    """KS_T = σ_lim + ln(ψ)/ρ of a ``stress_ks_time`` objective with weight = 1/Δt (module
    docstring): the stress the constraint ψ ≤ 1 compares with σ_lim."""
    return limit + np.log(psi) / rho
