"""The compiled forward step of the spatial rigid kinds (parmbs/compiled/spatial.py,
issue 19) against the numpy path: kernel by kernel at random states, trajectory by
trajectory, and the sensitivities, which for these kinds stay on numpy after a
compiled forward (compiled/stepper.NO_SENSITIVITY).

The trajectory bounds are tests/test_compiled.py's estimate (its module docstring:
N steps of round-off accumulating linearly in q, amplified into a and λ by 1/(βh²)
through the constraint rows); the models are the shipped spatial double pendulum and
heavy top, the two configs whose every kind has a kernel.
"""
import numpy as np
import pytest

from parmbs import compiled

pytest.importorskip("numba", reason="numba not installed: the compiled path is optional")

from test_compiled import ROOT, U, _bounds, _numpy_RJ, _problem  # noqa: E402

MODELS = {"double-pendulum": "spatial-double-pendulum.toml", "heavy-top": "heavy-top.toml"}


@pytest.mark.parametrize("model", sorted(MODELS))
def test_spatial_kernels_equal_numpy_components(model):
    """R and J of every spatial kernel at a random state (Euler parameters off the unit
    sphere: every formula holds for any p) equal the numpy components' closed forms to
    100 u of the largest entry: an entry sums ≤ 5 contributions (inertia, gyroscopic,
    regularization, normalization, joint Hessian), each a product of 3×4 / 4×4 factors
    of ≤ 20 roundings.  Measured (double pendulum): R 0.2 u, J 1.6 u."""
    from parmbs.compiled.newmark_step import _evaluate
    pr = _problem(ROOT / "configs" / MODELS[model])
    st, s = pr.stepper, pr.sys
    assert st.compiled is not None and not compiled.unsupported(s)
    rng = np.random.default_rng(5)
    x = (s.q_guess + 0.1 * rng.standard_normal(s.n), rng.standard_normal(s.n), rng.standard_normal(s.n),
         rng.standard_normal(s.m))
    wi, wf, bh2, gh = 0.6, 0.55, 0.7, 0.9          # order one: every block weighs in the bound
    R0, J0 = _numpy_RJ(st, 0.3, x, s.p, wi, wf, bh2, gh)
    N = s.n + s.m
    R, J = np.zeros(N), np.zeros((N, N))
    _evaluate(*x, s.p, 0.3, s.n, wi, wf, bh2, gh, wf * bh2, bh2, True, R, J, st.compiled.K)
    assert np.max(np.abs(R - R0)) <= 100 * U * np.max(np.abs(R0))
    assert np.max(np.abs(J - J0)) <= 100 * U * np.max(np.abs(J0))
    assert np.count_nonzero(J0) > 4 * N and np.count_nonzero(R0) > N // 2     # not a trivial comparison


def test_spatial_kernels_complex_parameters_give_the_parameter_derivative():
    """The kernels run with a complex p (the complex-step ∂R/∂ρ of the compiled sensitivity
    steps): Im R(p + i h e_j)/h over the design columns equals the numpy path's
    ∂[R₁; Φ]/∂ρ (StateEval.R_p, phi_p) to 100 u of the largest entry (both are exact
    derivatives, h = 1e-30: round-off only), and want_J False leaves J untouched.
    Measured: 0.45 u."""
    from parmbs.compiled.newmark_step import _evaluate
    from parmbs.model.component import CS_H
    pr = _problem(ROOT / "configs" / MODELS["double-pendulum"])
    st, s = pr.stepper, pr.sys
    rng = np.random.default_rng(7)
    x = (s.q_guess + 0.1 * rng.standard_normal(s.n), rng.standard_normal(s.n), rng.standard_normal(s.n),
         rng.standard_normal(s.m))
    wi, wf, bh2 = 0.6, 0.55, 0.7
    nd = st.nd
    ev = st._eval(0.3, x, s.p)
    I = np.eye(nd)
    ref = np.vstack([ev.R_p(nd, wi, wf) @ I, (ev.phi_p(nd) @ I) / bh2])
    N = s.n + s.m
    out = np.zeros((N, nd))
    for j in range(nd):
        pc = s.p + 1j * CS_H * (np.asarray(st.design_map) == j)
        R, J = np.zeros(N, complex), np.zeros((1, 1), complex)
        _evaluate(*x, pc, 0.3, s.n, wi, wf, 0.0, 0.0, 0.0, bh2, False, R, J, st.compiled.K)
        out[:, j] = R.imag / CS_H
        assert J[0, 0] == 0
    assert np.count_nonzero(ref) >= nd and np.all(np.any(ref != 0, axis=0))
    assert np.max(np.abs(out - ref)) <= 100 * U * np.max(np.abs(ref))


@pytest.mark.parametrize("model", sorted(MODELS))
def test_spatial_trajectory_and_gradient_match_numpy_path(model):
    """200 steps (generalized-α as shipped) on both paths: every state within the
    per-quantity bounds, the same Newton iterations, the gradient within the largest
    relative bound of the quantities (reaction_sq reads λ).  Measured observed ÷ bound,
    double pendulum: q 0.08, v 0.01, a 0.09, λ 0.07; heavy top: q 0.02, v 0.02, a 0.15,
    λ 0.08.  The sensitivities after a compiled forward run on numpy: the compiled
    problem's adjoint equals, bitwise, the numpy stepper's adjoint of the same (compiled)
    trajectory."""
    cfg = ROOT / "configs" / MODELS[model]
    probe = _problem(cfg, "simulation.compiled=off")
    steps = 200
    sets = (f"simulation.t_end={steps * probe.h!r}",)
    ref, cmp_ = _problem(cfg, *sets, "simulation.compiled=off"), _problem(cfg, *sets)
    assert ref.stepper.compiled is None and cmp_.stepper.compiled is not None
    assert not cmp_.stepper.compiled.sensitivities
    tr, tc = ref.forward(), cmp_.forward()
    assert ref.nsteps == steps
    bound = _bounds(ref, tr, steps)
    for k in ("q", "v", "a", "lam"):
        d = np.max(np.abs(getattr(tr, k) - getattr(tc, k)))
        assert d <= bound[k], (k, d, bound[k])
    assert np.array_equal(tr.newton_its, tc.newton_its)
    assert not np.array_equal(tr.a, tc.a)          # two paths indeed
    rel = max(bound[k] / np.max(np.abs(getattr(tr, k))) for k in ("q", "v", "a", "lam"))
    gr, gc = ref.adjoint(), cmp_.adjoint()
    assert gr.keys() == gc.keys() and gr
    for k in gr:
        assert np.max(np.abs(gr[k] - gc[k])) <= rel * np.max(np.abs(gr[k])), k
    ref.traj = tc                                  # numpy adjoint of the compiled trajectory
    gn = ref.adjoint()
    for k in gc:
        assert np.array_equal(gn[k], gc[k]), k


def test_planar_models_keep_compiled_sensitivities():
    """Only models with a spatial kind fall back to numpy for the sensitivity steps."""
    five = _problem(ROOT / "configs" / "fivebar.toml")
    assert five.stepper.compiled is not None and five.stepper.compiled.sensitivities
