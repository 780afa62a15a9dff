"""Compiled index-1 ODE and its explicit Runge–Kutta step, tangent and adjoint (issue 18).

The five-bar's gradient at ∇ψ ≈ 1e-6 on an explicit fifth-order RK takes a few hundred
steps, but each of its seven right-hand sides cost ≈ 0.8 ms on the numpy components
(index1_ode.py through PETSc TS: 26 ms per step forward + adjoint).  Here, for models of
the planar rigid kinds below, one call per step does everything in compiled code:

    ẏ = G(y; ρ) = (v, a),   K(q) z = −R(q, v, 0; ρ),   z = (a, λ),
    R = [ r(q, v, a) + Φ_qᵀλ ;  Φ_q a + γ(q, v) ],    K = [[M, Φ_qᵀ], [Φ_q, 0]]

(the residual of formulations/index1.py at h = 0, affine in z for these kinds, so one
solve gives z exactly; K dense, factored by compiled/dense.py's LU).  The stage
derivatives G_y = [[0, I], [a_q, a_v]], G_ρ = [0; a_ρ] with (a, λ)_{q,v,ρ} = −K⁻¹(R_q,
R_v, R_ρ) at the solution: R_q, R_v analytic (``jac_qv``: 2n complex-step evaluations
of the residual per stage were ≈ 80 % of the adjoint step), R_ρ by complex step of the
same residual kernel (every formula is complex-analytic in q, v, a, λ, p; step 1e-30,
exact to round-off), one evaluation per design column.

Kinds (``KINDS``): Inertia, Gravity, Spring, RotationalSpring, Revolute, Weld — no
time-dependent kind (the step ignores t).  Other models take the numpy path
(integrators/dopri.py).

The step is Dormand–Prince 5(4) (Dormand & Prince 1980; the tableau of PETSc's TSRK
"5dp" and of Hairer, Nørsett & Wanner, Solving ODEs I, Table 5.2), the fifth-order
solution propagated, the fourth-order one for the error estimate, first-same-as-last:
the seventh stage is G(y_{k+1}), the next step's first and the stored a_{k+1}, λ_{k+1}.
``rk_tangent`` is its tangent (dY_i = dy + h Σ A_ij dK_j, dK_i = G_y dY_i + G_ρ) and
``rk_adjoint`` the exact transpose (μ_K_i = h b_i λ + h Σ_{j>i} A_ji μ_Y_j, μ_Y_i =
G_yᵀ μ_K_i, λ_k = λ_{k+1} + Σ μ_Y_i, ∇ψ += Σ G_ρᵀ μ_K_i), the stages recomputed from the
stored y_k and the frozen step h_k (as TSAdjoint does); the seventh stage has b_7 = 0
and is read by no other stage, so the sweeps skip it.
"""
import numpy as np
from ._jit import njit

from .dense import lu_factor, lu_solve, lu_solve_T
from .planar import _add, _loc, gravity, inertia, revolute, rotational_spring, spring, weld

#: complex-step size of R_q, R_v, R_ρ (the residual's parts are O(1..1e3): no underflow)
HCS = 1e-30

# Dormand–Prince 5(4): A (7 × 7), b (5th order), bh (4th order, embedded), c
DP_A = np.array([
    [0, 0, 0, 0, 0, 0, 0],
    [1 / 5, 0, 0, 0, 0, 0, 0],
    [3 / 40, 9 / 40, 0, 0, 0, 0, 0],
    [44 / 45, -56 / 15, 32 / 9, 0, 0, 0, 0],
    [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0, 0, 0],
    [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656, 0, 0],
    [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0]], dtype=np.float64)
DP_B = DP_A[6].copy()
DP_BH = np.array([5179 / 57600, 0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100, 1 / 40])
DP_C = np.array([0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1, 1], dtype=np.float64)


# ----------------------------------------------------------------------------- residual kernels
@njit(cache=True)
def _rot(c, s, x0, x1):
    return c * x0 - s * x1, s * x0 + c * x1


@njit(cache=True)
def _pin(q, p, idx, pe):
    """A pin's local q, A(θ_a)s_a, A(θ_b)s_b and A R s_a, A R s_b (s = P̄ − c̄; any dtype)."""
    ql = _loc(q, idx)
    sa0, sa1 = p[pe[0]] - p[pe[2]], p[pe[1]] - p[pe[3]]
    sb0, sb1 = p[pe[4]] - p[pe[6]], p[pe[5]] - p[pe[7]]
    ra0, ra1 = _rot(np.cos(ql[2]), np.sin(ql[2]), sa0, sa1)
    rb0, rb1 = _rot(np.cos(ql[5]), np.sin(ql[5]), sb0, sb1)
    return ql, ra0, ra1, rb0, rb1, -ra1, ra0, -rb1, rb0


@njit(cache=True)
def unpack(flat, offs):
    """The 14 element-index arrays (Inertia q, p; Gravity q, p; Spring q, p; RotationalSpring
    q, p; Revolute q, p, rows; Weld q, p, rows) from one flat int64 array and its (14, 3)
    offsets (start, rows, cols): two arguments per call instead of 14, whose typing
    dominated a Python → numba call (≈ 60 µs of 80 µs measured)."""
    def v(i):
        return flat[offs[i, 0]:offs[i, 0] + offs[i, 1] * offs[i, 2]].reshape((offs[i, 1], offs[i, 2]))
    return (v(0), v(1), v(2), v(3), v(4), v(5), v(6), v(7), v(8), v(9), v(10), v(11), v(12), v(13))


@njit(cache=True)
def residual(q, v, a, lam, p, n, M, R):
    """R(q, v, a, λ; p) of the index-1 equations (module docstring) into R (zeroed here);
    one dtype for every argument (real, or complex for the complex step)."""
    R[:] = 0.0
    Iq, Ip, Gq, Gp, Sq, Sp, Tq, Tp, Vq, Vp, Vr, Wq, Wp, Wr = M
    # the forces: compiled/planar.py's kernels (weight 1, no Jacobian; any dtype)
    J = np.zeros((1, 1), R.dtype)
    inertia(a, p, Iq, Ip, R, J, 1.0, 0.0, False)
    gravity(p, Gq, Gp, R, 1.0)
    spring(q, v, p, Sq, Sp, R, J, 1.0, 0.0, 0.0, False)
    rotational_spring(q, v, p, Tq, Tp, R, J, 1.0, 0.0, 0.0, False)
    for w in range(2):                                 # Revolute, Weld: the pin rows (+ Weld's angle row)
        Cq, Cp, Cr = (Vq, Vp, Vr) if w == 0 else (Wq, Wp, Wr)
        for e in range(Cq.shape[0]):
            idx, pe, rows = Cq[e], Cp[e], Cr[e]
            ql, ra0, ra1, rb0, rb1, da0, da1, db0, db1 = _pin(q, p, idx, pe)
            vl, al = _loc(v, idx), _loc(a, idx)
            wa, wb = vl[2] * vl[2], vl[5] * vl[5]
            # Φ_q a + γ, γ = −A s_a θ̇_a² + A s_b θ̇_b² (joints.Revolute)
            c0 = al[0] + da0 * al[2] - al[3] - db0 * al[5] - ra0 * wa + rb0 * wb
            c1 = al[1] + da1 * al[2] - al[4] - db1 * al[5] - ra1 * wa + rb1 * wb
            l0 = lam[rows[0]] if rows[0] >= 0 else 0.0 * c0
            l1 = lam[rows[1]] if rows[1] >= 0 else 0.0 * c0
            if rows[0] >= 0:
                R[n + rows[0]] += c0
            if rows[1] >= 0:
                R[n + rows[1]] += c1
            _add(R, idx[0], l0)
            _add(R, idx[1], l1)
            _add(R, idx[2], da0 * l0 + da1 * l1)
            _add(R, idx[3], -l0)
            _add(R, idx[4], -l1)
            _add(R, idx[5], -(db0 * l0 + db1 * l1))
            if w == 1 and rows[2] >= 0:                 # Weld: Φ₃ = θ_b − θ_a − θ₀
                l2 = lam[rows[2]]
                R[n + rows[2]] += al[5] - al[2]
                _add(R, idx[2], -l2)
                _add(R, idx[5], l2)


@njit(cache=True)
def _blk(J, ridx, cidx, B):
    """J[ridx, cidx] += B, ground slots (−1) dropped."""
    for i in range(ridx.shape[0]):
        r = ridx[i]
        if r < 0:
            continue
        for j in range(cidx.shape[0]):
            c = cidx[j]
            if c >= 0:
                J[r, c] += B[i, j]


@njit(cache=True)
def jac_qv(q, v, a, lam, p, n, M, Rq, Rv):
    """R_q, R_v ((n+m) × n) of ``residual`` at (q, v, a, λ), analytic (zeroed here):
    Spring, RotationalSpring: compiled/planar.py's r_q, r_v; the pin rows: ∂(Φ_qᵀλ)/∂θ (θθ: −λ·A s_a, +λ·A s_b) and
    ∂(Φ_q a + γ)/∂θ_a = −A s_a a_θa − A R s_a θ̇_a², ∂/∂θ̇_a = −2 A s_a θ̇_a (b: opposite
    signs).  tests/test_dopri.py checks them against the complex step of ``residual``."""
    Rq[:, :] = 0.0
    Rv[:, :] = 0.0
    Iq, Ip, Gq, Gp, Sq, Sp, Tq, Tp, Vq, Vp, Vr, Wq, Wp, Wr = M
    # the spring kinds' r_q, r_v: compiled/planar.py's kernels (weights cq, cv = 1, 0 and 0, 1)
    scratch = np.zeros(Rq.shape[0])
    spring(q, v, p, Sq, Sp, scratch, Rq, 1.0, 1.0, 0.0, True)
    spring(q, v, p, Sq, Sp, scratch, Rv, 1.0, 0.0, 1.0, True)
    rotational_spring(q, v, p, Tq, Tp, scratch, Rq, 1.0, 1.0, 0.0, True)
    rotational_spring(q, v, p, Tq, Tp, scratch, Rv, 1.0, 0.0, 1.0, True)
    for w in range(2):
        Cq, Cp, Cr = (Vq, Vp, Vr) if w == 0 else (Wq, Wp, Wr)
        for e in range(Cq.shape[0]):
            idx, pe, rows = Cq[e], Cp[e], Cr[e]
            ql, ra0, ra1, rb0, rb1, da0, da1, db0, db1 = _pin(q, p, idx, pe)
            vl, al = _loc(v, idx), _loc(a, idx)
            l0 = lam[rows[0]] if rows[0] >= 0 else 0.0
            l1 = lam[rows[1]] if rows[1] >= 0 else 0.0
            ia, ib = idx[2], idx[5]
            if ia >= 0:
                Rq[ia, ia] += -(l0 * ra0 + l1 * ra1)
            if ib >= 0:
                Rq[ib, ib] += l0 * rb0 + l1 * rb1
            for rr in range(2):
                row = rows[rr]
                if row < 0:
                    continue
                ra, da = (ra0, da0) if rr == 0 else (ra1, da1)
                rb, db = (rb0, db0) if rr == 0 else (rb1, db1)
                if ia >= 0:
                    Rq[n + row, ia] += -ra * al[2] - da * vl[2] * vl[2]
                    Rv[n + row, ia] += -2.0 * ra * vl[2]
                if ib >= 0:
                    Rq[n + row, ib] += rb * al[5] + db * vl[5] * vl[5]
                    Rv[n + row, ib] += 2.0 * rb * vl[5]


@njit(cache=True)
def kmatrix(q, p, n, M, K):
    """K = ∂R/∂(a, λ) = [[M, Φ_qᵀ], [Φ_q, 0]] (R is affine in z) into K (zeroed here): the
    mass and constraint-gradient blocks of compiled/planar.py's Newton-matrix kernels (weights
    1, no Hessian: hw = 0; their residual goes to a scratch vector)."""
    K[:, :] = 0.0
    Iq, Ip, Gq, Gp, Sq, Sp, Tq, Tp, Vq, Vp, Vr, Wq, Wp, Wr = M
    N = K.shape[0]
    R, z = np.zeros(N), np.zeros(N)
    inertia(z, p, Iq, Ip, R, K, 1.0, 1.0, True)
    revolute(q, z, p, Vq, Vp, Vr, n, R, K, 1.0, 1.0, 0.0, True)
    weld(q, z, p, Wq, Wp, Wr, n, R, K, 1.0, 1.0, 0.0, True)


@njit(cache=True)
def _mm(A, B, out, sign, trans):
    """out += sign · op(A) B, op(A) = Aᵀ if trans else A (scalar loops: no BLAS, the same
    sums on every machine)."""
    r = A.shape[1] if trans else A.shape[0]
    kk = A.shape[0] if trans else A.shape[1]
    for i in range(r):
        for j in range(B.shape[1]):
            acc = 0.0
            for k in range(kk):
                acc += (A[k, i] if trans else A[i, k]) * B[k, j]
            out[i, j] += sign * acc


# ----------------------------------------------------------------------------- one right-hand side
@njit(cache=True)
def first(q, v, p, n, m, flat, offs):
    """``accel`` from Python: (z, ok)."""
    z, _, _, ok = accel(q, v, p, n, m, unpack(flat, offs))
    return z, ok


@njit(cache=True)
def accel(q, v, p, n, m, M):
    """(z = (a, λ), LU, piv, ok) at (q, v): K z = −R(q, v, 0, 0)."""
    N = n + m
    R = np.empty(N)
    residual(q, v, np.zeros(n), np.zeros(m), p, n, M, R)
    K = np.empty((N, N))
    kmatrix(q, p, n, M, K)
    LU, piv, ok = lu_factor(K)
    if not ok:
        return np.zeros(N), LU, piv, False
    z = lu_solve(LU, piv, -R)
    return z, LU, piv, True


@njit(cache=True)
def partials(q, v, z, p, n, m, M, dm, nd):
    """(R_q (N × n), R_v (N × n), R_ρ (N × nd)) at (q, v, z): R_q, R_v analytic
    (``jac_qv``), R_ρ by complex step (one evaluation per design column)."""
    N = n + m
    Rq, Rv = np.empty((N, n)), np.empty((N, n))
    jac_qv(q, v, z[:n], z[n:], p, n, M, Rq, Rv)
    return Rq, Rv, rho_partials(q, v, z, p, n, m, M, dm, nd)


@njit(cache=True)
def rho_partials(q, v, z, p, n, m, M, dm, nd):
    """R_ρ (N × nd) by complex step: every parameter of design column j perturbed by i·HCS."""
    N = n + m
    qc, vc = q.astype(np.complex128), v.astype(np.complex128)
    ac, lc = z[:n].astype(np.complex128), z[n:].astype(np.complex128)
    pc = p.astype(np.complex128)
    R = np.empty(N, np.complex128)
    Rp = np.zeros((N, nd))
    for j in range(nd):
        hit = False
        for i in range(p.shape[0]):
            if dm[i] == j:
                pc[i] += 1j * HCS
                hit = True
        if not hit:
            continue
        residual(qc, vc, ac, lc, pc, n, M, R)
        for i in range(p.shape[0]):
            if dm[i] == j:
                pc[i] = p[i]
        for i in range(N):
            Rp[i, j] = R[i].imag / HCS
    return Rp


@njit(cache=True)
def cs_partials(q, v, z, p, n, m, flat, offs):
    """R_q, R_v by complex step of ``residual`` (the check of ``jac_qv``, tests)."""
    M = unpack(flat, offs)
    N = n + m
    qc, vc = q.astype(np.complex128), v.astype(np.complex128)
    ac, lc = z[:n].astype(np.complex128), z[n:].astype(np.complex128)
    pc = p.astype(np.complex128)
    R = np.empty(N, np.complex128)
    Rq, Rv = np.empty((N, n)), np.empty((N, n))
    for j in range(n):
        qc[j] += 1j * HCS
        residual(qc, vc, ac, lc, pc, n, M, R)
        qc[j] = q[j]
        for i in range(N):
            Rq[i, j] = R[i].imag / HCS
        vc[j] += 1j * HCS
        residual(qc, vc, ac, lc, pc, n, M, R)
        vc[j] = v[j]
        for i in range(N):
            Rv[i, j] = R[i].imag / HCS
    return Rq, Rv


@njit(cache=True)
def analytic_partials(q, v, z, p, n, m, flat, offs):
    """``jac_qv`` from Python (tests)."""
    N = n + m
    Rq, Rv = np.empty((N, n)), np.empty((N, n))
    jac_qv(q, v, z[:n], z[n:], p, n, unpack(flat, offs), Rq, Rv)
    return Rq, Rv


@njit(cache=True)
def pullback(q, v, p, n, m, flat, offs, dm, nd, ga, gl):
    """Objective partials on (a, λ) at a stored state pulled back to (y, ρ):
    −(R_q, R_v, R_ρ)ᵀ K⁻ᵀ (g_a, g_λ) (columns: one per objective); (gy, gp, ok)."""
    M = unpack(flat, offs)
    z, LU, piv, ok = accel(q, v, p, n, m, M)
    c = ga.shape[1]
    gy, gp = np.zeros((2 * n, c)), np.zeros((nd, c))
    if not ok:
        return gy, gp, False
    Rq, Rv, Rp = partials(q, v, z, p, n, m, M, dm, nd)
    N = n + m
    rhs = np.empty(N)
    W = np.empty((N, c))
    for j in range(c):
        rhs[:n] = ga[:, j]
        rhs[n:] = gl[:, j]
        W[:, j] = lu_solve_T(LU, piv, rhs)
    _mm(Rq, W, gy[:n], -1.0, True)
    _mm(Rv, W, gy[n:], -1.0, True)
    _mm(Rp, W, gp, -1.0, True)
    return gy, gp, True


# ----------------------------------------------------------------------------- the RK step
@njit(cache=True)
def rk_attempt(y, k1, h, p, n, m, flat, offs, A, b, bh, rtol, atol):
    """One embedded RK attempt from y with first stage k1 = G(y): (y_new, K_last =
    G(y_new) (first-same-as-last), z_new = (a, λ) at y_new, weighted RMS error (PETSc's
    TSErrorWeightedNorm2 of y_new − ŷ, tolerance atol + rtol max(|y_new|, |ŷ|)), ok)."""
    M = unpack(flat, offs)
    s = b.shape[0]
    Nn = 2 * n
    Kst = np.zeros((s, Nn))
    Kst[0] = k1
    Y = np.empty(Nn)
    z = np.zeros(n + m)
    for i in range(1, s - 1):
        Y[:] = y
        for j in range(i):
            if A[i, j] != 0.0:
                Y += (h * A[i, j]) * Kst[j]
        z, _, _, ok = accel(Y[:n], Y[n:], p, n, m, M)
        if not ok:
            return y, k1, z, np.inf, False
        Kst[i, :n] = Y[n:]
        Kst[i, n:] = z[:n]
    ynew = y.copy()
    for j in range(s - 1):
        if b[j] != 0.0:
            ynew += (h * b[j]) * Kst[j]
    z, _, _, ok = accel(ynew[:n], ynew[n:], p, n, m, M)     # the last stage: G(y_new)
    if not ok:
        return y, k1, z, np.inf, False
    Kst[s - 1, :n] = ynew[n:]
    Kst[s - 1, n:] = z[:n]
    yh = y.copy()
    for j in range(s):
        if bh[j] != 0.0:
            yh += (h * bh[j]) * Kst[j]
    err = 0.0
    for i in range(Nn):
        if not (np.isfinite(ynew[i]) and np.isfinite(yh[i])):
            return y, k1, z, np.inf, False
        tol = atol + rtol * max(abs(ynew[i]), abs(yh[i]))
        err += ((ynew[i] - yh[i]) / tol) ** 2
    return ynew, Kst[s - 1].copy(), z, np.sqrt(err / Nn), True


@njit(cache=True)
def _stages(y, h, p, n, m, M, A, s):
    """The stage vectors Y_0 … Y_{s−1} of a step (recomputed from y_k as the forward run)."""
    Nn = 2 * n
    Ys = np.zeros((s, Nn))
    Kst = np.zeros((s, Nn))
    ok = True
    for i in range(s):
        Ys[i] = y
        for j in range(i):
            if A[i, j] != 0.0:
                Ys[i] += (h * A[i, j]) * Kst[j]
        z, _, _, good = accel(Ys[i, :n], Ys[i, n:], p, n, m, M)
        ok = ok and good
        Kst[i, :n] = Ys[i, n:]
        Kst[i, n:] = z[:n]
    return Ys, ok


@njit(cache=True)
def _used(A, b):
    """Stages the step's result reads (b_i ≠ 0 or a later used stage reads it)."""
    s = b.shape[0]
    used = np.zeros(s, np.bool_)
    for i in range(s - 1, -1, -1):
        if b[i] != 0.0:
            used[i] = True
        for j in range(i + 1, s):
            if used[j] and A[j, i] != 0.0:
                used[i] = True
    return used


@njit(cache=True)
def _stage(Y, p, n, m, M, dm, nd):
    """K's factors and R_q, R_v, R_ρ at the stage vector Y = (q, v); ok False: K singular."""
    q, v = Y[:n].copy(), Y[n:].copy()
    z, LU, piv, ok = accel(q, v, p, n, m, M)
    if not ok:
        return LU, piv, np.zeros((n + m, n)), np.zeros((n + m, n)), np.zeros((n + m, nd)), False
    Rq, Rv, Rp = partials(q, v, z, p, n, m, M, dm, nd)
    return LU, piv, Rq, Rv, Rp, True


@njit(cache=True)
def _linear_step(y, h, p, n, m, flat, offs, A, b):
    """What the tangent and adjoint steps start from: the element indices M (``unpack``),
    the number of stages s, the stages whose K enters (``_used``), the stage vectors Y_i
    and whether every stage's K was regular (``_stages``)."""
    M = unpack(flat, offs)
    s = b.shape[0]
    used = _used(A, b)
    Ys, ok = _stages(y, h, p, n, m, M, A, s)
    return M, s, used, Ys, ok


@njit(cache=True)
def rk_tangent(y, h, p, n, m, flat, offs, dm, nd, A, b, dy):
    """dy_{k+1} = dy_k + h Σ b_i dK_i,  dK_i = (dY_v, da),  K da = −(R_q dY_q + R_v dY_v + R_ρ)
    (columns: nd)."""
    M, s, used, Ys, ok = _linear_step(y, h, p, n, m, flat, offs, A, b)
    c = dy.shape[1]
    dK = np.zeros((s, 2 * n, c))
    out = dy.copy()
    for i in range(s):
        if not used[i]:
            continue
        dY = dy.copy()
        for j in range(i):
            if A[i, j] != 0.0:
                dY += (h * A[i, j]) * dK[j]
        LU, piv, Rq, Rv, Rp, good = _stage(Ys[i], p, n, m, M, dm, nd)
        ok = ok and good
        if not good:
            continue
        B = Rp.copy()
        _mm(Rq, dY[:n], B, 1.0, False)
        _mm(Rv, dY[n:], B, 1.0, False)
        dK[i, :n] = dY[n:]
        for j in range(c):
            x = lu_solve(LU, piv, -np.ascontiguousarray(B[:, j]))
            for r in range(n):
                dK[i, n + r, j] = x[r]
        if b[i] != 0.0:
            out += (h * b[i]) * dK[i]
    return out, ok


@njit(cache=True)
def rk_adjoint(y, h, p, n, m, flat, offs, dm, nd, A, b, lam1):
    """The transpose of ``rk_tangent``: (λ_k, ∇ψ increment (nd × c), ok) from λ_{k+1} (2n × c).
    Per stage: W = K⁻ᵀ [μ_v; 0] (c transposed solves), μ_Y = −[R_q, R_v]ᵀ W + [0; μ_q],
    ∇ψ −= R_ρᵀ W."""
    M, s, used, Ys, ok = _linear_step(y, h, p, n, m, flat, offs, A, b)
    c = lam1.shape[1]
    N = n + m
    mK = np.zeros((s, 2 * n, c))
    for i in range(s):
        if b[i] != 0.0:
            mK[i] = (h * b[i]) * lam1
    lam = lam1.copy()
    grad = np.zeros((nd, c))
    W = np.empty((N, c))
    rhs = np.zeros(N)
    for i in range(s - 1, -1, -1):
        if not used[i]:
            continue
        LU, piv, Rq, Rv, Rp, good = _stage(Ys[i], p, n, m, M, dm, nd)
        ok = ok and good
        if not good:
            continue
        for j in range(c):
            for r in range(n):
                rhs[r] = mK[i, n + r, j]
            W[:, j] = lu_solve_T(LU, piv, rhs)
        mY = np.zeros((2 * n, c))
        _mm(Rq, W, mY[:n], -1.0, True)
        _mm(Rv, W, mY[n:], -1.0, True)
        mY[n:] += mK[i, :n]                  # the q̇ = v rows: μ_q onto Y's v part
        _mm(Rp, W, grad, -1.0, True)
        lam += mY
        for j in range(i):
            if A[i, j] != 0.0:
                mK[j] += (h * A[i, j]) * mY
    return lam, grad, ok
