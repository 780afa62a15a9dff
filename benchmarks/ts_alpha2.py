"""TSALPHA2 (``integrator = "ts-alpha2"``) against our own genalpha, and PETSc's native
TSALPHA2 form against both (integrators/ts_alpha2.py, issue 20 item 2).

    .venv/bin/python benchmarks/ts_alpha2.py [CONFIG] [--t-end T] [--dt DT ...] [--set k=v ...]

Per dt: the forward wall time of both engines; max |Δq|, |Δv|, |Δa|, |Δλ| over the run
of (i) ts-alpha2 as shipped (our interpolated residual recovered from TSALPHA2's
interpolated state: the same discrete equations) and (ii) ``native``: the residual
*at* the interpolated state, F = r(t_a, x_a) + Φ_q(q_a)ᵀλ_a, Φ(q_a)/(βh²) — what a plain
I2Function gives TSALPHA2; plus max |Φ(q_k)| of each run (ours holds Φ(q_{n+1}) = 0 to
round-off; the native form holds Φ(q_a) = 0, so q_{n+1} = q_n + (q_a − q_n)/α_f^P leaves
the manifold).  With --gradient also the adjoint on ts-alpha2 vs our direct.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import parmbs  # noqa: E402,F401 — before numpy (its SIMD math: parmbs/_determinism.py)
import numpy as np  # noqa: E402
from parmbs.config.loader import load_config      # noqa: E402
from parmbs.sensitivity.problem import Problem     # noqa: E402


def phi_max(pr, traj):
    nm = pr.stepper if hasattr(pr.stepper, "_eval") else pr.stepper.nm
    return max(np.max(np.abs(nm._eval(traj.t[k], traj.x(k), traj.p).phi()), initial=0.0)
               for k in range(traj.steps + 1))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config", nargs="?", default=os.path.join(os.path.dirname(__file__), "..", "configs",
                                                              "fivebar.toml"))
    ap.add_argument("--t-end", type=float, default=0.5)
    ap.add_argument("--dt", type=float, action="append")
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--gradient", action="store_true")
    a = ap.parse_args(argv)
    from parmbs.integrators.ts_alpha2 import TSAlpha2Stepper
    for dt in a.dt or [1e-3, 5e-4]:
        base = a.set + [f"simulation.t_end={a.t_end}", f"simulation.dt={dt}"]
        own = Problem(load_config(a.config, base + ['simulation.integrator="genalpha"']))
        ts = Problem(load_config(a.config, base + ['simulation.integrator="ts-alpha2"']))
        nat = Problem(load_config(a.config, base + ['simulation.integrator="ts-alpha2"']))
        st = ts.stepper
        nat.stepper = TSAlpha2Stepper(nat.sys, nat.config.simulation, st.nm.design_map, st.nm.nd, native=True)
        runs = {}
        for name, pr in (("genalpha", own), ("ts-alpha2", ts), ("native", nat)):
            t0 = time.perf_counter()
            runs[name] = pr.forward()
            runs[name].wall = time.perf_counter() - t0
        ref = runs["genalpha"]
        print(f"dt = {dt:g}, t_end = {a.t_end:g}, {ref.steps} steps; forward wall: "
              + ", ".join(f"{k} {r.wall:.2f} s" for k, r in runs.items()))
        for name, pr in (("genalpha", own), ("ts-alpha2", ts), ("native", nat)):
            r = runs[name]
            d = [np.max(np.abs(getattr(r, f) - getattr(ref, f))) for f in ("q", "v", "a", "lam")]
            print(f"  {name:10s} max|Δq| {d[0]:.2e}  |Δv| {d[1]:.2e}  |Δa| {d[2]:.2e}  |Δλ| {d[3]:.2e}  "
                  f"max|Φ(q_k)| {phi_max(pr, r):.2e}  Newton its {int(np.sum(r.newton_its))}")
        if a.gradient:
            t0 = time.perf_counter()
            gd = own.direct()
            t1 = time.perf_counter()
            ga = ts.adjoint()
            t2 = time.perf_counter()
            rel = max(np.max(np.abs(ga[k] - gd[k])) / np.max(np.abs(gd[k])) for k in gd)
            print(f"  gradient: ts-alpha2 adjoint vs genalpha direct {rel:.2e} (relative to max |∇ψ|); "
                  f"wall direct {t1 - t0:.2f} s, ts adjoint (forward + sweep) {t2 - t1:.2f} s")


if __name__ == "__main__":
    main()
