"""Read back the XDMF time series of io/xdmf.py (no meshio needed): the XML is walked as
XDMF 3 says (Temporal collection → Uniform grids → Time, Topology, Geometry,
Attribute; HDF data items ``FILE:/path`` relative to the XML), so the tests check the
file a reader sees, not the writer's own arrays.  Handles what io/xdmf.py writes:
a Mixed topology of polylines (``2, n, nodes…``) and quads (``5, a, b, c, d``).
"""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET

import numpy as np

#: nodes per cell of the Mixed-topology ids used (polylines carry their own count)
_NODES = {5: 4, 9: 8, 4: 3}


class Frame:
    """One time step: ``t``, ``points`` (P, 3), ``cells`` [(xdmf id, node tuple)],
    ``point_data`` and ``cell_data`` {name: array}."""

    def __init__(self, t, points, cells, point_data, cell_data):
        self.t, self.points, self.cells = t, points, cells
        self.point_data, self.cell_data = point_data, cell_data


def _item(el, base, files):
    import h5py
    di = el.find("DataItem")
    dims = [int(d) for d in di.get("Dimensions").split()]
    if di.get("Format") != "HDF":
        raise ValueError(f"data item format {di.get('Format')!r}: only HDF is read")
    fname, _, path = di.text.strip().partition(":")
    full = os.path.join(base, fname)
    if full not in files:
        files[full] = h5py.File(full, "r")
    arr = files[full][path][()]
    if list(arr.shape) != dims and arr.size != int(np.prod(dims)):
        raise ValueError(f"{fname}:{path}: shape {arr.shape}, the XML says {dims}")
    return arr.reshape(dims)


def mixed_cells(flat):
    """[(xdmf id, nodes)] of a flat Mixed topology array."""
    out, r, flat = [], 0, np.asarray(flat)
    while r < len(flat):
        kind = int(flat[r])
        if kind == 2:                        # polyline: id, node count, nodes
            n = int(flat[r + 1])
            out.append((kind, tuple(int(x) for x in flat[r + 2:r + 2 + n])))
            r += 2 + n
        else:
            n = _NODES[kind]
            out.append((kind, tuple(int(x) for x in flat[r + 1:r + 1 + n])))
            r += 1 + n
    return out


def read_xdmf(path):
    """[Frame] of the temporal collection in ``path``, in file order."""
    root = ET.parse(path).getroot()
    base = os.path.dirname(os.path.abspath(path))
    coll = [g for g in root.iter("Grid") if g.get("CollectionType") == "Temporal"]
    if len(coll) != 1:
        raise ValueError(f"{path}: {len(coll)} temporal collections (expected 1)")
    files = {}
    frames = []
    try:
        for g in coll[0].findall("Grid"):
            topo = g.find("Topology")
            n_el = int(topo.get("NumberOfElements"))
            cells = mixed_cells(_item(topo, base, files).ravel())
            if len(cells) != n_el:
                raise ValueError(f"{path}: {len(cells)} cells, NumberOfElements says {n_el}")
            pts = _item(g.find("Geometry"), base, files)
            pdata, cdata = {}, {}
            for a in g.findall("Attribute"):
                (pdata if a.get("Center") == "Node" else cdata)[a.get("Name")] = _item(a, base, files)
            frames.append(Frame(float(g.find("Time").get("Value")), pts, cells, pdata, cdata))
    finally:
        for f in files.values():
            f.close()
    return frames
