"""Where the spatial double pendulum's ψ error comes from on adaptive grids (issue 18;
benchmarks/README.md, "The double pendulum's ψ on adaptive grids: an error that cancels on a
uniform grid").

The model's objective is ψ = ∫ |λ_elbow|² dt (``reaction_sq``), summed with the trapezoidal
weights w_k of the accepted grid.  Its error against the exact ψ splits into

    ψ_h − ψ = Σ w_k (f(x_k) − f(x(t_k)))  +  (Σ w_k f(x(t_k)) − ∫ f dt)
              state term (λ's error)          quadrature term (exact integrand, the run's grid)

and the state term, by λ*_k = λ*(q_k, v_k) — the multipliers consistent with the computed
q_k, v_k (the index-1 system M a + Φ_qᵀλ = Q, Φ_q a + γ = 0; InitialState's acceleration
solve) — into the part λ inherits from the (controlled) errors of q and v,
Σ w_k (f(λ*_k) − f(x(t_k))), and the scheme's own λ error, Σ w_k (f(λ_k) − f(λ*_k)).

Per run: ψ's relative error = quad + inherited + own, the largest relative errors of q, v, λ
over the nodes (λ* and λ − λ* beside λ; "(−1)^k": a quarter of the mean |Δ²(λ − λ*)|), and the
same three terms of the running integral ψ_h(t) − ∫_0^t f at the times --at and T.  Then the
h² kernel model: a uniform grid's running error is dt² E(t), so a grid with steps h_k should
have ψ_h − ψ ≈ Σ_k h_k² (E(t_{k+1}) − E(t_k)) — E from the finest fixed run of --dts,
compared with the measured error of every run, and split over the intervals --at.

Reference x(t): the stepper at --ref-dt and 2 --ref-dt (fixed), Richardson-extrapolated on
the coarser grid and interpolated by cubic splines (cached in --cache); ψ's reference the
Richardson of the two ψ values (as benchmarks/controllers.py).

    PYTHONPATH=$PWD nice -n 10 .venv/bin/python benchmarks/sdp_psi_error.py --rtols 1e-5,1e-6 --dts 1e-3,5e-4
"""
import parmbs  # noqa: F401  (first: parmbs/_determinism.py)

import argparse
import os
import sys

import numpy as np
from scipy.interpolate import CubicSpline

from parmbs.config.loader import load_config
from parmbs.sensitivity.problem import Problem, physical

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = os.path.join(HERE, "..", "configs", "spatial-double-pendulum.toml")
STEPPER = ['simulation.integrator="trapezoidal"', 'simulation.stabilization="ggl"']


def run(overrides, fixed):
    cfg = load_config(CONFIG, STEPPER + overrides)
    if fixed:
        cfg.simulation.adapt = None
    pr = Problem(cfg)
    tr = pr.forward()
    return pr, tr


def integrand(pr, t, x):
    """w f(t, x) of the model's (one) objective at the state x = (q, v, a, λ)."""
    ob = pr.objectives[0]
    p = pr.traj.p
    ref = ob.reference(pr.sys, pr.traj.q[0], p)
    return ob.weight * float(np.real(ob.integrand.value(pr.sys, t, physical(x), p, ref)))


def reference(a, horizon):
    if a.cache and os.path.exists(a.cache):
        z = np.load(a.cache)
        if float(z["t"][-1]) == a.t_end:
            return {k: z[k] for k in z.files}
    h = a.ref_dt
    out = []
    for d in (2 * h, h):
        pr, tr = run(horizon + [f"simulation.dt={d}"], fixed=True)
        out.append((pr, tr, pr.objective_values()[pr.objectives[0].name]))
        print(f"reference run dt {d:g}: {tr.steps} steps", flush=True)
    (pr1, t1, p1), (_, t2, p2) = out
    r = dict(t=t1.t)
    for k in ("q", "v", "a", "lam"):
        r[k] = (4 * getattr(t2, k)[::2] - getattr(t1, k)) / 3
    r["psi"] = np.array((4 * p2 - p1) / 3)
    r["dpsi"] = np.array(abs(p2 - p1))
    r["f"] = np.array([integrand(pr1, r["t"][k], tuple(r[j][k] for j in ("q", "v", "a", "lam")))
                       for k in range(len(r["t"]))])
    if a.cache:
        os.makedirs(os.path.dirname(os.path.abspath(a.cache)), exist_ok=True)
        np.savez(a.cache, **r)
    return r


def running(tr, g):
    """Σ_{j<k} h_j (g_j + g_{j+1})/2 at every node k."""
    return np.r_[0.0, np.cumsum(0.5 * tr.grid.h * (g[1:] + g[:-1]))]


def analyse(label, pr, tr, R, spl, I, at):
    t, p = tr.t, tr.p
    X = {k: spl[k](t) for k in ("q", "v", "a", "lam")}
    scale = {k: np.max(np.abs(R[k])) for k in ("q", "v", "lam")}
    rel = {k: float(np.max(np.abs(getattr(tr, k) - X[k])) / scale[k]) for k in ("q", "v", "lam")}
    f = np.array([integrand(pr, t[k], tr.x(k)) for k in range(len(t))])
    fx = np.array([integrand(pr, t[k], tuple(X[j][k] for j in ("q", "v", "a", "lam"))) for k in range(len(t))])
    lam_s = np.empty_like(tr.lam)
    fs = np.empty(len(t))
    for k in range(len(t)):
        a_s, lam_s[k] = pr.stepper.init._accelerations(t[k], tr.q[k], tr.v[k], p)
        fs[k] = integrand(pr, t[k], (tr.q[k], tr.v[k], a_s, lam_s[k]))
    psi_ref = float(R["psi"])
    quad = (running(tr, fx) - I(t)) / psi_ref         # running terms, relative to ψ
    inh = running(tr, fs - fx) / psi_ref
    own = running(tr, f - fs) / psi_ref
    total = (running(tr, f)[-1] - psi_ref) / psi_ref
    dl = tr.lam - lam_s
    rel_star = float(np.max(np.abs(lam_s - X["lam"])) / scale["lam"])
    rel_own = float(np.max(np.abs(dl)) / scale["lam"])
    alt = float(np.mean(np.abs(dl[2:] - 2 * dl[1:-1] + dl[:-2]))) / 4 / scale["lam"]
    print(f"{label:<18} {tr.steps:>5} steps  ψ err {total:+.2e} = quad {quad[-1]:+.2e} + λ*(q,v) {inh[-1]:+.2e} "
          f"+ own λ {own[-1]:+.2e}   max rel err q {rel['q']:.1e} v {rel['v']:.1e} λ {rel['lam']:.1e} "
          f"(λ* {rel_star:.1e}, λ−λ* {rel_own:.1e}, (−1)^k {alt:.1e})", flush=True)
    for T in at:
        i = int(np.searchsorted(t, T - 1e-12))
        print(f"{'':<18} running to t {t[i]:.3f}: quad {quad[i]:+.2e} + λ*(q,v) {inh[i]:+.2e} + own λ {own[i]:+.2e}"
              f" = {quad[i] + inh[i] + own[i]:+.2e}   h {tr.grid.h[min(i, tr.steps - 1)]:.2e}")
    return dict(label=label, t=t, h=tr.grid.h, err=total, run=quad + inh + own)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rtols", default="1e-5,1e-6")
    ap.add_argument("--dts", default="1e-3,5e-4", help="fixed steps; the last is the kernel's")
    ap.add_argument("--t-end", type=float, default=0.5)
    ap.add_argument("--at", default="0.3,0.4", help="times of the running terms and the kernel's intervals")
    ap.add_argument("--ref-dt", type=float, default=6.25e-5)
    ap.add_argument("--set", action="append", default=[], help="overrides of the adaptive runs")
    ap.add_argument("--cache", default="/tmp/sdp19/ref_traj.npz")
    a = ap.parse_args()
    horizon = [f"simulation.t_end={a.t_end}"]
    at = [float(x) for x in a.at.split(",") if x]
    R = reference(a, horizon)
    spl = {k: CubicSpline(R["t"], R[k], axis=0) for k in ("q", "v", "a", "lam")}
    I = CubicSpline(R["t"], R["f"]).antiderivative()
    psi_ref = float(R["psi"])
    print(f"reference ψ {psi_ref:.12g} (Richardson; |ψ(h) − ψ(2h)| {float(R['dpsi']):.1e}; "
          f"spline quadrature of its f {(float(I(a.t_end)) - psi_ref) / psi_ref:+.1e})")
    runs = []
    for dt in (float(x) for x in a.dts.split(",") if x):
        runs.append(analyse(f"fixed dt={dt:g}", *run(horizon + [f"simulation.dt={dt}"], True), R, spl, I, at) | {"dt": dt})
    for rt in (float(x) for x in a.rtols.split(",") if x):
        runs.append(analyse(f"adapt rtol={rt:g}", *run(horizon + [f"simulation.adapt.rtol={rt}",
                                                                  f"simulation.adapt.atol={rt}"] + a.set, False),
                            R, spl, I, at))
    fixed = [r for r in runs if "dt" in r]
    if not fixed:
        return
    kf = fixed[-1]
    E = kf["run"] / kf["dt"] ** 2
    cuts = [0.0] + at + [a.t_end]
    print(f"\nkernel E(t) = running error / dt² of {kf['label']}: max |E| {np.max(np.abs(E)):.2f}, E(T) {E[-1]:+.2f}; "
          + " ".join(f"E({x:g}) {np.interp(x, kf['t'], E):+.2f}" for x in at))
    for r in runs:
        Ea = np.interp(r["t"], kf["t"], E)
        c = r["h"] ** 2 * np.diff(Ea)
        parts = [float(np.sum(c[(r["t"][:-1] >= lo) & (r["t"][:-1] < hi)])) for lo, hi in zip(cuts, cuts[1:])]
        print(f"{r['label']:<18} predicted Σ h² ΔE {sum(parts):+.2e} (measured {r['err']:+.2e}); over "
              + " ".join(f"[{lo:g}, {hi:g}) {x:+.2e}" for (lo, hi), x in zip(zip(cuts, cuts[1:]), parts)))


if __name__ == "__main__":
    sys.exit(main())
