"""Modally reduced hexahedral FFR solids (``spatial.solids.S.reduction``;
parmbs/flexible/modal_solid.py, modal_solid_components.py, solids_reduced.py):

* the reduced residual is the projection of the full-order one: at u = Vη, u̇ = Vη̇,
  ü = Vη̈ the frame rows equal the full-order solid's and the η rows equal Vᵀ r_u
  (inertia, gravity, elastic, stiffness damping), so K = n_f modes would be the
  full-order body;
* rigid-body motion exact: at η = η̇ = η̈ = 0 the frame rows are the Newton–Euler
  equations of the rigid box (m, first and second moments in closed form);
* the gradient of ∫U dt over the 20 element densities of the coarse reduced crank:
  adjoint = direct, = central differences, Taylor order 2;
* K-convergence toward the full-order ψ and ∇ψ (benchmarks/modal_solid.py has the table);
* bad input: one line naming file and key, exit 2.
"""
import numpy as np
import pytest

from parmbs.model.assembly import scatter_add
from gradient_checks import central_difference, cli_one_line_error, rel, taylor_orders
from test_continuum import random_density
from test_solid_model import CONFIG, crank_data, problem

REDUCTION = {"modes": 6, "attachment": True}


def reduced_crank(reduction=REDUCTION, t_end=0.2, dt=0.02):
    """The coarse crank of test_solid_model (20 elements at random densities, seed 5,
    E = 2 GPa), reduced, with the shipped file's stiffness damping β_K = 4e-5 s on both
    sides of every comparison (ReducedDamping against SolidDamping)."""
    data = crank_data(E=2e9, density=random_density(20, np.random.default_rng(5)).tolist())
    assert data["spatial"]["solids"][0]["stiffness_damping"] > 0
    if reduction is not None:
        data["spatial"]["solids"][0]["reduction"] = dict(reduction)
    data["simulation"].update(t_end=t_end, dt=dt)
    return problem(data)


def _residual(sys_, names, q, v, a):
    n, p = sys_.n, sys_.p
    qe, ve, ae = sys_.extend(q), sys_.extend(v), sys_.extend(a)
    r = np.zeros(n + 3)
    for g in sys_.forces:
        if type(g).__name__ in names:
            r += scatter_add(n + 3, g.qidx, g.r(0.0, qe[g.qidx], ve[g.qidx], ae[g.qidx], p[g.pidx]))
    return r[:n]


def test_reduced_residual_is_the_projected_full_order_residual():
    full, red = reduced_crank(None), reduced_crank()
    sf, sr = full.sys.solids.solids["crank"], red.sys.solids.solids["crank"]
    V = sr.reduction.state(red.sys.p)["V"]
    assert V.shape == (3 * sf.nfree, 6 + 3)            # 6 eigenmodes + 3 attachment modes at the pin
    rng = np.random.default_rng(3)
    o = sf.offset
    states = []
    for _ in range(3):                                  # q, v, a
        x = rng.uniform(-1, 1, 7 + V.shape[1])
        states.append(x)
    states[0][3:7] /= np.linalg.norm(states[0][3:7])
    states[0][7:] *= 1e-3
    xf, xr = [], []
    for x in states:
        f, r = np.zeros(full.sys.n), np.zeros(red.sys.n)
        f[o:o + 7] = r[o:o + 7] = x[:7]
        f[o + 7:o + 7 + V.shape[0]] = V @ x[7:]
        r[o + 7:o + 7 + V.shape[1]] = x[7:]
        xf.append(f)
        xr.append(r)
    for fn, rn in ((("SolidInertia",), ("ReducedSolidInertia",)), (("SolidGravity",), ("ReducedSolidGravity",)),
                   (("SolidElastic",), ("ReducedElastic",)), (("SolidDamping",), ("ReducedDamping",))):
        rf, rr = _residual(full.sys, fn, *xf), _residual(red.sys, rn, *xr)
        proj = np.concatenate([rf[o:o + 7], V.T @ rf[o + 7:o + 7 + V.shape[0]]])
        err = rel(rr[o:o + 7 + V.shape[1]], proj)
        print(f"{fn[0]}: reduced vs projected full order {err:.1e}")
        # the same sums regrouped (20 elements × 8 Gauss points, then Vᵀ over 180 rows):
        # round-off ≲ 1e3 ε ≈ 2e-13 relative to the largest entry
        assert err < 1e-12, (fn, err)


def test_rigid_motion_is_the_rigid_body():
    """At η = η̇ = η̈ = 0 and uniform density the frame rows are m R̈ + A(α̃ + ω̃²)S0 and
    2Gᵀ(S0 × b + J'α + ω × J'ω), J' = tr(J0)I − J0, with m, S0, J0 of the box in closed
    form (ρ V, m c, m(c cᵀ + diag(L²)/12))."""
    from parmbs.spatial.kinematics import G_matrix, rotation, skew
    data = crank_data(E=2e9, density=0.7, density_law="linear")
    data["spatial"]["solids"][0]["reduction"] = dict(REDUCTION)
    pr = problem(data)
    s = pr.sys.solids.solids["crank"]
    L, off = np.array(s.cfg.size), np.array(s.cfg.offset)
    m = 0.7 * s.cfg.rho0 * np.prod(L)
    c = off + L / 2
    J0 = m * (np.outer(c, c) + np.diag(L ** 2) / 12)
    rng = np.random.default_rng(4)
    q, v, a = (np.zeros(pr.sys.n) for _ in range(3))
    o = s.offset
    for x in (q, v, a):
        x[o:o + 7] = rng.uniform(-1, 1, 7)
    q[o + 3:o + 7] /= np.linalg.norm(q[o + 3:o + 7])
    r = _residual(pr.sys, ("ReducedSolidInertia",), q, v, a)[o:o + 7]
    e = q[o + 3:o + 7]
    A, G = rotation(e), G_matrix(e)
    w, al = 2 * G @ v[o + 3:o + 7], 2 * G @ a[o + 3:o + 7]
    b = A.T @ a[o:o + 3]
    Jp = np.trace(J0) * np.eye(3) - J0
    W = skew(al) + skew(w) @ skew(w)
    rR = A @ (m * b + W @ (m * c))
    rp = 2 * G.T @ (np.cross(m * c, b) + Jp @ al + np.cross(w, Jp @ w))
    err = rel(r, np.concatenate([rR, rp]))
    print(f"reduced frame rows vs rigid body: {err:.1e}")
    # element sums of 20 × 8 Gauss masses against the closed form: ≲ 1e3 ε
    assert err < 1e-12


# -- gradients over the density field ---------------------------------------------------------------

@pytest.fixture(scope="module")
def crank():
    pr = reduced_crank()
    pr.forward()
    return pr


def test_adjoint_matches_direct_and_finite_differences(crank):
    pr = crank
    assert len(pr.design) == 20
    g = pr.adjoint()["compliance"]
    gd = pr.direct()["compliance"]
    err_d = rel(gd, g)
    print(f"adjoint vs direct: {err_d:.2e}")
    # the same linear recursions and the same eigen-derivatives (Nelson forward vs its
    # adjoint, exact transposes): ≲ steps × κ × ε ≈ 10 × 1e4 × 1e-16
    assert err_d < 1e-9
    p0 = pr.sys.p.copy()
    rho = pr.design.values(p0)
    cols = np.random.default_rng(11).choice(len(rho), 4, replace=False)
    # central, h = 1e-4 ρ_j: truncation O(h²) ~ 1e-8 relative; Newton noise
    # ~ 1e-13 ψ / (2h) ≲ 1e-8 of max |g| (measured at h = 1e-3..1e-5: ≤ 1.4e-7 of |g_j|)
    fd = np.array([central_difference(pr, p0, rho, j, 1e-4 * rho[j], "compliance") for j in cols])
    pr.forward(p0)
    err_fd = np.max(np.abs(g[cols] - fd)) / np.max(np.abs(g))
    print(f"adjoint vs central FD on 4 entries: {err_fd:.2e}")
    assert err_fd < 1e-6


def test_taylor_order_two(crank):
    """|ψ(ρ + εd) − ψ(ρ) − ε ∇ψ·d| = O(ε²) along a random direction: the reduced body's
    data and their derivatives through the eigenproblem are consistent."""
    orders = taylor_orders(crank, "compliance")
    assert np.all(np.abs(orders - 2.0) < 0.15)


def test_k_convergence_toward_the_full_order_solid():
    """ψ and ∇ψ of the reduced crank (attachment modes at the pin) against the full-order
    solid as K grows, K = 2, 4, 8, 16 of 180 elastic coordinates, both damped (β_K = 4e-5 s).
    Measured: ∇ψ errors 1.3e-2, 1.2e-3, 1.7e-4, 1.0e-4 (falling); ψ errors 2.1e-3, 1.3e-5,
    9.1e-5, 6.4e-5 (a scalar of a Galerkin projection need not fall monotonically: its
    error can cross zero; undamped they were 1.3e-2, 1.2e-3, 2.4e-4, 1.1e-4 and 2.3e-3,
    4.9e-6, 6.6e-5, 3.7e-5).  Asserted: ∇ψ error falls with K and by > 10× from K = 2 to
    16; ψ error ≤ 1e-3 from K = 4 on and ∇ψ error ≤ 2e-3 from K = 8 on (≥ 10× above the
    measured)."""
    full = reduced_crank(None)
    full.forward()
    psi = full.objective_values(full.traj, full.sys.p)["compliance"]
    g = full.adjoint()["compliance"]
    e_psi, e_g = [], []
    for K in (2, 4, 8, 16):
        pr = reduced_crank({"modes": K, "attachment": True})
        pr.forward()
        e_psi.append(abs(pr.objective_values(pr.traj, pr.sys.p)["compliance"] - psi) / abs(psi))
        e_g.append(rel(pr.adjoint()["compliance"], g))
    print("K = 2, 4, 8, 16: psi errors", ", ".join(f"{e:.1e}" for e in e_psi),
          "; grad errors", ", ".join(f"{e:.1e}" for e in e_g))
    assert np.all(np.diff(e_g) < 0) and e_g[0] > 10 * e_g[-1]
    assert max(e_psi[1:]) < 1e-3 and max(e_g[2:]) < 2e-3


# -- input errors -----------------------------------------------------------------------------------

@pytest.mark.parametrize("value,key,word", [
    ('{modes=4, load="x.h5"}', "spatial.solids.crank.reduction.load", "planar"),
    ("{modes=100000}", "spatial.solids.crank.reduction.modes", "exceed"),
])
def test_bad_reduction_is_one_line_exit_2(value, key, word):
    import os
    cli_one_line_error(["info", CONFIG, "--set", f"spatial.solids.crank.reduction={value}"],
                       os.path.dirname(os.path.dirname(os.path.abspath(__file__))), f"{CONFIG}: {key}", word)
