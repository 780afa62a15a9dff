"""Technique (a) of issue 19: numba-compiled kernels per component kind and a compiled
dense Newton for the index-3 Newmark-family step (trapezoidal: α_m = α_f = 0).

The formulas are parmbs's (model/forces.py, model/joints.py, model/kinematics.py),
written as scalar loops over elements that add straight into a dense residual
R (N,) and Newton matrix J (N, N), N = n + m, unknowns z = (a_{n+1}, λ_{n+1}):

    R₁ = Σ r(q, v, a) + Σ Φ_qᵀλ,   R₂ = Φ(q) / (βh²)
    J  = [[Σ (r_a + γh r_v + βh² r_q) + βh² Σ ∂(Φ_qᵀλ)/∂q,  Φ_qᵀ], [Φ_q, 0]]
    q = q̂ + βh² a,  v = v̂ + γh a

(newmark.py; the trapezoidal rule has no old-state residual).  Two drivers:

* ``eval_RJ`` — one compiled call per Newton iterate; the Newton loop stays in
  Python and solves with ``numpy.linalg.solve`` (variant a1);
* ``newton_step`` — the whole Newton loop of one step compiled, with a dense LU
  with partial pivoting written here (``lu_factor``/``lu_solve``, reusable for the
  transposed adjoint solves), same convergence test as ``newton_acceleration_form``
  (position update βh²‖Δa‖∞ ≤ atol + rtol ‖q‖∞) (variant a2).

Ground slots are −1 in the index arrays and skipped; a dropped constraint row (−1)
reads λ = 0 and writes nowhere.  ``cache=True``: compiled once per machine into
``NUMBA_CACHE_DIR`` (or __pycache__ beside this file).
"""
import numpy as np
from numba import njit


@njit(cache=True)
def _add_block(J, idx, B, nq, w):
    for i in range(nq):
        r = idx[i]
        if r < 0:
            continue
        for j in range(nq):
            c = idx[j]
            if c >= 0:
                J[r, c] += w * B[i, j]


@njit(cache=True)
def inertia(q, v, a, p, qidx, pidx, R, J, ca):
    """r = (m ẍ, m ÿ, I θ̈), r_a = diag(m, m, I)."""
    for e in range(qidx.shape[0]):
        m, I = p[pidx[e, 0]], p[pidx[e, 1]]
        coef = (m, m, I)
        for k in range(3):
            i = qidx[e, k]
            if i >= 0:
                R[i] += coef[k] * a[i]
                J[i, i] += ca * coef[k]


@njit(cache=True)
def gravity(p, qidx, pidx, R):
    """r = (−m g_x, −m g_y, 0); no Jacobian."""
    for e in range(qidx.shape[0]):
        m, gx, gy = p[pidx[e, 0]], p[pidx[e, 1]], p[pidx[e, 2]]
        if qidx[e, 0] >= 0:
            R[qidx[e, 0]] += -m * gx
        if qidx[e, 1] >= 0:
            R[qidx[e, 1]] += -m * gy


@njit(cache=True)
def _loc(x, idx, nq):
    out = np.zeros(nq, x.dtype)
    for k in range(nq):
        if idx[k] >= 0:
            out[k] = x[idx[k]]
    return out


@njit(cache=True)
def spring(q, v, p, qidx, pidx, R, J, cq, cv):
    """Point-to-point spring-damper: r = F G, F = k(l − l₀) + c l̇, G = ∂l/∂q;
    r_q = G ⊗ (k G + c H v) + F H, r_v = c G ⊗ G, H = Dᵀ(I − eeᵀ)D/l + e·∂²d/∂q²."""
    B = np.zeros((6, 6))
    G = np.zeros(6)
    H = np.zeros((6, 6))
    D = np.zeros((2, 6))
    Hv = np.zeros(6)
    for e in range(qidx.shape[0]):
        idx = qidx[e]
        ql, vl = _loc(q, idx, 6), _loc(v, idx, 6)
        pe = pidx[e]
        sa0, sa1 = p[pe[0]] - p[pe[2]], p[pe[1]] - p[pe[3]]
        sb0, sb1 = p[pe[4]] - p[pe[6]], p[pe[5]] - p[pe[7]]
        k, c, l0 = p[pe[8]], p[pe[9]], p[pe[10]]
        ca_, sa_ = np.cos(ql[2]), np.sin(ql[2])
        cb_, sb_ = np.cos(ql[5]), np.sin(ql[5])
        ra0, ra1 = ca_ * sa0 - sa_ * sa1, sa_ * sa0 + ca_ * sa1          # A(θa) s_a
        rb0, rb1 = cb_ * sb0 - sb_ * sb1, sb_ * sb0 + cb_ * sb1
        da0, da1 = -sa_ * sa0 - ca_ * sa1, ca_ * sa0 - sa_ * sa1        # A R s_a
        db0, db1 = -sb_ * sb0 - cb_ * sb1, cb_ * sb0 - sb_ * sb1
        d0 = ql[3] + rb0 - ql[0] - ra0
        d1 = ql[4] + rb1 - ql[1] - ra1
        l = np.sqrt(d0 * d0 + d1 * d1)
        e0, e1 = d0 / l, d1 / l
        dd0 = vl[3] + db0 * vl[5] - vl[0] - da0 * vl[2]
        dd1 = vl[4] + db1 * vl[5] - vl[1] - da1 * vl[2]
        ldot = e0 * dd0 + e1 * dd1
        F = k * (l - l0) + c * ldot
        D[:] = 0.0
        D[0, 0] = D[1, 1] = -1.0
        D[0, 3] = D[1, 4] = 1.0
        D[0, 2], D[1, 2], D[0, 5], D[1, 5] = -da0, -da1, db0, db1
        for j in range(6):
            G[j] = e0 * D[0, j] + e1 * D[1, j]
        P00, P01, P11 = 1.0 - e0 * e0, -e0 * e1, 1.0 - e1 * e1
        for i in range(6):
            for j in range(6):
                H[i, j] = (D[0, i] * (P00 * D[0, j] + P01 * D[1, j])
                           + D[1, i] * (P01 * D[0, j] + P11 * D[1, j])) / l
        H[2, 2] += e0 * ra0 + e1 * ra1
        H[5, 5] -= e0 * rb0 + e1 * rb1
        for i in range(6):
            if idx[i] >= 0:
                R[idx[i]] += F * G[i]
        for i in range(6):
            s = 0.0
            for j in range(6):
                s += H[i, j] * vl[j]
            Hv[i] = s
        for i in range(6):
            for j in range(6):
                dFj = k * G[j] + c * Hv[j]          # ∂F/∂q_j = k G_j + c (H v)_j
                B[i, j] = cv * (c * G[i] * G[j]) + cq * (G[i] * dFj + F * H[i, j])
        _add_block(J, idx, B, 6, 1.0)


@njit(cache=True)
def revolute(q, lam, p, qidx, pidx, rows, n, R, J, bh2):
    """Φ = x_a + A(θ_a)s_a − x_b − A(θ_b)s_b; R₁ += Φ_qᵀλ, R₂ = Φ/(βh²), J: Φ_q, Φ_qᵀ
    and βh² ∂(Φ_qᵀλ)/∂q (θθ entries only: −λ·A s_a, +λ·A s_b)."""
    for e in range(qidx.shape[0]):
        idx = qidx[e]
        ql = _loc(q, idx, 6)
        pe = pidx[e]
        sa0, sa1 = p[pe[0]] - p[pe[2]], p[pe[1]] - p[pe[3]]
        sb0, sb1 = p[pe[4]] - p[pe[6]], p[pe[5]] - p[pe[7]]
        ca_, sa_ = np.cos(ql[2]), np.sin(ql[2])
        cb_, sb_ = np.cos(ql[5]), np.sin(ql[5])
        ra0, ra1 = ca_ * sa0 - sa_ * sa1, sa_ * sa0 + ca_ * sa1
        rb0, rb1 = cb_ * sb0 - sb_ * sb1, sb_ * sb0 + cb_ * sb1
        da0, da1 = -sa_ * sa0 - ca_ * sa1, ca_ * sa0 - sa_ * sa1
        db0, db1 = -sb_ * sb0 - cb_ * sb1, cb_ * sb0 - sb_ * sb1
        r0, r1 = rows[e, 0], rows[e, 1]
        l0 = lam[r0] if r0 >= 0 else 0.0
        l1 = lam[r1] if r1 >= 0 else 0.0
        Gq = ((1.0, 0.0, da0, -1.0, 0.0, -db0), (0.0, 1.0, da1, 0.0, -1.0, -db1))
        for k in range(6):
            i = idx[k]
            if i >= 0:
                R[i] += Gq[0][k] * l0 + Gq[1][k] * l1
        if r0 >= 0:
            R[n + r0] += (ql[0] + ra0 - ql[3] - rb0) / bh2
        if r1 >= 0:
            R[n + r1] += (ql[1] + ra1 - ql[4] - rb1) / bh2
        for rr in range(2):
            row = rows[e, rr]
            if row < 0:
                continue
            for k in range(6):
                i = idx[k]
                if i >= 0:
                    J[n + row, i] += Gq[rr][k]
                    J[i, n + row] += Gq[rr][k]
        if idx[2] >= 0:
            J[idx[2], idx[2]] += bh2 * (-(l0 * ra0 + l1 * ra1))
        if idx[5] >= 0:
            J[idx[5], idx[5]] += bh2 * (l0 * rb0 + l1 * rb1)


@njit(cache=True)
def eval_RJ(q, v, a, lam, p, n, bh2, gh, iq, ip, gq, gp, sq, sp, rq, rp, rr):
    """Residual and Newton matrix of one iterate (all four kinds; empty arrays skip)."""
    N = n + lam.shape[0]
    R = np.zeros(N)
    J = np.zeros((N, N))
    inertia(q, v, a, p, iq, ip, R, J, 1.0)
    gravity(p, gq, gp, R)
    spring(q, v, p, sq, sp, R, J, bh2, gh)
    revolute(q, lam, p, rq, rp, rr, n, R, J, bh2)
    return R, J


@njit(cache=True)
def lu_factor(A):
    """In-place LU with partial pivoting (LAPACK getrf order): returns (LU, piv)."""
    N = A.shape[0]
    LU = A.copy()
    piv = np.arange(N)
    for k in range(N):
        p, big = k, abs(LU[k, k])
        for i in range(k + 1, N):
            if abs(LU[i, k]) > big:
                p, big = i, abs(LU[i, k])
        if big == 0.0:
            return LU, piv, False
        if p != k:
            for j in range(N):
                LU[k, j], LU[p, j] = LU[p, j], LU[k, j]
            piv[k], piv[p] = piv[p], piv[k]
        inv = 1.0 / LU[k, k]
        for i in range(k + 1, N):
            LU[i, k] *= inv
            f = LU[i, k]
            if f != 0.0:
                for j in range(k + 1, N):
                    LU[i, j] -= f * LU[k, j]
    return LU, piv, True


@njit(cache=True)
def lu_solve(LU, piv, b):
    N = LU.shape[0]
    x = np.empty(N)
    for i in range(N):
        x[i] = b[piv[i]]
    for i in range(N):
        s = x[i]
        for j in range(i):
            s -= LU[i, j] * x[j]
        x[i] = s
    for i in range(N - 1, -1, -1):
        s = x[i]
        for j in range(i + 1, N):
            s -= LU[i, j] * x[j]
        x[i] = s / LU[i, i]
    return x


@njit(cache=True)
def newton_step(qp, vp, a0, lam0, p, n, bh2, gh, atol, rtol, max_it,
                iq, ip, gq, gp, sq, sp, rq, rp, rr):
    """One step's Newton on z = (a, λ); returns (q, v, a, λ, iterations, status):
    status 0 converged, 1 singular matrix, 2 non-finite update, 3 no convergence."""
    a, lam = a0.copy(), lam0.copy()
    for it in range(1, max_it + 1):
        q1 = qp + bh2 * a
        v1 = vp + gh * a
        R, J = eval_RJ(q1, v1, a, lam, p, n, bh2, gh, iq, ip, gq, gp, sq, sp, rq, rp, rr)
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


@njit(cache=True)
def run_steps(q, v, a, lam, p, n, h, nsteps, atol, rtol, max_it, iq, ip, gq, gp, sq, sp, rq, rp, rr, Q):
    """Whole forward run in one call (the trapezoidal predictor and Newton per step);
    Q (nsteps+1, n) receives the positions.  Returns (total iterations, status, step,
    final q, v, a, λ)."""
    b, g = 0.25, 0.5
    bh2, gh = b * h * h, g * h
    its = 0
    Q[0] = q
    for k in range(nsteps):
        qp = q + h * v + (0.5 - b) * h * h * a
        vp = v + (1 - g) * h * a
        q, v, a, lam, it, st = newton_step(qp, vp, a, lam, p, n, bh2, gh, atol, rtol, max_it,
                                           iq, ip, gq, gp, sq, sp, rq, rp, rr)
        its += it
        if st != 0:
            return its, st, k + 1, q, v, a, lam
        Q[k + 1] = q
    return its, 0, nsteps, q, v, a, lam
