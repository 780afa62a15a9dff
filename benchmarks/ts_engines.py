"""PETSc TS engines beside parmbs's own steppers (issue 20): forward and gradient CPU
time and the gradient gap, on the five-bar and a closed chain of ``--links`` bars
(benchmarks/formulations.py's generator: 60 links → 180 coordinates, 122 constraints,
58 degrees of freedom), in one run.

Pairs (own stepper ↔ TS path; the same formulation):
* index3 genalpha ↔ ts-alpha2 (TSALPHA2 with our adjoint): the same discrete equations,
  so the gradient gap is round-off;
* index1 / maggi / matrix-r independent trapezoidal ↔ ts-cn (implicit midpoint,
  TSAdjoint) and ts-rk (RK4, TSAdjoint): other schemes of the same ODE, so the gap is
  the schemes' discretization error (O(h²) of the trapezoidal rule);
* penalty: TS only (ts-cn, ts-rk), listed beside index3 trapezoidal.

Gradient = ``Problem.adjoint`` after the forward run, as a user's ``parmbs gradient``
does (the TS paths reuse the forward run's TS since branch ts18e: integrators/ts_kept.py;
the tables below were measured with one forward re-run inside); times are CPU seconds of this process (time.process_time; every
solver here is single-threaded), so other jobs on the machine do not inflate them.
A row that fails prints the error's first line.

Usage: python benchmarks/ts_engines.py [--links 60] [--t-fivebar 0.5] [--t-chain 0.05]
       [--dt 1e-3] [--only fivebar|chain]
"""
import argparse
import pathlib
import sys
import tempfile
import time

import parmbs  # noqa: F401  (before numpy: parmbs/_determinism.py)
import numpy as np

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from formulations import closed_chain_toml  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
MRI = ["simulation.matrix_r.coordinates=independent"]
#: (label, own engine's overrides, [(TS label, TS overrides)])
PAIRS = [
    ("index3", ["simulation.formulation=index3", "simulation.integrator=genalpha"],
     [("ts-alpha2", ["simulation.formulation=index3", "simulation.integrator=ts-alpha2"])]),
    ("index1", ["simulation.formulation=index1", "simulation.integrator=trapezoidal"],
     [("ts-cn", ["simulation.formulation=index1", "simulation.integrator=ts-cn"]),
      ("ts-rk", ["simulation.formulation=index1", "simulation.integrator=ts-rk"])]),
    ("maggi", ["simulation.formulation=maggi", "simulation.integrator=trapezoidal"],
     [("ts-cn", ["simulation.formulation=maggi", "simulation.integrator=ts-cn"]),
      ("ts-rk", ["simulation.formulation=maggi", "simulation.integrator=ts-rk"])]),
    ("matrix-r indep.", ["simulation.formulation=matrix-r", "simulation.integrator=trapezoidal"] + MRI,
     [("ts-cn", ["simulation.formulation=matrix-r", "simulation.integrator=ts-cn"] + MRI),
      ("ts-rk", ["simulation.formulation=matrix-r", "simulation.integrator=ts-rk"] + MRI)]),
    ("penalty (ref. index3 trap.)", ["simulation.formulation=index3", "simulation.integrator=trapezoidal"],
     [("ts-cn", ["simulation.formulation=penalty", "simulation.integrator=ts-cn"]),
      ("ts-rk", ["simulation.formulation=penalty", "simulation.integrator=ts-rk"])]),
]


def run(path, t_end, dt, sets):
    """(forward CPU s, gradient CPU s, steps, {objective: ∇ψ}) of one engine."""
    cfg = load_config(str(path), [f"simulation.t_end={t_end}", f"simulation.dt={dt}",
                                  "simulation.progress=false"] + sets)
    pr = Problem(cfg)
    t0 = time.process_time()
    traj = pr.forward()
    t1 = time.process_time()
    g = pr.adjoint()
    t2 = time.process_time()
    return t1 - t0, t2 - t1, traj.steps, g


def gap(g, ref):
    return max(float(np.max(np.abs(g[k] - ref[k])) / max(np.max(np.abs(ref[k])), 1e-300)) for k in ref)


def model(label, path, t_end, dt, common=(), maggi=()):
    """One model's table; ``common``: overrides of every engine, ``maggi``: of the Maggi rows."""
    print(f"\n{label}: t_end = {t_end} s, dt = {dt} (CPU s; gap = max relative |∇ψ_TS − ∇ψ_own|)"
          + (f"\n  with {' '.join(common + maggi)}" if common or maggi else ""))
    print(f"{'formulation':<28} {'engine':<12} {'steps':>6} {'fwd s':>8} {'grad s':>8} {'fwd/own':>8} "
          f"{'grad/own':>8} {'gap':>9}")
    for name, own_sets, ts_rows in PAIRS:
        extra = list(common) + (list(maggi) if name == "maggi" else [])
        own_sets = own_sets + extra
        ts_rows = [(lab, sets + extra) for lab, sets in ts_rows]
        try:
            f0, a0, n0, g0 = run(path, t_end, dt, own_sets)
            own = own_sets[1].split("=")[1]
            print(f"{name:<28} {own:<12} {n0:>6} {f0:>8.2f} {a0:>8.2f} {1:>8.2f} {1:>8.2f} {'-':>9}", flush=True)
        except Exception as e:             # noqa: BLE001 (a failing engine is a row, not the end)
            print(f"{name:<28} own failed: {str(e).splitlines()[0][:90]}", flush=True)
            continue
        for ts_label, sets in ts_rows:
            try:
                f, a, n, g = run(path, t_end, dt, sets)
                print(f"{'':<28} {ts_label:<12} {n:>6} {f:>8.2f} {a:>8.2f} {f / f0:>8.2f} {a / a0:>8.2f} "
                      f"{gap(g, g0):>9.1e}", flush=True)
            except Exception as e:         # noqa: BLE001
                print(f"{'':<28} {ts_label:<12} failed: {str(e).splitlines()[0][:90]}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--links", type=int, default=60)
    ap.add_argument("--t-fivebar", type=float, default=0.5)
    ap.add_argument("--t-chain", type=float, default=0.05)
    ap.add_argument("--dt", type=float, default=1e-3)
    ap.add_argument("--only", choices=("fivebar", "chain"))
    args = ap.parse_args()
    if args.only != "chain":
        model("five-bar (configs/fivebar.toml; 5 design variables, 3 objectives)", ROOT / "configs" / "fivebar.toml",
              args.t_fivebar, args.dt)
    if args.only != "fivebar":
        f = pathlib.Path(tempfile.mkdtemp()) / "closed-chain.toml"
        f.write_text(closed_chain_toml(args.links))
        # Maggi's dependent angles: L0 (near vertical) and the bottom link (horizontal), not
        # the generator's last two links, which hang nearly parallel: C = [Φ_q; B] had
        # κ ≈ 2e5 … 1e6 there and the manifold Newton of the RK stages stalled at 1e-3.
        # Newton rtol 1e-10 for every engine: the reduced ODEs' G carries round-off
        # ≈ κ ε, and SNES stalled at ‖F‖ ≈ 5e-8 with the default 1e-12 (matrix-r ts-cn)
        mid = args.links // 2
        ind = ", ".join(f'"L{i}.angle"' for i in range(args.links) if i not in (0, mid))
        model(f"closed chain ({args.links} bars, {args.links + 1} revolute joints, {args.links - 2} DOF; "
              "5 design variables, 2 objectives)", f, args.t_chain, args.dt,
              common=["simulation.newton.rtol=1e-10"], maggi=[f"simulation.maggi.independent=[{ind}]"])


if __name__ == "__main__":
    main()
