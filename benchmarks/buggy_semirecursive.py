"""Semi-recursive Matrix R in 3-D against the global (Cartesian, Euler-parameter) index-3
formulation on the buggy — the cost comparison of seed 002 Figs. 4–5.

    python benchmarks/buggy_semirecursive.py                  # both manoeuvre windows
    python benchmarks/buggy_semirecursive.py --only step-descent --fd

For each manoeuvre window of benchmarks/buggy.py (step descent: 1.0 s at h = 1 ms;
lane change: the first steering pulse, 4.0 s at h = 5 ms) and each formulation

* ``semi-recursive``: formulation = "matrix-r" (spatial/relative_tree.py: 16 relative
  coordinates, the two steering drivers as cut rows), trapezoidal rule;
* ``global trapezoidal``: index-3 on the 77 Cartesian coordinates, trapezoidal rule with
  GGL (the same scheme order as matrix-r);
* ``global genalpha``: the shipped configuration (index-3, generalized-α);

CPU seconds of this process (``time.process_time``) of one forward run, one adjoint and
one direct gradient (5 design variables, seed 002 eq. 77), ψ and ∇ψ, and the relative
differences of ψ, ∇ψ between the semi-recursive and the global trapezoidal solutions
(both second order: they differ by O(h²)).  ``--fd``: central differences (relative
step 1e-5) on the semi-recursive gradient as well.  The semi-recursive saving is
1 − CPU(semi-recursive) / CPU(global) per column.
"""
import argparse
import pathlib

from parmbs.config import load_config          # parmbs before numpy (its SIMD setting, parmbs/__init__.py)
from parmbs.sensitivity.problem import Problem
from vehicle_ratios import cpu

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
WINDOWS = {
    "step-descent": ["spatial.road.x0=0.4", "simulation.t_end=1.0"],
    "lane-change": ["simulation.t_end=4.0", "spatial.joints.steer_fl.function.starts=[0.5, 20.0]",
                    "spatial.joints.steer_fr.function.starts=[0.5, 20.0]"],
}
VARIANTS = {
    "semi-recursive": ["simulation.formulation=matrix-r", "simulation.integrator=trapezoidal",
                       "simulation.stabilization=none"],
    "global trapezoidal": ["simulation.integrator=trapezoidal", "simulation.stabilization=ggl"],
    "global genalpha": [],
}


def run(name, variant, fd):
    cfg = load_config(str(ROOT / "configs" / f"buggy-{name}.toml"),
                      WINDOWS[name] + VARIANTS[variant] + ["simulation.progress=false"])
    pr = Problem(cfg)
    traj, t_fwd = cpu(pr.forward)
    psi = pr.objective_values(traj)
    adj, t_adj = cpu(pr.adjoint)
    dirc, t_dir = cpu(pr.direct)
    (k, val), = psi.items()
    row = dict(psi=val, grad=adj[k], fwd=t_fwd, adj=t_adj, dir=t_dir,
               adj_dir=np.max(np.abs(adj[k] - dirc[k])) / np.max(np.abs(adj[k])),
               steps=len(traj.t) - 1, nz=getattr(getattr(pr.stepper, "tree", None), "nz", pr.sys.n))
    print(f"  {variant:19s} {k} = {val:.8e}  grad = {np.array2string(adj[k], precision=6)}")
    print(f"  {'':19s} CPU forward {t_fwd:.2f} s, adjoint {t_adj:.2f} s, direct {t_dir:.2f} s "
          f"({row['steps']} steps, {row['nz']} coordinates); |adj - dir| = {row['adj_dir']:.1e}")
    if fd:
        g, t_fd = cpu(lambda: pr.finite_differences(1e-5))
        row["fd"] = np.max(np.abs(adj[k] - g[k])) / np.max(np.abs(adj[k]))
        print(f"  {'':19s} central FD {np.array2string(g[k], precision=6)}: |adj - FD| = {row['fd']:.1e} "
              f"normwise ({t_fd:.1f} s)")
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=list(WINDOWS))
    ap.add_argument("--fd", action="store_true", help="central differences on the semi-recursive gradient")
    a = ap.parse_args()
    for name in WINDOWS:
        if a.only and name != a.only:
            continue
        print(f"\n== buggy-{name} {' '.join(WINDOWS[name])}")
        rows = {v: run(name, v, a.fd and v == "semi-recursive") for v in VARIANTS}
        s, g = rows["semi-recursive"], rows["global trapezoidal"]
        print(f"  semi-recursive vs global trapezoidal: |dpsi|/psi = {abs(s['psi'] - g['psi']) / abs(g['psi']):.1e}, "
              f"|dgrad|/|grad| = {np.max(np.abs(s['grad'] - g['grad'])) / np.max(np.abs(g['grad'])):.1e}")
        for v in ("global trapezoidal", "global genalpha"):
            r = rows[v]
            print(f"  saving vs {v:18s}: forward {1 - s['fwd'] / r['fwd']:+.0%}, forward+adjoint "
                  f"{1 - (s['fwd'] + s['adj']) / (r['fwd'] + r['adj']):+.0%}, forward+direct "
                  f"{1 - (s['fwd'] + s['dir']) / (r['fwd'] + r['dir']):+.0%}")


if __name__ == "__main__":
    main()
