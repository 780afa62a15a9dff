"""The PI controller's hysteresis keys: the ratchet's release (``simulation.adapt.grow_after``;
integrators/timeloop.py, "Ratchet") and the shrink hysteresis (``keep_min``, "Shrink
hysteresis"): the rules by hand, the compiled estimate's path = the Python controller's bit
for bit, five-bar runs' step sequences, the keys absent = today's config, and the refusals.
The restart across a kill: test_checkpoint_adaptive.test_controller_memory_resumed_takes_the_same_steps."""
import os

import numpy as np
import pytest

import parmbs  # noqa: F401  (before numpy users: parmbs/_determinism.py)
from parmbs.config.loader import load_config
from parmbs.integrators import timeloop as tl
from parmbs.integrators.timeloop import Adapt, LocalError
from parmbs.sensitivity.problem import Problem

from cli_helpers import parmbs_in_process

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIVEBAR = os.path.join(ROOT, "configs", "fivebar.toml")
AB = ['simulation.integrator="genalpha"', 'simulation.genalpha_form="arnold-bruls"']
ADAPT = ["simulation.adapt.rtol=1e-5", "simulation.adapt.atol=1e-5", "simulation.t_end=0.3"]


def _pi(err, err_prev):
    """Controller.after_accept's PI factor before the hysteresis (module docstring)."""
    return min(tl.FAC_MAX, max(tl.FAC_MIN, tl.SAFETY * err ** -tl.K_I * (err_prev ** tl.K_P if err_prev else 1.0)))


def test_release_rule_by_hand():
    """n = 3: small growths keep h twice, the third grows by the smallest of the three;
    a shrink, a growth ≥ grow_min and a rejection each end the run."""
    ad = Adapt(rtol=1e-6, atol=1e-7, dt0=1e-3, dt_min=1e-9, dt_max=10.0, grow_after=3)
    c = tl.Controller(ad)
    errs = [0.3, 0.3, 0.25, 0.3, 0.3, 0.3]
    facs, prev, want = [], None, []
    for e in errs:
        want.append(_pi(e, prev))
        prev = e
        facs.append(c.after_accept(1.0, e))
    assert want[0] >= ad.grow_min and facs[0] == want[0]          # a plain growth: taken, no run
    assert all(1.0 <= f < ad.grow_min for f in want[1:])          # then small growths
    assert facs[1:3] == [1.0, 1.0] and facs[3] == min(want[1:4]) > 1.0
    assert facs[4:] == [1.0, 1.0] and c.run == 2
    c.rejected()
    assert c.run == 0 and c.after_accept(1.0, 0.3) == 1.0 and c.run == 1
    assert c.after_accept(1.0, 0.95) < 1.0 and c.run == 0           # a shrink ends the run
    off = tl.Controller(Adapt(rtol=1e-6, atol=1e-7, dt0=1e-3, dt_min=1e-9, dt_max=10.0))
    assert [off.after_accept(1.0, e) for e in errs][1:] == [1.0] * 5 and off.memory() == ()


def test_shrink_kept_by_hand():
    """keep_min 0.8: a proposed shrink above 0.8 keeps h, one below is taken; growths as before."""
    ad = Adapt(rtol=1e-6, atol=1e-7, dt0=1e-3, dt_min=1e-9, dt_max=10.0, keep_min=0.8)
    c, ref = tl.Controller(ad), tl.Controller(Adapt(rtol=1e-6, atol=1e-7, dt0=1e-3, dt_min=1e-9, dt_max=10.0))
    for e in (0.3, 0.8, 0.8, 3.0, 0.3, 0.01):
        pi, f, f0 = _pi(e, c.err_prev), c.after_accept(1.0, e), ref.after_accept(1.0, e)
        assert f == (1.0 if 0.8 < pi < 1.0 else f0), (e, pi, f, f0)
    assert tl.Controller(ad).after_accept(1.0, 0.8) == 1.0 > tl.Controller(ref.ad).after_accept(1.0, 0.8)


@pytest.mark.parametrize("grow_after, keep_min", [(3, 1.0), (None, 0.8), (3, 0.8)])
def test_compiled_path_is_the_controllers(grow_after, keep_min):
    """The compiled estimate's proposal (compiled/local_error: its own hysteresis with S_KEEP;
    with grow_after its PI factor S_FAC through Controller.accepted) gives after_accept's
    steps and run bit for bit, over a sequence of norms that makes runs, releases, kept and
    taken shrinks and large growths (each asserted where the keys make it)."""
    pytest.importorskip("numba")
    n = 4
    ad = Adapt(rtol=1e-6, atol=1e-7, dt0=1e-3, dt_min=1e-7, dt_max=1.0, horizon=0.5, grow_after=grow_after,
               keep_min=keep_min)
    est = LocalError(ad, 1.0 / 12.0, (0.0, 0.0), compiled=True)     # no noise floor
    est.ctl = ctl = tl.Controller(ad)
    ref = tl.Controller(ad)
    x = lambda c: (np.full(n, c), np.full(n, c), np.zeros(n), np.zeros(2))  # noqa: E731  (‖e‖ ∝ c)
    est.start(0.0, x(0.0), initial=False)
    for k in range(1, 5):
        est.accept(k * 1e-3, x(0.0))
    rng = np.random.default_rng(5)
    facs, raw = [], []
    for k in range(80):
        h = float(10.0 ** rng.uniform(-3.2, -2.8))
        u = rng.uniform()                     # 0.3: PI factor ≈ 1.08; 0.8: ≈ 0.94
        target = 0.3 if u < 0.6 else 0.8 if u < 0.75 else 10.0 ** rng.uniform(-3.0, 0.3)
        c = 1e-12 * target / est.norm(5e-3, x(1e-12), h)       # ‖e‖ ∝ c while atol sets the weights
        err = est.norm(5e-3, x(c), h)
        raw.append(est._S.item(est._cl.S_FAC))
        hn = ctl.accepted(h, err, est.h_accept)
        assert est.h_accept is not None and hn == ref.after_accept(h, err)         # bitwise
        assert (ctl.run, ctl.run_min, ctl.err_prev) == (ref.run, ref.run_min, ref.err_prev)
        facs.append(hn / h)
    f, raw = np.array(facs), np.array(raw)
    assert (f == 1.0).sum() > 10 and (f < 1.0).any() and (f >= ad.grow_min).any()
    assert ((f > 1.0) & (f < ad.grow_min)).any() == (grow_after is not None)    # released
    band = (raw > keep_min) & (raw < 1.0)
    assert ((raw > 0.8) & (raw < 1.0)).any() and np.all(f[band] == 1.0)        # kept shrinks


def _grid(extra):
    pr = Problem(load_config(FIVEBAR, AB + ADAPT + extra))
    return pr, pr.forward().grid


def test_five_bar_run_releases_after_n_steps_and_paths_agree(monkeypatch):
    """Five-bar, Arnold–Brüls 0.3 s, rtol 1e-5, grow_after 4: every growth below grow_min
    comes after at least 4 steps of the same h (the run that released it) — and there are
    such growths, where the default run has none; the compiled estimate's proposal path
    and the Python controller's (after_accept on every step) take the same steps bit for bit."""
    pr, g = _grid(["simulation.adapt.grow_after=4"])
    _, g0 = _grid([])
    r = g.h[1:-1] / g.h[:-2]
    small = np.flatnonzero((r > 1.0) & (r < pr.adapt.grow_min))
    assert len(small) >= 3, r[r > 1.0]
    for i in small:                            # h[i+1] grew; h[i-3] … h[i] equal
        assert i >= 3 and np.all(g.h[i - 3:i + 1] == g.h[i]), (i, g.h[i - 4:i + 2])
    r0 = g0.h[1:-1] / g0.h[:-2]
    assert not np.any((r0 > 1.0) & (r0 < pr.adapt.grow_min)) and g != g0
    monkeypatch.setattr(tl.Controller, "accepted", lambda self, h, err, h_next: self.after_accept(h, err))
    _, g_py = _grid(["simulation.adapt.grow_after=4"])
    assert g_py == g


def test_five_bar_run_with_kept_shrinks(monkeypatch):
    """keep_min 0 (CVODE's: h shrinks only on a rejection), five-bar Arnold–Brüls 0.3 s at rtol
    1e-5: the accepted grid shrinks h no more often than steps were rejected (the default
    run shrinks it far more often), and the compiled proposal's path and the Python
    controller's take the same steps bit for bit."""
    pr = Problem(load_config(FIVEBAR, AB + ADAPT + ["simulation.adapt.keep_min=0"]))
    tr = pr.forward()
    g = tr.grid
    shrinks = int(np.sum(g.h[1:-1] < g.h[:-2]))
    _, g0 = _grid([])
    assert shrinks <= tr.rejected and np.sum(g0.h[1:-1] < g0.h[:-2]) > shrinks + 10
    monkeypatch.setattr(tl.Controller, "accepted", lambda self, h, err, h_next: self.after_accept(h, err))
    _, g_py = _grid(["simulation.adapt.keep_min=0"])
    assert g_py == g


def test_absent_key_keeps_the_resolved_config():
    """Absent grow_after and keep_min are left out of the resolved config (its hash,
    record_match.py, the same as before the keys); given, they are there."""
    assert "grow_after" not in load_config(FIVEBAR, ADAPT).to_toml()
    assert "keep_min" not in load_config(FIVEBAR, ADAPT).to_toml()
    assert "grow_after = 8" in load_config(FIVEBAR, ADAPT + ["simulation.adapt.grow_after=8"]).to_toml()
    assert "keep_min = 0.5" in load_config(FIVEBAR, ADAPT + ["simulation.adapt.keep_min=0.5"]).to_toml()


@pytest.mark.parametrize("extra, words", [
    (['simulation.adapt.controller="H211b"'], ("grow_after", "controller")),
    (['simulation.formulation="index1"', 'simulation.integrator="dopri5"'], ("simulation.adapt.grow_after", "dopri5")),
    (["simulation.adapt.grow_after=0"], ("simulation.adapt.grow_after",)),
    (['simulation.adapt.controller="PI42"', "simulation.adapt.keep_min=0.5"], ("keep_min", "controller")),
    (['simulation.formulation="index1"', 'simulation.integrator="ts-rk"', "simulation.adapt.keep_min=0.5"],
     ("simulation.adapt.keep_min", "ts-rk")),
    (["simulation.adapt.keep_min=1.5"], ("simulation.adapt.keep_min",)),
])
def test_refused_is_exit_2_naming_file_and_key(extra, words):
    """With a digital filter (no hysteresis to release), with a TSAdapt/dopri5 integrator (the
    key would do nothing) and below 1: one line naming the file and the key, exit 2."""
    args = ["simulate", FIVEBAR, "--set", "simulation.t_end=0.01", "--set", "simulation.adapt.rtol=1e-5"]
    for e in extra + (["simulation.adapt.grow_after=4"] if not any("grow_after" in e or "keep_min" in e
                                                                  for e in extra) else []):
        args += ["--set", e]
    r = parmbs_in_process(*args, cwd=ROOT)
    assert r.returncode == 2 and "Traceback" not in r.stderr, (r.returncode, r.stderr)
    assert "fivebar.toml" in r.stderr and all(w in r.stderr for w in words), r.stderr
