"""What MMA's steps did, read from a `parmbs optimize` record (method = "mma").

    python benchmarks/mma_steps.py RECORD CONFIG [--asymax A] [--move M]

Per update k → k+1 of the record's accepted iterates: ψ_k → ψ_{k+1} beside the linear
prediction ψ_k + ∇ψ_k·Δρ (how far the step left the region where the gradient
describes ψ), how many variables stepped to the move limit, how many reversed their
last step (sign flips), the cosine of consecutive steps in range-scaled variables
(Δρ_j/(upper_j − lower_j); negative: a zigzag), and the asymptote half-width of
Svanberg's rule replayed on the iterates (``parmbs.optimize.mma.asymptotes``; MMA's step
is bounded by 0.9 × that width, so while 0.9 × width > move the asymptotes do not
shorten any step).  Written for the double wishbone's 3 s run (benchmarks/README.md).
"""
import argparse
import tomllib

import parmbs  # noqa: F401  (numpy's SIMD choice before numpy is imported)
import h5py
import numpy as np

from parmbs.optimize.mma import asymptotes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("record")
    ap.add_argument("config")
    ap.add_argument("--asymax", type=float, default=10.0)
    ap.add_argument("--move", type=float, default=None, help="default: the config's optimize.move")
    a = ap.parse_args()
    with open(a.config, "rb") as f:
        cfg = tomllib.load(f)
    lo = np.array([d["lower"] for d in cfg["design"]], float)
    hi = np.array([d["upper"] for d in cfg["design"]], float)
    rng = hi - lo
    move = a.move if a.move is not None else cfg.get("optimize", {}).get("move", 0.5)
    with h5py.File(a.record, "r") as f:
        n = int(f["optimize"].attrs["evaluations"])
        X, F, G = f["optimize/x"][:n], f["optimize/f"][:n], f["optimize/g"][:n]
    low, upp = lo.copy(), hi.copy()
    D = np.diff(X, axis=0) / rng
    print("update  psi_k          psi_k+1        linear pred.   at move  flips  cos(prev)  asym. half-width min/median")
    for k in range(n - 1):
        x1 = X[k - 1] if k >= 1 else X[0]
        x2 = X[k - 2] if k >= 2 else x1
        low, upp = asymptotes(k + 1, X[k], x1, x2, low, upp, lo, hi, asymax=a.asymax)
        w = np.minimum(X[k] - low, upp - X[k]) / rng
        lin = F[k] + G[k] @ (X[k + 1] - X[k])
        at_move = int(np.sum(np.abs(D[k]) > 0.98 * move))
        flips = int(np.sum(D[k] * D[k - 1] < 0)) if k >= 1 else 0
        cos = (D[k] @ D[k - 1] / np.linalg.norm(D[k]) / np.linalg.norm(D[k - 1])) if k >= 1 else np.nan
        print(f"{k:2d}->{k + 1:<2d}  {F[k]:.6e}  {F[k + 1]:.6e}  {lin: .6e}  {at_move:5d}  {flips:5d}  {cos:+9.2f}"
              f"  {w.min():.3f} / {np.median(w):.3f}")


if __name__ == "__main__":
    main()
