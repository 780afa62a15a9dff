"""Modal reduction of the topopt crank's body: one design iteration (forward + adjoint +
reduction and its sensitivities), reduced vs full order, and the reduced model's error.

    .venv/bin/python benchmarks/modal_reduction.py --nx 100 --ny 40 --modes 10 20 --steps 40
    .venv/bin/python benchmarks/modal_reduction.py --nx 500 --ny 200 --modes 10 --steps 1600 --no-full \
        --attachment-only

The crank of configs/topopt-crank.toml on an nx × ny mesh (pin at [0.9 nx, ny/2], clamp
radius ≥ 1.05 hx as in benchmarks/topopt_crank.py) over the first ``--steps`` steps of
dt = 1.25e-3 (1600 = the full 2 s horizon).  Per K in ``--modes``: the reduction
(assembly + eigensolve), the forward run, the adjoint sweep over the parameter columns
(the reduced body data), the chain to the 10^5 densities (``Reduction.vjp``: one bordered
factorization + solve per mode) — each timed — and ψ, ∇ψ against the full-order run
(``--no-full`` skips it).  Each K runs twice: eigenmodes only, and with the two
attachment modes of the pin node (``reduction.attachment = true``).  ``--cpu`` times with process CPU time (shared machine).
"""
import argparse
import copy
import os
import sys
import time
import tomllib

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from parmbs.config.loader import validate          # noqa: E402
from parmbs.sensitivity.problem import Problem      # noqa: E402

CONFIG = os.path.join(os.path.dirname(__file__), "..", "configs", "topopt-crank.toml")
clock = time.perf_counter


def crank(nx, ny, steps, modes=None, attachment=False):
    with open(CONFIG, "rb") as f:
        data = tomllib.load(f)
    c = data["continua"][0]
    c.update(nx=nx, ny=ny, points={"pin": [9 * nx // 10, ny // 2]},
             clamp_radius=max(c["clamp_radius"], 1.05 * c["size"][0] / nx))
    if modes is not None:
        c["reduction"] = {"modes": modes, "attachment": attachment}
    data["simulation"]["t_end"] = steps * data["simulation"]["dt"]
    data.pop("optimize")
    return validate(copy.deepcopy(data), CONFIG)


def run(cfg, reduced):
    t = {}
    s = clock()
    pr = Problem(cfg)
    t["setup"] = clock() - s
    if reduced:
        red = pr.sys.continua.reductions()[0]
        red._cache = None                           # time the reduction itself
        s = clock()
        red.state(pr.sys.p)
        t["reduction"] = clock() - s
    s = clock()
    pr.forward()
    t["forward"] = clock() - s
    psi = pr.objective_values()["compliance"]
    s = clock()
    cols = pr._adjoint_columns(pr.sys.p)
    t["adjoint"] = clock() - s
    s = clock()
    g = pr.design.chain(cols, pr.sys.p)["compliance"]
    t["chain"] = clock() - s
    return pr, psi, g, t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nx", type=int, default=100)
    ap.add_argument("--ny", type=int, default=40)
    ap.add_argument("--modes", type=int, nargs="+", default=[10, 20])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--no-full", action="store_true")
    ap.add_argument("--cpu", action="store_true")
    ap.add_argument("--attachment-only", action="store_true", help="skip the eigenmodes-only runs")
    a = ap.parse_args()
    global clock
    clock = time.process_time if a.cpu else time.perf_counter
    print(f"clock: {'CPU time of this process' if a.cpu else 'wall'}; mesh {a.nx}x{a.ny} = {a.nx * a.ny} "
          f"densities, {a.steps} steps of 1.25e-3 s", flush=True)
    full = None
    if not a.no_full:
        pr, psi, g, t = run(crank(a.nx, a.ny, a.steps), False)
        full = (psi, g)
        print(f"full order: n = {pr.sys.n}; set-up {t['setup']:.2f} s, forward {t['forward']:.2f} s, adjoint "
              f"{t['adjoint']:.2f} s (chain {t['chain']:.3f} s); iteration {t['forward'] + t['adjoint']:.2f} s; "
              f"ψ = {psi:.6e}", flush=True)
    for K, att in [(K, att) for K in a.modes for att in (False, True)
                   if att or not a.attachment_only]:
        pr, psi, g, t = run(crank(a.nx, a.ny, a.steps, K, att), True)
        it = t["reduction"] + t["forward"] + t["adjoint"] + t["chain"]
        line = (f"K = {K:3d}{' + 2 attachment' if att else ''}: n = {pr.sys.n}; set-up {t['setup']:.2f} s (incl. one reduction), reduction "
                f"{t['reduction']:.2f} s, forward {t['forward']:.2f} s, adjoint {t['adjoint']:.2f} s, "
                f"chain (vjp) {t['chain']:.2f} s; iteration {it:.2f} s; ψ = {psi:.6e}")
        if full is not None:
            e_psi = abs(psi - full[0]) / abs(full[0])
            e_g = np.linalg.norm(g - full[1]) / np.linalg.norm(full[1])
            cos = g @ full[1] / (np.linalg.norm(g) * np.linalg.norm(full[1]))
            line += f"; vs full: ψ {e_psi:.2e}, ∇ψ {e_g:.2e} (cos {cos:.6f})"
        print(line, flush=True)


if __name__ == "__main__":
    main()
