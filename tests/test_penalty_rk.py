"""The penalty ODE in explicit form on ``ts-rk`` (formulations/penalty_explicit.py):
TSAdjoint (RHSJacobian/RHSJacobianP) against the tangent of PETSc's RK4 tableau and
central FD.  Double pendulum (its elbow_load objective reads λ: the pull-back through
a = G₂(y), λ = αΛ), α = 1e5, t_end = 0.02, h = 1e-3.

Bounds and their estimates:
* TSAdjoint vs direct: round-off amplified by S = M + αΦ_qᵀΦ_q, ∝ α (test_penalty.py:
  ≈ 1e-12 at α = 1e5 for the θ schemes; five-bar ts-rk at α = 1e7 measured 1.4e-11);
  bound 1e-9.
* vs FD at relative step s = 1e-5: truncation C s² (the θ schemes on this model:
  C ≈ 30 → 3e-9) plus noise η/s, η the relative round-off of ψ: a is solved with
  S = M + αΦ_qᵀΦ_q, κ(S) ε ≈ α ε · 10 ≈ 1e-10 before refinement, ≈ 1e-12 after
  → ≈ 1e-7; measured ≤ 9.6e-8 (t_end = 0.02); bound 1e-6.
* RK4 vs the implicit midpoint rule (ts-cn) on the same penalty ODE: O(h²) of the
  midpoint rule, measured below; bound 1e-6.
"""
import numpy as np

from parmbs.config.loader import load_config
from parmbs.sensitivity.problem import Problem

from gradient_checks import assert_gradients_agree
from test_penalty import DP


def problem(integrator):
    return Problem(load_config(DP, ["simulation.t_end=0.02", 'simulation.formulation="penalty"',
                                    f'simulation.integrator="{integrator}"', "simulation.penalty.alpha=1e5"]))


def test_penalty_rk_tsadjoint_direct_fd():
    assert_gradients_agree(problem("ts-rk"), adj_dir=1e-9, adj_cs=None, adj_fd=1e-6, fd_step=1e-5,
                           tag="penalty ts-rk ")


def test_penalty_rk_solves_the_penalty_ode():
    a, b = problem("ts-rk").forward(), problem("ts-cn").forward()
    dq = np.max(np.abs(a.q - b.q))
    dl = np.max(np.abs(a.lam - b.lam)) / np.max(np.abs(b.lam))
    print(f"penalty RK4 vs ts-cn: max |dq| {dq:.1e}, relative |dλ| {dl:.1e}")
    assert dq <= 1e-6 and dl <= 1e-4
