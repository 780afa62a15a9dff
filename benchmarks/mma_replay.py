"""Re-solve the last MMA update of a topology-crank record with other constants (issue 21
item 4: why the 10⁵ run's step stayed at 0.021).

    .venv/bin/python benchmarks/mma_replay.py RECORD.h5 --nx 500 --ny 200 [--move 0.2] \
        [--variant RAA0,EPSIMIN ...]

The record's MMA state (``/optimize/mma``, log.py) holds x_{k+1} and, for the update
that produced it, xold1 = x_k, the asymptotes (low, upp) it used; ``/optimize/g`` row k
holds ∇ψ at x_k and ``/optimize/f`` row 0 the objective scale |ψ⁰|.  The script rebuilds
that update's subproblem (ψ/|ψ⁰| and the volume row (V(Wρ) − 0.5)/0.5 with its filtered
gradient, as driver.py/constraints.py) and solves it through ``mma.subproblem``: first
with Svanberg's raa0 = 1e-5, epsimin = 1e-7 — it must reproduce the stored x_{k+1}
(printed: the largest difference) — then with each ``--variant``.  Per solve: the step
max|Δρ|/(upper − lower), λ, how many densities reach their lower bound (ρ < 0.0101), the
physical volume after the step.  Also the Lagrangian gradient of the densities within 0.04
of the lower bound against epsimin/|∂L/∂ρ| (the barrier's offset from the bound).
Serial, the full n in memory (10⁵: ~3 s per solve).
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import parmbs  # noqa: E402,F401  (before numpy: its SIMD pinning)
import h5py  # noqa: E402
import numpy as np  # noqa: E402
from parmbs.flexible.density_filter import ConeFilter  # noqa: E402
from parmbs.optimize.mma import subproblem  # noqa: E402


class _Serial:
    """mma's reductions on one process (what ``_Reduce`` does for a size-1 communicator)."""

    @staticmethod
    def sum(a):
        return np.atleast_1d(np.asarray(a, float))

    max = sum

    @staticmethod
    def sum_max(s, m):
        return np.atleast_1d(np.asarray(s, float)), np.atleast_1d(np.asarray(m, float))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("record")
    ap.add_argument("--nx", type=int, default=500)
    ap.add_argument("--ny", type=int, default=200)
    ap.add_argument("--size", default="0.25,0.06", help="the crank's size [m] (the config's)")
    ap.add_argument("--radius", type=float, default=0.005, help="filter radius [m] (optimize.filter_radius)")
    ap.add_argument("--move", type=float, default=0.2)
    ap.add_argument("--volume", type=float, default=0.5)
    ap.add_argument("--variant", action="append", default=[], help="RAA0,EPSIMIN (repeatable)")
    a = ap.parse_args()
    os.environ.setdefault("HDF5_USE_FILE_LOCKING", "FALSE")
    with h5py.File(a.record, "r") as f:
        g = f["optimize/mma"]
        cur = int(g.attrs["current"])
        xnext, x, _, low, upp = g[f"state{cur}"][:]
        it, fscale = int(g[f"meta{cur}"][0]), float(g[f"meta{cur}"][1])
        k = it - 1                                   # the update k -> k+1 the state holds
        if not np.array_equal(f["optimize/x"][k], x):
            sys.exit(f"{a.record}: /optimize/x[{k}] is not the state's xold1")
        grad = f["optimize/g"][k] / fscale
        print(f"{a.record}: update {k} -> {it}, n = {len(x)}, objective scale {fscale:.6e}; "
              f"sets {json.loads(f['optimize'].attrs.get('sets', '[]'))}")
    lx, ly = (float(v) for v in a.size.split(","))
    W = ConeFilter(a.nx, a.ny, lx / a.nx, ly / a.ny, a.radius)
    n = len(x)
    xmin, xmax = np.full(n, 0.01), np.ones(n)
    fval = np.array([(W.apply(x).mean() - a.volume) / a.volume])
    dfdx = (W.transpose(np.full(n, 1.0 / n)) / a.volume)[None, :]
    near = x < xmin + 0.04

    def solve(raa0, epsimin):
        t = time.perf_counter()
        xn, lam = subproblem(_Serial(), x, xmin, xmax, grad, fval, dfdx, low, upp, 1.0, np.zeros(1),
                             np.full(1, 1000.0), np.ones(1), move=a.move, raa0=raa0, epsimin=epsimin)
        step = np.max(np.abs(xn - x) / (xmax - xmin))
        print(f"  raa0 {raa0:7.1e}  epsimin {epsimin:7.1e}: step {step:.4f}  lambda {lam[0]:.6f}  "
              f"at the lower bound {int(np.sum(xn < 0.0101)):6d}  V(x~) after {W.apply(xn).mean():.6f}  "
              f"({time.perf_counter() - t:.1f} s)")
        return xn, lam
    xn, lam = solve(1e-5, 1e-7)
    print(f"  (Svanberg's constants: max |x_new - stored x_{it}| = {np.max(np.abs(xn - xnext)):.2e})")
    gl = grad + lam[0] * dfdx[0]
    pos = near & (gl > 0)
    if pos.any():
        print(f"  {int(near.sum())} densities within 0.04 of the lower bound: median dL/drho {np.median(gl[pos]):.2e}, "
              f"median rho - 0.01 = {np.median(x[pos] - 0.01):.4f}, median 1e-7/(dL/drho) = "
              f"{np.median(1e-7 / gl[pos]):.4f}")
        print(f"  median |dpsi/drho|/|psi0| = {np.median(np.abs(grad)):.2e}, |dV/drho| row = {np.median(dfdx):.2e}")
    for v in a.variant:
        r, e = (float(t) for t in v.split(","))
        solve(r, e)


if __name__ == "__main__":
    main()
