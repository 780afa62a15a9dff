"""LocalError's estimate by divided-difference updates (integrators/divided_differences.py)
gives the numbers of the estimate written out from its definition (``reference_norm``:
the divided differences recomputed from the nodes, q and v apart, and the weighted norm
per part — LocalError's code before the updates) bit for bit: the same norms, floor flags
and accepted step sequences — on the numpy path and on the compiled one
(compiled/local_error.py, runs whose step is compiled)."""
import math
import os

import numpy as np
import pytest

import parmbs  # noqa: F401  (before numpy users: parmbs/_determinism.py)
import parmbs.integrators.timeloop as tl
from parmbs.config.loader import load_config
from parmbs.integrators.newton_tol import NOISE_GAIN
from parmbs.integrators.timeloop import Adapt, LocalError
from parmbs.sensitivity.problem import Problem

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIVEBAR = os.path.join(ROOT, "configs", "fivebar.toml")


def _dd(z, y):
    """y[z_0, …, z_3] of four distinct nodes, level by level."""
    t = list(y)
    for lev in range(1, 4):
        t = [(t[i + 1] - t[i]) / (z[i + lev] - z[i]) for i in range(len(t) - 1)]
    return t[0]


def _dd_confluent(z, y, d1, d2):
    """y[t0, t0, t1, t2] (d2 None) or y[t0, t0, t0, t1] (Hermite divided differences)."""
    if d2 is None:
        t0, t1, t2 = z
        y0, y1, y2 = y
        a01 = (y1 - y0) / (t1 - t0)
        a12 = (y2 - y1) / (t2 - t1)
        b001 = (a01 - d1) / (t1 - t0)
        b012 = (a12 - a01) / (t2 - t0)
        return (b012 - b001) / (t2 - t0)
    t0, t1 = z
    y0, y1 = y
    a01 = (y1 - y0) / (t1 - t0)
    b001 = (a01 - d1) / (t1 - t0)
    return (b001 - 0.5 * d2) / (t1 - t0)


def _third(est, t1, y1, j):
    nodes = [(t, s[j - 1]) for t, *s in est.hist] + [(t1, y1)]
    d1 = d2 = None
    if est.v0a0 is not None and len(est.hist) < 3 and est.hist[0][0] == est.t0:
        d1 = est.v0a0[0] if j == 1 else est.v0a0[1]
        d2 = est.v0a0[1] if j == 1 else None
    z = [t for t, _ in nodes]
    ys = [y for _, y in nodes]
    if len(nodes) >= 5:
        return 0.5 * (_dd(z[-4:], ys[-4:]) + _dd(z[-5:-1], ys[-5:-1]))
    if len(nodes) >= 4:
        return _dd(z[-4:], ys[-4:])
    if d1 is None:
        return None
    if len(nodes) == 3:
        return _dd_confluent(z, ys, d1, None)
    if len(nodes) == 2 and d2 is not None:
        return _dd_confluent(z, ys, d1, d2)
    return None


def reference_norm(est, t1, x1, h):
    """LocalError.norm from its definition (timeloop's module docstring)."""
    q1, v1 = np.asarray(x1[0]), np.asarray(x1[1])
    d3q, d3v = _third(est, t1, q1, 1), _third(est, t1, v1, 2)
    if d3q is None:
        return None
    parts = [(d3q, 1), (d3v, 2)] if d3v is not None else [(d3q, 1)]
    acc, acc_floor, cnt = 0.0, 0.0, 0
    dq = np.real(est.noise(q1)) if est.noise is not None else est.ntol[0] + est.ntol[1] * float(np.max(np.abs(q1)))
    floor_hit = False
    share = h / est.horizon
    share_v = 1.0 if tl.V_PER_STEP else share
    for d3, j in parts:
        y0, y1 = est.hist[-1][j], (q1 if j == 1 else v1)
        e = est.C * h ** 3 * 6.0 * d3
        tol = (est.atol + est.rtol * np.maximum(np.abs(y0), np.abs(y1))) * (share if j == 1 else share_v)
        noise = np.real(NOISE_GAIN * (dq if j == 1 else est.v_gain * dq / h))
        over = noise > tol
        floor_hit |= bool(np.any(over))
        r = np.real(e) / (tol + noise)
        acc += float(r @ r)
        acc_floor += float(np.sum(np.where(over, r * r, 0.0)))
        cnt += r.size
    est._floor = (floor_hit, floor_hit and acc_floor > 0.5 * acc)
    return math.sqrt(acc / cnt) if cnt else 0.0


def _general(monkeypatch):
    monkeypatch.setattr(LocalError, "norm", reference_norm)


def _numba():
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def _drive(rng, noise, n=7, steps=9, compiled=False):
    """A LocalError fed states of the cubic q_i = A_i t³ + B_i t (v = q̇; A_0 = 0, so the
    first component's error is ~0 and the others' third derivatives 6A_i carry the norm),
    perturbed by 1e-10, at uneven steps: per candidate its norm and floor flags.  Every
    third step's first candidate is rejected (a second one follows), and after the second
    and the sixth accepted state the history is handed over as a resumed run does (new
    tuples: the table rebuilt, with the confluent data at t_0 the first time).
    ``compiled``: LocalError's compiled call once its table is complete, the states with
    the acceleration, multiplier and pseudo-acceleration blocks a compiled step returns."""
    ad = Adapt(rtol=1e-6, atol=1e-7, dt0=1e-3, dt_min=1e-10, dt_max=1.0, horizon=0.5)
    est = LocalError(ad, 1.0 / 12.0, (1e-12, 1e-12), 2.0, noise=noise, compiled=compiled)
    A = np.where(np.arange(n) == 0, 0.0, 1e3 * (1.0 + rng.random(n)))
    B = rng.standard_normal(n)
    more = (np.zeros(n), np.zeros(2), np.zeros(n)) if compiled else ()
    state = lambda t: (A * t ** 3 + B * t + 1e-10 * rng.standard_normal(n),       # noqa: E731
                       3 * A * t ** 2 + B + 1e-10 * rng.standard_normal(n), *more)
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
        if k in (1, 5):
            est.resume([(s, q.copy(), v.copy()) for s, q, v in est.hist])
    return out


@pytest.mark.parametrize("compiled", [False, True], ids=["numpy", "compiled"])
@pytest.mark.parametrize("case", ["scalar noise", "measured noise over the weights", "velocities per unit step"])
def test_updates_equal_the_definition(monkeypatch, case, compiled):
    """Norms and floor flags of the same candidates, updates vs definition, bitwise — with
    Newton's scalar noise, a measured per-component noise large enough to set some weights
    (the floor branch: floor_hit and floor_decided both occur, asserted), and the velocity
    weights per unit step (timeloop.V_PER_STEP False); numpy and compiled."""
    if compiled and not _numba():
        pytest.skip("numba not installed: the compiled path is optional")
    noise = None
    if case == "measured noise over the weights":
        noise = lambda q: np.where(np.arange(q.size) == 0, 1e-15, 5e-9)      # noqa: E731
    if case == "velocities per unit step":
        monkeypatch.setattr(tl, "V_PER_STEP", False)
    calls = []
    if compiled:
        real = LocalError._norm_compiled
        monkeypatch.setattr(LocalError, "_norm_compiled", lambda *a: calls.append(1) or real(*a))
    fast = _drive(np.random.default_rng(7), noise, compiled=compiled)
    assert (len(calls) > len(fast) // 2) if compiled else not calls   # every candidate with a complete table
    with monkeypatch.context() as m:
        _general(m)
        ref = _drive(np.random.default_rng(7), noise, compiled=compiled)
    assert len(fast) == len(ref) > 9
    assert [f for f, _ in fast] == [r for r, _ in ref]              # bitwise floats
    assert [fl for _, fl in fast] == [fl for _, fl in ref]
    assert all(f is not None for f, _ in fast[3:])
    if noise is not None:
        assert any(fl[0] for _, fl in fast) and any(fl[1] for _, fl in fast)


def test_fivebar_adaptive_steps_bitwise_the_definition(monkeypatch):
    """The five-bar, Arnold–Brüls, 0.3 s at rtol = atol = 1e-5 (the issue 18 work-precision
    setting, shortened): the accepted grid and ψ of the updates equal the definition's
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


@pytest.mark.parametrize("compiled", [False, True], ids=["numpy", "compiled"])
def test_non_finite_candidate_is_infinite(compiled):
    """A candidate with a non-finite entry in any block (here the multipliers) has the
    norm math.inf, on both paths (the loop then quarters the step); the table is left as
    it was, so the next finite candidate gets the norm it would have had."""
    if compiled and not _numba():
        pytest.skip("numba not installed: the compiled path is optional")
    n = 3
    ad = Adapt(rtol=1e-6, atol=1e-7, dt0=1e-3, dt_min=1e-10, dt_max=1.0, horizon=0.5)
    ests = [LocalError(ad, 1.0 / 12.0, compiled=compiled) for _ in range(2)]
    x = lambda t, lam=0.0: (np.full(n, t ** 3), np.full(n, 3 * t ** 2), np.zeros(n), np.full(2, lam))  # noqa: E731
    for est in ests:
        est.start(0.0, x(0.0), initial=False)
        for k in range(1, 6):
            est.accept(k * 1e-3, x(k * 1e-3))
    assert ests[0].norm(6e-3, x(6e-3, np.nan), 1e-3) == math.inf
    assert ests[0].norm(6e-3, x(6e-3), 1e-3) == ests[1].norm(6e-3, x(6e-3), 1e-3) < math.inf


@pytest.mark.parametrize("grow_min", [1.3, 1.5])
def test_compiled_proposal_is_the_controllers(grow_min):
    """The step the compiled estimate proposes after an acceptance (LocalError.h_accept,
    compiled/local_error.estimate_step) is Controller.after_accept's, bit for bit, over
    norms from 1e-13 to 1e3 (the error-floor, FAC_MIN/FAC_MAX and dt_min/dt_max clips
    and the hysteresis band all reached, asserted) with and without the I-part memory;
    and Controller.accepted keeps the same memory as after_accept."""
    if not _numba():
        pytest.skip("numba not installed: the compiled path is optional")
    n = 4
    ad = Adapt(rtol=1e-6, atol=1e-7, dt0=1e-3, dt_min=2e-4, dt_max=3e-3, horizon=0.5, grow_min=grow_min)
    est = LocalError(ad, 1.0 / 12.0, (0.0, 0.0), compiled=True)     # no noise floor
    est.ctl = ctl = tl.Controller(ad)
    rng = np.random.default_rng(3)
    x = lambda c: (np.full(n, c), np.full(n, c), np.zeros(n), np.zeros(2))  # noqa: E731  (‖e‖ ∝ c)
    est.start(0.0, x(0.0), initial=False)
    for k in range(1, 5):
        est.accept(k * 1e-3, x(0.0))
    seen, facs = [], []
    for c in 10.0 ** np.linspace(-22.0, -4.0, 60):
        for prev in (None, float(10.0 ** rng.uniform(-3, 0.5))):
            ctl.err_prev = prev
            h = float(10.0 ** rng.uniform(-3.6, -2.6))
            err = est.norm(5e-3, x(c), h)
            ref = tl.Controller(ad)
            ref.err_prev = prev
            want = ref.after_accept(h, err)
            assert est.h_accept == want                             # bitwise
            assert ctl.accepted(h, err, est.h_accept) == want and ctl.err_prev == ref.err_prev
            seen.append(err)
            facs.append(want / h)
    assert min(seen) < 1e-10 and max(seen) > 1e2
    assert any(f == 1.0 for f in facs) and min(facs) < 1.0 < max(facs)
    assert any(f == tl.FAC_MIN for f in facs) or any(abs(f * 1e-3 - ad.dt_min) < 1e-18 for f in facs)


#: (the stepper's settings, its module and class, the compiled helper's module and class)
_AB = ("parmbs.integrators.genalpha_ab", "ArnoldBrulsAlpha"), ("parmbs.compiled.ab_stepper", "CompiledAB")
_NM = ("parmbs.integrators.newmark", "NewmarkFamily"), ("parmbs.compiled.stepper", "CompiledNewmark")
FUSED = {"arnold-bruls": (['simulation.genalpha_form="arnold-bruls"'], *_AB),
         "chung-hulbert": (['simulation.integrator="genalpha"', 'simulation.stabilization="none"'], *_NM),
         "trapezoidal": (['simulation.integrator="trapezoidal"', 'simulation.stabilization="none"'], *_NM)}


@pytest.mark.parametrize("form", sorted(FUSED))
def test_estimate_fused_into_the_step_is_the_separate_call(monkeypatch, form):
    """The five-bar, 0.3 s at rtol = atol = 1e-5 with grow_min 1.5, by the compiled
    Arnold–Brüls step and the compiled Newmark-family step (Chung–Hulbert generalized-α, the
    trapezoidal rule): the estimate computed inside the compiled step's call
    (ab_step.ab_newton_step_estimate, newmark_step.newton_step_estimate;
    LocalError.request) gives the accepted grid, ψ and every state row of the separate
    compiled call (_norm_compiled: the stepper's ``fuses_estimate`` off) bit for bit, and
    it was taken on every step but the first few (the table not yet complete)."""
    if not _numba():
        pytest.skip("numba not installed: the compiled path is optional")
    import importlib
    settings, (smod, scls), (cmod, ccls) = FUSED[form]
    stepper_cls = getattr(importlib.import_module(smod), scls)
    compiled_cls = getattr(importlib.import_module(cmod), ccls)
    run = ["simulation.t_end=0.3", "simulation.adapt.rtol=1e-5", "simulation.adapt.atol=1e-5",
           "simulation.adapt.grow_min=1.5"] + settings
    fused = []
    real = compiled_cls.newton

    def newton(self, *a, **k):
        r = real(self, *a, **k)
        est = a[9] if len(a) > 9 else k.get("estimate")
        fused.append(est is not None and est.out is not None)
        return r
    monkeypatch.setattr(compiled_cls, "newton", newton)
    pr = Problem(load_config(FIVEBAR, run))
    assert type(pr.stepper) is stepper_cls and pr.stepper.compiled is not None
    tr = pr.forward()
    n_fused = sum(fused)
    monkeypatch.setattr(stepper_cls, "fuses_estimate", False)
    fused.clear()
    pr2 = Problem(load_config(FIVEBAR, run))
    tr2 = pr2.forward()
    assert not any(fused)
    assert tr.grid.steps > 50 and n_fused >= tr.grid.steps - 5
    assert tr.grid == tr2.grid
    assert pr.objective_values() == pr2.objective_values()
    for a, b in zip((tr.q, tr.v, tr.a, tr.lam, *tr.extra), (tr2.q, tr2.v, tr2.a, tr2.lam, *tr2.extra)):
        assert a.tobytes() == b.tobytes()
