"""PNG of sensitivity histories (``gradient --history --plot OUT.png``;
sensitivity/history.py): one panel per (design variable, column), a column being one
objective of one history — the layout of López Varela et al. Fig. 2 (rows: gradient
components; columns: direct, adjoint).

Each panel draws the accumulated gradient G(t) of one component; the final gradient
∇ψ is marked where the sweep ends (★): at t_N for the direct method, at t₀ for the
adjoint, where a dotted line joins G(t₀) to ∇ψ = G(t₀) + the initial-state term.
"""
from __future__ import annotations

import numpy as np

#: at most this many design variables (rows) and columns are drawn
MAX_ROWS, MAX_COLUMNS = 8, 4


def plot_histories(columns, out_png, title=None, time_unit="s"):
    """``columns``: [(history dict (read_history), objective name)], left to right.
    Writes ``out_png``; returns the design names drawn (rows)."""
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    columns = columns[:MAX_COLUMNS]
    design = columns[0][0]["design"][:MAX_ROWS]
    nr, nc = len(design), len(columns)
    fig, axes = plt.subplots(nr, nc, figsize=(4.2 * nc + 0.6, 1.9 * nr + 1.0), squeeze=False, sharex="col")
    for c, (h, obj) in enumerate(columns):
        o = h["objectives"].index(obj)
        t = h["t"]
        adj = h["method"] == "adjoint"
        for r, name in enumerate(design):
            ax = axes[r, c]
            j = h["design"].index(name)
            g = h["gradient"][:, o, j]
            ax.plot(t, g, color="C0" if not adj else "C3", lw=1.3)
            fin = float(h["final"][o, j])
            tf = t[0] if adj else t[-1]
            if adj and fin != g[0]:
                ax.plot([tf, tf], [g[0], fin], ":", color="0.3", lw=1.0)
            ax.plot([tf], [fin], "*", ms=10, color="k", zorder=5)
            ax.axhline(0.0, color="0.8", lw=0.8, zorder=0)
            ax.grid(alpha=0.3)
            ax.tick_params(labelsize=8)
            if c == 0:
                ax.set_ylabel(f"d{obj}/d{name}" if nc == 1 else name, fontsize=9)
            ax.text(0.98 if adj else 0.02, 0.92, f"∇ψ = {fin:.5g}", transform=ax.transAxes, fontsize=8, va="top",
                    ha="right" if adj else "left")       # away from the ★
            if r == 0:
                how = "accumulated t₀ → t" if not adj else "accumulated t_end → t (★ at t₀: + initial-state term)"
                ax.set_title(f"{h['method']}: d{obj}/dρ\n{how}", fontsize=9)
            if r == nr - 1:
                ax.set_xlabel(f"t [{time_unit}]")
    more = len(columns[0][0]["design"]) - nr
    fig.suptitle((title or "sensitivity history") + (f"  ({more} more design variables not drawn)" if more > 0
                                                      else ""), fontsize=11)
    fig.tight_layout()
    fig.savefig(out_png, dpi=110)
    plt.close(fig)
    return design


def history_dict(hist):
    """A recorder (sensitivity/history.History) as the dict ``read_history`` returns."""
    return {**hist.arrays(), **hist.names(), "method": hist.method, "stride": hist.stride}
