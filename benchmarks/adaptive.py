"""Work–precision of fixed and adaptive steps (issue 18): the five-bar with the
CasADi/CVODES peer as the continuous reference, in one run.

For each parmbs configuration: ψ (3 objectives) and ∇ψ (adjoint, 3 × 5) over the
config's whole horizon (5 s), the relative error of each against the peer at a tight
tolerance (max over objectives; gradient: max over entries of |Δ| / max|∇ψ_o|), and
the CPU time of forward + adjoint (time.process_time, this process only).  Rows:

  fixed     each stepper of --steppers at several dt (a file's own ``adapt`` removed)
  adaptive  the same steppers with simulation.adapt at several rtol (atol = rtol × --atol-ratio)
  adapt+Q   with --objective-atol: the adaptive rows again with the objectives' quadratures in
            the error test (simulation.adapt.objective_atol; integrators/quad_error.py)

Steppers: ``trap+ggl`` (trapezoidal + GGL), ``genalpha`` (Chung–Hulbert ρ∞ 0.9), ``ab``
(generalized-α in the Arnold–Brüls form, ρ∞ from the file), ``file`` (the file's own).
Other models (--config): no peer; the reference is --ref-stepper at --ref-dt and 2 --ref-dt,
Richardson-extrapolated (second order), and the difference of the two is printed as its
error bound.  --set applies to every run (e.g. a shortened horizon).

The peer runs in its own interpreter (casadi is not a parmbs dependency): give it with
--peer-python (a venv with casadi, e.g. `python -m venv /tmp/peer && /tmp/peer/bin/pip
install casadi numpy`); its CPU time for the gradient (CVODES adjoint, median of 3
calls after the build; CPU time of its process, ``time.process_time``, as parmbs's — wall
time on a loaded machine inflated it 16× in one run) is printed beside parmbs's, with the
ratio.  ``--peer-eq-tol``: the peer once more at a looser tolerance, its error against the
reference and its CPU — the "equal accuracy" comparison of issue 18 (CasADi at the tolerance
where its ∇ψ error is that of the parmbs row).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/adaptive.py --peer-python /tmp/venv-kernels/bin/python \
        [--plot /tmp/work-precision.png]
"""
import parmbs  # noqa: F401  (first: parmbs/_determinism.py)

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from parmbs.config.loader import load_config
from parmbs.sensitivity.problem import Problem

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = os.path.join(HERE, "..", "configs", "fivebar.toml")
STEPPERS = {"trap+ggl": ['simulation.integrator="trapezoidal"', 'simulation.stabilization="ggl"'],
            "genalpha": ['simulation.integrator="genalpha"', 'simulation.stabilization="none"'],
            "ab": ['simulation.integrator="genalpha"', 'simulation.genalpha_form="arnold-bruls"'],
            "file": []}


def peer(python, tol):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "peer.json")
        subprocess.run([python, os.path.join(HERE, "peers", "casadi_fivebar.py"), "--dts", "", "--tol", str(tol),
                        "--plugins", "cvodes", "--json", out], check=True, capture_output=True, text=True)
        with open(out) as f:
            return json.load(f)


def run(overrides, config=CONFIG, fixed=False, objective_atol=False):
    cfg = load_config(config, overrides)
    if fixed:
        cfg.simulation.adapt = None           # a file with error-controlled steps: its fixed-step rows
    elif objective_atol is not False:         # None: the quadratures out of the error test, whatever the file says
        cfg.simulation.adapt.objective_atol = objective_atol
    pr = Problem(cfg)
    c0 = time.process_time()
    tr = pr.forward()
    c1 = time.process_time()
    g = pr.adjoint()
    c2 = time.process_time()
    psi = pr.objective_values()
    names = list(pr.design.names)
    obj = list(psi)
    return dict(psi=np.array([psi[o] for o in obj]), grad=np.array([g[o] for o in obj]), names=names,
                steps=tr.steps, rejected=getattr(tr, "rejected", 0), t_fwd=c1 - c0, t_grad=c2 - c0,
                floor=getattr(tr.grid, "floor_hits", 0) if tr.grid is not None else 0,
                h=tr.grid.h if tr.grid is not None else None)


def errors(r, ref):
    e_psi = float(np.max(np.abs(r["psi"] - ref["psi"]) / np.abs(ref["psi"])))
    e_grad = float(np.max(np.abs(r["grad"] - ref["grad"]) / np.max(np.abs(ref["grad"]), axis=1, keepdims=True)))
    return e_psi, e_grad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default=CONFIG, help="another model (no peer: the reference is Richardson)")
    ap.add_argument("--set", action="append", default=[], help="config overrides for every run (e.g. simulation.t_end=1)")
    ap.add_argument("--peer-python", help="an interpreter with casadi (the reference); without it the "
                                           "reference is trapezoidal+GGL at --ref-dt, Richardson-extrapolated")
    ap.add_argument("--peer-tol", type=float, default=1e-12)
    ap.add_argument("--peer-eq-tol", default="", help="comma list: the peer's error and CPU at these tolerances")
    ap.add_argument("--ref-dt", type=float, default=5e-5)
    ap.add_argument("--dts", default="4e-3,2e-3,1e-3,5e-4")
    ap.add_argument("--rtols", default="1e-5,1e-6,1e-7,1e-8")
    ap.add_argument("--steppers", default="trap+ggl,genalpha", help=f"comma-separated, of {sorted(STEPPERS)}")
    ap.add_argument("--ref-stepper", default="trap+ggl")
    ap.add_argument("--atol-ratio", type=float, default=1.0, help="atol = rtol × this")
    ap.add_argument("--objective-atol", type=float, help="adapt+Q rows: simulation.adapt.objective_atol")
    ap.add_argument("--no-plain-adapt", action="store_true", help="with --objective-atol: only the adapt+Q rows")
    ap.add_argument("--plot", help="work-precision PNG")
    a = ap.parse_args()

    if a.peer_python and a.config != CONFIG:
        ap.error("--peer-python: the CasADi peer models the five-bar only")
    if a.peer_python:
        pk = peer(a.peer_python, a.peer_tol)
        ref = dict(psi=np.array(pk["psi"]), grad=np.array(pk["grad"]))
        tight = dict(psi=np.array(pk["psi_tight"]), grad=np.array(pk["grad_tight"]))
        print(f"reference: CasADi CVODES, tol {a.peer_tol:g}, {pk['steps']} steps; gradient CPU {pk['t_rev']:.3f} s "
              f"(median of 3); its own error (tol vs tol/100): psi {errors(ref, tight)[0]:.1e}, "
              f"grad {errors(ref, tight)[1]:.1e}")
        t_peer = pk.get("t_rev_cpu", pk["t_rev"])
        print(f"  its gradient CPU (process_time): {t_peer:.3f} s")
        for tol in (float(x) for x in a.peer_eq_tol.split(",") if x):
            pe = peer(a.peer_python, tol)
            ep, eg = errors(dict(psi=np.array(pe["psi"]), grad=np.array(pe["grad"])), ref)
            print(f"  peer at tol {tol:g}: {pe['steps']} steps, err psi {ep:.1e}, err grad {eg:.1e}, "
                  f"gradient CPU {pe.get('t_rev_cpu', pe['t_rev']):.3f} s (median of 3)", flush=True)
    else:
        h = a.ref_dt
        r1, r2 = (run(a.set + STEPPERS[a.ref_stepper] + [f"simulation.dt={d}"], a.config, fixed=True)
                  for d in (2 * h, h))
        ref = {k: (4 * r2[k] - r1[k]) / 3 for k in ("psi", "grad")}
        print(f"reference: {a.ref_stepper}, Richardson of dt {2 * h:g} and {h:g}; difference of the two "
              f"(an error bound): psi {errors(r1, r2)[0]:.1e}, grad {errors(r1, r2)[1]:.1e}; "
              f"Richardson vs dt {h:g}: psi {errors(r2, ref)[0]:.1e}, grad {errors(r2, ref)[1]:.1e}; "
              f"CPU {r1['t_grad']:.1f} + {r2['t_grad']:.1f} s", flush=True)
        t_peer = None

    rows = []
    steppers = {n: STEPPERS[n] for n in a.steppers.split(",")}
    print(f"\n{'run':<28} {'steps':>6} {'rej':>4} {'floor':>5} {'fwd s':>7} {'fwd+adj s':>10} {'err psi':>9} "
          f"{'err grad':>9}" + (f" {'CPU / peer':>11}" if t_peer else ""), flush=True)

    def row(label, name, mode, r):
        ep, eg = errors(r, ref)
        r["err"] = (ep, eg)
        rows.append((label, name, mode, r))
        print(f"{label:<28} {r['steps']:>6} {r['rejected']:>4} {r['floor']:>5} {r['t_fwd']:>7.2f} {r['t_grad']:>10.2f} "
              f"{ep:>9.1e} {eg:>9.1e}" + (f" {r['t_grad'] / t_peer:>11.1f}" if t_peer else ""), flush=True)

    for name, ov in steppers.items():
        for dt in (float(x) for x in a.dts.split(",") if x):
            row(f"{name} fixed dt={dt:g}", name, "fixed", run(a.set + ov + [f"simulation.dt={dt}"], a.config, fixed=True))
        for rt in (float(x) for x in a.rtols.split(",") if x):
            if name == "genalpha" and rt < 1e-7:
                continue                     # first-order acceleration error: see README
            tol = [f"simulation.adapt.rtol={rt}", f"simulation.adapt.atol={rt * a.atol_ratio}"]
            if not (a.no_plain_adapt and a.objective_atol is not None):
                row(f"{name} adapt rtol={rt:g}", name, "adapt",
                    run(a.set + ov + tol, a.config, objective_atol=None))
            if a.objective_atol is not None:
                row(f"{name} adapt+Q rtol={rt:g}", name, "adapt+Q",
                    run(a.set + ov + tol, a.config, objective_atol=a.objective_atol))
    if a.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axs = plt.subplots(1, 2, figsize=(11, 4.2))
        for ax, i, what in ((axs[0], 0, "ψ"), (axs[1], 1, "∇ψ")):
            for name in steppers:
                for mode, mk in (("fixed", "o-"), ("adapt", "s--"), ("adapt+Q", "^-.")):
                    pts = sorted((r["t_grad"], r["err"][i]) for _, n, m, r in rows if n == name and m == mode)
                    if pts:
                        ax.loglog(*zip(*pts), mk, label=f"{name} {mode}")
            if t_peer:
                ax.axvline(t_peer, color="k", lw=0.8, ls=":", label="CasADi CVODES (gradient CPU)")
            ax.set_xlabel("CPU s, forward + adjoint")
            ax.set_ylabel(f"relative error of {what}")
            ax.grid(True, which="both", alpha=0.3)
        axs[0].legend(fontsize=8)
        fig.suptitle(f"{os.path.basename(a.config)}: work-precision of fixed and adaptive steps")
        fig.tight_layout()
        fig.savefig(a.plot, dpi=110)
        print(f"wrote {a.plot}")


if __name__ == "__main__":
    sys.exit(main())
