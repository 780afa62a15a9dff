"""Figs. 15–17 of [Ebrahimi 2019] §6.3 from `parmbs optimize` records of
configs/double-wishbone-opt.toml, as PNGs in OUTDIR:

* ``fig15_objective.png`` — ψ = ∫|d_CM|² dt against the iteration for every record given
  (the accepted iterates, ``/optimize/history``), and, for the records given a CPU log of
  ``benchmarks/optimize_cpu_per_iteration.py``, against the CPU seconds spent (the
  adjoint-vs-FD cost comparison over a run);
* ``fig16_cm.png`` — the chassis CM displacement d_CM(t) = r_CM(t) − r_CM(t₀) (X, Z and
  |d|) at the initial design and at the last accepted iterate of the first record;
* ``fig17_stress.png`` — per tube the largest axial stress max_t |σ_e(t)|,
  σ_e = E(|r_j − r_i|/l − 1) (``flexible/ancf3d.axial_stress``, Eq. 56's stress), at both
  designs beside Eq. 56's ±400 MPa, and σ(t) of the most loaded tube.

Figs. 16–17 run two forward simulations (the record's ``--set`` overrides, so its horizon)::

    PYTHONPATH=$PWD python benchmarks/double_wishbone_figs.py OUTDIR configs/double-wishbone-opt.toml \\
        adjoint=/path/opt.h5[:CPU.log] [fd=/path/fd.h5[:CPU.log] ...] [--no-sim]

A record may be the ``.h5.partial`` of a run still going (its finished iterates).  The
designs are located in ``/optimize/x`` by their ψ (the accepted iterate's row of
``/optimize/f``, to 1e-12 relative)."""
import argparse
import json
import pathlib
import re
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import parmbs  # noqa: E402,F401  (before numpy: one SIMD choice, DESIGN.md)
import h5py  # noqa: E402
import numpy as np  # noqa: E402

STRESS_LIMIT = 400e6            # Eq. 56 [Pa]
CM = "chassis.com"


def read_record(path):
    """(history (H, 6), sets, X accepted (H, n)) of an optimization record."""
    with h5py.File(path, "r", locking=False) as f:     # a .partial is held open by its run
        g = f["optimize"]
        n = int(g.attrs["evaluations"])
        hist = g["history"][: int(g["history"].attrs["rows"])]
        X, F = g["x"][:n], g["f"][:n]
        sets = json.loads(g.attrs.get("sets", "[]"))
    acc = []
    for psi in hist[:, 1]:
        rows = np.nonzero(np.abs(F - psi) <= 1e-12 * abs(psi))[0]     # a resumed run rewrites the
        # row of the iterate it resumed at: measured 3.7e-15 relative from the history's ψ
        if not len(rows):
            raise SystemExit(f"{path}: no /optimize/x row with f = {psi!r}")
        acc.append(X[rows[-1]])
    return hist, sets, np.array(acc)


def read_cpu_log(path):
    """Cumulative CPU [s] per `it` line of an optimize_cpu_per_iteration.py log (summed over
    restarts: a line ``== ... start`` begins a new process whose CPU counts from 0)."""
    out, base, last = [], 0.0, 0.0
    for line in open(path, errors="replace"):
        if line.startswith("=="):
            base, last = base + last, 0.0
            continue
        m = re.match(r"cpu\s+([0-9.]+|nan)\b.*\|\s*it\s+(\d+)\s+psi\s+(\S+)", line)
        if m and m.group(1) != "nan":
            last = float(m.group(1))
            out.append((int(m.group(2)), base + last, float(m.group(3))))
    return np.array(out).reshape(-1, 3)


def simulate(config, sets, rhos):
    """Forward runs at the designs ``rhos``: per design (t, d_CM (N+1, 3), σ per tube
    {name: (N+1, E)})."""
    from parmbs.config import load_config
    from parmbs.flexible.ancf3d import axial_stress
    from parmbs.flexible.ancf3d_joints import _natural_matrix
    from parmbs.optimize import Optimization
    cfg = load_config(str(config), list(sets) + ["simulation.progress=false"])
    opt = Optimization(cfg, pathlib.Path(tempfile.mkdtemp()) / "figs.h5", out=lambda *a: None)
    pr, sysm = opt.problem, opt.problem.sys
    sb = sysm.spatial_beams
    qidx, pidx = sysm.natural.point(CM)
    r0 = sb.initial_point(sysm, sysm.spatial, "natural", CM)
    out = []
    for rho in rhos:
        p = pr.design.apply(opt.p0, rho)
        pr.forward(p)
        q = np.asarray(pr.traj.q)
        d = np.einsum("ij,nj->ni", _natural_matrix(p[np.asarray(pidx)]), q[:, qidx]) - r0
        sig = {}
        for name, b in sb.beams.items():
            qb = q[:, b.offset:b.offset + b.ncoord]
            elems = np.array([[i - b.offset for i in b.element(e)] for e in range(b.nel)])
            sig[name] = axial_stress(qb[:, elems], p[np.asarray(b.material())][None, None, :])
        out.append((np.asarray(pr.traj.t), d, sig))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("config")
    ap.add_argument("runs", nargs="+", help="LABEL=RECORD[:CPU_LOG]")
    ap.add_argument("--no-sim", action="store_true", help="Fig. 15 only (no forward runs)")
    a = ap.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    outdir = pathlib.Path(a.outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    runs = []
    for spec in a.runs:
        label, rest = spec.split("=", 1)
        rec, _, cpu = rest.partition(":")
        runs.append((label, *read_record(rec), read_cpu_log(cpu) if cpu else None))

    ncol = 2 if any(r[4] is not None for r in runs) else 1
    fig, ax = plt.subplots(1, ncol, figsize=(5.5 * ncol, 4), squeeze=False)
    for label, hist, _, _, cpu in runs:
        ax[0, 0].semilogy(hist[:, 0], hist[:, 1], "o-", ms=3, label=label)
        print(f"{label}: " + ", ".join(f"{int(k)}: {v:.4e}" for k, v in hist[:, :2]))
        if cpu is not None and len(cpu):
            ax[0, 1].semilogy(cpu[:, 1], cpu[:, 2], "o-", ms=3, label=label)
            print(f"{label} CPU s at iterates: " + ", ".join(f"{int(k)}: {c:.0f}" for k, c, _ in cpu))
    ax[0, 0].set(xlabel="iteration", ylabel="ψ = ∫|d_CM|² dt [m²s]", title="Fig. 15: objective")
    if ncol == 2:
        ax[0, 1].set(xlabel="CPU [s]", ylabel="ψ [m²s]", title="objective against CPU")
        ax[0, 1].legend()
    ax[0, 0].legend()
    fig.tight_layout()
    _save(fig, outdir / "fig15_objective.png")
    if a.no_sim:
        return
    label, hist, sets, acc, _ = runs[0]
    (t, d0, s0), (_, d1, s1) = simulate(a.config, sets, [acc[0], acc[-1]])
    names = [f"initial (ψ {hist[0, 1]:.3e})", f"{label} it {int(hist[-1, 0])} (ψ {hist[-1, 1]:.3e})"]

    fig, ax = plt.subplots(1, 3, figsize=(14, 4))
    for d, nm, ls in ((d0, names[0], "--"), (d1, names[1], "-")):
        for k, (comp, lab) in enumerate(((d[:, 0], "X"), (d[:, 2], "Z"), (np.linalg.norm(d, axis=1), "|d|"))):
            ax[k].plot(t, 1e3 * comp, ls, label=nm)
            ax[k].set(xlabel="t [s]", ylabel=f"d_CM {lab} [mm]")
    ax[0].legend(fontsize=8)
    fig.suptitle("Fig. 16: chassis CM displacement")
    fig.tight_layout()
    _save(fig, outdir / "fig16_cm.png")

    beams = list(s0)
    m0 = np.array([np.max(np.abs(s0[b])) for b in beams]) / 1e6
    m1 = np.array([np.max(np.abs(s1[b])) for b in beams]) / 1e6
    worst = beams[int(np.argmax(np.maximum(m0, m1)))]
    fig, ax = plt.subplots(1, 2, figsize=(12, 4))
    x = np.arange(len(beams))
    ax[0].bar(x - 0.2, m0, 0.4, label=names[0])
    ax[0].bar(x + 0.2, m1, 0.4, label=names[1])
    top = max(m0.max(), m1.max())
    if top > 0.25 * STRESS_LIMIT / 1e6:          # else the limit would flatten the bars: named in the title
        ax[0].axhline(STRESS_LIMIT / 1e6, color="k", lw=0.8, ls=":", label="Eq. 56: 400 MPa")
    ax[0].set(xticks=x, xticklabels=beams, ylabel="max_t |σ| [MPa]",
              title=f"Fig. 17: largest axial stress per tube (Eq. 56: ≤ {STRESS_LIMIT / 1e6:.0f} MPa)")
    ax[0].legend(fontsize=8)
    for s, nm, ls in ((s0, names[0], "--"), (s1, names[1], "-")):
        ax[1].plot(t, np.max(np.abs(s[worst]), axis=1) / 1e6, ls, label=nm)
    ax[1].set(xlabel="t [s]", ylabel=f"max_e |σ| of {worst} [MPa]")
    ax[1].legend(fontsize=8)
    fig.tight_layout()
    _save(fig, outdir / "fig17_stress.png")
    print("tube  max_t|σ| initial / optimized [MPa]: " + ", ".join(f"{b} {u:.1f}/{v:.1f}" for b, u, v in zip(beams, m0, m1)))
    print(f"max |d_CM| initial / optimized: {1e3 * np.max(np.linalg.norm(d0, axis=1)):.1f} / "
          f"{1e3 * np.max(np.linalg.norm(d1, axis=1)):.1f} mm")


def _save(fig, path):
    """Write to a temp name and rename on success."""
    tmp = path.with_name(path.stem + ".tmp.png")
    fig.savefig(tmp, dpi=120)
    tmp.replace(path)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
