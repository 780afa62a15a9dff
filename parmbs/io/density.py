"""Element density fields of a structured quad mesh to XDMF (ParaView) and PNG.

A plate or continuum (``[[plates]]``, ``[[continua]]``; schema ``_MeshBody``) is an
Lx × Ly rectangle of nx × ny bilinear quads, node (i, j) at X = X₀ + (i hx, j hy) in
its own frame, element e = j·nx + i.  Its density field x_e (the topology design
variables, seed 003 §4 Eq. 81) is drawn in that undeformed body frame.

XDMF 3 (xdmf.org, "XDMF Model and Format"): a light XML file and the heavy data in
HDF5 beside it.  The grid is written with an *unstructured* ``Quadrilateral`` topology
(connectivity (nel, 4), counter-clockwise) and ``XY`` geometry (nodes (nnode, 2)), and
the density as a ``Cell``-centred ``Scalar`` attribute — explicit and unambiguous in
every reader (the ``2DCoRectMesh`` origin/spacing order differs between readers).

``record_density(h5)``: the final design of an optimization record (``/optimize/design``,
or with a density filter the physical ``/optimize/design_physical``,
else the last evaluated ``/optimize/x`` row) split into the density fields of the
stored config's meshes (columns named ``C.density[e]``, ``design.py``).
"""
from __future__ import annotations

import os
from xml.sax.saxutils import quoteattr

import numpy as np


def quad_mesh(nx, ny, size, offset=(0.0, 0.0)):
    """(nodes (nnode, 2), quads (nel, 4)) of the nx × ny mesh: node k = j(nx+1) + i,
    element e = j·nx + i with nodes (i,j), (i+1,j), (i+1,j+1), (i,j+1)."""
    X, Y = np.meshgrid(offset[0] + np.linspace(0.0, size[0], nx + 1),
                       offset[1] + np.linspace(0.0, size[1], ny + 1))
    nodes = np.column_stack([X.ravel(), Y.ravel()])
    j, i = np.divmod(np.arange(nx * ny), nx)
    n0 = j * (nx + 1) + i
    quads = np.column_stack([n0, n0 + 1, n0 + nx + 2, n0 + nx + 1]).astype(np.int64)
    return nodes, quads


def _field(values, nx, ny):
    v = np.asarray(values, float).ravel()
    if v.size != nx * ny:
        raise ValueError(f"{v.size} density values for an {nx} x {ny} mesh ({nx * ny} elements)")
    return v


def write_xdmf(xdmf_path, values, nx, ny, size, offset=(0.0, 0.0), name="density", h5_path=None):
    """Write the element field ``values`` (e = j·nx + i) as XDMF 3 + HDF5; returns
    (xdmf_path, h5_path).  Heavy data: ``/nodes`` (nnode, 2), ``/quads`` (nel, 4) and
    ``/{name}`` (nel,) in ``h5_path`` (default: the XDMF path with ``.h5``)."""
    import h5py
    v = _field(values, nx, ny)
    nodes, quads = quad_mesh(nx, ny, size, offset)
    xdmf_path = os.fspath(xdmf_path)
    h5_path = os.fspath(h5_path) if h5_path else os.path.splitext(xdmf_path)[0] + ".h5"
    from .outputs import replace_on_root

    def heavy(tmp):
        with h5py.File(tmp, "w") as f:
            f.create_dataset("nodes", data=nodes)
            f.create_dataset("quads", data=quads)
            f.create_dataset(name, data=v)
    replace_on_root(h5_path, heavy)      # written whole, then renamed (io/outputs.py)
    # heavy-data references are relative to the XDMF file's directory
    ref = os.path.relpath(os.path.abspath(h5_path), os.path.dirname(os.path.abspath(xdmf_path)))
    nel, nn = len(quads), len(nodes)

    def item(ds, dims, number, precision):
        return (f'<DataItem Dimensions="{dims}" NumberType="{number}" Precision="{precision}" '
                f'Format="HDF">{ref}:/{ds}</DataItem>')
    text = f"""<?xml version="1.0" ?>
<Xdmf Version="3.0">
  <Domain>
    <Grid Name={quoteattr(name)} GridType="Uniform">
      <Topology TopologyType="Quadrilateral" NumberOfElements="{nel}" NodesPerElement="4">
        {item("quads", f"{nel} 4", "Int", 8)}
      </Topology>
      <Geometry GeometryType="XY">
        {item("nodes", f"{nn} 2", "Float", 8)}
      </Geometry>
      <Attribute Name={quoteattr(name)} AttributeType="Scalar" Center="Cell">
        {item(name, f"{nel}", "Float", 8)}
      </Attribute>
    </Grid>
  </Domain>
</Xdmf>
"""
    def light(tmp):
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
    replace_on_root(xdmf_path, light)
    return xdmf_path, h5_path


def write_png(png_path, values, nx, ny, size, offset=(0.0, 0.0), title="density"):
    """Grey-scale image of the element field (1 black, 0 white), equal aspect, colour bar."""
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    v = _field(values, nx, ny).reshape(ny, nx)
    xe = offset[0] + np.linspace(0.0, size[0], nx + 1)
    ye = offset[1] + np.linspace(0.0, size[1], ny + 1)
    w = 9.0
    fig, ax = plt.subplots(figsize=(w, max(2.5, w * size[1] / size[0] + 1.2)))
    m = ax.pcolormesh(xe, ye, v, cmap="gray_r", vmin=0.0, vmax=1.0, shading="flat")
    ax.set_aspect("equal")
    ax.set(xlabel="x (body frame) [m]", ylabel="y [m]", title=title)
    fig.colorbar(m, ax=ax, label="element density", shrink=0.8)
    fig.tight_layout()
    from .outputs import replace_on_root
    try:
        replace_on_root(png_path, lambda tmp: fig.savefig(tmp, dpi=130))
    finally:
        plt.close(fig)
    return png_path


def record_density(h5_path):
    """[(mesh config, kind "continua"|"plates", field values (nx·ny,))] of the final
    design in an optimization record; [] if its design has no density field."""
    import h5py
    from .hdf5 import HDF5Error
    from .stored_config import config_from_text
    with h5py.File(h5_path, "r") as f:
        if "optimize" not in f or "config" not in f:
            raise HDF5Error(h5_path, "/optimize", "missing (not a parmbs optimization record)")
        g = f["optimize"]
        from .hdf5 import get_names
        names = [str(n) for n in get_names(g, "names")]    # attribute, or /names/names when long
        physical = "design_physical" in g      # a density filter's x̃ = W ρ: what the model saw
        if physical:
            x = g["design_physical"][()]
        elif "design" in g:
            x = g["design"][()]
        else:
            k = int(g.attrs["evaluations"])
            if k == 0:
                raise HDF5Error(h5_path, "/optimize/x", "no evaluation recorded yet")
            x = g["x"][k - 1]
        text = f["config"][()]
    text = text.decode("utf-8") if isinstance(text, bytes) else str(text)
    cfg = config_from_text(text, os.path.basename(os.fspath(h5_path)) + ".config.toml")
    col = {n: i for i, n in enumerate(names)}
    out = []
    for d in cfg.design:
        kind, _, rest = d.path.partition(".")
        body, _, key = rest.partition(".")
        if kind not in ("continua", "plates") or key != "density":
            continue
        mesh = next(m for m in getattr(cfg, kind) if m.name == body)
        idx = [col.get(f"{body}.density[{e}]") for e in range(mesh.nx * mesh.ny)]
        if any(i is None for i in idx):
            raise HDF5Error(h5_path, "/optimize", f"design columns of {d.path} missing in the record")
        field = np.asarray(x)[np.array(idx)]
        if not physical and cfg.optimize.filter_radius is not None:   # unfinished filtered run
            from ..flexible.density_filter import mesh_filter
            field = mesh_filter(mesh, cfg.optimize.filter_radius).apply(field)
        out.append((mesh, kind, field))
    return out


def write_record_density(h5_path, base=None):
    """PNG and XDMF (+ heavy HDF5) of every density field of an optimization record,
    named ``BASE.NAME.density.{png,xdmf,h5}`` (BASE: the record path without ``.h5``);
    returns the paths written."""
    from .outputs import final_of
    base = base or os.path.splitext(final_of(h5_path))[0]
    written = []
    for mesh, kind, v in record_density(h5_path):
        stem = f"{base}.{mesh.name}.density"
        offset = tuple(getattr(mesh, "offset", (0.0, 0.0)))
        vol = float(np.mean(v))
        written.append(write_png(stem + ".png", v, mesh.nx, mesh.ny, mesh.size, offset,
                                 title=f"{kind}.{mesh.name}.density: {mesh.nx} x {mesh.ny} elements, "
                                       f"volume fraction {vol:.4f}"))
        written += list(write_xdmf(stem + ".xdmf", v, mesh.nx, mesh.ny, mesh.size, offset))
    return written
