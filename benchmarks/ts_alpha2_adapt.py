"""Adaptive ts-alpha2 (TSAdapt "basic" on TSALPHA2's error estimate) beside the own
adaptive genalpha (timeloop.py's estimator and PI controller), and a checkpointed
adaptive ts-alpha2 run beside the in-memory one (integrators/ts_alpha2.py, issue 20).

    .venv/bin/python benchmarks/ts_alpha2_adapt.py [CONFIG] [--t-end T] [--rtol R ...] [--ref-dt DT]
        [--schedule S] [--set k=v ...]

Per rtol (atol = rtol/100): accepted and rejected steps, the range of h, forward and
adjoint wall times, and the relative error of ψ and ∇ψ (adjoint) against a fixed-step
genalpha run at ``--ref-dt``; then, at the first rtol, the same ts-alpha2 run with an
HDF5 checkpoint file (``--schedule``): its forward + adjoint wall time and whether its
gradient is bitwise the in-memory one.
"""
import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import parmbs  # noqa: E402,F401 — before numpy (its SIMD math: parmbs/_determinism.py)
import numpy as np  # noqa: E402
from parmbs.config.loader import load_config      # noqa: E402
from parmbs.sensitivity.problem import Problem     # noqa: E402


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def rel(a, b):
    """max over objectives of |a − b| / max |b| (dicts of arrays or scalars)."""
    return max(np.max(np.abs(np.asarray(a[k]) - np.asarray(b[k]))) / max(np.max(np.abs(np.asarray(b[k]))), 1e-300)
               for k in b)


FIVEBAR = os.path.join(os.path.dirname(__file__), "..", "configs", "fivebar.toml")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config", nargs="?", default=FIVEBAR)
    ap.add_argument("--rtol", type=float, action="append")
    ap.add_argument("--t-end", type=float, default=0.5)
    ap.add_argument("--ref-dt", type=float, default=1e-4)
    ap.add_argument("--schedule", default="every:10")
    ap.add_argument("--set", action="append", default=[])
    a = ap.parse_args(argv)
    base = a.set + [f"simulation.t_end={a.t_end}", "simulation.dt=1e-3", "simulation.rho_inf=0.9"]
    ref = Problem(load_config(a.config, base[:-2] + [f"simulation.dt={a.ref_dt}", "simulation.rho_inf=0.9",
                                                     'simulation.integrator="genalpha"']))
    ref.forward()
    psi0, g0 = ref.objective_values(), ref.adjoint()
    print(f"reference: genalpha, fixed dt = {a.ref_dt:g}, {ref.nsteps} steps")
    for i, rtol in enumerate(a.rtol or [1e-3, 1e-4, 1e-5]):
        adapt = f"simulation.adapt={{rtol={rtol:g}, atol={rtol / 100:g}}}"
        for engine in ("ts-alpha2", "genalpha"):
            pr = Problem(load_config(a.config, base + [adapt, f'simulation.integrator="{engine}"']))
            tr, tf = timed(pr.forward)
            g, ta = timed(pr.adjoint)
            h = np.diff(tr.t)
            print(f"rtol {rtol:g} {engine:9s}: {tr.steps} steps, {tr.rejected} rejected, h {h.min():.2e} … "
                  f"{h.max():.2e}; forward {tf:.2f} s, adjoint {ta:.2f} s; ψ err {rel(pr.objective_values(), psi0):.1e}, "
                  f"∇ψ err {rel(g, g0):.1e}")
            if i == 0 and engine == "ts-alpha2":
                with tempfile.TemporaryDirectory() as d:
                    ck = Problem(load_config(a.config, base + [adapt, 'simulation.integrator="ts-alpha2"',
                                                               f"checkpoint.schedule={a.schedule}"]))
                    run = ck.use_checkpoint(os.path.join(d, "ck.h5"))
                    _, tcf = timed(ck.forward)
                    gc, tca = timed(ck.adjoint)
                    run.store.close()
                print(f"  checkpointed ({a.schedule}): forward {tcf:.2f} s, adjoint {tca:.2f} s, "
                      f"{run.recomputed} steps recomputed; gradient bitwise the in-memory one: "
                      f"{all(np.array_equal(gc[k], g[k]) for k in g)}")


if __name__ == "__main__":
    main()
