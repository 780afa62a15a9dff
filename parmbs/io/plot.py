"""PNG plots of a trajectory (matplotlib, Agg backend; serial, rank 0 only).

Panel 1 (planar models): the mechanism drawn at five instants — rigid bodies as the
outline of their points, beams as their deformed centre lines, plates and continua as
their deformed meshes shaded by element density, joints, springs, ground points —
over the paths of the points (mechanism.py).  Spatial models: side and top views of
the bodies over the road (spatial_view.py).  Next: the body angles, unwrapped; last:
the mechanical energy Σ of every component's energy (kinetic, gravity, springs,
elastic elements) — constant for a conservative model, so its drift is a quick health
check.  Colours are per body and the same in every panel; one legend below the panels.
"""
from __future__ import annotations

import os

import numpy as np

from .stored_config import config_from_text  # noqa: F401  (stored_config.py; kept for importers)


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


#: snapshots of the mechanism drawn in the first panel: fractions of the run
SNAPSHOTS = (0.0, 0.25, 0.5, 0.75, 1.0)
#: a legend with more entries than this is left out (it would cover the panel)
MAX_LEGEND = 14


def plot_trajectory(system, t, q, v, out_png, title=None):
    """Write a PNG of a trajectory; returns ``out_png``.

    Planar models: the mechanism itself (bodies, beams, meshes, joints, springs) at five
    instants over the point paths; body angles; mechanical energy.  Spatial models: a
    side (x–z) and a top (x–y) view of the bodies over the road, their rotation angles
    (unwrapped, spatial_view.py) and the energy."""
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    cfg = system.config
    sim = cfg.simulation
    t, q, v = np.asarray(t), np.atleast_2d(q), np.atleast_2d(v)
    spatial = len(getattr(system, "spatial", None) or ())
    planar = bool(cfg.bodies or cfg.beams or cfg.plates or cfg.continua)
    views = (1 if planar else 0) + (2 if spatial else 0)
    fig, axes = plt.subplots(1, views + 2, figsize=(5.2 * (views + 2), 5.4), squeeze=False)
    axes = list(axes[0])
    colors = _body_colors(system)
    legend_items = {}
    if planar:
        _mechanism_panel(axes.pop(0), system, t, q, colors, legend_items)
    if spatial:
        _spatial_panels(axes.pop(0), axes.pop(0), system, t, q, colors, legend_items)

    ax = axes[0]
    from .hdf5 import coordinate_names
    for i, name in enumerate(coordinate_names(system)):
        if name.endswith(".angle"):          # rigid bodies and the frames of FFR bodies
            body = name[:-len(".angle")]
            ax.plot(t, np.unwrap(q[:, i]), color=colors.get(body), label=body)
    if planar:                               # ANCF beams and plates: the angle of a chord
        from .mechanism import Mechanism
        mech = Mechanism(cfg, coordinate_names(system))
        for name in [*mech.ancf, *mech.plates]:
            ax.plot(t, mech.chord_angle(q, name), "--", color=colors.get(name), label=f"{name} (chord)")
    if spatial:
        from .spatial_view import rotation_about_main_axis
        for name, ang in rotation_about_main_axis(system, q).items():
            ax.plot(t, ang, color=colors.get(name), label=name)
    u = units(cfg)
    ax.set_xlabel(f"t [{u['time']}]")
    ax.set_ylabel("angle [rad]")
    ax.set_title("body angles, unwrapped" + ("\n(spatial: about each body's main axis, from t = 0)"
                                             if spatial else ""), fontsize=10)
    ax.grid(alpha=0.3)

    ax = axes[1]
    E = energy(system, q, v, t=t)
    if E is not None:
        ok = np.isfinite(E)
        ax.plot(t[ok], E[ok] - E[0], color="k")
        ax.set_ylabel(f"E(t) − E(0) [{u['energy']}]")
        ax.set_title(f"mechanical energy (E(0) = {E[0]:.6g} {u['energy']})", fontsize=10)
    else:
        for i, b in enumerate(system.body_names):
            ax.plot(t, v[:, 3 * i + 2], color=colors.get(b))
        ax.set_ylabel(f"angular velocity [rad/{u['time']}]")
        ax.set_title("body angular velocities", fontsize=10)
    ax.set_xlabel(f"t [{u['time']}]")
    ax.grid(alpha=0.3)

    fig.suptitle(title or f"{cfg.model.name}: {sim.formulation}/{sim.integrator}, dt = {sim.dt:g} {u['time']}, "
                 f"{len(t) - 1} steps, t = {t[0]:g}..{t[-1]:g} {u['time']}")
    shown = _figure_legend(fig, legend_items)
    fig.tight_layout(rect=(0, 0.08 if shown else 0, 1, 1))
    fig.savefig(out_png, dpi=110)
    plt.close(fig)
    return out_png


def units(cfg):
    """Unit labels of the model (``model.units``; SI when absent).  Labels only: parmbs
    reads every number in the model's own consistent units and converts nothing."""
    u = getattr(cfg.model, "units", None)
    return {"length": "m", "mass": "kg", "time": "s", "energy": "J"} if u is None else \
        {"length": u.length, "mass": u.mass, "time": u.time, "energy": u.energy}


def _body_colors(system):
    """One colour per body (planar and spatial), the same in every panel."""
    return _body_colors_of(system.config)


def _body_colors_of(cfg):
    import matplotlib
    names = [b.name for b in cfg.bodies] + [b.name for b in cfg.beams] + [p.name for p in cfg.plates]
    names += [c.name for c in cfg.continua]
    if cfg.spatial is not None:
        names += [b.name for b in cfg.spatial.bodies]
    cmap = matplotlib.colormaps["tab10" if len(names) <= 10 else "tab20"]
    return {n: cmap(i % cmap.N) for i, n in enumerate(names)}


def _figure_legend(fig, items):
    """One legend for the figure (body → colour), below the panels; left out when there
    are too many bodies to read it (the panels' colours still separate them).  Returns
    whether it was drawn."""
    if not items or len(items) > MAX_LEGEND:
        return False
    from matplotlib.lines import Line2D
    handles = [Line2D([], [], color=c, lw=3) for c in items.values()]
    fig.legend(handles, list(items), loc="lower center", ncol=min(len(items), 7), fontsize=8, frameon=False)
    return True


def _snapshot_rows(n):
    return sorted({int(round(f * (n - 1))) for f in SNAPSHOTS})


def _mechanism_panel(ax, system, t, q, colors, legend_items):
    """Planar view: point paths (thin), the mechanism at the snapshot instants (faint to
    solid), ground points, joints and springs (mechanism.py)."""
    from .hdf5 import coordinate_names
    from .mechanism import Mechanism
    mech = Mechanism(system.config, coordinate_names(system))
    rows = _snapshot_rows(len(t))
    draw_paths(ax, mech, q, colors)
    for j, k in enumerate(rows):
        last = j == len(rows) - 1
        draw_state(ax, mech, q[k:k + 1], colors, 1.0 if last else (0.6 if k == 0 else 0.3),
                   detail=last or k == 0)
    for name, xy in system.config.ground.points.items():
        ax.annotate(name, xy, textcoords="offset points", xytext=(5, 4), fontsize=7)
    for name in mech.body_names():
        legend_items[name] = colors.get(name)
    u = units(system.config)
    ax.autoscale_view()
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel(f"x [{u['length']}]")
    ax.set_ylabel(f"y [{u['length']}]")
    ax.set_title(f"mechanism at t = {', '.join(f'{t[k]:.3g}' for k in rows)} {u['time']}\n"
                 "(faint → solid; thin lines: paths of points)", fontsize=10)
    ax.grid(alpha=0.3)


def draw_paths(ax, mech, q, colors):
    """Paths of the rigid bodies' named points (coincident ones once), beam tips and
    mesh corners, thin, in their body's colour."""
    seen = []
    for ref in mech.named_points():
        xy = mech.point(q, ref)
        if any(np.allclose(xy, s, rtol=0, atol=1e-9 * (1 + np.abs(xy).max())) for s in seen):
            continue
        seen.append(xy)
        ax.plot(xy[:, 0], xy[:, 1], lw=0.8, alpha=0.6, color=colors.get(ref.split(".")[0]))
    for name in [*mech.ancf, *mech.ffr]:
        xy = mech.point(q, f"{name}.tip")
        ax.plot(xy[:, 0], xy[:, 1], lw=0.8, alpha=0.6, color=colors.get(name))
    for name in [*mech.plates, *mech.continua]:
        nodes = mech.mesh_nodes(q, name)
        for corner in (nodes[:, -1, -1], nodes[:, 0, -1]):
            ax.plot(corner[:, 0], corner[:, 1], lw=0.8, alpha=0.6, color=colors.get(name))


def draw_state(ax, mech, qk, colors, alpha=1.0, detail=True):
    """The mechanism at one state ``qk`` (1, n): returns the matplotlib artists (for
    animation).  Rigid bodies: filled outline; beams: deformed centre line; plates and
    continua: deformed mesh shaded by element density; springs: zig-zags; joints at
    their point a (o revolute, □ prismatic, ◇ weld); ground points: ▲.  Without
    ``detail`` (the intermediate snapshots): bodies and mesh outlines only."""
    from matplotlib.collections import PolyCollection
    from .mechanism import zigzag
    cfg = mech.cfg
    art = []
    for name in mech.rigid:
        out = mech.rigid_outline(qk, name)[0]
        c = colors.get(name)
        if len(out) >= 3:
            art += ax.fill(out[:, 0], out[:, 1], color=c, alpha=0.3 * alpha, lw=0)
            art += ax.plot(*np.vstack([out, out[:1]]).T, color=c, lw=1.5, alpha=alpha)
        elif np.ptp(out, axis=0).max() > 0:
            art += ax.plot(out[:, 0], out[:, 1], color=c, lw=4, alpha=alpha, solid_capstyle="round")
        else:                                   # a body with no extent (one point at its COM)
            art += ax.plot(out[:1, 0], out[:1, 1], "s", ms=11, color=c, alpha=0.8 * alpha, zorder=4)
    for name in [*mech.ancf, *mech.ffr]:
        line = (mech.ancf_line if name in mech.ancf else mech.ffr_line)(qk, name)[0]
        art += ax.plot(line[:, 0], line[:, 1], color=colors.get(name), lw=3, alpha=alpha, solid_capstyle="round")
    for name in [*mech.plates, *mech.continua]:
        nodes = mech.mesh_nodes(qk, name)[0]
        edge = np.vstack([nodes[0, :], nodes[1:, -1], nodes[-1, -2::-1], nodes[-2::-1, 0]])
        art += ax.plot(edge[:, 0], edge[:, 1], color=colors.get(name), lw=1.2, alpha=alpha)
        if not detail:
            continue
        quads = np.stack([nodes[:-1, :-1], nodes[:-1, 1:], nodes[1:, 1:], nodes[1:, :-1]], 2).reshape(-1, 4, 2)
        fine = len(quads) > 400                       # element edges would blacken the mesh
        pc = PolyCollection(quads, array=mech.mesh_density(name), cmap="gray_r", clim=(0.0, 1.0),
                            alpha=0.45 * alpha, edgecolors="none" if fine else [colors.get(name)],
                            linewidths=0.0 if fine else 0.3)
        art.append(ax.add_collection(pc))
    if not detail:
        return art
    for f in cfg.forces:
        if f.type == "spring":
            a, b = mech.point(qk, f.a), mech.point(qk, f.b)
            if a is not None and b is not None:
                z = zigzag(a[0], b[0])
                art += ax.plot(z[:, 0], z[:, 1], color="0.3", lw=0.9, alpha=alpha)
    for jt in cfg.joints:
        if jt.type in ("revolute", "prismatic", "weld"):
            xy = mech.point(qk, jt.a)
            if xy is not None:
                marker = {"revolute": "o", "prismatic": "s", "weld": "D"}[jt.type]
                art += ax.plot(xy[0, 0], xy[0, 1], marker, ms=5, mfc="white", mec="k", mew=1.0,
                               alpha=alpha, zorder=5)
    for name, xy in cfg.ground.points.items():
        art += ax.plot(xy[0], xy[1], "k^", ms=8, zorder=6)
    return art


def _spatial_panels(side, top, system, t, q, colors, legend_items):
    """Side (x–z) and top (x–y) views: each body as the outline of its points at the
    first and last instant, the centre-of-mass paths, the road profile (side view)."""
    from .mechanism import _hull
    from .spatial_view import body_points, road_profile
    pts = body_points(system, q)
    rows = (0, len(t) - 1)
    xs = []
    for name, P in pts.items():
        c = colors.get(name)
        legend_items[name] = c
        for ax, (i, j) in ((side, (0, 2)), (top, (0, 1))):
            ax.plot(P[:, 0, i], P[:, 0, j], color=c, lw=0.8, alpha=0.6)
            for k in rows:
                xy = P[k][:, [i, j]]
                h = _hull(xy)
                alpha = 1.0 if k == rows[-1] else 0.35
                if len(h) >= 3:
                    ax.fill(xy[h, 0], xy[h, 1], color=c, alpha=0.3 * alpha, lw=0)
                    ax.plot(*np.vstack([xy[h], xy[h[:1]]]).T, color=c, lw=1.2, alpha=alpha)
                else:
                    ax.plot(xy[:, 0], xy[:, 1], "o-", color=c, ms=6, alpha=alpha)
        xs.append(P[..., 0].ravel())
    from ..spatial.outputs import point_paths
    from matplotlib.patches import Circle
    paths = point_paths(system, q)
    for f in system.config.spatial.forces:          # tyres and contact spheres as circles
        ref = f"{f.wheel}.{f.centre}" if f.type == "tyre" else f.point if f.type == "contact" else None
        r = getattr(f, "radius", 0.0) if ref in paths else 0.0
        if r > 0.0:
            c = colors.get(ref.split(".")[0])
            for k in rows:
                alpha = 1.0 if k == rows[-1] else 0.35
                views = ((side, (0, 2)),) + (((top, (0, 1)),) if f.type == "contact" else ())
                for ax, (i, j) in views:
                    ax.add_patch(Circle((paths[ref][k, i], paths[ref][k, j]), r, fill=False, color=c, lw=1.5,
                                        alpha=alpha))
    road = system.config.spatial.road is not None or any(f.type in ("tyre", "contact")
                                                         for f in system.config.spatial.forces)
    if xs and road:
        x = np.concatenate(xs)
        lo, hi = float(x.min()), float(x.max())
        pad = 0.1 * (hi - lo) + 0.2
        xr = np.linspace(lo - pad, hi + pad, 400)
        z = road_profile(system.config, xr)
        side.fill_between(xr, z, z.min() - 0.05 * (hi - lo) - 0.05, color="0.85", lw=0)
        side.plot(xr, z, color="0.3", lw=1.2)
    for name, xyz in system.config.spatial.ground.points.items():
        side.plot(xyz[0], xyz[2], "k^", ms=7)
        top.plot(xyz[0], xyz[1], "k^", ms=7)
    for ax, ylab, title in ((side, "z [m]", "side view x–z" + (" (road: grey)" if road else "")),
                            (top, "y [m]", "top view x–y")):
        ax.set_aspect("equal", adjustable="datalim")
        ax.set_xlabel("x [m]")
        ax.set_ylabel(ylab)
        ax.set_title(f"{title}\nt = {t[0]:.3g} s (faint), {t[-1]:.3g} s (solid); thin: centre-of-mass paths",
                     fontsize=10)
        ax.grid(alpha=0.3)


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
    from .optimization_plot import plot_history
    from .density import write_record_density
    plot_history(hist, out_png, title, columns=cols)
    return [final_png or out_png, *write_record_density(h5_path)]
