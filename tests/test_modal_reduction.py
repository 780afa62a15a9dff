"""Modally reduced floating-frame continua (parmbs/flexible/modal.py, modal_components.py)
on an 8 × 3 topopt-crank: the full basis reproduces the full-order body, ψ converges to
the full-order ψ as K grows, the eigen-sensitivities (forward Nelson = adjoint, and
= central differences), the gradient of ∫U dt (adjoint = direct = FD), rigid-body
motion exact, repeated eigenvalues refused, bad input exit 2.  The generic block
test (tests/test_components.py) covers the four Reduced* components."""
import copy

import numpy as np
import pytest

from parmbs.model.system import System, ModelError
from parmbs.config.loader import validate
from cli_helpers import parmbs_in_process
from test_continuum import crank_data, problem, random_density, CONFIG

NX, NY = 8, 3


def crank(K=None, t_end=0.2, attachment=False, **cont):
    cont.setdefault("density", random_density(NX * NY, np.random.default_rng(5)).tolist())
    data = crank_data(nx=NX, ny=NY, E=2e9, **cont)
    data["simulation"].update(t_end=t_end, dt=0.02)
    if K is not None:
        data["continua"][0]["reduction"] = {"modes": K, "attachment": attachment}
    return data


@pytest.fixture(scope="module")
def full():
    pr = problem(crank())
    pr.forward()
    return pr, pr.objective_values()["compliance"], pr.adjoint()["compliance"]


@pytest.fixture(scope="module", params=[False, True], ids=["eigenmodes", "attachment"])
def reduced(request):
    pr = problem(crank(K=6, attachment=request.param))
    pr.forward()
    return pr


def _run(K, attachment=False):
    pr = problem(crank(K=K, attachment=attachment))
    pr.forward()
    return pr, pr.objective_values()["compliance"], pr.adjoint()["compliance"]


def test_full_basis_reproduces_full_order(full):
    """K = n_f (every mode): V is square and M-orthonormal, so the reduced body is the
    full-order body in other coordinates (the body data are exact, not truncated
    Taylor terms).  ψ and ∇ψ agree to the Newton tolerance (rtol 1e-12 on states of
    ~1e-3 m, amplified by the 10-step run: measured 3.4e-11 and 1.8e-10)."""
    pr_f, psi_f, g_f = full
    nf = pr_f.sys.continua.continua["crank"].nelastic
    _, psi, g = _run(nf)
    e_psi = abs(psi - psi_f) / psi_f
    e_g = np.linalg.norm(g - g_f) / np.linalg.norm(g_f)
    print(f"K = n_f = {nf}: ψ rel. error {e_psi:.1e}, ∇ψ rel. error {e_g:.1e}")
    assert e_psi < 1e-9 and e_g < 1e-8


def test_psi_converges_with_K(full):
    """ψ(K) and ∇ψ(K) → the full-order values as K grows.  Measured relative errors
    (ψ; ∇ψ) at K = 2, 8, 32: eigenmodes only 3.5e-2, 1.9e-2, 8.0e-3; 1.4e-1, 1.5e-2,
    6.1e-3 (the pin's quasi-static response converges slowly in fixed-interface modes);
    with the pin's two attachment modes 3.9e-4, 1.4e-4, 5.8e-6; 1.8e-3, 2.7e-4, 1.2e-5.
    Asserted: eigenmodes K = 2 → 32 gains ≥ 2× on ψ (measured 4.4×), ≥ 10× on ∇ψ (23×);
    attachment K = 2 → 32 gains ≥ 20× on both (67×, 160×) and beats eigenmodes alone
    by ≥ 20× at every K (91×, 134×, 1390× on ψ)."""
    _, psi_f, g_f = full
    err = {}
    for att in (False, True):
        for K in (2, 8, 32):
            _, psi, g = _run(K, att)
            err[att, K] = (abs(psi - psi_f) / psi_f, np.linalg.norm(g - g_f) / np.linalg.norm(g_f))
    for k, v in err.items():
        print(f"attachment={k[0]!s:5} K={k[1]:2d}: ψ {v[0]:.1e}, ∇ψ {v[1]:.1e}")
    assert err[False, 32][0] < err[False, 2][0] / 2 and err[False, 32][1] < err[False, 2][1] / 10
    assert err[True, 32][0] < err[True, 2][0] / 20 and err[True, 32][1] < err[True, 2][1] / 20
    for K in (2, 8, 32):
        assert err[True, K][0] < err[False, K][0] / 20


def test_eigen_sensitivities_forward_equal_adjoint_and_fd(reduced):
    """The reduction alone: (dD/dρ) by Nelson's bordered forward solves (``jvp``) equals
    the one-solve-per-mode adjoint (``vjp``) to round-off, and central differences of
    D(ρ) (eigenproblem re-solved) along a random direction, per block of D.  FD step
    1e-4·ρ from a sweep (1e-3, 1e-4, 1e-5): truncation 1.3e-5 at 1e-3 falls as h²
    (1.2e-7 at 1e-4); noise ~ε·κ/h: 3e-13/h (eigenmodes), 8e-12/h (attachment modes,
    K_ff⁻¹ of a 1e5 stiffness contrast) — 8e-8 at 1e-4.  Estimate ≤ 2e-7; bound 1e-6."""
    pr = reduced
    red = pr.sys.continua.continua["crank"].reduction
    p0 = pr.sys.p.copy()
    rng = np.random.default_rng(4)
    dx = rng.uniform(-1, 1, red.nel)
    Db = rng.uniform(-1, 1, len(red.data_index))
    jv = red.jvp(p0, dx)
    vj = red.vjp(p0, Db)
    a, b = Db @ jv, vj @ dx
    scale = np.abs(Db) @ np.abs(jv)
    print(f"<D̄, J dx> = {a:.15e}, <Jᵀ D̄, dx> = {b:.15e}, diff / Σ|D̄||J dx| {abs(a - b) / scale:.1e}")
    # round-off of the sums, amplified by K_ff⁻¹ (densities 0.02…1: stiffness contrast
    # 1e5): measured 2e-14 (eigenmodes) to 5e-12 (attachment, three probes); bound 1e-10
    assert abs(a - b) < 1e-10 * scale
    x0 = p0[red.pidx["density"]]
    h = 1e-4
    errs = []
    for s in (1, -1):
        p = p0.copy()
        p[red.pidx["density"]] = x0 + s * h * x0 * dx
        errs.append(red.data(p))
    fd = (errs[0] - errs[1]) / (2 * h)
    jx = red.jvp(p0, x0 * dx)
    ni, nk, npt = red.layout()
    cuts = np.cumsum([0, ni, nk] + [npt] * len(red.points))
    err = max(np.max(np.abs(fd[a:b] - jx[a:b])) / np.max(np.abs(jx[a:b])) for a, b in zip(cuts[:-1], cuts[1:]))
    print(f"jvp vs central FD of the body data, worst block (inertia, stiffness, pin rows): {err:.1e}")
    assert err < 1e-6
    # data in p that are not those of the basis (a mode of the other sign) are refused
    p = p0.copy()
    p[red.data_index[ni + nk:]] *= -1.0
    with pytest.raises(RuntimeError, match="not those of the basis"):
        red.vjp(p, Db)


def test_deflated_mode_solves_equal_the_bordered_lu(reduced):
    """The large-body path (one K_ff factorization, deflated CG per mode) gives the
    same jvp and vjp as the dense bordered LU: measured 7e-14 / 2e-13 (eigenmodes),
    8e-11 / 6e-11 (attachment: K_ff⁻¹ round-off of the 1e5 stiffness contrast, the
    level of the jvp = vjp check above); bound 1e-9."""
    from parmbs.flexible.modal import Reduction
    red = reduced.sys.continua.continua["crank"].reduction
    p0 = reduced.sys.p.copy()
    rng = np.random.default_rng(1)
    dx, Db = rng.uniform(-1, 1, red.nel), rng.uniform(-1, 1, len(red.data_index))
    j0, v0 = red.jvp(p0, dx), red.vjp(p0, Db)
    red.force_deflated = True
    try:
        red._cache = None
        j1, v1 = red.jvp(p0, dx), red.vjp(p0, Db)
    finally:
        red.force_deflated = False
        red._cache = None
    e = (np.max(np.abs(j1 - j0)) / np.max(np.abs(j0)), np.max(np.abs(v1 - v0)) / np.max(np.abs(v0)))
    print(f"deflated vs bordered LU: jvp {e[0]:.1e}, vjp {e[1]:.1e}")
    assert max(e) < 1e-9 and isinstance(red, Reduction)


def test_element_blocks_equal_one_block(reduced, monkeypatch):
    """The element loops by blocks (modal.ELEMENT_CHUNK; one block up to 1.3·10⁵
    elements, so the shipped crank's bits are those of one): 24 elements in blocks of 5,
    on the same basis, give the same K_ff, M_ff and body data D up to the order of
    the element sums — relative 1e-16 × (a few terms per entry), bound 1e-13 — and jvp
    and vjp up to that round-off (in δK, δM; in V̄ and the explicit terms, whose
    contractions run as paired products above one block, modal._paired) amplified by
    the mode solves (condition ≲ 1e6: the stiffness contrast x³ of densities 0.01..1,
    as in the deflated-vs-LU test above): bound 1e-10 (measured jvp 4.4e-14 / 9.1e-13,
    vjp 3.8e-12)."""
    from parmbs.flexible import modal
    red = reduced.sys.continua.continua["crank"].reduction
    p0 = reduced.sys.p.copy()
    rng = np.random.default_rng(3)
    dx, Db = rng.uniform(-1, 1, red.nel), rng.uniform(-1, 1, len(red.data_index))
    red._cache = None
    st = red.state(p0)

    def evaluate():
        return (*red._assemble(st["me"], st["ke"], st["Ku"]), red.data(p0), red.jvp(p0, dx), red.vjp(p0, Db))
    ref = evaluate()
    monkeypatch.setattr(modal, "ELEMENT_CHUNK", 5)
    assert len(modal._chunks(red.nel)) == 5
    got = evaluate()
    red._cache = None
    for name, a, b in zip(("K_ff", "M_ff", "D", "jvp", "vjp"), ref, got):
        a, b = (a.toarray(), b.toarray()) if hasattr(a, "toarray") else (a, b)
        e = np.max(np.abs(a - b)) / np.max(np.abs(a))
        print(f"blocks of 5 vs one block: {name} {e:.1e}")
        assert e <= (1e-10 if name in ("jvp", "vjp") else 1e-13), name


def test_gradient_adjoint_direct_fd(reduced):
    """∇ψ of ∫U dt through the eigen-sensitivities: adjoint (vjp) = direct (jvp) to
    1e-9, = central differences of ψ to 1e-6 of max|∇ψ|.  FD step 1e-4·ρ_j from a sweep
    (1e-2 … 1e-6 on four entries): the Newton noise of ψ is ~1e-12·ψ (rtol), so the FD
    noise is 1e-12·ψ/h ≈ 2e-10 ≈ 3e-8·max|∇ψ| (ψ = 8.8e-3, max|∇ψ| = 6.8e-3, ρ ≈ 0.5);
    truncation at 1e-4 measured ≤ 4e-8 relative.  (Entries 100× below max|∇ψ| are
    noise-limited at this step: 4e-5 of themselves, hence the scale max|∇ψ|.)"""
    pr = reduced
    g = pr.adjoint()["compliance"]
    gd = pr.direct()["compliance"]
    err_d = np.max(np.abs(g - gd)) / np.max(np.abs(g))
    print(f"adjoint vs direct: {err_d:.1e}")
    assert err_d < 1e-9
    rng = np.random.default_rng(11)
    cols = rng.choice(len(pr.design), 6, replace=False)
    p0 = pr.sys.p.copy()
    rho = pr.design.values(p0)
    fd = []
    for j in cols:
        h = 1e-4 * rho[j]
        vals = []
        for s in (1, -1):
            r = rho.copy()
            r[j] += s * h
            p = pr.design.apply(p0, r)
            vals.append(pr.objective_values(pr.forward(p), p)["compliance"])
        fd.append((vals[0] - vals[1]) / (2 * h))
    pr.forward(p0)
    err = np.max(np.abs(g[cols] - fd)) / np.max(np.abs(g))
    print(f"adjoint vs central FD on 6 densities: {err:.1e} of max|∇ψ|")
    assert err < 1e-6


def test_rigid_body_motion_is_exact():
    """A free reduced body (no joints, no load) launched with a rigid translation
    velocity: its frame moves uniformly, θ and η stay zero to round-off; the data m, S0,
    I0 are those of the rigid rectangle (ρ0 t Lx Ly, centroid, polar moment).  (A rigid
    spin is not a solution — it loads the body centrifugally; the frame rows of any
    motion are checked against the full-order residual in
    ``test_reduced_residual_is_the_projected_full_order_residual``.)"""
    data = crank(K=4, density=1.0)
    data["joints"], data["forces"], data["bodies"] = [], [], []
    c = data["continua"][0]
    c.update(independent=["x", "y", "angle"], initial_velocity={"x": 0.3, "y": -0.2, "angle": 0.0})
    data.pop("optimize")
    data["design"] = []
    data["objectives"] = []
    sys_ = System(validate(copy.deepcopy(data), CONFIG))
    cont = sys_.continua.continua["crank"]
    m, S0, I0 = (sys_.p[cont.inertia_p[k]] for k in (0, slice(1, 3), 3))
    Lx, Ly, t, r0 = c["size"][0], c["size"][1], c["thickness"], c["rho0"]
    mass = r0 * t * Lx * Ly
    cen = np.array(c["offset"]) + 0.5 * np.array([Lx, Ly])
    np.testing.assert_allclose(m, mass, rtol=1e-13)
    np.testing.assert_allclose(S0, mass * cen, rtol=1e-13, atol=1e-15 * mass * Lx)   # S0_y = 0 to round-off
    # the 2×2 Gauss rule of the bilinear elements integrates x² exactly
    np.testing.assert_allclose(I0, mass * ((Lx ** 2 + Ly ** 2) / 12 + cen @ cen), rtol=1e-13)
    from parmbs.sensitivity.problem import Problem
    pr = Problem(validate(copy.deepcopy(data), CONFIG))
    tr = pr.forward()
    fr = cont.frame()
    T = tr.t[:, None]
    np.testing.assert_allclose(tr.q[:, fr[:2]], [0.0, 0.0] + T * [0.3, -0.2], atol=1e-13)
    assert np.max(np.abs(tr.q[:, fr[2]])) < 1e-13
    assert np.max(np.abs(tr.q[:, cont.eta()])) < 1e-13


def test_reduced_residual_is_the_projected_full_order_residual():
    """At a random state (R, θ, η and their rates) the reduced inertia + elastic
    residual equals the full-order one (ContinuumInertia + ContinuumElastic summed over
    the 24 elements) at u = Vη, u̇ = Vη̇, ü = Vη̈: frame rows equal, η rows = Vᵀ(u rows).
    This is the statement that the body data carry the planar FFR terms exactly
    (modal_components.py docstring); round-off only (1e-12 relative)."""
    from parmbs.flexible.continuum import ContinuumInertia, ContinuumElastic
    from parmbs.flexible.modal_components import ReducedInertia, ReducedElastic
    sf, sr = (System(validate(crank(K=K), CONFIG)) for K in (None, 6))
    cf, cr = sf.continua.continua["crank"], sr.continua.continua["crank"]
    V = cr.reduction.state(sr.p)["Phi"]
    rng = np.random.default_rng(3)
    fr = cf.frame()
    assert fr == cr.frame()
    u_idx = cf.offset + 3 + np.arange(cf.nelastic)
    xs = []
    for _ in range(3):                                       # q, v, a
        xr, xf = np.zeros(sr.n + 3), np.zeros(sf.n + 3)
        xr[fr] = xf[fr] = rng.uniform(-1, 1, 3)
        eta = rng.uniform(-1e-3, 1e-3, 6)
        xr[cr.eta()] = eta
        xf[u_idx] = V @ eta
        xs.append((xr, xf))
    (qr, qf), (vr, vf), (ar, af) = xs

    def total(system, x, kinds):
        q, v, a = x
        out = np.zeros(system.n + 3)
        for g in system.forces:
            if isinstance(g, kinds):
                r = g.r(0.0, q[g.qidx], v[g.qidx], a[g.qidx], system.p[g.pidx])
                np.add.at(out, g.qidx, r)
        return out
    Rf = total(sf, (qf, vf, af), (ContinuumInertia, ContinuumElastic))
    Rr = total(sr, (qr, vr, ar), (ReducedInertia, ReducedElastic))
    scale = np.max(np.abs(Rf[fr]))
    assert np.max(np.abs(Rr[fr] - Rf[fr])) < 1e-12 * scale
    proj = V.T @ Rf[u_idx]
    err = np.max(np.abs(Rr[cr.eta()] - proj)) / np.max(np.abs(proj))
    print(f"frame rows {np.max(np.abs(Rr[fr] - Rf[fr])) / scale:.1e}, modal rows {err:.1e}")
    assert err < 1e-12


def test_repeated_eigenvalues_are_refused():
    """A square body clamped symmetrically at its centre has pairs of equal eigenvalues
    (the 90° rotation maps modes onto modes): the basis is not differentiable there
    and the model is refused naming the key and the pair."""
    data = crank_data(nx=4, ny=4, E=2e9, density=1.0, size=[0.1, 0.1], offset=[-0.05, -0.05],
                      clamp_radius=0.026, points={"pin": [4, 2]})
    data["continua"][0]["reduction"] = {"modes": 3}
    with pytest.raises(ModelError) as e:
        System(validate(data, CONFIG))
    assert e.value.key == "continua.crank.reduction.modes" and "coincide" in e.value.message
    print(e.value)


@pytest.mark.parametrize("sets,key", [
    (["continua.crank.reduction.modes=0"], "continua.crank.reduction.modes"),
    (["continua.crank.reduction={modes=4, extra=1}"], "continua.crank.reduction.extra"),
    (["continua.crank.nx=4", "continua.crank.ny=2", "continua.crank.points.pin=[3, 1]",
      "continua.crank.clamp_radius=0.04", "continua.crank.reduction.modes=27"], "continua.crank.reduction.modes"),
])
def test_bad_reduction_input_is_one_line_exit_2(sets, key):
    r = parmbs_in_process("info", CONFIG, *[a for s in sets for a in ("--set", s)])   # (tests/cli_helpers.py)
    assert r.returncode == 2, r.stderr
    assert f"{CONFIG}: {key}" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_designing_material_of_a_reduced_body_is_refused():
    """Only the density field of a reduced body is differentiated through its reduction:
    designing E (or ρ0, t, geometry) is refused naming the key, not silently wrong."""
    from parmbs.sensitivity.design import DesignSpace
    data = crank(K=4)
    data.pop("optimize")
    data["design"] = [{"name": "E", "path": "continua.crank.E"}]
    cfg = validate(data, CONFIG)
    with pytest.raises(ModelError) as e:
        DesignSpace(System(cfg), cfg.design)
    assert e.value.key == "design" and "continua.crank.E" in e.value.message


def test_taylor_order_two(reduced):
    """|ψ(ρ + εd) − ψ(ρ) − ε ∇ψ·d| = O(ε²) along a random direction, through the
    eigenproblem re-solved at every ρ + εd (a wrong sensitivity leaves an O(ε) term)."""
    pr = reduced
    p0 = pr.sys.p.copy()
    rho = pr.design.values(p0)
    g = pr.adjoint(p0)["compliance"]
    psi0 = pr.objective_values(pr.traj, p0)["compliance"]
    d = np.random.default_rng(2).uniform(-1, 1, len(rho)) * rho
    res = []
    for e in (4e-3, 2e-3, 1e-3, 5e-4):
        p = pr.design.apply(p0, rho + e * d)
        res.append(abs(pr.objective_values(pr.forward(p), p)["compliance"] - psi0 - e * g @ d))
    pr.forward(p0)
    orders = np.log2(np.array(res[:-1]) / np.array(res[1:]))
    print("Taylor remainders", ", ".join(f"{r:.3e}" for r in res), "observed orders", orders)
    assert np.all(np.abs(orders - 2.0) < 0.15)


def _all_columns(data, monkeypatch):
    """The problem of ``data`` with every parameter column swept: its objectives say
    nothing about what they read (``Objective.params`` None), as a user integrand
    without ``reads``."""
    from parmbs.sensitivity.objectives import Objective
    with monkeypatch.context() as m:
        m.setattr(Objective, "params", lambda self, system: None)
        pr = problem(data)
    assert pr.design.nswept == pr.design.ncols
    pr.forward()
    return pr


@pytest.mark.parametrize("attachment", [False, True], ids=["eigenmodes", "attachment"])
def test_swept_columns_equal_all_columns(attachment, monkeypatch):
    """The sweeps in the columns the model reads (design.py ``read_by``: the reduced
    densities dropped, ``expand`` once) give the all-column sweeps' ψ and gradients bit
    for bit — adjoint and direct, the same sums in the same order, the dropped columns' +0."""
    pr = problem(crank(K=6, attachment=attachment))
    d = pr.design
    assert d.nswept == d.ncols - len(d) and pr.stepper.nd == d.nswept    # every density dropped
    assert np.all(d.sweep_map[d.index] == -1)
    pr.forward()
    ref = _all_columns(crank(K=6, attachment=attachment), monkeypatch)
    assert pr.traj.q.tobytes() == ref.traj.q.tobytes()
    for method in ("_adjoint_columns", "_direct_columns"):
        g = getattr(pr, method)(pr.sys.p)["compliance"]
        g_all = getattr(ref, method)(ref.sys.p)["compliance"]
        assert g.shape == (d.ncols,) and g.tobytes() == g_all.tobytes(), method
        assert not np.any(g[:len(d)]) and not np.any(np.signbit(g[:len(d)]))    # +0 in the densities


def test_an_objective_that_reads_the_densities_keeps_them_swept(monkeypatch):
    """An objective that declares the densities among what it reads keeps their columns
    in the sweeps (its ∂g/∂ρ enters the gradient: here the integrand's partials plus ρ
    itself, equal to the all-column sweep's); a user integrand whose "p" partial is
    nonzero outside its declared ``reads`` is refused (its columns may not be swept)."""
    from parmbs.sensitivity.objectives import UserTerm
    from parmbs.flexible import continuum_objectives as co
    dens = problem(crank(K=6)).design.index
    energy = co.strain_energy

    def reading(t, q, v, a, lam, p, model):
        value, parts = energy(t, q, v, a, lam, p, model)
        gp = np.zeros(len(p))
        gp[reads(model)] = parts["p"]
        gp[dens] += p[dens]
        return value + 0.5 * np.sum(p[dens] ** 2), {"q": parts["q"], "p": gp}
    reads = co.strain_energy.reads
    monkeypatch.setattr(co, "strain_energy", reading)
    monkeypatch.setattr(reading, "reads", lambda model: np.r_[reads(model), dens], raising=False)
    pr = problem(crank(K=6))
    assert pr.design.nswept == pr.design.ncols
    pr.forward()
    g = pr._adjoint_columns(pr.sys.p)["compliance"]
    ref = _all_columns(crank(K=6), monkeypatch)
    assert g.tobytes() == ref._adjoint_columns(ref.sys.p)["compliance"].tobytes() and np.all(g[:len(dens)] != 0)

    monkeypatch.setattr(reading, "reads", reads)              # the densities left out: refused
    pr = problem(crank(K=6))
    pr.forward()
    with pytest.raises(ModelError, match="declared reads leave out"):
        pr._adjoint_columns(pr.sys.p)
    assert isinstance(pr.objectives[0].integrand, UserTerm)


def test_sensitivity_history_over_the_swept_columns():
    """``parmbs gradient --history`` on a reduced body (sensitivity/history.py): the
    sweeps hand ``on_step`` the swept columns, the history expands and chains them.
    Direct: G(t_N) = ∇ψ; adjoint: G(t₀) + initial_term = ∇ψ — the same gradient chained
    by J (dense) instead of ``chain`` (vjp), so to round-off: 1e-10 of max |∇ψ|
    (~nd·N = 268·10 terms of relative error ε ≈ 1e-16 each, ≈ 3e-13); adjoint = direct
    within the 1e-9 of test_gradient_adjoint_direct_fd's estimate (here 1e-9)."""
    from parmbs.sensitivity import history as H
    pr = problem(crank(K=6, attachment=True))
    assert pr.design.nswept < pr.design.ncols
    pr.forward()
    hd = H.History(pr, "direct")
    gd = pr.direct(on_step=hd)
    hd.finish(gd)
    ha = H.History(pr, "adjoint")
    ga = pr.adjoint(on_step=ha)
    ha.finish(ga)
    g = gd["compliance"]
    scale = np.max(np.abs(g))
    assert np.max(np.abs(hd.gradient[-1, 0] - g)) <= 1e-10 * scale
    assert np.max(np.abs(ha.gradient[0, 0] + ha.initial_term[0] - ga["compliance"])) <= 1e-10 * scale
    assert np.max(np.abs(ga["compliance"] - g)) <= 1e-9 * scale
    assert np.all(np.isfinite(hd.states["dq"])) and np.any(hd.states["dq"][-1] != 0)
