"""Cross-reference checks of the ``[spatial]`` section (called from ``checks.py``).

Each failure names the referencing key with entity names, e.g.
``spatial.joints.hinge.axis_b: unknown axis 'w' on body 'arm' (known: x, y, z, u)``.
"""
from __future__ import annotations

from .points import beam_point_names, mesh_node
from .spatial_schema import PREDEFINED_AXES


def check_spatial(ck) -> None:
    """``ck``: the ``checks._Checker`` (its ``fail`` and ``unique``)."""
    sp = ck.cfg.spatial
    if sp is None:
        return
    ck.unique(sp.bodies, "spatial.bodies")
    ck.unique(sp.joints, "spatial.joints")
    ck.unique(sp.forces, "spatial.forces")
    ck.unique(sp.beams, "spatial.beams")
    bodies = {b.name: b for b in sp.bodies}
    beams = {b.name: b for b in sp.beams}
    planar = set(ck.bodies) | set(ck.beams) | set(ck.plates) | set(ck.continua)
    for b in sp.bodies:
        key = f"spatial.bodies.{b.name}"
        if b.name == "ground":
            raise ck.fail(f"{key}.name", "'ground' is reserved for the fixed frame")
        if b.name in planar:
            raise ck.fail(f"{key}.name", f"name {b.name!r} is already a planar body")
    ck.unique(sp.natural_bodies, "spatial.natural_bodies")
    natural = {b.name: b for b in sp.natural_bodies}
    for section, items, taken in (("beams", sp.beams, bodies), ("natural_bodies", sp.natural_bodies,
                                                                {**bodies, **beams})):
        for b in items:
            key = f"spatial.{section}.{b.name}"
            if b.name == "ground" or b.name in planar or b.name in taken:
                raise ck.fail(f"{key}.name", f"name {b.name!r} is already taken (ground, a planar body, a spatial "
                              "body or beam)")
    ck.unique(sp.solids, "spatial.solids")
    solids = {b.name: b for b in sp.solids}
    for b in sp.solids:
        if b.name == "ground" or b.name in planar or b.name in bodies or b.name in beams or b.name in natural:
            raise ck.fail(f"spatial.solids.{b.name}.name", f"name {b.name!r} is already taken (ground, a planar "
                          "body, a spatial body, beam or natural-coordinate body)")
    for b in sp.natural_bodies:
        if b.independent is None:
            raise ck.fail(f"spatial.natural_bodies.{b.name}.independent",
                          "required for a natural-coordinate body (possibly empty): x, y, z, rx, ry, rz")

    def body_of(ref, key, beam_ok=False):
        body = ref.split(".")[0]
        if body != "ground" and body not in bodies and body not in solids and not (
                beam_ok and (body in beams or body in natural)):
            known = ["ground", *bodies, *solids, *((*beams, *natural) if beam_ok else [])]
            raise ck.fail(key, f"unknown spatial body {body!r} (known: {', '.join(known)})")
        return body

    def point(ref, key):
        body, name = ref.split(".")
        body_of(ref, key, beam_ok=True)
        if body in solids:
            if mesh_node(solids[body], name, origin="origin") is None:
                raise ck.fail(key, f"unknown point {name!r} on solid {body!r} (known: origin, node_i_j_k with "
                              f"i ≤ {solids[body].nx}, j ≤ {solids[body].ny}, k ≤ {solids[body].nz}"
                              f"{', ' if solids[body].points else ''}{', '.join(solids[body].points)})")
            return body
        if body in beams:
            known = beam_point_names(beams[body])
        elif body in natural:
            known = ["com", *natural[body].points]
        else:
            known = list(sp.ground.points) if body == "ground" else ["com", *bodies[body].points]
        if name not in known:
            raise ck.fail(key, f"unknown point {name!r} on {'ground' if body == 'ground' else 'body ' + repr(body)} "
                          f"(known: {', '.join(known) or 'none'})")
        return body

    def axis(ref, key, body_expected):
        body, name = ref.split(".")
        body_of(ref, key, beam_ok=True)        # natural bodies have axes; beams are refused at set-up
        if body != body_expected:
            raise ck.fail(key, f"axis {ref!r} must be on the same body as the joint's point ({body_expected!r})")
        known = dict(PREDEFINED_AXES)
        if body not in solids:                  # a solid's frame has the predefined axes only
            known.update(sp.ground.axes if body == "ground" else natural[body].axes if body in natural
                         else bodies[body].axes if body in bodies else {})
        if name not in known:
            raise ck.fail(key, f"unknown axis {name!r} on {'ground' if body == 'ground' else 'body ' + repr(body)} "
                          f"(known: {', '.join(known)})")

    joints = {j.name: j for j in sp.joints}
    for j in sp.joints:
        key = f"spatial.joints.{j.name}"
        if j.type == "driver":
            if j.joint is not None:
                target = joints.get(j.joint)
                kinds = ("revolute", "cylindrical") if j.motion == "rotation" else ("translational", "cylindrical")
                if target is None or target.type not in kinds:
                    known = [n for n, x in joints.items() if x.type in kinds]
                    raise ck.fail(f"{key}.joint", f"{j.joint!r} is not a {' or '.join(kinds)} joint, which a "
                                  f"{j.motion} driver needs (known: {', '.join(known) or 'none'})")
            else:
                body = j.coordinate.split(".")[0]
                if body not in bodies and body not in natural:
                    raise ck.fail(f"{key}.coordinate", f"unknown spatial body {body!r} "
                                  f"(known: {', '.join([*bodies, *natural]) or 'none'})")
            continue
        ba, bb = point(j.a, f"{key}.a"), point(j.b, f"{key}.b")
        if ba == bb:
            raise ck.fail(f"{key}.b", f"{j.type} joint has both ends on {'ground' if ba == 'ground' else repr(ba)}")
        if hasattr(j, "axis_a"):
            axis(j.axis_a, f"{key}.axis_a", ba)
            axis(j.axis_b, f"{key}.axis_b", bb)
    given = [b for b in sp.bodies if b.independent is not None]
    if given and len(given) != len(sp.bodies):
        missing = next(b.name for b in sp.bodies if b.independent is None)
        raise ck.fail(f"spatial.bodies.{missing}.independent",
                      "list 'independent' on every spatial body (possibly empty) or on none (automatic choice)")
    from .spatial_forces_checks import check_spatial_forces
    check_spatial_forces(ck)
