"""Checks of the spatial vehicle objectives (``[[objectives]]`` with integrand or terminal
``vertical_acceleration_sq`` / ``roll_rate_sq``; parmbs/spatial/objectives.py).

* ``vertical_acceleration_sq`` needs ``point = "BODY.POINT"`` on a spatial body
  (not ground: its acceleration is zero);
* ``roll_rate_sq`` needs ``body`` (a spatial body) and optionally ``axis = "BODY.AXIS"``
  on that body (default: the body x axis);
* ``stress_ks`` needs ``body`` (a spatial beam) and ``ks_rho``; ``stress_ks_time`` also
  ``stress_limit``; ``stress_point = "midpoint"`` only with the variational integrator at
  fixed steps (its midpoint rule is what it corrects for); ``vertical_acceleration_*``,
  ``point_velocity_sq``, ``point_acceleration_sq`` and ``point_deviation_sq`` (from the
  point's configured initial position) take a point on a spatial beam or a
  natural-coordinate body.
Each failure names ``objectives.NAME.KEY`` and what is known.
"""
from __future__ import annotations

from .points import beam_point_names
from .spatial_schema import PREDEFINED_AXES

#: objective kinds at points of spatial beams (flexible/spatial_beam_objectives.py)
BEAM3_POINT_KINDS = ("vertical_acceleration_sq", "vertical_acceleration_4", "point_velocity_sq",
                     "point_acceleration_sq", "point_deviation_sq")


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

    beams = {b.name: b for b in sp.beams} if sp is not None else {}
    natural = {b.name: b for b in sp.natural_bodies} if sp is not None else {}
    if kind in ("stress_ks", "stress_ks_time"):
        if o.body is None:
            raise ck.fail(f"{prefix}.body", needs)
        if o.body not in beams:
            raise ck.fail(f"{prefix}.body", f"{kind!r} needs a spatial beam, got {o.body!r} "
                          f"(known spatial beams: {', '.join(beams) or 'none'})")
        if o.ks_rho is None:
            raise ck.fail(f"{prefix}.ks_rho", needs)
        if (o.stress_limit is None) == (kind == "stress_ks_time"):
            raise ck.fail(f"{prefix}.stress_limit", needs if o.stress_limit is None
                          else f"not used by {kind!r} (only by 'stress_ks_time')")
        sim = ck.cfg.simulation
        if o.stress_point == "midpoint" and (sim.integrator != "variational" or sim.adapt is not None):
            raise ck.fail(f"{prefix}.stress_point", "'midpoint' is the chord the variational integrator's "
                          "midpoint rule balances at a fixed step; it needs simulation.integrator = "
                          f"\"variational\" without simulation.adapt (got {sim.integrator!r}"
                          f"{', adaptive' if sim.adapt is not None else ''}); use \"node\"")
        return
    if o.stress_point is not None:
        raise ck.fail(f"{prefix}.stress_point", f"not used by {kind!r} (only by 'stress_ks', 'stress_ks_time')")
    if o.ks_rho is not None:
        raise ck.fail(f"{prefix}.ks_rho", f"not used by {kind!r} (only by 'stress_ks', 'stress_ks_time')")
    if o.stress_limit is not None:
        raise ck.fail(f"{prefix}.stress_limit", f"not used by {kind!r} (only by 'stress_ks_time')")
    if o.point is not None and o.point.split(".", 1)[0] in {**beams, **natural} and kind not in BEAM3_POINT_KINDS:
        raise ck.fail(f"{prefix}.point", f"{kind!r} is not available at spatial beam or natural-body points "
                      f"(available: {', '.join(BEAM3_POINT_KINDS)})")
    if kind in BEAM3_POINT_KINDS:
        if o.point is None:
            raise ck.fail(f"{prefix}.point", needs)
        bname, pname = o.point.split(".", 1)
        if bname in beams or bname in natural:
            known = beam_point_names(beams[bname]) if bname in beams else ["com", *natural[bname].points]
            if pname not in known:
                raise ck.fail(f"{prefix}.point", f"unknown point {pname!r} on {bname!r} (known: {', '.join(known)})")
            if o.axis is not None:
                raise ck.fail(f"{prefix}.axis", f"not used by {kind!r} (the vertical is the global z axis)")
            if o.reference is not None:
                raise ck.fail(f"{prefix}.reference", f"not used by {kind!r} at a spatial beam or natural-body "
                              "point (the reference is the point's configured initial position)")
            return
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
