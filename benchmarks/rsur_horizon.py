"""Why configs/spatial-rsur-natural.toml is not dt-converged over 1 s (issue 24): one
setting of the file run at dt, dt/2, dt/4, … over the horizon, and what each run does.

    .venv/bin/python benchmarks/rsur_horizon.py [--t-end 1.0] [--dt 2.5e-3] [--halvings 3]
        [--set k=v ...] [--json out.jsonl]

For each dt = dt₀/2ʲ (j = 0 … halvings) one forward run and one adjoint gradient of the
file (with ``--set`` overrides), and along the forward run:

* the selection of the independent coordinate at every step (``reselect``: its switches,
  time and coordinate) and min over the run of σ_min(Φ_z D)/σ_min(Φ_z) of the used
  selection (the fold monitor's ratio; matrix-r only);
* the mechanical energy E = T + V (StateEval.energy; the model is conservative: gravity
  only, no driver, no damping) and its largest deviation from E₀ — the trapezoidal rule on the ODE in z^i conserves E to O(h²), so a
  drift that does not fall 4× per halving is discretization error, one that does is the
  motion;
* the crank's largest angular rate (the violent last 0.2 s of the 1 s run).

Then, between successive halvings: the relative change of ψ and ‖∇ψ‖ (the convergence
row's measure, max over objectives), their ratio (≈ 4 for a second-order scheme in its
asymptotic range), and the largest difference of the body positions at common times
against the finest run, per 0.1 s window (where along the run the discretization error
comes from).
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import parmbs                                       # noqa: E402,F401  (before numpy: one SIMD choice, DESIGN)
import numpy as np                                  # noqa: E402
from parmbs.config.loader import load_config        # noqa: E402
from parmbs.model.evaluation import StateEval       # noqa: E402
from parmbs.sensitivity.problem import Problem      # noqa: E402

CONFIG = os.path.join(os.path.dirname(__file__), "..", "configs", "spatial-rsur-natural.toml")


def one_run(path, sets, dt, t_end):
    cfg = load_config(path, list(sets) + [f"simulation.dt={dt!r}", f"simulation.t_end={t_end!r}",
                                          "simulation.progress=false"])
    c0 = time.process_time()
    pr = Problem(cfg)
    st = pr.stepper
    sel, ratio = [], []
    step = getattr(st, "step", None)
    if hasattr(st, "ind"):                      # matrix-r independent: record the selection of each step
        def rec(k, t, x, p, _step=step):
            out = _step(k, t, x, p)
            sel.append((t, tuple(st.ind_names)))
            P = st._phiz[:st.ml] if st._phiz is not None else None
            if P is not None:
                s = np.linalg.svd(P, compute_uv=False)[-1]
                sD = np.linalg.svd(P[:, st.dep], compute_uv=False)[-1]
                ratio.append((t, sD / s))
            return out
        st.step = rec
    traj = pr.forward()
    vals = pr.objective_values()
    cpu_fwd = time.process_time() - c0
    if hasattr(st, "ind"):
        st.step = step                          # the adjoint sweep's own calls (tangent/adjoint_step)
    grads = {k: np.asarray(v, dtype=float).tolist() for k, v in pr.adjoint().items()}
    cpu = time.process_time() - c0
    p = pr.sys.p
    E = []
    for k, t in enumerate(traj.t):
        ev = StateEval(pr.sys, t, traj.q[k], traj.v[k], traj.a[k], traj.lam[k], p)
        E.append(ev.energy())
    E = np.array(E)
    w = crank_rate(pr, traj)
    switches = [(t, s) for (t, s), (_, s0) in zip(sel[1:], sel[:-1]) if s != s0]
    return {"dt": dt, "steps": len(traj.t) - 1, "values": vals, "grads": grads, "cpu_fwd": cpu_fwd, "cpu": cpu,
            "t": np.asarray(traj.t).tolist(), "q": np.asarray(traj.q).tolist(),
            "E0": float(E[0]), "dE": float(np.max(np.abs(E - E[0]))), "E_t": E.tolist(),
            "crank_rate": w, "switches": [(float(t), list(s)) for t, s in switches],
            "start_sel": list(sel[0][1]) if sel else None,
            "min_ratio": (float(min(r for _, r in ratio)), float(ratio[int(np.argmin([r for _, r in ratio]))][0]))
            if ratio else None}


def crank_rate(pr, traj):
    """max_t |ω| of the crank: ω = 2 |ṗ| for its unit Euler parameters p (ṗ ⊥ p)."""
    names = pr.sys.spatial.coordinate_names()
    i = names.index("crank.e0")
    v = np.asarray(traj.v)[:, i:i + 4]
    return float(np.max(2.0 * np.linalg.norm(v, axis=1)))


def rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default=CONFIG)
    ap.add_argument("--t-end", type=float, default=1.0)
    ap.add_argument("--dt", type=float, default=2.5e-3)
    ap.add_argument("--halvings", type=int, default=3)
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--json", help="append the runs (without trajectories) to this JSON-lines file")
    a = ap.parse_args()
    runs = []
    for j in range(a.halvings + 1):
        r = one_run(a.config, a.set, a.dt / 2 ** j, a.t_end)
        runs.append(r)
        sw = ", ".join(f"{'/'.join(s)} at {t:.4f}" for t, s in r["switches"]) or "none"
        print(f"dt = {r['dt']:.6g} ({r['steps']} steps, CPU {r['cpu_fwd']:.1f} s fwd, {r['cpu']:.1f} s fwd + adj): "
              f"start {r['start_sel']}, switches: {sw}", flush=True)
        if r["min_ratio"]:
            print(f"    min σ_min(Φ_z D)/σ_min(Φ_z) of the used selection {r['min_ratio'][0]:.3g} "
                  f"at t = {r['min_ratio'][1]:.4f}")
        print(f"    energy E0 = {r['E0']:.6g} J, max |E - E0| = {r['dE']:.3e} J; crank max |ω| = "
              f"{r['crank_rate']}", flush=True)
        print("    ψ " + ", ".join(f"{k} {v:.10g}" for k, v in r["values"].items()), flush=True)
        if a.json:
            with open(a.json, "a") as f:
                f.write(json.dumps({k: v for k, v in r.items() if k not in ("q", "t", "E_t")}
                                   | {"sets": a.set, "t_end": a.t_end}) + "\n")
    print("\nsuccessive halvings (max over objectives of the relative change; ratio to the next):")
    dv, dg = [], []
    for r0, r1 in zip(runs[:-1], runs[1:]):
        dv.append(max(abs(r0["values"][k] - r1["values"][k]) / abs(r1["values"][k]) for k in r1["values"]))
        dg.append(max(rel(r0["grads"][k], r1["grads"][k]) for k in r1["grads"]))
    for i, (r0, r1) in enumerate(zip(runs[:-1], runs[1:])):
        rv = f" (ratio {dv[i - 1] / dv[i]:.2f} / {dg[i - 1] / dg[i]:.2f})" if i else ""
        per = "; ".join(f"{k} {abs(r0['values'][k] - r1['values'][k]) / abs(r1['values'][k]):.1e}/"
                        f"{rel(r0['grads'][k], r1['grads'][k]):.1e}" for k in r1["values"])
        print(f"  dt {r0['dt']:.4g} -> {r1['dt']:.4g}: ψ {dv[i]:.2e}, ∇ψ {dg[i]:.2e}{rv}   [{per}]")
    fine = runs[-1]
    tf, qf = np.asarray(fine["t"]), np.asarray(fine["q"])
    edges = np.arange(0.0, a.t_end + 1e-12, 0.1)
    print(f"\nmax |q(t) - q_finest(t)| per 0.1 s window (finest dt = {fine['dt']:.4g}), and max |E - E0| [J]:")
    print("  window    " + "  ".join(f"dt={r['dt']:.4g}" for r in runs[:-1]))
    for lo, hi in zip(edges[:-1], edges[1:]):
        cells = []
        for r in runs[:-1]:
            t, q = np.asarray(r["t"]), np.asarray(r["q"])
            idx = np.searchsorted(tf, t)
            ok = (idx < len(tf)) & (t > lo - 1e-12) & (t <= hi + 1e-12)
            ok &= np.abs(tf[np.minimum(idx, len(tf) - 1)] - t) < 1e-9
            err = np.max(np.abs(q[ok] - qf[idx[ok]])) if ok.any() else np.nan
            Ew = np.asarray(r["E_t"])[(t > lo - 1e-12) & (t <= hi + 1e-12)]
            cells.append(f"{err:.1e}/{np.max(np.abs(Ew - r['E0'])):.1e}")
        Ef = np.asarray(fine["E_t"])[(tf > lo - 1e-12) & (tf <= hi + 1e-12)]
        print(f"  {lo:.1f}-{hi:.1f}   " + "  ".join(cells) + f"   finest dE {np.max(np.abs(Ef - fine['E0'])):.1e}")


if __name__ == "__main__":
    main()
