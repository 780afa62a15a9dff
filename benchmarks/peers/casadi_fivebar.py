"""CasADi peer of the five-bar gradient (issue 3): same model, objectives and design
variables as configs/fivebar.toml, solved in continuous time by SUNDIALS through
CasADi, gradients by CVODES/IDAS adjoint sensitivities; compared with parmbs's
discrete adjoint at one or more dt (parmbs converges to the continuous value as dt²).

Model (independent of parmbs; numbers read from the TOML, topology fixed here):
  * minimal coordinates z = (θ_A1, θ_3B), the absolute angles of the two grounded bars
    (body-frame angles as in the config: A1's frame at A pointing to 1, B3B's frame at 3
    pointing to B); point 2 from the circle intersection of |r2−r1| = L12, |r3−r2| = L23
    (lower branch).  The trajectory stays far from the singular (stretched) pose
    (fivebar.md §8.5).
  * Each bar: q_b(z) = (x_G, y_G, θ) of its centre of mass, constant M = diag(m, m, I_G);
    the ODE is  J̄ᵀ M J̄ z̈ = −∇_z V − J̄ᵀ M (J̄̇ ż),  J̄ = ∂q/∂z, V = gravity + the two
    springs; everything is CasADi AD (SX), the 2×2 system solved symbolically.
  * Quadratures ψ1 = ∫|r2 − (0.5, −2)|², ψ2 = ∫|ṙ2|², ψ3 = ∫|r̈2|² (r̈2 = J2 z̈ + J̇2 ż).
  * Design p = (Ls1, Ls2, m_A1, xG_A1, L_A1); I_G of A1 stays fixed (fivebar.md §8.2).
  * Initial assembly inside the graph: θ_A1 and the angle of bar 1-2 are held (the
    config's independent coordinates), r1 = A + L_A1 e(θ_A1), r2 = r1 + L12 e(θ_12);
    θ_3B solves |B − L3B e(θ_3B) − r2|² = L23² with a CasADi `rootfinder` (Newton), so
    its dependence on L_A1 is differentiated (implicit function theorem).  Start at rest.
  * Gradient: reverse mode through the integrator (`jtimes(ψ, p, I₃, tr=True)`): CasADi
    runs the forward problem with checkpoints and one backward adjoint problem with 3
    adjoint directions (+ backward quadratures for ∂ψ/∂p).  Forward-mode (5 forward
    sensitivity directions) is timed too.

Usage: .venv/bin/python benchmarks/peers/casadi_fivebar.py [--dts 1e-3,5e-4] [--tol 1e-10]
Exit 2 if casadi is not installed (pip install '.[peers]').
"""
import argparse
import pathlib
import statistics
import sys
import time
import tomllib

try:
    import casadi as ca
except ImportError:
    print("casadi_fivebar: casadi is not installed (pip install 'parmbs[peers]' or pip install casadi)")
    sys.exit(2)
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
CONFIG = ROOT / "configs" / "fivebar.toml"
DESIGN = ("Ls1", "Ls2", "m_A1", "xG_A1", "L_A1")
OBJECTIVES = ("psi1", "psi2", "psi3")


def read_model(path):
    """Numbers of the five-bar from the config; checks the topology is the one built here."""
    c = tomllib.loads(pathlib.Path(path).read_text())
    b = {x["name"]: x for x in c["bodies"]}
    f = {x["name"]: x for x in c["forces"]}
    joints = [(j["a"], j["b"]) for j in c["joints"]]
    assert joints == [("ground.A", "A1.O"), ("A1.P1", "B12.O"), ("B12.P2", "B23.O"),
                      ("B23.P3", "B3B.O"), ("B3B.PB", "ground.B")], "five-bar topology changed"
    assert (f["S1"]["a"], f["S1"]["b"], f["S2"]["a"], f["S2"]["b"]) == ("A1.P1", "ground.B", "B12.P2", "ground.B")
    for name in b:
        assert b[name]["points"]["O"] == [0.0, 0.0] and b[name]["com"][1] == 0.0
    assert set(b["A1"]["independent"]) == {"angle"} and set(b["B12"]["independent"]) == {"angle"}
    assert not any(x.get("initial_velocity") for x in c["bodies"]), "the peer starts from rest"
    assert all(f[s].get("damping", 0.0) == 0.0 for s in f)
    design = [d["path"] for d in c["design"]]
    assert design == ["forces.S1.length", "forces.S2.length", "bodies.A1.mass", "bodies.A1.com.x",
                      "bodies.A1.points.P1.x"], design
    m = dict(
        g=np.array(c["model"]["gravity"]), A=np.array(c["ground"]["points"]["A"]),
        B=np.array(c["ground"]["points"]["B"]), t_end=c["simulation"]["t_end"],
        k1=f["S1"]["stiffness"], k2=f["S2"]["stiffness"],
        th1=b["A1"]["initial"]["angle"], th12=b["B12"]["initial"]["angle"], th4=b["B3B"]["initial"]["angle"],
        L12=b["B12"]["points"]["P2"][0], L23=b["B23"]["points"]["P3"][0], L3B=b["B3B"]["points"]["PB"][0],
        ref=np.array([o for o in c["objectives"] if o["name"] == "psi1"][0]["reference"]))
    for key in ("A1", "B12", "B23", "B3B"):
        m[f"m_{key}"], m[f"I_{key}"], m[f"xG_{key}"] = b[key]["mass"], b[key]["inertia"], b[key]["com"][0]
    p0 = np.array([f["S1"]["length"], f["S2"]["length"], b["A1"]["mass"], b["A1"]["com"][0],
                   b["A1"]["points"]["P1"][0]])
    return m, p0


def e(th):
    return ca.vertcat(ca.cos(th), ca.sin(th))


def build(m, plugin, tol):
    """CasADi functions: ψ(p), and ψ with its gradient by reverse / forward mode."""
    z, zd, p = ca.SX.sym("z", 2), ca.SX.sym("zd", 2), ca.SX.sym("p", 5)
    Ls1, Ls2, mA1, xGA1, LA1 = (p[i] for i in range(5))
    A, B, g = ca.DM(m["A"]), ca.DM(m["B"]), ca.DM(m["g"])
    th1, th4 = z[0], z[1]
    r1 = A + LA1 * e(th1)
    r3 = B - m["L3B"] * e(th4)                       # B3B frame at 3, x toward B
    d = r3 - r1
    D2 = ca.dot(d, d)
    D = ca.sqrt(D2)
    a = (m["L12"] ** 2 - m["L23"] ** 2 + D2) / (2 * D)
    hh = ca.sqrt(m["L12"] ** 2 - a * a)
    r2 = r1 + a * d / D - hh * ca.vertcat(-d[1], d[0]) / D    # lower branch
    th12 = ca.atan2(r2[1] - r1[1], r2[0] - r1[0])
    th23 = ca.atan2(r3[1] - r2[1], r3[0] - r2[0])
    bodies = [  # (q_b(z), mass, I_G)
        (ca.vertcat(A + xGA1 * e(th1), th1), mA1, m["I_A1"]),
        (ca.vertcat(r1 + m["xG_B12"] * e(th12), th12), m["m_B12"], m["I_B12"]),
        (ca.vertcat(r2 + m["xG_B23"] * e(th23), th23), m["m_B23"], m["I_B23"]),
        (ca.vertcat(r3 + m["xG_B3B"] * e(th4), th4), m["m_B3B"], m["I_B3B"]),
    ]
    Mbar = ca.SX.zeros(2, 2)
    rhs = ca.SX.zeros(2)
    V = 0
    for qb, mb, Ib in bodies:
        J = ca.jacobian(qb, z)
        Jd_zd = ca.jtimes(J @ zd, z, zd)              # J̇ ż
        Mb = ca.diag(ca.vertcat(mb, mb, Ib))
        Mbar += J.T @ Mb @ J
        rhs -= J.T @ (Mb @ Jd_zd)
        V -= mb * ca.dot(g, qb[0:2])
    l1, l2 = ca.norm_2(r1 - B), ca.norm_2(r2 - B)
    V += 0.5 * m["k1"] * (l1 - Ls1) ** 2 + 0.5 * m["k2"] * (l2 - Ls2) ** 2
    rhs -= ca.gradient(V, z)
    zdd = ca.solve(Mbar, rhs)                         # symbolic 2×2
    J2 = ca.jacobian(r2, z)
    v2 = J2 @ zd
    acc2 = J2 @ zdd + ca.jtimes(v2, z, zd)
    dev = r2 - ca.DM(m["ref"])
    quad = ca.vertcat(ca.dot(dev, dev), ca.dot(v2, v2), ca.dot(acc2, acc2))
    x = ca.vertcat(z, zd)
    dae = {"x": x, "p": p, "ode": ca.vertcat(zd, zdd), "quad": quad}
    opts = {"abstol": tol, "reltol": tol, "max_num_steps": 200000, "quad_err_con": True}
    if plugin == "cvodes":
        opts["linear_multistep_method"] = "adams"      # non-stiff: Adams, functional-free Newton
    F = ca.integrator("F", plugin, dae, 0.0, m["t_end"], opts)

    # initial assembly: θ_A1, θ_12 held; θ_3B from loop closure (rootfinder in the graph)
    t4, pp = ca.SX.sym("t4"), ca.SX.sym("pp", 5)
    r1_0 = A + pp[4] * e(m["th1"])
    r2_0 = r1_0 + m["L12"] * e(m["th12"])
    r3_0 = B - m["L3B"] * e(t4)
    res = ca.Function("closure", [t4, pp], [ca.dot(r3_0 - r2_0, r3_0 - r2_0) - m["L23"] ** 2])
    closure = ca.rootfinder("closure_solve", "newton", res, {"abstol": 1e-15, "abstolStep": 1e-15})

    P = ca.MX.sym("P", 5)
    th4_0 = closure(m["th4"], P)
    x0 = ca.vertcat(m["th1"], th4_0, 0, 0)
    out = F(x0=x0, p=P)
    psi = out["qf"]
    fwd = ca.Function("psi", [P], [psi])
    rev = ca.Function("psi_grad_rev", [P], [psi, ca.jtimes(psi, P, ca.MX.eye(3), True)])
    dirf = ca.Function("psi_grad_fwd", [P], [psi, ca.jtimes(psi, P, ca.MX.eye(5), False)])
    r2fun = ca.Function("r2", [z, p], [r2])
    return fwd, rev, dirf, closure, r2fun, F


def timed(f, repeat=1, cpu=None):
    """(result, median wall time, first-call wall time); with a list ``cpu``, the median
    CPU time of this process (time.process_time: what other jobs on a loaded machine
    inflate far less than wall time) is appended to it."""
    ts, cs, out = [], [], None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        out = f()
        ts.append(time.perf_counter() - t0)
        cs.append(time.process_time() - c0)
    if cpu is not None:
        cpu.append(statistics.median(cs))
    return out, statistics.median(ts), ts[0]


def run_casadi(m, p0, plugin, tol, repeat):
    t0 = time.perf_counter()
    fwd, rev, dirf, closure, r2fun, F = build(m, plugin, tol)
    t_build = time.perf_counter() - t0
    # consistency of the assembled initial state with the circle-intersection branch
    th4 = float(closure(m["th4"], p0))
    r2 = np.array(r2fun([m["th1"], th4], p0)).ravel()
    assert np.allclose(r2, [0.5, -2.0], atol=1e-12), r2
    F(x0=ca.vertcat(m["th1"], th4, 0, 0), p=p0)
    steps = F.stats().get("nsteps", -1)
    (psi_f,), t_fwd, _ = timed(lambda: [fwd(p0)], repeat)
    cpu = []
    (psi, JT), t_rev, t_rev1 = timed(lambda: rev(p0), repeat, cpu)
    (_, Jf), t_dir, _ = timed(lambda: dirf(p0), repeat)
    psi = np.array(psi).ravel()
    G = np.array(JT).T                                # (3 objectives, 5 design)
    Gf = np.array(Jf)
    return dict(psi=psi, grad=G, grad_fwd=Gf, steps=steps, t_fwd=t_fwd, t_rev=t_rev, t_rev1=t_rev1, t_rev_cpu=cpu[0],
                t_dir=t_dir, t_build=t_build)


def run_parmbs(dt):
    from parmbs.config import load_config
    from parmbs.sensitivity.problem import Problem
    pr = Problem(load_config(str(CONFIG), [f"simulation.dt={dt}"]))
    t0 = time.perf_counter()
    pr.forward()
    t_fwd = time.perf_counter() - t0
    g = pr.adjoint()
    t_grad = time.perf_counter() - t0
    vals = pr.objective_values()
    assert list(pr.design.names) == list(DESIGN), pr.design.names
    return dict(psi=np.array([vals[o] for o in OBJECTIVES]), grad=np.array([g[o] for o in OBJECTIVES]),
                t_fwd=t_fwd, t_grad=t_grad)


def rel(a, b):
    return np.abs(a - b) / np.maximum(np.abs(b), 1e-300)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dts", default="1e-3,5e-4", help="parmbs steps (comma list); '' skips parmbs")
    ap.add_argument("--tol", type=float, default=1e-10, help="CasADi abstol = reltol")
    ap.add_argument("--plugins", default="cvodes,idas")
    ap.add_argument("--repeat", type=int, default=3, help="CasADi timings: median of this many calls")
    ap.add_argument("--json", help="also write the first plugin's psi, grad, steps and times here (benchmarks/adaptive.py)")
    args = ap.parse_args()
    m, p0 = read_model(CONFIG)

    peers = {}
    ref_key = args.plugins.split(",")[0]
    for plugin in args.plugins.split(","):
        peers[plugin] = run_casadi(m, p0, plugin, args.tol, args.repeat)
    # the same peer 100× tighter: an estimate of the CasADi gradient's own error
    peers[ref_key + "@tol/100"] = run_casadi(m, p0, ref_key, args.tol / 100, 1)
    ref = peers[ref_key]
    tight = peers[ref_key + "@tol/100"]
    if args.json:
        import json
        pathlib.Path(args.json).write_text(json.dumps(dict(
            psi=np.asarray(ref["psi"]).tolist(), grad=np.asarray(ref["grad"]).tolist(), steps=int(ref["steps"]),
            t_fwd=ref["t_fwd"], t_rev=ref["t_rev"], t_rev_cpu=ref["t_rev_cpu"], tol=args.tol, t_end=m["t_end"],
            psi_tight=np.asarray(tight["psi"]).tolist(), grad_tight=np.asarray(tight["grad"]).tolist())))

    print(f"\nfive-bar, t_end = {m['t_end']} s, CasADi {ca.__version__}, tolerance {args.tol:g}")
    print(f"{'CasADi run':<18} {'steps':>6} {'build s':>8} {'psi s':>8} {'adjoint s':>10} {'(1st call)':>11} {'forward-sens s':>15} "
          f"{'max rel d(grad) vs ' + ref_key:>26}")
    for k, r in peers.items():
        print(f"{k:<18} {r['steps']:>6} {r['t_build']:>8.2f} {r['t_fwd']:>8.3f} {r['t_rev']:>10.3f} {r['t_rev1']:>11.3f} {r['t_dir']:>15.3f} "
              f"{np.max(rel(r['grad'], ref['grad'])):>26.1e}")
    print(f"CasADi self-consistency: reverse vs forward mode {np.max(rel(ref['grad_fwd'], ref['grad'])):.1e}, "
          f"tol vs tol/100 {np.max(rel(ref['grad'], tight['grad'])):.1e} (gradient), "
          f"{np.max(rel(ref['psi'], tight['psi'])):.1e} (psi)")

    runs = {}
    for dt in [float(s) for s in args.dts.split(",") if s.strip()]:
        runs[dt] = run_parmbs(dt)
    rich = None
    if len(runs) >= 2:
        (h1, a), (h2, b) = sorted(runs.items(), reverse=True)[:2]
        r_ = (h1 / h2) ** 2
        rich = dict(psi=(r_ * b["psi"] - a["psi"]) / (r_ - 1), grad=(r_ * b["grad"] - a["grad"]) / (r_ - 1))

    cols = list(runs.items())
    print(f"\n{'':<14} {'CasADi ' + ref_key:>15}" + "".join(f" {'parmbs dt=' + format(dt, 'g'):>16} {'rel':>8}"
                                                          for dt, _ in cols)
          + (f" {'Richardson':>15} {'rel':>8}" if rich else ""))
    for i, o in enumerate(OBJECTIVES):
        rows = [(o, ref["psi"][i], [r["psi"][i] for _, r in cols], rich["psi"][i] if rich else None)]
        rows += [(f"d{o}/d{d}", ref["grad"][i, j], [r["grad"][i, j] for _, r in cols],
                  rich["grad"][i, j] if rich else None) for j, d in enumerate(DESIGN)]
        for name, cv, pv, rv in rows:
            line = f"{name:<14} {cv:>15.8g}" + "".join(f" {v:>16.8g} {abs(v - cv) / abs(cv):>8.1e}" for v in pv)
            if rv is not None:
                line += f" {rv:>15.8g} {abs(rv - cv) / abs(cv):>8.1e}"
            print(line)
    if cols:
        print(f"\n{'summary':<22} {'max rel grad':>13} {'max rel psi':>12} {'parmbs fwd s':>13} "
              f"{'parmbs fwd+adj s':>17} {'CasADi adj s':>13} {'CasADi/parmbs':>14}")
        for dt, r in cols:
            print(f"{'parmbs dt=' + format(dt, 'g'):<22} {np.max(rel(r['grad'], ref['grad'])):>13.1e} "
                  f"{np.max(rel(r['psi'], ref['psi'])):>12.1e} {r['t_fwd']:>13.2f} {r['t_grad']:>17.2f} "
                  f"{ref['t_rev']:>13.3f} {ref['t_rev'] / r['t_grad']:>14.4f}")
        if rich:
            print(f"{'Richardson (dt²)':<22} {np.max(rel(rich['grad'], ref['grad'])):>13.1e} "
                  f"{np.max(rel(rich['psi'], ref['psi'])):>12.1e}")
    print("(times include the forward run; CasADi: median of", args.repeat, "calls after the build, SX virtual machine "
          "without code generation; "
          "parmbs: Problem.forward + Problem.adjoint, serial)")


if __name__ == "__main__":
    main()
