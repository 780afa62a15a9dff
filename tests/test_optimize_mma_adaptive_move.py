"""``optimize.adaptive_move`` (MMA, driver.py; ``descent_guard.next_move``) against the
descent guard's fixed rule (``optimize.descent``: every rising trial halved from the full
move limit again, the 4th halving taken whatever its ψ).

The objective is a Python function — Rosenbrock's curved valley ψ = (1 − u)² + A (v − u²)²,
minimum 0 at (1, 1) — put in place of the forward and adjoint runs (``evaluate_all``) of
an ``Optimization`` of the pendulum whose two design variables (its mass and centre of
mass, never simulated here) are u and v.  MMA's separable model steps every variable to
its move or asymptote limit whatever the size of its gradient, so along the valley its
steps overshoot: the fixed rule then takes the 4th halving whatever its ψ, 1/16 of a step
above xtol, for ever (the double wishbone at T = 3 s, benchmarks/README.md); the adaptive
one solves the next update within the step that worked, and never takes a rising step.  A "kill" is an exception raised inside
the n-th evaluation (what SIGKILL leaves on disk: everything before it); ``--restart``
must then give the uninterrupted history bit for bit."""
import h5py
import numpy as np
import pytest

from parmbs.config import load_config
from parmbs.optimize import Optimization

from conftest import CONFIGS, record_file

A = 1.0                     # the valley's steepness: 1 is enough for the fixed rule to stall
XTOL = 1e-4
SETS = ["optimize.method=mma", "optimize.objective=tip_deviation", "simulation.progress=false",
        "optimize.move=0.05", "optimize.asymax=0.1", f"optimize.xtol={XTOL}",
        "bodies.bar.mass=0.3", "bodies.bar.com=[1.5, 0.0]",
        "design=[{name='u', path='bodies.bar.mass', lower=0.2, upper=2.0},"
        " {name='v', path='bodies.bar.com.x', lower=0.0, upper=2.0}]"]
ADAPTIVE = ["optimize.adaptive_move=true", "optimize.max_it=200"]
FIXED = ["optimize.descent=true", "optimize.max_it=150"]


class Killed(BaseException):
    """Stands for SIGKILL: not an Exception, so the driver's error handling does not see it."""


def rosenbrock(rho, a=A):
    u, v = rho
    r = v - u * u
    return (1 - u) ** 2 + a * r * r, np.array([-2 * (1 - u) - 4 * a * u * r, 2 * a * r])


def run(path, extra, restart=False, kill_at=None, a=A):
    """(history, evaluated x rows, output lines, final ρ) of an MMA run on Rosenbrock."""
    lines, calls = [], []
    opt = Optimization(load_config(str(CONFIGS / "pendulum.toml"), SETS + extra), path, restart=restart,
                       out=lines.append)

    def evaluate_all(rho, physical=False, wanted=None):
        calls.append(1)
        f, g = rosenbrock(rho, a)
        vals = {opt.objective: f}
        if kill_at is not None and len(calls) == kill_at:
            raise Killed
        if wanted is not None and not wanted(vals):
            return vals, None
        return vals, {opt.objective: g}

    opt.evaluate_all = evaluate_all
    rho = None
    try:
        _, rho = opt.run()
    except Killed:
        pass
    with h5py.File(record_file(path), "r") as f:
        x = f["optimize/x"][:f["optimize"].attrs["evaluations"]]
        reason = f["optimize"].attrs.get("reason")
        design = f["optimize/design"][:] if "design" in f["optimize"] else None
    return opt.history, x, lines, rho, reason, design


@pytest.fixture(scope="module")
def adaptive(tmp_path_factory):
    return run(tmp_path_factory.mktemp("adaptive") / "a.h5", ADAPTIVE)


def test_fixed_rule_never_meets_xtol_adaptive_converges(adaptive, tmp_path):
    hist_f, _, lines_f, _, _, _ = run(tmp_path / "fixed.h5", FIXED)
    hist, _, lines, rho, reason, _ = adaptive
    taken_rising = np.sum(np.diff(hist_f[:, 1]) > 0)
    print(f"fixed: {len(hist_f) - 1} updates, psi {hist_f[-1, 1]:.3e}, {taken_rising} rising steps taken, "
          f"steps of the last 10 {hist_f[-10:, 3].min():.2e}..{hist_f[-10:, 3].max():.2e}; "
          f"adaptive: {len(hist) - 1} updates, psi {hist[-1, 1]:.3e}, rho {rho}; {reason}")
    assert lines_f[-3].startswith("done: max_it = 150 reached")     # the fixed rule: never xtol
    assert taken_rising > 0 and np.all(hist_f[-10:, 3] > XTOL)   # it takes rising steps of ≈ move/16 > xtol
    assert any(l.startswith("done: converged") for l in lines) and reason.startswith("converged")
    assert np.all(np.diff(hist[:, 1]) <= 0)                        # adaptive: ψ never rises
    # the known optimum (1, 1): the last step, the model's own, is ≤ xtol·range ≈ 2e-4; allow 5 of
    # them (measured 3.8e-6); ψ then ≤ ½·11.7·(1e-3)² ≈ 6e-6 (11.7: the Hessian's largest
    # eigenvalue at A = 1; measured 1.4e-10)
    assert np.max(np.abs(rho - 1.0)) < 1e-3 and hist[-1, 1] < 6e-6
    assert len(hist) < 60                                           # measured 36 iterates


def test_restart_after_a_kill_repeats_the_history(adaptive, tmp_path):
    """Killed in the 12th evaluation and, resumed, in the 40th of the resumed process (rejected
    trials and accepted iterates alike), then resumed: the same points and history to the bit."""
    hist, x, lines, rho, _, _ = adaptive
    path = tmp_path / "k.h5"
    run(path, ADAPTIVE, kill_at=12)
    run(path, ADAPTIVE, restart=True, kill_at=40)
    hist_r, x_r, lines_r, rho_r, _, _ = run(path, ADAPTIVE, restart=True)
    assert lines_r[0].startswith("resumed: MMA state after")
    assert np.array_equal(x_r, x) and np.array_equal(rho_r, rho)
    assert np.array_equal(hist_r[:, :5], hist[:, :5])
    with h5py.File(path, "r") as f:
        g = f["optimize/mma"]
        meta = g[f"meta{int(g.attrs['current'])}"][:]
    assert meta.shape == (6,) and 0 < meta[4] <= 0.05                # the move limit, on disk


def test_a_fixed_rule_record_resumes_with_the_adaptive_move(adaptive, tmp_path):
    """What the 3 s double-wishbone run needs: a record of the fixed rule (its state holds
    no move limit) resumed with ``--set optimize.adaptive_move=true`` continues from its
    state with move = optimize.move and then stops on the adaptive rule."""
    path = tmp_path / "f.h5"
    hist_f, x_f, _, _, _, _ = run(path, ["optimize.descent=true", "optimize.max_it=5"])
    hist, x, lines, rho, reason, _ = run(path, ADAPTIVE, restart=True)
    assert lines[0].startswith("resumed: MMA state after 5 updates")
    assert np.array_equal(x[:5], x_f[:5]) and np.array_equal(hist[:5, :5], hist_f[:5, :5])
    assert reason.startswith("converged") and np.all(np.diff(hist[5:, 1]) <= 0)


def test_converged_in_step_ends_on_the_last_accepted_iterate(tmp_path):
    """Rosenbrock's steep valley (A = 100) with xtol 1e-3: the 9th update's trial still rises
    when halved to a step of 7.8e-4 ≤ xtol, so the run ends converged in step; its result is
    iterate 8 (the last history row and evaluation), the rising trial is in neither.  Not the
    optimum: (0.907, 0.825), ψ 8.8e-3 — MMA's separable steps, each variable to its move or
    asymptote limit, do not follow a narrow curved valley; the rule only ends the run honestly."""
    hist, x, lines, rho, reason, design = run(tmp_path / "s.h5", ["optimize.adaptive_move=true",
                                                                  "optimize.xtol=1e-3"], a=100.0)
    print(reason)
    assert reason.startswith("converged in step") and f"the result is iterate {len(hist) - 1}" in reason
    assert lines[-4].startswith("trial rejected") and lines[-3].startswith("done: converged in step")
    assert np.array_equal(rho, x[-1]) and np.array_equal(design, x[-1]) and len(x) == len(hist)
    assert lines[-3].endswith(f"psi = {hist[-1, 1]:.10e}, max violation = 0.000e+00")
    assert np.all(np.diff(hist[:, 1]) <= 0)
