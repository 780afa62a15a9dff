"""Objective integrands at beam points (used by ``sensitivity/objectives.py``).

Every function has the integrand signature g(t, q, v, a, λ, p, ref) on the local
coordinates ``union`` = (root node ∪ the point's element) and the 5 beam-point
parameters; ``ir``/``ie`` pick the root node and element coordinates out of them.

* point_deviation_sq / point_velocity_sq / point_acceleration_sq: as for rigid points.
* deflection: δ = n₀·(r_P − r₀), the transverse position of P in the frame at the root
  whose x axis is the beam tangent there, n₀ = R r′₀/|r′₀| (seed 000 §6.1's δy_t;
  zero for the straight beam).  deflection_sq: δ².
"""
from functools import partial

import numpy as np

from ..model.kinematics import dot
from .ancf import beam_point_matrices

BEAM_KINDS = ("point_deviation_sq", "point_velocity_sq", "point_acceleration_sq", "deflection", "deflection_sq")


def _at(x, idx, p):
    return np.einsum("...ij,...j->...i", beam_point_matrices(p), x[..., idx])


def _dev(t, q, v, a, lam, p, ref, ir, ie):
    d = _at(q, ie, p) - ref
    return dot(d, d)


def _vel(t, q, v, a, lam, p, ref, ir, ie):
    d = _at(v, ie, p)
    return dot(d, d)


def _acc(t, q, v, a, lam, p, ref, ir, ie):
    d = _at(a, ie, p)
    return dot(d, d)


def deflection(q, p, ir, ie):
    r0, t0 = q[..., ir[0:2]], q[..., ir[2:4]]
    d = _at(q, ie, p) - r0
    return (t0[..., 0] * d[..., 1] - t0[..., 1] * d[..., 0]) / np.sqrt(dot(t0, t0))


def _defl(t, q, v, a, lam, p, ref, ir, ie):
    return deflection(q, p, ir, ie)


def _defl_sq(t, q, v, a, lam, p, ref, ir, ie):
    return deflection(q, p, ir, ie) ** 2


_FNS = {"point_deviation_sq": _dev, "point_velocity_sq": _vel, "point_acceleration_sq": _acc,
        "deflection": _defl, "deflection_sq": _defl_sq}


def beam_term(system, kind, ref):
    """(integrand, coordinate indices, parameter indices) of ``kind`` at beam point ``ref``."""
    union, ir, ie, pp = system.beams.root_and_point(ref)
    return partial(_FNS[kind], ir=np.array(ir), ie=np.array(ie)), union, pp


def _position(q, p):
    return np.einsum("...ij,...j->...i", beam_point_matrices(p), q)


def beam_ref(system, ref):
    """(r_P(q, p), element coordinate indices, parameter indices) for default references."""
    qe, pp = system.beams.point(ref)
    return _position, qe, pp
