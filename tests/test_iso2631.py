"""ISO 2631-1 ride measures as objectives (``iso2631_rms``, ``iso2631_vdv``;
parmbs/sensitivity/ride.py).

* the weighting W_k / W_d of Annex A against the weighting factors of ISO 2631-1:1997
  Table 3 (×1000; the same numbers as ISO 8041's weighting tables);
* the exactly discretized filter: against scipy's first-order-hold simulation
  (``scipy.signal.lsim``, ``interp=True``) and, for a sampled sine, the gain
  |W|·(1 − (ωh)²/12) that linear interpolation of the input predicts;
* the measures' values against an independent evaluation (lsim + trapezoidal sum)
  on the spatial double pendulum, their gradients (adjoint = direct, complex step,
  central differences), and a killed and resumed checkpointed ``parmbs gradient``
  giving the same bits;
* bad input: one line naming the key.
"""
import json

import numpy as np
import pytest
import scipy.signal

from parmbs.config import load_config
from parmbs.io.hdf5 import coordinate_names
from parmbs.integrators.trajectory import quadrature_weights
from parmbs.sensitivity.complex_step import complex_step_gradient
from parmbs.sensitivity.problem import Problem
from parmbs.sensitivity.ride import Filter, response, state_space

from conftest import CONFIGS
from gradient_checks import assert_gradients_agree, cli_one_line_error, rel
from test_checkpoint import _cli, _partial, _state

#: ISO 2631-1:1997 Table 3, weighting factors × 1000 at nominal one-third-octave band
#: centres (Hz)
TABLE3 = {"Wk": {0.5: 418, 1.0: 482, 2.0: 531, 4.0: 967, 6.3: 1054, 8.0: 1036, 16.0: 768, 31.5: 405,
                 63.0: 186, 80.0: 132},
          "Wd": {0.5: 853, 1.0: 1011, 2.0: 890, 4.0: 512, 8.0: 253, 16.0: 125}}

PENDULUM = CONFIGS / "spatial-double-pendulum.toml"
RIDE = ('objectives=[{name = "aw", integrand = "iso2631_rms", point = "lower.com"}, '
        '{name = "vdv", integrand = "iso2631_vdv", point = "lower.com", direction = "x", weighting = "Wd"}]')


@pytest.mark.parametrize("name", ["Wk", "Wd"])
def test_weighting_factors_of_iso_table_3(name):
    """|W(j2πf)| at the table's nominal band centres.  Bound per row: half a unit of the
    table's last digit plus what W changes between the nominal and the exact centre
    10^(n/10) (the table does not say at which it was computed: 16 vs 15.85 Hz)."""
    for f, val in TABLE3[name].items():
        exact = 10 ** (round(10 * np.log10(f)) / 10)
        got = 1000 * abs(response(name, f))
        bound = 0.5 + 1000 * abs(abs(response(name, exact)) - abs(response(name, f)))
        assert abs(got - val) <= bound, (name, f, got, val, bound)
    # the state-space realization the filter steps on is the same transfer function
    A, B, C, D = state_space(name)
    for f in TABLE3[name]:
        s = 2j * np.pi * f
        H = C @ np.linalg.solve(s * np.eye(len(B)) - A, B) + D
        assert abs(H - response(name, f)) <= 1e-12 * abs(response(name, f)), (name, f)


@pytest.mark.parametrize("name", ["Wk", "Wd"])
def test_discrete_filter(name):
    F = Filter(name)
    # (1) scipy's first-order-hold simulation of the same (A, B, C): the same exact map,
    # other arithmetic; rounding over N = 3000 steps of states up to ω₂² ≈ 4e5 times y
    A, B, C, D = state_space(name)
    t = np.arange(3001) * 1e-3
    s = np.sin(2 * np.pi * 3 * t) + 0.3 * np.cos(2 * np.pi * 17 * t ** 2)
    _, y_ref, _ = scipy.signal.lsim((A, B[:, None], C[None, :], np.array([[D]])), s, t, interp=True)
    y = F.apply(s, np.full(3000, 1e-3))
    assert np.max(np.abs(y - y_ref)) <= 1e-10 * np.max(np.abs(y))
    # (2) the gain for a sampled sine after the transients (slowest decay rate ω₁/√2 =
    # 1.8/s: e^(−1.8·10) ≈ 2e-8 left at t = 10 s), least squares over the last 2 s:
    # |W|·(1 − (ωh)²/12) (the spectrum of the linear interpolant), next term O((ωh)⁴)
    for f, h in ((1.0, 1e-3), (8.0, 1e-3), (8.0, 5e-4), (63.0, 1e-4)):
        n = int(round(12.0 / h))
        t = np.arange(n + 1) * h
        y = F.apply(np.sin(2 * np.pi * f * t), np.full(n, h))
        m = t > 10.0
        X = np.stack([np.sin(2 * np.pi * f * t[m]), np.cos(2 * np.pi * f * t[m])], 1)
        c = np.linalg.lstsq(X, y[m], rcond=None)[0]
        gain = np.hypot(*c) / abs(response(name, f))
        assert abs(gain - 1 + (2 * np.pi * f * h) ** 2 / 12) <= 1e-6, (f, h, gain)


def _pendulum(*extra):
    return Problem(load_config(str(PENDULUM), ["simulation.t_end=0.15", "simulation.dt=3e-3",
                                               "simulation.integrator=genalpha", RIDE, *extra]))


#: Newton to round-off: the complex step differentiates the Newton iterates, which
#: differ from the converged discrete solution by the Newton tolerance (measured
#: |adj − cs| 4.4e-10 at the config's tolerance, 1.8e-14 with these)
TIGHT = "simulation.newton={rtol=1e-15, atol=1e-15, max_it=50}"


def test_values_and_gradients():
    """Values: the lower link's centre acceleration (its r̈: the com) filtered by lsim
    and summed with the trapezoidal weights.  Gradients: adjoint = direct to round-off
    (1e-9); complex step (1e-9, Newton to round-off: TIGHT); central differences at relative step 1e-6, from a
    sweep (max relative deviation from the adjoint, aw / vdv): 1e-4 7.6e-7 / 8.4e-7,
    1e-5 7.6e-9 / 8.4e-9, 1e-6 2.0e-10 / 1.5e-10, 1e-7 9.8e-10 / 3.9e-9 (t_end 0.3 s):
    truncation ∝ step² down to 1e-6, rounding ∝ 1/step below; bound 1e-6."""
    pr = _pendulum(TIGHT)
    traj = pr.forward()
    names = coordinate_names(pr.sys)
    vals = pr.objective_values(traj)
    w, T = quadrature_weights(traj.steps, 3e-3), traj.t[-1]
    for key, col, W, rms in (("aw", "lower.z", "Wk", True), ("vdv", "lower.x", "Wd", False)):
        s = np.asarray(traj.a)[:, names.index(col)]
        A, B, C, D = state_space(W)
        _, y, _ = scipy.signal.lsim((A, B[:, None], C[None, :], np.array([[D]])), s, traj.t, interp=True)
        ref = np.sqrt(np.dot(w, y ** 2) / T) if rms else np.dot(w, y ** 4) ** 0.25
        assert np.max(np.abs(y)) > 0.1 and vals[key] == pytest.approx(ref, rel=1e-10), key
    assert_gradients_agree(pr, adj_dir=1e-9, adj_cs=1e-9, adj_fd=1e-6, fd_step=1e-6)


def test_adaptive_steps():
    """Error-controlled steps (h from 0.9 to 4 ms here): a step map per h_k; adjoint =
    direct = complex step on the run's steps (measured 8e-16 / 1.2e-15 (aw), 3e-15 /
    1.5e-14 (vdv))."""
    pr = _pendulum(TIGHT, "simulation.adapt={rtol=1e-4, atol=1e-6}")
    traj = pr.forward()
    assert np.max(traj.grid.h) > 2 * np.min(traj.grid.h)
    adj, dirc, cs = pr.adjoint(), pr.direct(), complex_step_gradient(pr)
    for k in adj:
        assert rel(dirc[k], adj[k]) <= 1e-9 and rel(cs[k], adj[k]) <= 1e-9, (k, rel(dirc[k], adj[k]), rel(cs[k], adj[k]))


def test_checkpoint_kill_and_resume_same_bits(tmp_path):
    """``parmbs gradient -o`` (checkpoint file, schedule all) killed once in the forward
    run and once in the adjoint sweep, resumed each time: the gradient equals the
    in-memory run's bit for bit (the signal history is recomputed from the stored
    states, which are the in-memory ones: the same arithmetic in the same order)."""
    sets = ["simulation.t_end=0.06", "simulation.dt=3e-3", "simulation.integrator=genalpha", RIDE]
    pr = Problem(load_config(str(PENDULUM), sets))
    pr.forward()
    want = pr.adjoint()
    args = [a for s in sets for a in ("--set", s)]
    h5 = tmp_path / "run.h5"
    for i, kill in enumerate(["forward:12", "adjoint:8"]):
        r = _cli("gradient", PENDULUM, *args, *(["-o", h5] if i == 0 else ["--restart", h5]), cwd=tmp_path,
                 PARMBS_CHECKPOINT_INTERVAL=0, PARMBS_CHECKPOINT_KILL=kill)
        assert r.returncode != 0 and not h5.exists(), (kill, r.returncode, r.stderr)
        fwd, adj = _state(_partial(h5))
        assert (adj < 0) == (i == 0), (kill, fwd, adj)        # stopped in the forward, then the adjoint
    js = tmp_path / "g.json"
    r = _cli("gradient", PENDULUM, *args, "--restart", h5, "--json", js, cwd=tmp_path)
    assert r.returncode == 0 and "resuming" in r.stdout, r.stderr
    doc = json.loads(js.read_text())
    for k in want:
        assert np.array_equal(np.array(list(doc["objectives"][k]["gradient"].values())), want[k]), k


@pytest.mark.parametrize("sets,words", [
    (['objectives=[{name = "a", integrand = "iso2631_rms", point = "lower.com", terminal = "vertical_acceleration_sq"}]'],
     ["objectives.a.terminal"]),
    (['objectives=[{name = "a", integrand = "iso2631_vdv", point = "nope.com"}]'], ["objectives.a.point", "nope"]),
    (['objectives=[{name = "a", integrand = "vertical_acceleration_sq", point = "lower.com", weighting = "Wd"}]'],
     ["objectives.a.weighting"]),
    ([RIDE, "checkpoint.schedule=every:3"], ["checkpoint.schedule", "all"]),
])
def test_bad_input(tmp_path, sets, words):
    args = ["gradient", PENDULUM, "--set", "simulation.t_end=0.03", "--set", "simulation.dt=3e-3"]
    for s in sets:
        args += ["--set", s]
    cli_one_line_error(args, tmp_path, *words)


def test_planar_needs_x_or_y(tmp_path):
    cli_one_line_error(["gradient", CONFIGS / "fivebar.toml", "--set",
                        'objectives=[{name = "a", integrand = "iso2631_rms", point = "A1.P1"}]'],
                       tmp_path, "objectives.a.direction")
