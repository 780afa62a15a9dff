"""LocalError's full-history norm by divided-difference updates (integrators/local_error_fast.py)
gives the numbers of its general path bit for bit: the same norms, floor flags and
accepted step sequences."""
import os

import numpy as np
import pytest

import parmbs  # noqa: F401  (before numpy users: parmbs/_determinism.py)
import parmbs.integrators.timeloop as tl
from parmbs.config.loader import load_config
from parmbs.integrators.local_error_fast import FastNorm
from parmbs.integrators.timeloop import Adapt, LocalError
from parmbs.sensitivity.problem import Problem

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIVEBAR = os.path.join(ROOT, "configs", "fivebar.toml")


def _general(monkeypatch):
    monkeypatch.setattr(FastNorm, "norm", lambda self, *a: None)


def _drive(rng, noise, n=7, steps=9):
    """A LocalError fed states of the cubic q_i = A_i t³ + B_i t (v = q̇; A_0 = 0, so the
    first component's error is ~0 and the others' third derivatives 6A_i carry the norm),
    perturbed by 1e-10, at uneven steps: per candidate its norm and floor flags.  Every
    third step's first candidate is rejected (a second one follows), and after the sixth
    accepted state the history is handed over as a resumed run does (new tuples: the
    cache rebuilt)."""
    ad = Adapt(rtol=1e-6, atol=1e-7, dt0=1e-3, dt_min=1e-10, dt_max=1.0, horizon=0.5)
    est = LocalError(ad, 1.0 / 12.0, (1e-12, 1e-12), 2.0, noise=noise)
    A = np.where(np.arange(n) == 0, 0.0, 1e3 * (1.0 + rng.random(n)))
    B = rng.standard_normal(n)
    state = lambda t: (A * t ** 3 + B * t + 1e-10 * rng.standard_normal(n),       # noqa: E731
                       3 * A * t ** 2 + B + 1e-10 * rng.standard_normal(n))
    t = 0.0
    est.start(t, (*state(t), 6 * A * t), initial=True)
    out = []
    for k in range(steps):
        for attempt in range(2 if k % 3 == 2 else 1):
            h = 1e-3 * (1.0 + 0.5 * rng.random())
            x1 = state(t + h)
            out.append((est.norm(t + h, x1, h), est._floor))
        t += h
        est.accept(t, x1)
        if k == 5:
            est.hist = [(s, q.copy(), v.copy()) for s, q, v in est.hist]
    return out


@pytest.mark.parametrize("case", ["scalar noise", "measured noise over the weights", "velocities per unit step"])
def test_fast_norm_equals_the_general_path(monkeypatch, case):
    """Norms and floor flags of the same candidates, fast vs general path, bitwise — with
    Newton's scalar noise, a measured per-component noise large enough to set some weights
    (the floor branch: floor_hit and floor_decided both occur, asserted), and the velocity
    weights per unit step (timeloop.V_PER_STEP False)."""
    noise = None
    if case == "measured noise over the weights":
        noise = lambda q: np.where(np.arange(q.size) == 0, 1e-15, 5e-9)      # noqa: E731
    if case == "velocities per unit step":
        monkeypatch.setattr(tl, "V_PER_STEP", False)
    fast = _drive(np.random.default_rng(7), noise)
    with monkeypatch.context() as m:
        _general(m)
        ref = _drive(np.random.default_rng(7), noise)
    assert len(fast) == len(ref) > 9
    assert [f for f, _ in fast] == [r for r, _ in ref]              # bitwise floats
    assert [fl for _, fl in fast] == [fl for _, fl in ref]
    assert all(f is not None for f, _ in fast[3:])
    if noise is not None:
        assert any(fl[0] for _, fl in fast) and any(fl[1] for _, fl in fast)


def test_fivebar_adaptive_steps_bitwise_the_general_path(monkeypatch):
    """The five-bar, Arnold–Brüls, 0.3 s at rtol = atol = 1e-5 (the issue 18 work-precision
    setting, shortened): the accepted grid and ψ of the fast path equal the general path's
    bit for bit."""
    run = ["simulation.t_end=0.3", "simulation.adapt.rtol=1e-5", "simulation.adapt.atol=1e-5",
           'simulation.genalpha_form="arnold-bruls"']
    pr = Problem(load_config(FIVEBAR, run))
    g = pr.forward().grid
    psi = pr.objective_values()
    _general(monkeypatch)
    pr2 = Problem(load_config(FIVEBAR, run))
    g2 = pr2.forward().grid
    assert g.steps > 50 and np.unique(np.round(g.h, 12)).size > 3     # a varied sequence
    assert g == g2
    assert pr2.objective_values() == psi
