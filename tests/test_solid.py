"""Hexahedral FFR solids (parmbs/flexible/hexa.py, solid.py): the element against
closed-form mechanics.

* K̂ has exactly the six rigid-body modes as null space (rank 18) and is symmetric;
* patch test: on a 3×3×3 mesh with boundary nodes displaced by a linear field
  u = H X + c, the solved interior nodes reproduce the field, and every element's
  Gauss-point strain is the constant sym(H);
* rigid-body motion: at u = 0 the summed element inertia of a meshed box, frame at its
  centre, equals the Euler-parameter rigid body's m R̈ and 2Gᵀ(J'ω̇' + ω' × J'ω')
  (spatial/bodies.py) with the box's closed-form mass and inertia, at a random
  state; the elastic rows of a rigidly moving body see no elastic force (u stays 0);
* power balance: vᵀ r_inertia = dT/dt along a motion on pᵀp = 1, pᵀṗ = 0 (the
  quadratic-velocity terms do no work; checks h_ω independently of the mass matrix).
Tolerances: every quantity is a sum of O(10²) terms of O(1), round-off ≈ 1e-14
relative; 1e-11 leaves a factor ≥ 100.
"""
import numpy as np

import parmbs  # noqa: F401  (numpy SIMD settings before numpy work)
from parmbs.flexible import hexa, solid
from parmbs.spatial.bodies import SpatialGyroscopic, SpatialInertia
from parmbs.spatial.kinematics import G_matrix, cross, mv, skew


def _mesh(nx, ny, nz, L):
    """Node positions (nnode, 3) and element nodes (nel, 8) of a box mesh (hexa numbering)."""
    h = np.asarray(L) / (nx, ny, nz)
    k = np.arange((nx + 1) * (ny + 1) * (nz + 1)).reshape(nz + 1, ny + 1, nx + 1)
    X = np.stack(np.meshgrid(np.arange(nx + 1), np.arange(ny + 1), np.arange(nz + 1), indexing="xy"), -1)
    X = X.transpose(2, 0, 1, 3).reshape(-1, 3) * h
    bot = np.stack([k[:-1, :-1, :-1], k[:-1, :-1, 1:], k[:-1, 1:, 1:], k[:-1, 1:, :-1]], -1)
    top = np.stack([k[1:, :-1, :-1], k[1:, :-1, 1:], k[1:, 1:, 1:], k[1:, 1:, :-1]], -1)
    return X, np.concatenate([bot, top], -1).reshape(-1, 8), h


def _rigid_modes(X):
    """The 6 infinitesimal rigid modes (3 translations, 3 rotations) of nodes X: (n·3, 6)."""
    T = [np.tile(e, len(X)) for e in np.eye(3)]
    R = [np.cross(np.broadcast_to(e, X.shape), X).ravel() for e in np.eye(3)]
    return np.stack(T + R, -1)


def test_stiffness_null_space_is_the_rigid_modes():
    K = hexa.unit_stiffness3(0.3, 0.4, 0.7, 1.1)
    X, el, _ = _mesh(1, 1, 1, (0.4, 0.7, 1.1))
    X = X[el[0]]                                                      # element node order
    assert np.allclose(K, K.T, atol=1e-14 * np.abs(K).max())
    assert np.abs(K @ _rigid_modes(X - 0.3)).max() < 1e-13 * np.abs(K).max()
    ev = np.linalg.eigvalsh(K)
    assert np.all(np.abs(ev[:6]) < 1e-12 * ev[-1]) and ev[6] > 1e-3 * ev[-1]


def test_patch_linear_field_exact():
    L = (0.9, 0.6, 1.2)
    X, el, h = _mesh(3, 3, 3, L)
    Ke = hexa.unit_stiffness3(0.3, *h)
    n = 3 * len(X)
    K = np.zeros((n, n))
    dofs = (3 * el[:, :, None] + np.arange(3)).reshape(-1, 24)
    for d in dofs:
        K[np.ix_(d, d)] += Ke
    rng = np.random.default_rng(1)
    H, c = rng.uniform(-1e-3, 1e-3, (3, 3)), rng.uniform(-1e-3, 1e-3, 3)
    exact = (X @ H.T + c).ravel()
    inner = np.all((X > 1e-9) & (X < np.array(L) - 1e-9), 1)
    free = np.repeat(inner, 3)
    assert inner.sum() == 8
    u = exact.copy()
    u[free] = np.linalg.solve(K[np.ix_(free, free)], -K[np.ix_(free, ~free)] @ exact[~free])
    assert np.abs(u - exact).max() < 1e-12 * np.abs(exact).max()
    B = hexa.strain_matrix3(hexa.gauss_gradients3(*h))               # (g, 6, 24)
    eps = np.einsum("gai,ei->ega", B, u[dofs])
    S = 0.5 * (H + H.T)
    want = np.array([S[0, 0], S[1, 1], S[2, 2], 2 * S[1, 2], 2 * S[0, 2], 2 * S[0, 1]])
    assert np.abs(eps - want).max() < 1e-11 * np.abs(want).max()


def _elements(nx, ny, nz, L, rho0=7.0, x=0.7, law="linear"):
    """SolidInertia parameters of every element of a box centred on the frame origin."""
    nel = nx * ny * nz
    k, r = np.divmod(np.arange(nel), nx * ny)
    j, i = np.divmod(r, nx)
    p = np.zeros((nel, 14))
    p[:, 0], p[:, 1] = x, rho0
    p[:, 2:5], p[:, 5:8] = L, (nx, ny, nz)
    p[:, 8:11] = -0.5 * np.asarray(L)
    p[:, 11:14] = np.stack([i / nx, j / ny, k / nz], -1)
    return solid.SolidInertia([f"e{e}" for e in range(nel)], np.zeros((nel, 31)), np.zeros((nel, 14)), law=law), p


def _state(rng):
    e = rng.normal(size=4)
    e /= np.linalg.norm(e)
    w = rng.normal(size=3)
    ed = 0.5 * G_matrix(e).T @ w                                       # ṗ = ½ Gᵀω', pᵀṗ = 0
    q = np.concatenate([rng.normal(size=3), e, np.zeros(24)])
    v = np.concatenate([rng.normal(size=3), ed, np.zeros(24)])
    a = np.concatenate([rng.normal(size=3), rng.normal(size=4), np.zeros(24)])
    return q, v, a


def test_rigid_motion_equals_rigid_body():
    L = np.array([0.8, 0.3, 0.2])
    comp, p = _elements(4, 2, 2, L)
    rng = np.random.default_rng(4)
    q, v, a = _state(rng)
    r = comp.r(0.0, q, v, a, p).sum(0)
    m = 0.7 * 7.0 * L.prod()
    J = m / 12.0 * np.array([L[1] ** 2 + L[2] ** 2, L[0] ** 2 + L[2] ** 2, L[0] ** 2 + L[1] ** 2])
    pr = np.concatenate([[m], J, [0, 0, 0]])
    rigid = SpatialInertia(["b"], np.zeros((1, 7)), np.zeros((1, 7))).r(0.0, q[:7], v[:7], a[:7], pr)
    rigid[3:7] += SpatialGyroscopic(["b"], np.zeros((1, 4)), np.zeros((1, 6))).r(0.0, q[3:7], v[3:7], a[3:7], pr[1:7])
    assert np.abs(r[:7] - rigid).max() < 1e-11 * np.abs(rigid).max()
    # and the mass matrix's frame block is the rigid body's
    M = comp.r_a(0.0, q, v, a, p).sum(0)
    Mr = SpatialInertia(["b"], np.zeros((1, 7)), np.zeros((1, 7))).r_a(0.0, q[:7], v[:7], a[:7], pr)
    assert np.abs(M[:7, :7] - Mr).max() < 1e-11 * np.abs(Mr).max()


def test_power_balance():
    """d/dt T(q(τ), q̇(τ)) = q̇ᵀ r along q(τ) = q + v τ + a τ²/2 with elastic motion too
    (complex step in τ: exact to round-off)."""
    comp, p = _elements(2, 2, 1, np.array([0.5, 0.4, 0.3]), law="seed003", x=0.05)
    rng = np.random.default_rng(9)
    q, v, a = _state(rng)
    q[7:], v[7:], a[7:] = rng.normal(size=(3, 24)) * 0.01
    e, ed = q[3:7], v[3:7]
    a[3:7] -= e * (e @ a[3:7] + ed @ ed)                               # pᵀp̈ = −ṗᵀṗ (on the sphere)
    h = 1e-30
    T = comp.energy(0.0, q + 1j * h * v, v + 1j * h * a, p).sum()
    dT = T.imag / h
    P = v @ comp.r(0.0, q, v, a, p).sum(0)
    assert abs(dT - P) < 1e-11 * max(abs(dT), 1.0), (dT, P)
