"""The topology crank optimized by MMA on 2 ranks (issue 6), on a COARSE mesh, one run:
``parmbs optimize`` then ``parmbs plot`` (history PNG, density PNG and XDMF), then the
time per design iteration from the record.

    OMPI_MCA_mpi_yield_when_idle=1 .venv/bin/python benchmarks/topopt_run.py
    .venv/bin/python benchmarks/topopt_run.py --nx 100 --ny 40 --t-end 2.0 --max-it 40
    .venv/bin/python benchmarks/topopt_run.py --plot-only          # re-plot an existing record

configs/topopt-crank.toml ships 500 × 200 = 10^5 elements and 200 steps; at ~10 s CPU
per step there (benchmarks/topopt_crank.py) one design iteration takes hours on this
machine, so this script overrides the mesh (``continua.crank.nx/ny``, the pin at node
[0.9 nx, ny/2]) and the horizon (``simulation.t_end``, ``simulation.dt``) with ``--set``
— the model is otherwise the shipped one, and so is the ``[optimize]`` section (MMA,
V = mean(x) ≤ 0.5) except ``max_it``.

Time per design iteration: the record's history column ``wall_s`` is the cumulative wall
time after evaluation k (forward + adjoint at x_k, record write); consecutive
differences are one MMA update + state write + the next evaluation — one design
iteration.  Printed: their mean, min and max over iterations 1..K.
"""
import argparse
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
CONFIG = os.path.join(ROOT, "configs", "topopt-crank.toml")


def overrides(a):
    return [f"continua.crank.nx={a.nx}", f"continua.crank.ny={a.ny}",
            f"continua.crank.points.pin=[{9 * a.nx // 10}, {a.ny // 2}]",
            f"simulation.t_end={a.t_end}", f"simulation.dt={a.dt}",
            f"optimize.max_it={a.max_it}"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nx", type=int, default=80)
    ap.add_argument("--ny", type=int, default=32)
    ap.add_argument("--t-end", type=float, default=1.0)
    ap.add_argument("--dt", type=float, default=0.02)
    ap.add_argument("--max-it", type=int, default=30)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("-o", "--output", default=os.path.join(ROOT, "out", "topopt", "topopt-crank.h5"))
    ap.add_argument("--plot-only", action="store_true", help="skip the optimization, use the existing record")
    a = ap.parse_args()
    bindir = os.path.dirname(sys.executable)
    parmbs = os.path.join(bindir, "parmbs")
    env = dict(os.environ, OMPI_MCA_mpi_yield_when_idle=os.environ.get("OMPI_MCA_mpi_yield_when_idle", "1"))
    out = os.path.abspath(a.output)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    sets = [x for s in overrides(a) for x in ("--set", s)]
    print(f"mesh {a.nx} x {a.ny} = {a.nx * a.ny} elements (design variables), "
          f"t_end {a.t_end} s, dt {a.dt} s ({round(a.t_end / a.dt)} steps), max_it {a.max_it}, "
          f"{a.ranks} ranks", flush=True)
    if not a.plot_only:
        if os.path.exists(out):
            os.remove(out)
        cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", str(a.ranks), parmbs,
               "optimize", CONFIG, "-o", out, *sets]
        print("$ " + " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True, env=env)
    cmd = [parmbs, "plot", out]
    print("$ " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, env=env)

    import h5py
    with h5py.File(out, "r") as f:
        ds = f["optimize/history"]
        cols = ds.attrs["columns"].split(",")
        h = ds[:int(ds.attrs["rows"])]
        ne = int(f["optimize"].attrs["evaluations"])
        vf = f["optimize/x"][:ne].mean(axis=1)      # V(x) = mean element density (one field)
    wall = h[:, cols.index("wall_s")]
    it, psi, viol = h[:, 0], h[:, cols.index("objective")], h[:, cols.index("max_violation")]
    d = np.diff(wall)
    print(f"iterations: {int(it[-1])} MMA updates, {len(h)} evaluations")
    print(f"objective psi: first {psi[0]:.6e}, last {psi[-1]:.6e}, ratio {psi[-1] / psi[0]:.4f}")
    print(f"max violation: first {viol[0]:.3e}, last {viol[-1]:.3e} "
          f"(volume fraction first {vf[0]:.4f}, last {vf[-1]:.4f})")
    print(f"first evaluation (forward + adjoint): {wall[0]:.2f} s wall")
    if len(d):
        print(f"time per design iteration (MMA update + forward + adjoint + record), "
              f"iterations 1..{len(d)}: mean {d.mean():.2f} s, min {d.min():.2f} s, max {d.max():.2f} s wall; "
              f"total {wall[-1]:.1f} s")


if __name__ == "__main__":
    main()
