"""Checks of the spatial vehicle objectives (``[[objectives]]`` with integrand or terminal
``vertical_acceleration_sq`` / ``roll_rate_sq``; parmbs/spatial/objectives.py).

* ``vertical_acceleration_sq`` needs ``point = "BODY.POINT"`` on a spatial body
  (not ground: its acceleration is zero);
* ``roll_rate_sq`` needs ``body`` (a spatial body) and optionally ``axis = "BODY.AXIS"``
  on that body (default: the body x axis).
Each failure names ``objectives.NAME.KEY`` and what is known.
"""
from __future__ import annotations

from .spatial_schema import PREDEFINED_AXES


def check_spatial_objective(ck, o, kind: str) -> None:
    """``ck``: the ``checks._Checker``; ``o``: the objective; ``kind``: its integrand or terminal."""
    prefix = f"objectives.{o.name}"
    sp = ck.cfg.spatial
    bodies = {b.name: b for b in sp.bodies} if sp is not None else {}
    needs = f"required for {kind!r}"

    def body(name, key):
        if name not in bodies:
            raise ck.fail(key, f"{kind!r} needs a spatial body, got {name!r} "
                          f"(known spatial bodies: {', '.join(bodies) or 'none'})")
        return bodies[name]

    if kind in ("vertical_acceleration_sq", "vertical_acceleration_4"):
        if o.point is None:
            raise ck.fail(f"{prefix}.point", needs)
        bname, pname = o.point.split(".", 1)
        b = body(bname, f"{prefix}.point")
        known = ["com", *b.points]
        if pname not in known:
            raise ck.fail(f"{prefix}.point", f"unknown point {pname!r} on body {bname!r} (known: {', '.join(known)})")
        if o.axis is not None:
            raise ck.fail(f"{prefix}.axis", f"not used by {kind!r} (the vertical is the global z axis)")
        return
    if o.body is None:
        raise ck.fail(f"{prefix}.body", needs)
    b = body(o.body, f"{prefix}.body")
    if o.axis is not None:
        aname, axis = o.axis.split(".", 1)
        if aname != o.body:
            raise ck.fail(f"{prefix}.axis", f"axis {o.axis!r} must be on the body {o.body!r}")
        known = [*PREDEFINED_AXES, *b.axes]
        if axis not in known:
            raise ck.fail(f"{prefix}.axis", f"unknown axis {axis!r} on body {o.body!r} (known: {', '.join(known)})")
