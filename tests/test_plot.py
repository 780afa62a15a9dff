"""The trajectory plot's energy panel and angle panel for every kind of body."""
from __future__ import annotations

import numpy as np
import pytest

from parmbs.config import load_config
from parmbs.io.plot import energy, plot_trajectory
from parmbs.model.evaluation import StateEval
from parmbs.sensitivity.problem import Problem

from conftest import CONFIGS

RUNS = {"fivebar": ["simulation.t_end=0.1", "simulation.dt=1e-2"],
        "flexible-pendulum": ["simulation.t_end=0.02"],
        "plate-pendulum": ["simulation.t_end=0.01"],
        "slider-crank-flex": ["simulation.t_end=0.001"]}


@pytest.mark.parametrize("name", list(RUNS))
def test_energy_is_every_components_energy(name, tmp_path):
    """All rows at once equal the one-state StateEval.energy (rigid, ANCF, plate and FFR
    beam components), and the PNG is written with one angle curve per body frame."""
    pr = Problem(load_config(str(CONFIGS / f"{name}.toml"), RUNS[name] + ["simulation.progress=false"]))
    tr = pr.forward()
    E = energy(pr.sys, tr.q, tr.v, t=tr.t)
    ref = [StateEval(pr.sys, tr.t[k], tr.q[k], tr.v[k], np.zeros(pr.sys.n), np.zeros(pr.sys.m),
                     pr.sys.p).energy() for k in range(len(tr.t))]
    X = pr.sys.extend(tr.q), pr.sys.extend(tr.v)
    scale = max(sum(float(np.sum(np.abs(g.energy(0.0, X[0][k][g.qidx], X[1][k][g.qidx], pr.sys.p[g.pidx]))))
                    for g in pr.sys.forces) for k in range(len(tr.t)))    # size of the summed terms
    np.testing.assert_allclose(E, ref, rtol=0, atol=1e-12 * scale)   # round-off of the summed terms
    assert np.ptp(E) > 0 or name == "plate-pendulum"       # a moving model's energy terms change
    png = plot_trajectory(pr.sys, tr.t, tr.q, tr.v, tmp_path / "t.png")
    assert (tmp_path / "t.png").stat().st_size > 10_000, png
