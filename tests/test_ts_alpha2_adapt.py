"""Adaptive ts-alpha2 (issue 20 item 3; integrators/ts_alpha2.py): TSALPHA2 with TSAdapt
"basic" on its own error estimate, our generalized-α adjoint over the accepted steps
(step sizes frozen), checked against the direct sweep and against central finite
differences that replay the same steps (Problem.frozen_steps).

Five-bar, t_end = 0.1, rho_inf = 0.9, rtol 1e-4, atol 1e-6, first step 1e-3: 36
accepted steps of 1e-3 … 4.2e-3, 2 rejected (measured).

Bounds and their estimates (measured on this case):
* adjoint vs direct: the same discrete equations transposed (NewmarkFamily's sweeps on
  the accepted grid), so round-off of N = 36 steps × the index-3 amplification:
  measured 3.5e-16 (ψ1), 4.4e-16 (ψ2), 7.6e-15 (ψ3, accelerations) of max |∇ψ|;
  bound 1e-9.
* vs central FD at relative step s = 1e-4 on the frozen steps: truncation C s² with
  C ≈ 3 (measured 2.9e-6, 2.9e-8 at s = 1e-3, 1e-4: ∝ s²), noise η/s with η ≈ 1e-13
  relative (Newton's termination; 1e-8 at s = 1e-5, 2e-7 at s = 1e-6: ∝ 1/s) →
  ≈ 3e-8 + 1e-9; measured ≤ 2.9e-8; bound 1e-6.
* the replay at the nominal parameters takes the stored h_k and t_k, the bits the
  adaptive run used (t_k + h, h from TSGetTimeStep): bitwise.
"""
import pathlib

import parmbs  # noqa: F401  (before numpy users: parmbs/_determinism.py)
import numpy as np
import pytest

from parmbs._petsc import PETSc
from parmbs.config.loader import load_config
from parmbs.sensitivity.problem import Problem

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIVEBAR = ROOT / "configs" / "fivebar.toml"
SETS = ["simulation.t_end=0.1", "simulation.dt=1e-3", 'simulation.integrator="ts-alpha2"',
        "simulation.rho_inf=0.9"]
ADAPT = "simulation.adapt={rtol=1e-4, atol=1e-6}"


def problem(*extra):
    return Problem(load_config(FIVEBAR, SETS + list(extra)))


def test_adaptive_alpha2_gradient_is_direct_and_fd_on_the_accepted_steps():
    pr = problem(ADAPT)
    tr = pr.forward()
    h = np.diff(tr.t)
    assert tr.t[0] == 0.0 and abs(tr.t[-1] - 0.1) <= 1e-14       # MATCHSTEP: ends at t_end
    # the TS's own times: t_{k+1} = t_k + h_k, the sum PETSc forms (not h_k = t_{k+1} − t_k)
    assert np.array_equal(tr.grid.t, tr.t) and np.array_equal(tr.t[1:], tr.t[:-1] + tr.grid.h)
    assert tr.steps != 100 and h.max() / h.min() > 2              # the steps did adapt
    assert pr.grid == tr.grid and pr.nsteps == tr.steps           # the sweeps' and weights' grid
    again = problem(ADAPT).forward()                              # same input, same bytes
    assert np.array_equal(again.t, tr.t) and np.array_equal(again.q, tr.q) and np.array_equal(again.lam, tr.lam)
    with pr.frozen_steps():
        replay = pr.forward()
    assert np.array_equal(replay.t, tr.t) and np.array_equal(replay.q, tr.q) and np.array_equal(replay.lam, tr.lam)
    pr.forward()
    ga, gd = pr.adjoint(), pr.direct()
    gf = pr.finite_differences(1e-4)
    assert pr.grid == tr.grid                                     # FD replayed it; the nominal grid is back
    for name in ga:
        s = np.max(np.abs(ga[name]))
        e_dir = np.max(np.abs(ga[name] - gd[name])) / s
        e_fd = np.max(np.abs(ga[name] - gf[name])) / s
        print(f"{name}: {tr.steps} steps ({tr.rejected} rejected), adjoint vs direct {e_dir:.1e}, "
              f"vs FD (frozen) {e_fd:.1e}")
        assert e_dir <= 1e-9, name
        assert e_fd <= 1e-6, name


def test_adapt_type_none_keeps_the_fixed_steps():
    """-parmbs_ts_adapt_type none: an adaptive config takes its fixed dt (the bits of
    the config without [simulation.adapt]); basic makes a fixed config adaptive."""
    opts = PETSc.Options()
    fixed = problem().forward()
    try:
        opts.setValue("parmbs_ts_adapt_type", "none")
        none = problem(ADAPT).forward()
        opts.setValue("parmbs_ts_adapt_type", "basic")
        basic = problem().forward()
    finally:
        opts.delValue("parmbs_ts_adapt_type")
    assert none.steps == fixed.steps == 100
    assert np.array_equal(none.q, fixed.q) and np.array_equal(none.lam, fixed.lam)
    assert basic.steps != 100 and abs(basic.t[-1] - 0.1) <= 1e-14
