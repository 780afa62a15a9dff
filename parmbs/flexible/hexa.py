"""Tensor-product linear box elements (bilinear quad, trilinear hexahedron): shape
functions at the 2^d Gauss points and the unit-modulus linear-elastic stiffness.

One generator serves both dimensions.  Node k of the reference cube [−1, 1]^d sits at
ξ_k with signs counter-clockwise in (ξ, η) — ll, lr, ur, ul — and, in 3-D, that square
at ζ = −1 then at ζ = +1 (the usual hex8 numbering).  Gauss points: ξ_g = ξ_k/√3,
weights 1 (the 2-point rule per direction).  With this rule the element integrals of
products of two (bi/tri)linear functions — every mass-matrix and FFR body integral —
are exact (seed 003 Eq. 67–68; each direction is a cubic at most).

    N_k(ξ) = Π_d (1 + ξ_d ξ_kd) / 2^d,    ∂N_k/∂ξ_d = ξ_kd/2^d Π_{e≠d} (1 + ξ_e ξ_ke)

Stiffness (3-D): K̂ = Σ_g (hx hy hz/8) Bᵀ D B, E = 1, isotropic D (Lamé λ, μ),
engineering strains ε = (ε_xx, ε_yy, ε_zz, γ_yz, γ_xz, γ_xy) (Zienkiewicz–Taylor,
The FEM vol. 1, ch. 6).  Full 2×2×2 integration of the (trilinear) element: exact for
the undistorted box, and it reproduces constant strain exactly (the patch test).
"""
import numpy as np


def box(dim):
    """(ξ_k (2^d, d), ξ_g (2^d, d), N (g, k), dN/dξ (g, k, d)) of the d-linear element."""
    sq = np.array([[-1.0, -1.0], [1.0, -1.0], [1.0, 1.0], [-1.0, 1.0]])
    XI = sq if dim == 2 else np.vstack([np.hstack([sq, -np.ones((4, 1))]), np.hstack([sq, np.ones((4, 1))])])
    G = XI / np.sqrt(3.0)
    f = 1 + G[:, None, :] * XI[None, :, :]                          # (g, k, d): 1 + ξ_gd ξ_kd
    scale = 0.5 ** dim
    N = scale * np.prod(f, -1)
    DN = np.stack([scale * XI[None, :, d] * np.prod(np.delete(f, d, -1), -1) for d in range(dim)], -1)
    return XI, G, N, DN


XI3, G3, N3, DN3 = box(3)


def strain_matrix3(dN):
    """B (..., 6, 24) from physical shape-function gradients dN (..., 8, 3):
    ε = B u_e, u_e = (u_0x, u_0y, u_0z, u_1x, …)."""
    B = np.zeros(dN.shape[:-2] + (6, 24), dtype=dN.dtype)
    for i in range(3):
        B[..., i, i::3] = dN[..., i]
    B[..., 3, 1::3], B[..., 3, 2::3] = dN[..., 2], dN[..., 1]      # γ_yz
    B[..., 4, 0::3], B[..., 4, 2::3] = dN[..., 2], dN[..., 0]      # γ_xz
    B[..., 5, 0::3], B[..., 5, 1::3] = dN[..., 1], dN[..., 0]      # γ_xy
    return B


def elasticity3(nu):
    """Isotropic D (..., 6, 6) for E = 1: λ = ν/((1+ν)(1−2ν)), μ = 1/(2(1+ν))."""
    nu = np.asarray(nu)
    lam = nu / ((1.0 + nu) * (1.0 - 2.0 * nu))
    mu = 0.5 / (1.0 + nu)
    D = np.zeros(nu.shape + (6, 6), dtype=nu.dtype)
    D[..., :3, :3] = lam[..., None, None]
    for i in range(3):
        D[..., i, i] += 2.0 * mu
        D[..., 3 + i, 3 + i] = mu
    return D


def gauss_gradients3(hx, hy, hz):
    """∂N_k/∂X at the Gauss points of an hx × hy × hz box: (..., g, k, 3)."""
    s = np.stack(np.broadcast_arrays(2.0 / hx, 2.0 / hy, 2.0 / hz), -1)
    return DN3 * s[..., None, None, :]


#: K̂ of the few real geometries asked for again and again: a structured mesh's one shared
#: element is evaluated by every force, Jacobian and ∂r/∂p call of every step (6 calls a step
#: of tests/test_solid_damping's cantilever; 0.23 ms CPU each, 17 % of that run)
_UNIT3_CACHE = {}
_UNIT3_CACHE_MAX = 16


def unit_stiffness3(nu, hx, hy, hz):
    """K̂ (..., 24, 24) of an hx × hy × hz trilinear box with E = 1 (module docstring).
    Real arguments of at most 4 elements each come from a cache, read-only: the same
    array the computation below gave for those bytes (complex-step and per-element
    geometries are computed every time)."""
    args = [np.asarray(a) for a in (nu, hx, hy, hz)]
    if not all(a.dtype == np.float64 and a.size <= 4 for a in args):
        return _unit_stiffness3(nu, hx, hy, hz)
    key = tuple((a.shape, a.tobytes()) for a in args)
    K = _UNIT3_CACHE.get(key)
    if K is None:
        if len(_UNIT3_CACHE) >= _UNIT3_CACHE_MAX:
            _UNIT3_CACHE.clear()
        K = _unit_stiffness3(nu, hx, hy, hz)
        K.flags.writeable = False
        _UNIT3_CACHE[key] = K
    return K


def _unit_stiffness3(nu, hx, hy, hz):
    B = strain_matrix3(gauss_gradients3(hx, hy, hz))               # (..., g, 6, 24)
    D = elasticity3(nu)
    w = np.asarray(hx * hy * hz / 8.0)
    return w[..., None, None] * np.einsum("...gai,...ab,...gbj->...ij", B, D, B)
