"""Flexible pendulum (seed 000 §6.1): mesh and time-step convergence of the tip
deflection δy_t (tip position in the frame at the pin whose x axis is the beam tangent
there) and its adjoint sensitivities to the section side h, density ρ and E.

    .venv/bin/python benchmarks/flexible_pendulum.py [--t-end 0.3] [--quick]

Prints, for each mesh (elements) and time step, δ(t_end), the observed differences
between successive refinements, and the adjoint gradient at the finest setting with
its agreement with the direct gradient.  Not part of the tests (minutes).
"""
import argparse
import time

import parmbs  # noqa: F401  (before numpy: parmbs/_determinism.py pins numpy's CPU features for same-bytes results)
import numpy as np

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem

CONFIG = "configs/flexible-pendulum.toml"


def run(nel, dt, t_end, integrator="trapezoidal", gradient=False):
    cfg = load_config(CONFIG, [f"simulation.t_end={t_end}", f"simulation.dt={dt}",
                               f"beams.beam.elements={nel}", f"simulation.integrator={integrator}",
                               "simulation.progress=false"])
    # the seed's pointwise δ(t_end): not in the shipped file (configs/flexible-pendulum.toml)
    tip = cfg.objectives[0].model_copy(update={"name": "tip_deflection", "terminal": "deflection", "integrand": None})
    pr = Problem(cfg.model_copy(update={"objectives": [tip]}))
    t0 = time.perf_counter()
    pr.forward()
    tf = time.perf_counter() - t0
    val = pr.objective_values()["tip_deflection"]
    if not gradient:
        return val, tf, None
    t0 = time.perf_counter()
    adj = pr.adjoint()["tip_deflection"]
    ta = time.perf_counter() - t0
    dir_ = pr.direct()["tip_deflection"]
    return val, tf, (adj, np.max(np.abs(adj - dir_)) / np.max(np.abs(adj)), ta)


def table(title, label, keys, vals, times):
    print(f"\n{title}")
    print(f"{label:>10} {'delta_tip(t_end) [m]':>22} {'|change|':>11} {'ratio':>7} {'forward s':>10}")
    prev_d = None
    for i, (k, v, t) in enumerate(zip(keys, vals, times)):
        d = abs(v - vals[i - 1]) if i else None
        ratio = f"{prev_d / d:7.2f}" if (d and prev_d) else ""
        print(f"{k:>10} {v:22.12e} {('' if d is None else f'{d:11.3e}'):>11} {ratio:>7} {t:10.2f}")
        prev_d = d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--t-end", type=float, default=0.3)
    ap.add_argument("--quick", action="store_true", help="fewer refinements")
    args = ap.parse_args()
    T = args.t_end
    meshes = (2, 4, 8) if args.quick else (2, 4, 8, 16, 32)
    dts = (4e-3, 2e-3, 1e-3) if args.quick else (4e-3, 2e-3, 1e-3, 5e-4, 2.5e-4)
    dt_mesh = 1e-3 if args.quick else 5e-4
    res = [run(n, dt_mesh, T) for n in meshes]
    table(f"mesh refinement, dt = {dt_mesh:g} s, t_end = {T} s", "elements", meshes,
          [r[0] for r in res], [r[1] for r in res])
    nel_dt = 2          # high modes of finer meshes need dt << 1e-3 to be in the asymptotic range
    res = [run(nel_dt, dt, T) for dt in dts]
    table(f"time-step refinement, {nel_dt} elements, trapezoidal, t_end = {T} s", "dt", [f"{d:g}" for d in dts],
          [r[0] for r in res], [r[1] for r in res])
    val, tf, (adj, ad, ta) = run(5, dts[-2], T, gradient=True)
    print(f"\nseed mesh (5 elements), dt = {dts[-2]:g}: delta = {val:.10e}")
    print(f"  d delta / d(h, rho, E) (adjoint) = {adj}")
    print(f"  |adjoint - direct| / |adjoint| = {ad:.1e};  forward {tf:.2f} s, adjoint {ta:.2f} s")


if __name__ == "__main__":
    main()
