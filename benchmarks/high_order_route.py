"""The high-order route to the CasADi goal of issue 18, measured beside the peer in one run:
the five-bar's index-1 ODE on PETSc TSRK (Dormand–Prince 5(4), TSAdapt) with the objectives'
quadrature on the accepted grid by the trapezoidal rule (the default) and by the
fourth-order rule ``simulation.quadrature = "cubic"``, against the best second-order
configuration (Arnold–Brüls generalized-α, fixed steps, compiled) and CasADi/CVODES.

Why: at ∇ψ ≈ 1e-6 second-order schemes need ~10⁴ steps where CVODES takes ~300.  An
explicit fifth-order RK takes a few hundred steps for its states, but ψ = Σ w_k f(x_k) is
summed with trapezoid weights on the accepted grid (TimeGrid.weights, ts.time_weights): a
second-order error in ψ whatever the scheme's order, which at RK's large steps (h ≈ 10 ms)
dominates (ψ 1e-3 off).  ``simulation.quadrature = "cubic"`` (parmbs/integrators/quadrature.py;
a prototype in this script before) replaces w_k by the weights of the composite rule
integrating, over each [t_k, t_{k+1}], the cubic through the four nearest accepted nodes
(t_{k−1} … t_{k+2}; one-sided at the ends): fourth order on a variable grid, and still a
fixed linear combination of the f(x_k), so the sweeps' w_k ∂f/∂x_k terms differentiate it
unchanged (the ``--check`` row: adjoint vs direct with these weights).

Columns as benchmarks/adaptive.py (errors against CVODES at tol 1e-12; CPU =
time.process_time of forward + adjoint; CasADi's gradient CPU likewise).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/high_order_route.py --peer-python /tmp/venv-kernels/bin/python \\
        [--rtols 1e-8,1e-9,1e-10] [--check]

``--dopri-rtols``: rows of the own compiled Dormand–Prince 5(4) (``integrator = "dopri5"``,
formulations/index1_dopri.py) with the fourth-order weights, and the column CPU / peer:
their forward + adjoint CPU divided by the peer's gradient CPU at ``--ratio-tol`` (default
1e-7, where its ∇ψ error is 6.5e-7), both measured in this run (the issue's goal: ≤ 5 at
∇ψ ≈ 1e-6).  ``--repeat R`` runs each dopri5 row R times in this process (min shown, range
printed); ``--no-ts-rk`` skips the PETSc TSRK rows.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/high_order_route.py --peer-python /work/venv-peers/bin/python \\
        --peer-eq-tol 1e-7,1e-8 --no-ts-rk --ab-dts 5e-4 --dopri-rtols 1e-9,1e-10,1e-11 --repeat 3 --check
"""
import parmbs  # noqa: F401  (first: parmbs/_determinism.py)

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import adaptive as A  # noqa: E402

from parmbs.config.loader import load_config  # noqa: E402
from parmbs.sensitivity.problem import Problem  # noqa: E402

RK = ['simulation.formulation="index1"', 'simulation.integrator="ts-rk"']
DOPRI = ['simulation.formulation="index1"', 'simulation.integrator="dopri5"']   # own compiled DP5(4)


CUBIC = ['simulation.quadrature="cubic"']     # fourth-order weights (parmbs/integrators/quadrature.py)


def check(rtol, t_end, route=RK):
    """max relative gap adjoint vs direct, fourth-order weights, index-1 ``route`` at rtol, t_end."""
    pr = Problem(load_config(A.CONFIG, route + CUBIC + [f"simulation.adapt.rtol={rtol}", f"simulation.adapt.atol={rtol}",
                                                     f"simulation.t_end={t_end}"]))
    pr.forward()
    ga, gd = pr.adjoint(), pr.direct()
    return max(float(np.max(np.abs(ga[o] - gd[o])) / np.max(np.abs(gd[o]))) for o in ga)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--peer-python", required=True, help="an interpreter with casadi (benchmarks/adaptive.py)")
    ap.add_argument("--peer-eq-tol", default="1e-7,1e-8")
    ap.add_argument("--rtols", default="1e-8,1e-9,1e-10")
    ap.add_argument("--ab-dts", default="1e-3,5e-4")
    ap.add_argument("--check", action="store_true", help="adjoint vs direct with the fourth-order weights (0.5 s)")
    ap.add_argument("--dopri-rtols", default="", help="rows of the own compiled Dormand–Prince (integrator dopri5), "
                    "cubic weights, with CPU / peer: the peer's gradient CPU at --ratio-tol measured in this run")
    ap.add_argument("--ratio-tol", type=float, default=1e-7, help="the peer tolerance the CPU / peer column divides by")
    ap.add_argument("--no-ts-rk", action="store_true", help="skip the PETSc ts-rk rows (17 s each)")
    ap.add_argument("--repeat", type=int, default=1, help="dopri5 rows: runs of each (one process; min, max printed)")
    a = ap.parse_args()
    pk = A.peer(a.peer_python, 1e-12)
    ref = dict(psi=np.array(pk["psi"]), grad=np.array(pk["grad"]))
    print(f"reference: CasADi CVODES, tol 1e-12, {pk['steps']} steps")
    t_peer = {}
    tols = [float(x) for x in a.peer_eq_tol.split(",") if x]
    if a.dopri_rtols and a.ratio_tol not in tols:
        tols.append(a.ratio_tol)
    for tol in tols:
        pe = A.peer(a.peer_python, tol)
        ep, eg = A.errors(dict(psi=np.array(pe["psi"]), grad=np.array(pe["grad"])), ref)
        t_peer[tol] = pe.get('t_rev_cpu', pe['t_rev'])
        print(f"  peer at tol {tol:g}: {pe['steps']} steps, err psi {ep:.1e}, err grad {eg:.1e}, "
              f"gradient CPU {t_peer[tol]:.3f} s (median of 3)", flush=True)
    print(f"\n{'run':<44} {'steps':>6} {'fwd s':>7} {'fwd+adj s':>10} {'s/step':>8} {'err psi':>9} {'err grad':>9}"
          + (f" {'CPU / peer':>10}" if a.dopri_rtols else ""))

    def row(label, ov, repeat=1, ratio=False):
        runs = [A.run(ov) for _ in range(repeat)]
        r = min(runs, key=lambda x: x["t_grad"])
        ep, eg = A.errors(r, ref)
        lo, hi = min(x['t_grad'] for x in runs), max(x['t_grad'] for x in runs)
        spread = f"  (fwd+adj {lo:.3f}..{hi:.3f} s" + (f", CPU / peer {lo / t_peer[a.ratio_tol]:.2f}.." \
                 f"{hi / t_peer[a.ratio_tol]:.2f}" if ratio else "") + f"; {repeat} runs)" if repeat > 1 else ""
        print(f"{label:<44} {r['steps']:>6} {r['t_fwd']:>7.2f} {r['t_grad']:>10.3f} {r['t_grad'] / r['steps']:>8.1e} "
              f"{ep:>9.1e} {eg:>9.1e}" + (f" {r['t_grad'] / t_peer[a.ratio_tol]:>10.2f}" if ratio else "")
              + spread, flush=True)

    for rt in (float(x) for x in a.dopri_rtols.split(",") if x):
        tol = [f"simulation.adapt.rtol={rt}", f"simulation.adapt.atol={rt}"]
        A.run(DOPRI + tol + CUBIC + ["simulation.t_end=0.01"])     # the kernels compiled or loaded from the cache
        row(f"index1 dopri5 (compiled) rtol={rt:g}, cubic", DOPRI + tol + CUBIC, a.repeat, ratio=True)

    if a.ab_dts:
        A.run(A.STEPPERS["ab"] + ["simulation.t_end=0.01"])   # its kernels compiled or loaded before the timed rows
    for dt in (float(x) for x in a.ab_dts.split(",") if x):
        row(f"AB fixed dt={dt:g} (compiled)", A.STEPPERS["ab"] + [f"simulation.dt={dt}"])
    for rt in (float(x) for x in a.rtols.split(",") if x and not a.no_ts_rk):
        tol = [f"simulation.adapt.rtol={rt}", f"simulation.adapt.atol={rt}"]
        row(f"index1 ts-rk 5dp rtol={rt:g}, trapezoid", RK + tol)
        row(f"index1 ts-rk 5dp rtol={rt:g}, cubic quad", RK + tol + CUBIC)
    if a.check:
        c0 = time.process_time()
        gap = check(1e-8, 0.5)
        print(f"\nadjoint vs direct, cubic quadrature, index1 ts-rk rtol 1e-8, 0.5 s: max rel. gap {gap:.1e} "
              f"({time.process_time() - c0:.1f} s CPU)")
    if a.check and a.dopri_rtols:
        c0 = time.process_time()
        gap = check(1e-8, 0.5, DOPRI)
        print(f"adjoint vs direct, cubic quadrature, index1 dopri5 rtol 1e-8, 0.5 s: max rel. gap {gap:.1e} "
              f"({time.process_time() - c0:.1f} s CPU)")


if __name__ == "__main__":
    sys.exit(main())
