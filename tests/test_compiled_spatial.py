"""The compiled steps of the spatial rigid kinds (parmbs/compiled/spatial.py, issue 19)
against the numpy path: kernel by kernel at random states, trajectory by trajectory,
one tangent/adjoint step for every parameter, and gradients along a sweep.

The trajectory bounds are tests/test_compiled.py's estimate (its module docstring:
N steps of round-off accumulating linearly in q, amplified into a and λ by 1/(βh²)
through the constraint rows); the models are the shipped spatial double pendulum and
heavy top, the two configs whose every kind has a kernel.  The sensitivity bounds are
tests/test_compiled_adjoint.py's: e = 2 (N + 100) κ₁(J) u per step, S e along S steps.
"""
from pathlib import Path

import numpy as np
import pytest

from parmbs import compiled

pytest.importorskip("numba", reason="numba not installed: the compiled path is optional")

from test_compiled import ROOT, U, _bounds, _numpy_RJ, _problem as _problem_as_shipped  # noqa: E402
from test_compiled_adjoint import _kappa_at, _rel, one_step_compare  # noqa: E402

MODELS = {"double-pendulum": "spatial-double-pendulum.toml", "heavy-top": "heavy-top.toml"}
#: the Newmark-family scheme these tests compare (compiled/newmark_step.py): the double
#: pendulum's file ships the Arnold–Brüls form (compiled/ab_step.py, compared as shipped
#: in the tests at the end), so they pin the file's setting before it
PINNED = {"spatial-double-pendulum.toml": ("simulation.integrator=genalpha", "simulation.rho_inf=0.9",
                                           "simulation.genalpha_form=chung-hulbert",
                                           "simulation.stabilization=none", "simulation.dt=2.5e-4")}


def _problem(path, *sets):
    return _problem_as_shipped(path, *PINNED.get(Path(path).name, ()), *sets)


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
    _evaluate(*x, s.p, 0.3, s.n, wi, wf, bh2, gh, wf * bh2, bh2, True, R, J, *st.compiled.sets(0), 1.0)
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
        _evaluate(*x, pc, 0.3, s.n, wi, wf, 0.0, 0.0, 0.0, bh2, False, R, J, *st.compiled.sets(0), 1.0)
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
    λ 0.08."""
    cfg = ROOT / "configs" / MODELS[model]
    probe = _problem(cfg, "simulation.compiled=off")
    steps = 200
    sets = (f"simulation.t_end={steps * probe.h!r}",)
    ref, cmp_ = _problem(cfg, *sets, "simulation.compiled=off"), _problem(cfg, *sets)
    assert ref.stepper.compiled is None and cmp_.stepper.compiled is not None
    _paths_agree(ref, cmp_, ref, steps)


def _paths_agree(ref, cmp_, bounds_of, steps):
    """Forward on the numpy path (``ref``) and the compiled one (``cmp_``): every state
    within test_compiled._bounds of ``bounds_of`` (the problem whose β'h² they use), the
    same Newton iterations, the adjoint gradients within the largest relative bound of
    the quantities.  Returns (tr, tc, gr, gc)."""
    tr, tc = ref.forward(), cmp_.forward()
    assert ref.nsteps == steps
    bound = _bounds(bounds_of, tr, steps)
    for k in ("q", "v", "a", "lam"):
        d = np.max(np.abs(getattr(tr, k) - getattr(tc, k)))
        print(f"{k}: {d:.2e} = {d / bound[k]:.2e} of the bound")
        assert d <= bound[k], (k, d, bound[k])
    assert np.array_equal(tr.newton_its, tc.newton_its)
    assert not np.array_equal(tr.a, tc.a)          # two paths indeed
    rel = max(bound[k] / np.max(np.abs(getattr(tr, k))) for k in ("q", "v", "a", "lam"))
    gr, gc = ref.adjoint(), cmp_.adjoint()
    assert gr.keys() == gc.keys() and gr
    for k in gr:
        d = np.max(np.abs(gr[k] - gc[k]))
        print(f"gradient {k}: {d / np.max(np.abs(gr[k])):.2e} = {d / (rel * np.max(np.abs(gr[k]))):.2e} of the bound")
        assert d <= rel * np.max(np.abs(gr[k])), k
    return tr, tc, gr, gc


@pytest.mark.parametrize("model", sorted(MODELS))
@pytest.mark.parametrize("integrator", ["genalpha", "trapezoidal"])
def test_spatial_one_step_equals_numpy_for_every_parameter(model, integrator):
    """Every model parameter its own design column, a random state pair and random μ,
    h = 0.05 (every block weighs in: the inertia's r_q, the gyroscopic r_q and r_v, the
    joint Hessians): the compiled adjoint and tangent steps equal the numpy ones within
    e (module docstring), with (generalized-α) and without (trapezoidal) old-state terms.
    Measured worst ÷ e ≤ 7.3e-4 (κ₁(J) 63–241)."""
    pr = _problem(ROOT / "configs" / MODELS[model], f"simulation.integrator={integrator}")
    st, ref_grad = one_step_compare(pr, seed=11, nobj=2)
    assert np.count_nonzero(ref_grad) > st.nd // 3     # many parameters move R: a real comparison


@pytest.mark.parametrize("model", sorted(MODELS))
def test_spatial_sweep_gradients_equal_numpy(model):
    """Adjoint and direct gradients of the compiled steps equal the numpy steps' on the same
    (compiled) trajectory, 100 steps as shipped, within S e (module docstring) times the
    largest partial sum of the sweep per design column: the heavy top's tip_z gradient
    (0.107) is the small remainder of sweep sums up to 1.5e6 cancelled by the initial-state
    term, so its round-off is relative to those sums — the numpy path's own adjoint and
    direct gradients differ there by 1.4e-9 relative, as much as compiled vs numpy.
    Measured observed ÷ bound: double pendulum 1.6e-4, heavy top 5.1e-4."""
    cfg = ROOT / "configs" / MODELS[model]
    probe = _problem(cfg)
    steps = 100
    pr = _problem(cfg, f"simulation.t_end={steps * probe.h!r}")
    st = pr.stepper
    assert st.compiled is not None and pr.nsteps == steps
    tr = pr.forward()
    kappa, N = _kappa_at(st, tr.t[1], tr.x(1), pr.sys.p)
    e = steps * 2 * (N + 100) * kappa * U
    ga, gd = pr.adjoint(), pr.direct()
    cs, st.compiled = st.compiled, None
    sums = []
    ra = pr.adjoint(on_step=lambda k, t, g, dx: sums.append(np.array(g, copy=True)))
    rd = pr.direct()
    st.compiled = cs
    assert ga.keys() == ra.keys() and ga
    sums = np.abs(np.array(sums))                              # (steps + 1, columns, objectives)
    for j, k in enumerate(ra):
        assert sums.shape[1] == len(ra[k])                     # one parameter column per design variable
        scale = np.maximum(sums[:, :, j].max(axis=0), np.abs(ra[k]))
        for got in (ga[k], gd[k]):
            worst = np.max(np.abs(got - ra[k]) / scale)
            assert 0 < worst <= e, (k, worst, e)
        assert _rel(ga[k], ra[k]) > 0                          # two paths indeed


def test_shipped_double_pendulum_arnold_bruls_matches_numpy_path():
    """The double pendulum as shipped — the Arnold–Brüls form, compiled/ab_step.py and
    ab_adjoint.py — 200 steps on both paths: every state within test_compiled.py's bounds
    with the form's β'h² (test_compiled._ab_view), the same Newton iterations, the adjoint
    gradient within the largest relative bound; then on the compiled trajectory the
    compiled adjoint and direct sweeps equal the numpy sweep within S e (module
    docstring; the numpy sweep's partial sums as scale, as
    test_spatial_sweep_gradients_equal_numpy).  Measured observed ÷ bound: q 0.07,
    v 0.006, a 0.12, λ 0.05; gradient 7.0e-6; sweeps (adjoint, direct) 4.4e-4, 5.4e-4."""
    from test_compiled import _ab_view
    from parmbs.integrators.genalpha_ab import ArnoldBrulsAlpha
    cfg = ROOT / "configs" / MODELS["double-pendulum"]
    probe = _problem_as_shipped(cfg, "simulation.compiled=off")
    steps = 200
    sets = (f"simulation.t_end={steps * probe.h!r}",)
    ref, cmp_ = _problem_as_shipped(cfg, *sets, "simulation.compiled=off"), _problem_as_shipped(cfg, *sets)
    assert isinstance(cmp_.stepper, ArnoldBrulsAlpha)
    assert ref.stepper.compiled is None and cmp_.stepper.compiled is not None and ref.nsteps == steps
    tr, tc, gr, gc = _paths_agree(ref, cmp_, _ab_view(ref), steps)
    # the sweeps alone, on the compiled trajectory
    st = cmp_.stepper
    view = _ab_view(cmp_).stepper
    kappa, N = _kappa_at(view, tc.t[1], tc.x(1)[:4], cmp_.sys.p)
    e = steps * 2 * (N + 100) * kappa * U
    gd = cmp_.direct()
    cs, st.compiled = st.compiled, None
    sums = []
    ra = cmp_.adjoint(on_step=lambda k, t, g, dx: sums.append(np.array(g, copy=True)))
    st.compiled = cs
    sums = np.abs(np.array(sums))
    for j, k in enumerate(ra):
        scale = np.maximum(sums[:, :, j].max(axis=0), np.abs(ra[k]))
        for got in (gc[k], gd[k]):
            worst = np.max(np.abs(got - ra[k]) / scale)
            print(f"sweep {k}: {worst:.2e} = {worst / e:.2e} of S e")
            assert 0 < worst <= e, (k, worst, e)
