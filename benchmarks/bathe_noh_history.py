"""State sensitivities of the Bathe–Noh model over time, Newmark vs generalized-α — the
shape of Bastos et al.'s Figs. 4–6 (the seed digest 001: "Newmark sensitivities grow
with time, generalized-α damps them"): dq₂/dρ, dq̇₂/dρ, dq̈₂/dρ for ρ = (k1, k2, m2, m3)
from ``parmbs gradient --method direct --history`` (``/sensitivity/history``).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/bathe_noh_history.py [--png /tmp/bathe-noh-history.png]
"""
import parmbs  # noqa: F401

import argparse
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = os.path.join(HERE, "..", "configs", "bathe-noh.toml")
RUNS = {"Newmark (trapezoidal)": ['simulation.integrator="newmark"'],
        "generalized-α, ρ∞ 0.55": ['simulation.integrator="genalpha"']}


def history(overrides, out):
    cmd = [sys.executable, "-m", "parmbs", "gradient", CONFIG, "--method", "direct", "--history", "-q", "-o", out]
    for o in overrides:
        cmd += ["--set", o]
    subprocess.run(cmd, check=True, env=dict(os.environ, PYTHONPATH=os.path.join(HERE, "..")))
    with h5py.File(out) as f:
        h = f["sensitivity/history"]
        names = [x.decode() if isinstance(x, bytes) else str(x) for x in h["coordinates"][()]]
        design = [x.decode() if isinstance(x, bytes) else str(x) for x in h["design"][()]]
        return dict(t=h["t"][()], dq=h["dq"][()], dv=h["dv"][()], da=h["da"][()], names=names, design=design)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--png", default="/tmp/bathe-noh-history.png")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        hs = {k: history(v, os.path.join(d, f"run{i}.h5")) for i, (k, v) in enumerate(RUNS.items())}
    h0 = next(iter(hs.values()))
    j = next(i for i, n in enumerate(h0["names"]) if n.endswith("q2") or n.startswith("m2.") and n.endswith(".x"))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    nd = len(h0["design"])
    fig, axs = plt.subplots(3, nd, figsize=(3.2 * nd, 7.5), sharex=True)
    for r, (key, lab) in enumerate((("dq", "dq₂/dρ"), ("dv", "dq̇₂/dρ"), ("da", "dq̈₂/dρ"))):
        for c in range(nd):
            ax = axs[r, c]
            for name, h in hs.items():
                ax.plot(h["t"], h[key][:, j, c], label=name)
            ax.set_title(f"{lab}, ρ = {h0['design'][c]}", fontsize=9)
            ax.grid(alpha=0.3)
            if r == 2:
                ax.set_xlabel("t")
    axs[0, 0].legend(fontsize=8)
    fig.suptitle(f"Bathe–Noh: sensitivities of {h0['names'][j]} (direct, every step)")
    fig.tight_layout()
    fig.savefig(a.png, dpi=100)
    for name, h in hs.items():
        late = np.abs(h["da"][len(h["t"]) // 2:, j, :]).max(axis=0)
        print(f"{name:<26} max |dq̈₂/dρ| over t ≥ {h['t'][len(h['t']) // 2]:.3g}: "
              + ", ".join(f"{d} {v:.3g}" for d, v in zip(h["design"], late)))
    print(f"wrote {a.png}")


if __name__ == "__main__":
    main()
