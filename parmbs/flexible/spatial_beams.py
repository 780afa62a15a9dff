"""Bookkeeping of spatial ANCF beams (``[[spatial.beams]]``) in a System: coordinates,
parameters, element groups, points, joints to spatial bodies and the initial rows.

Coordinates: after the spatial rigid bodies; beam b with n_el elements owns 6(n_el + 1)
consecutive coordinates, node k at offset 6k: (r_x, r_y, r_z, ∂r_x/∂x, ∂r_y/∂x,
∂r_z/∂x), named "B.nodeK.x|y|z|dx|dy|dz".

Parameters (config paths, so any can be a design variable):
``spatial.beams.B.length|density|E``, ``spatial.beams.B.section.side|radius|
outer_radius|inner_radius``, ``spatial.beams.B.points.P`` (arclength),
``spatial.beams.B.initial.position.x|y|z``.  The direction (normalised), the two unit
normals n₁, n₂ ⊥ it and the initial tangent rate ω × d are constant entries.

Initial configuration (as the planar beams, ``beams.py``): straight and unstretched —
rows "node k = root + s_k·tangent, slope_k = slope_0" (6 n_el) and |r′_0| = 1 (1; not
for side b of a beam–beam weld, whose angle row sets that beam's chord instead) —
plus the ``independent`` rows: x, y, z (root position; velocity from
``initial_velocity.velocity``) and direction (n₁·r′_0 = n₂·r′_0 = 0; rates
(ω × d)·n_k).  All other rows have zero velocity right-hand side, so the initial
velocity field is rigid.
"""
from types import SimpleNamespace

import numpy as np

from ..model.parameters import ZERO
from ..model.body_kinds import body_kind
from ..spatial.spatial_set import perpendiculars
from . import ancf3d
from ..spatial.natural import Beam3Pose
from .ancf3d_joints import AXIS_PAIRS, DISTANCES, PAIRS, SPRINGS, Beam3Shape, SpatialBeamBeamWeld
from .beams import _Beam, const

NODE_DOF = 6
XYZ = ("x", "y", "z")
#: section parameters (d₁, d₂) by shape: config keys (None: the zero entry)
SECTION_KEYS = {"square": ("side", "side"), "circle": ("radius", None), "tube": ("outer_radius", "inner_radius")}


class _Beam3(_Beam):
    """One spatial beam (reuses the planar beam's element and point maps)."""

    def __init__(self, cfg, P, offset):
        self.cfg, self.name, self.nel, self.offset = cfg, cfg.name, cfg.elements, offset
        self.ncoord = NODE_DOF * (self.nel + 1)
        base = f"spatial.beams.{cfg.name}"
        self.p = {k: P.add(f"{base}.{k}", getattr(cfg, k)) for k in ("density", "E", "length")}
        if cfg.axial_damping:                   # Kelvin–Voigt β > 0 (ancf3d.Ancf3AxialDamping)
            self.p["axial_damping"] = P.add(f"{base}.axial_damping", cfg.axial_damping)
        if cfg.bending_damping:                 # Kelvin–Voigt β_b > 0 (ancf3d.Ancf3BendingDamping)
            self.p["bending_damping"] = P.add(f"{base}.bending_damping", cfg.bending_damping)
        sec = cfg.section
        self.section = sec.shape
        self.p["d"] = [ZERO if k is None else P.add(f"{base}.section.{k}", getattr(sec, k))
                       for k in SECTION_KEYS[sec.shape]]
        self.p["nel"] = const(P, self.nel)
        for k in range(self.nel + 1):
            const(P, k / self.nel)
            const(P, k)
        self.points = {k: P.add(f"{base}.points.{k}", s) for k, s in cfg.points.items()}
        self.position = [P.add(f"{base}.initial.position.{c}", cfg.initial.position[i]) for i, c in enumerate(XYZ)]
        self.velocity = [P.add(f"{base}.initial_velocity.velocity.{c}", cfg.initial_velocity.velocity[i])
                         for i, c in enumerate(XYZ)]
        d = np.array(cfg.initial.direction, float)
        self.direction = d = d / np.linalg.norm(d)
        # constant entries of the independent rows (p is built before the rows are)
        self.axes = [[const(P, v) for v in e] for e in np.eye(3)]
        rate = np.cross(np.array(cfg.initial_velocity.angular_velocity, float), d)
        self.normals = [([const(P, v) for v in n], const(P, float(rate @ n))) for n in perpendiculars(d)]

    def node(self, k):
        o = self.offset + NODE_DOF * k
        return list(range(o, o + NODE_DOF))

    def material(self):
        return [self.p["density"], *self.p["d"], self.p["E"], self.p["length"], self.p["nel"]]

    def element_params(self):
        """(qidx (E, 12), pidx (E, 6)) of every element: for outputs (stress)."""
        return [self.element(e) for e in range(self.nel)], [self.material()] * self.nel


@body_kind("spatial_beams", order=60)  # spatial ANCF beams: after the spatial bodies
class SpatialBeamSet:
    """All spatial ANCF beams of a model."""

    def __init__(self, config, P, offset):
        self.P = P
        sp = getattr(config, "spatial", None)
        self.beams = {}
        for b in (sp.beams if sp is not None else []):
            self.beams[b.name] = _Beam3(b, P, offset)
            offset += self.beams[b.name].ncoord
        self.ncoord = sum(b.ncoord for b in self.beams.values())
        self.free_stretch = set()       # beams whose |r′₀| = 1 row a beam–beam weld replaces

    def __len__(self):
        return len(self.beams)

    def coordinate_names(self):
        return [f"{b.name}.node{k}.{c}" for b in self.beams.values()
                for k in range(b.nel + 1) for c in ("x", "y", "z", "dx", "dy", "dz")]

    def is_beam_point(self, ref):
        return ref.split(".", 1)[0] in self.beams

    def point(self, ref):
        body, name = ref.split(".", 1)
        return self.beams[body].point(self.P, name)

    # -- element groups --------------------------------------------------------------------
    def add_forces(self, system, gravity):
        for b in self.beams.values():
            elastic = ancf3d.Ancf3Elastic if b.cfg.elastic == "seed" else ancf3d.Ancf3ElasticConservative
            kw = {"section": b.section}
            for e in range(b.nel):
                name, qidx, mat = f"{b.name}[{e}]", b.element(e), b.material()
                for cls, pidx in ((ancf3d.Ancf3Inertia, mat), (ancf3d.Ancf3Gravity, mat + list(gravity)),
                                  (elastic, mat)):
                    system._add_force((cls.__name__, b.section), cls, kw, name, qidx, pidx)
                if "axial_damping" in b.p:
                    system._add_force(("Ancf3AxialDamping", b.section), ancf3d.Ancf3AxialDamping, kw, name, qidx,
                                      mat + [b.p["axial_damping"]])
                if "bending_damping" in b.p:
                    system._add_force(("Ancf3BendingDamping", b.section), ancf3d.Ancf3BendingDamping, kw, name,
                                      qidx, mat + [b.p["bending_damping"]])

    # -- joints ----------------------------------------------------------------------------
    def sides(self, system, spatial, refs):
        """The two point references of a joint or spring-damper as (kind, coordinate
        indices, parameter indices, ref), ordered rigid < natural < beam (the key order of
        ancf3d_joints.PAIRS and SPRINGS); kinds: "rigid" (ground, Euler-parameter body),
        "natural", "beam"."""
        nat = system.natural
        rank = {"rigid": 0, "natural": 1, "beam": 2}
        out = []
        for ref in refs:
            if self.is_beam_point(ref):
                out.append(("beam", *self.point(ref), ref))
            elif nat.is_natural_point(ref):
                out.append(("natural", *nat.point(ref), ref))
            else:
                out.append(("rigid", *spatial.side(ref), ref))
        return sorted(out, key=lambda s: rank[s[0]])

    def initial_point(self, system, spatial, kind, ref):
        """The global position of a joint point at the configured initial poses (straight
        beams, natural bodies at their initial pose, spatial bodies, ground)."""
        body, name = ref.split(".", 1)
        vals = self.P.values
        if kind == "beam":
            b = self.beams[body]
            s = (0.0 if name == "root" else b.cfg.length if name == "tip" else b.cfg.points[name]
                 if name in b.cfg.points else b.cfg.length * int(name[4:]) / b.nel)
            return np.asarray(b.cfg.initial.position, float) + s * b.direction
        if kind == "natural":
            nb = system.natural.bodies[body]
            return np.asarray(nb.cfg.initial.position, float) + nb.A0 @ np.array([vals[i] for i in nb.points[name]])
        return self._rigid_point(spatial, ref)

    @staticmethod
    def _rigid_point(spatial, ref):
        body = ref.split(".", 1)[0]
        s = np.array([spatial.P.values[i] for i in spatial.point_pidx(ref)])
        r0 = np.zeros(3) if body == "ground" else np.asarray(spatial.bodies[body].cfg.initial.position, float)
        return r0 + spatial._A0(body) @ s

    def _tangent0(self, ref):
        return self.beams[ref.split(".", 1)[0]].direction

    def add_joint(self, system, spatial, j):
        """A ``[[spatial.joints]]`` entry with a beam point or a natural-coordinate body on at
        least one side: spherical between any two of ground / Euler body ("rigid"), natural
        body and beam point; revolute, universal, cylindrical and translational between a
        rigid or natural side and a natural body (ancf3d_joints.AXIS_PAIRS); rigid (the weld
        of ancf3d_joints.py) from a rigid or natural side a to a beam point."""
        from ..model.system import ModelError
        key = f"spatial.joints.{j.name}"
        (ka, qa, pa, ra), (kb, qb, pb, rb) = self.sides(system, spatial, (j.a, j.b))
        weld = j.type == "rigid"
        if j.type == "distance":
            cls = DISTANCES.get((ka, kb))
            if cls is None:
                raise ModelError(f"{key}.type", f"a distance joint between a {ka} side and a {kb} side is not "
                                 "available (one side must be a natural-coordinate body or a beam point)")
            l0 = np.linalg.norm(self.initial_point(system, spatial, ka, ra)
                                - self.initial_point(system, spatial, kb, rb))
            system._group((cls.__name__,), cls, {}, j.name, qa + qb, pa + pb + [const(self.P, l0)], 1)
            return
        if weld and ka == kb == "beam":
            angle = j.angle
            if angle is None:
                angle = float(np.arccos(np.clip(self._tangent0(ra) @ self._tangent0(rb), -1.0, 1.0)))
            if abs(np.cos(angle)) > 1.0 - 1e-6:
                raise ModelError(f"{key}.angle", "a weld of two beams needs tangents that are not parallel "
                                 f"(angle {angle:.9g} rad: the angle row is singular)")
            self.free_stretch.add(rb.split(".", 1)[0])
            cls = SpatialBeamBeamWeld
            system._group((cls.__name__,), cls, {}, j.name, qa + qb, pa + pb + [self.P.add(f"{key}.angle", angle)],
                          cls.m)
            return
        if getattr(j, "angle", None) is not None:
            raise ModelError(f"{key}.angle", "only a weld of two beam points holds an angle")
        if j.type in ("revolute", "universal", "cylindrical", "translational"):
            cls = AXIS_PAIRS.get((ka, kb, j.type))
            if cls is None:
                raise ModelError(f"{key}.type", f"a {j.type} joint between a {ka} side and a {kb} side is not "
                                 "available (joints with axes join ground, spatial bodies and natural bodies; a "
                                 "beam point takes spherical and rigid joints)")
            # the sides in PAIRS order: the config's axes follow their points
            side = SimpleNamespace(type=j.type, name=j.name, a=ra, b=rb,
                                   axis_a=j.axis_a if ra == j.a else j.axis_b, axis_b=j.axis_b if ra == j.a else j.axis_a)
            system._group((cls.__name__,), cls, {}, j.name, qa + qb,
                          pa + pb + spatial._joint_vectors(side, system.natural), cls.m)
            return
        cls = PAIRS.get((ka, kb, weld)) if j.type in ("spherical", "rigid") else None
        if cls is None:
            raise ModelError(f"{key}.type", f"a {j.type} joint between a {ka} side and a {kb} side is not "
                             "available (spherical joins ground, spatial bodies, natural bodies and beam "
                             "points; rigid joins a spatial or natural body, or ground, to a beam point)")
        pidx = pa + pb
        if weld:
            body = ra.split(".", 1)[0]
            A0 = system.natural.bodies[body].A0 if ka == "natural" else spatial._A0(body)
            t0 = A0.T @ self.beams[rb.split(".", 1)[0]].direction               # tangent in a's frame
            n1, n2 = perpendiculars(t0)
            pidx = pidx + spatial._vec(f"{key}.n1_a", n1) + spatial._vec(f"{key}.n2_a", n2)
        system._group((cls.__name__,), cls, {}, j.name, qa + qb, pidx, cls.m)

    def add_spring(self, system, spatial, f, law_pidx):
        """A ``[[spatial.forces]]`` spring_damper (law linear or relative) with a beam point
        or a natural-coordinate body on at least one side (ancf3d_joints.SPRINGS)."""
        (ka, qa, pa, _), (kb, qb, pb, _) = self.sides(system, spatial, (f.a, f.b))
        cls = SPRINGS[(ka, kb)]
        system._add_force((cls.__name__, f.law), cls, {"law": f.law}, f.name, qa + qb, pa + pb + law_pidx)

    # -- initial configuration -------------------------------------------------------------
    def initial_setup(self, system, q0):
        """Initial guess (straight beams) and their rows in ``system.independent``."""
        P = self.P
        for b in self.beams.values():
            c, d = b.cfg, b.direction
            for k in range(b.nel + 1):
                q0[b.node(k)] = np.r_[np.array(c.initial.position) + c.length * k / b.nel * d, d]
            key = f"spatial.beams.{b.name}.initial"
            n0 = b.node(0)
            for k in range(1, b.nel + 1):
                for comp in range(6):
                    g = Beam3Shape([f"{b.name}.shape{k}[{comp}]"], [n0 + b.node(k)],
                                   [[b.p["length"], const(P, k / b.nel)]], [[0]], component=comp)
                    system.independent.append((key, g, ZERO))
            # a beam–beam weld's angle row sets this beam's chord length instead (ancf3d_joints)
            rows = [] if b.name in self.free_stretch else [("unit", "unit", [ZERO] * 4, ZERO)]
            for i, x in enumerate(XYZ):
                if x in c.independent:
                    rows.append((x, "position", [b.position[i]] + b.axes[i], b.velocity[i]))
            if "direction" in c.independent:
                rows += [(f"direction{k + 1}", "slope", [ZERO] + n, rate) for k, (n, rate) in enumerate(b.normals)]
            for label, coord, pidx, pvel in rows:
                g = Beam3Pose([f"{b.name}.{label}"], [n0], [pidx], [[0]], coordinate=coord)
                system.independent.append((key if coord == "unit" else f"spatial.beams.{b.name}.independent",
                                           g, pvel))

    # -- outputs -----------------------------------------------------------------------------
    def stress_layout(self, names=None):
        """(qidx (E, 12), pidx (E, 6)) of every element of the named beams (all by default)."""
        qi, pi = [], []
        for b in self.beams.values():
            if names is None or b.name in names:
                q, p = b.element_params()
                qi += q
                pi += p
        return np.array(qi, np.int64).reshape(-1, 12), np.array(pi, np.int64).reshape(-1, 6)
