"""Floating-frame plane-stress continua (parmbs/flexible/continuum.py, continua.py):
element stiffness and mass against independent checks, and the gradient of ∫U dt
over every element density of a coarse topopt-crank (adjoint = direct, central
differences of random entries, Taylor test)."""
import copy
import tomllib

import numpy as np
import pytest

from parmbs.config.loader import validate
from parmbs.flexible.continuum import ContinuumInertia, unit_stiffness
from parmbs.model.system import System, ModelError
from parmbs.sensitivity.problem import Problem
from gradient_checks import central_difference, taylor_orders

CONFIG = "configs/topopt-crank.toml"


def crank_data(nx=10, ny=2, **cont):
    """The shipped topopt-crank on a coarse mesh: pin at node [0.9 nx, ny/2], a
    clamp radius that catches the origin node and its two x-neighbours (10 × 2)."""
    with open(CONFIG, "rb") as f:
        data = tomllib.load(f)
    c = data["continua"][0]
    c.update(nx=nx, ny=ny, clamp_radius=0.026, points={"pin": [9 * nx // 10, ny // 2]})
    c.update(cont)
    return data


def problem(data):
    return Problem(validate(copy.deepcopy(data), CONFIG))


# -- element checks ---------------------------------------------------------------------------------

def assemble_stiffness(nx, ny, Lx, Ly, nu, t):
    """K of an nx × ny structured mesh, nodes k = j(nx+1)+i, dofs (u_x, u_y) per node
    (an assembly written here, independent of continua.py)."""
    K1 = unit_stiffness(np.array(nu), np.array(t), np.array(Lx / nx), np.array(Ly / ny))
    N = (nx + 1) * (ny + 1)
    K = np.zeros((2 * N, 2 * N))
    for j in range(ny):
        for i in range(nx):
            nodes = [j * (nx + 1) + i, j * (nx + 1) + i + 1, (j + 1) * (nx + 1) + i + 1, (j + 1) * (nx + 1) + i]
            d = np.ravel([[2 * k, 2 * k + 1] for k in nodes])
            K[np.ix_(d, d)] += K1
    X = np.stack(np.meshgrid(np.linspace(0, Lx, nx + 1), np.linspace(0, Ly, ny + 1)), -1).reshape(-1, 2)
    return K, X


def test_rigid_modes_and_patch():
    """Rigid-body modes carry no strain energy; a linear displacement field (uniform
    strain) leaves interior nodes force-free and loads an edge with σ·n·t·length."""
    nu, t, E = 0.3, 0.01, 1.0
    K, X = assemble_stiffness(4, 3, 0.5, 0.2, nu, t)
    for mode in (np.c_[np.ones(len(X)), np.zeros(len(X))], np.c_[np.zeros(len(X)), np.ones(len(X))],
                 np.c_[-X[:, 1], X[:, 0]]):
        u = mode.ravel()
        assert np.max(np.abs(K @ u)) < 1e-12 * np.max(np.abs(K))
    rng = np.random.default_rng(1)
    eps = rng.uniform(-1e-3, 1e-3, 3)                       # ε_xx, ε_yy, γ_xy
    u = np.c_[eps[0] * X[:, 0] + eps[2] * X[:, 1], eps[1] * X[:, 1]].ravel()
    f = (K @ u).reshape(-1, 2)
    inner = (X[:, 0] > 0) & (X[:, 0] < 0.5) & (X[:, 1] > 0) & (X[:, 1] < 0.2)
    assert np.max(np.abs(f[inner])) < 1e-12
    sig = E / (1 - nu ** 2) * np.array([eps[0] + nu * eps[1], eps[1] + nu * eps[0], 0.5 * (1 - nu) * eps[2]])
    right = np.isclose(X[:, 0], 0.5)
    np.testing.assert_allclose(f[right].sum(0), [sig[0] * 0.2 * t, sig[2] * 0.2 * t], rtol=1e-10)
    energy = 0.5 * u @ K @ u
    np.testing.assert_allclose(energy, 0.5 * (sig[0] * eps[0] + sig[1] * eps[1] + sig[2] * eps[2]) * 0.5 * 0.2 * t,
                               rtol=1e-10)


def test_cantilever_tip_deflection_converges_to_beam_theory():
    """Clamped left edge, tip shear load P: δ → P L³/(3EI) + P L/(κ G A) (Timoshenko,
    κ = 5/6) under mesh refinement.  Full-integration bilinear quads are stiff in
    bending (parasitic shear), so the error must fall with refinement and end small."""
    L, h, t, E, nu, P = 1.0, 0.1, 0.01, 2e11, 0.3, 100.0
    I, A, G = t * h ** 3 / 12, t * h, E / (2 * (1 + nu))
    exact = P * L ** 3 / (3 * E * I) + P * L / (5 / 6 * G * A)
    errs = []
    for nx, ny in ((20, 2), (40, 4), (80, 8)):
        K, X = assemble_stiffness(nx, ny, L, h, nu, t)
        K *= E
        free = np.repeat(~np.isclose(X[:, 0], 0.0), 2)
        f = np.zeros(len(K))
        tip = np.nonzero(np.isclose(X[:, 0], L))[0]
        w = np.full(len(tip), 1.0 / ny)
        w[[0, -1]] *= 0.5                                  # consistent edge load for a uniform shear
        f[2 * tip + 1] = P * w
        u = np.zeros(len(K))
        u[free] = np.linalg.solve(K[np.ix_(free, free)], f[free])
        errs.append(abs(np.mean(u[2 * tip + 1]) - exact) / exact)
    print("cantilever relative errors (20x2, 40x4, 80x8):", ", ".join(f"{e:.3e}" for e in errs))
    assert errs[0] > errs[1] > errs[2]
    assert errs[2] < 0.05


def test_frame_mass_matrix_is_the_rigid_rectangle():
    """At u = 0 the frame block of Σ_e M_e is the rigid rectangle's: m, m·J·c and
    I_O = ∫ρ|X|² dA about the frame origin; the centrifugal load at θ̇ = ω is −ω² m A c."""
    data = crank_data(nx=10, ny=4, density=1.0)
    sys_ = System(validate(copy.deepcopy(data), CONFIG))
    c = data["continua"][0]
    (Lx, Ly), (x0, y0) = c["size"], c["offset"]
    m = c["rho0"] * c["thickness"] * Lx * Ly
    cx, cy = x0 + Lx / 2, y0 + Ly / 2
    IO = m * ((Lx ** 2 + Ly ** 2) / 12 + cx ** 2 + cy ** 2)
    g = next(g for g in sys_.forces if type(g) is ContinuumInertia)
    th = 0.7
    q = np.zeros((g.ne, 11))
    q[:, 2] = th
    v = np.zeros_like(q)
    p = sys_.p[g.pidx]
    M = g.r_a(0.0, q, v, v, p).sum(0)[:3, :3]
    A = np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]])
    np.testing.assert_allclose(M[:2, :2], m * np.eye(2), rtol=1e-12)
    np.testing.assert_allclose(M[:2, 2], m * A @ np.array([-cy, cx]), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(M[2, 2], IO, rtol=1e-12)
    v[:, 2] = 3.0
    r = g.r(0.0, q, v, np.zeros_like(q), p).sum(0)
    np.testing.assert_allclose(r[:2], -9.0 * m * A @ np.array([cx, cy]), rtol=1e-12)
    assert abs(r[2]) < 1e-12 * m


def test_structured_inertia_jacobians_equal_the_textbook_products():
    """The block-by-block Jacobians of ContinuumInertia equal c Σ_g L̄_gᵀ D_g (the FD
    check of every block is tests/test_components.py)."""
    rng = np.random.default_rng(4)
    g = ContinuumInertia([f"e{k}" for k in range(6)], np.zeros((6, 11)), np.zeros((6, 11)))
    q, v, a = (rng.uniform(-1, 1, (6, 11)) for _ in range(3))
    p = rng.uniform(0.5, 1.5, (6, 11))
    for fast, ref in zip(g.jacobians(0.0, q, v, a, p), g._jacobians_generic(0.0, q, v, a, p)):
        np.testing.assert_allclose(fast, ref, rtol=1e-13, atol=1e-13 * np.max(np.abs(ref)))


def test_reference_condition_needs_two_clamped_nodes():
    data = crank_data(clamp_radius=0.001)
    with pytest.raises(ModelError, match="clamp_radius"):
        System(validate(copy.deepcopy(data), CONFIG))


def test_shipped_config_has_1e5_elements():
    with open(CONFIG, "rb") as f:
        cfg = validate(tomllib.load(f), CONFIG)
    c = cfg.continua[0]
    assert c.nx * c.ny >= 100_000
    assert cfg.design[0].path == "continua.crank.density"


# -- gradients over the density field -------------------------------------------------------------------

def random_density(n, rng):
    """Densities in [0.02, 1], away from the seed-003 law's kink at 0.1."""
    x = rng.uniform(0.02, 1.0, n)
    return np.where(np.abs(x - 0.1) < 0.02, x + 0.05, x)


def coarse_density_run(crank_data, problem):
    """The density-gradient tests' problem, run forward: a coarse crank's 20 elements at
    random densities (seed 5), E = 2 GPa, 10 steps of 0.02 s (also tests/test_solid_model.py)."""
    data = crank_data(E=2e9, density=random_density(20, np.random.default_rng(5)).tolist())
    data["simulation"].update(t_end=0.2, dt=0.02)
    pr = problem(data)
    pr.forward()
    return pr


@pytest.fixture(scope="module")
def coarse_crank():
    return coarse_density_run(crank_data, problem)


def test_adjoint_matches_direct_and_finite_differences(coarse_crank):
    pr = coarse_crank
    assert len(pr.design) == 20
    g = pr.adjoint()["compliance"]
    gd = pr.direct()["compliance"]
    err_d = np.max(np.abs(g - gd)) / np.max(np.abs(g))
    print(f"adjoint vs direct: {err_d:.2e}")
    assert err_d < 1e-9
    rng = np.random.default_rng(11)
    cols = rng.choice(len(pr.design), 10, replace=False)
    p0 = pr.sys.p.copy()
    rho = pr.design.values(p0)
    # central, h = 1e-4 ρ_j: O(h²) truncation ≪ 1e-6
    fd = [central_difference(pr, p0, rho, j, 1e-4 * rho[j], "compliance") for j in cols]
    pr.forward(p0)
    err_fd = np.max(np.abs(g[cols] - fd) / np.abs(g[cols]))
    print(f"adjoint vs central FD on 10 entries: {err_fd:.2e}")
    assert err_fd < 1e-6


def test_taylor_order_two(coarse_crank):
    """|ψ(ρ + εd) − ψ(ρ) − ε ∇ψ·d| = O(ε²) along a random direction."""
    orders = taylor_orders(coarse_crank, "compliance")
    assert np.all(np.abs(orders - 2.0) < 0.15)


def test_linear_density_law_gradient():
    """The linear law: adjoint = direct on a short run (the law is the only change)."""
    rng = np.random.default_rng(8)
    data = crank_data(E=2e9, density_law="linear", density=random_density(20, rng).tolist())
    data["simulation"].update(t_end=0.1, dt=0.02)
    pr = problem(data)
    pr.forward()
    g, gd = pr.adjoint()["compliance"], pr.direct()["compliance"]
    assert np.max(np.abs(g - gd)) / np.max(np.abs(g)) < 1e-9


def test_gravity_and_scalar_parameters():
    """With gravity (ContinuumGravity) and scalar design variables (gravity, material
    density, thickness): adjoint = direct, and central differences agree."""
    data = crank_data(E=2e9)
    data["model"]["gravity"] = [0.0, -9.81]
    data["design"] = [{"name": "gy", "path": "model.gravity.y"}, {"name": "rho", "path": "continua.crank.rho0"},
                      {"name": "t", "path": "continua.crank.thickness"}]
    data.pop("optimize")          # its volume constraint names the density field replaced here
    data["simulation"].update(t_end=0.1, dt=0.02)
    pr = problem(data)
    assert any(type(g).__name__ == "ContinuumGravity" for g in pr.sys.forces)
    pr.forward()
    g, gd = pr.adjoint()["compliance"], pr.direct()["compliance"]
    assert np.max(np.abs(g - gd) / np.abs(g)) < 1e-9
    p0, rho = pr.sys.p.copy(), pr.design.values(pr.sys.p)
    for j in range(3):
        h = 1e-4 * abs(rho[j])
        vals = []
        for s in (1, -1):
            r = rho.copy()
            r[j] += s * h
            p = pr.design.apply(p0, r)
            vals.append(pr.objective_values(pr.forward(p), p)["compliance"])
        assert abs((vals[0] - vals[1]) / (2 * h) - g[j]) < 1e-6 * abs(g[j])


@pytest.mark.parametrize("sets,key", [
    (["continua.crank.clamp_radius=0.0001"], "continua.crank.clamp_radius"),
    (["continua.crank.points.pin=[600, 10]"], "continua.crank"),
    (["joints.guide.a=crank.origin"], "joints.guide.type"),
])
def test_bad_continuum_input_is_one_line_exit_2(sets, key):
    from cli_helpers import parmbs_in_process        # (cli.main in this process: tests/cli_helpers.py)
    r = parmbs_in_process("info", CONFIG, *[a for s in sets for a in ("--set", s)])
    assert r.returncode == 2, r.stderr
    assert f"{CONFIG}: {key}:" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_genalpha_with_gravity_adjoint_equals_direct():
    """Generalized-α weights the continuum inertia (α_m) and its elastic force and weight
    (α_f) differently: the adjoint still equals the direct gradient."""
    data = crank_data(E=2e9, density=random_density(20, np.random.default_rng(5)).tolist())
    data["model"]["gravity"] = [0.0, -9.81]
    data["simulation"].update(t_end=0.1, dt=0.02, integrator="genalpha", rho_inf=0.8)
    pr = problem(data)
    pr.forward()
    g, gd = pr.adjoint()["compliance"], pr.direct()["compliance"]
    assert np.max(np.abs(g - gd)) / np.max(np.abs(g)) < 1e-9
