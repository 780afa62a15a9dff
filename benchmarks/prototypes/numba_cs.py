"""Technique (a4) of issue 19: numba kernels that keep parmbs's component design —
only the leading-order functions are written by hand (the force residual r, the
constraint Φ_q), every derived block is a complex-step derivative (model/component.py,
∂f/∂x_j = Im f(x + i h e_j)/h, h = 1e-30) — but computed inside compiled code.

The hand-written functions are dtype-generic (``np.zeros_like`` of the input), so numba
compiles each twice: float64 for values, complex128 for the derived blocks.  Here the
spring's r_q and r_v (12 complex evaluations per element) and the revolute joint's
∂(Φ_qᵀλ)/∂q (6 complex evaluations of Φ_q) come by complex step; Inertia and Gravity
are reused from numba_kernels.py.  The same functions would give ∂R/∂ρ for the adjoint
(complex step over the design columns of p) without another line per kind.
"""
import numpy as np
from numba import njit

from numba_kernels import inertia, gravity, lu_factor, lu_solve

CS_H = 1e-30


@njit(cache=True)
def spring_r(ql, vl, pe):
    """r of one spring element (parmbs model/forces.py Spring.r), any dtype."""
    r = np.zeros_like(ql + vl)
    sa0, sa1 = pe[0] - pe[2], pe[1] - pe[3]
    sb0, sb1 = pe[4] - pe[6], pe[5] - pe[7]
    k, c, l0 = pe[8], pe[9], pe[10]
    ca_, sa_ = np.cos(ql[2]), np.sin(ql[2])
    cb_, sb_ = np.cos(ql[5]), np.sin(ql[5])
    ra0, ra1 = ca_ * sa0 - sa_ * sa1, sa_ * sa0 + ca_ * sa1
    rb0, rb1 = cb_ * sb0 - sb_ * sb1, sb_ * sb0 + cb_ * sb1
    da0, da1 = -ra1, ra0
    db0, db1 = -rb1, rb0
    d0 = ql[3] + rb0 - ql[0] - ra0
    d1 = ql[4] + rb1 - ql[1] - ra1
    l = np.sqrt(d0 * d0 + d1 * d1)
    e0, e1 = d0 / l, d1 / l
    dd0 = vl[3] + db0 * vl[5] - vl[0] - da0 * vl[2]
    dd1 = vl[4] + db1 * vl[5] - vl[1] - da1 * vl[2]
    F = k * (l - l0) + c * (e0 * dd0 + e1 * dd1)
    r[0], r[1] = -F * e0, -F * e1
    r[2] = -(F * e0 * da0 + F * e1 * da1)
    r[3], r[4] = F * e0, F * e1
    r[5] = F * e0 * db0 + F * e1 * db1
    return r


@njit(cache=True)
def revolute_phi_q(ql, pe):
    """Φ_q (2, 6) of one revolute joint (model/joints.py Revolute.phi_q), any dtype."""
    J = np.zeros((2, 6), dtype=ql.dtype)
    sa0, sa1 = pe[0] - pe[2], pe[1] - pe[3]
    sb0, sb1 = pe[4] - pe[6], pe[5] - pe[7]
    ca_, sa_ = np.cos(ql[2]), np.sin(ql[2])
    cb_, sb_ = np.cos(ql[5]), np.sin(ql[5])
    J[0, 0] = J[1, 1] = 1.0
    J[0, 3] = J[1, 4] = -1.0
    J[0, 2], J[1, 2] = -sa_ * sa0 - ca_ * sa1, ca_ * sa0 - sa_ * sa1
    J[0, 5], J[1, 5] = sb_ * sb0 + cb_ * sb1, -(cb_ * sb0 - sb_ * sb1)
    return J


@njit(cache=True)
def revolute_phi(ql, pe):
    sa0, sa1 = pe[0] - pe[2], pe[1] - pe[3]
    sb0, sb1 = pe[4] - pe[6], pe[5] - pe[7]
    ca_, sa_ = np.cos(ql[2]), np.sin(ql[2])
    cb_, sb_ = np.cos(ql[5]), np.sin(ql[5])
    return (ql[0] + ca_ * sa0 - sa_ * sa1 - ql[3] - (cb_ * sb0 - sb_ * sb1),
            ql[1] + sa_ * sa0 + ca_ * sa1 - ql[4] - (sb_ * sb0 + cb_ * sb1))


@njit(cache=True)
def _gather(x, idx):
    out = np.zeros(idx.shape[0])
    for k in range(idx.shape[0]):
        if idx[k] >= 0:
            out[k] = x[idx[k]]
    return out


@njit(cache=True)
def spring_cs(q, v, p, qidx, pidx, R, J, cq, cv):
    for e in range(qidx.shape[0]):
        idx = qidx[e]
        ql, vl = _gather(q, idx), _gather(v, idx)
        pe = np.empty(pidx.shape[1])
        for k in range(pidx.shape[1]):
            pe[k] = p[pidx[e, k]]
        r = spring_r(ql, vl, pe)
        B = np.zeros((6, 6))
        qc, vc = ql.astype(np.complex128), vl.astype(np.complex128)
        for j in range(6):                                   # r_v, then r_q (parmbs's order)
            vc[j] += 1j * CS_H
            rv = spring_r(ql, vc, pe)
            vc[j] = vl[j]
            qc[j] += 1j * CS_H
            rq = spring_r(qc, vl, pe)
            qc[j] = ql[j]
            for i in range(6):
                B[i, j] = cv * (rv[i].imag / CS_H) + cq * (rq[i].imag / CS_H)
        for i in range(6):
            if idx[i] >= 0:
                R[idx[i]] += r[i]
                for j in range(6):
                    if idx[j] >= 0:
                        J[idx[i], idx[j]] += B[i, j]


@njit(cache=True)
def revolute_cs(q, lam, p, qidx, pidx, rows, n, R, J, bh2):
    for e in range(qidx.shape[0]):
        idx = qidx[e]
        ql = _gather(q, idx)
        pe = np.empty(pidx.shape[1])
        for k in range(pidx.shape[1]):
            pe[k] = p[pidx[e, k]]
        le = np.zeros(2)
        for rr in range(2):
            if rows[e, rr] >= 0:
                le[rr] = lam[rows[e, rr]]
        G = revolute_phi_q(ql, pe)
        ph = revolute_phi(ql, pe)
        for k in range(6):
            i = idx[k]
            if i >= 0:
                R[i] += G[0, k] * le[0] + G[1, k] * le[1]
        for rr in range(2):
            row = rows[e, rr]
            if row < 0:
                continue
            R[n + row] += ph[rr] / bh2
            for k in range(6):
                i = idx[k]
                if i >= 0:
                    J[n + row, i] += G[rr, k]
                    J[i, n + row] += G[rr, k]
        qc = ql.astype(np.complex128)                        # ∂(Φ_qᵀλ)/∂q by complex step
        for j in range(6):
            if idx[j] < 0:
                continue
            qc[j] += 1j * CS_H
            Gc = revolute_phi_q(qc, pe)
            qc[j] = ql[j]
            for k in range(6):
                i = idx[k]
                if i >= 0:
                    hv = (Gc[0, k] * le[0] + Gc[1, k] * le[1]).imag / CS_H
                    if hv != 0.0:
                        J[i, idx[j]] += bh2 * hv


@njit(cache=True)
def eval_RJ(q, v, a, lam, p, n, bh2, gh, iq, ip, gq, gp, sq, sp, rq, rp, rr):
    N = n + lam.shape[0]
    R = np.zeros(N)
    J = np.zeros((N, N))
    inertia(q, v, a, p, iq, ip, R, J, 1.0)
    gravity(p, gq, gp, R)
    spring_cs(q, v, p, sq, sp, R, J, bh2, gh)
    revolute_cs(q, lam, p, rq, rp, rr, n, R, J, bh2)
    return R, J


@njit(cache=True)
def newton_step(qp, vp, a0, lam0, p, n, bh2, gh, atol, rtol, max_it, iq, ip, gq, gp, sq, sp, rq, rp, rr):
    """numba_kernels.newton_step with these complex-step kernels (same loop, same test)."""
    a, lam = a0.copy(), lam0.copy()
    for it in range(1, max_it + 1):
        q1 = qp + bh2 * a
        R, J = eval_RJ(q1, vp + gh * a, a, lam, p, n, bh2, gh, iq, ip, gq, gp, sq, sp, rq, rp, rr)
        LU, piv, ok = lu_factor(J)
        if not ok:
            return qp + bh2 * a, vp + gh * a, a, lam, it, 1
        dz = lu_solve(LU, piv, -R)
        dq = 0.0
        for i in range(n):
            a[i] += dz[i]
            dq = max(dq, abs(dz[i]))
        for i in range(lam.shape[0]):
            lam[i] += dz[n + i]
        dq *= bh2
        if not np.all(np.isfinite(dz)):
            return qp + bh2 * a, vp + gh * a, a, lam, it, 2
        if dq <= atol + rtol * np.max(np.abs(q1)):
            return qp + bh2 * a, vp + gh * a, a, lam, it, 0
    return qp + bh2 * a, vp + gh * a, a, lam, max_it, 3
