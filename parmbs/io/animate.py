"""``parmbs animate RUN.h5 -o run.gif|mp4``: the mechanism moving (matplotlib.animation).

Reads a trajectory file (``simulate -o``; io/hdf5.read_trajectory), rebuilds the model
geometry from the stored config and the named coordinates (mechanism.py: no model is
assembled, nothing is simulated), and draws every frame with the plot's own
``draw_state`` — so the picture of a frame is the plot's last snapshot at that time.
Planar models only (spatial models: ``parmbs plot`` draws their side and top views).

Frames: at most ``max_frames`` states, evenly spaced in step number; ``fps`` frames per
second of video.  Writers: Pillow for .gif (always there with matplotlib), ffmpeg for
.mp4 (Debian's ``ffmpeg`` package; absent: the command says so, exit 2).
"""
from __future__ import annotations

import os

import numpy as np

WRITERS = {".gif": "pillow", ".mp4": "ffmpeg"}


class AnimateError(Exception):
    """Bad request (unknown format, writer missing, spatial model): ``option``, ``message``."""

    def __init__(self, option, message):
        self.option, self.message = option, message
        super().__init__(f"{option}: {message}")


def writer_for(path):
    """The matplotlib writer name for ``path``'s extension, or AnimateError."""
    import matplotlib.animation as anim
    ext = os.path.splitext(os.fspath(path))[1].lower()
    if ext not in WRITERS:
        raise AnimateError("-o", f"{path}: unknown video format {ext or '(none)'!r} (use .gif or .mp4)")
    if not anim.writers.is_available(WRITERS[ext]):
        raise AnimateError("-o", f"{path}: the {WRITERS[ext]} writer is not installed "
                           + ("(apt-get install ffmpeg), or write a .gif" if ext == ".mp4" else ""))
    return WRITERS[ext]


def frame_rows(steps, max_frames):
    """Rows 0..steps, at most ``max_frames`` of them, evenly spaced, first and last kept."""
    n = min(steps + 1, max(2, int(max_frames)))
    return np.unique(np.round(np.linspace(0, steps, n)).astype(int))


def animate_file(h5_path, out_path, max_frames=120, fps=20, tmp_path=None):
    """Write the animation of the trajectory in ``h5_path`` to ``tmp_path`` (default
    ``out_path``; the caller renames a working name); returns the number of frames."""
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.animation as anim
    import matplotlib.pyplot as plt
    from .hdf5 import read_trajectory
    from .mechanism import Mechanism
    from .plot import _body_colors_of, draw_paths, draw_state, units
    from .stored_config import config_from_text
    writer = writer_for(out_path)
    data = read_trajectory(h5_path)
    cfg = config_from_text(data.config_text, os.path.basename(os.fspath(h5_path)) + ".config.toml")
    if cfg.spatial is not None and not (cfg.bodies or cfg.beams or cfg.plates or cfg.continua):
        raise AnimateError("FILE", f"{h5_path}: a spatial model; animate draws planar models "
                           "(parmbs plot draws its side and top views)")
    mech = Mechanism(cfg, data.coordinates)
    colors = _body_colors_of(cfg)
    rows = frame_rows(data.steps, max_frames)
    u = units(cfg)
    fig, ax = plt.subplots(figsize=(7, 6))
    draw_paths(ax, mech, data.q, colors)          # fixes the view: the whole motion fits
    draw_state(ax, mech, data.q[:1], colors, alpha=0.25, detail=False)
    ax.autoscale_view()
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel(f"x [{u['length']}]")
    ax.set_ylabel(f"y [{u['length']}]")
    ax.grid(alpha=0.3)
    ax.set_autoscale_on(False)
    title = ax.set_title("")
    live = []

    def frame(k):
        for a in live:
            a.remove()
        live[:] = draw_state(ax, mech, data.q[k:k + 1], colors)
        title.set_text(f"{cfg.model.name}: t = {data.t[k]:.4g} {u['time']} (step {k} of {data.steps})")
        return live + [title]
    movie = anim.FuncAnimation(fig, frame, frames=list(rows), blit=False)
    try:
        movie.save(tmp_path or out_path, writer=writer, fps=fps, dpi=90)
    finally:
        plt.close(fig)
    return len(rows)
