"""parmbs export --xdmf: the XDMF time series read back (io/xdmf.py).

Every file is read twice: by meshio's ``xdmf.TimeSeriesReader`` (a test dependency,
pyproject [test]) and by parmbs/io/xdmf_read.py, which walks the XML as XDMF 3 says
(so a run without meshio still checks what a reader sees).  The expected numbers of
cells, points and time steps are counted from the model by hand in each test, and
point positions are checked against the stored trajectory (rigid-body kinematics)."""
import os

import h5py
import numpy as np
import pytest

from parmbs.io.xdmf_read import read_xdmf

from cli_helpers import parmbs_in_process

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _parmbs(*args, cwd, code=0):
    # cli.main in this process (tests/cli_helpers.py); the subprocess's env only put ROOT on PYTHONPATH
    r = parmbs_in_process("-q", *args, cwd=cwd)
    assert r.returncode == code, r.stderr[-2000:]
    return r


def _meshio(path):
    """(steps, {cell type: count}, times, last cell data) by meshio; None without it."""
    try:
        import meshio
    except ImportError:
        return None
    with meshio.xdmf.TimeSeriesReader(str(path)) as r:
        pts, cells = r.read_points_cells()
        times, last = [], None
        for k in range(r.num_steps):
            t, pd, cd = r.read_data(k)
            times.append(t)
            last = {n: np.concatenate(v) for n, v in cd.items()}
            assert pd["displacement"].shape == pts.shape
        return r.num_steps, {c.type: len(c.data) for c in cells}, np.array(times), last, len(pts)


def _check(path, steps, counts, npoints):
    """Both readers see ``steps`` time steps, ``counts`` {line, quad} cells, ``npoints``
    points; returns the frames of the own reader."""
    frames = read_xdmf(path)
    assert len(frames) == steps
    kinds = [c[0] for c in frames[0].cells]
    assert {"line": kinds.count(2), "quad": kinds.count(5)} == {k: counts.get(k, 0) for k in ("line", "quad")}
    assert all(len(f.cells) == len(frames[0].cells) and f.points.shape == (npoints, 3) for f in frames)
    for f in frames:                  # displacement = x(t) - x(t0): what a fixed-mesh reader moves by
        assert np.array_equal(f.point_data["displacement"], f.points - frames[0].points)
    m = _meshio(path)
    if m is not None:
        n, c, t, last, np_ = m
        assert (n, c, np_) == (steps, {k: v for k, v in counts.items() if v}, npoints)
        assert np.array_equal(t, [f.t for f in frames])
        for name, v in last.items():
            assert np.array_equal(v, frames[-1].cell_data[name], equal_nan=True)
    return frames


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("xdmf")


def test_planar_rigid_fivebar(work):
    """Four bars (3 collinear points each: 2 open outline segments + 2 frame axes) and
    two springs: 4·4 + 2 = 18 segments; 11 of the 51 rows."""
    _parmbs("simulate", os.path.join(ROOT, "configs", "fivebar.toml"), "--set", "simulation.t_end=0.05",
            "-o", "fb.h5", cwd=work)
    r = _parmbs("export", "fb.h5", "--xdmf", "fb.xdmf", "--frames", "11", cwd=work)
    # points: per bar 3 outline + 2 per frame axis (com, tip) = 7, per spring 2
    assert "wrote fb.xdmf and fb.xdmf.h5 (11 time steps, 18 cells, 32 points)" in r.stdout
    frames = _check(work / "fb.xdmf", 11, {"line": 18}, 32)
    with h5py.File(work / "fb.h5") as f:
        t, q = f["trajectory/t"][:], f["trajectory/q"][:]
        names = [str(n) for n in f["trajectory/q"].attrs["coordinates"]]
    rows = np.round(np.linspace(0, 50, 11)).astype(int)
    assert np.array_equal([fr.t for fr in frames], t[rows])
    # point 2 of the mechanism (B12.P2, local (√3.25, 0), com at half of it) at every frame
    i = names.index("B12.x")
    for fr, k in zip(frames, rows):
        x, y, th = q[k, i:i + 3]
        p2 = np.array([x, y]) + 0.9013878188659973 * np.array([np.cos(th), np.sin(th)])
        assert np.min(np.linalg.norm(fr.points[:, :2] - p2, axis=1)) < 1e-12
    assert np.abs(frames[-1].point_data["displacement"]).max() > 1e-4     # it moved
    kinds = frames[0].cell_data["kind"]
    assert list(np.bincount(kinds.astype(int))) == [8, 4, 4, 0, 0, 2]   # outline, frame x, y, -, -, spring
    assert np.isnan(frames[0].cell_data["density"]).all()


def test_flexible_plate_density_and_gradient_fields(work):
    """plate-pendulum: 8 × 4 quads on 9 × 5 nodes; its density field (all 1) and both
    objectives' element-field gradients as cell data, equal to /gradient in the run."""
    _parmbs("gradient", os.path.join(ROOT, "configs", "plate-pendulum.toml"), "--set", "simulation.t_end=0.02",
            "--set", "simulation.dt=2e-3", "-o", "pp.h5", cwd=work)     # 10 steps: 11 frames
    _parmbs("export", "pp.h5", "--xdmf", "pp.xdmf", cwd=work)
    frames = _check(work / "pp.xdmf", 11, {"quad": 32}, 45)
    cd = frames[-1].cell_data
    with h5py.File(work / "pp.h5") as f:
        for obj in ("tip", "compliance"):
            g = f[f"gradient/{obj}/x"][()]
            assert np.array_equal(cd[f"d{obj}/dx"], g) and np.abs(g).max() > 0
    assert np.array_equal(cd["density"], np.ones(32))
    # element e = j·nx + i has nodes k = j(nx+1) + i, +1, +nx+2, +nx+1 (io/density.py):
    # e = 9 is (i, j) = (1, 1), node 10 at (hx, hy) = (0.05, 0.025) of the undeformed plate at t = 0
    assert frames[0].cells[9] == (5, (10, 11, 20, 19))
    assert np.allclose(frames[0].points[10], [0.05, 0.025, 0.0], rtol=0, atol=1e-12)
    assert np.abs(frames[-1].point_data["displacement"]).max() > 1e-5


def test_ancf_beam_centre_line(work):
    """flexible-pendulum: 5 ANCF elements, 4 segments each on 21 points."""
    _parmbs("simulate", os.path.join(ROOT, "configs", "flexible-pendulum.toml"), "--set",
            "simulation.t_end=0.005", "-o", "fp.h5", cwd=work)
    _parmbs("export", "fp.h5", "--xdmf", "fp.xdmf", "--frames", "3", cwd=work)
    frames = _check(work / "fp.xdmf", 3, {"line": 20}, 21)
    with h5py.File(work / "fp.h5") as f:
        q = f["trajectory/q"][-1]
        names = [str(n) for n in f["trajectory/q"].attrs["coordinates"]]
    tip = [q[names.index("beam.node5.x")], q[names.index("beam.node5.y")]]
    assert np.allclose(frames[-1].points[-1, :2], tip, rtol=0, atol=1e-14)   # the line ends at the tip node


def test_spatial_body_frame(work):
    """spatial-ball: one body with no named point: its three frame axes (6 points), of
    length FRAME = 0.25 (no extent of its own, none in the model); the x axis ends at
    r + 0.25 A(p) e_x, A(p) e_x = (e0² + e1² − e2² − e3², 2(e1e2 + e0e3), 2(e1e3 − e0e2))."""
    _parmbs("simulate", os.path.join(ROOT, "configs", "spatial-ball.toml"), "--set", "simulation.t_end=0.05",
            "-o", "ball.h5", cwd=work)
    _parmbs("export", "ball.h5", "--xdmf", "ball.xdmf", "--frames", "5", cwd=work)
    frames = _check(work / "ball.xdmf", 5, {"line": 3}, 6)
    with h5py.File(work / "ball.h5") as f:
        q = f["trajectory/q"][-1]
    r, (e0, e1, e2, e3) = q[:3], q[3:7]
    ex = np.array([e0**2 + e1**2 - e2**2 - e3**2, 2 * (e1 * e2 + e0 * e3), 2 * (e1 * e3 - e0 * e2)])
    assert np.allclose(frames[-1].points[0], r, rtol=0, atol=1e-14)
    assert np.allclose(frames[-1].points[1], r + 0.25 * ex, rtol=0, atol=1e-14)
    assert abs(ex[2]) > 1e-2                                   # the ball has turned
    assert list(frames[0].cell_data["kind"]) == [1, 2, 7]


def test_bad_requests_are_one_line_exit_2(work):
    _parmbs("simulate", os.path.join(ROOT, "configs", "pendulum.toml"), "--set", "simulation.t_end=0.005",
            "-o", "p.h5", cwd=work)
    for args, words in ((("nothere.h5", "--xdmf", "x.xdmf"), "no such file"),
                        (("p.h5", "--xdmf", "nodir/x.xdmf"), "no such directory"),
                        (("p.h5", "--xdmf", "x.xdmf", "--frames", "1"), "--frames")):
        r = _parmbs("export", *args, cwd=work, code=2)
        assert words in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not [f for f in os.listdir(work) if ".tmp-" in f or f.startswith("x.xdmf")]
