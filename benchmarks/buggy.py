"""The buggy of seed 002 §4.2 in its two manoeuvres (docs/buggy.md): the ratios, from one run.

    python benchmarks/buggy.py                    # both manoeuvres, windows below
    python benchmarks/buggy.py --full             # the whole 4.5 s / 12 s manoeuvres (slow)
    python benchmarks/buggy.py --no-fd            # skip the 2 × 5 forward runs of FD

For each manoeuvre, CPU seconds of this process (``time.process_time``: other jobs on
the shared cores do not inflate them; the run is serial) of

* one forward run            → forward CPU ÷ simulated time  (< 1: faster than real time)
* one adjoint gradient       → adjoint ÷ forward             (5 design variables, eq. 77)
* one direct gradient        → direct ÷ forward
* central finite differences → FD ÷ adjoint                  (2 × 5 forward runs, relative step 1e-5)

and the gradients' agreement (max relative |adjoint − direct|, normwise |adjoint − FD|).

Windows (default, so that the FD runs fit in minutes): the step descent from 0.30 s
before the front wheels reach the step's edge to 0.30 s after the rear wheels leave it
(the step moved to x₀ = 0.40 m, 1.0 s at h = 1 ms; the dynamics of the coasting vehicle
before the step are the static equilibrium, see tests/test_buggy.py), and the lane
change's first steering pulse (4.0 s at h = 10 ms, pulse at 0.5–3.5 s).  Per-step costs,
and so the ratios, do not depend on the window; ``--full`` runs the manoeuvres as shipped.
"""
import argparse
import pathlib

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem
from vehicle_ratios import measure

ROOT = pathlib.Path(__file__).resolve().parent.parent
WINDOWS = {
    "step-descent": ["spatial.road.x0=0.4", "simulation.t_end=1.0"],
    "lane-change": ["simulation.t_end=4.0", "spatial.joints.steer_fl.function.starts=[0.5, 20.0]",
                    "spatial.joints.steer_fr.function.starts=[0.5, 20.0]"],
}


def run(name, extra, fd):
    cfg = load_config(str(ROOT / "configs" / f"buggy-{name}.toml"), extra + ["simulation.progress=false"])
    pr = Problem(cfg)
    return measure(pr, f"\n== buggy-{name} {' '.join(extra)}",
                   (lambda: pr.finite_differences(1e-5)) if fd else None,
                   f"2 x {len(pr.design.names)} forward runs", indent="  ")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="whole manoeuvres as shipped")
    ap.add_argument("--no-fd", action="store_true")
    ap.add_argument("--only", choices=list(WINDOWS))
    a = ap.parse_args()
    rows = {}
    for name, window in WINDOWS.items():
        if a.only and name != a.only:
            continue
        rows[name] = run(name, [] if a.full else window, not a.no_fd)
    print("\nmanoeuvre        forward/simulated  adjoint/forward  direct/forward  FD/adjoint")
    for name, r in rows.items():
        print(f"{name:16s} {r['fwd']:17.2f} {r['adj']:16.2f} {r['dir']:15.2f} {r.get('fd', float('nan')):11.2f}")


if __name__ == "__main__":
    main()
