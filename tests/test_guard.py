"""The instability guard (parmbs/integrators/guard.py): it stops the unstable runs the
issue names — the trapezoidal double pendulum at 45°, the flexible pendulum of the
verify Taylor run, the four-bar's linearly growing mode — with exit 1 and one line,
and it leaves bounded and damped runs alone.

Bounds beside each assertion: THETA = 0.25 (level: the alternating part against the
largest smooth acceleration) and GROWTH = 10 (over the level at the start); the
measured figures are in guard.py's docstring."""
import os
from pathlib import Path

import numpy as np
import pytest

from parmbs.config import load_config
from parmbs.integrators.guard import ENERGY_GAIN, GROWTH, THETA, WINDOW, Guard, InstabilityError
from parmbs.integrators.newmark import StepError
from parmbs.sensitivity.problem import Problem

from cli_helpers import parmbs_in_process
from conftest import CONFIGS

ROOT = Path(__file__).resolve().parent.parent
TRAPEZOIDAL = ["simulation.integrator=trapezoidal"]
#: the files' former defaults (trapezoidal, dt = 1e-3), with which the issue saw these runs
OLD_DEFAULT = TRAPEZOIDAL + ["simulation.dt=1e-3"]


def problem(name, sets):
    return Problem(load_config(str(CONFIGS / f"{name}.toml"), sets))


# -- the monitor on synthetic accelerations ------------------------------------------------------
class _Sim:
    """The fields Guard reads from ``config.simulation``."""
    integrator, rho_inf, dt, guard = "trapezoidal", 0.9, 1e-3, True

    class newton:
        atol = rtol = 1e-12


def feed(accel, guard=None):
    """Run a Guard over a(k) (one coordinate, q = 0); returns the guard, or the step it stopped."""
    g = guard or Guard(_Sim())
    z = np.zeros(1)
    g.start(0, 0.0, (z, z, np.array([accel(0)]), z))
    for k in range(1, 2000):
        try:
            g.check(k, k * 1e-3, (z, z, np.array([accel(k)]), z))
        except InstabilityError:
            return k
    return g


def test_growing_alternating_mode_stops():
    # a = 1 + 1e-3·1.01^k·(−1)^k: crosses THETA·S* (S* ≈ 1) when 1e-3·1.01^k > 0.25,
    # k = ln(250)/ln(1.01) = 555, having grown ×250 > GROWTH since the start
    k = feed(lambda k: 1.0 + 1e-3 * 1.01 ** k * (-1) ** k)
    assert isinstance(k, int) and 555 <= k <= 555 + WINDOW


def test_bounded_alternating_mode_passes():
    # an alternating part of constant amplitude 2 (twice the smooth part: far above THETA)
    # that does not grow: N̂/N₀ = 1 < GROWTH
    g = feed(lambda k: 1.0 + 2.0 * (-1) ** k)
    assert isinstance(g, Guard) and g.peak > THETA and g.growth <= 1.0 + 1e-12


def test_isolated_spike_passes():
    # a one-step spike of 100× the smooth level at k = 500: it enters N for 3 steps, fewer
    # than half the window, so the median N̂ stays at the smooth level's 0
    g = feed(lambda k: 1.0 + (100.0 if k == 500 else 0.0))
    assert isinstance(g, Guard) and g.peak == 0.0


def test_non_finite_state_stops_even_when_switched_off():
    sim = _Sim()
    sim.guard = False
    g = Guard(sim)
    z = np.zeros(2)
    g.start(0, 0.0, (z, z, z, z))
    with pytest.raises(InstabilityError, match=r"step 3 \(t = 0.003\): unstable run: non-finite v"):
        g.check(3, 0.003, (z, np.array([0.0, np.nan]), z, z))


# -- shipped models -------------------------------------------------------------------------------
def run_cli(*args):
    # cli.main in this process (tests/cli_helpers.py); the subprocess's env only put ROOT on PYTHONPATH
    return parmbs_in_process(*args, cwd=ROOT)


def test_trapezoidal_double_pendulum_at_45_degrees_exits_1():
    """The shipped double pendulum (released at 45°) with the trapezoidal rule: without
    the guard it exits 0 with tip_speed = 1.6e20.  The (−1)^k part of a grows from
    round-off (×1e5) and passes THETA·S* (S* = 34 m/s²) at t = 4.135 s / 3.454 s (two
    builds: the last bits seed it).  Bounds: N̂/S* ≤ 4e-4 up to 2 s; Newton fails near
    6.6 s and the values explode by 7 s."""
    r = run_cli("simulate", CONFIGS / "double-pendulum.toml", "--set", "simulation.integrator=trapezoidal",
                "--set", "simulation.dt=1e-3", "--set", "simulation.t_end=5")
    lines = r.stderr.strip().splitlines()
    print(r.stderr)
    assert r.returncode == 1
    assert len([ln for ln in lines if ln.startswith("parmbs: error:")]) == 1
    line = lines[-1]
    assert "computation failed: step" in line and "unstable run: the alternating (-1)^k part of the accelerations" \
        in line and 'integrator = "genalpha"' in line and "simulation.guard = false" in line
    t = float(line.split("(t = ")[1].split(")")[0])
    assert 2.0 <= t <= 6.0


def test_flexible_pendulum_of_the_taylor_run_stops_before_newton_fails():
    """The issue's verify Taylor run of configs/flexible-pendulum.toml (trapezoidal, dt =
    1e-3, ε = 1e-2 along the seeded direction with |d_j| ≤ max(|ρ_j|, 1), verify's rule
    then) fails in Newton at step 3817; the guard stops it first.  This
    closed model's energy grows (E − E₀ = 0.1 T* at t = 3.19 s, measured); the nominal
    design's largest gain over the 4 s is 0.0053 T*, 19× below ENERGY_GAIN.

    One run gives both steps: the guard only reads the states (Guard.check), so the
    guarded run's steps are the unguarded run's; its stop (the InstabilityError that
    Guard._stop raises, the one ``forward`` would pass on: test_fourbar_* below) is
    recorded and the run goes on to Newton's failure.  Before, a second, guarded run
    repeated the first 3190 of the 3817 steps (19.7 → 11 s CPU)."""
    from parmbs.sensitivity.verify import TAYLOR_SEED
    pr = problem("flexible-pendulum", OLD_DEFAULT)
    p0 = pr.sys.p.copy()
    rho0 = pr.design.values(p0)
    d = np.random.default_rng(TAYLOR_SEED).uniform(-1.0, 1.0, len(rho0)) * np.maximum(np.abs(rho0), 1.0)
    p = pr.design.apply(p0, rho0 + 1e-2 * d)
    stops, stop = [], pr.guard._stop

    def record(k, t, what):                     # the guard's verdict, kept; the run goes on
        with pytest.raises(InstabilityError) as e:
            stop(k, t, what)
        stops.append(e.value)

    pr.guard._stop = record
    # Newton's failure (step 3817, t = 3.817 s, on the build measured)
    with pytest.raises(StepError, match=r"Newton did not converge") as e:
        pr.forward(p)
    newton = int(str(e.value).split()[1])
    assert stops, "the guard did not stop the run before Newton failed"
    step = int(str(stops[0]).split()[1])
    print(stops[0], "; Newton fails at step", newton)
    assert "the energy of this model without energy input grew" in str(stops[0])
    assert 2500 <= step <= newton - 100         # ≥ 0.1 s ahead (measured 3190 vs 3817)


def test_fourbar_linear_growth_stops_and_the_switch_turns_it_off():
    """The four-bar's constant-speed driver grows the trapezoidal (−1)^k mode linearly,
    1.48e-3 m/s² per step against S* ≈ 1.36 m/s²: THETA·S* is passed at step ≈ 230."""
    with pytest.raises(InstabilityError, match=r"step 2[0-9][0-9] \(t = 0.2"):
        problem("fourbar", TRAPEZOIDAL + ["simulation.t_end=0.5"]).forward()
    tr = problem("fourbar", TRAPEZOIDAL + ["simulation.t_end=0.5", "simulation.guard=false"]).forward()
    assert tr.steps == 500


def test_checkpointed_forward_is_guarded(tmp_path):
    pr = problem("fourbar", TRAPEZOIDAL + ["simulation.t_end=0.5"])
    ck = pr.use_checkpoint(str(tmp_path / "run.h5"))
    try:
        with pytest.raises(InstabilityError, match=r"step 2[0-9][0-9] \(t = 0.2"):
            pr.forward()
    finally:
        ck.store.close()


def test_bounded_stiff_mode_and_damped_runs_pass():
    """tests/test_dynamics.py's oscillator at ωh = 5, trapezoidal: the mode is aliased
    near the Nyquist frequency, N/S = (ωh/2)² ≈ 6 > THETA, but its amplitude is conserved
    (N̂/N₀ ≈ 1 < GROWTH): it runs to the end.  The five-bar with its shipped
    generalized-α stays far below THETA (measured 1e-5)."""
    from test_dynamics import OSCILLATOR
    f = Path(os.environ.get("TMPDIR", "/tmp")) / f"guard-osc-{os.getpid()}.toml"
    f.write_text(OSCILLATOR)
    try:
        pr = Problem(load_config(str(f), TRAPEZOIDAL))
        pr.forward()
    finally:
        f.unlink()
    assert pr.guard.closed and pr.guard.peak > THETA and pr.guard.growth <= 2.0 < GROWTH
    assert abs(pr.guard.egain) <= 1e-9          # a linear model: the trapezoidal rule conserves E
    pr = problem("fivebar", ["simulation.t_end=1"])
    pr.forward()
    assert pr.guard.peak <= 1e-3 * THETA


def test_ts_runs_are_guarded():
    """The PETSc-TS (penalty) path calls the guard from its monitor; the guard's error
    comes out of ts.solve as itself (not as 'the TS step failed')."""
    pr = problem("fourbar", ["simulation.formulation=penalty", "simulation.integrator=ts-cn",
                             "simulation.t_end=0.02"])
    seen = []

    def check(k, t, x):
        seen.append(k)
        if k == 7:
            pr.guard._stop(k, t, "test")

    pr.guard.check = check
    with pytest.raises(InstabilityError, match=r"^step 7 \(t = 0.007\): unstable run: test"):
        pr.forward()
    assert seen == list(range(1, 8))


def test_energy_is_the_state_eval_sum_bitwise():
    """The guard's energy (force groups gathered once per run, Spring's l without its
    rate) is the sum over StateEval's force tuples it replaced, bit for bit, on closed
    models with these energy kinds: planar inertia, gravity, spring (five-bar), ANCF
    (flexible pendulum), spatial inertia and gravity (double pendulum)."""
    from parmbs.model.component import Force
    from parmbs.model.evaluation import StateEval
    for name in ("fivebar", "flexible-pendulum", "spatial-double-pendulum"):
        pr = problem(name, ["simulation.t_end=0.01"])
        tr = pr.forward()
        g = pr.guard
        assert g.closed and g.e0 is not None, name
        for k in (0, tr.steps // 2, tr.steps):
            E = T = A = 0.0
            for grp, q, v, a, p in StateEval(pr.sys, tr.t[k], *tr.x(k)[:4], pr.sys.p).F:
                if type(grp).energy is Force.energy:
                    continue
                eg = np.real(grp.energy(tr.t[k], q, v, p))
                E, T, A = E + float(np.sum(eg)), T + (float(np.sum(eg)) if grp.inertial else 0.0), \
                    A + float(np.sum(np.abs(eg)))
            assert g._energy(tr.t[k], tr.x(k)) == (E, T, A), (name, k)
            assert A > 0.0


def test_compiled_monitor_gives_the_numpy_numbers():
    """A run whose step is compiled takes the guard's per-step numbers from one compiled
    call (compiled/monitor.py); replaying its trajectory through the numpy path of
    Guard.check gives the same state bit for bit (the same operations in the same order),
    and the compiled call names a non-finite block as the numpy path does."""
    pr = problem("fourbar", OLD_DEFAULT + ["simulation.t_end=0.2", "simulation.guard=true"])
    assert pr.stepper.compiled is not None and pr.guard._monitor is not None
    tr = pr.forward()
    ref = Guard(pr.config.simulation, pr.sys)
    assert ref._monitor is None
    ref.start(0, tr.t[0], tr.x(0), pr.sys.p)
    for k in range(1, tr.steps + 1):
        ref.check(k, tr.t[k], tr.x(k))
    g = pr.guard
    assert (g.smax, g.peak, g.growth, g.n0, list(g.recent)) == (ref.smax, ref.peak, ref.growth, ref.n0,
                                                                list(ref.recent))
    assert g.peak > 0.0 and len(g.recent) == WINDOW
    for b, name in enumerate(("q", "v", "a", "lambda")):
        x = [np.array(y) for y in tr.x(tr.steps)]
        x[b][-1] = np.nan
        for guard in (g, ref):
            with pytest.raises(InstabilityError, match=rf"step 7 \(t = 1\): unstable run: non-finite {name} "):
                guard.check(7, 1.0, tuple(x))
    # a stepper's trailing block (the Arnold–Brüls pseudo-accelerations: five blocks) goes
    # through the compiled call plus a numpy test of the rest, and is named by its index
    x = [np.array(y) for y in tr.x(tr.steps)] + [np.array([0.0, np.nan])]
    for guard in (g, ref):
        with pytest.raises(InstabilityError, match=r"step 7 \(t = 1\): unstable run: non-finite state block 4"):
            guard.check(7, 1.0, tuple(x))


def test_adaptive_runs_check_the_energy_without_the_monitor(monkeypatch):
    """In an adaptive run every accepted state has passed LocalError.norm's non-finite test
    (a candidate with a non-finite entry is rejected), and the (−1)ᵏ monitor is off (unequal
    steps): Guard.check(finite=True) runs neither the compiled monitor nor the non-finite
    test again, only the energy test every ENERGY_EVERY steps (the five-bar is closed).  A
    non-finite state handed to it without ``finite`` still stops the run."""
    from parmbs.integrators import guard as gd
    pr = problem("fivebar", ["simulation.t_end=0.2", "simulation.adapt.rtol=1e-5", "simulation.adapt.atol=1e-5",
                             'simulation.genalpha_form="arnold-bruls"'])
    energy = []
    real = gd.Guard._check_energy
    monkeypatch.setattr(gd.Guard, "_check_energy", lambda self, k, t, x: energy.append(k) or real(self, k, t, x))
    monkeypatch.setattr(gd, "_first_non_finite", lambda *a: pytest.fail("non-finite test repeated"))
    pr.guard._monitor = lambda *a: pytest.fail("monitor called")
    n = pr.forward().grid.steps
    assert not pr.guard.alternating and pr.guard.e0 is not None
    assert energy == list(range(gd.ENERGY_EVERY, n + 1, gd.ENERGY_EVERY))
    monkeypatch.undo()
    g = pr.guard
    g._monitor = None
    z = np.zeros(pr.sys.n)
    with pytest.raises(InstabilityError, match="non-finite v"):
        g.check(n + 1, 0.3, (z, z + np.nan, z, np.zeros(pr.sys.m), z))
