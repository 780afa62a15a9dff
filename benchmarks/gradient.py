"""Gradient cost benchmark: gradient ÷ forward wall time for adjoint and direct, and
FD ÷ adjoint, at N = 5, 50, 500 design variables, measured in one run.

Model: a hanging chain of B links (revolute joints) with rotational spring-dampers
between neighbours, generated here.  Design variables are taken in order from the
spring stiffnesses, dampings and natural angles, then link masses, inertias and
centre-of-mass coordinates.  Usage: python benchmarks/gradient.py [--links 60] [--steps 200]
"""
import argparse
import pathlib
import tempfile
import time

import parmbs  # noqa: F401  (before numpy: parmbs/_determinism.py pins numpy's CPU features for same-bytes results)
import numpy as np

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem


def chain_toml(links, steps, ndesign):
    L = 1.0 / links
    out = ['[model]\nname = "chain"\ngravity = [0.0, -9.81]\n[ground]\npoints = { O = [0.0, 0.0] }\n']
    for i in range(links):
        out.append(f'[[bodies]]\nname = "L{i}"\nmass = {0.1 + 0.001 * i}\ninertia = {0.1 * L * L / 12}\n'
                   f'com = [{L / 2}, 0.0]\npoints = {{ O = [0.0, 0.0], E = [{L}, 0.0] }}\n'
                   f'initial = {{ x = {i * L * np.cos(-0.3)}, y = {i * L * np.sin(-0.3)}, angle = -0.3 }}\n'
                   'independent = ["angle"]\n')
    out.append('[[joints]]\ntype = "revolute"\nname = "J0"\na = "ground.O"\nb = "L0.O"\n')
    for i in range(1, links):
        out.append(f'[[joints]]\ntype = "revolute"\nname = "J{i}"\na = "L{i - 1}.E"\nb = "L{i}.O"\n')
    for i in range(1, links):
        out.append(f'[[forces]]\ntype = "rotational_spring"\nname = "K{i}"\na = "L{i - 1}"\nb = "L{i}"\n'
                   f'stiffness = {0.5 + 0.01 * i}\ndamping = 0.01\nangle = 0.0\n')
    out.append(f'[simulation]\nt_end = {steps * 1e-3}\ndt = 1e-3\nprogress = false\n')
    paths = []
    for k in ("stiffness", "damping", "angle"):
        paths += [f"forces.K{i}.{k}" for i in range(1, links)]
    for k in ("mass", "inertia", "com.x", "com.y"):
        paths += [f"bodies.L{i}.{k}" for i in range(links)]
    for j, path in enumerate(paths[:ndesign]):
        out.append(f'[[design]]\nname = "d{j}"\npath = "{path}"\n')
    out.append(f'[[objectives]]\nname = "tip"\nintegrand = "point_deviation_sq"\npoint = "L{links - 1}.E"\n')
    out.append(f'[[objectives]]\nname = "swing"\nintegrand = "angle_sq"\nbody = "L{links // 2}"\n')
    return "".join(out)


def timed(f):
    t0 = time.perf_counter()
    out = f()
    return out, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--links", type=int, default=60)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--n", default="5,50,500")
    ap.add_argument("--fd-max", type=int, default=50, help="measure FD only up to this N")
    args = ap.parse_args()
    rows = []
    tmp = pathlib.Path(tempfile.mkdtemp())
    for N in map(int, args.n.split(",")):
        f = tmp / f"chain{N}.toml"
        f.write_text(chain_toml(args.links, args.steps, N))
        pr = Problem(load_config(str(f)))
        _, t_fwd = timed(pr.forward)
        adj, t_adj = timed(pr.adjoint)
        dir_, t_dir = timed(pr.direct)
        err = max(np.max(np.abs(adj[k] - dir_[k])) / np.max(np.abs(adj[k])) for k in adj)
        if N <= args.fd_max:
            _, t_fd = timed(lambda: pr.finite_differences(1e-5))
            fd_note = "measured"
        else:
            t_fd, fd_note = 2 * N * t_fwd, "2N x measured forward"
        rows.append((N, t_fwd, t_adj, t_dir, t_fd, fd_note, err))
    print(f"\nchain of {args.links} links ({3 * args.links} coordinates), {args.steps} steps, 2 objectives")
    print(f"{'N':>5} {'forward s':>10} {'adjoint s':>10} {'direct s':>9} {'adj/fwd':>8} {'dir/fwd':>8} "
          f"{'FD/adj':>8}  {'FD time':<22} {'|adj-dir|':>9}")
    for N, tf, ta, td, tfd, note, err in rows:
        print(f"{N:>5} {tf:>10.2f} {ta:>10.2f} {td:>9.2f} {ta / tf:>8.2f} {td / tf:>8.2f} {tfd / ta:>8.1f}  "
              f"{note:<22} {err:>9.1e}")


if __name__ == "__main__":
    main()
