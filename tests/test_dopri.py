"""The own Dormand–Prince 5(4) on the index-1 ODE (``integrator = "dopri5"``,
formulations/index1_dopri.py, compiled/index1_rk.py).  Short horizons (≤ 0.1 s).

Bounds and their estimates:
* analytic R_q, R_v (``jac_qv``) against the complex step of the same residual kernel:
  both exact up to rounding (complex step at 1e-30 has no truncation error); each
  entry sums ≤ 10 terms of ≤ 10 roundings of quantities ≤ max|R_·|: ≈ 100 u ≈ 1e-14
  relative to the largest entry; bound 1e-13.
* compiled against numpy (the reference path), same accepted steps: the two differ by the
  LU (own partial pivoting vs PETSc's natural order) and summation order, ≈ κ(K) u ≈ 1e-14
  per right-hand side, carried over ≤ 70 steps of a non-stiff flow (Lipschitz · T ≈ 1);
  ψ, ∇ψ relative to their max ≤ 1e-13 (as the other compiled kernels; measured: y 2.4e-16,
  ψ 1.3e-15, ∇ψ 1.6e-15 on the five-bar, 11 steps).
* adjoint vs direct: the same sums transposed, ≈ N u · (growth) ≲ 1e-13; bound 1e-9 (issue 18).
* adjoint vs central FD (s = 1e-5) on the frozen steps: truncation s² ψ''' ≈ 1e-10 and
  cancellation u ψ / s ≈ 1e-11 of max|∇ψ|; bound 1e-6 (issue 18).
"""
import numpy as np
import pytest

from parmbs.config.loader import load_config
from parmbs.sensitivity.problem import Problem

from test_compiled import ALL_KINDS, ROOT
from test_index1_ts import assert_agree, central_fd

pytest.importorskip("numba", reason="numba not installed: the compiled path is optional")

FIVEBAR = str(ROOT / "configs" / "fivebar.toml")
DOPRI = ['simulation.formulation="index1"', 'simulation.integrator="dopri5"', "simulation.progress=false"]
ADAPT = ["simulation.adapt.rtol=1e-8", "simulation.adapt.atol=1e-8"]
CUBIC = 'simulation.quadrature="cubic"'
#: design variables and objectives of test_compiled's every-kind model (velocities, accelerations, λ-free)
KINDS_SENS = """
[[design]]
name = "k"
path = "forces.S.stiffness"
[[design]]
name = "c"
path = "forces.S.damping"
[[design]]
name = "kt"
path = "forces.T.stiffness"
[[design]]
name = "m1"
path = "bodies.b1.mass"
[[design]]
name = "xE"
path = "bodies.b1.points.E.x"
[[objectives]]
name = "dev"
integrand = "point_deviation_sq"
point = "b3.O"
reference = [1.6, -0.3]
[[objectives]]
name = "acc"
integrand = "point_acceleration_sq"
point = "b2.E"
"""


def _problem(path, *sets):
    return Problem(load_config(str(path), DOPRI + list(sets)))


@pytest.fixture
def kinds(tmp_path):
    path = tmp_path / "kinds.toml"
    path.write_text(ALL_KINDS + KINDS_SENS)
    return path


def test_analytic_partials_equal_complex_step(kinds):
    from parmbs.compiled import index1_rk as K
    pr = _problem(kinds, "simulation.t_end=0.01")
    st, s = pr.stepper, pr.sys
    assert st.backend == "compiled"
    r = st.rhs
    rng = np.random.default_rng(5)
    q = s.q_guess + 0.1 * rng.standard_normal(s.n)
    v, z = rng.standard_normal(s.n), rng.standard_normal(s.n + s.m)
    Aq, Av = K.analytic_partials(q, v, z, s.p, s.n, s.m, r.flat, r.offs)
    Cq, Cv = K.cs_partials(q, v, z, s.p, s.n, s.m, r.flat, r.offs)
    for a, c in ((Aq, Cq), (Av, Cv)):
        assert np.max(np.abs(a - c)) <= 1e-13 * np.max(np.abs(c))
    assert np.max(np.abs(Cv)) > 0 and np.max(np.abs(Cq)) > 0


@pytest.mark.parametrize("model", ["fivebar", "kinds"])
def test_compiled_equals_numpy(model, kinds):
    """The same accepted steps, ψ and the adjoint gradient to ≤ 1e-13 (module docstring)."""
    path, sets = (FIVEBAR, ["simulation.t_end=0.1", CUBIC]) if model == "fivebar" else (kinds, [])
    runs = {}
    for mode in ("auto", "off"):
        pr = _problem(path, *ADAPT, *sets, f'simulation.compiled="{mode}"')
        assert pr.stepper.backend == ("compiled" if mode == "auto" else "numpy")
        tr = pr.forward()
        runs[mode] = (tr, pr.objective_values(), pr.adjoint())
    (tc, pc, gc), (tn, pn, gn) = runs["auto"], runs["off"]
    assert tc.steps == tn.steps and tc.steps > 10
    assert np.max(np.abs(tc.t - tn.t)) <= 1e-13 * tc.t[-1]
    assert np.max(np.abs(tc.y - tn.y)) <= 1e-13 * np.max(np.abs(tn.y))
    for o in pn:
        assert abs(pc[o] - pn[o]) <= 1e-13 * abs(pn[o])
        assert np.max(np.abs(gc[o] - gn[o])) <= 1e-13 * np.max(np.abs(gn[o]))


def test_adjoint_direct_and_fd_on_the_frozen_steps():
    """Five-bar, adaptive, fourth-order weights: the issue's gradient checks."""
    pr = _problem(FIVEBAR, "simulation.t_end=0.1", *ADAPT, CUBIC)
    tr = pr.forward()
    assert tr.steps > 10
    ga, gd = pr.adjoint(), pr.direct()
    pr.stepper.freeze(tr.t)
    assert_agree(ga, gd, central_fd(pr, 1e-5), f"index1 dopri5 ({tr.steps} steps, FD on the frozen steps)")


def test_fixed_steps_every_kind(kinds):
    """No [simulation.adapt]: t_end/dt steps of dt; the damped spring, weld and rotational
    spring kernels under the same checks (trapezoid weights)."""
    pr = _problem(kinds, "simulation.dt=2e-3")
    tr = pr.forward()
    assert tr.steps == 25 and np.allclose(np.diff(tr.t), 2e-3, rtol=0, atol=1e-15)
    ga, gd = pr.adjoint(), pr.direct()
    assert_agree(ga, gd, central_fd(pr, 1e-5), "index1 dopri5 fixed steps, every kind")


def test_tolerance_and_fallback():
    """A tighter rtol takes more steps; a kind without a kernel (the four-bar's driver) runs
    the numpy path and says so with compiled = "on"; objective_atol is refused."""
    from parmbs.config import ConfigError
    steps = [_problem(FIVEBAR, "simulation.t_end=0.1", f"simulation.adapt.rtol={r}",
                      f"simulation.adapt.atol={r}").forward().steps for r in (1e-5, 1e-9)]
    assert steps[0] < steps[1]
    pr = _problem(ROOT / "configs" / "fourbar.toml", "simulation.t_end=0.01", 'simulation.compiled="on"')
    assert pr.stepper.backend == "numpy" and "Driver" in pr.stepper.compiled_note
    assert pr.forward().steps == 10
    with pytest.raises(ConfigError, match="objective_atol"):
        load_config(FIVEBAR, DOPRI + ADAPT + ["simulation.adapt.objective_atol=1e-8"])
