"""The trajectory plot's energy panel and angle panel for every kind of body."""
from __future__ import annotations

import numpy as np
import pytest

from parmbs.config import load_config
from parmbs.io.plot import energy, plot_trajectory
from parmbs.model.evaluation import StateEval
from parmbs.sensitivity.problem import Problem

from conftest import CONFIGS

RUNS = {"fivebar": ["simulation.t_end=0.1", "simulation.dt=1e-2"],
        "flexible-pendulum": ["simulation.t_end=0.02"],
        "plate-pendulum": ["simulation.t_end=0.01"],
        "slider-crank-flex": ["simulation.t_end=0.001", "simulation.dt=1e-4"]}


@pytest.mark.parametrize("name", list(RUNS))
def test_energy_is_every_components_energy(name, tmp_path):
    """All rows at once equal the one-state StateEval.energy (rigid, ANCF, plate and FFR
    beam components), and the PNG is written with one angle curve per body frame."""
    pr = Problem(load_config(str(CONFIGS / f"{name}.toml"), RUNS[name] + ["simulation.progress=false"]))
    tr = pr.forward()
    E = energy(pr.sys, tr.q, tr.v, t=tr.t)
    ref = [StateEval(pr.sys, tr.t[k], tr.q[k], tr.v[k], np.zeros(pr.sys.n), np.zeros(pr.sys.m),
                     pr.sys.p).energy() for k in range(len(tr.t))]
    X = pr.sys.extend(tr.q), pr.sys.extend(tr.v)
    scale = max(sum(float(np.sum(np.abs(g.energy(0.0, X[0][k][g.qidx], X[1][k][g.qidx], pr.sys.p[g.pidx]))))
                    for g in pr.sys.forces) for k in range(len(tr.t)))    # size of the summed terms
    np.testing.assert_allclose(E, ref, rtol=0, atol=1e-12 * scale)   # round-off of the summed terms
    assert np.ptp(E) > 0 or name == "plate-pendulum"       # a moving model's energy terms change
    png = plot_trajectory(pr.sys, tr.t, tr.q, tr.v, tmp_path / "t.png")
    assert (tmp_path / "t.png").stat().st_size > 10_000, png


# ----------------------------------------------------------------------------- the mechanism drawn

def _run(name, sets):
    pr = Problem(load_config(str(CONFIGS / f"{name}.toml"), sets + ["simulation.progress=false"]))
    return pr, pr.forward()


def _mech(pr):
    from parmbs.io.hdf5 import coordinate_names
    from parmbs.io.mechanism import Mechanism
    return Mechanism(pr.sys.config, coordinate_names(pr.sys))


def test_rigid_points_are_the_models_points():
    """mechanism.py's r = r_c + A(θ)(P̄ − c̄) equals the model's own point kinematics
    (point_paths: System.point_offset), to round-off of O(1) coordinates."""
    from parmbs.io.plot import point_paths
    pr, tr = _run("fivebar", RUNS["fivebar"])
    mech = _mech(pr)
    for ref, xy in point_paths(pr.sys, tr.q).items():
        np.testing.assert_allclose(mech.point(tr.q, ref), xy, rtol=0, atol=1e-13)


def test_beam_and_plate_geometry_follow_their_nodes():
    """ANCF: the Hermite centre line passes through the nodal positions; FFR: the tip
    is the frame point (L + u_N, v_N); plate: node positions are q's."""
    from parmbs.io.hdf5 import coordinate_names
    pr, tr = _run("flexible-pendulum", RUNS["flexible-pendulum"])
    mech, names = _mech(pr), coordinate_names(pr.sys)
    for b in mech.ancf.values():
        line = mech.ancf_line(tr.q, b.name, per=8)
        for k in range(b.elements + 1):
            node = np.column_stack([tr.q[:, names.index(f"{b.name}.node{k}.{c}")] for c in ("x", "y")])
            np.testing.assert_allclose(line[:, 8 * k], node, rtol=0, atol=1e-14)
    pr, tr = _run("slider-crank-flex", RUNS["slider-crank-flex"])
    mech, names = _mech(pr), coordinate_names(pr.sys)
    for b in mech.ffr.values():
        c = [tr.q[:, names.index(f"{b.name}.{k}")] for k in ("x", "y", "angle")]
        u, v = (tr.q[:, names.index(f"{b.name}.node{b.elements}.{k}")] for k in ("u", "v"))
        tip = np.column_stack([c[0] + np.cos(c[2]) * (b.length + u) - np.sin(c[2]) * v,
                               c[1] + np.sin(c[2]) * (b.length + u) + np.cos(c[2]) * v])
        np.testing.assert_allclose(mech.point(tr.q, f"{b.name}.tip"), tip, rtol=0, atol=1e-12 * b.length)
    pr, tr = _run("plate-pendulum", RUNS["plate-pendulum"])
    mech, names = _mech(pr), coordinate_names(pr.sys)
    for p in mech.plates.values():
        nodes = mech.mesh_nodes(tr.q, p.name)
        np.testing.assert_array_equal(nodes[:, p.ny, p.nx, 1], tr.q[:, names.index(f"{p.name}.node_{p.nx}_{p.ny}.y")])


def test_continuum_mesh_starts_at_its_pose():
    """At t = 0 (undeformed) a continuum's node (i, j) is r + A(θ)(offset + (i hx, j hy))."""
    pr = Problem(load_config(str(CONFIGS / "topopt-crank.toml"), ["simulation.progress=false",
                                                                  "continua.crank.nx=25", "continua.crank.ny=10",
                                                                  "continua.crank.points.pin=[22, 5]"]))
    mech = _mech(pr)
    q0 = pr.stepper.initial(0.0, pr.sys.p)[0][None]
    for c in mech.continua.values():
        nodes = mech.mesh_nodes(q0, c.name)[0]
        r, th = mech._frame(q0, c.name)
        X = np.array([c.offset[0] + c.size[0], c.offset[1] + c.size[1]])
        want = r[0] + np.array([np.cos(th[0]) * X[0] - np.sin(th[0]) * X[1], np.sin(th[0]) * X[0] + np.cos(th[0]) * X[1]])
        np.testing.assert_allclose(nodes[-1, -1], want, rtol=0, atol=1e-9 * np.abs(X).max())


@pytest.mark.parametrize("name", ["plate-pendulum", "flexible-pendulum", "slider-crank-flex"])
def test_flexible_models_are_drawn(name, tmp_path):
    """The first panel of a flexible model holds its deformed shape (the panels were
    empty): a mesh collection for plates, a beam line of many points for beams."""
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    from matplotlib.collections import PolyCollection
    from parmbs.io.plot import _body_colors, draw_state
    pr, tr = _run(name, RUNS[name])
    mech = _mech(pr)
    fig, ax = plt.subplots()
    art = draw_state(ax, mech, tr.q[-1:], _body_colors(pr.sys))
    plt.close(fig)
    if mech.plates:
        assert any(isinstance(a, PolyCollection) and len(a.get_paths()) == p.nx * p.ny
                   for a in art for p in mech.plates.values())
    for b in [*mech.ancf.values(), *mech.ffr.values()]:
        assert any(len(getattr(a, "get_xydata", lambda: [])()) == 8 * b.elements + 1 for a in art), b.name


def test_spinning_body_angle_is_a_ramp():
    """A body turning at constant rate about z for 3 turns: the plotted angle is the
    unwrapped ω t (the unsigned angle from t = 0 folded into a sawtooth in [0, π])."""
    from types import SimpleNamespace
    from parmbs.io.spatial_view import rotation_about_main_axis
    from parmbs.spatial.kinematics import from_axis_angle
    t = np.linspace(0.0, 1.0, 401)
    ang = 6 * np.pi * t
    q = np.array([np.concatenate([[0.0, 0.0, 0.0], from_axis_angle([0, 0, 1], a)]) for a in ang])
    body = SimpleNamespace(offset=0, p0=from_axis_angle([0, 0, 1], 0.0))
    sysm = SimpleNamespace(spatial=SimpleNamespace(bodies={"wheel": body}))
    np.testing.assert_allclose(rotation_about_main_axis(sysm, q)["wheel"], ang, rtol=0, atol=1e-12)
    q[:, 3:] *= -1                  # −p is the same rotation: the same curve
    np.testing.assert_allclose(rotation_about_main_axis(sysm, q)["wheel"], ang, rtol=0, atol=1e-12)
