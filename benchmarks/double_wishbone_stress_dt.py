"""Where the double wishbone's stress-constraint gradients lose their dt-convergence:
the chord stress σ_e = E(|r_j − r_i|/l − 1) of its tubes over forward runs at several Δt.

    PYTHONPATH=$PWD python benchmarks/double_wishbone_stress_dt.py [T] [DT,DT,...] [--set k=v ...]

(default T = 0.1 s, Δt = 1e-3, 5e-4, 2.5e-4, 1.25e-4; configs/double-wishbone-opt.toml.)
Prints, per Δt and for tubes 1 (front) and 5, 7, 8 (rear):

* the time mean of σ at the node states minus the mean of σ at the two adjacent interval
  midpoints ½(q_{n−1} + q_n), ½(q_n + q_{n+1}) (where the variational scheme balances
  the tube force): the midpoint rule's rotation bias E(ωh)²/8, ∝ Δt²;
* the same for the ``stress_point = "midpoint"`` stress (spatial_beam_objectives.
  midpoint_axial_stress) read at the node states;
* the rms of tube 5's node stress after 20 ms about a quadratic trend, and the three
  largest peaks of its spectrum: a ringing mode that the damping leaves undamped shows
  as an rms that does not fall with Δt.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import parmbs                                       # noqa: E402,F401  (before numpy: one SIMD choice, DESIGN)
import numpy as np                                  # noqa: E402
from parmbs.config.loader import load_config      # noqa: E402
from parmbs.flexible.ancf3d import axial_stress   # noqa: E402
from parmbs.flexible.spatial_beam_objectives import midpoint_axial_stress   # noqa: E402
from parmbs.sensitivity.problem import Problem     # noqa: E402

CONFIG = os.path.join(os.path.dirname(__file__), "..", "configs", "double-wishbone-opt.toml")
TUBES = (1, 5, 7, 8)


def stresses(T, dt, sets):
    """t, node σ (16, N+1), midpoint-stress σ (16, N+1), σ at the interval midpoints (16, N)."""
    cfg = load_config(CONFIG, list(sets) + [f"simulation.t_end={T}", f"simulation.dt={dt!r}",
                                            "simulation.progress=false"])
    pr = Problem(cfg)
    pr.forward()
    tr, p = pr.traj, pr.sys.p
    node, mid, half = [], [], []
    for j in range(1, 17):
        b = pr.sys.spatial_beams.beams[f"b{j}"]
        idx, pm = np.array(b.element(0)), p[b.material()]
        q, v = tr.q[:, idx], tr.v[:, idx]
        node.append(axial_stress(q, pm))
        mid.append(midpoint_axial_stress(q, v, pm, dt))
        half.append(axial_stress(0.5 * (q[1:] + q[:-1]), pm))
    return tr.t, np.array(node), np.array(mid), np.array(half)


def ringing(t, s, dt):
    m = t > 0.02
    y = s[m] - np.polyval(np.polyfit(t[m], s[m], 2), t[m])
    F = np.abs(np.fft.rfft(y * np.hanning(len(y))))
    f = np.fft.rfftfreq(len(y), dt)
    return y.std(), [f[i] for i in np.argsort(F)[::-1][:3]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("T", nargs="?", type=float, default=0.1)
    ap.add_argument("dts", nargs="?", default="1e-3,5e-4,2.5e-4,1.25e-4")
    ap.add_argument("--set", action="append", default=[])
    a = ap.parse_args()
    for dt in (float(x) for x in a.dts.split(",")):
        c0 = time.process_time()
        t, node, mid, half = stresses(a.T, dt, a.set)
        mean = 0.5 * (half[:, 1:] + half[:, :-1])
        bias = [np.mean(node[j - 1, 1:-1] - mean[j - 1]) for j in TUBES]
        left = [np.mean(mid[j - 1, 1:-1] - mean[j - 1]) for j in TUBES]
        rms, peaks = ringing(t, node[4], dt)
        print(f"dt {dt:.4g}: node − midpoint mean [Pa] tubes {TUBES}: " + " ".join(f"{x:+.2e}" for x in bias)
              + " | midpoint stress − mean: " + " ".join(f"{x:+.2e}" for x in left)
              + f" | tube 5 ringing rms {rms:.2e} Pa at " + ", ".join(f"{f:.0f}" for f in peaks)
              + f" Hz | {time.process_time() - c0:.1f} s CPU", flush=True)


if __name__ == "__main__":
    main()
