"""Seed 002 eq. 17 (least-squares R^Φ) against dropping the redundant rows, under matrix-r.

Model: configs/parallelogram.toml (a parallelogram with a redundant third crank: 12 rows
of rank 11; the cut rows KC2, KC3 of the relative-coordinate tree are 4 of rank 3, and
KC3[1] is the row model/redundancy.py drops).  For each matrix-r stepper — dependent
relative coordinates, independent relative coordinates (automatic B), and the natural
coordinate K.P.x as DOF (B = h_z) — runs ``simulation.matrix_r.redundant`` =
"least-squares" and "drop" over the config's horizon and prints: CPU seconds of the
forward and adjoint runs (time.process_time of this process), max |Δq|, |Δv|, |Δa|
relative, |Δλ| relative and |Δ∇ψ| relative between the two, the largest |Φ| of the
dropped row along each run, and adjoint = direct for the least-squares run.
(‖·‖ the max norm over the run.)
Usage: python benchmarks/matrix_r_redundant.py [--t-end 2.0] [--dt 1e-3]
"""
import argparse
import pathlib
import time

import parmbs  # noqa: F401  (before numpy: parmbs/_determinism.py pins numpy's CPU features for same-bytes results)
import numpy as np

from parmbs.config import load_config
from parmbs.model.evaluation import StateEval
from parmbs.sensitivity.problem import Problem

CONFIG = pathlib.Path(__file__).resolve().parent.parent / "configs" / "parallelogram.toml"
STEPPERS = {"dependent": [], "independent": ["simulation.matrix_r.coordinates=independent"],
            "natural K.P.x": ["simulation.matrix_r.coordinates=independent",
                              'simulation.matrix_r.independent=["K.P.x"]']}


def dropped_row_drift(pr, tr):
    """max_k |Φ| of the cut rows dropped at set-up, evaluated on the full cut view."""
    from parmbs.formulations.relative import CutView
    st, p = pr.stepper, pr.sys.p
    view = CutView(pr.sys, st.tree, full=True)
    z = np.zeros(pr.sys.n)
    out = 0.0
    for k, t in enumerate(tr.t):
        phi = StateEval(view, t, tr.q[k], z, z, np.zeros(view.m), p).phi()
        out = max(out, np.max(np.abs(phi[view.m - view.dropped:])))
    return out


def rel(a, b):
    return np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--t-end", type=float, default=2.0)
    ap.add_argument("--dt", type=float, default=1e-3)
    a = ap.parse_args()
    base = ["simulation.formulation=matrix-r", "simulation.integrator=trapezoidal",
            f"simulation.t_end={a.t_end}", f"simulation.dt={a.dt}"]
    print(f"parallelogram, {a.t_end} s at dt = {a.dt}")
    print("| stepper | redundant | forward CPU | adjoint CPU | max ‖Φ‖ dropped row | adjoint = direct |")
    print("|---|---|---|---|---|---|")
    for name, ov in STEPPERS.items():
        runs = {}
        for mode in ("least-squares", "drop"):
            pr = Problem(load_config(str(CONFIG), base + ov + [f"simulation.matrix_r.redundant={mode}"]))
            t0 = time.process_time()
            tr = pr.forward()
            t1 = time.process_time()
            adj = pr.adjoint()
            t2 = time.process_time()
            dirn = pr.direct() if mode == "least-squares" else adj
            ad = max(rel(dirn[k], adj[k]) for k in adj)
            print(f"| {name} | {mode} | {t1 - t0:.2f} s | {t2 - t1:.2f} s | {dropped_row_drift(pr, tr):.1e} | "
                  f"{ad:.1e} |")
            runs[mode] = (tr, adj)
        (ta, ga), (tb, gb) = runs["least-squares"], runs["drop"]
        print(f"|   | LS − drop | ‖Δq‖ {np.max(np.abs(ta.q - tb.q)):.1e} | ‖Δv‖/‖v‖ {rel(ta.v, tb.v):.1e} | "
              f"‖Δa‖/‖a‖ {rel(ta.a, tb.a):.1e}, ‖Δλ‖/‖λ‖ {rel(ta.lam, tb.lam):.1e} | "
              f"‖Δ∇ψ‖/‖∇ψ‖ {max(rel(ga[k], gb[k]) for k in ga):.1e} |")


if __name__ == "__main__":
    main()
