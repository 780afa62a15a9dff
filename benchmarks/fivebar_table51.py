"""Five-bar: our dψ1/dL01, dψ1/dL02 beside seed 004 Table 5.1 (and seed 002 Table 1).

L01, L02 are the spring natural lengths (``Ls1``, ``Ls2`` in configs/fivebar.toml);
ψ1 = ∫₀⁵ |r₁ − r₁(0)|² dt.  The thesis rows are at h = 1e-2; its row 11 (complex-step
differences) is the converged value and equals seed 002's reference column.  For each
of our formulation × method pairs we print the value at h = 1e-2 and at h = 1e-3, and
the gap to row 11.  Our direct and adjoint gradients differentiate the same discrete
scheme exactly, so rows 2/6 (index-1) and 4/8 (Maggi) agree to round-off, where the
thesis' adjoint rows integrate continuous adjoint equations and differ from its
direct rows by O(h) (see parmbs/formulations/index1.py, maggi.py).  The rows
"8: Adjoint Maggi's (variant)" are the thesis' own adjoint ODEs (eqs. 3.124, 3.131,
3.146; simulation.maggi.adjoint, parmbs/formulations/maggi_avm.py) integrated backward
by the trapezoidal rule: they differ from our row 4 by O(h²).  The penalty rows run
twice: ts-cn (implicit midpoint) and ts-rk (explicit RK4 on the penalty ODE, the kind of
integrator the thesis' MBSVT used; α, ξ, ω from configs/fivebar.toml's defaults).

``--right-rule``: also print, for our own steppers at the first dt, the gradient of ψ1
accumulated by the right-endpoint rectangle rule h Σ_{k=1..N} g(x_k) instead of our
trapezoidal weights.  With it our index-1 direct value reproduces the thesis' row 2
to all printed digits and index-3 its row 1 to 5e-5 (the thesis' 0.2 % gap to row 11
is that O(h) quadrature error).

``--penalty-study``: instead of the table, what moves the penalty rows with RK: the
penalty factor α (RK4, h = 1e-2, direct) and adaptive Dormand–Prince 5(4) (ts-rk with
simulation.adapt, rtol = atol; our adjoint over the accepted steps), each adaptive run
beside a real central difference at δ = 1e-7 whose two runs choose their own steps
(not frozen: what an FD around an error-controlled integrator sees; thesis row 10).

Usage: python benchmarks/fivebar_table51.py [--dts 1e-2,1e-3] [--right-rule] [--penalty-study]
       [--penalty-trapezoidal] [--penalty-candidates]
"""
import argparse
import pathlib
import time

import parmbs  # noqa: F401  (before numpy: parmbs/_determinism.py)
import numpy as np

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem

CFG = pathlib.Path(__file__).resolve().parents[1] / "configs" / "fivebar.toml"
THESIS = {  # seed 004 Table 5.1, h = 1e-2: (dψ/dL01, dψ/dL02)
    "1: Direct index-3": (-4.2381, 3.2170), "2: Direct index-1": (-4.2383, 3.2169),
    "3: Direct penalty": (-4.2305, 3.2154), "4: Direct Maggi's": (-4.2300, 3.2112),
    "5: Adjoint index-3": (-4.2287, 3.2090), "6: Adjoint index-1": (-4.2294, 3.2094),
    "7: Adjoint penalty": (-4.2293, 3.2137), "8: Adjoint Maggi's": (-4.2294, 3.2093),
    "11: Complex step (reference)": (-4.2288, 3.2116),
}
REF = np.array(THESIS["11: Complex step (reference)"])
OURS = [("1: Direct index-3", "index3", "trapezoidal", "direct"),
        ("2: Direct index-1", "index1", "trapezoidal", "direct"),
        ("4: Direct Maggi's", "maggi", "trapezoidal", "direct"),
        ("5: Adjoint index-3", "index3", "trapezoidal", "adjoint"),
        ("6: Adjoint index-1", "index1", "trapezoidal", "adjoint"),
        ("8: Adjoint Maggi's", "maggi", "trapezoidal", "adjoint"),
        ("3: Direct penalty", "penalty", "ts-cn", "direct"),
        ("7: Adjoint penalty", "penalty", "ts-cn", "adjoint"),
        # the penalty rows with explicit RK4 (ts-rk, penalty_explicit.py), as the thesis'
        # MBSVT integrated them; TSAdjoint of the same RK4 steps
        ("3: Direct penalty (ts-rk)", "penalty", "ts-rk", "direct"),
        ("7: Adjoint penalty (ts-rk)", "penalty", "ts-rk", "adjoint")]
# the thesis' own adjoint ODEs for Maggi's formulation (simulation.maggi.adjoint,
# parmbs/formulations/maggi_avm.py), each beside thesis row 8
AVM_ROWS = [(f"8: Adjoint Maggi's ({v})", "maggi", "trapezoidal", "adjoint", v)
            for v in ("first-order-explicit", "first-order-implicit", "second-order")]


def gradient(formulation, integrator, method, dt, right_rule=False, avm="discrete", extra=(), fd=None):
    """(dψ1/dL01, dψ1/dL02), seconds; ``extra``: more config settings; ``fd``: also the
    real central difference at step ``fd`` with unfrozen steps (then a third value)."""
    cfg = load_config(str(CFG), [f"simulation.dt={dt}", f'simulation.formulation="{formulation}"',
                                 f'simulation.integrator="{integrator}"', *extra]
                      + ([f'simulation.maggi.adjoint="{avm}"'] if formulation == "maggi" else []))
    pr = Problem(cfg)
    pr.objectives = [o for o in pr.objectives if o.name == "psi1"]
    if right_rule:                  # ψ1 ≈ h Σ_{k=1..N} g(x_k) (our steppers read Problem.w)
        pr.w = np.r_[0.0, np.full(pr.nsteps, pr.h)]
    t0 = time.perf_counter()
    if method == "adjoint":
        g = pr.adjoint() if formulation == "penalty" else (pr.forward(), pr.adjoint())[1]
    else:
        g = pr.direct() if formulation == "penalty" else (pr.forward(), pr.direct())[1]
    names = pr.design.names
    g = g["psi1"]
    out = np.array([g[names.index("Ls1")], g[names.index("Ls2")]]), time.perf_counter() - t0
    if fd is None:
        return out
    steps, cd = pr.traj.steps, []
    for name in ("Ls1", "Ls2"):
        j, vals = names.index(name), []
        for sgn in (1, -1):
            rho = pr.design.values(pr.sys.p)
            rho[j] += sgn * fd
            pr.forward(pr.design.apply(pr.sys.p, rho))       # its own (adaptive) steps
            vals.append(pr.objective_values()["psi1"])
        cd.append((vals[0] - vals[1]) / (2 * fd))
    return out + (np.array(cd), steps)


def penalty_study():
    print("five-bar penalty, psi1 over 5 s: dpsi1/dL01, dpsi1/dL02 (thesis row 3: -4.2305 3.2154, "
          "row 7: -4.2293 3.2137, row 11: -4.2288 3.2116)")
    for a in ("1e5", "1e6", "1e7"):
        g, t = gradient("penalty", "ts-rk", "direct", 1e-2, extra=[f"simulation.penalty.alpha={a}"])
        print(f"RK4 h=1e-2 alpha={a:<5} direct   {g[0]:>10.6f} {g[1]:>10.6f}  gap to row 11 "
              f"{abs(g[0] - REF[0]) / abs(REF[0]):.1e} {abs(g[1] - REF[1]) / abs(REF[1]):.1e}  {t:.0f}s", flush=True)
    for r in ("1e-3", "1e-4", "1e-5", "1e-6"):
        g, t, cd, n = gradient("penalty", "ts-rk", "adjoint", 1e-2, extra=[f"simulation.adapt={{rtol={r}, atol={r}}}"],
                               fd=1e-7)
        print(f"5dp rtol=atol={r:<5} adjoint {g[0]:>10.6f} {g[1]:>10.6f}  gap to row 11 "
              f"{abs(g[0] - REF[0]) / abs(REF[0]):.1e} {abs(g[1] - REF[1]) / abs(REF[1]):.1e}  {n} steps; "
              f"unfrozen real FD 1e-7: {cd[0]:.4f} {cd[1]:.4f}", flush=True)


def penalty_candidates():
    """The settings of the thesis' penalty run not yet measured: the order of its explicit
    RK (PETSc's RK tableaux 2a Heun, 2b explicit midpoint, 3 and 3bs of order 3, 4 the
    shipped RK4; 1fe, forward Euler, is unstable at h = 1e-2; their direct
    gradient, the exact tangent of the tableau), the penalty factor below 1e5 (1e3, 1e4)
    and the penalty's ω, ξ; each with ψ1 by the trapezoid weights and by the
    right-endpoint rule h Σ_{k≥1} (which reproduces rows 1–2 for the DAE steppers)."""
    import parmbs.integrators.ts as tsmod
    trap = tsmod.quadrature_weights

    def right(nsteps, h):
        return np.r_[0.0, np.full(nsteps, h)]
    print("five-bar penalty ts-rk, h = 1e-2, direct: dpsi1/dL01, dpsi1/dL02 (row 3: -4.2305 3.2154, "
          "row 7: -4.2293 3.2137, row 11: -4.2288 3.2116)")
    runs = [(f"RK {t}, alpha 1e7", [f'simulation.petsc_options={{ts_rk_type="{t}"}}']) for t in ("2a", "2b", "3", "3bs", "4")]
    runs += [(f"RK4, alpha {a}", [f"simulation.penalty.alpha={a}"]) for a in ("1e3", "1e4")]
    runs += [(f"RK4, alpha 1e7, omega {o}, xi {x}", [f"simulation.penalty.omega={o}", f"simulation.penalty.xi={x}"])
             for o, x in (("1", "1"), ("100", "1"), ("10", "0"))]
    runs += [(f"RK4, alpha 1e3, omega {o}, xi {x}", ["simulation.penalty.alpha=1e3", f"simulation.penalty.omega={o}",
                                                     f"simulation.penalty.xi={x}"]) for o, x in (("1", "1"), ("100", "1"))]
    for name, extra in runs:
        for rule, w in (("trapezoid", trap), ("right-endpoint", right)):
            tsmod.quadrature_weights = w
            try:
                g, t = gradient("penalty", "ts-rk", "direct", 1e-2, extra=extra)
            except Exception as e:               # a setting that fails: say so
                print(f"{name:<34} {rule:<15} failed: {type(e).__name__}: {str(e)[:80]}", flush=True)
                break
            finally:
                tsmod.quadrature_weights = trap
            print(f"{name:<34} {rule:<15} {g[0]:>10.6f} {g[1]:>10.6f}  gap to row 11 {(g[0] - REF[0]) / abs(REF[0]):+.1e} "
                  f"{(g[1] - REF[1]) / abs(REF[1]):+.1e}  to row 3 {(g[0] - -4.2305) / 4.2305:+.1e} "
                  f"{(g[1] - 3.2154) / 3.2154:+.1e}  {t:.0f}s", flush=True)


def trapezoidal_psi1(pr, rho, h):
    """ψ1 (trapezoid weights, right-endpoint rule) of the penalty ODE ẏ = G(t, y) (the
    ts-rk model, penalty_explicit.py) integrated by the implicit trapezoidal rule
        y_{k+1} = y_k + h/2 (G(t_k, y_k) + G(t_{k+1}, y_{k+1})),
    which on y = (q, v) is Newmark's average-acceleration rule (β = ¼, γ = ½), the scheme
    of seed 004 §2.1 that the thesis' rows 1-2 used.  Newton on y_{k+1} with G_y until the
    update stops shrinking below 1e-13 |y| (round-off), at most 20 iterations."""
    from parmbs.sensitivity.problem import Trajectory
    st, p = pr.stepper, pr.design.apply(pr.sys.p, rho)
    mod, n, N = st.mod, st.mod.n, pr.nsteps
    q0, v0, _, _ = st.init.solve(pr.t0, p)
    y = np.r_[q0, v0]
    T = pr.t0 + h * np.arange(N + 1)
    Y = [y]
    g0 = mod.eval(T[0], y, np.zeros_like(y), p).G()
    for k in range(N):
        z, last = y + h * g0, np.inf                 # explicit Euler guess
        for it in range(20):
            pe = mod.eval(T[k + 1], z, np.zeros_like(z), p)
            r = z - y - 0.5 * h * (g0 + pe.G())
            dz = np.linalg.solve(np.eye(len(z)) - 0.5 * h * pe.Gy(), -r)
            z = z + dz
            d = np.max(np.abs(dz))
            if d <= 1e-13 * max(np.max(np.abs(z)), 1.0) or d > 0.5 * last:
                break
            last = d
        else:
            raise RuntimeError(f"step {k + 1}: trapezoidal Newton did not converge ({d:.1e})")
        y, g0 = z, mod.eval(T[k + 1], z, np.zeros_like(z), p).G()
        Y.append(y)
    Y = np.array(Y)
    acc = [mod.accel(t, yk, p) for t, yk in zip(T, Y)]
    traj = Trajectory(T, Y[:, :n], Y[:, n:], np.array([a for a, _ in acc]), np.array([lam for _, lam in acc]),
                      np.zeros(N, np.int64))
    out, w0 = [], pr.w
    for w in (w0, np.r_[0.0, np.full(N, h)]):        # trapezoid weights, right-endpoint rule
        pr.w = w
        out.append(pr.objective_values(traj, p)["psi1"])
    pr.w = w0
    return np.array(out)


def penalty_trapezoidal(alphas=("1e7",), h=1e-2, delta=1e-6):
    """The penalty rows with the trapezoidal rule instead of RK: central differences
    (δ = 1e-6, on the fixed step sequence: the exact gradient of the discrete ψ1 to
    O(δ²) and Newton's round-off / δ) with the trapezoid and the right-endpoint weights."""
    print("five-bar penalty, trapezoidal rule (Newmark beta=1/4), h=%g, psi1 over 5 s by central FD delta=%g "
          "(thesis row 3: -4.2305 3.2154, row 1: -4.2381 3.2170, row 11: -4.2288 3.2116)" % (h, delta))
    for a in alphas:
        cfg = load_config(str(CFG), [f"simulation.dt={h}", 'simulation.formulation="penalty"',
                                     'simulation.integrator="ts-rk"', f"simulation.penalty.alpha={a}"])
        pr = Problem(cfg)
        pr.objectives = [o for o in pr.objectives if o.name == "psi1"]
        names, rho0 = pr.design.names, pr.design.values(pr.sys.p)
        t0 = time.perf_counter()
        cols = []
        for name in ("Ls1", "Ls2"):
            j = names.index(name)
            r1, r2 = rho0.copy(), rho0.copy()
            r1[j] += delta
            r2[j] -= delta
            cols.append((trapezoidal_psi1(pr, r1, h) - trapezoidal_psi1(pr, r2, h)) / (2 * delta))
        for i, rule in enumerate(("trapezoid weights", "right-endpoint rule")):
            g = np.array([cols[0][i], cols[1][i]])
            gap = (g - REF) / np.abs(REF)
            print(f"alpha={a:<5} {rule:<20} {g[0]:>10.6f} {g[1]:>10.6f}  gap to row 11 {gap[0]:+.1e} {gap[1]:+.1e}  "
                  f"{time.perf_counter() - t0:.0f}s", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dts", default="1e-2,1e-3")
    ap.add_argument("--right-rule", action="store_true")
    ap.add_argument("--penalty-study", action="store_true")
    ap.add_argument("--penalty-trapezoidal", action="store_true",
                    help="the penalty rows with the trapezoidal rule (central FD; alpha 1e5, 1e6, 1e7)")
    ap.add_argument("--penalty-candidates", action="store_true",
                    help="RK order, alpha below 1e5, omega and xi of the penalty rows (RK, direct)")
    args = ap.parse_args()
    if args.penalty_candidates:
        return penalty_candidates()
    if args.penalty_study:
        return penalty_study()
    if args.penalty_trapezoidal:
        return penalty_trapezoidal(("1e7", "1e6", "1e5"))
    dts = [float(x) for x in args.dts.split(",")]
    print("five-bar, psi1 over 5 s: dpsi1/dL01, dpsi1/dL02 (seed 004 Table 5.1; row 11 = seed 002 Table 1)")
    print(f"{'row':<44} {'thesis h=1e-2':>22} " + " ".join(f"{'parmbs h=' + format(dt, 'g'):>22} {'gap to row 11':>16}"
                                                      for dt in dts) + "  time"
          + (f"  {'right rule h=' + format(dts[0], 'g'):>22}" if args.right_rule else ""))
    for row, form, integ, meth, *avm in OURS + AVM_ROWS:
        th = THESIS[row.split(" (")[0]]
        cells, times = [], []
        for dt in dts:
            try:
                g, t = gradient(form, integ, meth, dt, avm=avm[0] if avm else "discrete")
                gap = np.abs(g - REF) / np.abs(REF)
                cells.append(f"{g[0]:>10.4f} {g[1]:>10.4f}  {gap[0]:>7.1e} {gap[1]:>7.1e}")
                times.append(f"{t:.1f}s")
            except Exception as e:              # a scheme that fails at this dt: say so
                cells.append(f"{'failed: ' + type(e).__name__:>39}")
                times.append("-")
        extra = ""
        if args.right_rule:
            extra = f"  {'-':>22}"
            if form != "penalty":
                g, _ = gradient(form, integ, meth, dts[0], right_rule=True, avm=avm[0] if avm else "discrete")
                extra = f"  {g[0]:>10.4f} {g[1]:>10.4f}"
        print(f"{row:<44} {th[0]:>10.4f} {th[1]:>10.4f}  " + "  ".join(cells) + "  " + "/".join(times) + extra)
    print(f"{'11: Complex step (reference)':<44} {REF[0]:>10.4f} {REF[1]:>10.4f}")


if __name__ == "__main__":
    main()
