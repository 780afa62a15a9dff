"""Five-bar ψ3 sensitivity history, direct and adjoint side by side: the figure of
López Varela et al. 2025 (Comput. Struct. 107642), Fig. 2 — each component of dψ3/dρ
over time, the direct one accumulated from t = 0 (its value at 5 s is the gradient),
the adjoint one from 5 s backwards (its value at 0 s, plus the initial-state term,
is the gradient).

    python benchmarks/sensitivity_history.py [--out DIR] [--set KEY=VALUE ...]

Runs ``parmbs gradient configs/fivebar.toml --method direct|adjoint --history -o``
(the shipped config: 5 s, dt = 1e-3, generalized-α ρ∞ = 0.9), draws ψ3 from both files
(parmbs/io/history_plot.py) into DIR/fivebar-psi3-history.png and prints the gradient
at the sweep ends beside the paper's Table 1.
"""
import argparse
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import parmbs  # noqa: E402,F401  (before numpy: parmbs/_determinism.py fixes numpy's SIMD choice)
import numpy as np  # noqa: E402

#: López Varela et al. 2025, Table 1, (ψ3)′ reference column (IFToMM library)
TABLE1 = {"Ls1": 221.64, "Ls2": 2436.6, "m_A1": -32.497, "xG_A1": -85.657, "L_A1": -2546.6}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/tmp/parmbs-history")
    ap.add_argument("--set", action="append", default=[])
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    from parmbs.io.history_plot import plot_histories
    from parmbs.sensitivity.history import read_history
    cfg = os.path.join(ROOT, "configs", "fivebar.toml")
    sets = [x for s in a.set for x in ("--set", s)]
    hist = {}
    for method in ("direct", "adjoint"):
        h5 = os.path.join(a.out, f"fivebar-{method}.h5")
        if os.path.exists(h5):
            os.remove(h5)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "parmbs", "-q", "gradient", cfg, "--method", method, "--history",
                        "-o", h5, *sets], check=True, env={**os.environ, "PYTHONPATH": ROOT}, stdout=subprocess.DEVNULL)
        print(f"{method}: gradient --history -o {h5}: {time.perf_counter() - t0:.1f} s wall")
        hist[method] = read_history(h5)
    png = os.path.join(a.out, "fivebar-psi3-history.png")
    plot_histories([(hist["direct"], "psi3"), (hist["adjoint"], "psi3")], png,
                   "five-bar: dψ3/dρ over time, direct (left) and adjoint (right)")
    print(f"wrote {png}")
    d, ad = hist["direct"], hist["adjoint"]
    o = d["objectives"].index("psi3")
    print(f"{'rho':<7} {'direct G(5 s)':>14} {'adjoint G(0)':>14} {'initial term':>13} {'adjoint total':>14} "
          f"{'Table 1':>9} {'rel. to Table 1':>15}")
    for j, name in enumerate(d["design"]):
        g_d, g_a0, it = d["gradient"][-1, o, j], ad["gradient"][0, o, j], ad["initial_term"][o, j]
        tot = ad["final"][o, j]
        print(f"{name:<7} {g_d:14.6f} {g_a0:14.6f} {it:13.6f} {tot:14.6f} {TABLE1[name]:9.5g} "
              f"{(tot - TABLE1[name]) / abs(TABLE1[name]):15.1e}")
    print(f"direct vs adjoint total, max relative: "
          f"{np.max(np.abs(d['final'][o] - ad['final'][o]) / np.abs(d['final'][o])):.1e}")


if __name__ == "__main__":
    main()
