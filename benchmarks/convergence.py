"""dt-convergence of the shipped configs: objective and gradient at dt and dt/2.

    .venv/bin/python benchmarks/convergence.py configs/fivebar.toml [--set k=v ...]
    .venv/bin/python benchmarks/convergence.py configs/*.toml --json /tmp/conv.json

For each config (with the ``--set`` overrides applied to both runs) the forward run
and the adjoint gradient are computed at the file's dt and at dt/2 (same t_end, so
twice the steps); the row reports, per objective, ψ(dt), ψ(dt/2) and their relative
change |ψ(dt) − ψ(dt/2)| / |ψ(dt/2)|, and ‖∇ψ(dt) − ∇ψ(dt/2)‖₂ / ‖∇ψ(dt/2)‖₂ for the
gradient (over all design variables, fields included).  "converged" is the issue-18
criterion: both changes ≤ 1e-3 for every objective.  For a scheme of order p the
change between dt and dt/2 is (1 − 2^−p) ≈ ¾ (p = 2) of the error at dt, so the row
bounds the discretization error of the shipped setting to within a factor ~4/3.

A config with error-controlled steps (``simulation.adapt``) is compared at its rtol and
rtol/10 instead (issue 18: "dt, dt/2 (or rtol, rtol/10)"); the dt column then shows
"rtol=…" and the steps taken are in ``--json``.  For a tolerance-proportional global
error the change is 0.9 of the error at rtol.

A config with load cases (``[[scenarios]]``) is compared on what ``parmbs gradient``
reports for it: the weighted sum Σ_s w_s ψ_s and its gradient (under the objective's
name), and each scenario's ψ_s, ∇ψ_s (as ``NAME [SCENARIO]``); every one must pass.

A run that fails (Newton, singular matrix, the instability guard) is a row with the
failure's one-line message instead of numbers.  Rows are printed as Markdown table
rows (the table in benchmarks/README.md) and, with ``--json``, written to a file.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import parmbs                                       # noqa: E402,F401  (before numpy: one SIMD choice, DESIGN)
import numpy as np                                  # noqa: E402
from parmbs.config.loader import load_config      # noqa: E402
from parmbs.sensitivity.problem import Problem     # noqa: E402

#: the issue-18 criterion on the relative change between dt and dt/2
TOL = 1e-3


def run(path, sets, dt, rtol=None):
    """(ψ values, adjoint gradients, CPU seconds, steps) at time step dt (fixed steps)
    or, with ``rtol``, adaptive steps at that tolerance (dt the first step)."""
    extra = [f"simulation.dt={dt!r}"] if rtol is None else [f"simulation.adapt.rtol={rtol!r}"]
    cfg = load_config(path, list(sets) + extra + ["simulation.progress=false"])
    t0 = time.process_time()
    if cfg.scenarios:
        return (*run_scenarios(cfg), time.process_time() - t0, None)
    pr = Problem(cfg)
    pr.forward()
    vals = pr.objective_values()
    grads = pr.adjoint() if pr.design.ncols else {}
    return vals, grads, time.process_time() - t0, pr.nsteps


def run_scenarios(cfg):
    """Load cases: the weighted sums Σ_s w_s ψ_s, Σ_s w_s ∇ψ_s by objective name (what
    ``parmbs gradient`` reports) and each scenario's own as ``NAME [SCENARIO]``."""
    from parmbs.sensitivity.scenarios import resolve_scenarios
    vals, grads, per_v, per_g = {}, {}, {}, {}
    for sc in resolve_scenarios(cfg):
        pr = Problem(sc.config)
        pr.forward()
        v = pr.objective_values()
        g = pr.adjoint() if pr.design.ncols else {}
        for o in v:
            vals[o] = vals.get(o, 0.0) + sc.weight * v[o]
            per_v[f"{o} [{sc.name}]"] = v[o]
            if o in g:
                grads[o] = grads.get(o, 0.0) + sc.weight * np.asarray(g[o], float)
                per_g[f"{o} [{sc.name}]"] = g[o]
    return {**vals, **per_v}, {**grads, **per_g}


def gnorm(g):
    return float(np.linalg.norm(np.asarray(g, dtype=float)))


def rel(a, b):
    d = abs(b) if np.ndim(b) == 0 else gnorm(b)
    return (abs(a - b) if np.ndim(a) == 0 else gnorm(np.asarray(a) - np.asarray(b))) / max(d, 1e-300)


def converge(path, sets):
    cfg = load_config(path, sets)
    sim = cfg.simulation
    dt = sim.dt
    label = sim.integrator + (f" ρ∞={sim.rho_inf:g}" if sim.integrator == "genalpha" else "")
    if sim.integrator == "genalpha" and getattr(sim, "genalpha_form", "chung-hulbert") != "chung-hulbert":
        label += " Arnold–Brüls"
    if getattr(sim, "stabilization", "none") != "none":
        label += f" + {sim.stabilization.upper()}"
    if sim.formulation != "index3":
        label = f"{sim.formulation}/{label}"
    row = {"config": os.path.basename(path), "sets": list(sets), "integrator": label, "dt": dt,
           "t_end": sim.t_end, "objectives": {}}
    adapt = getattr(sim, "adapt", None)
    if adapt is not None:
        row["rtol"] = adapt.rtol
        label += f" adaptive (atol {adapt.atol:g})"
        row["integrator"] = label
    try:
        if adapt is None:
            v1, g1, c1, n1 = run(path, sets, dt)
            v2, g2, c2, n2 = run(path, sets, dt / 2)
        else:
            v1, g1, c1, n1 = run(path, sets, dt, adapt.rtol)
            v2, g2, c2, n2 = run(path, sets, dt, adapt.rtol / 10)
    except Exception as e:      # noqa: BLE001 — a failed run is a row, not a crash
        row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        return row
    row["cpu_s"] = [c1, c2]
    row["steps"] = [n1, n2]
    worst = 0.0
    for name in v1:
        o = {"value": [v1[name], v2[name]], "rel_value": rel(v1[name], v2[name])}
        if name in g1:
            o["grad_norm"] = [gnorm(g1[name]), gnorm(g2[name])]
            o["rel_grad"] = rel(g1[name], g2[name])
        worst = max(worst, o["rel_value"], o.get("rel_grad", 0.0))
        row["objectives"][name] = o
    row["worst"] = worst
    row["converged"] = bool(worst <= TOL)
    return row


def markdown(row):
    step = f"rtol={row['rtol']:g}" if "rtol" in row else f"{row['dt']:g}"
    head = f"| `{row['config']}`{' ' + ' '.join(row['sets']) if row['sets'] else ''} | {row['integrator']} | " \
           f"{step} | {row['t_end']:g} |"
    if "error" in row:
        return [head + f" — | — | — | — | — | — | **fails**: {row['error']} |"]
    lines = []
    for i, (name, o) in enumerate(row["objectives"].items()):
        lead = head if i == 0 else "| | | | |"
        g = (f"{o['grad_norm'][0]:.6e} | {o['grad_norm'][1]:.6e} | {o['rel_grad']:.1e}"
             if "rel_grad" in o else "— | — | —")
        verdict = ("ok" if row["converged"] else "**> 1e-3**") if i == 0 else ""
        lines.append(f"{lead} {name} | {o['value'][0]:.6e} | {o['value'][1]:.6e} | {o['rel_value']:.1e} | "
                     f"{g} | {verdict} |")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("configs", nargs="+")
    ap.add_argument("--set", action="append", default=[], help="override k=v (all configs)")
    ap.add_argument("--json", help="append the rows to this JSON-lines file")
    a = ap.parse_args()
    print("| config | integrator | dt | t_end | objective | ψ(dt) | ψ(dt/2) | rel. change | "
          "‖∇ψ(dt)‖ | ‖∇ψ(dt/2)‖ | rel. change | ≤ 1e-3 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    bad = 0
    for path in a.configs:
        row = converge(path, a.set)
        for line in markdown(row):
            print(line, flush=True)
        if a.json:
            with open(a.json, "a") as f:
                f.write(json.dumps(row) + "\n")
        bad += not row.get("converged", False)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
