"""Bookkeeping of plane-stress plates (``[[plates]]``) in a System.

Coordinates: after the rigid bodies and the beams; plate P with nx × ny elements owns
2(nx+1)(ny+1) consecutive coordinates, node (i, j) (i along the plate's local x,
0..nx; j along y, 0..ny) at offset 2(j(nx+1) + i): its absolute position (x, y).

Parameters (config paths): ``plates.P.size.x|y``, ``thickness``, ``E``, ``nu``,
``rho0``, ``penalization``, ``initial.x|y|angle``, ``initial_velocity.x|y|angle`` and
the element field ``plates.P.density[e]``, e = j·nx + i for element (i, j) (one
scalar entry of p per element; the design path ``plates.P.density`` designs them
all).  Constants (nx, ny, i/nx, j/ny, ±1) are ``<const V>`` entries of p.

Element groups are added in bulk (numpy index arrays), not one element at a time.

Points: ``P.node_i_j`` (any node), ``P.origin`` (= node_0_0, the pose reference),
and ``points = { NAME = [i, j] }``.
"""
import numpy as np

from ..config.points import mesh_node as node_of  # the point-name rule (config/points.py)
from ..model.parameters import ZERO
from ..model.body_kinds import body_kind
from . import plate
from .plate_joints import PLATE_JOINT_CLASSES
from .beams import const

class _Plate:
    def __init__(self, cfg, P, offset):
        self.cfg = cfg
        self.name = cfg.name
        self.nx, self.ny = cfg.nx, cfg.ny
        self.nel = cfg.nx * cfg.ny
        self.nnode = (cfg.nx + 1) * (cfg.ny + 1)
        self.offset = offset
        self.ncoord = 2 * self.nnode
        base = f"plates.{cfg.name}"
        self.p = {"Lx": P.add(f"{base}.size.x", cfg.size[0]), "Ly": P.add(f"{base}.size.y", cfg.size[1])}
        for k in ("thickness", "E", "nu", "rho0", "penalization"):
            self.p[k] = P.add(f"{base}.{k}", getattr(cfg, k))
        self.p["nx"], self.p["ny"] = const(P, cfg.nx), const(P, cfg.ny)
        dens = np.broadcast_to(np.asarray(cfg.density, float), (self.nel,))
        self.density = np.array([P.add(f"{base}.density[{e}]", dens[e]) for e in range(self.nel)], np.int64)
        for k in ("x", "y", "angle"):
            self.p[f"initial.{k}"] = P.add(f"{base}.initial.{k}", getattr(cfg.initial, k))
            self.p[f"initial_velocity.{k}"] = P.add(f"{base}.initial_velocity.{k}",
                                                    getattr(cfg.initial_velocity, k))
        for i in range(self.nx + 1):
            const(P, i / self.nx)
        for j in range(self.ny + 1):
            const(P, j / self.ny)
        self.sign = {s: const(P, s) for s in (1.0, -1.0)}

    def node(self, i, j):
        o = self.offset + 2 * (j * (self.nx + 1) + i)
        return [o, o + 1]

    def node_array(self):
        """Coordinate indices of all nodes: (ny+1, nx+1, 2)."""
        k = np.arange(self.nnode).reshape(self.ny + 1, self.nx + 1)
        return self.offset + 2 * k[..., None] + np.arange(2)

    def element_qidx(self):
        """(nel, 8) coordinates of every element (ll, lr, ur, ul), element e = j·nx + i."""
        N = self.node_array()
        return np.concatenate([N[:-1, :-1], N[:-1, 1:], N[1:, 1:], N[1:, :-1]], -1).reshape(self.nel, 8)

    def geometry(self):
        return [self.p[k] for k in ("Lx", "Ly", "nx", "ny")]

    def reference(self, i, j):
        c = self.cfg
        return np.array([c.size[0] * i / self.nx, c.size[1] * j / self.ny])


@body_kind("plates", order=30)  # plane-stress plates: after the beams
class PlateSet:
    """All plates of a model."""

    def __init__(self, config, P, offset):
        self.P = P
        self.plates = {}
        for c in getattr(config, "plates", None) or []:
            self.plates[c.name] = _Plate(c, P, offset)
            offset += self.plates[c.name].ncoord
        self.ncoord = sum(p.ncoord for p in self.plates.values())

    def coordinate_names(self):
        """Names of the plates' nodal coordinates in q order: "P.node_i_j.x", ".y"."""
        return [f"{pl.name}.node_{i}_{j}.{c}" for pl in self.plates.values()
                for j in range(pl.ny + 1) for i in range(pl.nx + 1) for c in ("x", "y")]

    def __len__(self):
        return len(self.plates)

    def is_plate_point(self, ref):
        return ref.split(".", 1)[0] in self.plates

    def node(self, ref):
        body, name = ref.split(".", 1)
        pl = self.plates[body]
        i, j = node_of(pl.cfg, name)
        return pl, i, j

    def point_coords(self, ref):
        pl, i, j = self.node(ref)
        return pl.node(i, j)

    def field(self, path):
        """Parameter indices of an element field path (``plates.P.density``), or None."""
        parts = path.split(".")
        if len(parts) == 3 and parts[0] == "plates" and parts[2] == "density" and parts[1] in self.plates:
            return self.plates[parts[1]].density
        return None

    # -- element groups (bulk) ----------------------------------------------------------------
    def add_forces(self, system, gx, gy):
        for pl in self.plates.values():
            qidx = pl.element_qidx()
            x = pl.density[:, None]
            ones = np.ones((pl.nel, 1), np.int64)
            geo = ones * np.array(pl.geometry())
            mat = np.hstack([x, ones * pl.p["rho0"], ones * pl.p["thickness"], geo])
            ela = np.hstack([x, ones * np.array([pl.p["E"], pl.p["nu"], pl.p["thickness"]]), geo,
                             ones * pl.p["penalization"]])
            law = pl.cfg.density_law
            names = [f"{pl.name}[{e}]" for e in range(pl.nel)]
            _bulk(system, ("PlateInertia", law), plate.PlateInertia, {"law": law}, names, qidx, mat)
            _bulk(system, ("PlateGravity", law), plate.PlateGravity, {"law": law}, names, qidx,
                  np.hstack([mat, ones * np.array([gx, gy])]))
            _bulk(system, ("PlateElastic",), plate.PlateElastic, {}, names, qidx, ela)

    # -- joints --------------------------------------------------------------------------------
    def _side(self, system, ref):
        """(kind, coordinate indices, parameter indices, initial angle)."""
        if self.is_plate_point(ref):
            pl, i, j = self.node(ref)
            nb, s = (i + 1, 1.0) if i < pl.nx else (i - 1, -1.0)
            return "plate", pl.node(i, j) + pl.node(nb, j), [pl.sign[s]], pl.cfg.initial.angle
        body, pidx = system._point(ref)
        ang = {b.name: b.initial.angle for b in system.config.bodies}.get(body, 0.0)
        return "rigid", system._qb(body), pidx, ang

    def add_joint(self, system, j):
        from ..model.system import ModelError
        if j.type not in ("revolute", "weld"):
            raise ModelError(f"joints.{j.name}.type", f"a {j.type} joint cannot attach to a plate "
                             "(revolute and weld can)")
        for ref in (j.a, j.b):
            if system.beams.is_beam_point(ref):
                raise ModelError(f"joints.{j.name}", "joints between plates and beams are not supported")
        ka, qa, pa, anga = self._side(system, j.a)
        kb, qb, pb, angb = self._side(system, j.b)
        weld = j.type == "weld"
        cls = PLATE_JOINT_CLASSES[((ka, kb), weld)]
        pidx = pa + pb
        if weld:
            pidx = pidx + [self.P.add(f"joints.{j.name}.angle", angb - anga)]
        system._group((cls.__name__,), cls, {}, j.name, qa + qb, pidx, cls.m)

    # -- initial configuration ---------------------------------------------------------------------
    def initial_setup(self, system, q0):
        """Undeformed plates at their poses: initial guess and the shape/pose rows."""
        for pl in self.plates.values():
            c = pl.cfg
            th = c.initial.angle
            R = np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]])
            origin = np.array([c.initial.x, c.initial.y])
            for j in range(pl.ny + 1):
                for i in range(pl.nx + 1):
                    q0[pl.node(i, j)] = origin + R @ pl.reference(i, j)
            key = f"plates.{pl.name}.initial"
            n0, nc = pl.node(0, 0), pl.node(pl.nx, 0)
            for j in range(pl.ny + 1):
                for i in range(pl.nx + 1):
                    if (i, j) in ((0, 0), (pl.nx, 0)):
                        continue
                    pp = [pl.p["Lx"], pl.p["Ly"], const(self.P, i / pl.nx), const(self.P, j / pl.ny)]
                    for comp in range(2):
                        g = plate.PlateShape([f"{pl.name}.shape_{i}_{j}[{comp}]"], [n0 + nc + pl.node(i, j)],
                                             [pp], [[0]], component=comp)
                        system.independent.append((key, g, ZERO))
            rows = [("unit", ZERO, ZERO)] + [(k, pl.p[f"initial.{k}"], pl.p[f"initial_velocity.{k}"])
                                            for k in c.independent]
            for coord, pval, pvel in rows:
                g = plate.PlatePose([f"{pl.name}.{coord}"], [n0 + nc], [[pval, pl.p["Lx"]]], [[0]],
                                    coordinate=coord)
                system.independent.append((f"plates.{pl.name}.independent" if coord != "unit" else key,
                                           g, pvel))


def _bulk(system, key, cls, kw, names, qidx, pidx):
    """Append a whole element group at once (no per-element bookkeeping calls)."""
    if key not in system._elements:
        system._elements[key] = (cls, kw, [], [], [], None)
    e = system._elements[key]
    e[2].extend(names)
    e[3].extend(np.asarray(qidx))
    e[4].extend(np.asarray(pidx))
