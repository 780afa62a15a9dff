"""Element density fields to XDMF + HDF5 and PNG (parmbs/io/density.py), and
``parmbs plot`` of an optimization record of the coarse topopt-crank writing them."""
from __future__ import annotations

import pathlib
import xml.etree.ElementTree as ET

import h5py
import numpy as np
import pytest

from parmbs.io.density import write_png, write_xdmf

from cli_helpers import parmbs_in_process

ROOT = pathlib.Path(__file__).parents[1]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def read_xdmf(path):
    """{Topology|Geometry|Attribute: (element, array)} with each DataItem's
    ``file:/dataset`` resolved relative to the XDMF file and its Dimensions checked."""
    root = ET.parse(path).getroot()                     # well-formed XML or ParseError
    assert root.tag == "Xdmf" and root.get("Version") == "3.0"
    grids = root.findall("./Domain/Grid")
    assert len(grids) == 1 and grids[0].get("GridType") == "Uniform"
    out = {}
    for tag in ("Topology", "Geometry", "Attribute"):
        el = grids[0].find(tag)
        item = el.find("DataItem")
        assert item.get("Format") == "HDF"
        fname, ds = item.text.strip().split(":")
        with h5py.File(pathlib.Path(path).parent / fname, "r") as f:
            data = f[ds][()]
        assert data.shape == tuple(int(d) for d in item.get("Dimensions").split())
        out[tag] = (el, data)
    return out


def test_xdmf_quads_and_cell_field(tmp_path):
    """The cell attribute is the field in element order e = j·nx + i; the quads are
    counter-clockwise with area hx·hy and centroid at offset + ((i+½)hx, (j+½)hy)."""
    nx, ny, size, offset = 5, 3, (0.25, 0.06), (-0.025, -0.03)
    v = np.random.default_rng(2).uniform(0.01, 1.0, nx * ny)
    xdmf, h5 = write_xdmf(tmp_path / "rho.xdmf", v, nx, ny, size, offset)
    assert pathlib.Path(h5).exists()
    d = read_xdmf(xdmf)
    top, quads = d["Topology"]
    assert top.get("TopologyType") == "Quadrilateral" and int(top.get("NumberOfElements")) == nx * ny
    geo, nodes = d["Geometry"]
    assert geo.get("GeometryType") == "XY" and nodes.shape == ((nx + 1) * (ny + 1), 2)
    att, vals = d["Attribute"]
    assert att.get("Center") == "Cell" and att.get("AttributeType") == "Scalar"
    np.testing.assert_array_equal(vals, v)
    xy = nodes[quads]                                     # (nel, 4, 2)
    x, y = xy[..., 0], xy[..., 1]
    area = 0.5 * np.sum(x * np.roll(y, -1, axis=1) - np.roll(x, -1, axis=1) * y, axis=1)
    hx, hy = size[0] / nx, size[1] / ny
    np.testing.assert_allclose(area, hx * hy, rtol=1e-12)
    j, i = np.divmod(np.arange(nx * ny), nx)
    np.testing.assert_allclose(xy.mean(axis=1), np.c_[offset[0] + (i + 0.5) * hx, offset[1] + (j + 0.5) * hy],
                               atol=1e-15)


def test_png_and_size_check(tmp_path):
    png = write_png(tmp_path / "rho.png", np.linspace(0, 1, 12), 4, 3, (0.4, 0.3))
    assert pathlib.Path(png).read_bytes()[:8] == PNG_MAGIC
    with pytest.raises(ValueError, match="4 x 3 mesh"):
        write_png(tmp_path / "bad.png", np.ones(11), 4, 3, (0.4, 0.3))
    with pytest.raises(ValueError, match="elements"):
        write_xdmf(tmp_path / "bad.xdmf", np.ones(13), 4, 3, (0.4, 0.3))


def test_plot_optimization_record_writes_density(tmp_path):
    """``parmbs optimize`` (MMA, 1 update) of a 10 × 2 topopt-crank, then ``parmbs plot``
    of its record: history PNG, density PNG and an XDMF whose field is the record's
    final design."""
    sets = ["continua.crank.nx=10", "continua.crank.ny=2", "continua.crank.points.pin=[9,1]",
            "continua.crank.clamp_radius=0.026", "simulation.t_end=0.04", "simulation.dt=0.02",
            "optimize.max_it=1"]
    rec = tmp_path / "rec.h5"
    # cli.main in this process (tests/cli_helpers.py)
    r = parmbs_in_process("optimize", ROOT / "configs" / "topopt-crank.toml", "-o", rec,
                          *[x for s in sets for x in ("--set", s)])
    assert r.returncode == 0, r.stderr
    r = parmbs_in_process("plot", rec, "-o", tmp_path / "hist.png")
    assert r.returncode == 0, r.stderr
    for name in ("hist.png", "rec.crank.density.png"):
        assert (tmp_path / name).read_bytes()[:8] == PNG_MAGIC
    with h5py.File(rec, "r") as f:
        # with a density filter (the config's filter_radius) the model saw x̃ = W ρ
        design = f["optimize/design_physical" if "design_physical" in f["optimize"] else "optimize/design"][()]
    assert not np.allclose(design, 1.0)           # MMA moved off the initial x = 1
    _, vals = read_xdmf(tmp_path / "rec.crank.density.xdmf")["Attribute"]
    np.testing.assert_array_equal(vals, design)
