"""Error-controlled variable steps (simulation.adapt; parmbs/integrators/timeloop.py):
the step sequence, exact sensitivities on the frozen accepted steps for every
formulation, replay, rejection on Newton failure, and the step-size floor."""
import os

import numpy as np
import pytest

import parmbs  # noqa: F401  (before numpy users: parmbs/_determinism.py)
from parmbs.config.loader import load_config
from parmbs.integrators.newmark import StepError
from parmbs.integrators.timeloop import StepSizeError, TimeGrid
from parmbs.sensitivity.problem import Problem

from cli_helpers import parmbs_in_process

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIVEBAR = os.path.join(ROOT, "configs", "fivebar.toml")
ADAPT = ["simulation.t_end=0.2", "simulation.adapt.rtol=1e-5", "simulation.adapt.atol=1e-5"]

FORMULATIONS = {
    "genalpha": ['simulation.integrator="genalpha"'],
    "trapezoidal-ggl": ['simulation.integrator="trapezoidal"', 'simulation.stabilization="ggl"'],
    "genalpha-arnold-bruls": ['simulation.integrator="genalpha"', 'simulation.genalpha_form="arnold-bruls"'],
    "variational": ['simulation.integrator="variational"'],
    "index1": ['simulation.formulation="index1"', 'simulation.integrator="trapezoidal"'],
    "maggi": ['simulation.formulation="maggi"', 'simulation.integrator="trapezoidal"'],
    "matrix-r": ['simulation.formulation="matrix-r"', 'simulation.integrator="trapezoidal"'],
}


def _problem(extra=()):
    return Problem(load_config(FIVEBAR, ADAPT + list(extra)))


def test_fixed_grid_is_the_old_one_bit_for_bit():
    """Fixed steps: h_k = dt exactly, t_k = t_0 + k dt, the trapezoid weights dt and dt/2."""
    g = TimeGrid.fixed(0.0, 1e-3, 7)
    assert np.array_equal(g.h, np.full(7, 1e-3))
    assert np.array_equal(g.t, 1e-3 * np.arange(8))
    w = np.full(8, 1e-3)
    w[0] = w[-1] = 0.5e-3
    assert np.array_equal(g.weights(), w)
    assert all(g.weight(k) == w[k] for k in range(8))


def test_adaptive_run_lands_on_t_end_and_varies_its_steps():
    pr = _problem(['simulation.integrator="genalpha"'])
    tr = pr.forward()
    g = tr.grid
    assert g.t[-1] == 0.2 and g.t[0] == 0.0
    assert np.allclose(np.cumsum(g.h), g.t[1:], rtol=0, atol=1e-15)
    assert g.h.max() > 3 * g.h.min()                  # the controller did change the step
    assert g.h.max() <= 0.02 + 1e-15                  # dt_max default: t_end / 10
    assert pr.nsteps == g.steps == len(tr.q) - 1
    assert abs(g.weights().sum() - 0.2) < 1e-15
    # same input, same bytes
    tr2 = _problem(['simulation.integrator="genalpha"']).forward()
    assert np.array_equal(tr.t, tr2.t) and np.array_equal(tr.q, tr2.q) and np.array_equal(tr.lam, tr2.lam)


@pytest.mark.parametrize("name", sorted(FORMULATIONS))
def test_sensitivities_on_the_accepted_steps(name):
    """Adjoint = direct on the frozen accepted steps: both differentiate the same
    discrete map, so they agree to round-off — measured ≤ 1.1e-14 relative, ψ3 (of
    accelerations, h⁻² round-off amplification) 1.8e-11 (genalpha) and 2.4e-10
    (matrix-r); bound 1e-9 (issue 18).
    FD replays the same steps (Problem.frozen_steps): central differences with
    relative step 1e-6 have truncation ~(1e-6)² ψ‴ and noise ~ε ψ/1e-6 ≈ 1e-10
    relative; measured ≤ 2.4e-8 on ψ1, ψ2 (positions, velocities) for every
    formulation; bound 1e-6.  ψ3's FD carries the index-3 acceleration round-off
    divided by the FD step (measured 6.5e-4 for matrix-r, 4.5e-5 for genalpha, 1.8e-9
    elsewhere), so its FD check is left to test_verify_configs' step sweep."""
    pr = _problem(FORMULATIONS[name])
    tr = pr.forward()
    assert tr.grid.h.max() > 3 * tr.grid.h.min()
    ad, di = pr.adjoint(), pr.direct()
    grid = pr.grid
    fd = pr.finite_differences(1e-6)
    assert pr.grid == grid                            # the FD runs replayed it, and the nominal run is back
    for o in ad:
        s = np.max(np.abs(ad[o]))
        assert np.max(np.abs(ad[o] - di[o])) <= 1e-9 * s, o
        if o != "psi3":
            assert np.max(np.abs(ad[o] - fd[o])) <= 1e-6 * s, o


def test_frozen_replay_repeats_the_adaptive_run():
    pr = _problem(['simulation.integrator="genalpha"'])
    tr = pr.forward()
    with pr.frozen_steps():
        tr2 = pr.forward()
    assert np.array_equal(tr.q, tr2.q) and np.array_equal(tr.v, tr2.v) and tr2.grid == tr.grid
    # a perturbed run under the freeze takes the same steps, not its own
    p = pr.sys.p.copy()
    p[np.flatnonzero(pr.design.map >= 0)[0]] *= 1.0 + 1e-3
    with pr.frozen_steps():
        tr3 = pr.forward(p)
    assert tr3.grid == tr.grid and not np.array_equal(tr3.q, tr.q)


def test_newton_failure_shrinks_the_step_and_retries():
    pr = _problem(['simulation.integrator="genalpha"'])
    st = pr.stepper
    step = st.step
    failed = []

    def flaky(k, t, x, p):                  # Newton "fails" for any step longer than 4 ms
        if st.h > 4e-3:
            failed.append(st.h)
            raise StepError(f"step {k + 1} (t = {t:.6g}): Newton did not converge (test)")
        return step(k, t, x, p)

    st.step = flaky
    tr = pr.forward()
    assert failed and tr.rejected >= len(failed)
    assert tr.grid.h.max() <= 4e-3 and tr.grid.t[-1] == 0.2


def test_step_size_floor_is_an_error_naming_step_and_time():
    pr = Problem(load_config(FIVEBAR, ["simulation.t_end=0.2", "simulation.adapt.rtol=1e-14",
                                       "simulation.adapt.atol=1e-14", "simulation.adapt.dt_min=5e-4"]))
    with pytest.raises(StepSizeError, match=r"step \d+ \(t = [0-9.e-]+\): the step size fell below dt_min"):
        pr.forward()


def _cli(*args):
    # cli.main in this process (tests/cli_helpers.py); the subprocess's env only put ROOT on PYTHONPATH
    return parmbs_in_process(*args, cwd=ROOT)


def test_cli_adaptive_run_reports_its_steps_and_keeps_a_checkpoint(tmp_path):
    """-o keeps the run in a checkpoint file (schedule all; other schedules and restart:
    test_checkpoint_adaptive.py), compacted to the accepted steps."""
    r = _cli("simulate", FIVEBAR, "--set", "simulation.t_end=0.2", "--set", "simulation.adapt.rtol=1e-5",
             "-o", str(tmp_path / "run.h5"))
    assert r.returncode == 0, r.stderr
    assert "adaptive steps (rtol 1e-05" in r.stderr + r.stdout
    import h5py
    with h5py.File(tmp_path / "run.h5") as f:
        g = f["trajectory"]
        t = g["t"][:]
        assert g.attrs["steps"] == g.attrs["valid_steps"] == len(t) - 1
        assert t[-1] == 0.2 and np.ptp(np.diff(t)) > 1e-4
        # t_{k+1} = fl(t_k + h_k): within ε|t| ≈ 4e-17 of the stored h_k
        assert np.array_equal(f["grid"]["t"][:], t) and np.allclose(np.diff(t), f["grid"]["h"][:], rtol=0, atol=1e-15)
    r = _cli("gradient", FIVEBAR, "--set", "simulation.t_end=0.2", "--set", "simulation.adapt.rtol=1e-5",
             "--set", 'checkpoint.schedule="revolve:5"', "--json", str(tmp_path / "g.json"))
    assert r.returncode == 0, r.stderr
    import json
    assert json.loads((tmp_path / "g.json").read_text())["steps"] == len(t) - 1   # the same accepted steps
    r = _cli("simulate", FIVEBAR, "--set", "simulation.t_end=0.2", "--set", "simulation.adapt.rtol=1e-14",
             "--set", "simulation.adapt.atol=1e-14", "--set", "simulation.adapt.dt_min=5e-4")
    assert r.returncode == 1 and "fell below dt_min" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("grow_min", [1.3, 1.5])
def test_growth_below_grow_min_keeps_the_step(grow_min):
    """``simulation.adapt.grow_min`` (the controller's hysteresis, timeloop.Controller):
    on an accepted step h either stays, shrinks, or grows by at least grow_min — except the
    last step, cut to land on t_end, and growth clipped by dt_max.  1.3 is the default
    (the same bytes as before the key); 1.5 takes another sequence (benchmarks/README.md,
    "Adaptive vs fixed: the controller's hysteresis and cubic weights")."""
    extra = ['simulation.integrator="genalpha"', 'simulation.genalpha_form="arnold-bruls"', "simulation.t_end=1"]
    pr = _problem(extra + [f"simulation.adapt.grow_min={grow_min}"])     # over 0.2 s the two are the same
    g = pr.forward().grid
    r = g.h[1:-1] / g.h[:-2]
    grew = r > 1.0
    assert grew.any() and (r < 1.0).any()
    assert np.all((r[grew] >= grow_min * (1 - 1e-12)) | (g.h[1:-1][grew] == pr.adapt.dt_max)), r[grew]
    default = _problem(extra).forward().grid
    assert (g == default) == (grow_min == 1.3)
