"""Figs. 15–17 of [Ebrahimi 2019] §6.3 from `parmbs optimize` records of
configs/double-wishbone-opt.toml, as PNGs in OUTDIR and as text tables on stdout (the
tables go into benchmarks/README.md; the PNGs stay out of git):

* ``fig15_objective.png`` — ψ = ∫|d_CM|² dt against the iteration for every record given
  (the accepted iterates, ``/optimize/history``: e.g. the adjoint-driven and the FD-driven
  run), and, for the records given a CPU log of ``benchmarks/optimize_cpu_per_iteration.py``,
  against the CPU seconds spent; table: ψ, max violation and step per iteration;
* ``fig16_cm.png`` — the chassis CM displacement d_CM(t) = r_CM(t) − r_CM⁰ (X, Y, Z, |d|)
  at the initial design and at an accepted iterate of the first record (``--iterate``,
  default the last), over the record's horizon; d is the vector whose |d|² the objective
  integrates (``spatial_beam_objectives.point_displacement``);
* ``fig17_stress.png`` — per tube the largest tensile and compressive axial stress over
  time, max_t σ_e(t) and min_t σ_e(t), at both designs beside Eq. 56's ±400 MPa (symlog
  axis: the bars are MPa, the bounds hundreds), and σ(t) of the most loaded tube.  σ_e is
  what each stress constraint aggregates — its elements and its ``stress_point``
  (``midpoint`` in the opt file: the chord the variational step balances;
  ``spatial_beam_objectives.stress_history``); table: per tube max σ, min σ, max |σ| and
  the constraint's own value, the time mean of its KS (∫KS dt / T ≤ 400 MPa in the file).

Figs. 16–17 run one forward simulation per design (the record's ``--set`` overrides, so its
horizon), cached in OUTDIR as ``sim-<hash>.npz`` (keyed by the config's resolved hash and the
design), so a rerun for another record or figure reuses them::

    PYTHONPATH=$PWD python benchmarks/double_wishbone_figs.py OUTDIR configs/double-wishbone-opt.toml \\
        adjoint=/path/opt.h5[:CPU.log] [fd=/path/fd.h5[:CPU.log] ...] [--iterate K] [--no-sim]

A record may be a copy of the ``.h5.partial`` of a run still going (its finished iterates).
The config must be the one the record was run with (its resolved hash is compared with the
record's; a mismatch stops the script).  The designs are located in ``/optimize/x`` by
their ψ (the accepted iterate's row of ``/optimize/f``, to 1e-12 relative); the re-simulated
ψ is printed beside the record's."""
import argparse
import hashlib
import json
import pathlib
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import parmbs  # noqa: E402,F401  (before numpy: one SIMD choice, DESIGN.md)
import h5py  # noqa: E402
import numpy as np  # noqa: E402

STRESS_LIMIT = 400e6            # Eq. 56 [Pa]


def read_record(path):
    """{history (H, 6), columns, sets, X (H, n) of the accepted iterates, objective, sha} of
    an optimization record."""
    with h5py.File(path, "r", locking=False) as f:     # a .partial may be held open by its run
        g = f["optimize"]
        n = int(g.attrs["evaluations"])
        hist = g["history"][: int(g["history"].attrs["rows"])]
        cols = str(g["history"].attrs["columns"]).split(",")
        X, F = g["x"][:n], g["f"][:n]
        sets = json.loads(g.attrs.get("sets", "[]"))
        objective, sha = str(g.attrs["objective"]), str(g.attrs["resolved_sha256"])
    acc = []
    for psi in hist[:, 1]:
        rows = np.nonzero(np.abs(F - psi) <= 1e-12 * abs(psi))[0]     # a resumed run rewrites the
        # row of the iterate it resumed at: measured 3.7e-15 relative from the history's ψ
        if not len(rows):
            raise SystemExit(f"{path}: no /optimize/x row with f = {psi!r}")
        acc.append(X[rows[-1]])
    return dict(history=hist, columns=cols, sets=sets, X=np.array(acc), objective=objective, sha=sha)


def read_cpu_log(path):
    """Cumulative CPU [s] per `it` line of a CPU log, summed over restarts.  Two formats:
    ``benchmarks/optimize_cpu_per_iteration.py``'s (``cpu X (+dX) | it K psi …``) and a
    monitor's (``TIME pid P cpu X | <any optimize log line>``).  A new process begins at a
    line ``== ... start``, a new ``pid``, or a CPU below the previous line's; its CPU counts
    from 0 on top of the last CPU seen of the process before (the monitor logs every line, so
    a killed process's work after its last iterate counts; the other format has only the
    iterates, so that share is lost there)."""
    out, base, last, pid = [], 0.0, 0.0, None
    for line in open(path, errors="replace"):
        if line.startswith("=="):
            base, last = base + last, 0.0
            continue
        m = re.search(r"(?:pid\s+(\d+)\s+)?cpu\s+([0-9.]+|nan)\b", line)
        if not m or m.group(2) == "nan":
            continue
        c = float(m.group(2))
        if (m.group(1) is not None and pid is not None and m.group(1) != pid) or c < last:
            base, last = base + last, 0.0
        pid = m.group(1) if m.group(1) is not None else pid
        last = c
        it = re.search(r"\|\s*it\s+(\d+)\s+psi\s+(\S+)", line)
        if it:
            out.append((int(it.group(1)), base + last, float(it.group(2))))
    return np.array(out).reshape(-1, 3)


def load(config, rec):
    """The config as the record's run loaded it (its ``--set`` overrides), checked against
    the record's resolved hash as ``parmbs optimize --restart`` does (record_match.matches:
    schema keys added after the record was written do not count)."""
    from parmbs.checkpoint.record_match import matches
    from parmbs.config import load_config
    from parmbs.optimize.driver import RUN_LENGTH_KEYS
    cfg = load_config(str(config), list(rec["sets"]))
    with h5py.File(rec["path"], "r", locking=False) as f:
        ok = matches(f, rec["sha"], cfg, ignore=[("optimize", k) for k in RUN_LENGTH_KEYS])
    if not ok:
        raise SystemExit(f"{config} with {rec['sets']} is not the config the record was run with "
                         "(resolved hash differs)")
    return cfg


def simulate(cfg, objective, rhos, cache_dir):
    """Forward runs at the designs ``rhos``: per design a dict t, d (K, 3) of the objective's
    point, sigma {tube: (K, E)} of every stress objective, values {objective: ψ}, cpu [s]."""
    import time
    from parmbs.flexible.spatial_beam_objectives import STRESS_KINDS, point_displacement, stress_history
    from parmbs.optimize.driver import optimization_sha256
    from parmbs.sensitivity.problem import Problem
    pr = None
    obj = {o.name: o for o in cfg.objectives}
    stress = [o for o in cfg.objectives if o.integrand in STRESS_KINDS]
    out = []
    for rho in rhos:
        key = hashlib.sha256((optimization_sha256(cfg) + np.asarray(rho, float).tobytes().hex())
                             .encode()).hexdigest()[:16]
        path = pathlib.Path(cache_dir) / f"sim-{key}.npz"
        if path.exists():
            z = np.load(path, allow_pickle=False)
            out.append(dict(t=z["t"], d=z["d"], sigma={o.body: z["s_" + o.body] for o in stress},
                            values=json.loads(str(z["values"])), cpu=float(z["cpu"]), cached=True))
            continue
        if pr is None:
            pr = Problem(cfg)
        c0 = time.process_time()
        p = pr.design.apply(pr.sys.p.copy(), np.asarray(rho, float))
        tr = pr.forward(p)
        vals = {k: float(v) for k, v in pr.objective_values().items()}
        d = point_displacement(pr.sys, obj[objective], tr.q, p)
        sig = {o.body: stress_history(pr.sys, o, tr.q, tr.v, p) for o in stress}
        res = dict(t=np.asarray(tr.t), d=d, sigma=sig, values=vals, cpu=time.process_time() - c0, cached=False)
        np.savez(path.with_suffix(".tmp.npz"), t=res["t"], d=d, values=json.dumps(vals), cpu=res["cpu"],
                 **{"s_" + b: s for b, s in sig.items()})
        path.with_suffix(".tmp.npz").replace(path)
        out.append(res)
    return out


def fig15(runs, outdir, plt):
    ncol = 2 if any(r["cpu"] is not None for r in runs) else 1
    fig, ax = plt.subplots(1, ncol, figsize=(5.5 * ncol, 4), squeeze=False)
    for r in runs:
        h = r["history"]
        ax[0, 0].semilogy(h[:, 0], h[:, 1], "o-", ms=3, label=r["label"])
        if r["cpu"] is not None and len(r["cpu"]):
            ax[0, 1].semilogy(r["cpu"][:, 1], r["cpu"][:, 2], "o-", ms=3, label=r["label"])
    ax[0, 0].set(xlabel="iteration", ylabel="ψ = ∫|d_CM|² dt [m²s]", title="Fig. 15: objective")
    ax[0, 0].legend()
    if ncol == 2:
        ax[0, 1].set(xlabel="CPU [s]", ylabel="ψ [m²s]", title="objective against CPU")
        ax[0, 1].legend()
    fig.tight_layout()
    _save(fig, outdir / "fig15_objective.png")
    # the table: one row per iteration, per run ψ, max violation, step (and cumulative CPU)
    heads = []
    for r in runs:
        heads += [f"ψ {r['label']} [m²s]", f"viol. {r['label']}", f"step {r['label']}"]
        if r["cpu"] is not None:
            heads.append(f"CPU {r['label']} [s]")
    print("\nFig. 15 (ψ per accepted iterate; step = max|Δρ_j|/(upper − lower)):\n")
    print("| iterate | " + " | ".join(heads) + " |")
    print("|---" * (len(heads) + 1) + "|")
    for k in range(max(int(r["history"][-1, 0]) for r in runs) + 1):
        cells = []
        for r in runs:
            h, cols = r["history"], r["columns"]
            row = h[h[:, 0] == k]
            if len(row):
                row = row[0]
                cells += [f"{row[1]:.10e}", f"{row[cols.index('max_violation')]:.1e}" if "max_violation" in cols
                          else "", f"{row[cols.index('step')]:.3e}" if "step" in cols and k else "—"]
            else:
                cells += ["—", "", ""]
            if r["cpu"] is not None:
                c = r["cpu"][r["cpu"][:, 0] == k]
                cells.append(f"{c[-1, 1]:.1f}" if len(c) else "")
        print(f"| {k} | " + " | ".join(cells) + " |")


def fig16(sims, names, outdir, plt):
    fig, ax = plt.subplots(1, 4, figsize=(17, 3.8))
    for s, nm, ls in zip(sims, names, ("--", "-")):
        t, d = s["t"], s["d"]
        for k, (comp, lab) in enumerate(((d[:, 0], "X"), (d[:, 1], "Y"), (d[:, 2], "Z"),
                                         (np.linalg.norm(d, axis=1), "|d|"))):
            ax[k].plot(t, 1e3 * comp, ls, label=nm)
            ax[k].set(xlabel="t [s]", ylabel=f"d_CM {lab} [mm]")
            ax[k].grid(True, alpha=0.3)
    ax[0].legend(fontsize=8)
    fig.suptitle("Fig. 16: chassis CM displacement")
    fig.tight_layout()
    _save(fig, outdir / "fig16_cm.png")
    print("\nFig. 16 (chassis CM displacement d_CM over the horizon) [mm]:\n")
    print("| design | max_t \\|d\\| | at t [s] | min/max X | min/max Y | min/max Z | \\|d(T)\\| | ψ re-simulated [m²s] |")
    print("|---|---|---|---|---|---|---|---|")
    for s, nm in zip(sims, names):
        d, n = 1e3 * s["d"], 1e3 * np.linalg.norm(s["d"], axis=1)
        k = int(np.argmax(n))
        mm = " | ".join(f"{d[:, j].min():.2f} / {d[:, j].max():.2f}" for j in range(3))
        print(f"| {nm} | {n[k]:.2f} | {s['t'][k]:.3f} | {mm} | {n[-1]:.2f} | {s['psi']:.10e} |")


def fig17(sims, names, stress_names, outdir, plt):
    tubes = list(sims[0]["sigma"])
    T = sims[0]["t"][-1] - sims[0]["t"][0]
    hi = [np.array([s["sigma"][b].max() for b in tubes]) / 1e6 for s in sims]
    lo = [np.array([s["sigma"][b].min() for b in tubes]) / 1e6 for s in sims]
    absmax = [np.maximum(h, -l) for h, l in zip(hi, lo)]
    worst = tubes[int(np.argmax(np.maximum(*absmax)))]
    fig, ax = plt.subplots(1, 2, figsize=(13, 4.2), gridspec_kw=dict(width_ratios=[1.6, 1]))
    x = np.arange(len(tubes))
    for j, (h, l, nm, c) in enumerate(zip(hi, lo, names, ("tab:blue", "tab:orange"))):
        ax[0].bar(x + (j - 0.5) * 0.4, h, 0.4, color=c, label=f"{nm}: max_t σ")
        ax[0].bar(x + (j - 0.5) * 0.4, l, 0.4, color=c, alpha=0.5, label=f"{nm}: min_t σ")
    for sgn in (1, -1):
        ax[0].axhline(sgn * STRESS_LIMIT / 1e6, color="k", lw=0.9, ls=":",
                      label="Eq. 56: ±400 MPa" if sgn > 0 else None)
    ax[0].axhline(0, color="k", lw=0.5)
    ax[0].set_yscale("symlog", linthresh=1.0)
    ax[0].set_ylim(-1.5 * STRESS_LIMIT / 1e6, 1.5 * STRESS_LIMIT / 1e6)
    ax[0].set(xticks=x, xticklabels=tubes, ylabel="axial stress [MPa] (symlog)",
              title="Fig. 17: largest tensile / compressive axial stress per tube")
    ax[0].legend(fontsize=7, ncol=2, loc="lower left")
    for s, nm, ls in zip(sims, names, ("--", "-")):
        sw = s["sigma"][worst]
        ax[1].plot(s["t"], sw[:, int(np.argmax(np.abs(sw).max(axis=0)))] / 1e6, ls, label=nm)
    ax[1].set(xlabel="t [s]", ylabel=f"σ of {worst} [MPa]", title=f"σ(t) of the most loaded tube, {worst}")
    ax[1].legend(fontsize=8)
    ax[1].grid(True, alpha=0.3)
    fig.tight_layout()
    _save(fig, outdir / "fig17_stress.png")
    print(f"\nFig. 17 (axial stress per tube over the horizon, as the constraints read it) [MPa]; "
          f"KS mean = the constraint's value ∫KS dt / T, T = {T:g} s (bound 400):\n")
    print("| tube | " + " | ".join(f"max σ {nm} | min σ {nm} | t of max\\|σ\\| [s] | KS mean {nm}" for nm in names)
          + " | max\\|σ\\| opt./init. |")
    print("|---" * (1 + 4 * len(names) + 1) + "|")
    for i, b in enumerate(tubes):
        cells = []
        for j, s in enumerate(sims):
            tk = s["t"][int(np.argmax(np.abs(s["sigma"][b]).max(axis=1)))]
            cells += [f"{hi[j][i]:.2f}", f"{lo[j][i]:.2f}", f"{tk:.3f}", f"{s['values'][stress_names[b]] / T / 1e6:.2f}"]
        print(f"| {b} | " + " | ".join(cells) + f" | {absmax[-1][i] / absmax[0][i]:.2f} |")
    ks = [max(s["values"][stress_names[b]] for b in tubes) / T / 1e6 for s in sims]
    print("| all | " + " | ".join(f"{h.max():.2f} | {l.min():.2f} | | {m:.2f}" for h, l, m in zip(hi, lo, ks))
          + f" | {absmax[-1].max() / absmax[0].max():.2f} |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("config", help="the config the records were run with")
    ap.add_argument("runs", nargs="+", help="LABEL=RECORD[:CPU_LOG]; Figs. 16-17 from the first")
    ap.add_argument("--iterate", type=int, default=None,
                    help="accepted iterate of the first record for Figs. 16-17 (default: the last)")
    ap.add_argument("--no-sim", action="store_true", help="Fig. 15 only (no forward runs)")
    a = ap.parse_args(argv)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    outdir = pathlib.Path(a.outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    runs = []
    for spec in a.runs:
        label, rest = spec.split("=", 1)
        rec, _, cpu = rest.partition(":")
        runs.append(dict(read_record(rec), label=label, path=rec, cpu=read_cpu_log(cpu) if cpu else None))
        print(f"{label}: {rec}: iterates 0..{int(runs[-1]['history'][-1, 0])}, sets {runs[-1]['sets']}")
    fig15(runs, outdir, plt)
    if a.no_sim:
        return
    r = runs[0]
    its = r["history"][:, 0].astype(int)
    k = int(its[-1]) if a.iterate is None else a.iterate
    if k not in its:
        raise SystemExit(f"{r['path']}: iterate {k} is not among the accepted iterates {its.min()}..{its.max()}")
    i = int(np.nonzero(its == k)[0][0])
    cfg = load(a.config, r)
    sims = simulate(cfg, r["objective"], [r["X"][0], r["X"][i]], outdir)
    for s in sims:
        s["psi"] = s["values"][r["objective"]]
    names = ["initial", f"{r['label']} it {k}"]
    print(f"\nforward runs over {cfg.simulation.t_end:g} s: " + "; ".join(
        f"{nm}: ψ {s['psi']:.10e} (record {psi:.10e}, {s['psi'] / psi - 1:+.1e} rel.), "
        + ("cached" if s["cached"] else f"{s['cpu']:.1f} s CPU")
        for s, nm, psi in zip(sims, names, r["history"][[0, i], 1])))
    fig16(sims, names, outdir, plt)
    from parmbs.flexible.spatial_beam_objectives import STRESS_KINDS
    stress_names = {o.body: o.name for o in cfg.objectives if o.integrand in STRESS_KINDS}
    fig17(sims, names, stress_names, outdir, plt)


def _save(fig, path):
    """Write to a temp name and rename on success."""
    tmp = path.with_name(path.stem + ".tmp.png")
    fig.savefig(tmp, dpi=120)
    tmp.replace(path)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
