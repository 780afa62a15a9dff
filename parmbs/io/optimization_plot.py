"""PNG of an optimization history (``optimize --plot``, ``plot RECORD.h5``): here in io/
so that plotting a record does not import the optimizer (io/plot.py)."""
from __future__ import annotations

import numpy as np


def plot_history(history, png, title="", columns=()):
    """The history to a PNG: |ψ| per iteration, and |∇ψ| (TAO) or the max constraint
    violation and the step max|Δρ|/(upper − lower) (MMA, ``columns`` =
    optimize/driver.MMA_HIST_COLS, which name a ``max_violation`` column; TAO's
    optimize/log.HIST_COLS, the default layout, do not)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    h = np.asarray(history)
    cols = list(columns)
    fig, ax = plt.subplots(1, 2, figsize=(9, 3.5))
    it = h[:, 0] if len(h) else []
    if len(h):
        ax[0].semilogy(it, np.abs(h[:, 1]) + 1e-300, "o-")
    ax[0].set(xlabel="iteration", ylabel="|ψ|", title=title)
    if "max_violation" in cols:
        if len(h):
            v, st = h[:, cols.index("max_violation")], h[:, cols.index("step")]
            ax[1].semilogy(it, np.maximum(v, 1e-12), "o-", label="max constraint violation (relative, floor 1e-12)")
            ax[1].semilogy(it[1:], np.maximum(st[1:], 1e-12), "s--", label="step max|Δρ|/(upper−lower)")
            ax[1].legend(fontsize=8)
        ax[1].set(xlabel="iteration", ylabel="violation, step")
    else:
        if len(h):
            ax[1].semilogy(it, h[:, 2] + 1e-300, "o-")
        ax[1].set(xlabel="iteration", ylabel="|∇ψ| (scaled)")
    for a in ax:
        a.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)
