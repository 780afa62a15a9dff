"""``parmbs export RUN.h5 --xdmf OUT.xdmf``: a trajectory as an XDMF time series for
ParaView (and meshio's ``xdmf.TimeSeriesReader``).

What is drawn (planar bodies from the stored config and the named coordinates of q
alone, io/mechanism.py, at z = 0; spatial bodies through the model, spatial/outputs.py):

* rigid body B: the outline of its points (the convex hull the plot fills, closed) and
  its frame — two segments from the centre of mass along the body's x and y axes,
  ``FRAME`` long (a quarter of the body's extent);
* ANCF and floating-frame beams: the deformed centre line (Hermite), 4 segments per element;
* plates and continua: the deformed quad mesh, element e = j·nx + i (io/density.py);
* springs: one segment between their end points;
* spatial body B: a segment from its centre of mass to each named point (``marker``)
  and its frame, three axes of ``FRAME`` × its extent (0.25 for a body of one point);
  the same for natural-coordinate bodies, and the centre lines of spatial ANCF beams
  (``beam``, ``PER_ELEMENT`` segments per element; io/spatial_flex_view.py).

XDMF 3 (xdmf.org, "XDMF Model and Format"): the light XML file holds a ``Temporal``
collection of ``Uniform`` grids, one per exported frame, each with its ``Time``; the
heavy arrays are in HDF5 beside it (``OUT.xdmf.h5``, referenced relative to the XML).
Every grid shares one ``Mixed`` topology — 2-node polylines ``2, 2, a, b`` (the XDMF
polyline id and its node count), then quads ``5, a, b, c, d`` — and has its own
``XYZ`` geometry (``/geometry/<frame>``), so the mechanism moves in ParaView without a
filter.  Per-frame point data ``displacement`` = x(t) − x(t₀) (a reader that keeps the
first geometry, like meshio, gets the motion from it: ParaView "Warp By Vector").
Cell data, the same in every frame: ``body`` (index into the ``bodies`` list; −1 for
springs), ``kind`` (``KINDS``), ``density`` (the element densities of the meshes; NaN
on the other cells), and for a gradient file (``gradient -o``) each element-field
gradient ``d<objective>/d<design>`` on its mesh (NaN elsewhere).  meshio's reader
reads whole datasets (no hyperslabs): hence one dataset per frame.
"""
from __future__ import annotations

import os
from xml.sax.saxutils import quoteattr

import numpy as np

#: cell kinds (cell data ``kind``)
KINDS = {"outline": 0, "frame_x": 1, "frame_y": 2, "beam": 3, "element": 4, "spring": 5, "marker": 6,
         "frame_z": 7}
#: XDMF Mixed-topology ids: polyline (followed by its node count) and quadrilateral
POLYLINE, QUAD = 2, 5
#: segments per beam element on the exported centre line
PER_ELEMENT = 4
#: frame axes as a fraction of the body's extent (largest distance of a point from the com;
#: a body of one point takes the largest extent of the model's bodies)
FRAME = 0.25


class ExportError(Exception):
    """Bad export request (model kind, missing data): ``option``, ``message``."""

    def __init__(self, option, message):
        self.option, self.message = option, message
        super().__init__(f"{option}: {message}")


def heavy_path(xdmf_path):
    """The HDF5 file of an XDMF file: ``OUT.xdmf`` → ``OUT.xdmf.h5`` (never ``OUT.h5``,
    which is usually the run being exported)."""
    return os.fspath(xdmf_path) + ".h5"


class Geometry:
    """Points (rows, P, 2) of every exported row, the segments (L, 2) and quads (Q, 4)
    over them, and the static cell data (cells ordered segments first, then quads)."""

    def __init__(self, cfg, coordinates, q, system=None):
        """``system``: the assembled model, needed for spatial bodies only."""
        from .mechanism import Mechanism
        self.mech = mech = Mechanism(cfg, coordinates)
        self.bodies = mech.body_names()
        self._pts, self._segs, self._quads = [], [], []
        self._seg_data, self._quad_data = [], []     # (body, kind) per cell, density per quad
        self.mesh_cells = {}                          # mesh name -> slice of the quads
        self.rows = len(q)
        self.scale = max([_extent(np.array([r.com, *r.points.values()], float)) for r in mech.rigid.values()]
                         + [0.0]) or 1.0
        for b, name in enumerate(self.bodies):
            if name in mech.rigid:
                self._rigid(q, b, name)
            elif name in mech.ancf or name in mech.ffr:
                line = (mech.ancf_line if name in mech.ancf else mech.ffr_line)(q, name, per=PER_ELEMENT)
                self._polyline(line, b, KINDS["beam"])
            else:
                self._mesh(q, b, name)
        for f in cfg.forces:
            if f.type == "spring":
                a, c = mech.point(q, f.a), mech.point(q, f.b)
                if a is not None and c is not None:
                    self._polyline(np.stack([a, c], 1), -1, KINDS["spring"])
        if system is not None and getattr(system, "spatial", None) is not None:
            self._spatial(system, q)
        if not self._pts:
            raise ExportError("FILE", "the model has no bodies to export")
        self.points = np.concatenate(self._pts, 1)
        nseg = len(self._segs)
        self.segments = np.array(self._segs, np.int64).reshape(-1, 2)
        self.quads = np.concatenate(self._quads, 0) if self._quads else np.zeros((0, 4), np.int64)
        seg = np.array(self._seg_data, float).reshape(-1, 2)
        quad = np.concatenate(self._quad_data, 0) if self._quad_data else np.zeros((0, 3))
        self.cell_data = {"body": np.concatenate([seg[:, 0], quad[:, 0]]),
                          "kind": np.concatenate([seg[:, 1], quad[:, 1]]),
                          "density": np.concatenate([np.full(nseg, np.nan), quad[:, 2]])}
        self.mesh_cells = {n: slice(nseg + s.start, nseg + s.stop) for n, s in self.mesh_cells.items()}

    @property
    def ncells(self):
        return len(self.segments) + len(self.quads)

    def _add_points(self, xy):
        """Append points (rows, k, 2 or 3; planar at z = 0); returns the index of the first."""
        xy = np.asarray(xy, float)
        if xy.shape[-1] == 2:
            xy = np.concatenate([xy, np.zeros(xy.shape[:-1] + (1,))], -1)
        start = sum(p.shape[1] for p in self._pts)
        self._pts.append(xy)
        return start

    def _polyline(self, xy, body, kind, closed=False):
        i0 = self._add_points(xy)
        k = xy.shape[1]
        pairs = [(i0 + j, i0 + j + 1) for j in range(k - 1)] + ([(i0 + k - 1, i0)] if closed and k >= 3 else [])
        self._segs += pairs
        self._seg_data += [(body, kind)] * len(pairs)

    def _rigid(self, q, b, name):
        mech = self.mech
        out = mech.rigid_outline(q, name)
        if out.shape[1] >= 2:
            x, y = out[0, :, 0], out[0, :, 1]                # shoelace area: a bar's collinear points stay open
            area = 0.5 * abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))
            size = np.ptp(out[0], axis=0).max()
            self._polyline(out, b, KINDS["outline"], closed=area > 1e-9 * size * size)
        body = mech.rigid[name]
        ell = FRAME * (_extent(np.array([body.com, *body.points.values()], float)) or self.scale)
        com = mech.rigid_point(q, name, body.com)
        for axis, kind in (((ell, 0.0), "frame_x"), ((0.0, ell), "frame_y")):
            tip = mech.rigid_point(q, name, np.asarray(body.com, float) + axis)
            self._polyline(np.stack([com, tip], 1), b, KINDS[kind])

    def _spatial(self, system, q):
        """Spatial bodies: centre of mass → each named point, and three frame axes
        (r + A(p) ℓ e_i, spatial/kinematics.point_position)."""
        from ..spatial.kinematics import point_position
        sp = system.spatial
        qe = system.extend(np.atleast_2d(q))
        for name, body in sp.bodies.items():
            b = len(self.bodies)
            self.bodies.append(name)
            qb = qe[:, body.qidx()]
            local = [np.asarray(system.p[sp.point_pidx(f"{name}.{pt}")], float) for pt in body.cfg.points]
            com = point_position(qb, np.zeros(3))
            for s in local:
                self._polyline(np.stack([com, point_position(qb, s)], 1), b, KINDS["marker"])
            ell = FRAME * (_extent(np.array([np.zeros(3), *local])) or self.scale)
            for i, kind in enumerate(("frame_x", "frame_y", "frame_z")):
                tip = point_position(qb, ell * np.eye(3)[i])
                self._polyline(np.stack([com, tip], 1), b, KINDS[kind])
        self._spatial_flexible(system, q)

    def _spatial_flexible(self, system, q):
        """Spatial ANCF beams (centre lines) and natural-coordinate bodies (centre of mass
        → each point, three frame axes): io/spatial_flex_view.py."""
        from .spatial_flex_view import beam_lines, natural_bodies
        for name, line in beam_lines(system, q, per=PER_ELEMENT).items():
            self.bodies.append(name)
            self._polyline(line, len(self.bodies) - 1, KINDS["beam"])
        for name, (com, pts, axes) in natural_bodies(system, q).items():
            b = len(self.bodies)
            self.bodies.append(name)
            for p in pts.values():
                self._polyline(np.stack([com, p], 1), b, KINDS["marker"])
            ell = FRAME * (_extent(np.array([np.zeros(3), *(p[0] - com[0] for p in pts.values())]))
                           or self.scale)
            for i, kind in enumerate(("frame_x", "frame_y", "frame_z")):
                self._polyline(np.stack([com, com + ell * axes[:, i]], 1), b, KINDS[kind])

    def _mesh(self, q, b, name):
        from .density import quad_mesh
        mech = self.mech
        nodes = mech.mesh_nodes(q, name)                      # (rows, ny+1, nx+1, 2)
        ny, nx = nodes.shape[1] - 1, nodes.shape[2] - 1
        i0 = self._add_points(nodes.reshape(len(q), -1, 2))   # node k = j(nx+1) + i
        _, quads = quad_mesh(nx, ny, (1.0, 1.0))
        start = sum(len(x) for x in self._quads)
        self._quads.append(quads + i0)
        self.mesh_cells[name] = slice(start, start + len(quads))
        dens = mech.mesh_density(name)
        self._quad_data.append(np.column_stack([np.full(len(quads), b), np.full(len(quads), KINDS["element"]),
                                                dens]))

    def field(self, mesh, values):
        """A cell array that is ``values`` on the quads of ``mesh`` and NaN elsewhere."""
        out = np.full(self.ncells, np.nan)
        sl = self.mesh_cells[mesh]
        v = np.asarray(values, float).ravel()
        if v.size != sl.stop - sl.start:
            raise ExportError("FILE", f"{v.size} values for the {sl.stop - sl.start} elements of {mesh}")
        out[sl] = v
        return out

    def topology(self):
        """The flat Mixed-topology array: 2, 2, a, b per segment, then 5, a, b, c, d per quad."""
        seg = np.column_stack([np.full(len(self.segments), POLYLINE), np.full(len(self.segments), 2),
                               self.segments]).ravel()
        quad = np.column_stack([np.full(len(self.quads), QUAD), self.quads]).ravel()
        return np.concatenate([seg, quad]).astype(np.int64)


def _extent(local):
    """Largest distance of a body's points (rows of ``local``) from the first (its com)."""
    return float(np.max(np.linalg.norm(local - local[0], axis=1))) if len(local) > 1 else 0.0


def gradient_fields(h5_path, cfg, geom):
    """{"d<objective>/d<design>": cell array} of every element-field gradient in a
    ``gradient -o`` file, and {mesh: design densities} from ``/design`` (the values the
    run used), both empty for a plain trajectory file."""
    import h5py
    meshes = {m.name for m in [*cfg.plates, *cfg.continua]}
    grads, design = {}, {}
    fields = {}
    for d in cfg.design:
        kind, _, rest = d.path.partition(".")
        body, _, key = rest.partition(".")
        if kind in ("plates", "continua") and key == "density" and body in meshes:
            fields[d.name] = body
    with h5py.File(h5_path, "r") as f:
        if "design" in f:
            for name, mesh in fields.items():
                if name in f["design"]:
                    design[mesh] = f["design"][name][()]
        if "gradient" in f:
            for obj in f["gradient"]:
                for name, mesh in fields.items():
                    if name in f["gradient"][obj]:
                        grads[f"d{obj}/d{name}"] = geom.field(mesh, f["gradient"][obj][name][()])
    return grads, design


def export_xdmf(h5_path, xdmf_path, max_frames=200, tmp_xdmf=None, tmp_h5=None):
    """Write the XDMF time series of the trajectory file ``h5_path`` (``simulate -o``,
    ``gradient -o``): ``xdmf_path`` and its heavy data ``heavy_path(xdmf_path)``, each
    to its working name (``tmp_*``, default the final names; the caller renames).
    At most ``max_frames`` rows, evenly spaced in step number, first and last kept.
    Returns (frames, cells, points)."""
    import h5py
    from .animate import frame_rows
    from .hdf5 import read_trajectory
    from .stored_config import config_from_text
    data = read_trajectory(h5_path)
    cfg = config_from_text(data.config_text, os.path.basename(os.fspath(h5_path)) + ".config.toml")
    rows = frame_rows(data.steps, max_frames)
    system = None
    if cfg.spatial is not None:                          # spatial bodies: their points need the model
        from ..model.system import System
        system = System(cfg)
        if data.q.shape[1] != system.n:
            from .hdf5 import HDF5Error
            raise HDF5Error(h5_path, "/trajectory/q", f"width {data.q.shape[1]} does not match the "
                            f"stored config's {system.n} coordinates")
    geom = Geometry(cfg, data.coordinates, data.q[rows], system)
    grads, design = gradient_fields(h5_path, cfg, geom)
    for mesh, v in design.items():                       # the densities the run used
        geom.cell_data["density"][geom.mesh_cells[mesh]] = np.asarray(v, float).ravel()
    cells = dict(geom.cell_data, **grads)
    P = geom.points.shape[1]
    xyz = geom.points
    topo = geom.topology()
    h5_final = heavy_path(xdmf_path)

    def heavy(tmp):
        with h5py.File(tmp, "w") as f:
            f.attrs["bodies"] = ",".join(geom.bodies)
            f.attrs["source"] = os.path.basename(os.fspath(h5_path))
            f.create_dataset("topology", data=topo)
            f.create_dataset("time", data=data.t[rows])
            f.create_dataset("step", data=rows)
            for name, v in cells.items():
                f.create_dataset(_cell_key(name), data=v)
            for i in range(len(rows)):
                f.create_dataset(f"geometry/{i}", data=xyz[i])
                f.create_dataset(f"displacement/{i}", data=xyz[i] - xyz[0])
    heavy(tmp_h5 or h5_final)
    ref = os.path.relpath(os.path.abspath(h5_final), os.path.dirname(os.path.abspath(xdmf_path)))
    text = _xml(cfg.model.name, ref, data.t[rows], rows, topo.size, geom.ncells, P, cells, geom.bodies)
    with open(tmp_xdmf or xdmf_path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return len(rows), geom.ncells, P


def _cell_key(name):
    """HDF5 path of a cell array: ``cells/density``, ``cells/grad/<objective>/<design>``."""
    if name.startswith("d") and "/d" in name:
        obj, _, des = name[1:].partition("/d")
        return f"cells/grad/{obj}/{des}"
    return f"cells/{name}"


def _xml(model, ref, times, rows, topo_len, ncells, npoints, cells, bodies):
    def item(ds, dims, number="Float"):
        return (f'<DataItem Dimensions="{dims}" NumberType="{number}" Precision="8" Format="HDF">'
                f'{ref}:/{ds}</DataItem>')
    grids = []
    for i, (t, k) in enumerate(zip(times, rows)):
        attrs = [f'<Attribute Name="displacement" AttributeType="Vector" Center="Node">'
                 f'{item(f"displacement/{i}", f"{npoints} 3")}</Attribute>']
        attrs += [f'<Attribute Name={quoteattr(n)} AttributeType="Scalar" Center="Cell">'
                  f'{item(_cell_key(n), str(ncells))}</Attribute>' for n in cells]
        grids.append(
            f'    <Grid Name="step {int(k)}" GridType="Uniform">\n'
            f'      <Time Value="{float(t)!r}"/>\n'
            f'      <Topology TopologyType="Mixed" NumberOfElements="{ncells}">'
            f'{item("topology", str(topo_len), "Int")}</Topology>\n'
            f'      <Geometry GeometryType="XYZ">{item(f"geometry/{i}", f"{npoints} 3")}</Geometry>\n'
            + "".join(f"      {a}\n" for a in attrs) + "    </Grid>\n")
    return ('<?xml version="1.0" ?>\n<Xdmf Version="3.0">\n  <Domain>\n'
            f'  <Information Name="bodies" Value={quoteattr(",".join(bodies))}/>\n'
            f'  <Grid Name={quoteattr(model)} GridType="Collection" CollectionType="Temporal">\n'
            + "".join(grids) + "  </Grid>\n  </Domain>\n</Xdmf>\n")
