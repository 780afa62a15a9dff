"""Bookkeeping of hexahedral floating-frame solids (``[[spatial.solids]]``) in a System.

Coordinates: after the natural-coordinate bodies; solid S owns 7 + 3·(free nodes)
consecutive coordinates: its frame (x, y, z, e0, e1, e2, e3) — the frame origin and
Euler parameters, not the centre of mass — then (u_x, u_y, u_z) of every free node in
node order, resolved in the frame.  Node (i, j, k) (number (k(ny+1) + j)(nx+1) + i)
sits at X = offset + (i hx, j hy, k hz); element e = (k ny + j) nx + i.

Reference condition (seed 003 §2.1 leaves it to the modeller), as for the planar
continuum (continua.py): every node within ``clamp_radius`` of the frame origin is
clamped, u = 0 (it reads ground's zero slot).  At least three clamped nodes not on one
line: fewer leave a rigid rotation of u that duplicates the frame's.

Element groups: SolidInertia, SolidElastic, SolidGravity (where gravity acts or is
designed), SolidDamping (``stiffness_damping`` > 0: Rayleigh β_K K_ff(x) u̇) over all
elements at once, and per solid the Euler-parameter
``Normalization`` row and ``EulerRegularization`` (spatial/bodies.py; the frame's
rotational mass block has p as a null vector, like a rigid body's; c from the
undeformed nominal inertia — any c > 0 gives the same solution, the term is absorbed by
the normalisation multiplier).

Joints (spatial_set.py calls ``side`` and ``add_joint``): the origin and clamped nodes
move with the frame, so every spatial joint kind attaches there as if the frame were a
rigid body with s' = X (``side``); a free node takes a spherical joint
(``SolidSpherical``, the seed 003 Eq. 33 marker with u of the node).

Parameters (config paths): ``spatial.solids.S.E|nu|rho0|penalization``
(``|stiffness_damping`` when > 0), the element
field ``spatial.solids.S.density[e]`` (``spatial.solids.S.density`` designs them all),
``initial.position.x|y|z``, ``initial_velocity.velocity|angular_velocity.x|y|z``.
Size and offset enter as constants (node positions of joints are constants of p).
"""
import numpy as np

from ..model.body_kinds import body_kind
from ..model.parameters import ZERO
from ..spatial.bodies import EulerRegularization, Normalization
from ..spatial.kinematics import pose_euler_parameters, rotation
from . import solid, solids_reduced
from .beams import const
from .continua import _bulk
from .plates import node_of

XYZ = ("x", "y", "z")


class _Solid:
    def __init__(self, cfg, P, offset, joint_refs=()):
        from ..model.system import ModelError
        from ..spatial.spatial_set import _axes
        self.cfg, self.name, self.offset = cfg, cfg.name, offset
        self.n = (cfg.nx, cfg.ny, cfg.nz)
        self.nel = cfg.nx * cfg.ny * cfg.nz
        self.nnode = (cfg.nx + 1) * (cfg.ny + 1) * (cfg.nz + 1)
        base = self.base = f"spatial.solids.{cfg.name}"
        self.p = {k: P.add(f"{base}.{k}", getattr(cfg, k)) for k in ("E", "nu", "rho0", "penalization")}
        if cfg.stiffness_damping:                 # Rayleigh β_K > 0: a SolidDamping group
            self.p["stiffness_damping"] = P.add(f"{base}.stiffness_damping", cfg.stiffness_damping)
        self.geo = [const(P, v) for v in (*cfg.size, *self.n, *cfg.offset)]       # L (3), n (3), X0 (3)
        dens = np.broadcast_to(np.asarray(cfg.density, float), (self.nel,))
        self.density = np.array([P.add(f"{base}.density[{e}]", dens[e]) for e in range(self.nel)], np.int64)
        self.frac = [np.array([const(P, i / n) for i in range(n + 1)], np.int64) for n in self.n]
        self.axes = _axes(P, base, {})
        # the spatial set's independent-row API (spatial_set._independent_row)
        self.p0 = pose_euler_parameters(cfg.initial)
        self.position = [P.add(f"{base}.initial.position.{c}", cfg.initial.position[i]) for i, c in enumerate(XYZ)]
        self.velocity = [P.add(f"{base}.initial_velocity.velocity.{c}", cfg.initial_velocity.velocity[i])
                         for i, c in enumerate(XYZ)]
        self.orientation = [P.add(f"{base}.initial.orientation.e{i}", self.p0[i]) for i in range(4)]
        self.omega = [P.add(f"{base}.initial_velocity.angular_velocity.{c}", cfg.initial_velocity.angular_velocity[i])
                      for i, c in enumerate(XYZ)]
        X = self.reference_positions()
        clamped = np.linalg.norm(X, axis=1) <= cfg.clamp_radius * (1 + 1e-12)
        Xc = X[clamped]
        if len(Xc) < 3 or np.linalg.matrix_rank(Xc[1:] - Xc[0], tol=1e-9 * max(cfg.size)) < 2:
            raise ModelError(f"{base}.clamp_radius",
                             f"clamps {int(clamped.sum())} node(s){' on one line' if len(Xc) >= 3 else ''}; the "
                             "reference condition needs at least three not on one line (nodes within clamp_radius "
                             "of the frame origin have no elastic displacement)")
        self.clamped = clamped
        self.nfree = int((~clamped).sum())
        self.reduction = solids_reduced.reduction(self, cfg, joint_refs)    # modal reduction (solids_reduced.py)
        self.nelastic = 3 * self.nfree if self.reduction is None else self.reduction.nb
        self.ncoord = 7 + self.nelastic
        slot = -np.ones(self.nnode, np.int64)
        slot[~clamped] = offset + 7 + 3 * np.arange(self.nfree)
        self.slot = slot

    def reference_positions(self):
        """X of every node in frame coordinates (nnode, 3), node order (module docstring)."""
        c = self.cfg
        ax = [np.arange(n + 1) * (L / n) + o for n, L, o in zip(self.n, c.size, c.offset)]
        Z, Y, Xg = np.meshgrid(ax[2], ax[1], ax[0], indexing="ij")
        return np.stack([Xg, Y, Z], -1).reshape(-1, 3)

    def qidx(self):
        """The frame's 7 coordinates (the spatial set's body API)."""
        return list(range(self.offset, self.offset + 7))

    def node_number(self, ijk):
        i, j, k = ijk
        return (k * (self.n[1] + 1) + j) * (self.n[0] + 1) + i

    def node_coords(self, ground):
        """(u_x, u_y, u_z) coordinate indices of every node, clamped -> ground slot: (nnode, 3)."""
        return np.where(self.slot[:, None] >= 0, self.slot[:, None] + np.arange(3), ground)

    def element_nodes(self):
        """Node numbers (nel, 8) in hexa.py order, element e = (k ny + j) nx + i."""
        nx, ny, nz = self.n
        k = np.arange(self.nnode).reshape(nz + 1, ny + 1, nx + 1)
        bot = [k[:-1, :-1, :-1], k[:-1, :-1, 1:], k[:-1, 1:, 1:], k[:-1, 1:, :-1]]
        top = [k[1:, :-1, :-1], k[1:, :-1, 1:], k[1:, 1:, 1:], k[1:, 1:, :-1]]
        return np.stack(bot + top, -1).reshape(self.nel, 8)

    def element_ijk(self):
        kj, i = np.divmod(np.arange(self.nel), self.n[0])
        k, j = np.divmod(kj, self.n[1])
        return i, j, k

    def coordinate_names(self):
        if self.reduction is not None:
            return solids_reduced.coordinate_names(self)
        names = [f"{self.name}.{c}" for c in ("x", "y", "z", "e0", "e1", "e2", "e3")]
        nx, ny = self.n[0] + 1, self.n[1] + 1
        for m in np.nonzero(~self.clamped)[0]:
            kj, i = divmod(int(m), nx)
            k, j = divmod(kj, ny)
            names += [f"{self.name}.u_{i}_{j}_{k}.{c}" for c in XYZ]
        return names


@body_kind("solids", order=80)  # hexahedral floating-frame solids: after the natural bodies
class SolidSet:
    """All hexahedral FFR solids of a model."""

    def __init__(self, config, P, offset):
        self.P = P
        sp = getattr(config, "spatial", None)
        self.solids = {}
        for c in (sp.solids if sp is not None else []):
            refs = [r.split(".", 1)[1] for j in sp.joints for r in (getattr(j, "a", None), getattr(j, "b", None))
                    if r and r.split(".")[0] == c.name]
            self.solids[c.name] = _Solid(c, P, offset, refs)
            offset += self.solids[c.name].ncoord
        self.ncoord = sum(s.ncoord for s in self.solids.values())

    def __len__(self):
        return len(self.solids)

    def reductions(self):
        """The SolidReduction of every reduced solid (modal_solid.py)."""
        return [s.reduction for s in self.solids.values() if s.reduction is not None]

    def is_solid(self, body):
        return body in self.solids

    def is_solid_point(self, ref):
        return ref.split(".", 1)[0] in self.solids

    def field(self, path):
        """Parameter indices of ``spatial.solids.S.density``, or None."""
        parts = path.split(".")
        if len(parts) == 4 and parts[:2] == ["spatial", "solids"] and parts[3] == "density" and parts[2] in self.solids:
            return self.solids[parts[2]].density
        return None

    def coordinate_names(self):
        return [n for s in self.solids.values() for n in s.coordinate_names()]

    # -- element groups -------------------------------------------------------------------
    def add_forces(self, system, gravity):
        """Inertia, elastic and gravity groups (bulk), the frame's normalisation row and
        Euler-parameter regularisation; ``gravity``: the 3 parameter indices of g."""
        g0 = system.ground_slots[0]
        P = self.P
        g_designed = any(d.path.startswith("spatial.gravity") for d in system.config.design)
        g_acts = any(v != 0.0 for v in system.config.spatial.gravity) or g_designed
        for s in self.solids.values():
            u = s.node_coords(g0)[s.element_nodes()].reshape(s.nel, 24)
            qidx = np.hstack([np.broadcast_to(np.array(s.qidx()), (s.nel, 7)), u])
            i, j, k = s.element_ijk()
            ones = np.ones((s.nel, 1), np.int64)
            x = s.density[:, None]
            geo = ones * np.array(s.geo)
            mat = np.hstack([x, ones * s.p["rho0"], geo, s.frac[0][i][:, None], s.frac[1][j][:, None],
                             s.frac[2][k][:, None]])
            ela = np.hstack([x, ones * s.p["E"], ones * s.p["nu"], geo[:, :6], ones * s.p["penalization"]])
            law = s.cfg.density_law
            names = [f"{s.name}[{e}]" for e in range(s.nel)]
            if s.reduction is not None:
                solids_reduced.add_forces(system, s, P, gravity, g_acts)
            else:
                _bulk(system, ("SolidInertia", law), solid.SolidInertia, {"law": law}, names, qidx, mat)
                if g_acts:
                    _bulk(system, ("SolidGravity", law), solid.SolidGravity, {"law": law}, names, qidx,
                          np.hstack([mat, ones * np.array(gravity)]))
                _bulk(system, ("SolidElastic",), solid.SolidElastic, {}, names, u, ela)
                if "stiffness_damping" in s.p:
                    _bulk(system, ("SolidDamping",), solid.SolidDamping, {}, names, u,
                          np.hstack([ela, ones * s.p["stiffness_damping"]]))
            # c = 4 tr(J)/3 of the undeformed nominal body about the frame origin (any c > 0)
            pv = np.array(P.values)
            sg = solid.gauss_positions(np.zeros((s.nel, 31)), pv[mat])
            trJ = 2.0 * np.sum(solid.gauss_mass(pv[mat], law)[:, None] * np.einsum("egi,egi->eg", sg, sg))
            jc = const(P, trJ / 3.0)
            system._add_force(("EulerRegularization",), EulerRegularization, {}, s.name, s.qidx()[3:], [jc] * 3)
            system._group(("Normalization",), Normalization, {}, f"{s.name}.norm", s.qidx()[3:], [ZERO], 1)

    # -- joints -----------------------------------------------------------------------------
    def _node(self, ref):
        body, name = ref.split(".", 1)
        s = self.solids[body]
        ijk = node_of(s.cfg, name, origin="origin")
        return s, (None if ijk == "origin" else s.node_number(ijk))

    def moves_with_frame(self, ref):
        """True for the origin and clamped nodes (they carry the frame's orientation)."""
        s, m = self._node(ref)
        return m is None or bool(s.clamped[m])

    def side(self, ref):
        """(7 frame coordinate indices, [X (3 constants), mask 0]) of the origin or a clamped
        node: the rigid-body side of a spatial joint (spatial/joints.py)."""
        s, m = self._node(ref)
        X = np.zeros(3) if m is None else s.reference_positions()[m]
        return s.qidx(), [const(self.P, v) for v in X] + [ZERO]

    def A0(self, body):
        return rotation(self.solids[body].p0)

    def position0(self, body):
        return np.asarray(self.solids[body].cfg.initial.position, float)

    def add_spherical(self, system, j, spatial):
        """A spherical joint with a free node of a solid on one side (SolidSpherical); the
        other side a rigid body, ground, or the origin/a clamped node of a solid."""
        from ..model.system import ModelError
        key = f"spatial.joints.{j.name}"
        free = [r for r in (j.a, j.b) if self.is_solid_point(r) and not self.moves_with_frame(r)]
        if len(free) == 2:
            raise ModelError(key, "a spherical joint between two free solid nodes is not supported")
        cref = free[0]
        oref = j.b if cref == j.a else j.a
        s, m = self._node(cref)
        ijk = node_of(s.cfg, cref.split(".", 1)[1])
        qo, po = spatial.side(oref)
        if s.reduction is not None:
            return solids_reduced.add_spherical(system, s, m, j.name, qo, po, self.P)
        qc = s.qidx() + list(s.node_coords(system.ground_slots[0])[m])
        pc = list(s.geo[6:9]) + list(s.geo[0:3]) + [int(s.frac[d][ijk[d]]) for d in range(3)]
        system._group(("SolidSpherical",), solid.SolidSpherical, {}, j.name, qc + qo, pc + po, 3)

    # -- initial configuration -------------------------------------------------------------------
    def initial_setup(self, system, q0, spatial):
        """Frames at their given poses, u = 0 (one ``ContinuumClamp`` group per solid) and
        the listed ``independent`` frame rows (spatial_set._independent_row)."""
        from .continuum import ContinuumClamp
        for s in self.solids.values():
            q0[s.offset:s.offset + 3] = s.cfg.initial.position
            q0[s.offset + 3:s.offset + 7] = s.p0
            ne = s.nelastic
            if ne:
                idx = (s.offset + 7 + np.arange(ne))[:, None]
                g = ContinuumClamp([f"{s.name}.u[{k}]" for k in range(ne)], idx, np.zeros((ne, 1), np.int64),
                                   np.zeros((ne, 1), np.int64))
                system.independent.append((f"{s.base}.initial", g, ZERO))
            for c in s.cfg.independent:
                spatial._independent_row(system, s, c, key=f"{s.base}.independent")
