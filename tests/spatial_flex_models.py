"""Small spatial models of the tests of spatial ANCF beams and natural-coordinate bodies
(tests/test_spatial_beams.py, tests/test_natural_bodies.py), written as Python tables and
turned into config text by ``toml`` (one place for the shared boilerplate)."""
import json


def _val(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_val(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_val(x)}" for k, x in v.items()) + " }"
    return repr(float(v)) if isinstance(v, float) else repr(v)


def _table(header, d):
    return [header] + [f"{k} = {_val(v)}" for k, v in d.items()]


def toml(name, ground, *, beams=(), bodies=(), natural=(), joints=(), forces=(), simulation=None,
         design=(), objectives=()):
    """Config text: gravity −z, ground points ``ground``, the given tables; ``design`` is a
    list of (name, path)."""
    lines = _table("[model]", {"name": name, "gravity": [0.0, 0.0]})
    lines += _table("[spatial]", {"gravity": [0.0, 0.0, -9.81]})
    lines += _table("[spatial.ground]", {"points": ground})
    for key, items in (("spatial.beams", beams), ("spatial.bodies", bodies), ("spatial.natural_bodies", natural),
                       ("spatial.joints", joints), ("spatial.forces", forces)):
        for d in items:
            lines += _table(f"[[{key}]]", d)
    lines += _table("[simulation]", simulation or {})
    for n, path in design:
        lines += _table("[[design]]", {"name": n, "path": path})
    for d in objectives:
        lines += _table("[[objectives]]", d)
    return "\n".join(lines) + "\n"


def spherical(name, a, b):
    return {"type": "spherical", "name": name, "a": a, "b": b}


def beam(name, length, elements, section, density, E, position, direction, omega=None, **extra):
    """A spatial beam table, root direction independent."""
    d = {"name": name, "length": length, "elements": elements, "section": section, "density": density, "E": E,
         "initial": {"position": position, "direction": direction}}
    if omega is not None:
        d["initial_velocity"] = {"angular_velocity": omega}
    d["independent"] = ["direction"]
    d.update(extra)
    return d


#: the seed's §6.1 beam (1.2 m, square 0.05 m, ρ = 4000, E = 1e7, 5 elements) as a 3-D
#: pendulum released horizontally, turning at 1 rad/s about z: a soft beam with large
#: strains (the stress objective well above round-off)
SOFT = toml("soft-pendulum", {"A": [0.0, 0.0, 0.0]},
            beams=[beam("beam", 1.2, 5, {"shape": "square", "side": 0.05}, 4000.0, 1.0e7, [0.0, 0.0, 0.0],
                        [1.0, 0.0, 0.0], omega=[0.0, 0.0, 1.0])],
            joints=[spherical("A", "ground.A", "beam.root")],
            simulation={"t_end": 1.0, "dt": 1e-3, "integrator": "variational"},
            objectives=[{"name": "tip_speed", "integrand": "point_velocity_sq", "point": "beam.tip"},
                        {"name": "stress", "integrand": "stress_ks", "body": "beam", "ks_rho": 1e-3}])
