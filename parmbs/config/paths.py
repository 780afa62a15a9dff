"""Design-variable paths: dotted addresses of scalar numbers in a ``Config``.

Allowed forms (NAME is an entity name, P a point name, K an integer index)::

    model.gravity.x|y
    ground.points.P.x|y
    bodies.NAME.mass|inertia
    bodies.NAME.com.x|y
    bodies.NAME.points.P.x|y
    bodies.NAME.initial.x|y|angle
    bodies.NAME.initial_velocity.x|y|angle
    beams.NAME.length|width|height|side|density|E
    beams.NAME.points.P                                 (arclength)
    beams.NAME.initial.x|y|angle, beams.NAME.initial_velocity.x|y|angle
    plates.NAME.size.x|y|thickness|E|nu|rho0|penalization
    plates.NAME.initial.x|y|angle, plates.NAME.initial_velocity.x|y|angle
    continua.NAME.size.x|y|offset.x|y|thickness|E|nu|rho0|penalization|initial.*|initial_velocity.*
    continua.NAME.density, plates.NAME.density
                                   (the whole element field: one design variable per
                                    element; ``design.py`` expands it, see ``field_path``)
    forces.NAME.stiffness|damping|length|angle|value   (value: torque)
    forces.NAME.value.x|y                               (point force)
    forces.NAME.parameters.KEY                          (python force)
    forces.NAME.radius|hunt_crossley|smoothing|friction|slip_velocity|origin.x|y|normal.x|y
                                                        (contact; stiffness, damping too)
    forces.NAME.angle|hunt_crossley|smoothing|engagement (rotational_stop, stance_lock)
    forces.NAME.function.amplitude|omega|phase|offset
    forces.NAME.function.coefficients.K
    joints.NAME.function.amplitude|omega|phase|offset
    joints.NAME.function.coefficients.K                 (driver, distance_driver)
    joints.NAME.function.amplitudes|starts|durations.K  (sine_pulses)
    joints.NAME.function.values.K, forces.NAME.function.values.K  (table; a noise
                                    function's samples are generated, not design variables)
    spatial.gravity.x|y|z, spatial.ground.points.P.x|y|z
    spatial.bodies.NAME.mass, spatial.bodies.NAME.inertia.xx|yy|zz|xy|xz|yz
                                   (xy|xz|yz: full 3×3 inertia only; both symmetric
                                    entries change together)
    spatial.bodies.NAME.points.P.x|y|z, spatial.bodies.NAME.initial.position.x|y|z
    spatial.bodies.NAME.initial_velocity.velocity.x|y|z|angular_velocity.x|y|z
    spatial.joints.NAME.function.…, spatial.joints.NAME.angle (beam–beam weld), spatial.forces.NAME.…
    spatial.beams.NAME.length|density|E, spatial.beams.NAME.section.side|radius|outer_radius|inner_radius,
    spatial.beams.NAME.points.P (arclength), spatial.beams.NAME.initial.position.x|y|z
    spatial.natural_bodies.NAME.mass|inertia.xx|…|points.P.x|y|z|initial.position.x|y|z
    spatial.solids.NAME.E|nu|rho0|penalization|initial.position.x|y|z|initial_velocity.…,
    spatial.solids.NAME.density    (the whole element field, as continua.NAME.density)

``with_value`` is what finite differences use: a revalidated copy with one
number changed.
"""
from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .schema import Config

#: Fields of each named entity through which a design path may go.
_ENTITY_FIELDS = {
    "bodies": ("mass", "inertia", "com", "points", "initial", "initial_velocity"),
    "forces": ("stiffness", "damping", "length", "angle", "value", "function", "parameters",
               "radius", "hunt_crossley", "smoothing", "friction", "slip_velocity", "origin", "normal", "engagement"),
    "joints": ("function",),
    "beams": ("length", "width", "height", "side", "density", "E", "points", "initial", "initial_velocity"),
    "plates": ("size", "thickness", "E", "nu", "rho0", "penalization", "density", "initial", "initial_velocity"),
    "continua": ("size", "offset", "thickness", "E", "nu", "rho0", "penalization", "density", "initial",
                 "initial_velocity"),
}
_SINGULAR = {"bodies": "body", "forces": "force", "joints": "joint", "beams": "beam", "plates": "plate", "continua": "continuum"}
_ROOT_FIELDS = {"model": "gravity", "ground": "points"}


class PathError(ValueError):
    """A design path that does not address a scalar number of the config."""


def _locate(data: dict[str, Any], path: str) -> tuple[Any, Any]:
    """(container, index) of the number addressed by ``path`` in ``to_dict()`` data."""
    segs = path.split(".")
    if not all(segs):
        raise PathError(f"invalid path {path!r}")
    head = segs[0]
    if head == "spatial":
        node, rest, done = _spatial_root(data, path, segs)
    elif head in _ROOT_FIELDS and len(segs) >= 2 and segs[1] == _ROOT_FIELDS[head]:
        node, rest, done = data[head], segs[1:], [head]
    elif head in _ENTITY_FIELDS and len(segs) >= 3:
        entries = {e["name"]: e for e in data[head]}
        if segs[1] not in entries:
            known = ", ".join(entries) or "none"
            raise PathError(f"{path!r}: no {_SINGULAR[head]} named {segs[1]!r} (known: {known})")
        if segs[2] not in _ENTITY_FIELDS[head]:
            raise PathError(f"{path!r}: {segs[2]!r} is not a design field of {head} "
                            f"(allowed: {', '.join(_ENTITY_FIELDS[head])})")
        node, rest, done = entries[segs[1]], segs[2:], segs[:2]
    else:
        raise PathError(f"{path!r}: must start with model.gravity, ground.points, "
                        "bodies.NAME, beams.NAME, plates.NAME, continua.NAME, forces.NAME or joints.NAME")

    container: Any = None
    index: Any = None
    for seg in rest:
        where = ".".join(done)
        if isinstance(node, dict):
            if seg not in node or node[seg] is None:
                known = ", ".join(k for k, v in node.items() if v is not None) or "none"
                raise PathError(f"{path!r}: {where} has no {seg!r} (known: {known})")
            container, index = node, seg
        elif isinstance(node, list):
            if done[-1] == "inertia" and seg in _INERTIA:
                i, j = _INERTIA[seg]
                if isinstance(node[0], list):        # full 3×3
                    container, index = node[i], j
                elif i == j:                         # principal [xx, yy, zz]
                    container, index = node, i
                else:
                    raise PathError(f"{path!r}: a principal inertia has no {seg!r} (give a full 3×3 inertia)")
                node = container[index]
                done.append(seg)
                continue
            if (seg in ("x", "y", "z") and (len(node) == 3 or (len(node) == 2 and seg != "z"))
                    and done[-1] != "coefficients"):
                idx = ("x", "y", "z").index(seg)
            elif seg.isdigit() and int(seg) < len(node):
                idx = int(seg)
            else:
                raise PathError(f"{path!r}: bad index {seg!r} into {where} (length {len(node)})")
            container, index = node, idx
        else:
            raise PathError(f"{path!r}: {where} is a number, it has no {seg!r}")
        node = container[index]
        done.append(seg)
    if isinstance(node, bool) or not isinstance(node, (int, float)):
        kind = {dict: "a table", list: "an array", str: "a string"}.get(type(node), type(node).__name__)
        hint = " (add .x or .y)" if isinstance(node, list) else ""
        raise PathError(f"{path!r} is {kind}, not a number{hint}")
    return container, index


#: inertia component -> (row, column) of the 3×3 inertia
_INERTIA = {"xx": (0, 0), "yy": (1, 1), "zz": (2, 2), "xy": (0, 1), "xz": (0, 2), "yz": (1, 2)}
#: fields of each [spatial] entity through which a design path may go (forces: owner spatial-forces)
_SPATIAL_FIELDS = {"bodies": ("mass", "inertia", "points", "initial", "initial_velocity"),
                   "beams": ("length", "density", "E", "section", "points", "initial"),
                   "natural_bodies": ("mass", "inertia", "points", "initial"),
                   "solids": ("E", "nu", "rho0", "penalization", "density", "initial", "initial_velocity"),
                   "joints": ("function", "angle"), "forces": None}


_SPATIAL_SINGULAR = {"bodies": "body", "natural_bodies": "natural body", "solids": "solid"}


def _spatial_root(data, path, segs):
    """(node, rest, done) of a ``spatial.…`` path for ``_locate``."""
    sp = data.get("spatial")
    if sp is None:
        raise PathError(f"{path!r}: the config has no [spatial] section")
    if len(segs) >= 2 and segs[1] in ("gravity", "ground"):
        if segs[1] == "ground" and (len(segs) < 3 or segs[2] != "points"):
            raise PathError(f"{path!r}: only spatial.ground.points.P.x|y|z is a design path")
        return sp, segs[1:], segs[:1]
    if len(segs) >= 4 and segs[1] in _SPATIAL_FIELDS:
        entries = {e["name"]: e for e in sp.get(segs[1]) or []}
        if segs[2] not in entries:
            raise PathError(f"{path!r}: no spatial {_SPATIAL_SINGULAR.get(segs[1], segs[1][:-1])} named "
                            f"{segs[2]!r} (known: {', '.join(entries) or 'none'})")
        allowed = _SPATIAL_FIELDS[segs[1]]
        if allowed is not None and segs[3] not in allowed:
            raise PathError(f"{path!r}: {segs[3]!r} is not a design field of spatial.{segs[1]} "
                            f"(allowed: {', '.join(allowed)})")
        return entries[segs[2]], segs[3:], segs[:3]
    raise PathError(f"{path!r}: must start with spatial.gravity, spatial.ground.points, spatial.bodies.NAME, "
                    "spatial.beams.NAME, spatial.natural_bodies.NAME, spatial.joints.NAME or spatial.forces.NAME")


def field_path(cfg: "Config", path: str) -> bool:
    """True if ``path`` names a whole element field (``plates.NAME.density``,
    ``continua.NAME.density``)."""
    segs = path.split(".")
    if len(segs) == 4 and segs[:2] == ["spatial", "solids"] and segs[3] == "density":   # spatial.solids.S.density
        return cfg.spatial is not None and segs[2] in {s.name for s in cfg.spatial.solids}
    return (len(segs) == 3 and segs[0] in ("plates", "continua") and segs[2] == "density"
            and segs[1] in {p.name for p in getattr(cfg, segs[0])})


def nominal_value(cfg: "Config", path: str) -> float:
    """Nominal value of the scalar addressed by ``path``; ``PathError`` if invalid."""
    container, index = _locate(cfg.to_dict(), path)
    return float(container[index])


def resolve_path(cfg: "Config", path: str) -> float:
    """Like ``nominal_value`` but raising ``ConfigError`` (key = ``path``) if invalid."""
    from .errors import ConfigError

    try:
        return nominal_value(cfg, path)
    except PathError as exc:
        raise ConfigError(cfg.source, path, str(exc)) from None


def with_value(cfg: "Config", path: str, value: float) -> "Config":
    """Revalidated deep copy of ``cfg`` with the scalar at ``path`` set to ``value``.

    Raises ``ConfigError`` (key = ``path``) for an invalid path, or the usual
    ``ConfigError`` if the new value makes the config invalid (e.g. mass <= 0).
    The copy's ``text_sha256`` hashes the parent's together with the change.
    """
    from .errors import ConfigError
    from .loader import validate

    data = cfg.to_dict()
    try:
        container, index = _locate(data, path)
    except PathError as exc:
        raise ConfigError(cfg.source, path, str(exc)) from None
    container[index] = float(value)
    segs = path.split(".")
    if segs[0] == "spatial" and len(segs) >= 2 and segs[-2] == "inertia" and segs[-1] in ("xy", "xz", "yz"):
        i, j = _INERTIA[segs[-1]]                # keep the full inertia symmetric
        body = next(e for e in data["spatial"]["bodies"] if e["name"] == segs[2])
        body["inertia"][j][i] = float(value)
    sha = hashlib.sha256(f"{cfg.text_sha256}\0{path}={float(value)!r}".encode()).hexdigest()
    return validate(data, cfg.source, sha)


def with_values(cfg: "Config", values: dict[str, float]) -> "Config":
    """Like ``with_value`` for several paths at once (validated once: a linked design's
    variables are valid together, not necessarily one at a time)."""
    from .errors import ConfigError
    from .loader import validate

    data = cfg.to_dict()
    text = str(cfg.text_sha256)
    for path, value in values.items():
        try:
            container, index = _locate(data, path)
        except PathError as exc:
            raise ConfigError(cfg.source, path, str(exc)) from None
        container[index] = float(value)
        text += f"\0{path}={float(value)!r}"
    return validate(data, cfg.source, hashlib.sha256(text.encode()).hexdigest())
