"""The index-1 equations as an ODE on PETSc TS (formulations/index1_ode.py; issue 20
item 1): ẏ = G(t, y) = (v, a(q, v)), run by ts-rk (explicit, RHSJacobian/RHSJacobianP)
and ts-theta (implicit, our IJacobian/IJacobianP).  TSAdjoint against the own tangent
sweep of the same scheme (``direct``; RK: the tangent of PETSc's tableau) and against
central finite differences.  Five-bar (closed loop; L_A1 sits in the constraints),
t_end = 0.05, h = 1e-3.

Bounds and their estimates:
* TSAdjoint vs direct: two exact derivatives of the same discrete computation; their
  gap is round-off through K = [M Φ_qᵀ; Φ_q 0] (κ ≈ 1e3 here) over 50 steps,
  ≈ κ ε √N ≈ 1e-12; measured ≤ 1e-15 of max |∇ψ| (t_end = 0.1); bound 1e-9.
* vs FD at relative step s = 1e-5: truncation C s² with C ≲ 3 (five-bar, measured
  2.9e-10 at s = 1e-5 over 0.1 s) plus noise ε|ψ|/s ≈ 1e-11; bound 1e-6.
* RK4 vs the own index-1 trapezoidal stepper: both solve the same index-1 ODE, the
  trapezoidal rule to O(h²): max |Δq| measured 1.1e-7 at h = 1e-3 over 0.05 s (3.9e-7 over 0.1 s);
  bound 4e-6.
"""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from parmbs.config.loader import load_config
from parmbs.sensitivity.problem import Problem

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIVEBAR = ROOT / "configs" / "fivebar.toml"
SHORT = ["simulation.t_end=0.05", "simulation.dt=1e-3", 'simulation.formulation="index1"']


def problem(integrator):
    return Problem(load_config(FIVEBAR, SHORT + [f'simulation.integrator="{integrator}"', "simulation.theta=0.7"]))


def central_fd(pr, rel):
    p0 = pr.sys.p.copy()
    rho = pr.design.values(p0)
    g = {o.name: np.zeros(len(rho)) for o in pr.objectives}
    for j in range(len(rho)):
        h = rel * max(abs(rho[j]), 1.0)
        vals = []
        for s in (1, -1):
            r = rho.copy()
            r[j] += s * h
            p = pr.design.apply(p0, r)
            vals.append(pr.objective_values(pr.forward(p), p))
        for k in g:
            g[k][j] = (vals[0][k] - vals[1][k]) / (2 * h)
    return g


# (ts-cn is the θ = ½ stage form of the same TSTHETA path as ts-theta: not repeated here)
@pytest.mark.parametrize("integrator", ["ts-rk", "ts-theta", "ts-beuler"])
def test_tsadjoint_vs_direct_and_fd(integrator):
    pr = problem(integrator)
    ga = pr.adjoint()
    gd = pr.direct()
    assert_agree(ga, gd, central_fd(pr, 1e-5), f"index1 {integrator}")


def assert_agree(ga, gd, gf, tag, adj_dir=1e-9, adj_fd=1e-6):
    """Adjoint vs direct ≤ adj_dir and vs FD ≤ adj_fd, relative to max |∇ψ| of each
    objective (the callers' estimates)."""
    for name in ga:
        scale = np.max(np.abs(ga[name]))
        e_dir = np.max(np.abs(ga[name] - gd[name])) / scale
        e_fd = np.max(np.abs(ga[name] - gf[name])) / scale
        print(f"{tag} {name}: adjoint vs direct {e_dir:.1e}, vs FD {e_fd:.1e}")
        assert e_dir <= adj_dir
        assert e_fd <= adj_fd


def test_rk4_solves_the_index1_equations():
    rk = problem("ts-rk").forward()
    trap = Problem(load_config(FIVEBAR, SHORT + ['simulation.integrator="trapezoidal"'])).forward()
    assert np.allclose(rk.t, trap.t, rtol=0, atol=1e-15)       # (TS sums t + h: last-bit differences)
    dq = np.max(np.abs(rk.q - trap.q))
    print(f"RK4 vs index-1 trapezoidal: max |dq| {dq:.1e}")
    assert dq <= 4e-6
    # a and λ stored by the TS run solve the index-1 equations at every state
    from parmbs.model.evaluation import StateEval
    pr = problem("ts-rk")
    for k in (0, 25, 50):
        ev = StateEval(pr.sys, rk.t[k], rk.q[k], rk.v[k], rk.a[k], rk.lam[k], pr.sys.p)
        assert np.max(np.abs(ev.residual())) <= 1e-9 * (1 + np.max(np.abs(rk.lam[k])))
        assert np.max(np.abs(ev.phi_q_dot(rk.a[k]) + ev.gamma())) <= 1e-9


def test_complex_step_is_refused_on_ts():
    env = {k: v for k, v in os.environ.items() if k != "PETSC_OPTIONS"}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    args = [a for s in SHORT + ['simulation.integrator="ts-rk"'] for a in ("--set", s)]
    r = subprocess.run([sys.executable, "-m", "parmbs", "gradient", str(FIVEBAR), *args, "--method", "cs"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "runs in real-valued PETSc TS" in r.stderr and "Traceback" not in r.stderr, r.stderr


# Baumgarte (seed 004 §2.3) on the TS path: Φ̈ + 2αΦ̇ + β²Φ = 0 as the constraint row of
# G (formulations/index1_ode.py), α = β = 50/s as in tests/test_index1.py.
BAUMGARTE = ["simulation.index1.baumgarte.alpha=50.0", "simulation.index1.baumgarte.beta=50.0"]


@pytest.mark.parametrize("integrator", ["ts-rk", "ts-theta"])
def test_baumgarte_tsadjoint_vs_direct_and_fd(integrator):
    """RHSJacobian/RHSJacobianP (ts-rk) and IJacobian/IJacobianP (ts-theta) with the
    Baumgarte partials.  Bounds: TSAdjoint vs direct as above (κ ε √N ≈ 1e-12; measured
    ≤ 5e-15 at t_end = 0.05, ts-rk/ts-theta/ts-beuler) → 1e-9.  FD step from a sweep at
    t_end = 0.05 (all three schemes alike): |adj − FD| 3e-6, 3e-8, 3e-10–8e-10, 3e-9–1e-8,
    5e-8 at s = 1e-3 … 1e-7, i.e. truncation ≈ 3 s² and noise ≈ 1e-15/s; s = 1e-5
    → ≈ 1e-9 ≪ 1e-6.  No complex step: TS is real-valued."""
    from gradient_checks import assert_gradients_agree
    pr = Problem(load_config(FIVEBAR, ["simulation.t_end=0.02", "simulation.dt=1e-3", 'simulation.formulation="index1"',
                                       f'simulation.integrator="{integrator}"', "simulation.theta=0.7", *BAUMGARTE]))
    assert pr.stepper.mod.core.baumgarte == (50.0, 50.0)
    assert_gradients_agree(pr, adj_dir=1e-9, adj_cs=None, adj_fd=1e-6, fd_step=1e-5, tag=f"{integrator}+baumgarte/")


def test_baumgarte_reduces_the_drift_on_ts():
    """ts-beuler, five-bar over 1 s at h = 1e-2: its first-order global error drifts the
    positions off Φ = 0 by max|Φ| 3.4e-3 without, 1.3e-4 with α = β = 50/s (measured;
    asserted: ≥ 5× smaller).  The same α, β *raise* ts-rk's (RK4's) drift, 3.7e-9 →
    3.5e-7 (both fourth order in h: the stiff constraint rows enlarge RK4's error
    constant), so the test is on the scheme whose drift Baumgarte is for."""
    from parmbs.model.evaluation import StateEval

    def drift(extra):
        pr = Problem(load_config(FIVEBAR, ["simulation.t_end=1.0", "simulation.dt=1e-2", 'simulation.formulation="index1"',
                                           'simulation.integrator="ts-beuler"', *extra]))
        tr = pr.forward()
        return max(np.max(np.abs(StateEval(pr.sys, tr.t[k], tr.q[k], tr.v[k], tr.a[k], tr.lam[k], pr.sys.p).phi()))
                   for k in range(len(tr.t)))
    free, stab = drift([]), drift(BAUMGARTE)
    print(f"ts-beuler max|Φ|: {free:.2e} without, {stab:.2e} with Baumgarte")
    assert stab * 5 <= free


def test_baumgarte_adaptive_tsadjoint_vs_fd_on_the_frozen_steps():
    """Baumgarte (α = β = 50/s) on an adaptive ts-theta run (TSAdapt basic, rtol 1e-5,
    atol 1e-7; t_end = 0.02: 24 accepted steps): TSAdjoint over the accepted steps against the own tangent sweep and
    against central FD on the frozen step sequence (TSStepper.freeze; the step sizes'
    dependence on ρ is not differentiated, as PETSc's TSAdjoint).  Bounds as for the
    fixed-step Baumgarte test above: TSAdjoint vs direct 1e-9 (κ ε √N ≈ 1e-12); vs FD at
    s = 1e-5: truncation ≈ 3 s² plus noise ≈ 1e-15/s, ≈ 1e-9 → 1e-6."""
    pr = Problem(load_config(FIVEBAR, ["simulation.t_end=0.02", "simulation.dt=1e-3", 'simulation.formulation="index1"',
                                       'simulation.integrator="ts-theta"', "simulation.theta=0.7",
                                       "simulation.adapt={rtol=1e-5, atol=1e-7}", *BAUMGARTE]))
    assert pr.stepper.mod.core.baumgarte == (50.0, 50.0)
    traj = pr.forward()
    h = np.diff(traj.t)
    assert traj.t[-1] == pytest.approx(0.02, abs=1e-14) and h.max() / h.min() > 1.5   # the steps did adapt
    frozen_mesh_check(pr, traj, "adaptive ts-theta+baumgarte")


def frozen_mesh_check(pr, traj, tag, adj_dir=1e-9, adj_fd=1e-6):
    """An adaptive run's adjoint (TSAdjoint or ours) against the own tangent sweep and
    against central FD at s = 1e-5 on its frozen step sequence (TSStepper.freeze), each
    relative to max |∇ψ| per objective; the bounds are the callers' estimates."""
    ga = pr.adjoint()
    gd = pr.direct()
    pr.stepper.freeze(traj.t)
    assert_agree(ga, gd, central_fd(pr, 1e-5), f"{tag} ({traj.steps} steps, FD on the frozen steps)", adj_dir, adj_fd)
