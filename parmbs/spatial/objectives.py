"""Vehicle objective integrands on spatial bodies (used by ``sensitivity/objectives.py``).

The objectives of the buggy manoeuvres of seed 002 §4.2:

* ``vertical_acceleration_sq`` — g = r̈_Pz², the squared vertical (global z) component
  of the acceleration of a body point P; seed 002 eq. (76), ψ = ∫ r̈_1z² dt with P a
  point in the front of the chassis (step-descent manoeuvre).  With the body's
  coordinates q_b = (r, p) and P's body-local offset s' from the centre of mass,
      r̈_P = r̈ + Ä s',   Ä = 2 B(ṗ, ṗ) + 2 B(p, p̈)       (kinematics.py).
* ``vertical_acceleration_4`` — g = r̈_Pz⁴, the ride objective of seed 004 eq. (5.13)
  (four-post and speed-bump tests of the Iltis, §5.2.3: Ψ = ∫ z̈⁴_chassis dt).
* ``roll_rate_sq`` — g = (ω'·u')², the squared angular velocity of a body about its
  body-fixed longitudinal axis u' (unit after normalisation; default the body x axis);
  seed 002 eq. (78), ψ = ∫ φ̇² dt (double-lane-change manoeuvre).  ω' = 2 G(p) ṗ
  (Nikravesh eq. 6.40).  For a yaw–pitch–roll (z-y'-x'') orientation ω'_x = φ̇ − ψ̇ sin θ,
  so this is the roll rate φ̇ itself whenever the pitch θ is zero and the usual body-axis
  roll rate of vehicle dynamics otherwise (no Euler-angle singularity at θ = ±π/2).

Every function has the integrand signature g(t, q, v, a, λ, p, ref) of
``sensitivity/objectives.py`` on the body's 7 local coordinates and a few parameters
(the point's s' = P' − c', or the axis u'), and is complex-step safe: its partial
derivatives ∂g/∂(q, v, a, p) are the complex-step derivatives ``Term.grads`` takes,
exact to round-off, so the adjoint and direct gradients need nothing more.
"""
from functools import partial

import numpy as np

from ..model.parameters import ZERO
from .kinematics import dot, omega_body, point_acceleration

SPATIAL_KINDS = ("vertical_acceleration_sq", "vertical_acceleration_4", "roll_rate_sq")
EX = np.array([1.0, 0.0, 0.0])      # default longitudinal axis: body x


def vertical_acceleration(q, v, a, s):
    """r̈_Pz = e_zᵀ (r̈ + Ä s') of the body point with body-local offset s' (..., 3)."""
    return point_acceleration(q, v, a, s)[..., 2]


def roll_rate(q, v, u):
    """ω'·û (û = u'/|u'|): the body angular velocity ω' = 2 G(p) ṗ about the body-fixed
    axis u' (..., 3).  |u'| is taken as sqrt(u'ᵀu') so the complex step passes through."""
    w = omega_body(q[..., 3:7], v[..., 3:7])
    return dot(w, u) / np.sqrt(dot(u, u))


def _vertical_acc(t, q, v, a, lam, p, ref):
    return vertical_acceleration(q, v, a, p[..., 0:3])


def _vertical_acc_sq(t, q, v, a, lam, p, ref):
    return _vertical_acc(t, q, v, a, lam, p, ref) ** 2


def _vertical_acc_4(t, q, v, a, lam, p, ref):
    """r̈_Pz⁴: the ride objective of seed 004 eq. (5.13), Ψ = ∫ z̈⁴_chassis dt (a VDV-like
    measure, more sensitive to peaks than the squared acceleration; Iltis speed bump)."""
    return _vertical_acc(t, q, v, a, lam, p, ref) ** 4


# fn = inner(...) ** power, the inner reading (q, v, a, p) only: objectives on the same
# point share one evaluation of the inner, at a state and under each complex step, bit for
# bit as fn's own (sensitivity/objectives.py, shared_power; the adaptive quadrature test)
_vertical_acc_sq.inner, _vertical_acc_sq.power = _vertical_acc, 2
_vertical_acc_4.inner, _vertical_acc_4.power = _vertical_acc, 4


def _roll_rate_sq(t, q, v, a, lam, p, ref):
    return roll_rate(q, v, p[..., 0:3]) ** 2


def _roll_rate_sq_fixed(t, q, v, a, lam, p, ref, axis):
    """Roll rate² about a constant body axis (no parameters read: p is the zero entry)."""
    return roll_rate(q, v, axis + 0.0 * p[..., :1]) ** 2


FNS = {"vertical_acceleration_sq": _vertical_acc_sq, "vertical_acceleration_4": _vertical_acc_4,
       "roll_rate_sq": _roll_rate_sq}


def spatial_term(system, kind, cfg):
    """(integrand, coordinate indices, parameter indices) of ``kind`` for the objective
    ``cfg`` (``[[objectives]]`` entry): ``point = "BODY.POINT"`` for the vertical
    acceleration, ``body = "BODY"`` and optionally ``axis = "BODY.AXIS"`` (default the
    body x axis) for the roll rate.  The body's coordinate indices and the point/axis
    parameter indices come from the spatial set (``system.spatial``)."""
    sp = system.spatial
    if kind in ("vertical_acceleration_sq", "vertical_acceleration_4"):
        body, _ = cfg.point.split(".", 1)
        return FNS[kind], sp.body_qidx(body), sp.point_pidx(cfg.point)
    if cfg.axis is None:
        return partial(_roll_rate_sq_fixed, axis=EX), sp.body_qidx(cfg.body), [ZERO]
    return FNS[kind], sp.body_qidx(cfg.body), sp.axis_pidx(cfg.axis)
