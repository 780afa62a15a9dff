"""PNG plots of a trajectory (matplotlib, Agg backend; serial, rank 0 only).

Panel 1: paths of every named body point (and ground points as markers);
panel 2: the angles of rigid bodies and of FFR body frames vs time; panel 3: the
mechanical energy Σ of every component's energy (kinetic, gravity, springs, elastic
elements) — constant for a conservative model, so its drift is a quick health check.
"""
from __future__ import annotations

import os
import tempfile

import numpy as np


def point_paths(system, q, p=None):
    """{"BODY.POINT": (rows, 2) global positions} for every named body point.

    r = (x, y)_com + A(θ) (P̄ − c̄) with q holding centre-of-mass coordinates.
    """
    q = np.atleast_2d(q)
    out = {}
    for b in system.config.bodies:
        for name in b.points:
            ref = f"{b.name}.{name}"
            out[ref] = _point_xy(system, ref, q, p)
    return out


def _point_xy(system, ref, q, p=None):
    qidx, s, _ = system.point_offset(ref, p)
    qe = system.extend(q)
    x, y, th = qe[:, qidx[0]], qe[:, qidx[1]], qe[:, qidx[2]]
    c, sn = np.cos(th), np.sin(th)
    return np.stack([x + c * s[0] - sn * s[1], y + sn * s[0] + c * s[1]], axis=1)


def energy(system, q, v, p=None, t=None):
    """Mechanical energy per row: Σ over every force component of its ``energy``
    (kinetic for inertia, potential for gravity, springs and elastic elements of rigid
    bodies, beams, plates and continua alike; 0 for non-conservative loads).  None if
    it cannot be evaluated.

    All rows at once (components are written over leading axes); checked against the
    one-state ``StateEval.energy`` at the first and last row, with a row-by-row
    fallback (at most 400 rows) for a component that does not vectorize."""
    from ..model.evaluation import StateEval
    p = system.p if p is None else p
    q, v = np.atleast_2d(q), np.atleast_2d(v)
    rows = len(q)
    t = np.zeros(rows) if t is None else np.asarray(t, float)
    lam = np.zeros(system.m)

    def one(k):
        return StateEval(system, float(t[k]), q[k], v[k], np.zeros_like(q[k]), lam, p).energy()

    try:
        qe, ve = system.extend(q), system.extend(v)
        E = np.zeros(rows)
        for g in system.forces:
            e = g.energy(t[0], qe[:, g.qidx], ve[:, g.qidx], p[g.pidx])
            E += np.sum(np.broadcast_to(e, (rows,) + np.shape(e)[1:]).reshape(rows, -1), axis=1)
        ends = (0, rows - 1)
        if np.allclose([E[k] for k in ends], [one(k) for k in ends], rtol=1e-10, atol=1e-12):
            return E
    except (ValueError, IndexError, TypeError):
        pass
    try:
        keep = np.unique(np.linspace(0, rows - 1, min(rows, 400)).astype(int))
        E = np.full(rows, np.nan)
        E[keep] = [one(k) for k in keep]
        return E
    except (ValueError, IndexError, TypeError, KeyError):
        return None


def plot_trajectory(system, t, q, v, out_png, title=None):
    """Write a 3-panel PNG of a trajectory; returns ``out_png``."""
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    cfg = system.config
    sim = cfg.simulation
    t, q, v = np.asarray(t), np.atleast_2d(q), np.atleast_2d(v)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.8))
    ax = axes[0]
    groups = []                                   # points joined by revolutes share a path
    for ref, xy in point_paths(system, q).items():
        for g in groups:
            if np.allclose(g[1], xy, rtol=0, atol=1e-9 * (1 + np.abs(xy).max())):
                g[0].append(ref)
                break
        else:
            groups.append(([ref], xy))
    for refs, xy in groups:
        line, = ax.plot(xy[:, 0], xy[:, 1], lw=1.2, label=" = ".join(refs))
        ax.plot(xy[0, 0], xy[0, 1], "o", ms=3, color=line.get_color())
    for name, xy in cfg.ground.points.items():
        ax.plot(xy[0], xy[1], "k^", ms=7)
        ax.annotate(f"ground.{name}", xy, textcoords="offset points", xytext=(3, 3), fontsize=7)
    spatial = len(getattr(system, "spatial", ()))
    if spatial:                                   # spatial bodies: side view x–z (parmbs/spatial/outputs.py)
        from ..spatial.outputs import point_paths as spatial_paths
        for ref, xyz in spatial_paths(system, q).items():
            line, = ax.plot(xyz[:, 0], xyz[:, 2], lw=1.2, label=ref)
            ax.plot(xyz[0, 0], xyz[0, 2], "o", ms=3, color=line.get_color())
        for name, xyz in cfg.spatial.ground.points.items():
            ax.plot(xyz[0], xyz[2], "k^", ms=7)
            ax.annotate(f"ground.{name}", (xyz[0], xyz[2]), textcoords="offset points", xytext=(3, 3), fontsize=7)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("z [m] (spatial: side view)" if spatial else "y [m]")
    ax.set_title("point paths (o: t = 0)")
    _legend(ax)
    ax.grid(alpha=0.3)

    ax = axes[1]
    from .hdf5 import coordinate_names
    for i, name in enumerate(coordinate_names(system)):
        if name.endswith(".angle"):          # rigid bodies and the frames of FFR bodies
            ax.plot(t, q[:, i], label=name[:-len(".angle")])
    if spatial:                              # spatial bodies: rotation angle from t = 0
        from ..spatial.outputs import rotation_angles
        for name, ang in rotation_angles(system, q).items():
            ax.plot(t, ang, label=f"{name} (rotation from t = 0)")
    ax.set_xlabel("t [s]")
    ax.set_ylabel("angle [rad]")
    ax.set_title("body and frame angles")
    _legend(ax)
    ax.grid(alpha=0.3)

    ax = axes[2]
    E = energy(system, q, v, t=t)
    if E is not None:
        ok = np.isfinite(E)
        ax.plot(t[ok], E[ok] - E[0])
        ax.set_ylabel("E(t) − E(0) [J]")
        ax.set_title(f"mechanical energy (E(0) = {E[0]:.6g} J)")
    else:
        for i, b in enumerate(system.body_names):
            ax.plot(t, v[:, 3 * i + 2], label=b)
        ax.set_ylabel("angular velocity [rad/s]")
        ax.set_title("body angular velocities")
        _legend(ax)
    ax.set_xlabel("t [s]")
    ax.grid(alpha=0.3)

    fig.suptitle(title or f"{cfg.model.name}: {sim.formulation}/{sim.integrator}, dt = {sim.dt:g} s, "
                 f"{len(t) - 1} steps, t = {t[0]:g}..{t[-1]:g} s")
    fig.tight_layout()
    fig.savefig(out_png, dpi=110)
    plt.close(fig)
    return out_png


def _legend(ax):
    if ax.get_legend_handles_labels()[0]:      # no empty legend (and no matplotlib warning)
        ax.legend(fontsize=7, loc="best")


def config_from_text(text, name="config.toml"):
    """Rebuild a Config from TOML text (as stored in /config) via a temp file."""
    from ..config import load_config
    with tempfile.TemporaryDirectory(prefix="parmbs-") as d:
        path = os.path.join(d, name)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        return load_config(path)


def plot_file(h5_path, out_png):
    """Plot a trajectory HDF5 file written by ``parmbs simulate -o``."""
    from ..model.system import System
    from .hdf5 import HDF5Error, read_trajectory
    from ..config import ConfigError
    data = read_trajectory(h5_path)
    try:
        cfg = config_from_text(data.config_text, os.path.basename(os.fspath(h5_path)) + ".config.toml")
    except ConfigError as e:
        raise HDF5Error(h5_path, "/config", f"stored config is invalid: {e.key}: {e.message}") from None
    system = System(cfg)
    if data.q.shape[1] != system.n:
        raise HDF5Error(h5_path, "/trajectory/q", f"width {data.q.shape[1]} does not match the "
                        f"stored config's {system.n} coordinates")
    return plot_trajectory(system, data.t, data.q, data.v, out_png)


def plot_any(h5_path, out_png, final_png=None):
    """``parmbs plot FILE.h5``: a trajectory file → ``plot_file``; an optimization record
    (``/optimize``, no ``/trajectory``) → its history PNG at ``out_png`` and, for a
    density design field of a plate or continuum, ``FILE.NAME.density.{png,xdmf,h5}``
    (``density.py``, each written under a working name and renamed).  ``final_png``:
    the name ``out_png`` (a working name) will be renamed to.  Returns the paths written."""
    import h5py
    opt = False
    try:                                 # anything unreadable: plot_file reports it
        with h5py.File(h5_path, "r") as f:
            opt = "optimize" in f and "trajectory" not in f
            if opt:
                g = f["optimize"]
                hist = g["history"][:int(g["history"].attrs["rows"])]
                cols = str(g["history"].attrs["columns"]).split(",")
                title = str(g.attrs["objective"])
    except (OSError, KeyError, ValueError):
        opt = False
    if not opt:
        plot_file(h5_path, out_png)
        return [final_png or out_png]
    from ..optimize.driver import plot_history
    from .density import write_record_density
    plot_history(hist, out_png, title, columns=cols)
    return [final_png or out_png, *write_record_density(h5_path)]
