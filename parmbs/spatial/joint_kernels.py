"""Analytic Φ, Φ_q and constraint Hessian ∂(Φ_qᵀλ)/∂q of the spatial joints (joints.py),
all primitives of one joint kind batched, from one geometry evaluation per iterate.

Why: the default Hessian of ``model/component.py`` is a complex-step derivative of
Φ_qᵀλ over the 14 local coordinates — 14 complex passes through Φ_q per Newton
iteration; on the Iltis it was a third of the forward time.  Here every block is a
contraction with one constant tensor, exact (the same numbers to round-off).

Euler-parameter algebra (kinematics.py, Nikravesh 1988 ch. 6): A(p) = B(p, p) with B
symmetric bilinear, so for a body-fixed vector s'

    A(p) s' = ½ J(p, s') p,      J(p, s')_{ik} = Σ_j p_j C_{jik}(s') = ∂(A s')_i/∂p_k,
    C_{jik}(s') = (2 B(e_j, e_k) s')_i = Σ_m T_{jikm} s'_m     (T constant, 4×3×4×3),

J is linear in p and the Hessian of cᵀA(p)s' is the constant matrix

    K(c, s')_{jk} = Σ_i c_i C_{jik}(s')      (independent of p).

Joint primitives (joints.py docstring; sides a, b with q = (r_a, p_a, r_b, p_b),
P = r + A s' the joint points, d = P_b − P_a):

* spherical Φ = P_a − P_b:  Φ_q = [I, J_a(s_a), −I, −J_b(s_b)];
  ∂(Φ_qᵀλ)/∂q: (p_a,p_a) K(λ, s_a), (p_b,p_b) −K(λ, s_b).
* dot-1 Φ = aᵀb, a = A_a u', b = A_b w':  Φ_q = [0, bᵀJ_a(u), 0, aᵀJ_b(w)];
  λ·Hessian: (p_a,p_a) λK(b, u), (p_b,p_b) λK(a, w), (p_a,p_b) λJ_a(u)ᵀJ_b(w).
* dot-2 Φ = nᵀd, n = A_a u':  Φ_q = [−nᵀ, dᵀJ_a(u) − nᵀJ_a(s_a), nᵀ, nᵀJ_b(s_b)];
  λ·Hessian: (r_a,p_a) −λJ_a(u), (r_b,p_a) λJ_a(u),
  (p_a,p_a) λ[K(d, u) − K(n, s_a) − J_a(u)ᵀJ_a(s_a) − J_a(s_a)ᵀJ_a(u)],
  (p_a,p_b) λJ_a(u)ᵀJ_b(s_b), (p_b,p_b) λK(n, s_b)  (and the transposes).

Ground sides (mask g): p = q[3:7] + g e₀, ∂p/∂q = I, so the formulas hold unchanged.
Everything broadcasts over leading axes and is complex-step safe (the parameter
derivatives ∂/∂p complex-step through Φ and Φ_q).
"""
import numpy as np

from .kinematics import E0, bilinear

#: T_{jikm} = (2 B(e_j, e_k))_{im}
_T = np.zeros((4, 3, 4, 3))
for _j in range(4):
    for _k in range(4):
        _T[_j, :, _k, :] = 2.0 * bilinear(np.eye(4)[_j], np.eye(4)[_k])
#: T as a (3, 48) matrix: C(s) = s @ _TM reshaped (..., 4, 3, 4)
_TM = np.ascontiguousarray(_T.transpose(3, 0, 1, 2).reshape(3, 48))


def c_tensor(s):
    """C(s') (..., 4, 3, 4) for vectors s' (..., 3) (module docstring)."""
    return (s @ _TM).reshape(s.shape[:-1] + (4, 3, 4))


def j_of(p, C):
    """J(p, s') (..., 3, 4) from p (..., 4) and C(s') (..., 4, 3, 4)."""
    out = p[..., None, :] @ C.reshape(C.shape[:-3] + (4, 12))
    return out.reshape(out.shape[:-2] + (3, 4))


def k_of(c, C):
    """K(c, s') (..., 4, 4) = Σ_i c_i C_{jik}(s')."""
    return np.einsum("...i,...jik->...jk", c, C)


class JointGeometry:
    """Every side quantity of a joint group at (q, p): poses, and for the side vectors
    S = (s'_a, s'_b, vectors…) their C tensors, J on both sides and A S on both sides."""

    def __init__(self, q, p, nvec):
        self.ra, self.rb = q[..., 0:3], q[..., 7:10]
        self.pa = q[..., 3:7] + p[..., 3:4] * E0
        self.pb = q[..., 10:14] + p[..., 7:8] * E0
        lead = np.broadcast_shapes(q.shape[:-1], p.shape[:-1])
        S = np.concatenate([p[..., 0:3, None].swapaxes(-1, -2), p[..., 4:7, None].swapaxes(-1, -2),
                            p[..., 8:8 + 3 * nvec].reshape(p.shape[:-1] + (nvec, 3))], -2)
        self.C = np.broadcast_to(c_tensor(S), lead + S.shape[-2:-1] + (4, 3, 4))
        self.Ja = j_of(self.pa[..., None, :], self.C)          # (..., nS, 3, 4)
        self.Jb = j_of(self.pb[..., None, :], self.C)
        self.Aa = 0.5 * (self.Ja @ self.pa[..., None, :, None])[..., 0]     # (..., nS, 3): A_a S
        self.Ab = 0.5 * (self.Jb @ self.pb[..., None, :, None])[..., 0]
        self.Pa = self.ra + self.Aa[..., 0, :]
        self.Pb = self.rb + self.Ab[..., 1, :]
        self.d = self.Pb - self.Pa


class JointKernel:
    """The batched primitives of one joint kind: ``prims`` as in joints._SpatialJoint
    (("sph",), ("dot1", i, j), ("dot2", i)), rows in that order."""

    def __init__(self, prims, nvec):
        self.nvec = nvec
        row, self.sph, d1, d2 = 0, None, [], []
        for pr in prims:
            if pr[0] == "sph":
                self.sph = np.arange(row, row + 3)
                row += 3
            elif pr[0] == "dot1":
                d1.append((row, 2 + pr[1], 2 + pr[2]))
                row += 1
            else:
                d2.append((row, 2 + pr[1]))
                row += 1
        self.m = row
        self.d1 = tuple(np.array(x, np.int64) for x in zip(*d1)) if d1 else None
        self.d2 = tuple(np.array(x, np.int64) for x in zip(*d2)) if d2 else None

    def geometry(self, q, p):
        return JointGeometry(q, p, self.nvec)

    # -- Φ -----------------------------------------------------------------------------
    def phi(self, G):
        out = np.empty(G.d.shape[:-1] + (self.m,), G.d.dtype)
        if self.sph is not None:
            out[..., self.sph] = -G.d
        if self.d1 is not None:
            rows, i, j = self.d1
            out[..., rows] = np.sum(G.Aa[..., i, :] * G.Ab[..., j, :], -1)
        if self.d2 is not None:
            rows, i = self.d2
            out[..., rows] = np.sum(G.Aa[..., i, :] * G.d[..., None, :], -1)
        return out

    # -- Φ_q -----------------------------------------------------------------------------
    def phi_q(self, G):
        out = np.zeros(G.d.shape[:-1] + (self.m, 14), G.Ja.dtype)
        if self.sph is not None:
            r = self.sph
            out[..., r, 0:3] = np.eye(3)
            out[..., r, 3:7] = G.Ja[..., 0, :, :]
            out[..., r, 7:10] = -np.eye(3)
            out[..., r, 10:14] = -G.Jb[..., 1, :, :]
        if self.d1 is not None:
            rows, i, j = self.d1
            a, b = G.Aa[..., i, :], G.Ab[..., j, :]               # (..., r, 3)
            out[..., rows, 3:7] = (b[..., None, :] @ G.Ja[..., i, :, :])[..., 0, :]
            out[..., rows, 10:14] = (a[..., None, :] @ G.Jb[..., j, :, :])[..., 0, :]
        if self.d2 is not None:
            rows, i = self.d2
            n = G.Aa[..., i, :]
            out[..., rows, 0:3] = -n
            out[..., rows, 7:10] = n
            out[..., rows, 3:7] = ((G.d[..., None, None, :] @ G.Ja[..., i, :, :])[..., 0, :]
                                   - (n[..., None, :] @ G.Ja[..., 0:1, :, :])[..., 0, :])
            out[..., rows, 10:14] = (n[..., None, :] @ G.Jb[..., 1:2, :, :])[..., 0, :]
        return out

    # -- ∂(Φ_qᵀλ)/∂q ---------------------------------------------------------------------
    def hess_lam(self, G, lam):
        lead = np.broadcast_shapes(G.d.shape[:-1], lam.shape[:-1])
        H = np.zeros(lead + (14, 14), np.result_type(G.Ja, lam))
        Haa = H[..., 3:7, 3:7]
        Hbb = H[..., 10:14, 10:14]
        Hab = np.zeros(lead + (4, 4), H.dtype)
        if self.sph is not None:
            ls = lam[..., self.sph]
            Haa += k_of(ls, G.C[..., 0, :, :, :])
            Hbb -= k_of(ls, G.C[..., 1, :, :, :])
        if self.d1 is not None:
            rows, i, j = self.d1
            lr = lam[..., rows, None]                                 # (..., r, 1)
            a, b = G.Aa[..., i, :], G.Ab[..., j, :]
            Haa += np.einsum("...ri,...rjik->...jk", lr * b, G.C[..., i, :, :, :])
            Hbb += np.einsum("...ri,...rjik->...jk", lr * a, G.C[..., j, :, :, :])
            Hab += np.einsum("...rik,...ril->...kl", lr[..., None] * G.Ja[..., i, :, :], G.Jb[..., j, :, :])
        if self.d2 is not None:
            rows, i = self.d2
            lr = lam[..., rows, None]
            n = G.Aa[..., i, :]
            Lu = np.sum(lr[..., None] * G.Ja[..., i, :, :], -3)        # Σ λ_r J_a(u_r)  (..., 3, 4)
            mn = np.sum(lr * n, -2)                                   # Σ λ_r n_r       (..., 3)
            Jas, Jbs = G.Ja[..., 0, :, :], G.Jb[..., 1, :, :]
            H[..., 0:3, 3:7] -= Lu
            H[..., 7:10, 3:7] += Lu
            H[..., 3:7, 0:3] -= np.swapaxes(Lu, -1, -2)
            H[..., 3:7, 7:10] += np.swapaxes(Lu, -1, -2)
            X = np.swapaxes(Lu, -1, -2) @ Jas
            Haa += (np.einsum("...ri,...rjik->...jk", lr * G.d[..., None, :], G.C[..., i, :, :, :])
                    - k_of(mn, G.C[..., 0, :, :, :]) - X - np.swapaxes(X, -1, -2))
            Hab += np.swapaxes(Lu, -1, -2) @ Jbs
            Hbb += k_of(mn, G.C[..., 1, :, :, :])
        H[..., 3:7, 10:14] += Hab
        H[..., 10:14, 3:7] += np.swapaxes(Hab, -1, -2)
        return H
