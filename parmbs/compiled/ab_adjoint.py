"""One compiled call per adjoint step, and per tangent step (``ab_tangent_step``: the
same blocks), of generalized-α in the Arnold–Brüls form (issue 19).

The same equations as ``ArnoldBrulsAlpha.adjoint_step`` (integrators/genalpha_ab.py):
with J the Newton matrix at x_{k+1} (compiled/ab_step.evaluate, factored by
compiled/sparse_lu.py), K = ∂R₁/∂q and C = ∂R₁/∂v at fixed z, G = Φ_q, c = (1−α_f)/(1−α_m),
β'h² = cβh², γ'h = cγh:

    Jᵀ ν = [β'h² μ_q + γ'h μ_v + μ_q̈ + c μ_a;  μ_λ],   ν₁ = ν[:n],  ν₂ = ν[n:]/(β'h²),
    ∂ψ/∂q̂ = μ_q − Kᵀν₁ − Gᵀν₂,   ∂ψ/∂v̂ = μ_v − Cᵀν₁,   ∂ψ/∂s = βh² ∂ψ/∂q̂ + γh ∂ψ/∂v̂ + μ_a,
    μ_q,n = ∂ψ/∂q̂,  μ_v,n = h ∂ψ/∂q̂ + ∂ψ/∂v̂,
    μ_a,n = (½−β)h² ∂ψ/∂q̂ + (1−γ)h ∂ψ/∂v̂ − α_m/(1−α_m) ∂ψ/∂s,  μ_q̈,n = α_f/(1−α_m) ∂ψ/∂s,
    μ_λ,n = 0,   ∇ψ −= ∂[R₁; R₂]/∂ρᵀ ν  (unscaled ν: R₂ = Φ/(β'h²) carries the 1/(β'h²)).

K and C are evaluations of the same kernels with the weights that isolate them — K:
(c_a, c_q, c_v, Hessian) = (0, 1, 0, 1), C: (0, 0, 1, 0) (compiled/newmark_adjoint.py's
convention) — so they are the numpy path's blocks up to summation order.  J is rebuilt
at x_{k+1}, not taken from the forward Newton loop (whose last matrix sits at the
iterate before the last update): the exact discrete adjoint of the computed trajectory.
Jᵀν by the transposed solve of the same factors, refined once (sparse_lu.solve_T_refined).
∂R/∂ρ by complex step, one complex evaluation per design column with p + i·10⁻³⁰ on the
parameters that column moves (model/component.py's CS_H), of the elements that read
one of them only (the others' derivative is zero): exact to round-off, as the numpy
path's own blocks.  A zero pivot returns status 1 and the
numpy step runs (and reports) instead.
"""
import numpy as np
from ._jit import njit

from ..model.component import CS_H
from .ab_step import evaluate
from .sparse_lu import factor, solve_refined, solve_T_refined


@njit(cache=True)
def _matrix(q, v, a, lam, p, t, n, cq, cv, hw, bh2, ca, Kf, Kp, Ks, Vf, Vo, rp):
    """The (N, N) matrix of ab_step.evaluate at this state with these weights (set 0)."""
    N = n + lam.shape[0]
    R = np.zeros(N)
    J = np.zeros((N, N))
    evaluate(q, v, a, lam, p, t, n, cq, cv, hw, bh2, True, R, J, Kf, Kp, Ks, Vf, Vo, 0, rp, ca)
    return J


@njit(cache=True)
def _r_rho(q, v, a, lam, p, t, n, bh2, dmap, nd, Kdf, Kdp, Kds, Vdf, Vdo, rp):
    """(N, nd): column j = Im R(p + i h Σ_{dmap[i] = j} e_i)/h (R = [R₁; Φ/(β'h²)]), each
    from the elements that read a parameter of column j (set j of the packed (Kdf, Kdp,
    Kds), (Vdf, Vdo): ab_stepper.CompiledAB._design)."""
    N = n + lam.shape[0]
    out = np.zeros((N, nd))
    pc = np.empty(p.shape[0], np.complex128)
    Jd = np.zeros((1, 1), np.complex128)          # not touched (want_J False)
    for j in range(nd):
        for i in range(p.shape[0]):
            pc[i] = complex(p[i], CS_H) if dmap[i] == j else complex(p[i], 0.0)
        Rc = np.zeros(N, np.complex128)
        evaluate(q, v, a, lam, pc, t, n, 0.0, 0.0, 0.0, bh2, False, Rc, Jd, Kdf, Kdp, Kds, Vdf, Vdo, j, rp, 1.0)
        for i in range(N):
            out[i, j] = Rc[i].imag / CS_H
    return out


@njit(cache=True)
def ab_adjoint_step(q1, v1, qdd1, l1, mq1, mv1, mqdd1, ml1, ma1, p, t, h, beta, gamma, am, af, dmap, Kdf, Kdp,
                    Kds, Vdf, Vdo, nd, Kf, Kp, Ks, Vf, Vo, rp, perm, ptr, idx, jp, ji):
    """(μ_q, μ_v, μ_q̈, μ_λ, μ_a, ∇ψ increment (nd, k), status) of the step x_k → x_{k+1} at t
    (module docstring); status 0, or 1 at a zero pivot (nothing else is meaningful then)."""
    n, m = q1.shape[0], l1.shape[0]
    N = n + m
    kc = mq1.shape[1]
    c = (1.0 - af) / (1.0 - am)
    B = c * beta * h * h
    G = c * gamma * h
    t1 = t + h
    mq, mv, mqdd, ma = np.zeros((n, kc)), np.zeros((n, kc)), np.zeros((n, kc)), np.zeros((n, kc))
    ml = np.zeros((m, kc))
    grad = np.zeros((nd, kc))
    J = _matrix(q1, v1, qdd1, l1, p, t1, n, B, G, B, B, 1.0, Kf, Kp, Ks, Vf, Vo, rp)
    LU, ok = factor(J, jp, ji, perm, ptr, idx)
    if not ok:
        return mq, mv, mqdd, ml, ma, grad, 1
    nu = np.empty((N, kc))
    b = np.empty(N)
    for col in range(kc):
        for i in range(n):
            b[i] = B * mq1[i, col] + G * mv1[i, col] + mqdd1[i, col] + c * ma1[i, col]
        for i in range(m):
            b[n + i] = ml1[i, col]
        nu[:, col] = solve_T_refined(J, jp, ji, LU, perm, ptr, idx, b)
    Kq = _matrix(q1, v1, qdd1, l1, p, t1, n, 1.0, 0.0, 1.0, B, 0.0, Kf, Kp, Ks, Vf, Vo, rp)
    Cv = _matrix(q1, v1, qdd1, l1, p, t1, n, 0.0, 1.0, 0.0, B, 0.0, Kf, Kp, Ks, Vf, Vo, rp)
    for col in range(kc):
        for j in range(n):
            sq = 0.0
            sv = 0.0
            for i in range(n):
                sq += Kq[i, j] * nu[i, col]
                sv += Cv[i, j] * nu[i, col]
            for i in range(m):
                sq += J[n + i, j] * (nu[n + i, col] / B)
            dq = mq1[j, col] - sq
            dv = mv1[j, col] - sv
            s = beta * h * h * dq + gamma * h * dv + ma1[j, col]
            mq[j, col] = dq
            mv[j, col] = h * dq + dv
            ma[j, col] = (0.5 - beta) * h * h * dq + (1 - gamma) * h * dv - am / (1.0 - am) * s
            mqdd[j, col] = af / (1.0 - am) * s
    Rr = _r_rho(q1, v1, qdd1, l1, p, t1, n, B, dmap, nd, Kdf, Kdp, Kds, Vdf, Vdo, rp)
    for j in range(nd):
        for col in range(kc):
            g = 0.0
            for i in range(N):
                g += Rr[i, j] * nu[i, col]
            grad[j, col] = -g
    return mq, mv, mqdd, ml, ma, grad, 0


@njit(cache=True)
def ab_tangent_step(q1, v1, qdd1, l1, dq, dv, dqdd, dl, da, p, t, h, beta, gamma, am, af, dmap, Kdf, Kdp, Kds, Vdf,
                    Vdo, nd, Kf, Kp, Ks, Vf, Vo, rp, perm, ptr, idx, jp, ji):
    """(dq, dv, dq̈, dλ, da of x_{k+1} (each (·, nd)), status) from those of x_k: the tangent
    step of ``ArnoldBrulsAlpha.tangent_step`` with the adjoint step's blocks,
        J dz = −([K dq̂ + C dv̂; G dq̂/(β'h²)] + ∂[R₁; R₂]/∂ρ),
    (dq̂, dv̂, ds) the predictor applied to the columns, x_{k+1}'s blocks from dz and
    da_{k+1} = c dq̈_{k+1} + ds; status 1 at a zero pivot."""
    n, m = q1.shape[0], l1.shape[0]
    N = n + m
    c = (1.0 - af) / (1.0 - am)
    B = c * beta * h * h
    G = c * gamma * h
    t1 = t + h
    ds = (af * dqdd - am * da) / (1.0 - am)
    dqp = dq + h * dv + (0.5 - beta) * h * h * da + beta * h * h * ds
    dvp = dv + (1 - gamma) * h * da + gamma * h * ds
    J = _matrix(q1, v1, qdd1, l1, p, t1, n, B, G, B, B, 1.0, Kf, Kp, Ks, Vf, Vo, rp)
    LU, ok = factor(J, jp, ji, perm, ptr, idx)
    if not ok:
        return dqp, dvp, dqdd, dl, da, 1
    Kq = _matrix(q1, v1, qdd1, l1, p, t1, n, 1.0, 0.0, 1.0, B, 0.0, Kf, Kp, Ks, Vf, Vo, rp)
    Cv = _matrix(q1, v1, qdd1, l1, p, t1, n, 0.0, 1.0, 0.0, B, 0.0, Kf, Kp, Ks, Vf, Vo, rp)
    r = _r_rho(q1, v1, qdd1, l1, p, t1, n, B, dmap, nd, Kdf, Kdp, Kds, Vdf, Vdo, rp)
    kc = dq.shape[1]
    dz = np.empty((N, kc))
    for col in range(kc):
        b = np.empty(N)
        for i in range(n):
            s = 0.0
            for j in range(n):
                s += Kq[i, j] * dqp[j, col] + Cv[i, j] * dvp[j, col]
            b[i] = -(s + r[i, col])
        for i in range(m):
            s = 0.0
            for j in range(n):
                s += J[n + i, j] * dqp[j, col]
            b[n + i] = -(s / B + r[n + i, col])
        dz[:, col] = solve_refined(J, jp, ji, LU, perm, ptr, idx, b)
    dqdd1 = dz[:n].copy()
    return dqp + B * dqdd1, dvp + G * dqdd1, dqdd1, dz[n:].copy(), c * dqdd1 + ds, 0


@njit(cache=True)
def ab_adjoint_sweep(Q, V, QDD, L, T, H, k0, k1, mq, mv, mqdd, ml, ma, grad, gref, b0, GQ, GV, GA, GL, GE, GP, GR,
                     p, beta, gamma, am, af, dmap, Kdf, Kdp, Kds, Vdf, Vdo, nd, Kf, Kp, Ks, Vf, Vo, rp, perm, ptr,
                     idx, jp, ji):
    """Reverse steps k1−1, …, k0 of a stored trajectory (rows k of Q, V, QDD (q̈), L; t_k =
    T[k], h_k = H[k]) from μ_{k1} = (mq, mv, mqdd, ml, ma) in one call
    (sensitivity/adjoint_batch.py): each step is ``ab_adjoint_step`` at x_{k+1}, then the
    objective partials of state k (row k − b0 of GQ … GR: sensitivity/local_table.py; GE
    the pseudo-acceleration's, zero) are added as Problem._adjoint_sweep adds them —
    μ_k = μ + g_x block by block, ∇ψ = (∇ψ + Δ∇ψ) + g_ρ, g_ref summed — so the numbers
    are those of the per-step sweep bit for bit, without its Python work per step
    (~40 µs on the spatial double pendulum, benchmarks/README.md).  Returns (μ_k (five
    blocks), ∇ψ, g_ref, k): k = k0 when every step ran, else k' + 1 where step k' met a
    zero pivot (μ, ∇ψ, g_ref then those of state k' + 1; the caller runs step k' on the
    numpy path, which reports)."""
    for k in range(k1 - 1, k0 - 1, -1):
        r = ab_adjoint_step(Q[k + 1], V[k + 1], QDD[k + 1], L[k + 1], mq, mv, mqdd, ml, ma, p, T[k], H[k], beta,
                            gamma, am, af, dmap, Kdf, Kdp, Kds, Vdf, Vdo, nd, Kf, Kp, Ks, Vf, Vo, rp, perm, ptr,
                            idx, jp, ji)
        if r[6] != 0:
            return mq, mv, mqdd, ml, ma, grad, gref, k + 1
        i = k - b0
        mq = r[0] + GQ[i]
        mv = r[1] + GV[i]
        mqdd = r[2] + GA[i]
        ml = r[3] + GL[i]
        ma = r[4] + GE[i]
        grad = grad + r[5] + GP[i]
        gref = gref + GR[i]
    return mq, mv, mqdd, ml, ma, grad, gref, k0
