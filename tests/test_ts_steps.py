"""TSSteps (parmbs/integrators/ts_steps.py) takes a PETSc TS's steps as TSSolve does.

parmbs's time loop steps the TS runs one TSStep at a time (timeloop.march_ts) instead of
PETSc's TSSolve; TSSteps repeats TSSolve's calls around each TSStep.  Contract: bit for
bit the same run — final time, step and rejection counts, state — and, with the
trajectory saved, the same TSAdjoint gradients (TSTrajectorySet after every step).  The
same TS made twice (TSStepper._make_ts), once solved by TSSolve, once stepped: fixed
ts-theta, adaptive ts-rk 5dp with a rejected attempt (PETSc's rollback inside TSStep),
adaptive ts-arkimex.  Five-bar, 0.05 s (adaptive rk: 0.5 s, 12 steps, 1 rejection).
"""
from __future__ import annotations

import pathlib

import parmbs  # noqa: F401  (before numpy users: parmbs/_determinism.py)
import numpy as np
import pytest

from parmbs.config import load_config
from parmbs.integrators.ts_steps import TSSteps
from parmbs.sensitivity.problem import Problem

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIVEBAR = str(ROOT / "configs" / "fivebar.toml")
SHORT = ["simulation.t_end=0.05", "simulation.dt=1e-3", "simulation.theta=0.7"]
RUNS = {
    "theta": ['simulation.formulation="index1"', 'simulation.integrator="ts-theta"'],
    "rk-ad": ['simulation.formulation="penalty"', 'simulation.integrator="ts-rk"', "simulation.adapt.rtol=1e-4",
              "simulation.t_end=0.5"],
    "ark-ad": ['simulation.formulation="penalty"', 'simulation.integrator="ts-arkimex"', "simulation.adapt.rtol=1e-3",
               "simulation.t_end=0.05", "simulation.penalty.alpha=1e5"],
}


def _run(run, stepped, adjoint):
    """(t, steps, rejections, y, λ, μ) of one TS run, solved or stepped."""
    pr = Problem(load_config(FIVEBAR, SHORT + RUNS[run]))
    st, p = pr.stepper, pr.sys.p
    st._p, st._cache, st._adj = p, None, None
    ts = st._make_ts(pr, p, adjoint)
    q0, v0, _, _ = st.init.solve(pr.t0, p)
    y = st.layout.vec()
    st.layout.set(y, st._y(q0, v0, p))
    if stepped:
        steps = TSSteps(ts, y)
        while not steps.finished:
            steps.step()
    else:
        ts.solve(y)
    out = [ts.getTime(), ts.getStepNumber(), ts.getStepRejections(), y.getArray().copy()]
    if adjoint:
        lam, mu = st.layout.vec(), st.layout.pvec()
        st.layout.set(lam, np.linspace(1.0, 2.0, len(st.layout.get(lam))))
        mu.set(0.0)
        ts.setCostGradients([lam], [mu])
        ts.adjointSolve()
        out += [lam.getArray().copy(), mu.getArray().copy()]
    ts.destroy()
    return out


@pytest.mark.parametrize("run,adjoint", [("theta", False), ("theta", True), ("rk-ad", False), ("ark-ad", False)])
def test_stepping_is_tssolve_bit_for_bit(run, adjoint):
    solved, stepped = _run(run, False, adjoint), _run(run, True, adjoint)
    assert solved[1] > 10 and (run != "rk-ad" or solved[2] > 0), solved[:3]
    assert solved[:3] == stepped[:3]
    for a, b in zip(solved[3:], stepped[3:]):
        assert np.array_equal(a, b), np.max(np.abs(a - b))
