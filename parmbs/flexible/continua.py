"""Bookkeeping of floating-frame plane-stress bodies (``[[continua]]``) in a System.

Coordinates: after the rigid bodies, beams and plates; continuum C owns
3 + 2·(free nodes) consecutive coordinates: its frame pose (x, y, angle) — the frame
origin and orientation, not the centre of mass — then the elastic displacements
(u_x, u_y) of every free node in node order, resolved in the frame.  Node (i, j)
(i = 0..nx along the frame's x, j = 0..ny) sits at X = offset + (i hx, j hy).

Reference condition (seed 003 §2.1 leaves it to the modeller): every node within
``clamp_radius`` of the frame origin is clamped, u = 0, i.e. it has no coordinate and
reads ground's zero slot.  The frame is thereby attached to the material at the hub
(the "tangent frame" of a clamped-at-the-joint crank), which makes the elastic
coordinates the deflection relative to the hub and the frame angle the driven crank
angle.  At least two clamped nodes are required (one clamped node leaves a rigid
rotation of u_f that duplicates θ, and M is singular at u = 0).

Parameters (config paths): ``continua.C.size.x|y``, ``offset.x|y``, ``thickness``,
``E``, ``nu``, ``rho0``, ``penalization``, ``initial.*``, ``initial_velocity.*`` and the
element field ``continua.C.density[e]``, e = j·nx + i (the design path
``continua.C.density`` designs them all: one column per element).  Constants
(nx, ny, i/nx, j/ny) are ``<const V>`` entries of p.  All index arrays are built with
numpy over the whole mesh; no Python loop per element or node.

Points: ``C.origin`` (the frame origin, a frame point without elastic displacement),
``C.node_i_j`` and ``points = { NAME = [i, j] }``.  Joints: revolute to a rigid body or
ground (``ContinuumRevolute``); a driver may drive the frame coordinate ``C.angle|x|y``.
"""
import numpy as np

from ..model.parameters import ZERO
from ..model import joints as J
from ..model.timefunctions import Polynomial
from ..model.body_kinds import body_kind
from . import continuum
from .beams import const
from .plates import node_of as mesh_node_of
from .modal import Reduction
from . import modal_components as mc


def node_of(cfg, name):
    """(i, j) of a point name, "origin" for the frame origin, or None if unknown."""
    return mesh_node_of(cfg, name, origin="origin")


class _Continuum:
    def __init__(self, cfg, P, offset, joint_points=(), source=""):
        from ..model.system import ModelError
        self.cfg, self.name, self.source = cfg, cfg.name, source
        self.nx, self.ny = cfg.nx, cfg.ny
        self.nel = cfg.nx * cfg.ny
        self.nnode = (cfg.nx + 1) * (cfg.ny + 1)
        self.offset = offset
        base = f"continua.{cfg.name}"
        self.p = {"Lx": P.add(f"{base}.size.x", cfg.size[0]), "Ly": P.add(f"{base}.size.y", cfg.size[1]),
                  "X0": P.add(f"{base}.offset.x", cfg.offset[0]), "Y0": P.add(f"{base}.offset.y", cfg.offset[1])}
        for k in ("thickness", "E", "nu", "rho0", "penalization"):
            self.p[k] = P.add(f"{base}.{k}", getattr(cfg, k))
        self.p["nx"], self.p["ny"] = const(P, cfg.nx), const(P, cfg.ny)
        for k in ("x", "y", "angle"):
            self.p[f"initial.{k}"] = P.add(f"{base}.initial.{k}", getattr(cfg.initial, k))
            self.p[f"initial_velocity.{k}"] = P.add(f"{base}.initial_velocity.{k}",
                                                    getattr(cfg.initial_velocity, k))
        red = getattr(cfg, "reduction", None)
        sid = None
        if red is not None and red.load is not None:         # a stored reduced body (modal_io.py)
            from .modal_io import read_body
            if "density" in cfg.model_fields_set:
                raise ModelError(f"{base}.density", "is taken from reduction.load (the densities the stored "
                                                    "body was reduced at); remove it")
            sid = read_body(self.load_path(red.load), cfg.name, f"{base}.reduction.load")
            if sid["density"].shape != (self.nel,):
                raise ModelError(f"{base}.nx", f"{self.nx} × {self.ny} elements; the reduced body in {red.load} "
                                               f"has {sid['density'].shape[0]}")
        dens = np.broadcast_to(np.asarray(cfg.density if sid is None else sid["density"], float), (self.nel,))
        self.density = np.array([P.add(f"{base}.density[{e}]", dens[e]) for e in range(self.nel)], np.int64)
        self.ci = np.array([const(P, i / self.nx) for i in range(self.nx + 1)], np.int64)
        self.cj = np.array([const(P, j / self.ny) for j in range(self.ny + 1)], np.int64)
        # reference condition: nodes within clamp_radius of the frame origin
        X = self.reference_positions()
        clamped = np.hypot(X[..., 0], X[..., 1]).ravel() <= cfg.clamp_radius * (1 + 1e-12)
        if clamped.sum() < 2:
            raise ModelError(f"continua.{cfg.name}.clamp_radius",
                             f"clamps {int(clamped.sum())} node(s); the reference condition needs at least two "
                             "(nodes within clamp_radius of the frame origin have no elastic displacement)")
        self.clamped = clamped
        self.nfree = int((~clamped).sum())
        # modal reduction (modal.py): K modal coordinates replace the 2·nfree nodal ones
        attach = []
        if red is not None and red.attachment:                 # joint nodes get static modes
            for name in joint_points:
                ij = node_of(cfg, name)
                if ij not in (None, "origin"):
                    attach.append(ij[1] * (cfg.nx + 1) + ij[0])
        self.reduction = Reduction(self, red.modes, attach) if red is not None else None
        if sid is not None:
            from .modal_io import check_body
            check_body(sid, self, red.modes, self.reduction.attach, red.load, np.array(P.values))
            self.reduction.seed(sid)
        self.nelastic = 2 * self.nfree if red is None else self.reduction.nb
        self.ncoord = 3 + self.nelastic
        # node k -> first coordinate of its (u_x, u_y), or −1 if clamped
        slot = -np.ones(self.nnode, np.int64)
        slot[~clamped] = offset + 3 + 2 * np.arange(self.nfree)
        self.slot = slot

    def load_path(self, path):
        """A file path of the config, relative to the config file's directory."""
        import os
        return os.path.join(os.path.dirname(os.path.abspath(self.source)) if self.source else os.getcwd(), path)

    def reference_positions(self):
        """X of every node in frame coordinates: (ny+1, nx+1, 2)."""
        c = self.cfg
        i = np.arange(self.nx + 1) * (c.size[0] / self.nx) + c.offset[0]
        j = np.arange(self.ny + 1) * (c.size[1] / self.ny) + c.offset[1]
        return np.stack(np.meshgrid(i, j), -1)

    def frame(self):
        return [self.offset, self.offset + 1, self.offset + 2]

    def node_coords(self, ground):
        """Coordinate indices of (u_x, u_y) of every node, clamped nodes -> ground slot: (nnode, 2)."""
        out = np.where(self.slot[:, None] >= 0, self.slot[:, None] + np.arange(2), ground)
        return out

    def element_nodes(self):
        """Node numbers (nel, 4) of every element (ll, lr, ur, ul), element e = j·nx + i."""
        k = np.arange(self.nnode).reshape(self.ny + 1, self.nx + 1)
        return np.stack([k[:-1, :-1], k[:-1, 1:], k[1:, 1:], k[1:, :-1]], -1).reshape(self.nel, 4)

    def element_ij(self):
        j, i = np.divmod(np.arange(self.nel), self.nx)
        return i, j

    def eta(self):
        """Coordinate indices of the modal coordinates η of a reduced body."""
        return list(range(self.offset + 3, self.offset + 3 + self.nelastic))

    def register_data(self, P):
        """Enter the reduced body data into p (modal.ModalBasis.register_data)."""
        self.inertia_p, self.stiffness_p = self.reduction.register_data(P)

    def node_data(self, P, k):
        """Parameter indices of Φ_k (2K) of node k of a reduced body (entered on first use)."""
        return self.reduction.node_data(P, k)

    def coordinate_names(self):
        names = [f"{self.name}.{k}" for k in ("x", "y", "angle")]
        if self.reduction is not None:
            return names + [f"{self.name}.eta_{k}" for k in range(self.nelastic)]
        k = np.nonzero(~self.clamped)[0]
        j, i = np.divmod(k, self.nx + 1)
        for a, b in zip(i, j):
            names += [f"{self.name}.u_{a}_{b}.x", f"{self.name}.u_{a}_{b}.y"]
        return names


@body_kind("continua", order=40)  # floating-frame continua: after the plates
class ContinuumSet:
    """All floating-frame continua of a model."""

    def __init__(self, config, P, offset):
        self.P = P
        self.continua = {}
        for c in getattr(config, "continua", None) or []:
            pts = [ref.split(".", 1)[1] for j in getattr(config, "joints", None) or []
                   for ref in (getattr(j, "a", None), getattr(j, "b", None)) if ref and ref.split(".")[0] == c.name]
            self.continua[c.name] = _Continuum(c, P, offset, pts, getattr(config, "source", ""))
            offset += self.continua[c.name].ncoord
        self.ncoord = sum(c.ncoord for c in self.continua.values())

    def __len__(self):
        return len(self.continua)

    def is_continuum(self, body):
        return body in self.continua

    def is_continuum_point(self, ref):
        return ref.split(".", 1)[0] in self.continua

    def reductions(self):
        """The Reduction of every reduced continuum (modal.py)."""
        return [c.reduction for c in self.continua.values() if c.reduction is not None]

    def field(self, path):
        """Parameter indices of an element field path (``continua.C.density``), or None."""
        parts = path.split(".")
        if len(parts) == 3 and parts[0] == "continua" and parts[2] == "density" and parts[1] in self.continua:
            return self.continua[parts[1]].density
        return None

    def coordinate_names(self):
        return [n for c in self.continua.values() for n in c.coordinate_names()]

    # -- element groups (bulk) ----------------------------------------------------------------
    def add_forces(self, system, gx, gy):
        g0 = system.ground_slots[0]
        for c in self.continua.values():
            if c.reduction is not None:
                self._add_reduced(system, c, gx, gy)
                continue
            u = c.node_coords(g0)[c.element_nodes()].reshape(c.nel, 8)
            qidx = np.hstack([np.broadcast_to(np.array(c.frame()), (c.nel, 3)), u])
            i, j = c.element_ij()
            ones = np.ones((c.nel, 1), np.int64)
            x = c.density[:, None]
            geo = ones * np.array([c.p[k] for k in ("Lx", "Ly", "nx", "ny", "X0", "Y0")])
            mat = np.hstack([x, ones * c.p["rho0"], ones * c.p["thickness"], geo,
                             c.ci[i][:, None], c.cj[j][:, None]])
            ela = np.hstack([x, ones * np.array([c.p[k] for k in ("E", "nu", "thickness", "Lx", "Ly", "nx", "ny",
                                                                   "penalization")])])
            law = c.cfg.density_law
            names = [f"{c.name}[{e}]" for e in range(c.nel)]
            _bulk(system, ("ContinuumInertia", law), continuum.ContinuumInertia, {"law": law}, names, qidx, mat)
            # weight only where it acts (or is designed): a 10⁵-element group is not free
            g_designed = any(d.path.startswith("model.gravity") for d in system.config.design)
            if system.config.model.gravity[0] != 0.0 or system.config.model.gravity[1] != 0.0 or g_designed:
                _bulk(system, ("ContinuumGravity", law), continuum.ContinuumGravity, {"law": law}, names, qidx,
                      np.hstack([mat, ones * np.array([gx, gy])]))
            _bulk(system, ("ContinuumElastic",), continuum.ContinuumElastic, {}, names, u, ela)

    def _add_reduced(self, system, c, gx, gy):
        """One ReducedInertia, ReducedElastic (and ReducedGravity) element for a reduced body."""
        c.register_data(self.P)
        K = c.nelastic
        q = c.frame() + c.eta()
        system._add_force(("ReducedInertia", K), mc.ReducedInertia, {"modes": K}, c.name, q, list(c.inertia_p))
        system._add_force(("ReducedElastic", K), mc.ReducedElastic, {"modes": K}, c.name, c.eta(),
                          list(c.stiffness_p))
        g_designed = any(d.path.startswith("model.gravity") for d in system.config.design)
        if system.config.model.gravity[0] != 0.0 or system.config.model.gravity[1] != 0.0 or g_designed:
            lay, _ = mc.inertia_layout(K)
            ip = c.inertia_p
            system._add_force(("ReducedGravity", K), mc.ReducedGravity, {"modes": K}, c.name, q,
                              [ip[0], *ip[lay["S0"]], *ip[lay["Sbar"]], gx, gy])

    # -- joints and drivers ---------------------------------------------------------------------
    def point(self, system, ref):
        """(frame + (u_x, u_y) coordinate indices (5), (X0, Y0, Lx, Ly, i/nx, j/ny) parameters)."""
        body, name = ref.split(".", 1)
        c = self.continua[body]
        g0 = system.ground_slots[0]
        ij = node_of(c.cfg, name)
        if ij == "origin":
            return c.frame() + [g0, g0], [ZERO] * 6
        i, j = ij
        k = j * (c.nx + 1) + i
        return (c.frame() + list(c.node_coords(g0)[k]),
                [c.p["X0"], c.p["Y0"], c.p["Lx"], c.p["Ly"], int(c.ci[i]), int(c.cj[j])])

    def add_joint(self, system, j):
        from ..model.system import ModelError
        if j.type == "driver":
            body, coord = j.coordinate.rsplit(".", 1)
            from ..model.timefunctions import from_config
            fn, coef = from_config(j.function)
            pidx = [ZERO, ZERO] + [self.P.add(f"joints.{j.name}.function.{k}", v)
                                   for k, v in zip(fn.param_names(), coef)]
            system._group(("Driver", coord, fn.kind, fn.ncoef), J.Driver, {"coordinate": coord, "function": fn},
                          j.name, self.continua[body].frame(), pidx, 1)
            return
        if j.type != "revolute":
            raise ModelError(f"joints.{j.name}.type", f"a {j.type} joint cannot attach to a continuum (revolute can)")
        cref, rref = (j.a, j.b) if self.is_continuum_point(j.a) else (j.b, j.a)
        if self.is_continuum_point(rref):
            raise ModelError(f"joints.{j.name}", "joints between two continua are not supported")
        qc, pc = self.point(system, cref)
        body, pr = system._point(rref)
        c = self.continua[cref.split(".", 1)[0]]
        ij = node_of(c.cfg, cref.split(".", 1)[1])
        if c.reduction is not None and ij != "origin":          # a node of a reduced body: u = Φ_k η
            K = c.nelastic
            k = ij[1] * (c.nx + 1) + ij[0]
            system._group(("ReducedRevolute", K), mc.ReducedRevolute, {"modes": K}, j.name,
                          c.frame() + c.eta() + system._qb(body), pc + list(c.node_data(self.P, k)) + pr, 2)
            return
        system._group(("ContinuumRevolute",), continuum.ContinuumRevolute, {}, j.name, qc + system._qb(body), pc + pr, 2)

    # -- initial configuration -----------------------------------------------------------------------
    def initial_setup(self, system, q0):
        """Undeformed continua (u = 0) with their frames at the given poses: the initial
        guess, one ``ContinuumClamp`` group holding every elastic coordinate at zero and the
        ``independent`` frame coordinates (rows of the initial assembly)."""
        for c in self.continua.values():
            cfg = c.cfg
            q0[c.frame()] = [cfg.initial.x, cfg.initial.y, cfg.initial.angle]
            if c.nelastic:
                ne = c.nelastic
                idx = (c.offset + 3 + np.arange(ne))[:, None]
                g = continuum.ContinuumClamp([f"{c.name}.u[{k}]" for k in range(ne)], idx,
                                             np.zeros((ne, 1), np.int64), np.zeros((ne, 1), np.int64))
                system.independent.append((f"continua.{c.name}.initial", g, ZERO))
            for k in cfg.independent:
                drv = J.Driver([f"{c.name}.{k}"], [c.frame()], [[ZERO, ZERO, c.p[f"initial.{k}"]]], [[0]],
                               coordinate=k, function=Polynomial(1))
                system.independent.append((f"continua.{c.name}.independent", drv, c.p[f"initial_velocity.{k}"]))


def _bulk(system, key, cls, kw, names, qidx, pidx):
    """Append a whole element group at once (no per-element bookkeeping calls)."""
    if key not in system._elements:
        system._elements[key] = (cls, kw, [], [], [], None)
    e = system._elements[key]
    e[2].extend(names)
    e[3].extend(np.asarray(qidx))
    e[4].extend(np.asarray(pidx))
