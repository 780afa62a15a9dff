"""``simulation.quadrature = "cubic"`` (integrators/quadrature.py): the composite rule of
the cubic through the four nearest accepted times, the objectives' weights of every
route that reads Problem.w (checked here on the PETSc TS routes it is for).

Bounds and their estimates:
* exact for cubics: Σ w_k p(t_k) against ∫ p on 40 random steps (ratios up to 8): the
  weights come from 4×4 solves with κ(V) ≲ 1e4 (u ∈ [−8, 9]), so each interval's integral
  carries ≈ κ ε |p| h and the sum ≈ √N κ ε max|p| T ≈ 1e-11 relative; bound 1e-10.  The
  same sum for a quartic must miss by ≫ that (measured 5.7e-7) — the test could fail.
* adaptive ts-rk 5dp (test_ts_adapt_rk.py's run): adjoint vs direct ≤ 1e-9, vs central
  FD on the frozen steps ≤ 1e-6 (estimates in test_ts_adapt_rk.py: the weights are fixed
  numbers of the frozen grid, nothing else changes).
* checkpointed and killed/restarted runs: the same bytes (==) as in memory.
"""
import json

import numpy as np
import pytest

from parmbs.config.loader import load_config
from parmbs.integrators.quadrature import cubic_weights
from parmbs.integrators.timeloop import TimeGrid
from parmbs.sensitivity.problem import Problem

from gradient_checks import central_difference, cli_one_line_error
from test_index1_ts import frozen_mesh_check
from test_ts_adapt_rk import ADAPT, problem
from test_ts_checkpoint import FIVEBAR, SHORT, _cli, _state

CUBIC = 'simulation.quadrature="cubic"'


def _grid(seed=3, n=40):
    h = np.random.default_rng(seed).uniform(1.0, 8.0, n) * 1e-2
    return np.concatenate([[0.3], 0.3 + np.cumsum(h)]), h


def test_cubic_rule_exact_for_cubics_on_a_random_nonuniform_grid():
    t, h = _grid()
    w = cubic_weights(t, h)
    c = np.array([0.7, -1.3, 2.1, -0.9])                  # p(t) = Σ c_i t^i
    a, b = t[0], t[-1]
    exact = sum(ci * (b ** (i + 1) - a ** (i + 1)) / (i + 1) for i, ci in enumerate(c))
    err = abs(w @ np.polyval(c[::-1], t) - exact) / abs(exact)
    quart = abs(w @ t ** 4 - (b ** 5 - a ** 5) / 5) / ((b ** 5 - a ** 5) / 5)
    trap = abs(TimeGrid(t, h).weights() @ np.polyval(c[::-1], t) - exact) / abs(exact)
    print(f"cubic rule on {len(h)} random steps: cubic {err:.1e}, quartic {quart:.1e}; trapezoid on the cubic {trap:.1e}")
    assert err <= 1e-10
    assert quart > 1e-8 and trap > 1e-6                    # not a rule that is exact for everything
    # fourth order: the error of ∫ sin on the grid refined by halving each step falls ≈ 16×
    e = []
    for tt in (t, np.sort(np.concatenate([t, 0.5 * (t[1:] + t[:-1])]))):
        e.append(abs(cubic_weights(tt, np.diff(tt)) @ np.sin(5 * tt) - (np.cos(5 * a) - np.cos(5 * b)) / 5))
    print(f"∫ sin 5t: {e[0]:.2e} → {e[1]:.2e}, observed order {np.log2(e[0] / e[1]):.2f}")
    assert np.log2(e[0] / e[1]) > 3.5
    # uniform grid: interior weights h (−1 + 13 + 13 − 1)/24 = h (w_3 also gets a share of the
    # one-sided first interval), and TimeGrid dispatches to the rule
    g = TimeGrid.fixed(0.0, 0.1, 12)
    assert np.allclose(g.weights("cubic")[4:-4], 0.1, rtol=0, atol=1e-15)
    assert np.array_equal(g.weights("cubic"), cubic_weights(g.t, g.h))


def test_adaptive_ts_rk_cubic_weights_exact_derivatives():
    pr = problem(ADAPT, CUBIC)
    traj = pr.forward()
    trap = TimeGrid(traj.t, traj.h).weights()
    assert np.array_equal(pr.w, cubic_weights(traj.t, traj.h)) and not np.allclose(pr.w, trap, rtol=1e-3)
    frozen_mesh_check(pr, traj, "adaptive ts-rk 5dp, cubic quadrature")


SETS = SHORT + ['simulation.formulation="index1"', 'simulation.integrator="ts-rk"', CUBIC]
_REF = {}


def reference():
    """In-memory fixed-step index-1 ts-rk run with the cubic weights: ψ, adjoint ∇ψ."""
    if not _REF:
        pr = Problem(load_config(FIVEBAR, SETS))
        pr.forward()
        _REF["v"], _REF["g"] = pr.objective_values(), pr.adjoint()
    return _REF["v"], _REF["g"]


def test_checkpointed_cubic_run_is_the_in_memory_bytes(tmp_path):
    values0, grad0 = reference()
    pt = Problem(load_config(FIVEBAR, SETS[:-1]))
    pt.forward()
    assert all(pt.objective_values()[k] != values0[k] for k in values0)     # the option is in effect
    pr = Problem(load_config(FIVEBAR, SETS + ["checkpoint.schedule=every:7"]))
    ck = pr.use_checkpoint(tmp_path / "ck.h5")
    tr = pr.forward()
    values, grad = pr.objective_values(tr), pr.adjoint()
    ck.store.close()
    assert ck.recomputed > 0
    for k in grad0:
        assert values[k] == values0[k], k
        assert np.array_equal(grad[k], grad0[k]), k


@pytest.mark.parametrize("kill", ["forward:20", "adjoint:12"])
def test_killed_and_restarted_cubic_run_is_the_in_memory_bytes(kill, tmp_path):
    """Killed in the forward run or in the reverse sweep (revolve:4), resumed by the CLI:
    the restarted process rebuilds the weights from the grid, ψ and ∇ψ are the same bytes."""
    values0, grad0 = reference()
    h5 = tmp_path / "run.h5"
    args = [a for s in SETS + ["checkpoint.schedule=revolve:4"] for a in ("--set", s)]
    r = _cli("gradient", FIVEBAR, *args, "-o", h5, cwd=tmp_path, PARMBS_CHECKPOINT_INTERVAL=0,
             PARMBS_CHECKPOINT_KILL=kill)
    assert r.returncode == -9, (kill, r.returncode, r.stderr)
    adj = _state(h5.with_name(h5.name + ".partial"))[1]
    assert (adj < 0) == kill.startswith("forward"), adj
    js = tmp_path / "g.json"
    r = _cli("gradient", FIVEBAR, *args, "--restart", h5, "--json", js, cwd=tmp_path)
    assert r.returncode == 0 and "resuming" in r.stdout, r.stderr
    doc = json.loads(js.read_text())
    for k in grad0:
        assert doc["objectives"][k]["value"] == values0[k], k
        assert np.array_equal(np.array(list(doc["objectives"][k]["gradient"].values())), grad0[k]), k


def test_cubic_refused_for_a_checkpointed_adaptive_run(tmp_path):
    cli_one_line_error(["gradient", FIVEBAR, "--set", "simulation.t_end=0.05", "--set", 'simulation.formulation="index1"',
                        "--set", 'simulation.integrator="ts-rk"', "--set", ADAPT, "--set", CUBIC,
                        "--set", "checkpoint.schedule=every:5"], tmp_path, "simulation.quadrature", "t_{k+3}")


def test_cubic_refused_with_ride_measures(tmp_path):
    from test_iso2631 import PENDULUM, RIDE
    cli_one_line_error(["gradient", PENDULUM, "--set", "simulation.t_end=0.03", "--set", "simulation.dt=3e-3",
                        "--set", RIDE, "--set", CUBIC], tmp_path, "simulation.quadrature", "'aw'", "trapezoid")


def test_own_adaptive_stepper_cubic_adjoint_direct_fd_complex_step():
    """An own stepper (index-1 trapezoidal, adaptive, test_adaptive.py's run): the cubic
    weights reach the sweeps, FD and complex step alike (complex_step.py sums with them).
    Bounds as test_adaptive.test_sensitivities_on_the_accepted_steps: adjoint = direct
    ≤ 1e-9; FD (relative step 1e-6: truncation and noise ≈ 1e-10) ≤ 1e-6 on ψ1, ψ2 (ψ3 of
    accelerations: FD noise, left out as there).  Complex step: its own gap to the adjoint
    is 4e-10 of max|∇ψ| with either rule (measured the same with the trapezoid: Newton's
    stopping, not the weights), so it is checked on the change the rule makes: the same
    steps, Δ = ∇ψ(cubic) − ∇ψ(trapezoid) by complex step against the adjoint's.  The
    common error cancels but for the weights' relative change (≲ 0.1): ≤ 4e-11; measured
    ≤ 7e-13; bound 1e-10, while |Δ| ≥ 4.8e-5 (a complex step on the trapezoid fails)."""
    from parmbs.sensitivity.complex_step import complex_step_gradient
    run = {}
    for rule in ("trapezoid", "cubic"):
        pr = Problem(load_config(FIVEBAR, ["simulation.t_end=0.2", "simulation.adapt.rtol=1e-5",
                                           "simulation.adapt.atol=1e-5", 'simulation.formulation="index1"',
                                           'simulation.integrator="trapezoidal"', f'simulation.quadrature="{rule}"']))
        tr = pr.forward()
        # (direct and FD before the complex step: a direct sweep after it fails in
        # InitialState.tangent on a complex matrix block — found here, left alone)
        di, fd = (pr.direct(), pr.finite_differences(1e-6)) if rule == "cubic" else (None, None)
        run[rule] = pr, tr, pr.adjoint(), complex_step_gradient(pr)
    pr, tr, ad, cs = run["cubic"]
    assert tr.grid.h.max() > 3 * tr.grid.h.min() and tr.grid == run["trapezoid"][1].grid
    assert np.array_equal(pr.w, cubic_weights(tr.grid.t, tr.grid.h))
    for o in ad:
        s = np.max(np.abs(ad[o]))
        d_ad, d_cs = ad[o] - run["trapezoid"][2][o], cs[o] - run["trapezoid"][3][o]
        print(f"{o}: adjoint vs direct {np.max(np.abs(ad[o] - di[o])) / s:.1e}, vs FD {np.max(np.abs(ad[o] - fd[o])) / s:.1e}; "
              f"cubic − trapezoid {np.max(np.abs(d_ad)) / s:.1e}, complex step's − adjoint's {np.max(np.abs(d_cs - d_ad)) / s:.1e}")
        assert np.max(np.abs(ad[o] - di[o])) <= 1e-9 * s, o
        assert np.max(np.abs(d_cs - d_ad)) <= 1e-10 * s, o
        if o != "psi3":
            assert np.max(np.abs(ad[o] - fd[o])) <= 1e-6 * s, o



def test_compiled_vehicle_adaptive_cubic_adjoint_direct_fd():
    """The Iltis' compiled Arnold–Brüls step, adaptive on the state test alone (no
    objective_atol) with the cubic weights — the configuration that puts adaptive at or
    below the fixed-step CPU at equal accuracy on the bump (benchmarks/README.md, "Iltis:
    cubic weights on both sides, the state test alone", branch adapt18h).  Over the bump's
    first 4 ms the controller varies h (13 steps, h 1.7e-4 … 4e-4 s).  Bounds as
    test_adaptive.test_sensitivities_on_the_accepted_steps (issue 18): adjoint = direct
    ≤ 1e-9 (the same discrete map on the frozen steps: round-off; measured 3e-15); central
    differences replaying the frozen steps ≤ 1e-6 of max|∇ψ|, with Newton to round-off (at
    the adaptive Newton's own stop the FD noise is 1e-5) and per-variable steps as
    test_iltis.FD_STEP: ψ is nearly linear in the leaf stiffnesses and the dampers
    (relative step 1e-4: truncation ≤ 3e-7 measured) and strongly curved in the strut
    stiffnesses k1, k2 (k·s with s ≈ 0.44 m; truncation 1.2e-6 of ψ4's at 1e-7, ≈ 1e-8 at
    3e-8, where the round-off noise ε ψ / 3e-8 ≈ 1e-8 ψ / (k ∂ψ/∂k) leaves ≤ 7.3e-7 measured)."""
    from pathlib import Path
    iltis = str(Path(__file__).resolve().parents[1] / "configs" / "iltis.toml")
    pr = Problem(load_config(iltis, ["simulation.t_end=0.004", "spatial.road.x0=1.0", "simulation.rho_inf=0.9",
                                     "simulation.adapt.rtol=1e-6", "simulation.adapt.atol=1e-7", CUBIC,
                                     "simulation.newton.atol=1e-15", "simulation.newton.rtol=1e-16"]))
    tr = pr.forward()
    assert tr.grid.h.max() > 2 * tr.grid.h.min()
    assert np.array_equal(pr.w, cubic_weights(tr.grid.t, tr.grid.h))
    ad, di = pr.adjoint(), pr.direct()
    p0, grid = pr.sys.p.copy(), pr.grid
    rho = pr.design.values(p0)
    rel = {"k_L1": 1e-4, "k_L2": 1e-4, "c1": 1e-4, "c2": 1e-4, "k1": 3e-8, "k2": 3e-8}
    with pr.frozen_steps():
        fd = {o: np.array([central_difference(pr, p0, rho, j, rel[name] * abs(rho[j]), o)
                           for j, name in enumerate(pr.design.names)]) for o in ad}
    pr.forward(p0)
    assert pr.grid == grid                            # the FD runs replayed the accepted steps
    for o in ad:
        s = np.max(np.abs(ad[o]))
        print(f"{o}: adjoint vs direct {np.max(np.abs(ad[o] - di[o])) / s:.1e}, vs FD {np.max(np.abs(ad[o] - fd[o])) / s:.1e}")
        assert np.max(np.abs(ad[o] - di[o])) <= 1e-9 * s, o
        assert np.max(np.abs(ad[o] - fd[o])) <= 1e-6 * s, o
