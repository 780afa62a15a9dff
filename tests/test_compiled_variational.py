"""The variational integrator's compiled forward solves (compiled/saddle_lu.py) against the
numpy path's PETSc/MUMPS solves, on the double wishbone (configs/double-wishbone-opt.toml).

Why not bitwise: the compiled LU eliminates in another order than MUMPS, so each Newton
and projection solve differs by a few ulps, and the converged q_{n+1} by ~u‖q‖.  The
stiff tubes then amplify that position difference in the other quantities (not an error
of either path: the numpy path with PETSc's own LU instead of MUMPS differs from itself
by the same amounts — measured over 20 steps, MUMPS vs PETSc LU / MUMPS vs compiled:
q 1.02e-14 / 1.05e-14, v 9.5e-11 / 6.8e-11, a 5.9e-9 / 4.2e-9, λ 2.1e-10 / 2.3e-10
relative, the 17 objectives 5.9e-13 / 3.4e-13).  The bounds, per quantity, ∞-norms, at
the initial state:

    δq ≤ 1e-13 ‖q‖∞                    (the brief's bound: N = 20 steps of a few u‖q‖)
    δa ≤ ‖M⁻¹K‖ δq                     (a position error through the elastic forces)
    δv ≤ 2 δq/h + (h/2) δa              (v₁ from the Legendre transform of (q₁ − q₀)/h)
    δλ ≤ ‖(Φ_qᵀ)⁺ M‖ δa                 (λ from the dynamic rows M a + Φ_qᵀλ = …)

and each objective ψ moves by at most its integrand's sensitivity to δq: relative
2 E δq / (l σ) for a tube's stress KS (σ = E(d/l − 1) ≈ ψ, l the shortest element),
2 δq / |d_CM| for ∫|d_CM|² (|d_CM| its rms over the run).  Measured observed ÷ bound:
q 0.10, v 1.2e-5, a 1.5e-4, λ 3.4e-8 (the ∞-norm products bound the stiffest mode, which
the position difference hardly excites; δv is 0.7 × its 2δq/h term alone), the
objectives ≤ 3.4e-13 relative (∫|d_CM|² 3.4e-13 of its bound 8e-10; the stresses ≤
3.1e-13 of ~1e-6).  The compiled path is used for the forward and the adjoint step
(compiled/variational_adjoint.py, its bound below); tangent and initial state stay on
PETSc (saddle_lu module docstring).
"""
import numpy as np
import pytest

from parmbs import compiled
from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem

from conftest import CONFIGS

pytest.importorskip("numba", reason="numba not installed: the compiled path is optional")

STEPS = 20


def _problem(*sets):
    return Problem(load_config(str(CONFIGS / "double-wishbone-opt.toml"),
                               ["simulation.progress=false", f"simulation.t_end={STEPS}e-3", *sets]))


def _bounds(pr, tr):
    st, s = pr.stepper, pr.sys
    x0 = tr.x(0)
    ev = st._ev(s, 0.0, *x0, s.p)
    M, K, G = ev.Ma().dense(), ev.K().dense(), ev.G().dense()
    norm = lambda A: np.max(np.sum(np.abs(A), axis=1))
    dq = 1e-13 * np.max(np.abs(tr.q))
    da = norm(np.linalg.solve(M, K)) * dq
    dv = 2 * dq / st.h + 0.5 * st.h * da
    dl = norm(np.linalg.pinv(G.T) @ M) * da
    return {"q": dq, "v": dv, "a": da, "lam": dl}


def test_double_wishbone_forward_matches_numpy_path():
    ref, cmp_ = _problem("simulation.compiled=off"), _problem()
    assert ref.stepper.compiled is None and cmp_.stepper.compiled is not None
    assert cmp_.stepper.compiled.newton is not None      # one call per Newton iteration (variational_newton.py)
    tr, tc = ref.forward(), cmp_.forward()
    assert ref.nsteps == STEPS
    bound = _bounds(ref, tr)
    for k in ("q", "v", "a", "lam"):
        assert np.max(np.abs(getattr(tr, k) - getattr(tc, k))) <= bound[k], k
    orf, oc = ref.objective_values(tr), cmp_.objective_values(tc)
    assert len(orf) == 17 and orf.keys() == oc.keys()
    # the objectives' bounds (module docstring): E and the shortest element of the tubes
    s = ref.sys
    beams = [g for g in s.forces if type(g).__name__ == "Ancf3Elastic"]
    pb = np.concatenate([s.p[g.pidx] for g in beams])
    E, lmin = np.max(pb[:, 3]), np.min(pb[:, 4] / pb[:, 5])
    for k, v in orf.items():
        if k.startswith("stress"):
            rel = 2 * E * bound["q"] / (lmin * abs(v))
        else:                                          # ∫|d_CM|² dt: rms |d_CM| over the run
            rel = 2 * bound["q"] / np.sqrt(abs(v) / (STEPS * ref.h))
        assert abs(oc[k] - v) <= rel * abs(v), k


def test_compiled_variational_runs_are_bitwise_reproducible():
    a, b = _problem("simulation.t_end=5e-3"), _problem("simulation.t_end=5e-3")
    ta, tb = a.forward(), b.forward()
    for k in ("q", "v", "a", "lam"):
        assert np.array_equal(getattr(ta, k), getattr(tb, k)), k


def test_choice_and_reasons():
    """auto: used (every kind qualifies, the components stay numpy); off: never; on with a
    chosen iterative solver or below SPARSE_FROM unknowns: one line why not."""
    pr = _problem("simulation.t_end=2e-3")
    assert pr.stepper.compiled is not None
    assert "sparse LU" in compiled.make_variational(pr.sys, "on", pr.stepper.J)[0].warm_up()
    assert _problem("simulation.compiled=off", "simulation.t_end=2e-3").stepper.compiled is None
    it = _problem('simulation.petsc_options.ksp_type="gmres"', "simulation.compiled=on", "simulation.t_end=2e-3")
    assert it.stepper.compiled is None and "ksp_type gmres" in it.stepper.compiled_note
    # below compiled.SPARSE_FROM unknowns (the flexible pendulum, N = 26): PETSc's LU
    small = Problem(load_config(str(CONFIGS / "flexible-pendulum.toml"), ["simulation.progress=false"]))
    assert small.stepper.compiled is None
    cs, note = compiled.make_variational(small.sys, "on", small.stepper.J)
    assert cs is None and f"< {compiled.SPARSE_FROM}" in note


def test_a_zero_pivot_redoes_the_step_on_petsc(monkeypatch):
    """A failed static-order factorization (saddle_lu.PivotFailure) is redone with PETSc:
    the same states as the numpy path's, bit for bit; compiled/variational_adjoint.py's
    factorizations too: the adjoint gradients of the numpy/PETSc step of the same Problem.
    (Not those of the ``off`` Problem: its sweep differs at ~3e-11 relative on the same
    trajectory already on main — outside the step, not traced here.)"""
    from parmbs.compiled import saddle_lu
    ref = _problem("simulation.compiled=off", "simulation.t_end=3e-3")
    pr = _problem("simulation.t_end=3e-3")

    def fail(self, data):           # every factorization (set_values and the fused step's go through it)
        raise saddle_lu.PivotFailure("test")
    monkeypatch.setattr(saddle_lu.CompiledSaddleLU, "set_data", fail)
    tr, tc = ref.forward(), pr.forward()
    for k in ("q", "v", "a", "lam"):
        assert np.array_equal(getattr(tr, k), getattr(tc, k)), k
    assert pr.stepper.adj is not None and ref.stepper.adj is None
    gc = pr.adjoint()
    pr.stepper.adj = None
    gr = pr.adjoint()
    for k in gr:
        assert np.array_equal(gr[k], gc[k]), k


def test_kernels_match_the_numpy_groups():
    """compiled/variational_kinds.py: every proxied group of the double wishbone against its
    numpy methods at a perturbed state (q + 0.01 N(0, 1), v + 0.1 N(0, 1): off the
    constraint manifold, so Φ is O(1e-2) and no term vanishes; the constraints' second
    derivatives hess_lam, phi_q_w_q, phi_t_q too, at random λ, and the adjoint step's design
    derivatives r_p, phi_p, phi_t_p, phi_qT_lam_p, phi_q_w_p of every group with designed
    parameters: complex steps of p in both, through the same numpy code for the per-design
    constants, so again the formula in another order).  Bound: 64 u of the largest
    entry of the numpy block — each kernel evaluates the numpy formula in another order,
    ≤ ~10 products and sums per entry (a relative error of a few u); Φ of a joint is a
    difference of point positions of O(1) m whose result is O(1e-2), so its bound is
    64 u of the positions (the operands), not of Φ."""
    from parmbs.compiled import variational_kinds as VK
    pr = _problem("simulation.t_end=2e-3")
    s, cs = pr.sys, pr.stepper.compiled
    rng = np.random.default_rng(1)
    q, v, a = s.q_guess + 0.01 * rng.standard_normal(s.n), rng.standard_normal(s.n), rng.standard_normal(s.n)
    u = np.finfo(float).eps
    seen, designed = set(), set()
    plan = pr.stepper.plans[id(s)]
    for g, f in zip(list(s.forces) + list(s.constraints), cs.forces + cs.constraints):
        assert f is not g, type(g).__name__        # every kind of this model has kernels
        seen.add(type(f).__name__)
        ql, vl, al = (s.extend(x)[g.qidx] for x in (q, v, a))
        p = s.p[g.pidx]
        cols = plan.pcols(g)[0]                     # the group's designed local parameters
        if g in s.constraints:
            lam = rng.standard_normal((g.ne, g.m))
            pairs = [(f.phi(0.3, ql, p), g.phi(0.3, ql, p), np.max(np.abs(ql))),
                     (f.phi_q(0.3, ql, p), g.phi_q(0.3, ql, p), None),
                     (f.gamma(0.3, ql, vl, p), g.gamma(0.3, ql, vl, p), None),
                     (f.phi_t(0.3, ql, p), g.phi_t(0.3, ql, p), None),
                     # the adjoint step's (compiled/variational_adjoint.py)
                     (f.hess_lam(0.3, ql, p, lam), g.hess_lam(0.3, ql, p, lam), None),
                     (f.phi_q_w_q(0.3, ql, p, vl), g.phi_q_w_q(0.3, ql, p, vl), None),
                     (f.phi_t_q(0.3, ql, p), g.phi_t_q(0.3, ql, p), None)]
            if len(cols):          # the adjoint step's design derivatives (complex steps of p in both)
                pairs += [(f.phi_p(0.3, ql, p, cols), g.phi_p(0.3, ql, p, cols), None),
                          (f.phi_t_p(0.3, ql, p, cols), g.phi_t_p(0.3, ql, p, cols), None),
                          (f.phi_qT_lam_p(0.3, ql, p, lam, cols), g.phi_qT_lam_p(0.3, ql, p, lam, cols), None),
                          (f.phi_q_w_p(0.3, ql, p, vl, cols), g.phi_q_w_p(0.3, ql, p, vl, cols), None)]
                designed.add(type(f).__name__)
        else:
            pairs = [(f.r(0.3, ql, vl, al, p), g.r(0.3, ql, vl, al, p), None)]
            for A, B in zip(f.jacobians(0.3, ql, vl, al, p), g.jacobians(0.3, ql, vl, al, p)):
                assert (A is None) == (B is None), type(g).__name__
                if A is not None:
                    pairs.append((A, B, None))
            if len(cols):
                pairs.append((f.r_p(0.3, ql, vl, al, p, cols), g.r_p(0.3, ql, vl, al, p, cols), None))
                designed.add(type(f).__name__)
        for A, B, scale in pairs:
            B = np.asarray(B)
            assert np.shape(A) == B.shape, type(g).__name__
            ref = scale if scale is not None else np.max(np.abs(B), initial=0.0)
            assert np.max(np.abs(A - B), initial=0.0) <= 64 * u * ref, type(g).__name__
    assert len(seen) == 11
    assert designed == {"PairSpring", "Inertia", "Gravity", "Elastic", "AxialDamping", "BendingDamping",
                        "LinearSpherical", "BeamWeld"}
    # the planar driver of x or y at a point off the frame origin (this model drives angles
    # at c̄ = 0: its second derivatives are zero)
    import copy
    g = next(g for g in s.constraints if type(VK.fast_group(g)).__name__ == "Driver")
    ql, p = s.extend(q)[g.qidx], s.p[g.pidx].copy()
    p[:, 0:2] = (0.3, -0.2)
    lam, w = rng.standard_normal((g.ne, 1)), rng.standard_normal((g.ne, 3))
    for coordinate in ("x", "y"):
        gx = copy.copy(g)
        gx.coordinate = coordinate
        f = VK.fast_group(gx)
        for A, B in ((f.hess_lam(0.3, ql, p, lam), gx.hess_lam(0.3, ql, p, lam)),
                     (f.phi_q_w_q(0.3, ql, p, w), gx.phi_q_w_q(0.3, ql, p, w))):
            assert A.shape == B.shape and np.max(np.abs(B)) > 0
            assert np.max(np.abs(A - B)) <= 64 * u * np.max(np.abs(B)), coordinate
    # a complex argument (complex-step runs) goes to the numpy method: the same array
    g, f = s.constraints[0], cs.constraints[0]
    qc = s.extend(q)[g.qidx] + 1e-30j
    assert np.array_equal(f.phi_q(0.0, qc, s.p[g.pidx]), g.phi_q(0.0, qc, s.p[g.pidx]))


def test_fused_newton_only_for_its_kinds():
    """compiled/variational_newton.py evaluates the kinds it lists, each nonlinear one in at
    most one group; otherwise the per-group compiled step runs (the reason names the group)."""
    from parmbs.compiled import variational_newton as VN
    pr = _problem("simulation.t_end=2e-3")
    cs = pr.stepper.compiled
    assert VN.why_not(cs.forces, cs.constraints) is None
    numpy_group = pr.sys.forces[0]                        # a group without its proxy
    assert "without a kernel" in VN.why_not([numpy_group] + cs.forces[1:], cs.constraints)
    el = [g for g in cs.forces if type(g).__name__ == "Elastic"]
    assert "2 groups of the kind Elastic" in VN.why_not(cs.forces + el, cs.constraints)


def _dense(op):
    """The (N, N) matrix of a factored CompiledSaddleLU (its CSR values)."""
    D = np.zeros((op.N, op.N))
    for i in range(op.N):
        D[i, op.ji[op.jp[i]:op.jp[i + 1]]] = op.data[op.jp[i]:op.jp[i + 1]]
    return D


def test_compiled_adjoint_matches_numpy_adjoint(monkeypatch):
    """compiled/variational_adjoint.py against the numpy/PETSc adjoint step on the same
    trajectory (20 steps, 17 objectives, 136 swept parameter columns).

    Bound.  Both sweeps take the same states and objective partials; they differ only in
    the linear algebra of each step: J and S factored in other orders (MUMPS; the static
    order, refined once — both backward stable, so each solve's relative error is ≤ κ u,
    κ = κ_∞ of J or S, ~1e6 here), products summed in other orders (a few u).  A step's
    gradient increment Δg_k and μ_k are linear in its solutions, so the two increments
    differ by ≤ 2 κ u |Δg_k| (2: both paths), and an error of μ made at one step enters each
    later step's increments no larger (the sweep is stable: it is the transpose of the
    converging forward linearization), hence over N steps, per swept column j (the
    sweep's sum, before the initial-state term),

        |δg_j| ≤ 2 N κ u Σ_k |Δg_k,j|,

    with Σ_k |Δg_k,j| summed on the numpy sweep (the increments without cancellation).
    The gradients after the initial-state term and the chain to the 60 design variables:
    ≤ 1e-9 of max|∇ψ|, tests/test_double_wishbone.py's adjoint-vs-direct bound (N κ u).
    Measured: swept sums ≤ 1.3e-5 of their bound; gradients ≤ 3.8e-11 of max|∇ψ| (the
    stress KS), 7e-14 (∫|d_CM|²)."""
    pr = _problem()
    st = pr.stepper
    assert st.adj is not None
    pr.forward()
    swept = []
    finish = pr._adjoint_finish

    def keep(p, x0, mu, grad, gref):
        swept.append(np.array(grad, float))
        return finish(p, x0, mu, grad, gref)
    monkeypatch.setattr(pr, "_adjoint_finish", keep)
    ga = pr.adjoint()
    kappa = max(np.linalg.cond(_dense(op), np.inf) for op in (st.adj.J, st.adj.S))   # the last step's
    st.adj = None                            # the numpy/PETSc step, its increments' magnitudes summed
    acc = []
    step = st.adjoint_step

    def summed(*a):
        mu, dg = step(*a)
        acc.append(np.abs(dg))
        return mu, dg
    monkeypatch.setattr(st, "adjoint_step", summed)
    gn = pr.adjoint()
    assert len(acc) == STEPS and len(swept) == 2
    mag = np.sum(acc, axis=0)                              # (swept columns, objectives)
    u = np.finfo(float).eps
    d = np.abs(swept[0] - swept[1])
    assert np.all(d <= 2 * STEPS * kappa * u * mag), np.max(d / np.maximum(mag, 1e-300))
    assert np.any(d > 0)                                   # another path, not the same one
    assert ga.keys() == gn.keys() and len(ga) == 17
    for k in ga:
        assert np.max(np.abs(ga[k] - gn[k])) <= 1e-9 * np.max(np.abs(gn[k])), k
    print(f"kappa {kappa:.2e}; swept sums {np.max(d / np.maximum(2 * STEPS * kappa * u * mag, 1e-300)):.1e} of "
          f"the bound; " + ", ".join(f"{k} {np.max(np.abs(ga[k] - gn[k])) / np.max(np.abs(gn[k])):.1e}" for k in ga))


def test_compiled_adjoint_bitwise_and_checkpointed(tmp_path):
    """Two in-memory sweeps of the compiled adjoint give the same bytes, and checkpointed
    sweeps (all, every:2, revolve:2: the adjoint step a function of (t, x_k, x_{k+1},
    μ_{k+1}, p) only; recomputed forward steps in between under every:K and revolve) the
    in-memory one's."""
    sets = ("simulation.t_end=5e-3",)
    a = _problem(*sets)
    a.forward()
    g1, g2 = a.adjoint(), a.adjoint()
    for k in g1:
        assert np.array_equal(g1[k], g2[k]), k
    for schedule in ("all", "every:2", "revolve:2"):
        c = _problem(*sets, f"checkpoint.schedule={schedule}")
        run = c.use_checkpoint(tmp_path / f"ck-{schedule.replace(':', '')}.h5")
        c.forward()
        gc = c.adjoint()
        run.store.close()
        assert c.stepper.adj is not None and run.adjoint_steps == 5
        assert (run.recomputed > 0) == (schedule != "all"), schedule
        for k in g1:
            assert np.array_equal(g1[k], gc[k]), (schedule, k)
