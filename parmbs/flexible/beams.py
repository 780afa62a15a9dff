"""Bookkeeping of ANCF beams in a System: coordinates, parameters, element groups,
points, joints and loads at beam points, and the initial-assembly rows.

Coordinates: the beams follow the rigid bodies' 3·n_b coordinates; beam b with n_el
elements owns 4(n_el + 1) consecutive coordinates, node k at offset 4k:
(r_x, r_y, ∂r_x/∂x, ∂r_y/∂x).

Parameters (config paths, so any can be a design variable):
``beams.B.length|width|height|density|E``, ``beams.B.points.P`` (arclength from the
root), ``beams.B.initial.x|y|angle`` and ``beams.B.initial_velocity.x|y|angle`` (pose
and rigid velocity of the root frame: node 0, x along the beam).  Constants (n_el,
k/n_el, element indices) are entries ``<const V>`` of p, never designed.

Points: ``B.root`` (= ``B.node0``), ``B.nodeK``, ``B.tip`` (= last node) and the
configured ``points``; each lies on one element (see ``ancf.beam_point_xi``).

Initial configuration: the beam starts straight and unstretched.  The rows
"node k = root + s_k·tangent, slope_k = slope_0" (4 n_el rows) and |r′_0| = 1
(1 row) fix its shape; the remaining 3 DOF (root x, y, angle) are fixed by joints
and by ``independent`` entries exactly as for a rigid body.  All rows enter the
initial-state solve as independent-coordinate rows with zero velocity right-hand
side except the named pose rows, so the initial velocity is the rigid field of
``initial_velocity``, and q₀, v₀ are differentiated with respect to the length,
pose and point parameters like any other.
"""
import numpy as np

from ..model.parameters import ZERO
from ..model.body_kinds import body_kind
from . import ancf
from .joints import JOINT_CLASSES, BeamPointForce, BeamShape, BeamPose

NODE_DOF = 4


class _Beam:
    def __init__(self, cfg, P, offset):
        self.cfg = cfg
        self.name = cfg.name
        self.nel = cfg.elements
        self.offset = offset
        self.ncoord = NODE_DOF * (self.nel + 1)
        base = f"beams.{cfg.name}"
        self.p = {k: P.add(f"{base}.{k}", getattr(cfg, k))
                  for k in ("density", "E", "length")}
        if cfg.side is not None:           # square section: one parameter for both
            self.p["width"] = self.p["height"] = P.add(f"{base}.side", cfg.side)
        else:
            self.p.update({k: P.add(f"{base}.{k}", getattr(cfg, k)) for k in ("width", "height")})
        self.p["nel"] = const(P, self.nel)
        for k in range(self.nel + 1):        # every constant used later (p is built before the
            const(P, k / self.nel)           # initial rows are), registered now
            const(P, k)
        self.points = {k: P.add(f"{base}.points.{k}", s) for k, s in cfg.points.items()}
        for k in ("x", "y", "angle"):
            self.p[f"initial.{k}"] = P.add(f"{base}.initial.{k}", getattr(cfg.initial, k))
            self.p[f"initial_velocity.{k}"] = P.add(f"{base}.initial_velocity.{k}",
                                                    getattr(cfg.initial_velocity, k))

    def node(self, k):
        o = self.offset + NODE_DOF * k
        return list(range(o, o + NODE_DOF))

    def element(self, e):
        return self.node(e) + self.node(e + 1)

    def material(self):
        return [self.p[k] for k in ("density", "width", "height", "E", "length", "nel")]

    def point(self, P, name):
        """(element coordinate indices (8), beam-point parameter indices (5))."""
        nel = self.nel
        if name in self.points:
            s = self.cfg.points[name]
            e = min(int(s / self.cfg.length * nel), nel - 1)
            c0, c1 = self.points[name], ZERO
        else:
            k = 0 if name == "root" else nel if name == "tip" else int(name[4:])
            e = min(k, nel - 1)
            c0, c1 = ZERO, const(P, k / nel)
        return self.element(e), [c0, c1, self.p["length"], self.p["nel"], const(P, e)]


def const(P, value):
    """A constant entry of the parameter vector (not a config path)."""
    return P.add(f"<const {float(value)!r}>", float(value))


@body_kind("beams", order=10)  # ANCF beams: coordinates after the rigid bodies
class BeamSet:
    """All beams of a model."""

    def __init__(self, config, P, offset):
        self.P = P
        self.beams = {}
        for b in getattr(config, "beams", None) or []:
            if b.type != "ancf":             # FFR beams: ffr_beams.FfrBeamSet
                continue
            self.beams[b.name] = _Beam(b, P, offset)
            offset += self.beams[b.name].ncoord
        self.ncoord = sum(b.ncoord for b in self.beams.values())

    def coordinate_names(self):
        """Names of the beams' nodal coordinates in q order: "B.node3.x", "B.node3.y",
        "B.node3.dx", "B.node3.dy" (position and slope ∂r/∂s of ANCF node 3)."""
        return [f"{b.name}.node{k}.{c}" for b in self.beams.values()
                for k in range(b.nel + 1) for c in ("x", "y", "dx", "dy")]

    def __len__(self):
        return len(self.beams)

    def is_beam_point(self, ref):
        return ref.split(".", 1)[0] in self.beams

    def point(self, ref):
        body, name = ref.split(".", 1)
        return self.beams[body].point(self.P, name)

    # -- element groups --------------------------------------------------------------------
    def add_forces(self, system, gx, gy):
        for b in self.beams.values():
            elastic = ancf.AncfElastic if b.cfg.elastic == "seed" else ancf.AncfElasticConservative
            for e in range(b.nel):
                name, qidx, mat = f"{b.name}[{e}]", b.element(e), b.material()
                system._add_force(("AncfInertia",), ancf.AncfInertia, {}, name, qidx, mat)
                system._add_force(("AncfGravity",), ancf.AncfGravity, {}, name, qidx, mat + [gx, gy])
                system._add_force((elastic.__name__,), elastic, {}, name, qidx, mat)

    # -- joints and loads ----------------------------------------------------------------------
    def _side(self, system, ref):
        """(kind, coordinate indices, parameter indices, initial angle)."""
        if self.is_beam_point(ref):
            qidx, pidx = self.point(ref)
            return "beam", qidx, pidx, self.beams[ref.split(".", 1)[0]].cfg.initial.angle
        body, pidx = system._point(ref)
        ang = {b.name: b.initial.angle for b in system.config.bodies}.get(body, 0.0)
        return "rigid", system._qb(body), pidx, ang

    def add_joint(self, system, j):
        from ..model.system import ModelError
        if j.type not in ("revolute", "weld"):
            raise ModelError(f"joints.{j.name}.type", f"a {j.type} joint cannot attach to a beam "
                             "(revolute and weld can)")
        ka, qa, pa, anga = self._side(system, j.a)
        kb, qb, pb, angb = self._side(system, j.b)
        weld = j.type == "weld"
        cls = JOINT_CLASSES[((ka, kb), weld)]
        pidx = pa + pb
        if weld:
            pidx = pidx + [self.P.add(f"joints.{j.name}.angle", angb - anga)]
        system._group((cls.__name__,), cls, {}, j.name, qa + qb, pidx, cls.m)

    def add_point_force(self, system, f, fn, fp):
        qidx, pp = self.point(f.point)
        P = self.P
        base = f"forces.{f.name}"
        pidx = pp + [P.add(f"{base}.value.x", f.value[0]), P.add(f"{base}.value.y", f.value[1])] + fp
        system._add_force(("BeamPointForce", fn.kind, fn.ncoef), BeamPointForce, {"function": fn},
                          f.name, qidx, pidx)

    # -- initial configuration --------------------------------------------------------------------
    def initial_setup(self, system, q0):
        """Fill the beams' part of the initial guess and append their initial rows to
        ``system.independent`` (one single-row group per row)."""
        for b in self.beams.values():
            c = b.cfg
            th = c.initial.angle
            u = np.array([np.cos(th), np.sin(th)])
            for k in range(b.nel + 1):
                s = c.length * k / b.nel
                q0[b.node(k)] = np.r_[np.array([c.initial.x, c.initial.y]) + s * u, u]
            key = f"beams.{b.name}.initial"
            n0 = b.node(0)
            for k in range(1, b.nel + 1):
                for comp in range(4):
                    g = BeamShape([f"{b.name}.shape{k}[{comp}]"], [n0 + b.node(k)],
                                  [[b.p["length"], const(self.P, k / b.nel)]], [[0]], component=comp)
                    system.independent.append((key, g, ZERO))
            rows = [("unit", ZERO, ZERO)] + [(k, b.p[f"initial.{k}"], b.p[f"initial_velocity.{k}"])
                                            for k in c.independent]
            for coord, pval, pvel in rows:
                g = BeamPose([f"{b.name}.{coord}"], [n0], [[pval]], [[0]], coordinate=coord)
                system.independent.append((f"beams.{b.name}.independent" if coord != "unit" else key,
                                           g, pvel))

    # -- objectives --------------------------------------------------------------------------------
    def root_and_point(self, ref):
        """Coordinates (unique) of the root node and of the point's element, the index
        maps of each into them, and the point parameters."""
        body = ref.split(".", 1)[0]
        qe, pp = self.point(ref)
        root = self.beams[body].node(0)
        union = list(dict.fromkeys(root + qe))
        return union, [union.index(i) for i in root], [union.index(i) for i in qe], pp
