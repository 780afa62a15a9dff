"""Flexible slider-crank (seed 001 example 2, configs/slider-crank-flex.toml): cost of
analytical vs finite-difference sensitivities over h_C, w_C, h_R, w_R, one run.

What the paper reports (Wehrle & Gufler 2024, §3.2, Table 4; i7-8700, 250 steps of
Δt = 1e-4 s): primal / FD / analytical wall times 03:44 / 18:12 / 04:29 with Newmark-β
(speed-up t_FD ÷ t_analytical = 4.06) and 02:42 / 13:22 / 03:30 with generalized-α
ϱ∞ = 0.55 (3.82).  Their FD is forward differences: 1 + 4 primal runs.  "Analytical" is
the primal run plus the direct (DDM) sensitivity; we time both our direct (DDM) and our
discrete adjoint (6 objectives: ∫θ_C, ∫x_S, ∫ node A x̄_f, ȳ_f, θ̄_f, ∫KS(σ) dt).

Printed, per integrator (Newmark β = ¼, γ = ½; generalized-α ϱ∞ = 0.55):
  * CPU and wall times of the primal run, primal + direct, primal + adjoint, forward FD
    (5 runs);
  * speed-ups t_FD ÷ t_direct and t_FD ÷ t_adjoint in CPU time (paper: 4.06 / 3.82);
  * agreement: |adjoint − direct|, |adjoint − forward FD| (relative step 1e-6) and, with
    --central, |adjoint − central FD| (relative, per objective);
  * peak KS fibre stress over the run (the paper: Newmark's undamped high-frequency
    vibration gives unrealistically high stress, gen-α damps it).
Also printed once: Δt/T of the 1st, 10th and 20th non-zero eigenfrequency of the
mechanism linearised at t = 0 (clamped-root FFR beams, 4 elements each) beside the
paper's 0.2119 / 3.9919 / 17.1157 — a check of the reconstructed discretisation.

With --histories: the DDM sensitivity histories of θ_C, x_S, node A (x̄_f, ȳ_f, θ̄_f) and
KS(σ(t)) for both integrators, and the size of their step-to-step alternating part
(period 2Δt, |Δ⁴x|/16) over the last half of the run relative to the history's
magnitude — the paper's "Newmark sensitivities are noisy, gen-α damps them" in one
number per output (Newmark ÷ gen-α); --plot FILE.png draws them.

Usage: OMP_NUM_THREADS=1 .venv/bin/python benchmarks/slider_crank_flex.py [--t-end 0.025] [--central]
           [--histories] [--plot out/slider-crank-flex.png]
"""
import argparse
import pathlib
import time

import parmbs  # noqa: F401  (before numpy: parmbs/_determinism.py pins numpy's CPU features for same-bytes results)
import numpy as np

from parmbs.config import load_config
from parmbs.model.evaluation import StateEval
from parmbs.sensitivity.problem import Problem

ROOT = pathlib.Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs" / "slider-crank-flex.toml"
SCHEMES = {"newmark": ["simulation.integrator=newmark", "simulation.beta=0.25", "simulation.gamma=0.5"],
           "genalpha": ["simulation.integrator=genalpha", "simulation.rho_inf=0.55"]}
PAPER = {"newmark": (224, 1092, 269, 4.0595), "genalpha": (162, 802, 210, 3.8190)}
#: the paper's model and step: the shipped file's dt-converged settings (a 16× finer step,
#: Rayleigh damping in the beams; its header) undone for this comparison
PAPER_MODEL = ["simulation.dt=1e-4", "beams.crank.stiffness_damping=0.0", "beams.rod.stiffness_damping=0.0"]


def problem(scheme, t_end):
    cfg = load_config(str(CONFIG), SCHEMES[scheme] + PAPER_MODEL + [f"simulation.t_end={t_end}",
                                                                    "simulation.progress=false"])
    # the paper's six outputs (the file's per-beam, per-fibre KS objectives are extra)
    return Problem(cfg.model_copy(update={"objectives": cfg.objectives[:6]}))


def timed(fn):
    """(result, CPU seconds of this process, wall seconds).  The speed-ups use CPU time:
    the machine this runs on is shared, and wall time counts the other jobs."""
    t, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.process_time() - c, time.perf_counter() - t


def fd(pr, central, step=1e-6):
    """Finite differences of every objective, steps relative to each design value."""
    p0 = pr.sys.p.copy()
    rho = pr.design.values(p0)
    base = None if central else pr.objective_values(pr.forward(p0), p0)
    out = {ob.name: np.zeros(len(rho)) for ob in pr.objectives}
    for j in range(len(rho)):
        hs = step * abs(rho[j])
        vals = []
        for sgn in ((1, -1) if central else (1,)):
            r = rho.copy()
            r[j] += sgn * hs
            p = pr.design.apply(p0, r)
            vals.append(pr.objective_values(pr.forward(p), p))
        for k in out:
            out[k][j] = ((vals[0][k] - vals[1][k]) / (2 * hs) if central else (vals[0][k] - base[k]) / hs)
    pr.forward(p0)
    return out


def rel(a, b):
    return np.max(np.abs(a - b)) / np.max(np.abs(b))


def eigen_ratios(dt=1e-4):
    """Δt/T_k of the non-zero eigenfrequencies of K x = ω² M x on Φ_q x = 0 at t = 0."""
    pr = problem("genalpha", 1e-4)
    s = pr.sys
    z = np.zeros(s.n)
    ev = StateEval(s, 0.0, s.q_guess, z, z, np.zeros(s.m), s.p)
    K, M, G = ev.K(with_hessian=False).dense(), ev.Ma().dense(), ev.G().dense()
    _, sv, Vt = np.linalg.svd(G)
    N = Vt[np.sum(sv > 1e-10 * sv[0]):].T                     # null space of Φ_q
    Kr, Mr = N.T @ K @ N, N.T @ M @ N
    Li = np.linalg.inv(np.linalg.cholesky(Mr))
    w2 = np.linalg.eigvalsh(Li @ Kr @ Li.T)
    f = np.sqrt(np.clip(w2, 0, None)) / (2 * np.pi)
    f = np.sort(f[f > 1.0])
    return f, dt * f


OUTPUTS = ("theta_C", "x_S", "xA_f", "yA_f", "thA_f", "ks")


def histories(pr):
    """Values (N+1,) and DDM sensitivities (N+1, nd) of the outputs along the run."""
    from parmbs.flexible.ffr_beams import ks_stress
    import importlib.util
    spec = importlib.util.spec_from_file_location("outs", ROOT / "configs" / "slider_crank_flex_outputs.py")
    outs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(outs)
    s, p = pr.sys, pr.sys.p
    traj = pr.forward()
    st = pr.stepper
    idx = {"theta_C": s.ffr.frame("crank")[2], "x_S": 3 * s.body_index["slider"],
           **{k: s.ffr.coord("crank", s.ffr.beams["crank"].nel, c) for k, c in
              (("xA_f", "u"), ("yA_f", "v"), ("thA_f", "phi"))}}
    dmap = pr.design.map
    X = {k: [] for k in OUTPUTS}
    D = {k: [] for k in OUTPUTS}

    def record(x, d):
        for k, i in idx.items():
            X[k].append(x[0][i])
            D[k].append(np.array(d[0][i]))
        val, part = ks_stress(s, x[0], p, outs.RHO_KS)
        gp = np.zeros(len(pr.design))
        np.add.at(gp, dmap[dmap >= 0], part["p"][dmap >= 0])
        X["ks"].append(val)
        D["ks"].append(part["q"] @ d[0] + gp)

    dx = st.init.tangent(p)
    record(traj.x(0), dx)
    for k in range(1, traj.steps + 1):
        dx = st.tangent_step(traj.t[k - 1], traj.x(k - 1), traj.x(k), dx, p)
        record(traj.x(k), dx)
    return traj.t, {k: np.array(v) for k, v in X.items()}, {k: np.array(v) for k, v in D.items()}


def alternating(x):
    """Period-2Δt amplitude |Δ⁴x_n|/16 per column (exact for a pure (−1)ⁿ component)."""
    return np.abs(x[4:] - 4 * x[3:-1] + 6 * x[2:-2] - 4 * x[1:-3] + x[:-4]) / 16


def history_study(t_end, plot):
    res = {sch: histories(problem(sch, t_end)) for sch in SCHEMES}
    names = problem("genalpha", 1e-4).design.names
    print("\nalternating part of the DDM histories over the second half, ÷ max |history| "
          "(per design variable: " + ", ".join(names) + ")")
    for k in OUTPUTS:
        r = {}
        for sch, (t, X, D) in res.items():
            half = len(t) // 2
            r[sch] = np.max(alternating(D[k])[half:], axis=0) / np.max(np.abs(D[k]), axis=0)
        ratio = r["newmark"] / r["genalpha"]
        print(f"  {k:8s} Newmark {np.array2string(r['newmark'], precision=2)}  gen-α "
              f"{np.array2string(r['genalpha'], precision=2)}  Newmark/gen-α {np.array2string(ratio, precision=1)}")
    if plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(len(OUTPUTS), len(names), figsize=(4 * len(names), 2.2 * len(OUTPUTS)),
                               sharex=True, squeeze=False)
        for i, k in enumerate(OUTPUTS):
            for j, n in enumerate(names):
                for sch, (t, X, D) in res.items():
                    ax[i, j].plot(t, D[k][:, j], lw=0.8, label=sch)
                ax[i, j].set_title(f"d {k} / d {n}", fontsize=8)
        ax[0, 0].legend(fontsize=7)
        fig.tight_layout()
        pathlib.Path(plot).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(plot, dpi=110)
        print(f"wrote {plot}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--t-end", type=float, default=0.025)
    ap.add_argument("--central", action="store_true", help="also check against central FD (8 more runs)")
    ap.add_argument("--histories", action="store_true", help="DDM sensitivity histories, noise Newmark vs gen-α")
    ap.add_argument("--plot", help="PNG of the sensitivity histories (implies --histories)")
    args = ap.parse_args()
    if args.histories or args.plot:
        history_study(args.t_end, args.plot)
        return

    f, ratios = eigen_ratios()
    print(f"eigenfrequencies at t = 0: f1 = {f[0]:.0f} Hz; Δt/T (1st, 10th, 20th) = "
          f"{ratios[0]:.4f}, {ratios[9]:.4f}, {ratios[19]:.4f}   (paper: 0.2119, 3.9919, 17.1157)")
    for scheme in ("newmark", "genalpha"):
        pr = problem(scheme, args.t_end)
        tr, t_primal, w_primal = timed(pr.forward)
        ks = pr.sys.ffr.stresses
        peak = max(np.max(np.abs(ks(pr.sys, tr.q[k], pr.sys.p))) for k in range(tr.steps + 1))
        its = int(np.sum(tr.newton_its))

        def direct():
            pr.forward()
            return pr.direct()

        def adjoint():
            pr.forward()
            return pr.adjoint()

        dr, t_dir, w_dir = timed(direct)
        adj, t_adj, w_adj = timed(adjoint)
        fdf, t_fd, w_fd = timed(lambda: fd(pr, central=False))
        fdc = fd(pr, central=True) if args.central else None
        P = PAPER[scheme]
        print(f"\n{scheme}: {pr.nsteps} steps, {its} Newton iterations, peak |σ| = {peak:.1f} MPa")
        print(f"  CPU  primal {t_primal:6.2f} s | primal+direct {t_dir:6.2f} s | primal+adjoint {t_adj:6.2f} s | "
              f"forward FD (5 runs) {t_fd:6.2f} s")
        print(f"  wall primal {w_primal:6.2f} s | primal+direct {w_dir:6.2f} s | primal+adjoint {w_adj:6.2f} s | "
              f"forward FD (5 runs) {w_fd:6.2f} s")
        print(f"  speed-up (CPU) FD/direct = {t_fd / t_dir:.2f}, FD/adjoint = {t_fd / t_adj:.2f}   "
              f"(paper: {P[1]}/{P[2]} s = {P[3]:.2f}; direct/primal = {t_dir / t_primal:.2f}, paper {P[2] / P[0]:.2f})")
        for k in adj:
            line = f"  {k:10s} adjoint {np.array2string(adj[k], precision=4)}  |adj-dir| {rel(dr[k], adj[k]):.1e}"
            line += f"  |adj-fwdFD| {rel(fdf[k], adj[k]):.1e}"
            if fdc is not None:
                line += f"  |adj-centralFD| {rel(fdc[k], adj[k]):.1e}"
            print(line)


if __name__ == "__main__":
    main()
