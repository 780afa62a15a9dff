"""Forward-run benchmark: five-bar, 5 s at dt = 1e-3 (5000 steps), every stepper.

Prints wall time, steps/s, Newton iterations per step, and where the time goes
(cProfile, grouped by module: component kernels, evaluation/assembly, PETSc solves,
stepper logic).  Usage:  python benchmarks/forward.py [--t-end 5] [--steppers a,b]
"""
import argparse
import cProfile
import pstats
import sys
import time
from collections import defaultdict

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem

STEPPERS = {"trapezoidal": ["simulation.formulation=index3", "simulation.integrator=trapezoidal"],
            "genalpha": ["simulation.formulation=index3", "simulation.integrator=genalpha"],
            "newmark": ["simulation.formulation=index3", "simulation.integrator=newmark",
                        "simulation.beta=0.3025", "simulation.gamma=0.6"],
            "ts-cn": ["simulation.formulation=penalty", "simulation.integrator=ts-cn"],
            "ts-beuler": ["simulation.formulation=penalty", "simulation.integrator=ts-beuler"]}


def bucket(filename, func):
    if "parmbs/model/joints" in filename or "parmbs/model/forces" in filename or "kinematics" in filename \
            or "component.py" in filename:
        return "component kernels (numpy)"
    if "evaluation.py" in filename or "assembly.py" in filename and "solve" not in func:
        return "evaluation + assembly"
    if "petsc4py" in filename or "PETSc" in func or "solve" in func or "KSP" in filename:
        return "PETSc (setValues, LU, solve)"
    if "integrators" in filename or "formulations" in filename:
        return "stepper logic"
    if "numpy" in filename:
        return "numpy internals"
    return "other Python"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="configs/fivebar.toml")
    ap.add_argument("--t-end", type=float, default=5.0)
    ap.add_argument("--steppers", default=",".join(STEPPERS))
    args = ap.parse_args()
    rows = []
    for name in args.steppers.split(","):
        ov = STEPPERS[name] + [f"simulation.t_end={args.t_end}", "simulation.progress=false"]
        try:
            pr = Problem(load_config(args.config, ov))
        except Exception as e:  # a stepper this build lacks
            print(f"{name}: skipped ({e})", file=sys.stderr)
            continue
        t0 = time.perf_counter()
        tr = pr.forward()
        wall = time.perf_counter() - t0
        prof = cProfile.Profile()
        pr2 = Problem(load_config(args.config, ov[:-2] + ["simulation.t_end=0.5", "simulation.progress=false"]))
        prof.runcall(pr2.forward)
        st = pstats.Stats(prof)
        total = sum(v[2] for v in st.stats.values())
        groups = defaultdict(float)
        for (fn, line, func), v in st.stats.items():
            groups[bucket(fn, func)] += v[2]       # tottime
        rows.append((name, tr.steps, wall, tr.steps / wall, tr.newton_its.mean(),
                     {k: v / total for k, v in groups.items()}))
    print(f"\nforward benchmark: {args.config}, t_end = {args.t_end}, dt = 1e-3")
    print(f"{'stepper':<12} {'steps':>6} {'wall s':>8} {'steps/s':>8} {'Newton/step':>11}")
    for name, steps, wall, sps, its, _ in rows:
        print(f"{name:<12} {steps:>6} {wall:>8.2f} {sps:>8.0f} {its:>11.2f}")
    print("\nwhere the time goes (cProfile self time, 500-step run):")
    for name, *_, groups in rows:
        parts = ", ".join(f"{k} {v:.0%}" for k, v in sorted(groups.items(), key=lambda kv: -kv[1]))
        print(f"  {name}: {parts}")


if __name__ == "__main__":
    main()
