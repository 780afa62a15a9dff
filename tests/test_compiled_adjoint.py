"""The compiled tangent and adjoint steps (parmbs/compiled/newmark_adjoint.py, issue 19)
against the numpy steps they replace, on the same trajectory; and the objective
partials by blocks of steps (sensitivity/local_table.py) against the per-state ones.

Bounds.  Both paths solve with the Newton matrix J at x_{k+1}, built from the same
formulas (entries within 100 u of each other: test_compiled.py's kernel test) and
factored by two LUs with partial pivoting (backward error ≤ N u ‖J‖ each, growth of
order one on these matrices).  So one step's ν, dz — and everything linear in them —
differ by at most

    e = 2 (N + 100) κ₁(J) u      relative to the step's output,

with the ∂R/∂ρ columns (complex step vs the numpy path's complex-step or analytic
blocks) and the dense products inside the same 100 u.  Along a sweep of S steps the
per-step differences add at most linearly (a stable scheme propagates them with a
gain ≤ 1), so the gradients differ by ≤ S e relative to their largest entry.  κ₁(J) is
computed in the test, at the run's first step.
"""
import numpy as np
import pytest

from parmbs.model.evaluation import EvalPlan
from test_compiled import ALL_KINDS, TIME_KINDS, ROOT, U, _numpy_RJ, _problem

pytest.importorskip("numba", reason="numba not installed: the compiled path is optional")


def _kappa_at(st, t1, x1, p):
    """κ₁ and size of the Newton matrix at x_{k+1} (the numpy path's)."""
    _, J = _numpy_RJ(st, t1, x1, p, 1 - st.am, 1 - st.af, st.beta * st.h ** 2, st.gamma * st.h)
    return np.linalg.cond(J, 1), J.shape[0]


def _rel(A, B):
    return np.max(np.abs(np.asarray(A) - np.asarray(B))) / np.max(np.abs(np.asarray(B)))


def one_step_compare(pr, seed, nobj):
    """Every model parameter its own design column, a random state pair, random μ (nobj
    columns) and tangents, h = 0.05: the compiled adjoint and tangent steps against the
    numpy ones, asserted within e = 2(N + 100)·κ₁(J)·u (module docstring).  Returns the
    stepper and the numpy adjoint step's gradient increment (for the caller's check that
    the comparison is not empty)."""
    st, s = pr.stepper, pr.sys
    assert st.compiled is not None
    st.h = 0.05
    st.design_map = np.arange(len(s.p))
    st.nd = len(s.p)
    st.plan = EvalPlan(s, st.design_map)
    rng = np.random.default_rng(seed)
    state = lambda: (s.q_guess + 0.1 * rng.standard_normal(s.n), rng.standard_normal(s.n),
                     rng.standard_normal(s.n), rng.standard_normal(s.m))
    x0, x1 = state(), state()
    mu = [rng.standard_normal((s.n, nobj)) for _ in range(3)] + [rng.standard_normal((s.m, nobj))]
    dx = [rng.standard_normal((s.n, st.nd)) for _ in range(3)] + [rng.standard_normal((s.m, st.nd))]
    t = 0.37
    got_a, got_t = st.adjoint_step(t, x0, x1, mu, s.p), st.tangent_step(t, x0, x1, dx, s.p)
    cs, st.compiled = st.compiled, None
    ref_a, ref_t = st.adjoint_step(t, x0, x1, mu, s.p), st.tangent_step(t, x0, x1, dx, s.p)
    st.compiled = cs
    kappa, N = _kappa_at(st, t + st.h, x1, s.p)
    e = 2 * (N + 100) * kappa * U
    worst = 0.0
    for g, r in list(zip(got_a[0], ref_a[0])) + [(got_a[1], ref_a[1])] + list(zip(got_t, ref_t)):
        if np.any(r):
            worst = max(worst, _rel(g, r))
        else:                                    # μ_λ of the trapezoidal rule: exactly zero on both
            assert not np.any(g)
    assert worst <= e, (worst, e)
    return st, ref_a[1]


@pytest.mark.parametrize("model", ["kinds", "time-kinds"])
@pytest.mark.parametrize("integrator", ["genalpha", "trapezoidal", "hht", "wbz"])
def test_one_step_equals_numpy_for_every_parameter(tmp_path, model, integrator):
    """Every model parameter its own design column (every kernel's ∂R/∂p, by complex step
    in compiled code), a random state pair and random μ, h = 0.05 (every block weighs
    in): the compiled adjoint and tangent steps equal the numpy ones within e, for each
    branch of the old-state terms (α_m, α_f both zero, both set, HHT α_m = 0, WBZ α_f = 0)."""
    path = tmp_path / f"{model}.toml"
    path.write_text(ALL_KINDS if model == "kinds" else TIME_KINDS)
    pr = _problem(path, f"simulation.integrator={integrator}")
    st, ref_grad = one_step_compare(pr, seed=7, nobj=3)
    assert np.count_nonzero(ref_grad) > st.nd // 2     # most parameters move R: a real comparison


@pytest.mark.parametrize("name,steps,sets", [("fivebar", 100, ()),
                                             ("bathe-noh", 39, ("simulation.integrator=newmark",))])
def test_sweep_gradients_equal_numpy(name, steps, sets):
    """Adjoint and direct gradients of the compiled steps equal the numpy path's on the
    same trajectory within S e (module docstring): the five-bar as shipped
    (generalized-α, three objectives, five design variables) and the Bathe–Noh
    prismatic/driver model with the Newmark trapezoidal rule (α_m = α_f = 0)."""
    cfg = ROOT / "configs" / f"{name}.toml"
    probe = _problem(cfg)
    pr = _problem(cfg, f"simulation.t_end={steps * probe.h!r}", *sets)
    st = pr.stepper
    assert st.compiled is not None and pr.nsteps == steps
    if sets:
        assert st.am == st.af == 0.0
    tr = pr.forward()
    kappa, N = _kappa_at(st, tr.t[1], tr.x(1), pr.sys.p)
    bound = steps * 2 * (N + 100) * kappa * U
    ga, gd = pr.adjoint(), pr.direct()
    cs, st.compiled = st.compiled, None
    ra, rd = pr.adjoint(), pr.direct()
    st.compiled = cs
    assert ga.keys() == ra.keys() and ga
    for k in ra:
        assert _rel(ga[k], ra[k]) <= bound, (k, _rel(ga[k], ra[k]), bound)
        assert _rel(gd[k], rd[k]) <= bound, (k, _rel(gd[k], rd[k]), bound)


#: every planar integrand kind (and a terminal term: step N stays per state) on ALL_KINDS
OBJECTIVES = """
[[design]]
name = "k"
path = "forces.S.stiffness"
[[design]]
name = "m2"
path = "bodies.b2.mass"
[[design]]
name = "E1"
path = "bodies.b1.points.E.x"
[[objectives]]
name = "dev"
integrand = "point_deviation_sq"
point = "b2.E"
[[objectives]]
name = "vel"
integrand = "point_velocity_sq"
point = "b3.O"
weight = 0.3
[[objectives]]
name = "acc"
integrand = "point_acceleration_sq"
point = "b1.E"
[[objectives]]
name = "ang"
integrand = "angle"
body = "b1"
terminal = "angle_sq"
[[objectives]]
name = "ang2"
integrand = "angle_sq"
body = "b2"
[[objectives]]
name = "el"
integrand = "spring_elongation_sq"
force = "S"
[[objectives]]
name = "react"
integrand = "reaction_sq"
joint = "J1"
"""


def _blocks_problem(model, tmp_path, *sets):
    """The five-bar (Newmark-family or Arnold–Brüls generalized-α), the spatial double
    pendulum as shipped (Arnold–Brüls), or ALL_KINDS with OBJECTIVES, over 300 steps
    (more than one block)."""
    if model in ("fivebar", "fivebar-ab"):
        ab = ['simulation.genalpha_form="arnold-bruls"'] if model == "fivebar-ab" else []
        return _problem(ROOT / "configs" / "fivebar.toml", "simulation.t_end=0.3", *ab, *sets)
    if model == "spatial-ab":
        return _problem(ROOT / "configs" / "spatial-double-pendulum.toml", "simulation.t_end=0.3", *sets)
    path = tmp_path / "kinds.toml"
    path.write_text(ALL_KINDS + OBJECTIVES)
    return _problem(path, "simulation.t_end=0.3", "simulation.dt=1e-3", *sets)


@pytest.mark.parametrize("model", ["fivebar", "kinds"])
def test_objective_partials_by_blocks_are_the_per_state_ones(monkeypatch, tmp_path, model):
    """The block evaluation of the objective partials runs the same complex-step
    arithmetic per state: adjoint and direct gradients bitwise equal with and without it
    (numpy steps both times; more steps than one block; on ALL_KINDS every planar
    integrand kind, a point reference taken from q₀, a weight and a terminal term)."""
    from parmbs.sensitivity import local_table
    pr = _blocks_problem(model, tmp_path, "simulation.compiled=off")
    pr.forward()
    assert local_table.LocalGradTable.usable(pr, pr.traj) and pr.nsteps > local_table.BLOCK
    ga, gd = pr.adjoint(), pr.direct()
    monkeypatch.setattr(local_table.LocalGradTable, "usable", staticmethod(lambda *a: False))
    ra, rd = pr.adjoint(), pr.direct()
    assert len(ra) == len(pr.objectives)
    for k in ra:
        assert np.any(ra[k]) and np.array_equal(ga[k], ra[k]) and np.array_equal(gd[k], rd[k]), k


@pytest.mark.parametrize("model", ["fivebar", "kinds"])
def test_objective_values_by_blocks_are_the_per_state_ones(monkeypatch, tmp_path, model):
    """ψ with the integrand evaluated by blocks of states (Term.values_batch) is bitwise
    ψ state by state: the same values summed in the same order (every planar integrand
    kind on ALL_KINDS, more steps than one block, a weight and a terminal term)."""
    from parmbs.sensitivity import local_table
    from parmbs.sensitivity.problem import Problem
    pr = _blocks_problem(model, tmp_path)
    pr.forward()
    assert pr.nsteps > local_table.BLOCK and all(pr._batch_values(ob, pr.traj) for ob in pr.objectives)
    vb = pr.objective_values()
    monkeypatch.setattr(Problem, "_batch_values", staticmethod(lambda *a: False))
    vs = pr.objective_values()
    assert len(vs) == len(pr.objectives) and all(vs[k] != 0.0 for k in vs)
    assert vb == vs


@pytest.mark.parametrize("model", ["fivebar", "kinds", "fivebar-ab", "spatial-ab"])
def test_adjoint_sweep_by_blocks_is_the_per_step_sweep(monkeypatch, tmp_path, model):
    """The sweep by blocks of compiled steps (sensitivity/adjoint_batch.py) runs the same
    compiled step and the same additions in the same order as the per-step sweep: the
    gradients are bitwise equal, and the block path was taken (more steps than one block;
    on ALL_KINDS every planar integrand kind, a weight and a terminal term; the
    Arnold–Brüls state with its trailing pseudo-acceleration block, compiled/
    ab_adjoint.ab_adjoint_sweep, planar and spatial).  An ``on_step`` observer needs the
    steps one by one: the block path is then not taken."""
    from parmbs.sensitivity import adjoint_batch
    pr = _blocks_problem(model, tmp_path)
    pr.forward()
    assert pr.stepper.compiled is not None and pr.nsteps > adjoint_batch.BLOCK
    calls, sweep = [], adjoint_batch.sweep
    monkeypatch.setattr(adjoint_batch, "sweep", lambda *a: calls.append(1) or sweep(*a))
    gb = pr.adjoint()
    assert calls == [1]
    seen = []
    go = pr.adjoint(on_step=lambda k, t, g, dx: seen.append(k))
    assert calls == [1] and seen == list(range(pr.nsteps, -1, -1))
    monkeypatch.setattr(adjoint_batch, "usable", lambda *a: False)
    gs = pr.adjoint()
    assert len(gs) == len(pr.objectives)
    for k in gs:
        assert np.any(gs[k]) and np.array_equal(gb[k], gs[k]) and np.array_equal(go[k], gs[k]), k
