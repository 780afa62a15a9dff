"""Maggi's ODE in z = B q (formulations/maggi_ode.py) and the Matrix-R ODE in
independent relative coordinates (formulations/matrix_r_ode.py) on PETSc TS (issue 20
item 1): TSAdjoint (our IJacobian/IJacobianP, RHSJacobian/RHSJacobianP for ts-rk)
against the own tangent sweep of the same scheme (``direct``) and against central
finite differences.  Five-bar (closed loop, L_A1 in the constraints: the manifold map
q(z; ρ) carries explicit ρ), t_end = 0.03, h = 1e-3.

Bounds and their estimates:
* TSAdjoint vs direct: two exact derivatives of one discrete computation; the gap is
  round-off through C = [Φ_q; B] and K = [M Φ_qᵀ; Φ_q 0] (κ ≲ 1e3 each, not measured) over 30
  steps, ≈ κ² ε √N ≈ 1e-9 at worst; measured ≤ 8e-16 of max |∇ψ| (t_end = 0.05);
  bound 1e-9.
* vs FD at relative step s = 1e-5: truncation C s² with C ≲ 3 (measured 2e-10 to
  5e-10 at t_end = 0.05) plus noise ε|ψ|/s ≈ 1e-11 (the manifold Newton runs to
  round-off, so q(z) adds no tolerance-sized noise); bound 1e-6.
* Forward: the reduced ODE is the index-1 ODE restricted to the manifold, so RK4 on
  z equals RK4 on the index-1 ODE in (q, v) (test_index1_ts.py) up to the O(h⁵) local
  error of each, which differs: measured max |Δq| 2e-14 at h = 1e-3; bound 1e-10
  (≈ h⁴ · 30 steps · C with C ~ 1).  Constraints hold to the Newton round-off:
  |Φ| ≤ 1e-13 bound 1e-12 (10 ε |q| · κ); the independent coordinates of the stored q
  are y's bit for bit.
"""
import numpy as np
import pytest

from parmbs.config.loader import load_config
from parmbs.model.evaluation import StateEval
from parmbs.sensitivity.problem import Problem

from gradient_checks import assert_gradients_agree
from test_index1_ts import FIVEBAR

SHORT = ["simulation.t_end=0.03", "simulation.dt=1e-3", "simulation.theta=0.7"]
FORMS = {"maggi": ['simulation.formulation="maggi"'],
         "matrix-r": ['simulation.formulation="matrix-r"', 'simulation.matrix_r.coordinates="independent"']}


def problem(form, integrator, *extra):
    return Problem(load_config(FIVEBAR, SHORT + FORMS[form] + [f'simulation.integrator="{integrator}"', *extra]))


# every scheme on each reduced ODE: ts-rk, ts-arkimex, and the TSTHETA path (ts-theta,
# ts-cn, ts-beuler: one stage form, θ = sim.theta, ½, 1) at one or two of its θ
@pytest.mark.parametrize("form,integrator", [("maggi", "ts-rk"), ("maggi", "ts-theta"), ("maggi", "ts-arkimex"),
                                             ("maggi", "ts-beuler"),
                                             ("matrix-r", "ts-rk"), ("matrix-r", "ts-cn"), ("matrix-r", "ts-arkimex")])
def test_tsadjoint_vs_direct_and_fd(form, integrator):
    # ts-arkimex: our adjoint (ts_arkimex.py), its stages recomputed by Newton: 15 steps
    pr = problem(form, integrator, *(["simulation.t_end=0.015"] if integrator == "ts-arkimex" else []))
    assert_gradients_agree(pr, adj_dir=1e-9, adj_cs=None, adj_fd=1e-6, fd_step=1e-5, tag=f"{form} {integrator} ")


@pytest.mark.parametrize("form", ["maggi", "matrix-r"])
def test_rk4_on_the_manifold_is_rk4_of_the_index1_ode(form):
    pr = problem(form, "ts-rk")
    tr = pr.forward()
    full = Problem(load_config(FIVEBAR, SHORT + ['simulation.formulation="index1"',
                                                 'simulation.integrator="ts-rk"'])).forward()
    dq = np.max(np.abs(tr.q - full.q))
    print(f"{form} RK4 vs index-1 RK4: max |dq| {dq:.1e}")
    assert dq <= 1e-10
    mod = pr.stepper.mod
    phi = 0.0
    for k in range(tr.steps + 1):
        ev = StateEval(pr.sys, tr.t[k], tr.q[k], tr.v[k], tr.a[k], tr.lam[k], pr.sys.p)
        phi = max(phi, np.max(np.abs(ev.phi())))
        # a and λ solve the equations of motion at the presented state
        assert np.max(np.abs(ev.residual())) <= 1e-9 * (1 + np.max(np.abs(tr.lam[k])))
    print(f"{form}: max |Φ| {phi:.1e}")
    assert phi <= 1e-12
    if form == "maggi":                  # the stored q's independent entries are y's z exactly
        assert np.array_equal(tr.q[:, mod.ind], tr.y[:, :mod.n])


def test_matrix_r_ts_needs_independent_coordinates(tmp_path):
    from gradient_checks import cli_one_line_error
    cli_one_line_error(["simulate", FIVEBAR, "--set", 'simulation.formulation="matrix-r"', "--set",
                        'simulation.integrator="ts-rk"', "--output", tmp_path / "o.h5"], tmp_path,
                       "simulation.integrator", "independent")


# checkpointed reduced TS runs (y and the manifold guess stored; an FSAL RK tableau too):
# tests/test_ts_checkpoint.py


@pytest.mark.parametrize("form,integrator", [("maggi", "ts-theta"), ("maggi", "ts-rk"), ("matrix-r", "ts-cn"),
                                             ("matrix-r", "ts-arkimex")])
def test_direct_does_not_depend_on_what_ran_before(form, integrator):
    """The direct (tangent) loop starts each state's evaluations from its stored manifold
    guess (``TSStepper.reseed``, as the adjoint steps do), so forward → direct and
    forward → adjoint → direct → direct give the same bits: the manifold Newton's last
    bits depend on its first guess, which the adjoint and the previous direct sweep
    leave elsewhere."""
    extra = ["simulation.t_end=0.015"] if integrator == "ts-arkimex" else []
    a = problem(form, integrator, *extra)
    tr = a.forward()
    d0 = a.direct()
    b = problem(form, integrator, *extra)
    b.forward()
    b.adjoint()
    runs = [b.direct(), b.direct()]
    # the guess any earlier evaluation may leave (before the fix: Maggi ts-theta 6e-19,
    # ts-rk 7e-15 absolute in ∇ψ from another state's guess)
    for j in (7, 11):
        a.stepper.mod.set_guess(np.asarray(tr.guess[j]) * (1.0 + 1e-9))
        runs.append(a.direct())
    for d in runs:
        for k in d0:
            assert np.array_equal(d0[k], d[k]), (k, np.max(np.abs(d0[k] - d[k])))
