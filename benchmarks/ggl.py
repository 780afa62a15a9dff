"""Index-3 vs GGL-stabilized (index-2) Newmark steppers: objective errors against a fine
reference, and the size of the (−1)ᵏ mode of a and λ.

    .venv/bin/python benchmarks/ggl.py configs/fivebar.toml --run trapezoidal:none:1e-3 \\
        --run trapezoidal:ggl:1e-4 ... --ref trapezoidal:ggl:5e-5 --ref trapezoidal:ggl:2.5e-5 \\
        [--set k=v ...] [--json OUT.jsonl]

Each ``--run`` / ``--ref`` is INTEGRATOR:STABILIZATION:DT (genalpha uses the file's or
the ``--set`` ρ∞).  The reference is the Richardson extrapolation of the two ``--ref``
runs, ψ_ref = ψ(h₂) + (ψ(h₂) − ψ(h₁)) / ((h₁/h₂)² − 1) (second-order schemes), and its
own uncertainty is printed as |ψ_ref − ψ(h₂)|.  Per run: ψ, |ψ − ψ_ref| / |ψ_ref| per
objective, and the alternating part of a and λ at the end of the run (median over the
last 50 steps of ‖x_{k+1} − 2x_k + x_{k−1}‖∞ / 4, guard.py's N) against the smooth
estimate of that second difference from steps 10 apart (‖x_{k+10} − 2x_k + x_{k−10}‖∞
/ 400, blind to a (−1)ᵏ mode): ratio ≈ 1 when a and λ are smooth.  The instability
guard is switched off so that the unstable runs finish and can be measured.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import parmbs  # noqa: E402,F401 — before numpy (its SIMD math: parmbs/_determinism.py)
import numpy as np  # noqa: E402
from parmbs.config.loader import load_config      # noqa: E402
from parmbs.sensitivity.problem import Problem     # noqa: E402


def alternating(X):
    """(N, S): end-of-run (−1)ᵏ part and smooth second-difference estimate of X (steps × k)."""
    N = np.max(np.abs(X[2:] - 2 * X[1:-1] + X[:-2]), axis=1) / 4
    S = np.max(np.abs(X[20:] - 2 * X[10:-10] + X[:-20]), axis=1) / 400
    return float(np.median(N[-50:])), float(np.max(S))


def run(path, sets, spec):
    integ, stab, dt = spec.split(":")
    cfg = load_config(path, list(sets) + [f"simulation.integrator={integ}", f"simulation.stabilization={stab}",
                                          f"simulation.dt={dt}", "simulation.guard=false",
                                          "simulation.progress=false"])
    t0 = time.process_time()
    pr = Problem(cfg)
    tr = pr.forward()
    cpu = time.process_time() - t0
    Na, Sa = alternating(tr.a)
    Nl, Sl = alternating(tr.lam)
    label = integ + (f" ρ∞={cfg.simulation.rho_inf:g}" if integ == "genalpha" else "")
    return {"spec": spec, "label": label, "stabilization": stab, "dt": float(dt), "steps": pr.nsteps,
            "cpu_s": cpu, "values": pr.objective_values(), "N_a": Na, "S_a": Sa, "N_lam": Nl, "S_lam": Sl,
            "newton_its": float(np.mean(tr.newton_its))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("config")
    ap.add_argument("--run", action="append", default=[])
    ap.add_argument("--ref", action="append", default=[], help="two runs, coarser first")
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--json")
    a = ap.parse_args()
    if len(a.ref) != 2:
        ap.error("give two --ref runs")
    rows = [run(a.config, a.set, s) for s in a.ref]
    (r1, r2) = rows
    q = (r1["dt"] / r2["dt"]) ** 2 - 1
    ref = {k: r2["values"][k] + (r2["values"][k] - r1["values"][k]) / q for k in r2["values"]}
    print(f"reference (Richardson of {a.ref[0]} and {a.ref[1]}): "
          + ", ".join(f"{k} = {v:.10e} (±{abs(v - r2['values'][k]) / abs(v):.1e} rel.)" for k, v in ref.items()),
          flush=True)
    names = list(ref)
    print("| integrator | stabilization | dt | steps | CPU s | Newton its | "
          + " | ".join(f"{k} | rel. error" for k in names) + " | N_a / smooth | N_λ / smooth |")
    print("|---" * (6 + 2 * len(names) + 2) + "|")
    for spec in a.run:
        try:
            r = run(a.config, a.set, spec)
        except Exception as e:     # noqa: BLE001 — a failed run is a row
            print(f"| {spec} | **fails**: {type(e).__name__}: {str(e).splitlines()[0]} |", flush=True)
            continue
        r["rel_err"] = {k: abs(r["values"][k] - ref[k]) / abs(ref[k]) for k in names}
        cells = " | ".join(f"{r['values'][k]:.8e} | {r['rel_err'][k]:.1e}" for k in names)
        print(f"| {r['label']} | {r['stabilization']} | {r['dt']:g} | {r['steps']} | {r['cpu_s']:.0f} | "
              f"{r['newton_its']:.2f} | {cells} | {r['N_a'] / r['S_a']:.2g} | {r['N_lam'] / r['S_lam']:.2g} |",
              flush=True)
        if a.json:
            with open(a.json, "a") as f:
                f.write(json.dumps(dict(r, reference=ref)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
