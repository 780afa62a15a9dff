"""Cross-reference checks of ``[[spatial.forces]]`` (called from ``spatial_checks.py``).

Each failure names the referencing key with entity names, e.g.
``spatial.forces.FL.axis: unknown axis 'w' on body 'hub' (known: x, y, z, u)``.
"""
from __future__ import annotations

from .points import beam_point_names

PREDEFINED_AXES = ("x", "y", "z")


def check_spatial_forces(ck) -> None:
    """``ck``: the ``checks._Checker`` (its ``fail``)."""
    sp = ck.cfg.spatial
    if sp is None:
        return
    bodies = {b.name: b for b in sp.bodies}

    def where(body):
        return "ground" if body == "ground" else f"body {body!r}"

    def body_of(name, key, ground_ok=True):
        if name == "ground" and ground_ok:
            return name
        if name not in bodies:
            known = (["ground"] if ground_ok else []) + list(bodies)
            raise ck.fail(key, f"unknown spatial body {name!r} (known: {', '.join(known) or 'none'})")
        return name

    beams = {b.name: b for b in sp.beams}
    natural = {b.name: b for b in sp.natural_bodies}

    def point(ref, key, ground_ok=True, flexible_ok=False):
        body, name = ref.split(".")
        if flexible_ok and body in beams:                 # spring_damper: beam points too
            known = beam_point_names(beams[body])
        elif flexible_ok and body in natural:             # ... and natural-coordinate bodies
            known = ["com", *natural[body].points]
        else:
            body_of(body, key, ground_ok)
            known = list(sp.ground.points) if body == "ground" else ["com", *bodies[body].points]
        if name not in known:
            raise ck.fail(key, f"unknown point {name!r} on {where(body)} (known: {', '.join(known) or 'none'})")
        return body

    def axis(ref, key, body_expected):
        body, name = ref.split(".")
        body_of(body, key, False)
        if body != body_expected:
            raise ck.fail(key, f"axis {ref!r} must be on the wheel body {body_expected!r}")
        known = [*PREDEFINED_AXES, *bodies[body].axes]
        if name not in known:
            raise ck.fail(key, f"unknown axis {name!r} on {where(body)} (known: {', '.join(known)})")

    for f in sp.forces:
        key = f"spatial.forces.{f.name}"
        if f.type in ("spring_damper", "bump_stop", "bushing"):
            flex = f.type == "spring_damper" and f.law != "iltis"
            ba, bb = point(f.a, f"{key}.a", flexible_ok=flex), point(f.b, f"{key}.b", flexible_ok=flex)
            if ba == bb:
                raise ck.fail(f"{key}.b", f"{f.type} has both ends on {where(ba)}")
        elif f.type in ("contact", "force"):
            point(f.point, f"{key}.point", ground_ok=False)
        elif f.type == "tyre":
            body = body_of(f.wheel, f"{key}.wheel", ground_ok=False)
            point(f"{body}.{f.centre}", f"{key}.centre", ground_ok=False)
            axis(f.axis, f"{key}.axis", body)
        elif f.type == "torque":
            body_of(f.body, f"{key}.body", ground_ok=False)
