"""Same input, same bytes? The five-bar forward + adjoint run in K separate processes.

Each child runs ``Problem.forward`` + ``Problem.adjoint`` (the current numpy + PETSc
path, or with ``--dense`` the dense-operator variant b1, or with ``--numba`` the
compiled step a3) and writes q, v, a, λ at t_end and the gradients; the parent prints
how many distinct byte patterns it saw and the largest relative difference to the
first child.  ``--env K=V`` sets a variable in the children, e.g.
``--env NPY_DISABLE_CPU_FEATURES="AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL"``.

The size of a difference shows the conditioning of the index-3 trapezoidal scheme:
a and λ are determined by q through Φ(q)/(βh²), so a round-off change δq moves them by
δq/(βh²) ~ 1e-16/2.5e-7 per step, and their weakly damped modes carry it along.

Usage: python benchmarks/prototypes/reproducibility.py [--runs 6] [--dense|--numba] [--env K=V]
"""
import argparse
import hashlib
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = r'''
import sys, numpy as np
sys.path.insert(0, {here!r})
from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem
cfg = load_config({config!r}, ["simulation.t_end={t_end}", "simulation.progress=false"])
pr = Problem(cfg)
mode = {mode!r}
if mode == "numba":
    from model_arrays import ModelArrays
    import numba_kernels as nk
    ma = ModelArrays(pr.sys)
    x0 = [np.array(x) for x in pr.stepper.initial(0.0, pr.sys.p)]
    kin = [a for k, s in (("Inertia", (3, 2)), ("Gravity", (3, 3)), ("Spring", (6, 11)), ("Revolute", (6, 8, 2)))
           for i, a in enumerate(ma.stacked(k, *s)) if i < 2 or k == "Revolute"]
    t = cfg.simulation.newton
    Q = np.empty((pr.nsteps + 1, pr.sys.n))
    out = nk.run_steps(*x0, pr.sys.p, pr.sys.n, cfg.simulation.dt, pr.nsteps, t.atol, t.rtol, t.max_it, *kin, Q)
    arrs = list(out[3:])
else:
    if mode == "dense":
        from dense_operator import use_dense
        use_dense(pr.stepper)
    tr = pr.forward()
    g = pr.adjoint()
    arrs = list(tr.x(tr.steps)) + [g[k] for k in sorted(g)]
np.savez(sys.argv[1], *arrs)
'''
NAMES = ["q", "v", "a", "λ", "∇ψ1", "∇ψ2", "∇ψ3"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="configs/fivebar.toml")
    ap.add_argument("--t-end", type=float, default=1.0)
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--dense", action="store_true")
    ap.add_argument("--numba", action="store_true")
    ap.add_argument("--env", action="append", default=[])
    args = ap.parse_args()
    mode = "dense" if args.dense else "numba" if args.numba else "current"
    env = dict(os.environ)
    env.update(kv.split("=", 1) for kv in args.env)
    code = CHILD.format(here=HERE, config=args.config, t_end=args.t_end, mode=mode)
    res = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.runs):
            f = os.path.join(tmp, f"r{i}.npz")
            subprocess.run([sys.executable, "-c", code, f], env=env, check=True)
            z = np.load(f)
            res.append([z[f"arr_{k}"] for k in range(len(z.files))])
    digests = {hashlib.sha1(b"".join(a.tobytes() for a in r)).hexdigest() for r in res}
    print(f"{mode}, {args.runs} processes, env {args.env or '-'}: {len(digests)} distinct result(s)")
    worst = [max(float(np.max(np.abs(r[k] - res[0][k])) / np.max(np.abs(res[0][k]))) for r in res[1:])
             for k in range(len(res[0]))]
    print("  max rel. difference to the first run: "
          + ", ".join(f"{n} {w:.0e}" for n, w in zip(NAMES, worst)))


if __name__ == "__main__":
    main()
