"""The history and the density field of a topology-crank MMA record, as text for
benchmarks/README.md (issue 21 item 4): one markdown table row per iteration and an
ASCII picture of the physical densities.

    .venv/bin/python benchmarks/topopt_history.py RECORD.h5 --nx 500 --ny 200 [--every 5] [--iterate K]

RECORD.h5: ``parmbs optimize configs/topopt-crank.toml ...`` (complete or ``.partial``,
readable while the run writes it).  Per evaluated iterate k the table gives ψ_k = ∫U dt,
the constraint V(x̃_k) = mean of the physical densities x̃ = W ρ_k (the config's cone
filter, ``parmbs/flexible/density_filter.py``; the bound is V ≤ 0.5), the run's max
relative violation, the step max_j |ρ_k,j − ρ_k−1,j| / (upper − lower) — the quantity
``optimize.xtol`` is compared with, so ``step ≤ 0.01`` is the issue's "max density
change < 1e-2" (upper − lower = 0.99, so |Δρ| ≤ 0.0099) — the share of grey elements
(0.1 < x̃ < 0.9) and the cumulative wall time.  The picture: x̃ at iterate K (default
the last), averaged over blocks of elements to at most 100 × 24 characters, shades
" .:-=+*#%@" for x̃ in ten equal bins of [0, 1]; row 0 is the top edge (y = +0.03 m),
the hub (pivot) near the left end, the pin at 0.9 of the length.
"""
import argparse
import os
import sys
import tomllib

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import parmbs  # noqa: E402,F401  (before numpy: its SIMD pinning)
import h5py  # noqa: E402
import numpy as np  # noqa: E402
from parmbs.flexible.density_filter import ConeFilter  # noqa: E402

CONFIG = os.path.join(os.path.dirname(__file__), "..", "configs", "topopt-crank.toml")
SHADES = " .:-=+*#%@"


def record(path):
    """(ρ rows, history rows, history column names) of an optimize record."""
    os.environ.setdefault("HDF5_USE_FILE_LOCKING", "FALSE")       # a run may hold the .partial open
    with h5py.File(path, "r") as f:
        n = int(f["optimize"].attrs["evaluations"])
        h = f["optimize/history"]
        return f["optimize/x"][:n], h[:n], h.attrs["columns"].split(",")


def ascii_picture(xt, nx, ny, width=100, height=24):
    """x̃ (nx·ny, element e = j·nx + i, j = 0 the bottom row) as text, block-averaged."""
    X = xt.reshape(ny, nx)[::-1]                         # top row first
    bx, by = -(-nx // width), -(-ny // height)
    X = X[:ny - ny % by or ny, :nx - nx % bx or nx]
    B = X.reshape(X.shape[0] // by, by, X.shape[1] // bx, bx).mean(axis=(1, 3))
    idx = np.minimum((B * len(SHADES)).astype(int), len(SHADES) - 1)
    return "\n".join("".join(SHADES[i] for i in row) for row in idx)


def asymptote_report(path, every, lower=0.01, upper=1.0, clip=10.0):
    """How wide MMA's asymptotes were along a run (issue 21 item 4's non-convergence).

    The asymptotes are a function of the iterates alone (``mma.asymptotes``: ×asyincr
    where the last two steps had the same sign, ×asydecr where they alternated, clipped
    to [asymin, asymax]·(upper − lower) around x), so they are replayed from the
    recorded x_0, x_1, … with Svanberg's defaults (the runs before ``optimize.asymax``).
    Printed per update k: the median half-width max(x − l, u − x)/(upper − lower) and
    the share at the 10× clip; then, from the record's stored state after the last
    update, the widths of the densities that moved by more than 0.01 in it."""
    from parmbs.optimize.mma import asymptotes
    rho, _, _ = record(path)
    n = rho.shape[1]
    xmin, xmax = np.full(n, lower), np.full(n, upper)
    low, upp, rng = xmin.copy(), xmax.copy(), upper - lower
    print("| update | median half-width / range | share at the 10× clip |\n|---|---|---|")
    for it in range(1, len(rho)):
        x, x1, x2 = rho[it - 1], rho[max(it - 2, 0)], rho[max(it - 3, 0)]
        low, upp = asymptotes(it, x, x1, x2, low, upp, xmin, xmax)
        w = np.maximum(x - low, upp - x) / rng
        if it % every == 0 or it == len(rho) - 1:
            print(f"| {it} | {np.median(w):.2f} | {np.mean(w >= 0.99 * clip):.0%} |")
    with h5py.File(path, "r") as f:
        g = f["optimize/mma"]
        x, x1, _, low, upp = g[f"state{int(g.attrs['current'])}"][:]
    w = np.maximum(x1 - low, upp - x1) / rng
    mv = np.abs(x - x1) > 0.01
    print(f"\nstored state: {np.mean(w >= 5):.0%} of the densities with half-width ≥ 5; {mv.sum()} moved "
          f"by > 0.01 in the last update, their half-widths {w[mv].min():.2f} … {w[mv].max():.2f} "
          f"(median {np.median(w[mv]):.2f}); the others' median {np.median(w[~mv]):.3f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("record")
    ap.add_argument("--nx", type=int, default=500)
    ap.add_argument("--ny", type=int, default=200)
    ap.add_argument("--every", type=int, default=1, help="table rows: every N-th iterate (and the last)")
    ap.add_argument("--iterate", type=int, default=-1)
    ap.add_argument("--asymptotes", action="store_true",
                    help="instead: MMA's asymptote half-widths replayed from the iterates (see asymptote_report)")
    a = ap.parse_args()
    if a.asymptotes:
        return asymptote_report(a.record, a.every)
    with open(CONFIG, "rb") as f:
        data = tomllib.load(f)
    (lx, ly), r = data["continua"][0]["size"], data["optimize"]["filter_radius"]
    filt = ConeFilter(a.nx, a.ny, lx / a.nx, ly / a.ny, r)
    rho, hist, cols = record(a.record)
    c = {k: cols.index(k) for k in ("iteration", "objective", "max_violation", "step", "wall_s")}
    xt = filt.apply(rho)
    print("| k | ψ = ∫U dt | V(x̃) | violation | max\\|Δρ\\|/(u−l) | grey | wall s |")
    print("|---|---|---|---|---|---|---|")
    for k in range(len(rho)):
        if k % a.every and k != len(rho) - 1:
            continue
        h = hist[k]
        grey = np.mean((xt[k] > 0.1) & (xt[k] < 0.9))
        print(f"| {int(h[c['iteration']])} | {h[c['objective']]:.6e} | {xt[k].mean():.5f} | "
              f"{h[c['max_violation']]:.1e} | {h[c['step']]:.3g} | {grey:.1%} | {h[c['wall_s']]:.0f} |")
    k = a.iterate if a.iterate >= 0 else len(rho) - 1
    x = xt[k]
    print(f"\nx̃ at iterate {k}: mean {x.mean():.5f}, solid (> 0.9) {np.mean(x > 0.9):.1%}, "
          f"void (< 0.1) {np.mean(x < 0.1):.1%}, grey {np.mean((x > 0.1) & (x < 0.9)):.1%}\n")
    print(ascii_picture(x, a.nx, a.ny))


if __name__ == "__main__":
    main()
