"""Seed 000 §6.2 (Eq. 55) optimized by ``parmbs optimize`` at two time steps: compare
the records of configs/rigid-spring-beam-opt.toml run at dt = 1e-3 and 5e-4.

    parmbs optimize configs/rigid-spring-beam-opt.toml -o A.h5 --set simulation.dt=1e-3 [--set simulation.t_end=T]
    parmbs optimize configs/rigid-spring-beam-opt.toml -o B.h5 --set simulation.dt=5e-4 [--set simulation.t_end=T]
    .venv/bin/python benchmarks/rigid_spring_beam_opt.py A.h5 B.h5 [--cross]

Prints, per record, the last (or final) design D = (X_D, Y_D), ψ, l = |C − D|, the MMA
updates and evaluations, whether it finished; then |D_A − D_B| (the issue's test:
≤ 1e-3) and, with ``--cross``, ψ of each optimum under the other time step (two forward
runs: is a difference of the optima a difference of the discrete objectives?).
"""
import argparse

import h5py
import numpy as np

C = np.array([1.5, 0.0])          # the spring's beam end, [parameters] X_C, Y_C


def record(path):
    with h5py.File(path, "r") as f:
        g = f["optimize"]
        k = int(g.attrs["evaluations"])
        x, fv = g["x"][:k], g["f"][:k]
        hist = g["history"][:int(g["history"].attrs["rows"])]
        finished = bool(g.attrs["finished"])
    return dict(x=x, f=fv, hist=hist, finished=finished, D=x[-1], psi=fv[-1])


def psi_at(config, dt, t_end, D):
    from parmbs.config import load_config
    from parmbs.config.paths import with_values
    from parmbs.sensitivity.problem import Problem
    cfg = load_config(config, [f"simulation.dt={dt}", f"simulation.t_end={t_end}", "simulation.progress=false"])
    pr = Problem(with_values(cfg, {"ground.points.D.x": D[0], "ground.points.D.y": D[1]}))
    pr.forward()
    return pr.objective_values()["dB"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("records", nargs=2)
    ap.add_argument("--cross", action="store_true", help="ψ of each optimum at the other dt (2 forward runs)")
    ap.add_argument("--config", default="configs/rigid-spring-beam-opt.toml")
    ap.add_argument("--dt", nargs=2, type=float, default=[1e-3, 5e-4])
    ap.add_argument("--t-end", type=float, default=1.0)
    a = ap.parse_args()
    recs = [record(r) for r in a.records]
    for path, dt, r in zip(a.records, a.dt, recs):
        it = int(r["hist"][-1, 0]) if len(r["hist"]) else 0
        print(f"dt = {dt:g}: {path}: {'finished' if r['finished'] else 'NOT finished'}, {it} iterations (MMA updates or TAO iterations), "
              f"{len(r['f'])} evaluations")
        print(f"    D = ({r['D'][0]:.6f}, {r['D'][1]:.6f}) m, l = {np.hypot(*(r['D'] - C)):.6f} m, "
              f"psi = {r['psi']:.6e} (start {r['f'][0]:.6e}); last history step column "
              f"{r['hist'][-1, 3] if len(r['hist']) else float('nan'):.2e}")
    dD = recs[0]["D"] - recs[1]["D"]
    print(f"|D(dt={a.dt[0]:g}) - D(dt={a.dt[1]:g})| = {np.linalg.norm(dD):.3e} m  (max component "
          f"{np.max(np.abs(dD)):.3e}); psi differs by {abs(recs[0]['psi'] - recs[1]['psi']) / recs[1]['psi']:.2e} "
          "relative")
    if a.cross:
        for i, j in ((0, 1), (1, 0)):
            v = psi_at(a.config, a.dt[j], a.t_end, recs[i]["D"])
            print(f"  psi(D of dt={a.dt[i]:g}) at dt={a.dt[j]:g}: {v:.6e}")


if __name__ == "__main__":
    main()
