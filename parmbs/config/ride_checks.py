"""Checks of the ISO 2631-1 ride objectives (``integrand = "iso2631_rms" | "iso2631_vdv"``;
parmbs/sensitivity/ride.py).

* integrand only (the measure is of the whole history: no ``terminal``), no ``reference``;
* ``point = "BODY.POINT"`` on a rigid body (spatial or planar; not ground: its
  acceleration is zero); ``direction`` ``z`` needs a spatial body (planar: x, y);
* ``weighting`` and ``direction`` are read by these kinds only.
Each failure names ``objectives.NAME.KEY``.
"""
from __future__ import annotations

from .schema import RIDE_KINDS


def check_ride_objective(ck, o, kind) -> None:
    """``ck``: the ``checks._Checker``; ``o``: the objective; ``kind``: its integrand or terminal."""
    prefix = f"objectives.{o.name}"
    if kind not in RIDE_KINDS:
        key = "weighting" if o.weighting is not None else "direction"
        raise ck.fail(f"{prefix}.{key}", f"is read only by integrand = {' or '.join(map(repr, RIDE_KINDS))}")
    if o.terminal is not None:
        raise ck.fail(f"{prefix}.terminal", f"not with integrand {kind!r} (the ride measure is of the whole "
                      "history; use a separate objective)")
    for key in ("reference", "body", "force", "joint", "axis", "ks_rho"):
        if getattr(o, key) is not None:
            raise ck.fail(f"{prefix}.{key}", f"not used by {kind!r}")
    if o.point is None:
        raise ck.fail(f"{prefix}.point", f"required for {kind!r}")
    body, point = o.point.split(".", 1)
    sp = ck.cfg.spatial
    spatial = {b.name: b for b in sp.bodies} if sp is not None else {}
    if body in spatial:
        known = ["com", *spatial[body].points]
        if point not in known:
            raise ck.fail(f"{prefix}.point", f"unknown point {point!r} on body {body!r} (known: {', '.join(known)})")
        return
    planar = {b.name for b in ck.cfg.bodies}
    if body not in planar:
        raise ck.fail(f"{prefix}.point", f"{kind!r} needs a point on a rigid body, got {o.point!r} "
                      f"(known bodies: {', '.join([*spatial, *sorted(planar)]) or 'none'})")
    ck.point(o.point, f"{prefix}.point", allow_ground=False)
    if (o.direction or "z") == "z":
        raise ck.fail(f"{prefix}.direction", f"a planar body's acceleration has x and y only (set direction = "
                      "\"x\" or \"y\")")
