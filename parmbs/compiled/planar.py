"""Compiled element kernels of the planar rigid component kinds (issue 19).

The formulas are the numpy components' (model/forces.py, model/joints.py,
model/kinematics.py), written as scalar loops over the elements of a group that add
straight into a dense residual R (N,) and Newton matrix J (N, N), N = n + m: rows
0..n−1 are the dynamic residual R₁, rows n..n+m−1 the scaled constraints R₂ = Φ/(βh²),
columns the unknowns z = (a, λ) (integrators/newmark.py).  For each kind:

    R₁ += w r(q, v, a),                     J₁₁ += w (r_a + γh r_v + βh² r_q)     forces
    R₁ += w_f Φ_qᵀλ,  R₂ += Φ/(βh²),          J₁₂ += w_f Φ_qᵀ,  J₂₁ += Φ_q,
                                            J₁₁ += w_f βh² ∂(Φ_qᵀλ)/∂q          constraints

with the weights w = w_i (inertia) or w_f (every other force) of generalized-α.  The
derived blocks are the analytic ones the numpy components use (Spring.jacobians,
Revolute.hess_lam); where a numpy kind relies on the complex-step default
(RotationalSpring's r_q, r_v; Weld's Hessian) the block is written out here — it is
exact for these kinds (linear r, or the Revolute rows), so both paths build the same
matrix.  ``tests/test_compiled.py`` compares every kernel with its numpy component.

Real or complex p: the same kernels run with a complex parameter vector (R and J then
complex, J untouched with want_J False) for the complex-step ∂R/∂ρ of the compiled
tangent and adjoint steps (compiled/newmark_adjoint.py); their scratch arrays take p's
dtype.  Every formula is complex-analytic in p (no abs, no max on p).

Index conventions: ``qidx`` holds unknown numbers with ground's slots as −1 (they read
0 and are not written), ``rows`` the constraint rows (−1: a redundant row dropped at
set-up, model/redundancy.py: λ reads 0 and nothing is written).
"""
import numpy as np
from ._jit import njit


@njit(cache=True)
def _loc(x, idx):
    """x at the element's unknowns (0 at ground slots), of x's dtype (compiled/index1_rk.py
    runs these kernels with complex q, v, a in its complex-step ∂R/∂ρ)."""
    out = np.zeros(idx.shape[0], x.dtype)
    for k in range(idx.shape[0]):
        if idx[k] >= 0:
            out[k] = x[idx[k]]
    return out


@njit(cache=True)
def _offset(p, pe, k0):
    """s = P̄ − c̄ from the parameters (P̄x, P̄y, c̄x, c̄y) at local column k0."""
    return p[pe[k0]] - p[pe[k0 + 2]], p[pe[k0 + 1]] - p[pe[k0 + 3]]


@njit(cache=True)
def _add(R, i, x):
    if i >= 0:
        R[i] += x


@njit(cache=True)
def _add_block(J, idx, B, w):
    """J[idx, idx] += w B, ground slots dropped."""
    nq = idx.shape[0]
    for i in range(nq):
        r = idx[i]
        if r < 0:
            continue
        for j in range(nq):
            c = idx[j]
            if c >= 0:
                J[r, c] += w * B[i, j]


# ----------------------------------------------------------------------------- forces

@njit(cache=True)
def inertia(a, p, qidx, pidx, R, J, w, ca, want_J):
    """r = (m ẍ, m ÿ, I θ̈), r_a = diag(m, m, I);  p = (m, I).  J += w c_a r_a (c_a = 1 in
    the Newton matrix, 0 in the adjoint's K = ∂R₁/∂q: newmark_adjoint.py)."""
    for e in range(qidx.shape[0]):
        m, I = p[pidx[e, 0]], p[pidx[e, 1]]
        for k in range(3):
            i = qidx[e, k]
            if i >= 0:
                c = m if k < 2 else I
                R[i] += w * (c * a[i])
                if want_J:
                    J[i, i] += (w * c) * ca


@njit(cache=True)
def gravity(p, qidx, pidx, R, w):
    """r = (−m g_x, −m g_y, 0);  p = (m, g_x, g_y).  No Jacobian."""
    for e in range(qidx.shape[0]):
        m = p[pidx[e, 0]]
        _add(R, qidx[e, 0], w * (-m * p[pidx[e, 1]]))
        _add(R, qidx[e, 1], w * (-m * p[pidx[e, 2]]))


@njit(cache=True)
def spring(q, v, p, qidx, pidx, R, J, w, cq, cv, want_J):
    """Point-to-point spring-damper (forces.Spring): d = r_Pb − r_Pa, l = |d|, e = d/l,
    F = k (l − l₀) + c l̇, r = (−F e, −F e·A R s_a, F e, F e·A R s_b);
    r_q = G ⊗ (k G + c H v) + F H,  r_v = c G ⊗ G,  G = ∂l/∂q = eᵀD,
    H = Dᵀ(I − eeᵀ)D/l + e·∂²d/∂q²,  D = [−I, −A R s_a, I, A R s_b]."""
    D = np.zeros((2, 6), p.dtype)          # p.dtype: complex in the complex-step R_p (newmark_adjoint.py)
    G = np.zeros(6, p.dtype)
    H = np.zeros((6, 6), p.dtype)
    B = np.zeros((6, 6), p.dtype)
    for e in range(qidx.shape[0]):
        idx, pe = qidx[e], pidx[e]
        ql, vl = _loc(q, idx), _loc(v, idx)
        sa0, sa1 = _offset(p, pe, 0)
        sb0, sb1 = _offset(p, pe, 4)
        k, c, l0 = p[pe[8]], p[pe[9]], p[pe[10]]
        ca, sa = np.cos(ql[2]), np.sin(ql[2])
        cb, sb = np.cos(ql[5]), np.sin(ql[5])
        ra0, ra1 = ca * sa0 - sa * sa1, sa * sa0 + ca * sa1          # A(θa) s_a
        rb0, rb1 = cb * sb0 - sb * sb1, sb * sb0 + cb * sb1
        da0, da1 = -sa * sa0 - ca * sa1, ca * sa0 - sa * sa1        # A(θa) R s_a
        db0, db1 = -sb * sb0 - cb * sb1, cb * sb0 - sb * sb1
        d0 = ql[3] + rb0 - ql[0] - ra0
        d1 = ql[4] + rb1 - ql[1] - ra1
        l = np.sqrt(d0 * d0 + d1 * d1)
        e0, e1 = d0 / l, d1 / l
        dd0 = vl[3] + db0 * vl[5] - vl[0] - da0 * vl[2]
        dd1 = vl[4] + db1 * vl[5] - vl[1] - da1 * vl[2]
        F = k * (l - l0) + c * (e0 * dd0 + e1 * dd1)
        Fe0, Fe1 = F * e0, F * e1
        r = (-Fe0, -Fe1, -(Fe0 * da0 + Fe1 * da1), Fe0, Fe1, Fe0 * db0 + Fe1 * db1)
        for i in range(6):
            _add(R, idx[i], w * r[i])
        if not want_J:
            continue
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
            Hv = 0.0
            for j in range(6):
                Hv += H[i, j] * vl[j]
            B[0, i] = k * G[i] + c * Hv           # row 0 holds dF/dq until B is filled
        dF = B[0].copy()
        for i in range(6):
            for j in range(6):
                B[i, j] = cv * (c * (G[i] * G[j])) + cq * (G[i] * dF[j] + F * H[i, j])
        _add_block(J, idx, B, w)


@njit(cache=True)
def rotational_spring(q, v, p, qidx, pidx, R, J, w, cq, cv, want_J):
    """Torsion spring-damper (forces.RotationalSpring): M = k (θ_b − θ_a − θ₀) + c (ω_b − ω_a),
    r_θa = −M, r_θb = M;  r_q = k·S, r_v = c·S with S the ±1 pattern of (θ_a, θ_b)."""
    for e in range(qidx.shape[0]):
        idx, pe = qidx[e], pidx[e]
        ql, vl = _loc(q, idx), _loc(v, idx)
        k, c = p[pe[0]], p[pe[1]]
        M = k * (ql[5] - ql[2] - p[pe[2]]) + c * (vl[5] - vl[2])
        _add(R, idx[2], w * (-M))
        _add(R, idx[5], w * M)
        if want_J:
            s = w * (cv * c + cq * k)
            for i, si in ((idx[2], -1.0), (idx[5], 1.0)):
                for j, sj in ((idx[2], -1.0), (idx[5], 1.0)):
                    if i >= 0 and j >= 0:
                        J[i, j] += s * (si * sj)


# ----------------------------------------------------------------------------- joints

@njit(cache=True)
def _pin(q, lam, p, idx, pe, rows, n, R, J, wf, bh2, hw, want_J):
    """The two point-coincidence rows Φ = x_a + A(θ_a)s_a − x_b − A(θ_b)s_b of Revolute
    (and of Weld's first two rows): R₁ += w_f Φ_qᵀλ, R₂ += Φ/(βh²); J: w_f Φ_qᵀ, Φ_q and
    w_f βh² ∂(Φ_qᵀλ)/∂q (θθ entries only: −λ·A s_a, +λ·A s_b)."""
    ql = _loc(q, idx)
    sa0, sa1 = _offset(p, pe, 0)
    sb0, sb1 = _offset(p, pe, 4)
    ca, sa = np.cos(ql[2]), np.sin(ql[2])
    cb, sb = np.cos(ql[5]), np.sin(ql[5])
    ra0, ra1 = ca * sa0 - sa * sa1, sa * sa0 + ca * sa1
    rb0, rb1 = cb * sb0 - sb * sb1, sb * sb0 + cb * sb1
    da0, da1 = -sa * sa0 - ca * sa1, ca * sa0 - sa * sa1
    db0, db1 = -sb * sb0 - cb * sb1, cb * sb0 - sb * sb1
    l0 = lam[rows[0]] if rows[0] >= 0 else 0.0
    l1 = lam[rows[1]] if rows[1] >= 0 else 0.0
    z = 0.0 * sa0           # a zero of p's type: one element type for the tuple (real or complex p)
    Gq = ((1.0 + z, z, da0, -1.0 + z, z, -db0), (z, 1.0 + z, da1, z, -1.0 + z, -db1))
    for k in range(6):
        _add(R, idx[k], wf * (Gq[0][k] * l0 + Gq[1][k] * l1))
    if rows[0] >= 0:
        R[n + rows[0]] += (ql[0] + ra0 - ql[3] - rb0) / bh2
    if rows[1] >= 0:
        R[n + rows[1]] += (ql[1] + ra1 - ql[4] - rb1) / bh2
    if not want_J:
        return
    for rr in range(2):
        row = rows[rr]
        if row < 0:
            continue
        for k in range(6):
            i = idx[k]
            if i >= 0:
                J[n + row, i] += Gq[rr][k]
                J[i, n + row] += wf * Gq[rr][k]
    if idx[2] >= 0:
        J[idx[2], idx[2]] += hw * (-(l0 * ra0 + l1 * ra1))
    if idx[5] >= 0:
        J[idx[5], idx[5]] += hw * (l0 * rb0 + l1 * rb1)


@njit(cache=True)
def revolute(q, lam, p, qidx, pidx, rows, n, R, J, wf, bh2, hw, want_J):
    """joints.Revolute: the two pin rows."""
    for e in range(qidx.shape[0]):
        _pin(q, lam, p, qidx[e], pidx[e], rows[e], n, R, J, wf, bh2, hw, want_J)


@njit(cache=True)
def weld(q, lam, p, qidx, pidx, rows, n, R, J, wf, bh2, hw, want_J):
    """joints.Weld: the pin rows plus Φ₃ = θ_b − θ_a − θ₀ (constant Φ_q row, no Hessian)."""
    for e in range(qidx.shape[0]):
        idx, pe, rw = qidx[e], pidx[e], rows[e]
        _pin(q, lam, p, idx, pe, rw, n, R, J, wf, bh2, hw, want_J)
        row = rw[2]
        if row < 0:
            continue
        ta = q[idx[2]] if idx[2] >= 0 else 0.0
        tb = q[idx[5]] if idx[5] >= 0 else 0.0
        l2 = lam[row]
        _add(R, idx[2], wf * (-l2))
        _add(R, idx[5], wf * l2)
        R[n + row] += (tb - ta - p[pe[8]]) / bh2
        if want_J:
            for i, s in ((idx[2], -1.0), (idx[5], 1.0)):
                if i >= 0:
                    J[n + row, i] += s
                    J[i, n + row] += wf * s


# ----------------------------------------------------------------------------- time-dependent kinds

#: time-function codes of ``meta`` (model/timefunctions.py)
CONSTANT, POLYNOMIAL, HARMONIC = 0, 1, 2


@njit(cache=True)
def _timefn(kind, nc, t, p, pe, k0):
    """f(t) of a time function whose coefficients sit at local p columns k0 … k0+nc−1:
    constant 1; polynomial Σ c_k t^k; harmonic offset + amplitude·sin(ω t + phase)."""
    if kind == POLYNOMIAL:
        out = 0.0
        for k in range(nc):
            out = out + 1.0 * p[pe[k0 + k]] * t ** float(k)
        return out
    if kind == HARMONIC:
        return p[pe[k0 + 3]] + p[pe[k0]] * np.sin(p[pe[k0 + 1]] * t + p[pe[k0 + 2]])
    return 1.0


@njit(cache=True)
def driver(q, lam, p, qidx, pidx, rows, meta, n, t, R, J, wf, bh2, hw, want_J):
    """joints.Driver: Φ = c(q) − f(t), c = θ (meta[0] = 2) or the x (0) / y (1) of the body
    frame origin, x_k + (A(θ)(−c̄))_k;  Φ_q = e_k + (A R (−c̄))_k e_θ, Hessian −λ (A(−c̄))_k
    at θθ.  meta = (coordinate, time-function kind, coefficients); p = (c̄x, c̄y, coeffs)."""
    for e in range(qidx.shape[0]):
        idx, pe, row = qidx[e], pidx[e], rows[e, 0]
        if row < 0:
            continue
        coord = meta[e, 0]
        th = q[idx[2]]
        l = lam[row]
        f = _timefn(meta[e, 1], meta[e, 2], t, p, pe, 2)
        if coord == 2:
            R[n + row] += (th - f) / bh2
            R[idx[2]] += wf * l
            if want_J:
                J[n + row, idx[2]] += 1.0
                J[idx[2], n + row] += wf
            continue
        s0, s1 = -p[pe[0]], -p[pe[1]]
        c, s = np.cos(th), np.sin(th)
        if coord == 0:
            r, d = c * s0 - s * s1, -s * s0 - c * s1
        else:
            r, d = s * s0 + c * s1, c * s0 - s * s1
        R[n + row] += (q[idx[coord]] + r - f) / bh2
        R[idx[coord]] += wf * l
        R[idx[2]] += wf * (d * l)
        if want_J:
            J[n + row, idx[coord]] += 1.0
            J[n + row, idx[2]] += d
            J[idx[coord], n + row] += wf
            J[idx[2], n + row] += wf * d
            J[idx[2], idx[2]] += hw * (-(l * r))


@njit(cache=True)
def prismatic(q, lam, p, qidx, pidx, rows, n, R, J, wf, bh2, hw, want_J):
    """joints.Prismatic: Φ₁ = θ_b − θ_a − θ₀, Φ₂ = n·d, n = A(θ_a) R ū, d = r_Pb − r_Pa;
    p = (P̄a, c̄a, P̄b, c̄b, ū, θ₀).  The Hessian of λ₂Φ₂ (numpy: complex step), with
    u_r = A(θ_a)ū, ∂n/∂θ_a = −u_r, ∂d/∂θ_a = −A R s_a, ∂d/∂θ_b = A R s_b:
        θaθa: −n·d + 2 u_r·(A R s_a) + n·(A s_a),  θaθb: −u_r·(A R s_b),  θbθb: −n·(A s_b),
        θa x_a: u_r,  θa x_b: −u_r  (and symmetric)."""
    for e in range(qidx.shape[0]):
        idx, pe, rw = qidx[e], pidx[e], rows[e]
        ql = _loc(q, idx)
        sa0, sa1 = _offset(p, pe, 0)
        sb0, sb1 = _offset(p, pe, 4)
        u0, u1 = p[pe[8]], p[pe[9]]
        ca, sa = np.cos(ql[2]), np.sin(ql[2])
        cb, sb = np.cos(ql[5]), np.sin(ql[5])
        ra0, ra1 = ca * sa0 - sa * sa1, sa * sa0 + ca * sa1
        rb0, rb1 = cb * sb0 - sb * sb1, sb * sb0 + cb * sb1
        da0, da1 = -sa * sa0 - ca * sa1, ca * sa0 - sa * sa1
        db0, db1 = -sb * sb0 - cb * sb1, cb * sb0 - sb * sb1
        ur0, ur1 = ca * u0 - sa * u1, sa * u0 + ca * u1              # A(θa) ū
        n0, n1 = -sa * u0 - ca * u1, ca * u0 - sa * u1               # A(θa) R ū
        d0 = ql[3] + rb0 - ql[0] - ra0
        d1 = ql[4] + rb1 - ql[1] - ra1
        G0 = (0.0, 0.0, -1.0, 0.0, 0.0, 1.0)
        G1 = (-n0, -n1, -(ur0 * d0 + ur1 * d1) - (n0 * da0 + n1 * da1), n0, n1, n0 * db0 + n1 * db1)
        l0 = lam[rw[0]] if rw[0] >= 0 else 0.0
        l1 = lam[rw[1]] if rw[1] >= 0 else 0.0
        for k in range(6):
            _add(R, idx[k], wf * (G0[k] * l0 + G1[k] * l1))
        if rw[0] >= 0:
            R[n + rw[0]] += (ql[5] - ql[2] - p[pe[10]]) / bh2
        if rw[1] >= 0:
            R[n + rw[1]] += (n0 * d0 + n1 * d1) / bh2
        if not want_J:
            continue
        for rr in range(2):
            row = rw[rr]
            if row < 0:
                continue
            for k in range(6):
                i = idx[k]
                g = G0[k] if rr == 0 else G1[k]
                if i >= 0:
                    J[n + row, i] += g
                    J[i, n + row] += wf * g
        H = np.zeros((6, 6), p.dtype)
        H[2, 2] = -(n0 * d0 + n1 * d1) + 2.0 * (ur0 * da0 + ur1 * da1) + (n0 * ra0 + n1 * ra1)
        H[2, 5] = H[5, 2] = -(ur0 * db0 + ur1 * db1)
        H[5, 5] = -(n0 * rb0 + n1 * rb1)
        H[2, 0] = H[0, 2] = ur0
        H[2, 1] = H[1, 2] = ur1
        H[2, 3] = H[3, 2] = -ur0
        H[2, 4] = H[4, 2] = -ur1
        _add_block(J, idx, H, hw * l1)


@njit(cache=True)
def point_force(q, p, qidx, pidx, meta, t, R, J, w, cq, want_J):
    """forces.PointForce: r = −(F, F·A R s), F = F̄ f(t);  r_q: θθ entry F·A s.
    p = (P̄, c̄, F̄, coeffs); meta = (time-function kind, coefficients)."""
    for e in range(qidx.shape[0]):
        idx, pe = qidx[e], pidx[e]
        th = q[idx[2]] if idx[2] >= 0 else 0.0
        s0, s1 = _offset(p, pe, 0)
        f = _timefn(meta[e, 0], meta[e, 1], t, p, pe, 6)
        F0, F1 = p[pe[4]] * f, p[pe[5]] * f
        c, s = np.cos(th), np.sin(th)
        d0, d1 = -s * s0 - c * s1, c * s0 - s * s1
        _add(R, idx[0], w * (-F0))
        _add(R, idx[1], w * (-F1))
        _add(R, idx[2], w * (-(F0 * d0 + F1 * d1)))
        if want_J and idx[2] >= 0:
            J[idx[2], idx[2]] += w * (cq * (F0 * (c * s0 - s * s1) + F1 * (s * s0 + c * s1)))


@njit(cache=True)
def torque(p, qidx, pidx, meta, t, R, w):
    """forces.Torque: r_θ = −T f(t); p = (T, coeffs).  No Jacobian."""
    for e in range(qidx.shape[0]):
        pe = pidx[e]
        _add(R, qidx[e, 2], w * (-(p[pe[0]] * _timefn(meta[e, 0], meta[e, 1], t, p, pe, 1))))
