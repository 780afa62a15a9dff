"""Rigid–spring–beam example of seed 000 §6.2 (configs/rigid-spring-beam.toml): the
objective ψ = ∫₀ᵀ|d_B|² dt and its gradient with respect to the ground-joint position
(X_D, Y_D), adjoint (variational integrator, DAVM) against central differences, and a
few projected-gradient steps toward the optimum.

    .venv/bin/python benchmarks/rigid_spring_beam.py [--t-end 1.0] [--dt 1e-3] [--steps 0]

(X_D, Y_D) moves the ground point D, the beam length l = |C − D| and its initial angle
θ = atan2(C − D) (C, the beam tip at the spring, stays put: seed Eqs. 53–54).  The
config designs those four parameters; ``xd_gradient`` applies the chain rule

    ∂ψ/∂X_D = ∂ψ/∂D_x + ∂ψ/∂l (X_D − X_C)/l + ∂ψ/∂θ (Y_C − Y_D)/l²,
    ∂ψ/∂Y_D = ∂ψ/∂D_y + ∂ψ/∂l (Y_D − Y_C)/l − ∂ψ/∂θ (X_C − X_D)/l²,

and ``xd_apply`` sets the four parameters from (X_D, Y_D), which is what the finite
differences perturb.  The tests import both (tests/test_variational.py).
"""
import argparse
import time

import parmbs  # noqa: F401  (before numpy: parmbs/_determinism.py pins numpy's CPU features for same-bytes results)
import numpy as np

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem

CONFIG = "configs/rigid-spring-beam.toml"
C = np.array([1.5, 0.0])          # the spring's beam end (fixed)


def xd_params(xd):
    """(D_x, D_y, l, θ) of the ground-joint position xd = (X_D, Y_D)."""
    d = C - np.asarray(xd, float)
    return np.array([xd[0], xd[1], np.hypot(*d), np.arctan2(d[1], d[0])])


def xd_apply(pr, p0, xd):
    """p with the four design parameters set from (X_D, Y_D) (design order D_x, D_y, l, θ)."""
    return pr.design.apply(p0, xd_params(xd))


def xd_gradient(g4, xd):
    """(∂ψ/∂X_D, ∂ψ/∂Y_D) from the gradient g4 over (D_x, D_y, l, θ)."""
    d = C - np.asarray(xd, float)
    l2 = d @ d
    l = np.sqrt(l2)
    dl = -d / l                                   # ∂l/∂(X_D, Y_D)
    dth = np.array([d[1], -d[0]]) / l2            # ∂θ/∂(X_D, Y_D), θ = atan2(d_y, d_x)
    return g4[:2] + g4[2] * dl + g4[3] * dth


def value(pr, p):
    pr.forward(p)
    return pr.objective_values(p=p)["dB"]


def fd_gradient(pr, xd, step=1e-6):
    p0 = pr.sys.p.copy()
    g = np.zeros(2)
    for j in range(2):
        hs = step * max(abs(xd[j]), 1.0)
        e = np.eye(2)[j] * hs
        g[j] = (value(pr, xd_apply(pr, p0, xd + e)) - value(pr, xd_apply(pr, p0, xd - e))) / (2 * hs)
    return g


def adjoint_gradient(pr, p, xd):
    pr.forward(p)
    return pr.objective_values(p=p)["dB"], xd_gradient(pr.adjoint(p)["dB"], xd)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--t-end", type=float, default=1.0)
    ap.add_argument("--dt", type=float, default=1e-3)
    ap.add_argument("--steps", type=int, default=0, help="projected-gradient steps toward the optimum")
    a = ap.parse_args()
    pr = Problem(load_config(CONFIG, [f"simulation.t_end={a.t_end}", f"simulation.dt={a.dt}"]))
    p0 = pr.sys.p.copy()
    xd = np.array([2.5, 0.0])
    t0 = time.process_time()          # CPU seconds: the machine may be shared
    psi, g = adjoint_gradient(pr, p0, xd)
    t_adj = time.process_time() - t0
    t0 = time.process_time()
    gfd = fd_gradient(pr, xd)
    t_fd = time.process_time() - t0
    print(f"T = {a.t_end} s, dt = {a.dt} s: psi = {psi:.6e}")
    print(f"  adjoint dpsi/d(X_D, Y_D) = {g}   ({t_adj:.1f} CPU s, forward + adjoint)")
    print(f"  central FD               = {gfd}   ({t_fd:.1f} CPU s, 4 forward runs)")
    print(f"  relative difference {np.max(np.abs(g - gfd)) / np.max(np.abs(g)):.2e}")
    # projected gradient with a backtracking line search, l ≥ 0.001 m, |X_D|, |Y_D| ≤ 10 m
    step = 0.5 / max(np.max(np.abs(g)), 1e-30)
    for it in range(a.steps):
        while True:
            trial = np.clip(xd - step * g, -10.0, 10.0)
            if np.hypot(*(C - trial)) < 0.001:
                trial = C + 0.001 * (trial - C) / max(np.hypot(*(trial - C)), 1e-30)
            psi_t, g_t = adjoint_gradient(pr, xd_apply(pr, p0, trial), trial)
            if psi_t < psi or step < 1e-8:
                break
            step *= 0.5
        xd, psi, g = trial, psi_t, g_t
        print(f"  step {it + 1}: (X_D, Y_D) = ({xd[0]:.5f}, {xd[1]:.5f}), l = {np.hypot(*(C - xd)):.5f}, "
              f"psi = {psi:.6e}, |grad| = {np.linalg.norm(g):.3e}")
        step *= 2.0


if __name__ == "__main__":
    main()
