"""System wiring of ``[[spatial.forces]]`` and ``[spatial.road]``: one vectorized group per
element kind (forces.py, contact.py, tyre.py), built with the index maps of the
spatial body set (spatial_set.py: ``side``, ``body_qidx``, ``point_pidx``,
``axis_pidx``, ``mask``, ``const``).

Parameter names (design-variable paths) are ``spatial.forces.NAME.KEY`` for every scalar
key of the config (schema: config/spatial_forces_schema.py), ``KEY.x|y|z`` for vectors,
and for the Iltis law ``spring.a0|a2|a3``, ``damper.d2|d3|d4``, ``breakpoints.v_lo|v_hi``.
The bushing's reference orientation (the initial relative orientation of the two
bodies, so that it starts unloaded) is a constant entry, not a design variable.
"""
import numpy as np

from ..model.timefunctions import from_config as time_function
from . import road as R
from .contact import PlaneContact, RoadContact
from .forces import (SpatialBumpStop, SpatialBushing, SpatialNonlinearSpringDamper, SpatialPointForce,
                     SpatialSpring, SpatialTorque, conj)
from .kinematics import quat_product
from .tyre import Tyre

XYZ = ("x", "y", "z")


def road_of(spatial_cfg):
    """The road object of [spatial.road] (absent: the plane z = 0)."""
    cfg = getattr(spatial_cfg, "road", None)
    return R.from_config(cfg) if cfg is not None else R.PlaneRoad()


def add_spatial_forces(bodies, system):
    """Add every [[spatial.forces]] element of ``bodies.cfg`` to ``system``'s groups."""
    sp = bodies.cfg
    if sp is None or not sp.forces:
        return
    P = bodies.P
    road = road_of(sp)

    def scalars(base, f, keys):
        return [P.add(f"{base}.{k}", getattr(f, k)) for k in keys]

    def vector(base, key, value):
        return [P.add(f"{base}.{key}.{c}", value[i]) for i, c in enumerate(XYZ)]

    flex = system.spatial_beams
    for f in sp.forces:
        base = f"spatial.forces.{f.name}"
        if f.type == "spring_damper" and any(flex.is_beam_point(r) or system.natural.is_natural_point(r)
                                             for r in (f.a, f.b)):
            # beam points, natural-coordinate bodies (flexible/ancf3d_joints.py, _PairSpringDamper)
            flex.add_spring(system, bodies, f, scalars(base, f, ("stiffness", "damping", "length")))
        elif f.type in ("spring_damper", "bump_stop", "bushing"):
            qa, pa = bodies.side(f.a)
            qb, pb = bodies.side(f.b)
            qidx, sides = qa + qb, pa + pb
            if f.type == "spring_damper" and f.law == "relative":
                from ..model.system import ModelError
                raise ModelError(f"{base}.law", 'law = "relative" needs a beam point or a natural-coordinate '
                                 'body on one side (between spatial bodies: law = "linear")')
            if f.type == "spring_damper" and f.law == "linear":
                pidx = sides + scalars(base, f, ("stiffness", "damping", "length"))
                system._add_force(("SpatialSpring",), SpatialSpring, {}, f.name, qidx, pidx)
            elif f.type == "spring_damper":
                a0, a2, a3 = f.spring
                d2, d3, d4 = f.damper
                law = scalars(base, f, ("stiffness", "damping"))
                law += [P.add(f"{base}.spring.{k}", x) for k, x in (("a0", a0), ("a2", a2), ("a3", a3))]
                law += [P.add(f"{base}.damper.{k}", x) for k, x in (("d2", d2), ("d3", d3), ("d4", d4))]
                law += [P.add(f"{base}.breakpoints.{k}", x) for k, x in zip(("v_lo", "v_hi"), f.breakpoints)]
                system._add_force(("SpatialNonlinearSpringDamper",), SpatialNonlinearSpringDamper, {},
                                  f.name, qidx, sides + law)
            elif f.type == "bump_stop":
                pidx = sides + scalars(base, f, ("stiffness", "length", "smoothing", "damping"))
                system._add_force(("SpatialBumpStop",), SpatialBumpStop, {}, f.name, qidx, pidx)
            else:
                p0 = quat_product(conj(_p0(bodies, f.a)), _p0(bodies, f.b))
                ref = [P.add(f"<{base}.reference.e{i}>", p0[i]) for i in range(4)]
                law = (vector(base, "stiffness", f.stiffness) + vector(base, "rotational_stiffness", f.rotational_stiffness)
                       + vector(base, "damping", f.damping) + vector(base, "rotational_damping", f.rotational_damping))
                system._add_force(("SpatialBushing",), SpatialBushing, {}, f.name, qidx, sides + ref + law)
        elif f.type == "contact":
            q, side = bodies.side(f.point)
            law = scalars(base, f, ("radius", "stiffness", "hunt_crossley", "damping", "smoothing",
                                    "friction", "slip_velocity"))
            if f.surface == "plane":
                n = np.array(f.normal, float) / np.linalg.norm(f.normal)
                plane = vector(base, "origin", f.origin) + [P.add(f"<{base}.normal.{c}>", n[i]) for i, c in enumerate(XYZ)]
                system._add_force(("PlaneContact",), PlaneContact, {}, f.name, q, side + law + plane)
            else:
                system._add_force(("RoadContact",), RoadContact, {"road": road}, f.name, q, side + law)
        elif f.type == "tyre":
            q, side = bodies.side(f"{f.wheel}.{f.centre}")
            law = scalars(base, f, ("radius", "stiffness", "damping", "mu_x", "mu_y", "kappa_c", "alpha_c",
                                    "slip_velocity", "saturation_width", "smoothing"))
            system._add_force(("Tyre",), Tyre, {"road": road}, f.name, q, side + bodies.axis_pidx(f.axis) + law)
        elif f.type == "force":
            fn, coef = time_function(f.function)
            fp = [P.add(f"{base}.function.{k}", c) for k, c in zip(fn.param_names(), coef)]
            q, side = bodies.side(f.point)
            system._add_force(("SpatialPointForce", fn.kind, fn.ncoef), SpatialPointForce, {"function": fn},
                              f.name, q, side + vector(base, "value", f.value) + fp)
        elif f.type == "torque":
            fn, coef = time_function(f.function)
            fp = [P.add(f"{base}.function.{k}", c) for k, c in zip(fn.param_names(), coef)]
            system._add_force(("SpatialTorque", fn.kind, fn.ncoef), SpatialTorque, {"function": fn}, f.name,
                              bodies.body_qidx(f.body), [bodies.mask(f.body)] + vector(base, "value", f.value) + fp)


def _p0(bodies, ref):
    """Initial Euler parameters of the body of a point reference (ground: identity)."""
    body = ref.split(".", 1)[0]
    return np.array([1.0, 0.0, 0.0, 0.0]) if body == "ground" else np.asarray(bodies.bodies[body].p0, float)
