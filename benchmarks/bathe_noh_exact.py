"""Bathe–Noh three-mass chain (seed 001, example 1): the exact solution by modal
superposition beside Newmark (trapezoidal) and generalized-α (ρ∞ = 0.55) — the paper's
Fig. 3 — and the objectives and gradients of `configs/bathe-noh.toml` against their
exact values.

The model (configs/bathe-noh.toml, reduced to the two free masses as the paper does):

    diag(m2, m3) ẍ + [[k1 + k2, −k2], [−k2, k2]] x = [k1 sin ωt, 0],  x(0) = ẋ(0) = 0,

x = (q2, q3) the displacements from the rest positions, q1 = sin ωt prescribed.  With
the mass-normalised modes φ_i (K φ = Ω² M φ), each modal coordinate η_i = φ_iᵀ M x obeys
η̈ + Ω_i² η = F_i sin ωt, F_i = φ_iᵀ f, η(0) = η̇(0) = 0, so (undamped, Ω_i ≠ ω)

    η_i(t) = F_i / (Ω_i² − ω²) · (sin ωt − (ω/Ω_i) sin Ω_i t)

(Bathe, Finite Element Procedures, §9.3; the paper's ref. 72).  The stiff mode
(Ω₂ ≈ √(k1/m2) ≈ 3162) is excited with amplitude F₂ω/Ω₂³ ≈ 4e-5 relative to the
quasi-static response: exactly what a scheme with Ω₂h ≈ 828 (the paper's Δt) cannot
resolve and must not amplify.

Exact objectives: q2_final = (q2(T))² (the config's point deviation from the rest
position), v3_sq = ∫₀ᵀ v3² dt by composite Gauss–Legendre on a grid fine against both
modes (converged to 1e-13 relative); their gradients in (k1, k2, m2, m3) by central
differences of the closed form (relative step 1e-6: truncation ~1e-12, round-off
~1e-10).

Usage: .venv/bin/python benchmarks/bathe_noh_exact.py [--plot out/bathe-noh-exact.png]
"""
import argparse
import pathlib
import time

import parmbs  # noqa: F401 — first (numpy SIMD determinism: parmbs/_determinism.py)
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs" / "bathe-noh.toml"
OMEGA = 1.2
RHO = dict(k1=1.0e7, k2=1.0, m2=1.0, m3=1.0)   # the config's (and the paper's) values
T_END = 10.2102
PAPER_DT = 0.2618


def exact(t, k1=RHO["k1"], k2=RHO["k2"], m2=RHO["m2"], m3=RHO["m3"], omega=OMEGA, free_stiff=True):
    """(q, v, a) of masses 2 and 3 at the times t: three arrays of shape (len(t), 2).

    ``free_stiff=False``: without the stiff mode's free vibration (the homogeneous term
    −F₂ω/(Ω₂(Ω₂² − ω²)) sin Ω₂t that the zero initial state excites), which a scheme
    with numerical damping and Ω₂h ≫ 1 removes: what such a scheme converges to."""
    t = np.asarray(t, float)
    M = np.diag([m2, m3])
    K = np.array([[k1 + k2, -k2], [-k2, k2]])
    L = np.diag(1 / np.sqrt([m2, m3]))               # M^{-1/2}: symmetric eigenproblem
    w2, Y = np.linalg.eigh(L @ K @ L)
    Phi = L @ Y                                       # mass-normalised: Φᵀ M Φ = I
    F = Phi.T @ np.array([k1, 0.0])
    W = np.sqrt(w2)
    c = F / (w2 - omega ** 2)
    free = np.array([1.0, 1.0 if free_stiff else 0.0])     # eigh: ascending, the stiff mode last
    st, ct = np.sin(omega * t)[:, None], np.cos(omega * t)[:, None]
    sW, cW = np.sin(np.outer(t, W)), np.cos(np.outer(t, W))
    eta = c * (st - free * omega / W * sW)
    deta = c * omega * (ct - free * cW)
    ddeta = c * (-omega ** 2 * st + free * omega * W * sW)
    assert np.allclose(Phi.T @ M @ Phi, np.eye(2))
    return eta @ Phi.T, deta @ Phi.T, ddeta @ Phi.T


def exact_objectives(T=T_END, free_stiff=True, **rho):
    """{q2_final, v3_sq} of the config, exact (module docstring)."""
    q, _, _ = exact([T], free_stiff=free_stiff, **rho)
    # Gauss–Legendre, 8 nodes per panel, panels of 1e-4 (Ω₂ · 1e-4 ≈ 0.32 rad)
    npan = int(np.ceil(T / 1e-4))
    x, w = np.polynomial.legendre.leggauss(8)
    edges = np.linspace(0.0, T, npan + 1)
    mid, half = 0.5 * (edges[1:] + edges[:-1]), 0.5 * np.diff(edges)
    tt = (mid[:, None] + half[:, None] * x).ravel()
    ww = (half[:, None] * w).ravel()
    _, v, _ = exact(tt, free_stiff=free_stiff, **rho)
    return {"q2_final": float(q[0, 0] ** 2), "v3_sq": float(ww @ v[:, 1] ** 2)}


def exact_gradient(rel_step=1e-6, **kw):
    names = list(RHO)
    g = {o: np.zeros(len(names)) for o in ("q2_final", "v3_sq")}
    for j, n in enumerate(names):
        h = rel_step * RHO[n]
        up = exact_objectives(**{**kw, **RHO, n: RHO[n] + h})
        dn = exact_objectives(**{**kw, **RHO, n: RHO[n] - h})
        for o in g:
            g[o][j] = (up[o] - dn[o]) / (2 * h)
    return g


def run(scheme, dt, gradient=True):
    """parmbs's trajectory (q, v, a of masses 2, 3), objectives and adjoint gradient."""
    from parmbs.config import load_config
    from parmbs.sensitivity.problem import Problem
    sets = {"newmark": ["simulation.integrator=newmark", "simulation.beta=0.25", "simulation.gamma=0.5"],
            "genalpha": ["simulation.integrator=genalpha", "simulation.rho_inf=0.55"]}[scheme]
    pr = Problem(load_config(str(CONFIG), sets + [f"simulation.dt={dt!r}", "simulation.progress=false"]))
    tr = pr.forward()
    i = [3 * pr.sys.body_index[b] for b in ("m2", "m3")]
    x0 = np.array([pr.sys.q0[k] for k in i]) if hasattr(pr.sys, "q0") else tr.q[0, i]
    out = dict(t=tr.t, q=tr.q[:, i] - tr.q[0, i], v=tr.v[:, i], a=tr.a[:, i], psi=pr.objective_values(tr))
    if gradient:
        out["grad"] = {o: np.asarray(g, float) for o, g in pr.adjoint().items()}
    return out


def errors(r, free_stiff, t_from=0.0):
    """Relative max errors of the six histories over t ≥ t_from, |Δψ|/|ψ| and
    ‖Δ∇ψ‖/‖∇ψ‖ of the two objectives, against the exact solution with or without the
    stiff free vibration."""
    k = r["t"] >= t_from
    q, v, a = exact(r["t"][k], free_stiff=free_stiff)
    ex = dict(q2=q[:, 0], q3=q[:, 1], v2=v[:, 0], v3=v[:, 1], a2=a[:, 0], a3=a[:, 1])
    got = dict(q2=r["q"][k, 0], q3=r["q"][k, 1], v2=r["v"][k, 0], v3=r["v"][k, 1], a2=r["a"][k, 0],
               a3=r["a"][k, 1])
    psi, grad = exact_objectives(free_stiff=free_stiff), exact_gradient(free_stiff=free_stiff)
    return ([np.max(np.abs(got[k] - ex[k])) / np.max(np.abs(ex[k])) for k in HISTORIES]
            + [abs(r["psi"][o] - psi[o]) / abs(psi[o]) for o in OBJECTIVES]
            + [np.linalg.norm(r["grad"][o].ravel() - grad[o]) / np.linalg.norm(grad[o]) for o in OBJECTIVES])


HISTORIES = ("q2", "q3", "v2", "v3", "a2", "a3")
#: the damped schemes remove the stiff free vibration in the first steps (ρ∞ⁿ: 0.55¹⁰ ≈ 3e-3
#: at the paper's Δt by t = 2.6); histories are compared with its absence after this time
T_START_UP = 5.0
OBJECTIVES = ("q2_final", "v3_sq")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--plot", help="write a PNG: the paper's Fig. 3 (exact vs both schemes, paper's Δt)")
    args = ap.parse_args()
    t0 = time.process_time()
    for fs in (True, False):
        label = "exact" if fs else "exact without the stiff free vibration"
        psi_ex, g_ex = exact_objectives(free_stiff=fs), exact_gradient(free_stiff=fs)
        print(f"{label}: " + ", ".join(f"{k} = {v:.10e}" for k, v in psi_ex.items()))
        for o, g in g_ex.items():
            print(f"  ∇{o} (k1, k2, m2, m3) = {np.array2string(g, precision=6)}")
    print(f"(closed form and its FD gradients: {time.process_time() - t0:.2f} s CPU)\n")
    runs = {}
    for fs in (False, True):
        t_from = 0.0 if fs else T_START_UP
        print(("Against the exact solution" if fs else "Against the exact solution without the stiff free vibration")
              + f": max error / max |exact| of each history over t ≥ {t_from:g}; |Δψ|/|ψ|; ‖Δ∇ψ‖/‖∇ψ‖\n")
        print("| scheme | dt | " + " | ".join(HISTORIES) + " | ψ " + " | ψ ".join(OBJECTIVES)
              + " | ∇ " + " | ∇ ".join(OBJECTIVES) + " |")
        print("|---|---|" + "---|" * (len(HISTORIES) + 4))
        for dt in (PAPER_DT, PAPER_DT / 4, PAPER_DT / 16, PAPER_DT / 64):
            for scheme in ("newmark", "genalpha"):
                if (scheme, dt) not in runs:
                    runs[scheme, dt] = run(scheme, dt)
                print(f"| {scheme} | {dt:.6g} | " + " | ".join(f"{e:.1e}" for e in errors(runs[scheme, dt], fs, t_from)) + " |")
        print()
    print(f"\nCPU {time.process_time() - t0:.1f} s")
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        tf = np.linspace(0, T_END, 20001)
        full = exact(tf)
        q, v, a = exact(tf, free_stiff=False)
        fig, axs = plt.subplots(3, 2, figsize=(10, 8), sharex=True)
        for col, m in enumerate(("2", "3")):
            for row, (lab, ex, key) in enumerate((("q", q, "q"), ("v", v, "v"), ("a", a, "a"))):
                ax = axs[row, col]
                ax.plot(tf, full[row][:, col], "-", color="0.8", lw=0.5, label="exact (modal superposition)")
                ax.plot(tf, ex[:, col], "k-", lw=1, label="exact without the stiff free vibration")
                for scheme, sty in (("newmark", "o--"), ("genalpha", "s:")):
                    r = runs[scheme, PAPER_DT]
                    ax.plot(r["t"], r[key][:, col], sty, ms=3, label=f"{scheme} Δt = {PAPER_DT}")
                ax.set_ylabel(f"{lab}{m}")
        axs[0, 0].legend(fontsize=7)
        for ax in axs[-1]:
            ax.set_xlabel("t")
        fig.suptitle("Bathe–Noh (Wehrle & Gufler 2024, Fig. 3): exact vs Newmark vs generalized-α ρ∞ = 0.55")
        fig.tight_layout()
        tmp = pathlib.Path(args.plot).with_suffix(".tmp.png")
        fig.savefig(tmp, dpi=120)
        tmp.replace(args.plot)
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
