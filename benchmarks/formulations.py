"""Formulation cost benchmark: forward, direct (5 design variables) and adjoint CPU
times of every available formulation, normalised to index-3 trapezoidal, in one run.

Models: the five-bar (configs/fivebar.toml, 5 design variables, 3 objectives) and a
closed chain of ``--links`` uniform bars hanging on a half circle between two ground
pivots (generated here: ``links`` bodies, ``links + 1`` revolute joints, one loop,
links − 2 degrees of freedom), with a spring from the middle vertex to ground; design
variables: spring stiffness and length, a link mass and inertia, gravity.
Formulations whose module is missing print "not available" (imported lazily).  Times
are CPU seconds of this process (time.process_time), so other jobs sharing the machine
do not inflate them.
With ``--table1`` it instead runs the five-bar with matrix-r over 5 s at dt = 1e-3 and
prints its adjoint gradients beside seed 002 Table 1 (SR Matrix-R direct and Reference
columns); ``--independent A,B`` runs it with independent coordinates A, B (tree joints or
natural coordinates such as B12.P2.x, seed 002 §2.2.3).
Usage: python benchmarks/formulations.py [--links 20] [--t-fivebar 1] [--dt 1e-2] [--t-chain 0.1]
       [--dt-chain 1e-3] [--profile] [--table1 [--independent A,B]]
"""
import argparse
import pathlib
import sys
import tempfile
import time

import parmbs  # noqa: F401  (before numpy: parmbs/_determinism.py pins numpy's CPU features for same-bytes results)
import numpy as np

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem

FORMULATIONS = {
    "index3 trapezoidal": ["simulation.formulation=index3", "simulation.integrator=trapezoidal"],
    "index3 variational": ["simulation.formulation=index3", "simulation.integrator=variational"],
    "penalty ts-cn": ["simulation.formulation=penalty", "simulation.integrator=ts-cn"],
    "index1": ["simulation.formulation=index1", "simulation.integrator=trapezoidal"],
    "maggi": ["simulation.formulation=maggi", "simulation.integrator=trapezoidal"],
    "matrix-r": ["simulation.formulation=matrix-r", "simulation.integrator=trapezoidal"],
    "matrix-r independent": ["simulation.formulation=matrix-r", "simulation.integrator=trapezoidal",
                             "simulation.matrix_r.coordinates=independent"],
}


def closed_chain_toml(links):
    """``links`` bars on a half circle of radius 1 below the ground line, pinned at both ends."""
    ang = np.pi * np.arange(links + 1) / links
    P = np.stack([1.0 - np.cos(ang), -np.sin(ang)], 1)
    L = float(np.linalg.norm(P[1] - P[0]))
    out = ['[model]\nname = "closed-chain"\ngravity = [0.0, -9.81]\n'
           f'[ground]\npoints = {{ A = [0.0, 0.0], B = [{P[-1, 0]!r}, 0.0], C = [1.0, 0.5] }}\n']
    for i in range(links):
        d = P[i + 1] - P[i]
        th = float(np.arctan2(d[1], d[0]))
        indep = 'independent = ["angle"]\n' if i < links - 2 else ""
        out.append(f'[[bodies]]\nname = "L{i}"\nmass = {0.2 + 0.001 * i}\ninertia = {0.2 * L * L / 12!r}\n'
                   f'com = [{L / 2!r}, 0.0]\npoints = {{ O = [0.0, 0.0], E = [{L!r}, 0.0] }}\n'
                   f'initial = {{ x = {P[i, 0]!r}, y = {P[i, 1]!r}, angle = {th!r} }}\n{indep}')
    out.append('[[joints]]\ntype = "revolute"\nname = "J0"\na = "ground.A"\nb = "L0.O"\n')
    for i in range(1, links):
        out.append(f'[[joints]]\ntype = "revolute"\nname = "J{i}"\na = "L{i - 1}.E"\nb = "L{i}.O"\n')
    out.append(f'[[joints]]\ntype = "revolute"\nname = "J{links}"\na = "L{links - 1}.E"\nb = "ground.B"\n')
    mid = links // 2
    out.append(f'[[forces]]\ntype = "spring"\nname = "S"\na = "L{mid}.O"\nb = "ground.C"\n'
               f'stiffness = 20.0\ndamping = 0.0\nlength = 1.2\n')
    out.append('[simulation]\nt_end = 1.0\ndt = 1e-2\nprogress = false\n')
    for name, path in (("k", "forces.S.stiffness"), ("L0", "forces.S.length"), ("m3", "bodies.L3.mass"),
                       ("I5", "bodies.L5.inertia"), ("g", "model.gravity.y")):
        out.append(f'[[design]]\nname = "{name}"\npath = "{path}"\n')
    out.append(f'[[objectives]]\nname = "dev"\nintegrand = "point_deviation_sq"\npoint = "L{mid}.O"\n')
    out.append(f'[[objectives]]\nname = "speed"\nintegrand = "point_velocity_sq"\npoint = "L{mid}.O"\n')
    return "".join(out)


def timed(f):
    """(f(), CPU seconds of this process): robust to other jobs time-sharing the cores
    (every solver here is single-threaded)."""
    t0 = time.process_time()
    out = f()
    return out, time.process_time() - t0


def run_model(label, path, t_end, dt):
    rows = {}
    for name, ov in FORMULATIONS.items():
        ov = ov + [f"simulation.t_end={t_end}", f"simulation.dt={dt}", "simulation.progress=false"]
        try:
            pr = Problem(load_config(path, ov))
        except ImportError as e:
            rows[name] = f"not available ({e})"
            continue
        try:
            tr, tf = timed(pr.forward)
            adj, ta = timed(pr.adjoint)
            dr, td = timed(pr.direct)
        except Exception as e:           # report, keep measuring the others
            rows[name] = f"failed: {type(e).__name__}: {' '.join(str(e).split())[:100]}"
            continue
        err = max(np.max(np.abs(adj[k] - dr[k])) / max(np.max(np.abs(dr[k])), 1e-300) for k in adj)
        its = getattr(tr, "newton_its", None)
        its = float(np.mean(its)) if its is not None and len(its) else float("nan")
        rows[name] = (tf, td, ta, err, its, {k: adj[k].copy() for k in adj})
    ref = rows.get("index3 trapezoidal")
    nsteps = int(round(t_end / dt))
    print(f"\n{label}: {nsteps} steps of {dt:g} s")
    print(f"{'formulation':<20} {'fwd cpu s':>9} {'dir cpu s':>9} {'adj cpu s':>9} "
          f"{'fwd/ref':>8} {'dir/ref':>8} {'adj/ref':>8} {'Newton/step':>11} {'|adj-dir|':>9} {'|adj-adj_ref|':>13}")
    for name, r in rows.items():
        if isinstance(r, str):
            print(f"{name:<20} {r}")
            continue
        tf, td, ta, err, its, g = r
        if isinstance(ref, tuple):
            nf, nd_, na = tf / ref[0], td / ref[1], ta / ref[2]
            gap = max(np.max(np.abs(g[k] - ref[5][k])) / np.max(np.abs(ref[5][k])) for k in g)
        else:
            nf = nd_ = na = gap = float("nan")
        print(f"{name:<20} {tf:>9.3f} {td:>9.3f} {ta:>9.3f} {nf:>8.2f} {nd_:>8.2f} {na:>8.2f} "
              f"{its:>11.2f} {err:>9.1e} {gap:>13.1e}")
    return rows


#: seed 002 Table 1, design order Ls1, Ls2, m_A1, xG_A1, L_A1: (SR Matrix-R direct, Reference)
TABLE1 = {"psi1": ([-4.2288, 3.2116, 0.31866, 0.44235, 3.3598], [-4.2288, 3.2116, 0.31866, 0.44235, 3.3598]),
          "psi2": ([-15.452, 50.309, 0.97017, 0.74569, -27.359], [-15.452, 50.309, 0.97012, 0.74560, -27.359]),
          "psi3": ([221.64, 2436.6, -32.497, -85.658, -2546.6], [221.64, 2436.6, -32.497, -85.657, -2546.6])}


def table1(root, independent=None):
    ov = FORMULATIONS["matrix-r"] + ["simulation.progress=false"]
    label = "matrix-r"
    if independent:
        names = independent.split(",")
        ov = FORMULATIONS["matrix-r independent"] + ["simulation.progress=false",
                                                     "simulation.matrix_r.independent=" + repr(names).replace("'", '"')]
        label = f"matrix-r independent {', '.join(names)}"
    pr = Problem(load_config(str(root / "configs" / "fivebar.toml"), ov))
    _, tf = timed(pr.forward)
    g, ta = timed(pr.adjoint)
    print(f"five-bar, {label}, 5 s at dt = 1e-3: forward {tf:.1f} s, adjoint {ta:.1f} s (CPU)")
    print(f"{'':>5} {'design':>6} {'matrix-r':>12} {'SR direct':>10} {'rel':>9} {'Reference':>10} {'rel':>9}")
    for name, (srd, ref) in TABLE1.items():
        for j, d in enumerate(pr.design.names):
            v = g[name][j]
            print(f"{name:>5} {d:>6} {v:>12.6g} {srd[j]:>10.5g} {v / srd[j] - 1:>9.1e} {ref[j]:>10.5g} "
                  f"{v / ref[j] - 1:>9.1e}")


def profile_matrix_r(path, t_end, dt, what):
    """CPU share of matrix-r's forward / direct / adjoint sweep by where the time goes."""
    import cProfile
    import pstats
    from collections import defaultdict
    pr = Problem(load_config(path, FORMULATIONS["matrix-r"] + [f"simulation.t_end={t_end}", f"simulation.dt={dt}",
                                                                "simulation.progress=false"]))
    pr.forward()
    prof = cProfile.Profile(time.process_time)
    prof.runcall({"forward": pr.forward, "direct": pr.direct, "adjoint": pr.adjoint}[what])
    st = pstats.Stats(prof)
    total = max(v[3] for v in st.stats.values())         # cumulative time of the sweep
    cum = defaultdict(float)
    for (fname, _, func), (_, _, _, ct, _) in st.stats.items():
        if "formulations/relative" in fname and func in ("kin", "positions"):
            cum["tree kinematics q, v, a = f(z, ż, z̈) and complex-step Jacobians (relative.py)"] += ct
        elif "formulations/matrix_r" in fname and func in ("_tree_lambda", "_full_eval"):
            cum["tree-joint reactions for the absolute-coordinate state (full-model evaluation)"] += ct
    rest = total - sum(cum.values())
    print(f"  matrix-r {what}: {total:.2f} s CPU under the profiler")
    for b, v in list(cum.items()) + [("the rest: z-space equations (components, RᵀKR ..., LU), sweep", rest)]:
        print(f"    {100 * v / total:5.1f} %  {b}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--links", type=int, default=20)
    ap.add_argument("--t-fivebar", type=float, default=1.0)
    ap.add_argument("--t-chain", type=float, default=0.1)
    ap.add_argument("--dt", type=float, default=1e-2, help="five-bar time step")
    ap.add_argument("--dt-chain", type=float, default=1e-3)
    ap.add_argument("--table1", action="store_true", help="matrix-r five-bar against seed 002 Table 1")
    ap.add_argument("--independent", help="with --table1: comma-separated independent coordinates")
    ap.add_argument("--profile", action="store_true", help="also: where matrix-r's time goes (both models)")
    args = ap.parse_args()
    root = pathlib.Path(__file__).resolve().parents[1]
    if args.table1:
        return table1(root, args.independent)
    run_model("five-bar (4 bodies, 5 joints, 2 DOF; 5 design variables, 3 objectives)",
              str(root / "configs" / "fivebar.toml"), args.t_fivebar, args.dt)
    tmp = pathlib.Path(tempfile.mkdtemp())
    f = tmp / "closed-chain.toml"
    f.write_text(closed_chain_toml(args.links))
    run_model(f"closed chain ({args.links} bodies, {args.links + 1} revolute joints, {args.links - 2} DOF; "
              "5 design variables, 2 objectives)", str(f), args.t_chain, args.dt_chain)
    if args.profile:
        for label, path, t_end, dt in (("five-bar", str(root / "configs" / "fivebar.toml"), args.t_fivebar, args.dt),
                                       ("closed chain", str(f), args.t_chain, args.dt_chain)):
            print(f"\n{label}:")
            for what in ("forward", "direct", "adjoint"):
                profile_matrix_r(path, t_end, dt, what)
    print("\nratios: CPU time over index3 trapezoidal's in the same run (one run)", file=sys.stderr)


if __name__ == "__main__":
    main()
