"""Python API: after ``pr.forward(p1)`` the calls without ``p`` are about p1.

The trap (issue 17): ``objective_values()`` and ``adjoint()`` without ``p`` used the
config's nominal parameters on the trajectory of p1 — a wrong value and gradient,
silently.  Now the trajectory remembers its p (sensitivity/problem.py), and a ``p``
other than the trajectory's is refused.
"""
from pathlib import Path

import numpy as np
import pytest

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem

PENDULUM = Path(__file__).resolve().parents[1] / "configs" / "pendulum.toml"
SHORT = ["simulation.t_end=0.05"]


def _problem():
    return Problem(load_config(PENDULUM, SHORT))


def _p1(pr):
    rho = pr.design.values(pr.sys.p)
    return pr.design.apply(pr.sys.p, rho * np.array([1.3, 0.8, 1.1]))   # m, xG, theta0 moved


def test_calls_without_p_use_the_trajectory_p():
    pr = _problem()
    p1 = _p1(pr)
    pr.forward(p1)
    v1, g1, d1 = pr.objective_values(), pr.adjoint(), pr.direct()

    ref = _problem()                         # a problem whose nominal design is p1
    ref.sys.p[:] = p1
    ref.forward()
    v_ref, g_ref = ref.objective_values(), ref.adjoint()
    for o in v_ref:
        # same arithmetic on the same p: identical (not merely close)
        assert v1[o] == v_ref[o]
        assert np.array_equal(g1[o], g_ref[o])
        # adjoint = direct to round-off: |g| ≲ 1 here, 100 steps of ~1e-16 each
        assert np.allclose(d1[o], g1[o], rtol=1e-10, atol=1e-12)

    nominal = _problem()
    nominal.forward()
    v0 = nominal.objective_values()
    # the trap's symptom: nominal values differ from p1's by O(1) relative (30 % mass, 10 % angle)
    assert all(abs(v0[o] - v1[o]) > 1e-3 * abs(v1[o]) for o in v1)


def test_p_other_than_the_trajectory_p_is_refused():
    pr = _problem()
    p1 = _p1(pr)
    pr.forward(p1)
    with pytest.raises(ValueError, match="forward"):
        pr.adjoint(pr.sys.p)
    with pytest.raises(ValueError, match="forward"):
        pr.objective_values(p=pr.sys.p)
    # the same values as p1 (another array) are fine; mutating p1 later does not move traj.p
    same = p1.copy()
    assert pr.objective_values(p=same) == pr.objective_values()
    p1 += 1.0
    assert np.array_equal(pr.traj.p, same)


def test_no_trajectory_yet():
    pr = _problem()
    with pytest.raises(ValueError, match="forward"):
        pr.adjoint()
