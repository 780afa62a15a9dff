"""The passive walker's gait (configs/passive-walker.toml, [Zhu 2014] §5.3.2): steps,
step period and length, the angles at heel strike against Hsu's fixed point, and falls.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/passive_walker.py /tmp/pw.h5
    PYTHONPATH=$PWD .venv/bin/python benchmarks/passive_walker.py /tmp/pw.h5 --json /tmp/gait.json

The HDF5 file is a `parmbs simulate` trajectory of the walker (any friction, t_end).
A heel strike is the first step at which a foot that has been more than 5 mm above the
slope presses into it (gap < 0); the leg it belongs to becomes the stance leg.  Per step:
its start time and period, the step length (distance between the two feet at heel
strike), and Hsu's coordinates at heel strike: q_st (new stance leg's thigh angle from
the vertical) and q_sw (trailing thigh), interleg angle q_st − q_sw.  Hsu's fixed point
(the builder's initial state, a heel-strike state of his rigid-impact limit cycle):
q_st = 0.1877, q_sw = −0.2884, interleg 0.4761 rad, step length 2 l sin(0.4761/2) =
0.4716 m.  A fall: the hip less than 0.7 l above the slope (it walks at 0.93–1.0 l).
"""
import argparse
import json
import math
import sys

import h5py
import numpy as np

GAMMA = math.asin(7.25 / 144.0)
N = np.array([math.sin(GAMMA), math.cos(GAMMA)])
FOOT = 0.375                      # foot below the shank's centre of mass (l_s − b1)
HSU = {"q_st": 0.1877, "q_sw": -0.2884}
LIFT = 5e-3                       # a foot counts as swinging once 5 mm above the slope


def load(path):
    with h5py.File(path, "r") as f:
        return f["trajectory/t"][:], f["trajectory/q"][:]


def gait(t, q):
    """Heel strikes, steps and the fall time of a trajectory (module docstring)."""
    # body order of the builder: hip, thigh1, shank1, thigh2, shank2
    thigh = {1: 3 * 1 + 2, 2: 3 * 3 + 2}

    def foot(body):
        th = q[:, 3 * body + 2]
        return q[:, 3 * body:3 * body + 2] + FOOT * np.stack([np.sin(th), -np.cos(th)], 1)

    feet = {1: foot(2), 2: foot(4)}
    gap = {leg: feet[leg] @ N for leg in (1, 2)}
    hip_h = q[:, 0:2] @ N
    strikes = []
    for leg in (1, 2):
        up = False
        for k in range(len(t)):
            if gap[leg][k] > LIFT:
                up = True
            elif up and gap[leg][k] < 0.0:
                strikes.append((t[k], k, leg))
                up = False
    strikes.sort()
    fell = np.nonzero(hip_h < 0.7)[0]
    t_fall = float(t[fell[0]]) if len(fell) else None
    steps = []
    for i, (ts, k, leg) in enumerate(strikes):
        if t_fall is not None and ts > t_fall:
            break
        other = 2 if leg == 1 else 1
        q_st, q_sw = q[k, thigh[leg]], q[k, thigh[other]]
        steps.append({"t": float(ts), "leg": leg,
                      "period": float(strikes[i + 1][0] - ts) if i + 1 < len(strikes) else None,
                      "length": float(np.linalg.norm(feet[leg][k] - feet[other][k])),
                      "q_st": float(q_st), "q_sw": float(q_sw), "interleg": float(q_st - q_sw)})
    return {"steps": steps, "t_fall": t_fall, "t_end": float(t[-1])}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("h5")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    g = gait(*load(a.h5))
    print("| heel strike t [s] | stance leg | period [s] | step length [m] | q_st | q_sw | interleg [rad] |")
    print("|---|---|---|---|---|---|---|")
    print(f"| Hsu's fixed point | | | {2 * math.sin((HSU['q_st'] - HSU['q_sw']) / 2):.4f} | {HSU['q_st']:.4f} "
          f"| {HSU['q_sw']:.4f} | {HSU['q_st'] - HSU['q_sw']:.4f} |")
    for s in g["steps"]:
        per = f"{s['period']:.4f}" if s["period"] is not None else "—"
        print(f"| {s['t']:.4f} | {s['leg']} | {per} | {s['length']:.4f} | {s['q_st']:.4f} | {s['q_sw']:.4f} "
              f"| {s['interleg']:.4f} |")
    print(f"fell at t = {g['t_fall']:.3f} s" if g["t_fall"] is not None else f"no fall in {g['t_end']:.3f} s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(g, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
