"""How much noise verify's FD plateau carries, and how often its bound is at the edge
(sensitivity/verify.py: FD_NOISE_FACTOR, ``fd_noise``).

Part 1, measured: one verify's adjoint, direct, round-off σ, complex step and FD sweep
of CONFIG (default: tests/test_verify_configs.py's case of the double wishbone, 2 steps,
its 15-variable subset).  Per objective: ψ's noise as ``fd_noise`` sees it (σ̂, the RMS
of |f(h) − f_plateau|·2h over the steps below each plateau, m samples), as
``psi_noise`` sees it (the largest draw), the RMS over the variables of
|f(h) − g|·2h at each step (g = complex step: the truth to 1e-9 relative), and with
--scan K the RMS of n₊ − n₋ from ψ at 2K + 1 points 10⁻⁶·s apart along every variable
(residuals of a quadratic fit, ×√2).  Then the worst FD ratio to its bound with and
without the noise term.

Part 2, simulated: --draws R verify runs of the same checks, each sweep drawn afresh
as f(h) = g + c h² + (n₊ − n₋)/2h with c from the measured sweep's largest step and
n₊ − n₋ ~ N(0, σ̂²) of its objective (the round-off model the scan supports); the
bounds' other terms as measured.  Reported: how often the worst FD ratio of a run
exceeds 0.5 (tests/test_verify_configs.py's limit) and 1 (a false failure), without
and with the noise term.

    PYTHONPATH=$PWD python benchmarks/verify_fd_noise.py [--config NAME] [--set K=V ...] [--scan 10] [--draws 2000]
"""
import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

import parmbs  # noqa: F401  (before numpy: parmbs/_determinism.py pins numpy's CPU features)
import numpy as np

from parmbs.api import problem
from parmbs.sensitivity import verify as V

ROOT = Path(__file__).resolve().parents[1]


def config_path(name, tmp):
    """configs/NAME, or its design subset of tests/test_verify_configs.py."""
    sys.path.insert(0, str(ROOT / "tests"))
    import test_verify_configs as T
    if name in T.DESIGN_SUBSET:
        return T._design_subset(name, T.DESIGN_SUBSET[name], Path(tmp)), T.HORIZON[name]
    return ROOT / "configs" / name, T.HORIZON.get(name, [])


def worst(checks, with_noise):
    """Largest |fd − ref| / bound over the checks, the noise term in or out."""
    r = 0.0
    for c in checks:
        if c.fd is None:
            continue
        b = c.bound_fd - (0.0 if with_noise else c.fd_noise)
        r = max(r, abs(c.fd - 0.5 * (c.adjoint + c.direct)) / b)
    return r


def scan_noise(pr, p0, j, k, rel, objectives):
    """RMS of n₊ − n₋ of each objective along variable j (quadratic fit residuals × √2)."""
    rho = np.asarray(pr.design.values(p0), float)
    d = rel * V.fd_scales(pr.design, rho)[j]
    ks = np.arange(-k, k + 1, dtype=float)
    ys = {o: [] for o in objectives}
    for kk in ks:
        r = rho.copy()
        r[j] += kk * d
        p = pr.design.apply(p0, r)
        vals = pr.objective_values(pr.forward(p), p)
        for o in objectives:
            ys[o].append(vals[o])
    A = np.vstack([np.ones_like(ks), ks, ks * ks]).T
    out = {}
    for o in objectives:
        y = np.array(ys[o])
        res = y - A @ np.linalg.lstsq(A, y, rcond=None)[0]
        out[o] = math.sqrt(2.0) * res.std(ddof=3)
    return out


def simulate(checks, sweeps, cs, names, draws, seed=20261128):
    """(P(worst > 0.5), P(worst > 1), median worst) without and with the noise term."""
    rng = np.random.default_rng(seed)
    objs = sorted({c.objective for c in checks})
    sig = {o: V.fd_noise(sweeps, o)[0] for o in objs}
    res = {False: [], True: []}
    for _ in range(draws):
        sw = []
        for j, s in enumerate(sweeps):
            est = {}
            for o in objs:
                g = float(cs[o][j])
                c2 = 0.0 if s.est[o][0] is None else (s.est[o][0] - g) / s.h[0] ** 2
                est[o] = [g + c2 * h * h + sig[o] * rng.standard_normal() / (2 * h) for h in s.h]
            sw.append(V.Sweep(s.name, s.scale, s.h, est))
        noise = {o: V.fd_noise(sw, o)[0] for o in objs}
        sim = []
        for c in checks:
            j = names.index(c.name)
            pl = sw[j].plateau(c.objective)
            g = float(cs[c.objective][j])
            s = V.Check(c.objective, c.name, g, g, c.bound_ad, newton_bias=c.newton_bias)
            s.fd_h, s.fd, s.fd_delta = sw[j].h[pl[0]], pl[1], pl[2]
            s.fd_noise = V.fd_noise_term(noise[c.objective], s.fd_h)
            sim.append(s)
        for k in res:
            res[k].append(worst(sim, k))
    return {k: (float(np.mean(np.array(v) > 0.5)), float(np.mean(np.array(v) > 1.0)), float(np.median(v)))
            for k, v in res.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="double-wishbone-opt.toml", help="a file in configs/")
    ap.add_argument("--set", action="append", default=[], help="more overrides (after the test's)")
    ap.add_argument("--scan", type=int, default=0, help="K: ψ at 2K + 1 points along every variable")
    ap.add_argument("--draws", type=int, default=0, help="R simulated verify runs")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path, sets = config_path(a.config, tmp)
        pr = problem(str(path), ["simulation.progress=false"] + sets + a.set)
    t0 = time.process_time()
    values = pr.objective_values(pr.forward())
    p0 = pr.sys.p.copy()
    adj, _, _, cs, why, sweeps, checks = V.run_checks(pr, p0)
    print(f"{a.config} {' '.join(sets + a.set)}: {pr.nsteps} steps, {len(sweeps)} variables; verify's runs "
          f"{time.process_time() - t0:.1f} s CPU")
    ref = cs if cs is not None else adj
    names = list(pr.design.names)
    scans = [scan_noise(pr, p0, j, a.scan, 1e-6, list(adj)) for j in range(len(names))] if a.scan else []
    pr.forward(p0)
    print(f"{'objective':<16} {'psi':>10} {'fd_noise σ̂':>11} {'m':>3} {'psi_noise':>9}   "
          + " ".join(f"{'h/s=' + format(r, '.0e'):>8}" for r in V.FD_REL_STEPS[1:])
          + ("   scan RMS, max/RMS" if scans else ""))
    for o in adj:
        sn, m = V.fd_noise(sweeps, o)
        by_step = []
        for i in range(1, len(V.FD_REL_STEPS)):
            xs = [(s.est[o][i] - float(ref[o][j])) * 2 * s.h[i]
                  for j, s in enumerate(sweeps) if s.est[o][i] is not None]
            by_step.append(math.sqrt(np.mean(np.square(xs))) if xs else float("nan"))
        line = (f"{o:<16} {values[o]:>10.4e} {sn:>11.2e} {m:>3} {V.psi_noise(sweeps, o) or 0.0:>9.2e}   "
                + " ".join(f"{x:>8.1e}" for x in by_step))
        if scans:
            sc = np.array([s[o] for s in scans])
            rms = math.sqrt(np.mean(sc ** 2))
            line += f"   {rms:.2e}, {sc.max() / rms:.2f}"
        print(line)
    w = {k: max(((abs(c.fd - 0.5 * (c.adjoint + c.direct)) / (c.bound_fd - (0 if k else c.fd_noise)),
                  f"{c.objective}/{c.name}") for c in checks if c.fd is not None), default=None) for k in (False, True)}
    print(f"worst FD ratio: without the noise term {w[False][0]:.3f} ({w[False][1]}), "
          f"with it {w[True][0]:.3f} ({w[True][1]})")
    if a.draws:
        if cs is None:
            print(f"no simulation: complex step is not available ({why})")
            return
        t1 = time.process_time()
        r = simulate(checks, sweeps, cs, names, a.draws)
        for k, lab in ((False, "without"), (True, "with")):
            print(f"{a.draws} simulated runs, {lab} the noise term: worst FD ratio > 0.5 in {r[k][0]:.4f}, "
                  f"> 1 in {r[k][1]:.4f}, median {r[k][2]:.3f}")
        print(f"simulation {time.process_time() - t1:.1f} s CPU")


if __name__ == "__main__":
    main()
