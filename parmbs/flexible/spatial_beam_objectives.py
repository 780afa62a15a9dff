"""Objective integrands on spatial ANCF beams and natural-coordinate bodies (used by
``sensitivity/objectives.py``).

* ``stress_ks`` (``body = "BEAM"``, ``ks_rho = ρ``): g = KS_e |σ_e|, the
  Kreisselmeier–Steinhauser aggregate over the beam's elements of the axial stress
  σ_e = E(|r_j − r_i|/l − 1) (``ancf3d.axial_stress``, the seed's §6.3 stress, Eq. 56):
  max_e |σ_e| ≤ KS ≤ max_e |σ_e| + ln(2 n_el)/ρ.  As an integrand ψ = ∫ KS dt (a time
  mean: bounding it does not bound the peak); as a terminal, KS at t_end.
  ``stress_point = "midpoint"`` (both stress kinds; the variational integrator only): σ_e
  of the chord the midpoint rule balances, read at the node state without the node
  chord's rotation bias E(ωh)²/8 (``ancf3d.midpoint_axial_stress``); "node" (default): at q_n.
* ``stress_ks_time`` (``body``, ``ks_rho``, ``stress_limit``): the KS over time steps and
  elements as an integrand (``spatial_stress_peak.py``): ψ ≤ 1 with weight 1/Δt bounds
  max_t |σ_e(t)| by σ_lim.
* ``point_deviation_sq`` at a beam or natural-body point P: g = |r_P − r_P⁰|², r_P⁰ the
  point's position in the configured initial pose (a constant: design variables that
  move the point do not move r_P⁰) — the seed's |d_CM|² of §6.3 (Eq. 56).
* ``vertical_acceleration_sq`` / ``vertical_acceleration_4`` at a beam point P:
  g = (e_z·r̈_P)² or ⁴ with r̈_P = S(ξ) ë (the beam's accelerations are linear in ë);
  ``point_velocity_sq`` / ``point_acceleration_sq``: g = |ṙ_P|², |r̈_P|²; the same at
  points of natural-coordinate bodies, r_P = C(s') q_b (spatial/natural.py).

Both are complex-step safe, so ``Term.grads`` differentiates them exactly with respect
to q, ë and the parameters (section, E, length: ∂/∂design as for every other term).
Every one is elementwise over leading axes and reads no t, so the adjoint and direct
sweeps evaluate them on blocks of states (``batchable``: sensitivity/local_table.py; on
the double wishbone's 17 objectives one call per block instead of 17 × 5 complex-step
Jacobians per step).
"""
from functools import partial

import numpy as np

from .ancf import beam_point_matrices
from .ancf3d import element_stress, ks
from .spatial_stress_peak import stress_ks_time

#: the stress aggregates on a spatial beam (``body``, ``ks_rho``)
STRESS_KINDS = ("stress_ks", "stress_ks_time")


def _stress_ks(t, q, v, a, lam, p, ref, elems, rho, h=0.0):
    return ks(element_stress(q[..., elems], v[..., elems], p[..., None, :], h), rho)


def _beam_matrix(p):
    return beam_point_matrices(p, dim=3)


def _vertical(t, q, v, a, lam, p, ref, power, matrix):
    z = np.einsum("...j,...j->...", matrix(p)[..., 2, :], a)
    return z ** power


def _speed_sq(t, q, v, a, lam, p, ref, acc, matrix):
    r = np.einsum("...ij,...j->...i", matrix(p), a if acc else v)
    return np.einsum("...i,...i->...", r, r)


def _deviation_sq(t, q, v, a, lam, p, ref, matrix, r0):
    r = np.einsum("...ij,...j->...i", matrix(p), q) - r0
    return np.einsum("...i,...i->...", r, r)


def beam3_term(system, kind, cfg):
    """(integrand, coordinate indices, parameter indices) of ``kind`` on a spatial beam,
    the integrand marked ``batchable`` (``Term.batchable``)."""
    fn, qidx, pidx = _beam3_term(system, kind, cfg)
    fn.batchable = True
    return fn, qidx, pidx


def _beam3_term(system, kind, cfg):
    sb = system.spatial_beams
    if kind in STRESS_KINDS:
        b, qidx, elems, h = _stress_setup(system, cfg)
        if kind == "stress_ks_time":             # the peak over time (spatial_stress_peak.py)
            return (partial(stress_ks_time, elems=elems, rho=cfg.ks_rho, limit=cfg.stress_limit, h=h), qidx,
                    b.material())
        return partial(_stress_ks, elems=elems, rho=cfg.ks_rho, h=h), qidx, b.material()
    qidx, pidx, matrix = _point_setup(system, cfg)
    if kind == "point_deviation_sq":             # |r_P − r_P(t₀ configured)|², the seed's |d_CM|² (§6.3)
        return partial(_deviation_sq, matrix=matrix, r0=_deviation_origin(system, cfg)), qidx, pidx
    if kind in ("point_velocity_sq", "point_acceleration_sq"):
        return partial(_speed_sq, acc=kind == "point_acceleration_sq", matrix=matrix), qidx, pidx
    return partial(_vertical, power=2 if kind == "vertical_acceleration_sq" else 4, matrix=matrix), qidx, pidx


def _stress_setup(system, cfg):
    """(beam, its coordinate indices, element coordinates (E, 12) local to the beam, h) of a
    stress objective: h = Δt for ``stress_point = "midpoint"`` (the variational step; the
    config checks fixed steps and that integrator), else 0 (the node state)."""
    b = system.spatial_beams.beams[cfg.body]
    elems = np.array([[i - b.offset for i in b.element(e)] for e in range(b.nel)])
    h = system.config.simulation.dt if cfg.stress_point == "midpoint" else 0.0
    return b, list(range(b.offset, b.offset + b.ncoord)), elems, h


def _point_setup(system, cfg):
    """(coordinate indices, parameter indices, r_P = matrix(p) q) of a beam or
    natural-coordinate body point objective."""
    sb = system.spatial_beams
    if sb.is_beam_point(cfg.point):
        return (*sb.point(cfg.point), _beam_matrix)
    from .ancf3d_joints import _natural_matrix         # a natural-coordinate body: r_P = C(s') q_b
    return (*system.natural.point(cfg.point), _natural_matrix)


def _deviation_origin(system, cfg):
    """r_P⁰ of ``point_deviation_sq``: the point in the configured initial pose."""
    sb = system.spatial_beams
    kind = "beam" if sb.is_beam_point(cfg.point) else "natural"
    return np.asarray(sb.initial_point(system, system.spatial, kind, cfg.point), float)


def stress_history(system, cfg, q, v, p):
    """σ_e(t_k) (K, E) of stress objective ``cfg`` (``stress_ks``/``stress_ks_time``) along
    states q, v (K, n) at parameters p (the full vector): the stresses its KS aggregates
    (same elements, same ``stress_point``) — for reports such as Fig. 17 of the seed."""
    b, qidx, elems, h = _stress_setup(system, cfg)
    qb, vb = np.asarray(q)[:, qidx], np.asarray(v)[:, qidx]
    return element_stress(qb[:, elems], vb[:, elems], np.asarray(p)[np.asarray(b.material())][None, None, :], h)


def point_displacement(system, cfg, q, p):
    """d(t_k) = r_P(t_k) − r_P⁰ (K, 3) of a ``point_deviation_sq`` objective ``cfg`` along
    states q (K, n) at parameters p: the vector whose |d|² it integrates (the seed's d_CM)."""
    qidx, pidx, matrix = _point_setup(system, cfg)
    return np.einsum("ij,kj->ki", matrix(np.asarray(p)[np.asarray(pidx)]), np.asarray(q)[:, qidx]) \
        - _deviation_origin(system, cfg)


def is_beam3_objective(system, kind, cfg):
    """True if ``cfg`` is an objective on a spatial beam."""
    sb, nb = getattr(system, "spatial_beams", None), getattr(system, "natural", None)
    if kind in STRESS_KINDS:
        return sb is not None and cfg.body in sb.beams
    return cfg.point is not None and ((sb is not None and sb.is_beam_point(cfg.point))
                                      or (nb is not None and nb.is_natural_point(cfg.point)))
