"""The FFR continuum as assembled sparse operators (flexible/continuum_structured.py)
and the lagged-factorization Schur solver (flexible/continuum_schur.py): equal to the
element assembly, exact solves, and the same trajectory and gradient as the plain
LU path."""
import copy
import tomllib

import numpy as np
import pytest

from parmbs._petsc import PETSc
from parmbs.config.loader import validate
from parmbs.model.evaluation import StateEval, EvalPlan
from parmbs.flexible.continuum_structured import ContinuumStructure
from parmbs.sensitivity.problem import Problem

CONFIG = "configs/topopt-crank.toml"


def crank_data(nx=10, ny=4, gravity=(0.0, 0.0)):
    with open(CONFIG, "rb") as f:
        data = tomllib.load(f)
    c = data["continua"][0]
    rng = np.random.default_rng(3)
    c.update(nx=nx, ny=ny, clamp_radius=0.026, points={"pin": [9 * nx // 10, ny // 2]}, E=2e9,
             density=rng.uniform(0.2, 1.0, nx * ny).tolist())
    data["model"]["gravity"] = list(gravity)
    # trapezoidal as written: the element-path reference matrix below has weights 1 (no α)
    data["simulation"].update(t_end=0.1, dt=0.02, integrator="trapezoidal")
    return data


def problem(data, schur=True):
    opts = PETSc.Options()
    opts.setValue("parmbs_continuum_schur", "true" if schur else "false")
    try:
        return Problem(validate(copy.deepcopy(data), CONFIG))
    finally:
        opts.delValue("parmbs_continuum_schur")


def random_state(sys, rng, scale=1e-3):
    n = sys.n
    q = sys.q_guess + scale * rng.standard_normal(n)
    q[2] = rng.uniform(-3, 3)          # rigid-body angles and the frame angle: anything
    return q, rng.standard_normal(n), rng.standard_normal(n)


def test_structured_residual_and_jacobians_equal_element_assembly():
    pr = problem(crank_data(), schur=False)
    sys = pr.sys
    plan = EvalPlan(sys, pr.stepper.design_map)
    st = ContinuumStructure(sys, plan)
    st.set_design(sys.p)
    rng = np.random.default_rng(1)
    n, m = sys.n, sys.m
    for _ in range(3):
        q, v, a = random_state(sys, rng)
        lam = rng.standard_normal(m)
        ev = StateEval(sys, 0.3, q, v, a, lam, sys.p, plan.design_map, plan)
        for wi, wf in ((1.0, 1.0), (0.7, 0.4)):
            ref = ev.residual(wi, wf)
            plan.structured = st
            ev_s = StateEval(sys, 0.3, q, v, a, lam, sys.p, plan.design_map, plan)
            got = ev_s.residual(wi, wf)
            assert np.max(np.abs(got - ref)) <= 1e-12 * np.max(np.abs(ref))
            for name in ("K", "Cv", "Ma"):
                Dref = getattr(ev, name)(wi, wf).dense()
                D = getattr(ev_s, name)(wi, wf).dense()
                Dt = getattr(ev_s, name)(wi, wf).T.dense()
                scale = np.max(np.abs(Dref))
                assert np.max(np.abs(D - Dref)) <= 1e-12 * scale, name
                assert np.max(np.abs(Dt - Dref.T)) <= 1e-12 * scale, name
            del plan.structured


def spinning_matrices(pr, count, rng):
    """Set the stepper's Newton matrix at ``count`` random states whose frame spins on
    (θ̇ = 10, 10.5, …: F, factored at the first, lags behind J_ff); yields (i, (q, v, a), ev)."""
    st, sys = pr.stepper, pr.sys
    th = st.schur.st.frames[0][2]
    for i in range(count):
        q, v, a = random_state(sys, rng)
        v, a = 30 * v, 300 * a
        v[th], a[th] = 10.0 + 0.5 * i, 20.0
        ev = st._eval(0.1 * i, (q, v, a, rng.standard_normal(sys.m)), sys.p)
        st._set_matrix(ev)
        yield i, (q, v, a), ev


def test_schur_solve_is_exact_also_with_a_lagged_factor():
    """The solver's J z = r to round-off, forward and transposed, after the state moved
    on from the one F was factored at (F then lags: refinement makes it exact)."""
    pr = problem(crank_data(), schur=True)
    st = pr.stepper
    sch = st.schur
    assert sch is not None
    sys = pr.sys
    rng = np.random.default_rng(2)
    n, m = sys.n, sys.m
    for i, (q, v, a), ev in spinning_matrices(pr, 3, rng):
        # the same matrix assembled by the element path
        h, b, g = st.h, st.beta, st.gamma
        plan_st = st.plan.structured
        del st.plan.structured
        ev2 = st._eval(0.1 * i, (q, v, a, ev.lam), sys.p)
        Fb = ev2.force_blocks(b * h * h, g * h, 1.0)
        H = [b * h * h * Hb for Hb in ev2.hess_blocks()]
        Gb = ev2.phi_q_blocks()
        st.op.set_values(Fb + H + Gb + [np.swapaxes(x, 1, 2) for x in Gb] + st.zero_diag)
        st.plan.structured = plan_st
        A = PETSc.Mat()
        Jd = st.op.A.convert("dense", A).getDenseArray().copy()
        for tr in (False, True):
            r = rng.standard_normal(n + m)
            z = sch.solve(r, transpose=tr)
            Jm = Jd.T if tr else Jd
            rel = np.max(np.abs(Jm @ z - r)) / (np.max(np.abs(Jm)) * np.max(np.abs(z)))
            assert rel < 1e-14
            assert np.allclose(sch.matvec(z, tr), Jm @ z, rtol=0, atol=1e-12 * np.max(np.abs(Jm @ z)))
            zd = np.linalg.solve(Jm, r)
            assert np.max(np.abs(z - zd)) <= 1e-8 * np.max(np.abs(zd))
    assert sch.nfactor == 1                 # one factorization for all three states
    assert sch.nrefine > 6                  # … made exact by refinement


def assert_same_run(reference, other):
    """Two solver paths of one model (``reference``, ``other``: Problems): the trajectory
    to 1e-10, the adjoint gradient to 1e-8, and adjoint = direct ≤ 1e-9 on ``other``."""
    out = []
    for pr in (reference, other):
        traj = pr.forward()
        out.append((traj.q.copy(), pr.adjoint()["compliance"], pr.direct()["compliance"]))
    (q0, g0, _), (q1, g1, d1) = out
    assert np.max(np.abs(q1 - q0)) <= 1e-10 * np.max(np.abs(q0))
    assert np.max(np.abs(g1 - d1)) <= 1e-9 * np.max(np.abs(g1))
    assert np.max(np.abs(g1 - g0)) <= 1e-8 * np.max(np.abs(g0))


@pytest.mark.parametrize("integrator", ["trapezoidal", "genalpha"])
def test_schur_path_gives_the_lu_path_trajectory_and_gradient(integrator):
    data = crank_data(nx=8, ny=2, gravity=(0.0, -9.81) if integrator == "genalpha" else (0.0, 0.0))
    data["simulation"]["integrator"] = integrator
    lu, schur = problem(data, False), problem(data, True)
    assert lu.stepper.schur is None and schur.stepper.schur is not None
    assert_same_run(lu, schur)


def test_analytic_density_column_of_r_p_equals_complex_step():
    pr = problem(crank_data(), schur=False)
    rng = np.random.default_rng(4)
    q, v, a = random_state(pr.sys, rng)
    ev = StateEval(pr.sys, 0.2, q, v, a, np.zeros(pr.sys.m), pr.sys.p)
    seen = 0
    for g, qg, vg, ag, pg in ev.F:
        if type(g).__name__ in ("ContinuumInertia", "ContinuumElastic"):
            pg = pg.copy()
            pg[:, 0] = rng.uniform(0.02, 1.0, len(pg))      # both branches of the seed-003 law
            ref = g.r_p(0.2, qg, vg, ag, pg)[..., [0]]
            got = g.r_p(0.2, qg, vg, ag, pg, [0])
            assert np.max(np.abs(got - ref)) <= 1e-13 * np.max(np.abs(ref))
            seen += 1
    assert seen == 2


def test_a_new_design_refactors_and_newton_stays_quadratic():
    """The second forward run of a Problem at another design (what MMA does): the lagged
    factorization is replaced, Newton takes the iterations of a fresh run."""
    data = crank_data(nx=10, ny=2)
    data["continua"][0]["E"] = 2.1e11                       # steel: the shipped stiffness
    pr = problem(data)
    p0 = pr.sys.p.copy()
    rho = pr.design.values(p0)
    pr.forward(p0)
    n0 = pr.stepper.schur.nfactor
    p1 = pr.design.apply(p0, 0.8 * rho)
    its = pr.forward(p1).newton_its
    assert pr.stepper.schur.nfactor == n0 + 1
    fresh = problem(data)
    assert list(its) == list(fresh.forward(p1).newton_its)


def test_a_missed_stale_factor_is_refactored_not_fatal(monkeypatch):
    """With the lag estimate switched off, a design step leaves F stale (Newton on J̃
    alone would stall): the step is redone with a fresh factorization."""
    import parmbs.flexible.continuum_schur as cs
    data = crank_data(nx=10, ny=2)
    data["continua"][0]["E"] = 2.1e11
    pr = problem(data)
    p0 = pr.sys.p.copy()
    rho = pr.design.values(p0)
    pr.forward(p0)
    monkeypatch.setattr(cs.ContinuumSchurOperator, "set_design", lambda self, p: self.st.set_design(p))
    monkeypatch.setattr(cs, "LAG_LIMIT", np.inf)
    p1 = pr.design.apply(p0, 0.5 * rho)
    n0 = pr.stepper.schur.nfactor
    q = pr.forward(p1).q
    assert pr.stepper.schur.nfactor > n0          # the redone step refactored
    monkeypatch.undo()
    ref = problem(data).forward(p1).q
    assert np.max(np.abs(q - ref)) <= 1e-10 * np.max(np.abs(ref))


def block_solves_match_columns(pr):
    """The border basis' several right-hand sides by one MatMatSolve (MatMatSolveTranspose)
    equal their column-by-column solves; the bound: both are the same factor's
    triangular solves, differing only in MUMPS's blocking of the sums (measured 1e-15 …
    4e-15 relative at 20 … 10⁵ elements), so 1e-12 is round-off with a wide margin."""
    pr.forward()
    sch = pr.stepper.schur
    rng = np.random.default_rng(7)
    R = rng.standard_normal((sch.st.nf, 4))
    for tr in (False, True):
        n0 = sch.nfsolve
        Zb = sch._fsolve(R, tr)
        assert sch.nfsolve == n0 + 4
        Zc = np.stack([sch._fsolve(np.ascontiguousarray(R[:, j]), tr) for j in range(4)], 1)
        assert np.max(np.abs(Zb - Zc)) <= 1e-12 * np.max(np.abs(Zc))
        # and they solve F z = r (Fᵀ z = r): normwise backward error at round-off (LU
        # with MUMPS's threshold pivoting: a few ε times the growth, ~1e-15 here)
        x, y = sch.F.createVecs()
        Fn = sch.F.norm(PETSc.NormType.INFINITY)
        for j in range(4):
            x.setArray(Zb[sch.fr0:sch.fr1, j])
            (sch.F.multTranspose if tr else sch.F.mult)(x, y)
            res = y.getArray() - R[sch.fr0:sch.fr1, j]
            res = sch.comm.tompi4py().allreduce(np.max(np.abs(res), initial=0.0), op=max_op())
            assert res <= 1e-13 * (Fn * np.max(np.abs(Zb[:, j])) + np.max(np.abs(R[:, j])))


def max_op():
    from mpi4py import MPI
    return MPI.MAX


def test_several_right_hand_sides_in_one_solve_equal_column_solves():
    block_solves_match_columns(problem(crank_data(), schur=True))


def test_adjoint_step_reuses_the_previous_steps_state_evaluation_bit_for_bit(monkeypatch):
    """The generalized-α adjoint step k evaluates x_{k+1} and x_k; step k + 1 evaluated
    x_{k+1} just before as its old state.  Reusing that evaluation (its remembered ∂r/∂ρ
    and unweighted structured borders, integrators/newmark.py ``_adjoint_eval``) and the
    remembered M, G, K products (``ContinuumStructure.product``) gives the gradient of
    fresh evaluations bit for bit, and one evaluation per step instead of two."""
    from parmbs.integrators.newmark import NewmarkFamily
    data = crank_data(nx=8, ny=2, gravity=(0.0, -9.81))
    data["simulation"]["integrator"] = "genalpha"
    pr = problem(data)
    st = pr.stepper
    N = pr.forward().steps
    evals = []
    inner = st._eval
    st._eval = lambda t, x, p: evals.append(t) or inner(t, x, p)
    g = pr.adjoint()["compliance"]
    steps = len(evals)
    monkeypatch.setattr(NewmarkFamily, "_adjoint_eval", lambda self, t1, x1, p: self._eval(t1, x1, p))
    monkeypatch.setattr(ContinuumStructure, "product", lambda self, A, x: A @ x)
    evals.clear()
    g_fresh = pr.adjoint()["compliance"]
    assert len(evals) - steps == N - 1              # every step but the first reused one
    assert np.array_equal(g, g_fresh)
    monkeypatch.undo()
    # the remembered products follow a new design (version) and a new x
    cs = st.schur.st
    x = np.random.default_rng(0).standard_normal(cs.nf)
    y = cs.product(cs.K, x).copy()
    p0 = pr.sys.p
    assert cs.set_design(pr.design.apply(p0, 0.9 * pr.design.values(p0)))
    assert np.array_equal(cs.product(cs.K, x), cs.K @ x) and not np.array_equal(cs.product(cs.K, x), y)
    assert np.array_equal(cs.product(cs.M[0], 2 * x), cs.M[0] @ (2 * x))
