"""The error estimate of adaptive runs is decided by rtol/atol, not by Newton's noise
(parmbs/integrators/newton_tol.py, timeloop.LocalError)."""
import os

import numpy as np

import parmbs  # noqa: F401  (before numpy users: parmbs/_determinism.py)
from parmbs.config.loader import load_config
from parmbs.config.schema import Newton
from parmbs.integrators.newton_tol import KAPPA, NOISE_GAIN, AdaptiveNewton
from parmbs.sensitivity.problem import Problem

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIVEBAR = os.path.join(ROOT, "configs", "fivebar.toml")
RUN = ["simulation.t_end=0.2", "simulation.adapt.rtol=1e-5", "simulation.adapt.atol=1e-5",
       'simulation.integrator="genalpha"', 'simulation.genalpha_form="arnold-bruls"']


def test_no_step_of_the_fivebar_is_decided_by_the_noise_floor(monkeypatch):
    """No accepted step's error weight is set by the noise floor 2δ (LocalError.floor_hits).
    Both mechanisms of timeloop.py are checked on their own, each against the former
    behaviour on the same run (Arnold–Brüls, 0.2 s, rtol = atol = 1e-5; measured):
    velocities per unit step with Newton's fixed 1e-12 test (as before this change):
    floor-set weights on 74 of 269 steps, 26 rejections; the same with Newton's test tied to
    the weights (newton_tol.py): 0 of 234, 1 rejection; velocities per step as well (the
    shipped setting): 0 of 42.  The first assertion group fails if the coupling is lost,
    the last if the floor returns."""
    import parmbs.integrators.timeloop as tl
    pr = Problem(load_config(FIVEBAR, RUN))
    assert isinstance(pr.stepper.newton, AdaptiveNewton)
    g = pr.forward().grid
    assert g.floor_hits == 0 and g.floor_decided == 0
    monkeypatch.setattr(tl, "V_PER_STEP", False)         # velocities per unit step
    coupled = Problem(load_config(FIVEBAR, RUN)).forward().grid
    assert coupled.floor_hits == 0
    old = Problem(load_config(FIVEBAR, RUN))
    old.stepper.newton = old.stepper.newton.file          # simulation.newton as given: δ = 1e-12 (1 + |q|)
    go = old.forward().grid
    assert go.floor_hits > go.steps / 10 and go.floor_decided > 0


def test_newton_test_follows_the_error_weights_and_never_the_file_looser():
    """AdaptiveNewton.done: stops when 2|Δq_i| ≤ κ w_q,i (w_q per unit step: h/T) and
    2(γ/β)|Δq_i|/h ≤ κ w_v,i (w_v per step), + 4ε|q|; keeps iterating above
    simulation.newton whatever the weights; accepts a stalled (no longer contracting)
    update within the file's tolerance and records it as the noise."""
    nt = AdaptiveNewton(Newton(atol=1e-6, rtol=1e-6, max_it=25), rtol=1e-4, atol=1e-4, horizon=1.0, v_gain=2.0)
    h = 1e-2
    nt.set_h(h)
    q, v = np.array([1.0, 0.0]), np.array([0.0, 0.0])
    # component 1 at rest: min(κ/2 · 1e-4 · h/T, κ/2 · 1e-4 · h/(γ/β)) = 2.5e-8
    lim = min(KAPPA / NOISE_GAIN * 1e-4 * h, KAPPA / NOISE_GAIN * 1e-4 * h / 2.0)
    assert not nt.done(np.array([0.0, 2 * lim]), q, v, prev=np.inf)
    assert nt.done(np.array([0.0, 0.5 * lim]), q, v, prev=np.inf)
    assert np.array_equal(nt.noise(q), np.maximum([0.0, 0.5 * lim], 4 * np.finfo(float).eps))
    # loose weights: the file's 1e-12 (1 + |q|) still applies
    nt2 = AdaptiveNewton(Newton(atol=1e-12, rtol=1e-12, max_it=25), rtol=1e-1, atol=1e-1, horizon=1.0,
                         v_gain=2.0)
    nt2.set_h(h)
    assert not nt2.done(np.array([0.0, 1e-11]), q, v, prev=np.inf)
    assert nt2.done(np.array([0.0, 1e-13]), q, v, prev=np.inf)
    # stalled above the coupled test (≈ 4ε at this h) but within the file's: accepted, measured
    nt.set_h(1e-6)
    assert not nt.done(np.array([0.0, 1e-9]), q, v, prev=4e-9)       # still contracting
    assert nt.done(np.array([0.0, 1e-9]), q, v, prev=1.5e-9)          # stalled
    assert nt.noise(q)[1] == 1e-9
