"""Error control on the objectives' quadratures (simulation.adapt.objective_atol;
parmbs/integrators/quad_error.py), on the five-bar's first 0.05 s:

* the estimate is the trapezoidal remainder h³/12 f'': on a quadratic integrand it is
  exact, and a (−1)^k sequence moves the weight, not the estimate;
* with the quadratures in the error test the run takes more steps than without and ψ3
  (∫|r̈|², an acceleration objective) moves towards the fine fixed-step value;
* the sensitivities stay those of the accepted step sequence: adjoint = direct;
* a run killed in the forward sweep and resumed from its checkpoint takes the same
  steps and gives the same gradient, bit for bit (the integrand history and ∫|f| are
  part of the stored loop state)."""
from __future__ import annotations

import pathlib

import parmbs  # noqa: F401  (before numpy users: parmbs/_determinism.py)
import numpy as np
import pytest

from parmbs.config import load_config
from parmbs.integrators.quad_error import QuadratureError
from parmbs.sensitivity.problem import Problem

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIVEBAR = str(ROOT / "configs" / "fivebar.toml")
ADAPT = ["simulation.t_end=0.05", "simulation.genalpha_form=\"arnold-bruls\"", "simulation.adapt.rtol=1e-4",
         "simulation.adapt.atol=1e-4", "simulation.dt=0.01"]
QUAD = ["simulation.adapt.objective_atol=1e-8"]


def _problem(extra=()):
    return Problem(load_config(FIVEBAR, ADAPT + list(extra)))


@pytest.fixture(scope="module")
def runs():
    out = {}
    for name, extra in (("plain", []), ("quad", QUAD)):
        pr = _problem(extra)
        tr = pr.forward()
        out[name] = (pr, tr.grid, pr.objective_values(), pr.adjoint(), pr.direct())
    return out


def test_estimate_is_the_trapezoidal_remainder():
    """f(t) = t²: h³/12 f'' = h³/6 exactly, on uneven nodes; the weight rtol h f̄."""
    qe = QuadratureError(lambda t, x: [t * t], 1, 1e-3, 0.0, 1.0, 0.0)
    qe.start(0.0, None)
    for t, h in ((0.1, 0.1), (0.25, 0.15)):
        qe.norm(t, None, h)
        qe.accept()
    h = 0.05
    nrm = qe.norm(0.3, None, h)
    S1 = 0.3 ** 3 / 3 + (0.1 ** 3 / 6 + 0.15 ** 3 / 6 + h ** 3 / 6)   # ∫t² + the trapezoid's excess
    sc = 1e-3 * h * max(0.5 * (0.25 ** 2 + 0.3 ** 2), S1 / 0.3)
    assert nrm == pytest.approx((h ** 3 / 6) / sc, rel=1e-9)


def test_alternating_integrand_widens_the_weight():
    """f = 1 + ε(−1)^k on equal steps: the mean of the two second differences cancels,
    the alternating part enters the weight: the norm stays below 1 for any ε."""
    for eps in (1e-6, 1e-2, 1.0):
        qe = QuadratureError(lambda t, x: [1.0 + eps * x], 1, 1e-6, 0.0, 1.0, 0.0)
        qe.start(0.0, 1.0)
        for k in range(1, 5):
            nrm = qe.norm(0.01 * k, (-1.0) ** k, 0.01)
            qe.accept()
        assert nrm < 1e-9


def test_newton_cap_keeps_the_acceleration_noise_at_kappa_of_the_weight():
    """QuadratureError.newton_cap(t, x, h): the δq whose noise h·g(h)·δq is κ of the
    step's weight rtol h |f(x)| + atol_Q h/T (g, f at the state the step starts from);
    AdaptiveNewton.limit lowers both of Newton's tests to it, never raises them."""
    from parmbs.config.schema import Newton
    from parmbs.integrators.newton_tol import KAPPA, AdaptiveNewton
    G = 3.0                                           # |∂f/∂q̈| of f = 3 q̈: δf = G δq/(βh²)
    qe = QuadratureError(lambda t, x: [2.0 + t], 1, 1e-6, 1e-9, 0.5, 0.0,
                         unit_noise=lambda t, x: (lambda h: np.array([G / (0.25 * h * h)])))
    assert QuadratureError(lambda t, x: [1.0], 1, 1e-6, 0.0, 1.0, 0.0).newton_cap(0.0, None, 1e-3) is None
    h = 1e-3
    sc = 1e-6 * h * 2.02 + 1e-9 * h / 0.5
    cap = qe.newton_cap(0.02, None, h)
    assert cap == pytest.approx(KAPPA * sc / (h * G / (0.25 * h * h)), rel=1e-12)
    nt = AdaptiveNewton(Newton(atol=1e-12, rtol=1e-12, max_it=25), rtol=1e-4, atol=1e-4, horizon=1.0, v_gain=2.0)
    nt.set_h(h)
    loose = nt.atol
    nt.limit(cap)
    assert nt.atol == min(loose, cap)
    q, v = np.ones(2), np.zeros(2)
    # an update between the cap and the state test's allowance (and simulation.newton's
    # 2e-12 here) no longer stops Newton
    assert 10 * cap < 1e-12 and not nt.done(np.full(2, 10 * cap), q, v, np.inf)
    assert nt.done(np.full(2, 0.5 * cap), q, v, np.inf)
    nt.set_h(h)                                       # the next step starts without a cap
    assert nt.cap is None and nt.atol == loose


def test_quadrature_control_takes_more_steps_and_moves_psi3(runs):
    _, g0, v0, _, _ = runs["plain"]
    _, g1, v1, _, _ = runs["quad"]
    assert g1.steps > g0.steps, (g1.steps, g0.steps)
    fine = Problem(load_config(FIVEBAR, ["simulation.t_end=0.05", "simulation.dt=1e-4", ADAPT[1]]))
    fine.forward()
    ref = fine.objective_values()["psi3"]
    # dt 1e-4 fixed is ~1e-8 from the converged ψ3 here (second order, README table);
    # the quadrature control must bring ψ3 closer to it than the position/velocity test alone
    assert abs(v1["psi3"] - ref) < abs(v0["psi3"] - ref), (v1["psi3"], v0["psi3"], ref)


def test_adjoint_equals_direct_on_the_accepted_steps(runs):
    """The step sequence is frozen: the sweeps differentiate the same discrete scheme.
    Bound: round-off of the two sweeps' sums, ~1e-13 relative (test_adaptive's 1e-9)."""
    _, _, _, adj, direct = runs["quad"]
    for k in adj:
        scale = np.max(np.abs(direct[k]))
        assert np.max(np.abs(adj[k] - direct[k])) <= 1e-9 * scale, k


@pytest.mark.parametrize("schedule", ["all", "every:3"])
def test_resumed_forward_takes_the_same_steps(schedule, runs, tmp_path, monkeypatch):
    from parmbs.checkpoint import SimulatedKill
    _, grid0, values0, grad0, _ = runs["quad"]
    monkeypatch.setenv("PARMBS_TEST_FAULTS", "1")
    monkeypatch.setenv("PARMBS_CHECKPOINT_INTERVAL", "0")
    monkeypatch.setenv("PARMBS_CHECKPOINT_KILL", "raise:forward:9")
    h5 = tmp_path / "ck.h5"
    pr = _problem(QUAD + [f"checkpoint.schedule={schedule}"])
    run = pr.use_checkpoint(h5)
    with pytest.raises(SimulatedKill):
        pr.forward()
    run.store.abandon()
    monkeypatch.delenv("PARMBS_CHECKPOINT_KILL")
    pr = _problem(QUAD + [f"checkpoint.schedule={schedule}"])
    run = pr.use_checkpoint(h5)
    k0 = run.resume_point()
    assert 2 < k0 < grid0.steps
    tr = pr.forward()
    values = pr.objective_values(tr)
    grad = pr.adjoint()
    run.store.close()
    assert tr.resumed_from == k0
    assert pr.grid == grid0
    for k in grad0:
        assert values[k] == values0[k], k
        assert np.array_equal(grad[k], grad0[k]), k


def test_ts_steppers_refuse_the_key():
    """PETSc TS steppers choose their steps with TSAdapt: the key would be ignored, so it is
    refused, naming the file and key."""
    from parmbs.config.errors import ConfigError
    with pytest.raises(ConfigError, match="simulation.adapt.objective_atol"):
        load_config(FIVEBAR, ADAPT + QUAD + ['simulation.integrator="ts-alpha2"'])


def test_shared_integrand_evaluation_is_bitwise_the_terms_own():
    """The Iltis' z̈² and z̈⁴ of one point share one evaluation of z̈ (and one stacked
    complex step for ∂/∂(q, v, a)) in the quadrature test: the same bytes as each
    term's own value and grads, at a perturbed state (sensitivity/objectives.py,
    shared_values / shared_state_grads)."""
    from parmbs.sensitivity.objectives import shared_state_grads, shared_values
    pr = Problem(load_config(str(ROOT / "configs" / "iltis.toml"), ["simulation.t_end=0.001"]))
    terms = [ob.integrand for ob in pr.objectives if ob.integrand]
    assert len(terms) == 2
    p = pr.sys.p
    rng = np.random.default_rng(3)
    x = pr.stepper.initial(pr.t0, p)
    x = tuple(np.asarray(y, float) + 1e-3 * rng.standard_normal(np.shape(y)) for y in x[:4])
    refs = [ob.reference(pr.sys, x[0], p) for ob in pr.objectives if ob.integrand]
    dm, nd = pr.design.map, pr.design.ncols
    vals = shared_values(terms, pr.sys, 0.0, x, p, refs)
    grads = shared_state_grads(terms, pr.sys, 0.0, x, p, refs, dm, nd)
    for tm, ref, v, g in zip(terms, refs, vals, grads):
        assert np.float64(v).tobytes() == np.float64(tm.value(pr.sys, 0.0, x, p, ref)).tobytes()
        own = tm.grads(pr.sys, 0.0, x, p, ref, dm, nd)[0]
        for j in range(3):
            assert g[j].tobytes() == own[j].tobytes()
        assert np.any(g[2] != 0)     # chassis.com: s' = 0, so z̈ reads the accelerations only


def test_values_and_gains_in_one_call_are_bitwise_the_separate_calls():
    """The quadrature test's values and Newton-cap gains of one state come from one
    stacked call (the plain state as row 0 before the complex steps:
    shared_values_grads): the same bytes as shared_values and shared_state_grads, at
    many perturbed states of the Iltis (z̈ of both objectives shared) and of the
    five-bar (unshared terms: the separate calls)."""
    from parmbs.sensitivity.objectives import shared_state_grads, shared_values, shared_values_grads
    rng = np.random.default_rng(7)
    for cfg, over in ((str(ROOT / "configs" / "iltis.toml"), ["simulation.t_end=0.001"]), (FIVEBAR, ADAPT)):
        pr = Problem(load_config(cfg, over))
        obs = [ob for ob in pr.objectives if ob.integrand]
        terms = [ob.integrand for ob in obs]
        p = pr.sys.p
        dm, nd = pr.design.map, pr.design.ncols
        x0 = pr.stepper.initial(pr.t0, p)
        for scale in (0.0, 1e-6, 1e-3, 1e-1, 10.0):
            x = tuple(np.asarray(y, float) + scale * rng.standard_normal(np.shape(y)) for y in x0[:4])
            refs = [ob.reference(pr.sys, x[0], p) for ob in obs]
            vals, grads = shared_values_grads(terms, pr.sys, 0.01, x, p, refs, dm, nd)
            for v, w in zip(vals, shared_values(terms, pr.sys, 0.01, x, p, refs)):
                assert np.float64(v).tobytes() == np.float64(w).tobytes()
            for g, h in zip(grads, shared_state_grads(terms, pr.sys, 0.01, x, p, refs, dm, nd)):
                for j in range(3):
                    assert g[j].tobytes() == h[j].tobytes()
