"""Where an adaptive run's objective error comes from (issue 18, the Iltis' 0.04 s case):
the quadrature's true local errors against a converged integrand, the estimate the
error test saw, and the rtol part of the weights, per time window.

Reference: fixed steps at ρ∞ = --ref-rho (0.8: its (−1)^k acceleration mode damped;
at the file's 0.99 fine runs carry a growing Nyquist tone, benchmarks/README.md) with
Newton to round-off, at --ref-dt and --ref-dt/2, Richardson-extrapolated; the integrand
f(t) of the finer run, a cubic spline, is the "true" f.  For each accepted step of the
adaptive run (--rtol, --rho, objective_atol --objective-atol; atol = rtol/10):

  true  h/2 (f(t_k) + f(t_k+1)) − ∫ f dt         (trapezoidal local error on the true f)
  est   h³/12 · 2 · mean of the last two second divided differences of the run's own f
        (integrators/quad_error.py's estimate)
  rtolW rtol · h · max(½(|f_k| + |f_k+1|), ∫|f| / (t − t_0))   (its weight's rtol part)

summed per window, for the objective --objective (index; 1 = ψ4 of configs/iltis.toml),
and the run's error in ψ split into the quadrature part Σ w_k f(t_k) − ∫f and the
integrand part Σ w_k (f_k − f(t_k)).  CPU: time.process_time of the forward runs.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/iltis_quadrature_split.py --rtol 1e-6 --rho 0.9
"""
import parmbs  # noqa: F401  (first: parmbs/_determinism.py)

import argparse
import os
import time

import numpy as np
from scipy.interpolate import CubicSpline

from parmbs.config.loader import load_config
from parmbs.sensitivity.problem import Problem, physical

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = os.path.join(HERE, "..", "configs", "iltis.toml")
CASE = ["simulation.t_end=0.04", "spatial.road.x0=1.0"]
ROUNDOFF_NEWTON = ["simulation.newton.atol=1e-15", "simulation.newton.rtol=1e-16", "simulation.newton.max_it=60"]


def run(overrides, fixed=False, objective_atol=None):
    """(t, h, f per objective at the accepted states, ψ, steps, CPU s) of one forward run."""
    cfg = load_config(CONFIG, CASE + overrides)
    if fixed:
        cfg.simulation.adapt = None
    else:
        cfg.simulation.adapt.objective_atol = objective_atol
    pr = Problem(cfg)
    c0 = time.process_time()
    tr = pr.forward()
    cpu = time.process_time() - c0
    obs, p = pr.objectives, tr.p
    F = np.array([[ob.weight * ob.integrand.value(pr.sys, tr.t[k], physical(tr.x(k)), p, ob.reference(pr.sys, tr.q[0], p))
                   for ob in obs] for k in range(tr.steps + 1)])
    vals = pr.objective_values()
    return dict(t=np.array(tr.t), h=np.array(tr.grid.h), F=F, psi=np.array([vals[o.name] for o in obs]),
                steps=tr.steps, cpu=cpu)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rtol", type=float, default=1e-6)
    ap.add_argument("--rho", type=float, default=0.99, help="the adaptive run's rho_inf (the file's: 0.99)")
    ap.add_argument("--objective-atol", type=float, default=1e-10)
    ap.add_argument("--ref-dt", type=float, default=1.5625e-5)
    ap.add_argument("--ref-rho", type=float, default=0.8)
    ap.add_argument("--objective", type=int, default=1)
    ap.add_argument("--window", type=float, default=2.5e-3)
    a = ap.parse_args()

    r1, r2 = (run([f"simulation.dt={d}", f"simulation.rho_inf={a.ref_rho}"] + ROUNDOFF_NEWTON, fixed=True)
              for d in (a.ref_dt, a.ref_dt / 2))
    ref = (4 * r2["psi"] - r1["psi"]) / 3
    print(f"reference: rho_inf {a.ref_rho}, Newton to round-off, Richardson of dt {a.ref_dt:g} and {a.ref_dt / 2:g} "
          f"(psi {' '.join(f'{v:.10e}' for v in ref)}; the two differ by "
          f"{' '.join(f'{v:.1e}' for v in np.abs(r1['psi'] - r2['psi']) / np.abs(ref))})")
    ad = run([f"simulation.rho_inf={a.rho}", f"simulation.adapt.rtol={a.rtol}", f"simulation.adapt.atol={a.rtol / 10}"],
             objective_atol=a.objective_atol)
    err = (ad["psi"] - ref) / np.abs(ref)
    print(f"adaptive rtol {a.rtol:g}, rho_inf {a.rho}: {ad['steps']} steps, {ad['cpu']:.2f} s CPU, "
          f"relative error {' '.join(f'{e:+.1e}' for e in err)}")

    j, t, h, F = a.objective, ad["t"], ad["h"], ad["F"][:, a.objective]
    cs = CubicSpline(r2["t"], r2["F"][:, j])
    psi = ref[j]
    fr = cs(t)
    w = np.zeros(len(t))
    w[:-1] += h / 2
    w[1:] += h / 2
    print(f"objective {j}: quadrature part {(w @ fr - cs.integrate(t[0], t[-1])) / psi:+.2e}, "
          f"integrand part {w @ (F - fr) / psi:+.2e}")
    true = h / 2 * (fr[:-1] + fr[1:]) - np.array([cs.integrate(t[k], t[k + 1]) for k in range(len(h))])
    dd2 = lambda k: ((F[k + 1] - F[k]) / (t[k + 1] - t[k]) - (F[k] - F[k - 1]) / (t[k] - t[k - 1])) / (t[k + 1] - t[k - 1])
    est = np.zeros(len(h))
    for k in range(2, len(h)):
        est[k] = h[k] ** 3 / 12 * 2 * 0.5 * (dd2(k) + dd2(k - 1))
    S = np.concatenate([[0.0], np.cumsum(h / 2 * (np.abs(F[:-1]) + np.abs(F[1:])))])
    rtolw = a.rtol * h * np.maximum(0.5 * (np.abs(F[:-1]) + np.abs(F[1:])), S[1:] / (t[1:] - t[0]))
    print(f"{'window s':>9} {'steps':>6} {'h min':>8} {'h max':>8} {'true':>10} {'est':>10} {'rtol part':>10} "
          f"{'max |true|/rtol part':>21}   (sums / psi)")
    for lo in np.arange(t[0], t[-1], a.window):
        m = (t[:-1] >= lo) & (t[:-1] < lo + a.window)
        if m.any():
            print(f"{lo:>9.4f} {m.sum():>6} {h[m].min():>8.1e} {h[m].max():>8.1e} {true[m].sum() / psi:>+10.2e} "
                  f"{est[m].sum() / psi:>+10.2e} {rtolw[m].sum() / psi:>10.1e} {np.max(np.abs(true[m]) / rtolw[m]):>21.1e}")


if __name__ == "__main__":
    main()
