"""Explicit RK on PETSc TS beyond RK4 (integrators/ts.py): adaptive ``ts-rk`` runs
(TSAdapt "basic" on the embedded estimate; Dormand–Prince 5(4) by default, RK4 has no
embedded method) and the tableaus PETSc 3.18's TSAdjointStep_RK differentiates wrongly
(a stage with b_i = 0 read by later stages: 5dp, 5f), which take our own adjoint (the
transpose of the tangent of PETSc's tableau).  Index-1 five-bar, t_end = 0.05,
rtol = 1e-6, atol = 1e-8: 11 accepted steps of 1e-3 … 5e-3 (dt_max = span/10).

Bounds and their estimates:
* adjoint vs direct: exact derivatives of the same discrete run; round-off through
  K = [M Φ_qᵀ; Φ_q 0] (κ ≲ 1e3) over ≤ 50 steps ≈ κ ε √N ≈ 1e-12; measured ≤ 3e-16;
  bound 1e-9.
* vs central FD (s = 1e-5) on the frozen step sequence: truncation C s², C ≲ 3
  (test_index1_ts.py) → 3e-10, noise ε|ψ|/s ≈ 1e-11; measured ≤ 3.8e-10; bound 1e-6.
"""
import os

import numpy as np
import pytest

from parmbs._petsc import PETSc
from parmbs.config.loader import load_config
from parmbs.integrators.ts import PREFIX, tsadjoint_rk_ok
from parmbs.sensitivity.problem import Problem

from gradient_checks import cli_one_line_error
from test_index1_ts import FIVEBAR, frozen_mesh_check

ADAPT = "simulation.adapt={rtol=1e-6, atol=1e-8}"


def problem(*extra, t_end=0.05):
    return Problem(load_config(FIVEBAR, [f"simulation.t_end={t_end}", "simulation.dt=1e-3",
                                         'simulation.formulation="index1"', 'simulation.integrator="ts-rk"',
                                         *extra]))


@pytest.fixture
def rk_type(request):
    """-parmbs_ts_rk_type for one test (removed after it)."""
    opts = PETSc.Options()
    if request.param:
        opts.setValue(PREFIX + "rk_type", request.param)
    yield request.param
    opts.delValue(PREFIX + "rk_type")


@pytest.mark.parametrize("rk_type", [None, "3bs"], indirect=True)   # 5dp (own adjoint), 3bs (TSAdjoint)
def test_adaptive_rk_adjoint_direct_and_fd_on_the_frozen_steps(rk_type):
    pr = problem(ADAPT)
    traj = pr.forward()
    h = np.diff(traj.t)
    assert traj.t[-1] == pytest.approx(0.05, abs=1e-14)
    assert traj.steps != pr.nsteps and h.max() / h.min() > 2        # the steps did adapt
    frozen_mesh_check(pr, traj, f"adaptive ts-rk {rk_type or '5dp'}")


@pytest.mark.parametrize("rk_type", ["5f"], indirect=True)
def test_tableau_petsc_gets_wrong_takes_our_adjoint(rk_type):
    """Fixed-step 5f: PETSc's TSAdjoint was 100 % off in ψ1; ours equals the tangent."""
    pr = problem(t_end=0.01)
    ga, gd = pr.adjoint(), pr.direct()
    for name in ga:
        e = np.max(np.abs(ga[name] - gd[name])) / np.max(np.abs(ga[name]))
        print(f"ts-rk 5f {name}: adjoint vs direct {e:.1e}")
        assert e <= 1e-9


def test_which_tableaus_tsadjoint_differentiates():
    from parmbs.integrators.ts import rk_tableau
    ok = {}
    for t in ("4", "3bs", "5f", "5dp"):
        ts = PETSc.TS().create(PETSc.COMM_SELF)
        ts.setType("rk")
        ts.setRKType(t)
        A, b, _, _ = rk_tableau(ts)
        ok[t] = tsadjoint_rk_ok(A, b)
        ts.destroy()
    assert ok == {"4": True, "3bs": True, "5f": False, "5dp": False}


def test_rk4_cannot_adapt(tmp_path):
    cli_one_line_error(["simulate", FIVEBAR, "--set", 'simulation.formulation="index1"', "--set",
                        'simulation.integrator="ts-rk"', "--set", "simulation.t_end=0.01", "--set", ADAPT,
                        "--output", tmp_path / "o.h5", "-parmbs_ts_rk_type", "4"], tmp_path,
                       "simulation.adapt", "embedded")


def test_step_size_floor_is_an_error_naming_step_and_time():
    """TSAdapt basic accepts a step at its minimum whatever its error (without the check,
    this run exited 0 with steps of dt_min and ψ1 0.6 % off the rtol 1e-6 run); an adaptive
    ts-rk run stops instead when an accepted step is below dt_min (as the own controller
    and ts-alpha2: StepSizeError, exit 1 in the CLI).  rtol 1e-14 cannot be met at
    dt_min = 4e-3 (the first step of 5e-3 is rejected to 2e-3)."""
    from parmbs.integrators.timeloop import StepSizeError
    pr = problem("simulation.dt=5e-3", "simulation.adapt={rtol=1e-14, atol=1e-14, dt_min=4e-3}")
    with pytest.raises(StepSizeError, match=r"^step 1 \(t = 0\.002\): the step size fell below dt_min = 0\.004 s"):
        pr.forward()


SCENARIO = '\n[[scenarios]]\nname = "{name}"\nset = {{ "simulation.t_end" = {t_end} }}\n'


# (ts-beuler at rtol 1e-4, atol 1e-6: 23 steps instead of 205 at ADAPT's tolerances)
@pytest.mark.parametrize("integrator,adapt", [("ts-rk", ADAPT), ("ts-beuler", "simulation.adapt={rtol=1e-4, atol=1e-6}")])
def test_batched_gradient_json_reports_the_accepted_steps(integrator, adapt, tmp_path):
    """The batch driver (``[[scenarios]]``, ``--groups``, or ``mpirun -n 2`` without a
    checkpoint file) wrote t_end/dt as ``steps`` for an adaptive TS run (50 here, where
    ts-rk accepts 11 steps).  One scenario: the top-level ``steps`` is its accepted
    count; two of different lengths (ts-rk's steps are capped at t_end/10 = dt_max: 11
    at t_end 0.05 and 0.02, 12 at 0.2): each scenario's own, top-level null."""
    import json
    import subprocess
    import sys
    from parmbs.cli import _batch_steps
    from parmbs.parallel import make_layout
    from parmbs.sensitivity.batch import batch_gradient
    from mpi4py import MPI
    cfg_file = tmp_path / "fivebar-adapt.toml"
    cfg_file.write_text(FIVEBAR.read_text() + SCENARIO.format(name="long", t_end=0.05))
    sets = ["simulation.dt=1e-3", 'simulation.formulation="index1"', f'simulation.integrator="{integrator}"', adapt]
    accepted = Problem(load_config(FIVEBAR, ["simulation.t_end=0.05", *sets])).forward().steps
    assert accepted != 50
    env = {k: v for k, v in os.environ.items() if k != "PETSC_OPTIONS"}
    env["PYTHONPATH"] = str(FIVEBAR.parents[1]) + os.pathsep + env.get("PYTHONPATH", "")
    js = tmp_path / "g.json"
    r = subprocess.run([sys.executable, "-m", "parmbs", "gradient", str(cfg_file), *(a for s in sets for a in ("--set", s)),
                        "-q", "--json", str(js)], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(js.read_text())
    print(f"{integrator}: JSON steps {doc['steps']}, accepted {accepted}, t_end/dt 50")
    assert doc["steps"] == accepted and doc["scenarios"]["long"]["steps"] == accepted
    t_other = 0.2 if integrator == "ts-rk" else 0.02
    cfg_file.write_text(cfg_file.read_text() + SCENARIO.format(name="other", t_end=t_other))
    other = Problem(load_config(FIVEBAR, [f"simulation.t_end={t_other}", *sets])).forward().steps
    res = batch_gradient(load_config(cfg_file, sets), "adjoint", make_layout(1, world=MPI.COMM_SELF))
    assert res.steps == {"long": accepted, "other": other} and other != accepted and _batch_steps(res) is None
    res.destroy()
