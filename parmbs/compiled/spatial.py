"""Compiled element kernels of the spatial rigid kinds of the double pendulum (issue 19).

The formulas are the numpy components' — bodies.py / body_kernels.py (Euler-parameter
inertia, gyroscopic forces, the regularization c p pᵀp̈, gravity, the normalization row)
and joints.py / joint_kernels.py (the spherical and dot-1 primitives: the spherical and
revolute joints) — written as scalar loops over the elements of a group that add into
the dense R (N,) and J (N, N) with the conventions of compiled/planar.py:

    R₁ += w r,   J₁₁ += w (c_a r_a + c_v r_v + c_q r_q)                   forces
    R₁ += w_f Φ_qᵀλ,  R₂ += Φ/(βh²),  J₁₂ += w_f Φ_qᵀ,  J₂₁ += Φ_q,
    J₁₁ += h_w ∂(Φ_qᵀλ)/∂q  (h_w = w_f βh²)                                constraints

(w = w_i for the inertial kinds SpatialInertia and EulerRegularization, w_f otherwise).
Every block is the closed form the numpy kinds use (body_kernels.py, joint_kernels.py,
EulerRegularization.jacobians, Normalization.hess_lam): no complex-step default block
is involved, so both paths build the same matrix to round-off
(tests/test_compiled_spatial.py compares them kernel by kernel).

Euler-parameter algebra (kinematics.py, Nikravesh 1988 ch. 6), p = (e0, e):

    G(p) = [−e, −ẽ + e0 I],   G(p)ᵀ y = Y(y) p,   Y(y) = [[0, −yᵀ], [y, −ỹ]],
    J(p, s')_{ik} = ∂(A(p) s')_i/∂p_k = 2 [e0 s' + e × s',  (eᵀs') I + e s'ᵀ − s' eᵀ − e0 s̃'],
    A(p) s' = ½ J(p, s') p,   K(c, s')_{jk} = ∂²(cᵀA(p)s')/∂p_j∂p_k = cᵀ J(e_j, s')[:, k]

(J is linear in p, so K is J at the unit vectors).

Real or complex p: the same kernels run with a complex parameter vector for the
complex-step ∂R/∂ρ of the compiled tangent and adjoint steps (compiled/newmark_adjoint.py);
every scratch array takes p's dtype.  c_a weighs r_a (1 in the Newton matrix, 0 in the
adjoint's K = ∂R₁/∂q: these inertial kinds have r_q ≠ 0, unlike the planar inertia).
"""
import numpy as np
from ._jit import njit

from .planar import _add, _add_block, _loc


@njit(cache=True)
def _as(x, like):
    """x copied into an array of like's dtype (real q next to complex p)."""
    out = np.zeros(x.shape[0], like.dtype)
    for i in range(x.shape[0]):
        out[i] = x[i]
    return out


@njit(cache=True)
def _skew(u, out, sign):
    """out += sign·ũ (3×3)."""
    out[0, 1] -= sign * u[2]
    out[0, 2] += sign * u[1]
    out[1, 0] += sign * u[2]
    out[1, 2] -= sign * u[0]
    out[2, 0] -= sign * u[1]
    out[2, 1] += sign * u[0]


@njit(cache=True)
def _G(p):
    """G(p) = [−e, −ẽ + e0 I] (3×4)."""
    G = np.zeros((3, 4), p.dtype)
    for i in range(3):
        G[i, 0] = -p[1 + i]
        G[i, 1 + i] = p[0]
    _skew(p[1:4], G[:, 1:4], -1.0)
    return G


@njit(cache=True)
def _Y(y):
    """Y(y) (4×4) with G(p)ᵀ y = Y(y) p."""
    Y = np.zeros((4, 4), y.dtype)
    for i in range(3):
        Y[0, 1 + i] = -y[i]
        Y[1 + i, 0] = y[i]
    _skew(y, Y[1:4, 1:4], -1.0)
    return Y


@njit(cache=True)
def _mm(A, B):
    out = np.zeros((A.shape[0], B.shape[1]), A.dtype)
    for i in range(A.shape[0]):
        for k in range(A.shape[1]):
            aik = A[i, k]
            for j in range(B.shape[1]):
                out[i, j] += aik * B[k, j]
    return out


@njit(cache=True)
def _mtm(A, B):
    """Aᵀ B."""
    out = np.zeros((A.shape[1], B.shape[1]), A.dtype)
    for k in range(A.shape[0]):
        for i in range(A.shape[1]):
            aki = A[k, i]
            for j in range(B.shape[1]):
                out[i, j] += aki * B[k, j]
    return out


@njit(cache=True)
def _mv(A, x):
    out = np.zeros(A.shape[0], A.dtype)
    for i in range(A.shape[0]):
        for k in range(A.shape[1]):
            out[i] += A[i, k] * x[k]
    return out


@njit(cache=True)
def _mtv(A, x):
    """Aᵀ x."""
    out = np.zeros(A.shape[1], A.dtype)
    for k in range(A.shape[0]):
        for i in range(A.shape[1]):
            out[i] += A[k, i] * x[k]
    return out


@njit(cache=True)
def _inertia_matrix(p, pe, k0):
    """J' (3×3) from (J_xx, J_yy, J_zz, J_xy, J_xz, J_yz) at local p columns k0…k0+5."""
    Jm = np.zeros((3, 3), p.dtype)
    Jm[0, 0], Jm[1, 1], Jm[2, 2] = p[pe[k0]], p[pe[k0 + 1]], p[pe[k0 + 2]]
    Jm[0, 1] = Jm[1, 0] = p[pe[k0 + 3]]
    Jm[0, 2] = Jm[2, 0] = p[pe[k0 + 4]]
    Jm[1, 2] = Jm[2, 1] = p[pe[k0 + 5]]
    return Jm


@njit(cache=True)
def _rotjac(p, s):
    """J(p, s') = ∂(A(p) s')/∂p (3×4), module docstring."""
    out = np.zeros((3, 4), p.dtype)
    e0 = p[0]
    es = p[1] * s[0] + p[2] * s[1] + p[3] * s[2]
    out[0, 0] = 2.0 * (e0 * s[0] + p[2] * s[2] - p[3] * s[1])
    out[1, 0] = 2.0 * (e0 * s[1] + p[3] * s[0] - p[1] * s[2])
    out[2, 0] = 2.0 * (e0 * s[2] + p[1] * s[1] - p[2] * s[0])
    for i in range(3):
        out[i, 1 + i] += 2.0 * es
        for k in range(3):
            out[i, 1 + k] += 2.0 * (p[1 + i] * s[k] - s[i] * p[1 + k])
    _skew(s, out[:, 1:4], -2.0 * e0)
    return out


@njit(cache=True)
def _hess(c, s):
    """K(c, s') (4×4): the constant Hessian of cᵀA(p)s' (module docstring)."""
    K = np.zeros((4, 4), s.dtype)
    ej = np.zeros(4, s.dtype)
    for j in range(4):
        ej[:] = 0.0
        ej[j] = 1.0
        Jj = _rotjac(ej, s)
        for k in range(4):
            K[j, k] = c[0] * Jj[0, k] + c[1] * Jj[1, k] + c[2] * Jj[2, k]
    return K


# ----------------------------------------------------------------------------- bodies

@njit(cache=True)
def inertia(q, a, p, qidx, pidx, R, J, w, ca, cq, want_J):
    """bodies.SpatialInertia: r = (m r̈, 4 GᵀJ'G p̈);  r_a = diag(m I, 4 GᵀJ'G),
    r_q (p-block) = 4 (Y(y) − GᵀJ'G(p̈)), y = J'G p̈ (body_kernels.inertia_jacobians).
    q = (r, p) (7), p = (m, J'_xx, J'_yy, J'_zz, J'_xy, J'_xz, J'_yz)."""
    B = np.zeros((7, 7), p.dtype)
    for e in range(qidx.shape[0]):
        idx, pe = qidx[e], pidx[e]
        ql, al = _as(_loc(q, idx), p), _as(_loc(a, idx), p)
        m = p[pe[0]]
        Jm = _inertia_matrix(p, pe, 1)
        G = _G(ql[3:7])
        JG = _mm(Jm, G)
        y = _mv(JG, al[3:7])
        rot = _mtv(G, y)
        for k in range(3):
            _add(R, idx[k], w * (m * al[k]))
        for k in range(4):
            _add(R, idx[3 + k], w * (4.0 * rot[k]))
        if not want_J:
            continue
        M = _mtm(G, JG)
        Rq = _Y(y) - _mtm(G, _mm(Jm, _G(al[3:7])))
        B[:, :] = 0.0
        for k in range(3):
            B[k, k] = m * ca
        for i in range(4):
            for j in range(4):
                B[3 + i, 3 + j] = 4.0 * (ca * M[i, j] + cq * Rq[i, j])
        _add_block(J, idx, B, w)


@njit(cache=True)
def gyroscopic(q, v, p, qidx, pidx, R, J, w, cq, cv, want_J):
    """bodies.SpatialGyroscopic: r = 2 Gᵀh, h = ω' × J'ω', ω' = 2 G ṗ;
    r_q = 2 (Y(h) − 2 Gᵀ h_ω G(ṗ)),  r_v = 4 Gᵀ h_ω G,  h_ω = ω̃'J' − (J'ω')~
    (body_kernels.gyroscopic_jacobians).  q = p (4), p = J' (6)."""
    B = np.zeros((4, 4), p.dtype)
    for e in range(qidx.shape[0]):
        idx, pe = qidx[e], pidx[e]
        ql, vl = _as(_loc(q, idx), p), _as(_loc(v, idx), p)
        Jm = _inertia_matrix(p, pe, 0)
        G = _G(ql)
        om = 2.0 * _mv(G, vl)
        Jw = _mv(Jm, om)
        h = np.zeros(3, p.dtype)
        h[0] = om[1] * Jw[2] - om[2] * Jw[1]
        h[1] = om[2] * Jw[0] - om[0] * Jw[2]
        h[2] = om[0] * Jw[1] - om[1] * Jw[0]
        r = _mtv(G, h)
        for k in range(4):
            _add(R, idx[k], w * (2.0 * r[k]))
        if not want_J:
            continue
        hw = np.zeros((3, 3), p.dtype)
        _skew(om, hw, 1.0)
        hw = _mm(hw, Jm)
        _skew(Jw, hw, -1.0)
        GThw = _mtm(G, hw)
        Rq = _Y(h) - 2.0 * _mm(GThw, _G(vl))
        Rv = _mm(GThw, G)
        for i in range(4):
            for j in range(4):
                B[i, j] = cq * (2.0 * Rq[i, j]) + cv * (4.0 * Rv[i, j])
        _add_block(J, idx, B, w)


@njit(cache=True)
def regularization(q, a, p, qidx, pidx, R, J, w, ca, cq, want_J):
    """bodies.EulerRegularization: r = c (pᵀp̈) p, c = 4 (J'_xx + J'_yy + J'_zz)/3;
    r_q = c ((pᵀp̈) I + p p̈ᵀ), r_a = c p pᵀ.  q = p (4), p = (J'_xx, J'_yy, J'_zz)."""
    B = np.zeros((4, 4), p.dtype)
    for e in range(qidx.shape[0]):
        idx, pe = qidx[e], pidx[e]
        ql, al = _loc(q, idx), _loc(a, idx)
        c = 4.0 / 3.0 * (p[pe[0]] + p[pe[1]] + p[pe[2]])
        qa = ql[0] * al[0] + ql[1] * al[1] + ql[2] * al[2] + ql[3] * al[3]
        for k in range(4):
            _add(R, idx[k], w * (c * qa * ql[k]))
        if not want_J:
            continue
        for i in range(4):
            for j in range(4):
                B[i, j] = c * (ca * (ql[i] * ql[j]) + cq * (ql[i] * al[j] + (qa if i == j else 0.0)))
        _add_block(J, idx, B, w)


@njit(cache=True)
def gravity(p, qidx, pidx, R, w):
    """bodies.SpatialGravity: r = −m g;  q = r (3), p = (m, g_x, g_y, g_z).  No Jacobian."""
    for e in range(qidx.shape[0]):
        m = p[pidx[e, 0]]
        for k in range(3):
            _add(R, qidx[e, k], w * (-m * p[pidx[e, 1 + k]]))


@njit(cache=True)
def normalization(q, lam, p, qidx, pidx, rows, n, R, J, wf, bh2, hw, want_J):
    """bodies.Normalization: Φ = pᵀp − 1, Φ_q = 2pᵀ, ∂(Φ_qᵀλ)/∂q = 2λ I.  q = p (4)."""
    for e in range(qidx.shape[0]):
        idx, row = qidx[e], rows[e, 0]
        if row < 0:
            continue
        ql = _loc(q, idx)
        l = lam[row]
        R[n + row] += (ql[0] * ql[0] + ql[1] * ql[1] + ql[2] * ql[2] + ql[3] * ql[3] - 1.0) / bh2
        for k in range(4):
            i = idx[k]
            if i >= 0:
                R[i] += wf * (2.0 * ql[k] * l)
                if want_J:
                    J[n + row, i] += 2.0 * ql[k]
                    J[i, n + row] += wf * (2.0 * ql[k])
                    J[i, i] += hw * (2.0 * l)


# ----------------------------------------------------------------------------- joints

@njit(cache=True)
def _scatter_rows(idx, rw, phi, Gq, lr, H, n, R, J, wf, bh2, hw, want_J):
    """Add one two-body element's Φ (rows rw, /βh²), Φ_qᵀλ (weight w_f), Φ_q and w_f Φ_qᵀ
    (columns n + rw) and its Hessian H (weight hw) into R and J — the tail of every
    spatial joint kernel here and in compiled/vehicle.py; local q of 14 (r_a, p_a, r_b, p_b)."""
    me = phi.shape[0]
    for k in range(14):
        s = 0.0 * phi[0]
        for r in range(me):
            s += Gq[r, k] * lr[r]
        _add(R, idx[k], wf * s)
    for r in range(me):
        row = rw[r]
        if row < 0:
            continue
        R[n + row] += phi[r] / bh2
        if want_J:
            for k in range(14):
                i = idx[k]
                if i >= 0:
                    J[n + row, i] += Gq[r, k]
                    J[i, n + row] += wf * Gq[r, k]
    if want_J:
        _add_block(J, idx, H, hw)


@njit(cache=True)
def _sides(q, p, idx, pe):
    """(local q, p_a, p_b, s'_a, s'_b) of a two-body element (ground mask applied): the
    start of every two-body constraint kernel here and in vehicle.py."""
    ql = _as(_loc(q, idx), p)
    pa, pb = ql[3:7].copy(), ql[10:14].copy()
    pa[0] += p[pe[3]]
    pb[0] += p[pe[7]]
    sa = np.zeros(3, p.dtype)
    sb = np.zeros(3, p.dtype)
    for k in range(3):
        sa[k], sb[k] = p[pe[k]], p[pe[4 + k]]
    return ql, pa, pb, sa, sb


@njit(cache=True)
def joint(q, lam, p, qidx, pidx, rows, ndot, n, R, J, wf, bh2, hw, want_J):
    """joints.SpatialSpherical (ndot = 0) and SpatialRevolute (ndot = 2): the spherical
    rows Φ = P_a − P_b, then dot-1 rows Φ = (A_a u'_k)ᵀ(A_b w') with (u'_k, w') the
    vector parameters (0, 2), (1, 2) (joints.VECTORS: n1_a, n2_a, u_b).
    Local q = (r_a, p_a, r_b, p_b) (14), p = (s'_a, g_a, s'_b, g_b, vectors…); a ground
    side reads zeros and adds g (1, 0, 0, 0) to its Euler parameters.
    Φ_q and ∂(Φ_qᵀλ)/∂q as joint_kernels.py: spherical [I, J_a(s_a), −I, −J_b(s_b)],
    (p_a,p_a) K(λ_s, s_a), (p_b,p_b) −K(λ_s, s_b); dot-1 [0, bᵀJ_a(u), 0, aᵀJ_b(w)],
    λ [(p_a,p_a) K(b, u), (p_b,p_b) K(a, w), (p_a,p_b) J_a(u)ᵀJ_b(w)]."""
    me = 3 + ndot
    Gq = np.zeros((me, 14), p.dtype)
    H = np.zeros((14, 14), p.dtype)
    phi = np.zeros(me, p.dtype)
    ls = np.zeros(3, p.dtype)
    for e in range(qidx.shape[0]):
        idx, pe, rw = qidx[e], pidx[e], rows[e]
        ql, pa, pb, sa, sb = _sides(q, p, idx, pe)
        Ja, Jb = _rotjac(pa, sa), _rotjac(pb, sb)
        Asa, Asb = 0.5 * _mv(Ja, pa), 0.5 * _mv(Jb, pb)
        lr = np.zeros(me, p.dtype)
        for r in range(me):
            if rw[r] >= 0:
                lr[r] = lam[rw[r]]
        Gq[:, :] = 0.0
        H[:, :] = 0.0
        for i in range(3):
            phi[i] = ql[i] + Asa[i] - ql[7 + i] - Asb[i]
            Gq[i, i] = 1.0
            Gq[i, 7 + i] = -1.0
            for k in range(4):
                Gq[i, 3 + k] = Ja[i, k]
                Gq[i, 10 + k] = -Jb[i, k]
            ls[i] = lr[i]
        if want_J:
            Ka, Kb = _hess(ls, sa), _hess(ls, sb)
            for j in range(4):
                for k in range(4):
                    H[3 + j, 3 + k] += Ka[j, k]
                    H[10 + j, 10 + k] -= Kb[j, k]
        if ndot:
            w_ = np.zeros(3, p.dtype)
            for k in range(3):
                w_[k] = p[pe[14 + k]]
            Jbw = _rotjac(pb, w_)
            b = 0.5 * _mv(Jbw, pb)
            for r in range(ndot):
                u = np.zeros(3, p.dtype)
                for k in range(3):
                    u[k] = p[pe[8 + 3 * r + k]]
                Jau = _rotjac(pa, u)
                a_ = 0.5 * _mv(Jau, pa)
                phi[3 + r] = a_[0] * b[0] + a_[1] * b[1] + a_[2] * b[2]
                ga, gb = _mtv(Jau, b), _mtv(Jbw, a_)
                for k in range(4):
                    Gq[3 + r, 3 + k] = ga[k]
                    Gq[3 + r, 10 + k] = gb[k]
                if want_J:
                    l = lr[3 + r]
                    Kba, Kab, Jab = _hess(b, u), _hess(a_, w_), _mtm(Jau, Jbw)
                    for j in range(4):
                        for k in range(4):
                            H[3 + j, 3 + k] += l * Kba[j, k]
                            H[10 + j, 10 + k] += l * Kab[j, k]
                            H[3 + j, 10 + k] += l * Jab[j, k]
                            H[10 + k, 3 + j] += l * Jab[j, k]
        _scatter_rows(idx, rw, phi, Gq, lr, H, n, R, J, wf, bh2, hw, want_J)
