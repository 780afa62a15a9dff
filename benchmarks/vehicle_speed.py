"""Issue 19: the vehicle models' forward and adjoint speed against real time, numpy path
vs the compiled Arnold–Brüls step (parmbs/compiled/ab_step.py), in one run.

    python benchmarks/vehicle_speed.py                       # both models, as below
    python benchmarks/vehicle_speed.py --only iltis --profile # + cProfile of each forward

Models (CPU time of this process, ``time.process_time``; min of --repeat):

* ``iltis``: configs/iltis.toml with fixed steps of 5 ms and ρ∞ = 0.8 (the issue's setting, the
  section "Iltis over the speed bump" of benchmarks/README.md; at the shipped ρ∞ = 0.99 the
  guard stops a 5 ms run at t = 1.4 s, the (−1)ᵏ mode growing; the file
  without its ``adapt`` line, as tests/test_iltis.py), 3 s over the speed bump;
* ``iltis-adaptive`` (only with ``--only``): configs/iltis.toml as shipped (error-controlled
  steps from 0.5 ms: ~10⁴ steps over the 3 s, minutes on the numpy path);
* ``buggy``: configs/buggy-lane-change.toml as shipped (12 s, dt 5 ms).

For each path (``simulation.compiled = "off"`` and ``"auto"``): forward CPU ÷ simulated
time (< 1: faster than real time; the Iltis goal ≤ 0.5), the adjoint sweep's CPU ÷
simulated time, (forward + adjoint) ÷ simulated time (the buggy goal < 1), steps,
Newton iterations, and the agreement of the two trajectories (max relative difference
of q, v, q̈, λ) and of the adjoint gradients.  ``--profile``: the top of a cProfile of
each path's forward (cumulative time, shares of the profiled total).
"""
import parmbs  # noqa: F401  (first: parmbs/_determinism.py pins threads and numpy's SIMD)

import argparse
import atexit
import cProfile
import os
import pathlib
import pstats
import tempfile

import numpy as np

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem
from compiled import cpu_min        # benchmarks/compiled.py

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _fixed_iltis():
    """configs/iltis.toml without its ``adapt`` line (a --set cannot remove a table)."""
    lines = (ROOT / "configs" / "iltis.toml").read_text().splitlines(keepends=True)
    f = tempfile.NamedTemporaryFile("w", suffix="-iltis.toml", delete=False)
    f.write("".join(ln for ln in lines if not ln.startswith("adapt = ")))
    f.close()
    atexit.register(os.unlink, f.name)
    return f.name


MODELS = {
    "iltis": (_fixed_iltis, ["simulation.dt=5e-3", "simulation.rho_inf=0.8"]),
    "iltis-adaptive": (lambda: str(ROOT / "configs" / "iltis.toml"), []),
    "buggy": (lambda: str(ROOT / "configs" / "buggy-lane-change.toml"), []),
}


def profile(pr, top):
    prof = cProfile.Profile()
    prof.runcall(pr.forward)
    st = pstats.Stats(prof)
    total = st.total_tt
    rows = sorted(st.stats.items(), key=lambda kv: -kv[1][3])[:top]
    for (fn, line, name), (_, _, _, cum, _) in rows:
        print(f"    {100 * cum / total:5.1f} %  {pathlib.Path(fn).name}:{line}({name})")


def run(name, sets, repeat, prof):
    path_fn, extra = MODELS[name]
    path = path_fn()
    res = {}
    for mode in ("off", "auto"):
        pr = Problem(load_config(path, ["simulation.progress=false", f"simulation.compiled={mode}", *extra, *sets]))
        if mode == "auto":
            if pr.stepper.compiled is None:
                raise SystemExit(f"{name}: the compiled path is not used for this model")
            print(pr.stepper.compiled_note or "compiled: kernels already loaded in this process")
        tf, tr = cpu_min(pr.forward, repeat)
        ta, g = cpu_min(pr.adjoint, repeat)
        res[mode] = dict(pr=pr, tr=tr, g=g, fwd=tf, adj=ta)
        if prof:
            print(f"  cProfile of the forward, {mode}:")
            profile(pr, prof)
    T = res["off"]["pr"].config.simulation.t_end
    print(f"\n{name}: t_end {T} s, n + m = {pr.sys.n + pr.sys.m}, CPU s, min of {repeat}")
    print("| path | steps | Newton its | forward s | forward ÷ simulated | adjoint s | adjoint ÷ simulated "
          "| (forward + adjoint) ÷ simulated |")
    print("|---|---|---|---|---|---|---|---|")
    for mode, label in (("off", "numpy + PETSc"), ("auto", "compiled (forward and adjoint steps)")):
        r = res[mode]
        print(f"| {label} | {len(r['tr'].t) - 1} | {int(np.sum(r['tr'].newton_its))} | {r['fwd']:.2f} "
              f"| {r['fwd'] / T:.3f} | {r['adj']:.2f} | {r['adj'] / T:.3f} | {(r['fwd'] + r['adj']) / T:.3f} |")
    o, c = res["off"], res["auto"]
    print(f"forward ×{o['fwd'] / c['fwd']:.2f}, forward + adjoint ×{(o['fwd'] + o['adj']) / (c['fwd'] + c['adj']):.2f}")
    rel = lambda A, B: float(np.max(np.abs(A - B)) / np.max(np.abs(A)))
    if len(o["tr"].t) == len(c["tr"].t):
        print("agreement compiled vs numpy (max rel. difference): "
              + ", ".join(f"{k} {rel(getattr(o['tr'], k), getattr(c['tr'], k)):.1e}" for k in ("q", "v", "a", "lam"))
              + "; adjoint gradients " + ", ".join(f"{k} {rel(o['g'][k], c['g'][k]):.1e}" for k in o["g"]))
    else:
        print(f"step sequences differ ({len(o['tr'].t) - 1} vs {len(c['tr'].t) - 1} steps): adjoint gradients "
              + ", ".join(f"{k} {rel(o['g'][k], c['g'][k]):.1e}" for k in o["g"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=list(MODELS), action="append")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--profile", type=int, nargs="?", const=15, default=0, metavar="TOP")
    a = ap.parse_args()
    for name in a.only or ["iltis", "buggy"]:
        run(name, a.set, a.repeat, a.profile)


if __name__ == "__main__":
    main()
