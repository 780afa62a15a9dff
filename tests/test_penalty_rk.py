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

from test_penalty import DP, fd


def problem(integrator):
    return Problem(load_config(DP, ["simulation.t_end=0.02", 'simulation.formulation="penalty"',
                                    f'simulation.integrator="{integrator}"', "simulation.penalty.alpha=1e5"]))


def test_penalty_rk_tsadjoint_direct_fd():
    pr = problem("ts-rk")
    ga, gd, gf = pr.adjoint(), pr.direct(), fd(pr, 1e-5)
    for name in ga:
        scale = np.max(np.abs(ga[name]))
        e_dir = np.max(np.abs(ga[name] - gd[name])) / scale
        e_fd = np.max(np.abs(ga[name] - gf[name])) / scale
        print(f"penalty ts-rk {name}: TSAdjoint vs direct {e_dir:.1e}, vs FD {e_fd:.1e}")
        assert e_dir <= 1e-9
        assert e_fd <= 1e-6


def test_penalty_rk_solves_the_penalty_ode():
    a, b = problem("ts-rk").forward(), problem("ts-cn").forward()
    dq = np.max(np.abs(a.q - b.q))
    dl = np.max(np.abs(a.lam - b.lam)) / np.max(np.abs(b.lam))
    print(f"penalty RK4 vs ts-cn: max |dq| {dq:.1e}, relative |dλ| {dl:.1e}")
    assert dq <= 1e-6 and dl <= 1e-4
