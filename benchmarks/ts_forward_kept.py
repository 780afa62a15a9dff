"""The forward TS run kept for the adjoint (ts.py ``TSStepper.forward``/``_take_forward``):
sha256 of ψ and ∇ψ of ``forward(); objective_values(); adjoint()`` on every TS run of the
tests (five-bar: tests/test_ts_checkpoint.py's RUNS and a few more schemes and
formulations), and the CPU seconds of that forward + adjoint pair.

Run it on two trees and compare the printed sha256 (bytes must not change) and CPU:

    PYTHONPATH=. python benchmarks/ts_forward_kept.py [--only NAME,...] [--repeat R] [--timing]

``--timing``: the longer runs of the CPU comparison (five-bar 1 s at dt 1e-3: ts-cn
penalty, ts-theta index-1, ts-rk index-1, adaptive ts-theta index-1), best of --repeat.
"""
import argparse
import hashlib
import pathlib
import time

import parmbs  # noqa: F401  (before numpy: parmbs/_determinism.py)
import numpy as np

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIVEBAR = str(ROOT / "configs" / "fivebar.toml")
SHORT = ["simulation.t_end=0.05", "simulation.dt=1e-3", "simulation.theta=0.7", "simulation.rho_inf=0.9",
         "simulation.progress=false"]
F, I = "simulation.formulation", "simulation.integrator"
RUNS = {
    "index1-theta": [f'{F}="index1"', f'{I}="ts-theta"'],
    "index1-rk": [f'{F}="index1"', f'{I}="ts-rk"'],
    "index1-cn": [f'{F}="index1"', f'{I}="ts-cn"'],
    "index1-beuler": [f'{F}="index1"', f'{I}="ts-beuler"'],
    "index1-theta-bg": [f'{F}="index1"', f'{I}="ts-theta"', "simulation.index1.baumgarte.alpha=50.0",
                        "simulation.index1.baumgarte.beta=50.0"],
    "penalty-cn": [f'{F}="penalty"', f'{I}="ts-cn"'],
    "penalty-theta": [f'{F}="penalty"', f'{I}="ts-theta"'],
    "penalty-rk": [f'{F}="penalty"', f'{I}="ts-rk"'],
    "maggi-theta": [f'{F}="maggi"', f'{I}="ts-theta"'],
    "maggi-rk": [f'{F}="maggi"', f'{I}="ts-rk"'],
    "mr-cn": [f'{F}="matrix-r"', 'simulation.matrix_r.coordinates="independent"', f'{I}="ts-cn"'],
    "mr-rk": [f'{F}="matrix-r"', 'simulation.matrix_r.coordinates="independent"', f'{I}="ts-rk"'],
    "index1-ark": [f'{F}="index1"', f'{I}="ts-arkimex"', "simulation.t_end=0.02"],
    "index1-theta-ad": [f'{F}="index1"', f'{I}="ts-theta"', "simulation.adapt.rtol=1e-5"],
    "penalty-beuler-ad": [f'{F}="penalty"', f'{I}="ts-beuler"', "simulation.adapt.rtol=1e-4"],
    "penalty-rk-ad": [f'{F}="penalty"', f'{I}="ts-rk"', "simulation.adapt.rtol=1e-4", "simulation.t_end=0.5"],
    "penalty-ark-ad": [f'{F}="penalty"', f'{I}="ts-arkimex"', "simulation.adapt.rtol=1e-3", "simulation.t_end=0.3",
                       "simulation.penalty.alpha=1e5"],
    "maggi-theta-ad": [f'{F}="maggi"', f'{I}="ts-theta"', "simulation.adapt.rtol=1e-5"],
}
LONG = ["simulation.t_end=1.0", "simulation.dt=1e-3", "simulation.progress=false"]
TIMING = {
    "penalty ts-cn": [f'{F}="penalty"', f'{I}="ts-cn"'],
    "index-1 ts-theta": [f'{F}="index1"', f'{I}="ts-theta"', "simulation.theta=0.7"],
    "index-1 ts-rk": [f'{F}="index1"', f'{I}="ts-rk"'],
    "index-1 ts-theta adaptive": [f'{F}="index1"', f'{I}="ts-theta"', "simulation.theta=0.7",
                                  "simulation.adapt.rtol=1e-6"],
}


def sha(*arrays):
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a, dtype=float).tobytes())
    return h.hexdigest()[:16]


def once(sets):
    pr = Problem(load_config(FIVEBAR, sets))
    clock = [time.process_time()]
    traj, _ = pr.forward(), clock.append(time.process_time())
    vals, g, _ = pr.objective_values(), pr.adjoint(), clock.append(time.process_time())
    names = sorted(g)
    return (sha(*[vals[k] for k in names]), sha(*[g[k] for k in names]), sha(traj.q, traj.v), traj.steps,
            clock[1] - clock[0], clock[2] - clock[1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--timing", action="store_true")
    a = ap.parse_args()
    table, base = (TIMING, LONG) if a.timing else (RUNS, SHORT)
    only = [s for s in a.only.split(",") if s]
    print(f"{'run':<28} {'steps':>5} {'sha ψ':<17} {'sha ∇ψ':<17} {'sha q,v':<17} {'fwd CPU s':>9} "
          f"{'adj CPU s':>9} {'sum':>7}")
    for name, sets in table.items():
        if only and name not in only:
            continue
        best = None
        for _ in range(a.repeat):
            r = once(base + sets)
            if best is None or r[4] + r[5] < best[4] + best[5]:
                best = r
        sp, sg, sq, N, cf, ca = best
        print(f"{name:<28} {N:>5} {sp:<17} {sg:<17} {sq:<17} {cf:>9.3f} {ca:>9.3f} {cf + ca:>7.3f}", flush=True)


if __name__ == "__main__":
    main()
