"""A planar rigid multibody model built from a validated config.

Coordinates: q = (x, y, θ) of each body's centre of mass, n = 3·(bodies).  Ground owns
three extra slots n..n+2 of an *extended* vector that always hold zero; components
index that vector and the assembler drops the ground slots.  Constraint rows are
numbered 0..m−1 in joint order.
"""
import numpy as np

from ..errors import ModelError  # noqa: F401  (imported from here throughout)
from . import joints as J, forces as F
from .body_kinds import body_kinds
from .kinematics import rot
from .parameters import Parameters, ZERO
from .timefunctions import from_config, Polynomial


class System:
    """Coordinates, parameters and component groups of one model."""

    def __init__(self, config):
        self.config = config
        self.params = P = Parameters()
        bodies = config.bodies
        self.body_names = [b.name for b in bodies]
        self.body_index = {b.name: i for i, b in enumerate(bodies)}
        self.n = 3 * len(bodies)
        for name, kind in body_kinds():     # self.beams, .ffr, .plates, .continua, .spatial,
            body_set = kind(config, P, self.n)  # .spatial_beams, .natural, .solids: coordinates
            setattr(self, name, body_set)       # after the rigid ones, in registry order
            self.n += body_set.ncoord
        self.spatial.solids = self.solids if len(self.solids) else None   # solids' joint ends (spatial_set.py)
        self.ground_slots = [self.n, self.n + 1, self.n + 2]
        g = config.model.gravity
        gx, gy = P.add("model.gravity.x", g[0]), P.add("model.gravity.y", g[1])

        self.body_p = {}
        for b in bodies:
            base = f"bodies.{b.name}"
            d = {k: P.add(f"{base}.{k}", getattr(b, k)) for k in ("mass", "inertia")}
            d["com"] = (P.add(f"{base}.com.x", b.com[0]), P.add(f"{base}.com.y", b.com[1]))
            d["points"] = {name: (P.add(f"{base}.points.{name}.x", xy[0]),
                                  P.add(f"{base}.points.{name}.y", xy[1]))
                           for name, xy in b.points.items()}
            d["points"]["com"] = d["com"]
            for k in ("x", "y", "angle"):
                d[f"initial.{k}"] = P.add(f"{base}.initial.{k}", getattr(b.initial, k))
                d[f"initial_velocity.{k}"] = P.add(f"{base}.initial_velocity.{k}",
                                                   getattr(b.initial_velocity, k))
            self.body_p[b.name] = d
        self.ground_points = {name: (P.add(f"ground.points.{name}.x", xy[0]),
                                     P.add(f"ground.points.{name}.y", xy[1]))
                              for name, xy in config.ground.points.items()}

        self._elements = {}          # group key -> (class, kwargs, names, qidx, pidx, nrows)
        self.m = 0
        self.constraint_names = []
        for b in bodies:
            i = self.body_index[b.name]
            pb = self.body_p[b.name]
            self._add_force(("Inertia",), F.Inertia, {}, b.name, self._qb(b.name),
                            [pb["mass"], pb["inertia"]])
            self._add_force(("Gravity",), F.Gravity, {}, b.name, self._qb(b.name),
                            [pb["mass"], gx, gy])
        self.beams.add_forces(self, gx, gy)
        self.ffr.add_forces(self, gx, gy)
        self.plates.add_forces(self, gx, gy)
        self.continua.add_forces(self, gx, gy)
        self.spatial.add_forces(self)
        if len(self.spatial_beams):
            self.spatial_beams.add_forces(self, self.spatial.gravity)
        if len(self.natural):
            self.natural.add_forces(self, self.spatial.gravity)
        if len(self.solids):
            self.solids.add_forces(self, self.spatial.gravity)
        for j in config.joints:
            self._add_joint(j)
        for f in config.forces:
            self._add_force_element(f)
        self.natural.add_constraints(self)        # orthonormality rows of natural-coordinate bodies
        self.spatial.add_joints(self)             # normalisation rows, spatial joints and drivers
        self.constraints, self.forces = [], []
        for key, (cls, kw, names, qidx, pidx, rows) in self._elements.items():
            if rows is None:
                self.forces.append(cls(names, qidx, pidx, **kw))
            else:
                self.constraints.append(cls(names, qidx, pidx, rows, **kw))
        del self._elements
        self.p = P.array()
        self._initial_setup()
        # redundant constraint rows (more independent coordinates than n − m): dropped
        # here, before any formulation sizes its matrices (model/redundancy.py)
        from .redundancy import drop_redundant_rows
        self.redundancy = None
        drop_redundant_rows(self)

    # -- helpers -----------------------------------------------------------------
    def _qb(self, body):
        if body == "ground":
            return list(self.ground_slots)
        i = self.body_index[body]
        return [3 * i, 3 * i + 1, 3 * i + 2]

    def _point(self, ref):
        """'BODY.POINT' -> (body, [P̄x, P̄y, c̄x, c̄y] parameter indices)."""
        body, point = ref.split(".", 1)
        if body == "ground":
            px, py = self.ground_points[point]
            return body, [px, py, ZERO, ZERO]
        pb = self.body_p[body]
        return body, [*pb["points"][point], *pb["com"]]

    def _group(self, key, cls, kw, name, qidx, pidx, nrows):
        if key not in self._elements:
            self._elements[key] = (cls, kw, [], [], [], [] if nrows is not None else None)
        e = self._elements[key]
        e[2].append(name)
        e[3].append(qidx)
        e[4].append(pidx)
        if nrows is not None:
            e[5].append(list(range(self.m, self.m + nrows)))
            self.constraint_names += [f"{name}[{k}]" for k in range(nrows)]
            self.m += nrows

    def _add_force(self, key, cls, kw, name, qidx, pidx):
        self._group(key, cls, kw, name, qidx, pidx, None)

    def _angle0(self, ba, bb):
        """Initial-guess relative angle θ_b − θ_a (ground: 0)."""
        ang = {b.name: b.initial.angle for b in self.config.bodies}
        return ang.get(bb, 0.0) - ang.get(ba, 0.0)

    def _add_joint(self, j):
        P = self.params
        base = f"joints.{j.name}"
        if j.type == "driver" and self.continua.is_continuum(j.coordinate.rsplit(".", 1)[0]):
            return self.continua.add_joint(self, j)
        if j.type == "driver":
            body, coord = j.coordinate.rsplit(".", 1)
            fn, coef = from_config(j.function)
            if self.ffr.is_ffr_body(body):
                return self.ffr.add_driver(self, j, fn, coef)
            names = fn.param_names()
            pidx = [*self.body_p[body]["com"]] + [P.add(f"{base}.function.{k}", c)
                                                  for k, c in zip(names, coef)]
            key = ("Driver", coord, fn.kind, fn.ncoef)
            self._group(key, J.Driver, {"coordinate": coord, "function": fn}, j.name,
                        self._qb(body), pidx, 1)
            return
        if j.type == "distance_driver":
            fn, coef = from_config(j.function)
            ba, pa = self._point(j.a)
            bb, pbb = self._point(j.b)
            pidx = pa + pbb + [P.add(f"{base}.function.{k}", c) for k, c in zip(fn.param_names(), coef)]
            self._group(("DistanceDriver", fn.kind, fn.ncoef), J.DistanceDriver, {"function": fn}, j.name,
                        self._qb(ba) + self._qb(bb), pidx, 1)
            return
        if self.continua.is_continuum_point(j.a) or self.continua.is_continuum_point(j.b):
            return self.continua.add_joint(self, j)
        if self.plates.is_plate_point(j.a) or self.plates.is_plate_point(j.b):
            return self.plates.add_joint(self, j)
        if self.ffr.is_ffr_point(j.a) or self.ffr.is_ffr_point(j.b):
            return self.ffr.add_joint(self, j)
        if self.beams.is_beam_point(j.a) or self.beams.is_beam_point(j.b):
            return self.beams.add_joint(self, j)
        ba, pa = self._point(j.a)
        bb, pbb = self._point(j.b)
        qidx = self._qb(ba) + self._qb(bb)
        if j.type == "revolute":
            self._group(("Revolute",), J.Revolute, {}, j.name, qidx, pa + pbb, 2)
        elif j.type == "weld":
            th = P.add(f"{base}.angle", self._angle0(ba, bb))
            self._group(("Weld",), J.Weld, {}, j.name, qidx, pa + pbb + [th], 3)
        elif j.type == "prismatic":
            ux, uy = P.add(f"{base}.axis.x", j.axis[0]), P.add(f"{base}.axis.y", j.axis[1])
            th = P.add(f"{base}.angle", self._angle0(ba, bb))
            self._group(("Prismatic",), J.Prismatic, {}, j.name, qidx, pa + pbb + [ux, uy, th], 2)

    def _add_force_element(self, f):
        P = self.params
        base = f"forces.{f.name}"
        if f.type == "python":
            from .python_force import PythonForce
            from .user_code import load_callable
            key = f"{base}.callable"
            fn = load_callable(f.callable, self.config.source, key)
            pidx = [P.add(f"{base}.parameters.{k}", v) for k, v in f.parameters.items()]
            qidx = [i for b in f.bodies for i in self._qb(b)]
            self._add_force(("PythonForce", f.name), PythonForce,
                            {"fn": fn, "nbodies": len(f.bodies), "parameters": tuple(f.parameters), "key": key},
                            f.name, qidx, pidx)
            return
        if f.type == "spring":
            ba, pa = self._point(f.a)
            bb, pbb = self._point(f.b)
            pidx = pa + pbb + [P.add(f"{base}.{k}", getattr(f, k)) for k in ("stiffness", "damping", "length")]
            self._add_force(("Spring",), F.Spring, {}, f.name, self._qb(ba) + self._qb(bb), pidx)
        elif f.type == "rotational_spring":
            pidx = [P.add(f"{base}.{k}", getattr(f, k)) for k in ("stiffness", "damping", "angle")]
            self._add_force(("RotationalSpring",), F.RotationalSpring, {}, f.name,
                            self._qb(f.a) + self._qb(f.b), pidx)
        elif f.type == "contact":
            from .contact import PlanarContact
            body, pp = self._point(f.point)
            law = [P.add(f"{base}.{k}", getattr(f, k)) for k in
                   ("radius", "stiffness", "hunt_crossley", "damping", "smoothing", "friction", "slip_velocity")]
            line = [P.add(f"{base}.{k}.{c}", getattr(f, k)[i]) for k in ("origin", "normal")
                    for i, c in enumerate("xy")]
            self._add_force(("PlanarContact",), PlanarContact, {}, f.name, self._qb(body), pp + law + line)
        elif f.type == "rotational_stop":
            from .contact import RotationalStop
            sign = 1.0 if f.side == "above" else -1.0
            pidx = [P.add(f"{base}.{k}", getattr(f, k))
                    for k in ("angle", "stiffness", "hunt_crossley", "damping", "smoothing")]
            self._add_force(("RotationalStop", sign), RotationalStop, {"sign": sign}, f.name,
                            self._qb(f.a) + self._qb(f.b), pidx)
        elif f.type == "stance_lock":
            from .contact import StanceLock
            c = next(c for c in self.config.forces if c.name == f.contact)
            cb = f"forces.{c.name}"
            _, pp = self._point(c.point)
            # the contact's own entries (P.add is idempotent: the same indices whichever
            # of the two the config declares first)
            shared = pp + [P.add(f"{cb}.radius", c.radius)] + [P.add(f"{cb}.{k}.{x}", getattr(c, k)[i])
                                                               for k in ("origin", "normal")
                                                               for i, x in enumerate("xy")]
            pidx = shared + [P.add(f"{base}.{k}", getattr(f, k)) for k in ("angle", "stiffness", "damping",
                                                                           "engagement")]
            self._add_force(("StanceLock",), StanceLock, {}, f.name, self._qb(f.a) + self._qb(f.b), pidx)
        elif f.type in ("force", "torque"):
            fn, coef = from_config(f.function)
            fp = [P.add(f"{base}.function.{k}", c) for k, c in zip(fn.param_names(), coef)]
            if f.type == "force" and self.ffr.is_ffr_point(f.point):
                self.ffr.add_point_force(self, f, fn, fp)
            elif f.type == "force" and self.beams.is_beam_point(f.point):
                self.beams.add_point_force(self, f, fn, fp)
            elif f.type == "force":
                body, pp = self._point(f.point)
                pidx = pp + [P.add(f"{base}.value.x", f.value[0]), P.add(f"{base}.value.y", f.value[1])] + fp
                self._add_force(("PointForce", fn.kind, fn.ncoef), F.PointForce, {"function": fn},
                                f.name, self._qb(body), pidx)
            else:
                pidx = [P.add(f"{base}.value", f.value)] + fp
                self._add_force(("Torque", fn.kind, fn.ncoef), F.Torque, {"function": fn},
                                f.name, self._qb(f.body), pidx)

    # -- initial assembly data -----------------------------------------------------
    def _initial_setup(self):
        """Initial guess (COM coordinates) and the independent-coordinate equations.

        The user gives the pose of each body frame; an independent coordinate k of body
        b adds the equation  (frame coordinate k) − p[initial.k] = 0, written as a
        driver with a constant polynomial whose coefficient is that parameter, so its
        derivative with respect to p (initial values, centre of mass) comes for free.
        """
        q0 = np.zeros(self.n)
        for i, b in enumerate(self.config.bodies):
            c = np.array(b.com)
            q0[3 * i:3 * i + 2] = np.array([b.initial.x, b.initial.y]) + rot(b.initial.angle, c)
            q0[3 * i + 2] = b.initial.angle
        self.q_guess = q0
        self.independent = []   # (key, Driver group, velocity parameter index)
        self.beams.initial_setup(self, q0)
        self.ffr.initial_setup(self, q0)
        self.plates.initial_setup(self, q0)
        self.continua.initial_setup(self, q0)
        self.spatial_beams.initial_setup(self, q0)
        self.natural.initial_setup(self, q0)
        self.solids.initial_setup(self, q0, self.spatial)     # before the spatial set's automatic choice
        self.spatial.initial_setup(self, q0)
        for b in self.config.bodies:
            pb = self.body_p[b.name]
            for k in b.independent:
                drv = J.Driver([f"{b.name}.{k}"], [self._qb(b.name)],
                               [[*pb["com"], pb[f"initial.{k}"]]], [[0]],
                               coordinate=k, function=Polynomial(1))
                self.independent.append((f"bodies.{b.name}.independent", drv,
                                         pb[f"initial_velocity.{k}"]))

    # -- convenience ---------------------------------------------------------------
    def extend(self, x):
        """Append ground's zero slots to a coordinate-sized array (last axis)."""
        x = np.asarray(x)
        return np.concatenate([x, np.zeros(x.shape[:-1] + (3,), dtype=x.dtype)], -1)

    def point_offset(self, ref, p=None):
        """(body coordinate indices in the extended vector, s = P̄ − c̄) of a point."""
        p = self.p if p is None else p
        if self.plates.is_plate_point(ref):       # a plate node: (x, y, ground's zero angle slot)
            return self.plates.point_coords(ref) + [self.ground_slots[2]], np.zeros(2), [ZERO] * 4
        body, idx = self._point(ref)
        return self._qb(body), p[idx[0:2]] - p[idx[2:4]], idx

    def describe(self):
        return {"bodies": len(self.body_names), "beams": len(self.beams) + len(self.ffr), "plates": len(self.plates),
                "continua": len(self.continua), "spatial bodies": len(self.spatial),
                "spatial beams": len(self.spatial_beams), "natural bodies": len(self.natural),
                "solids": len(self.solids),
                "coordinates": self.n, "constraints": self.m,
                "dof": self.n - self.m, "parameters": len(self.params) - 1,
                "components": {type(g).__name__: g.ne for g in self.constraints + self.forces}}
