"""One compiled call per tangent step and per adjoint step of the index-3 Newmark family.

The same equations as ``NewmarkFamily.tangent_step`` / ``adjoint_step``
(integrators/newmark.py) for models whose every group has a kernel (compiled/planar.py,
compiled/spatial.py).
With J the Newton matrix at x_{k+1} (factored here by compiled/newton_lu.py), the blocks of
the weighted residual as dense matrices — K = ∂R₁/∂q (forces and w_f ∂(Φ_qᵀλ)/∂q),
C = ∂R₁/∂v, M = ∂R₁/∂a, G = Φ_q — and the old-state blocks K⁰, C⁰, M⁰, G⁰ at x_k with the
weights (α_m, α_f) (when either is nonzero: generalized-α, HHT, WBZ):

  tangent:  J dz = −([K dq̂ + C dv̂; G dq̂/(βh²)] + ∂[R₁; R₂]/∂ρ
                     + [K⁰ dq + C⁰ dv + M⁰ da + α_f G⁰ᵀ dλ + ∂R₁⁰/∂ρ; 0])
  adjoint:  Jᵀ ν = [βh² μ_q + γh μ_v + μ_a; μ_λ],  ν₁ = ν[:n], ν₂ = ν[n:]/(βh²),
            s_q = Kᵀν₁ + Gᵀν₂, s_v = Cᵀν₁,  μ_q = μ_q' − s_q,  μ_v = h(μ_q' − s_q) + μ_v' − s_v,
            μ_a = (½−β)h²(μ_q' − s_q) + (1−γ)h(μ_v' − s_v),  μ_λ = 0,
            ∇ψ −= ∂[R₁; R₂]/∂ρᵀ ν  (the unscaled ν: R₂ = Φ/(βh²) carries the 1/(βh²))
            and with old-state terms, μ_q −= K⁰ᵀν₁, μ_v −= C⁰ᵀν₁, μ_a −= M⁰ᵀν₁, μ_λ −= α_f G⁰ν₁,
            ∇ψ −= ∂R₁⁰/∂ρᵀ ν₁.

The adjoint step by parts (``state_blocks``, ``_adjoint_by_parts``).  Every block is
linear in the weights: R₁ = w₁ R_I + w₂ R_F, with I the kinds weighted by w₁ (r_a:
``Km``) and F all the others, so each state is evaluated once with unit weights —
K_I, K_F (with the Hessian; rows n.. Φ_q), C_F, M_I and Im ∂R_I/∂ρ, Im ∂R_F/∂ρ (the
tiled set 1 holds the I kinds alone) — and the step combines them: K = (1−α_m) K_I +
(1−α_f) K_F, K⁰ = α_m K_I + α_f K_F, C = (1−α_f) C_F, M⁰ = α_m M_I, J = (1−α_m) M_I +
γh (1−α_f) C_F + βh² K with the columns (1−α_f) Φ_qᵀ and rows Φ_q, ∂R₁/∂ρ likewise.
In a sweep x_k's blocks serve step k (old state) and step k − 1 (new state):
``adjoint_sweep`` evaluates each state once instead of twice with two weightings and
does not evaluate J apart — the five-bar's adjoint step from ~35 to ~25 µs
(benchmarks/README.md, "Adjoint sweep by blocks").  The numbers differ from the
weighted evaluations by the summation order only (each entry within a few ulps:
tests/test_compiled_adjoint.py bounds the step against the numpy path as before).
``tangent_step`` keeps the weighted evaluations below.

Each weighted block is one evaluation of the model kernels (newmark_step._evaluate) with the
weights that isolate it — K: (c_a, c_q, c_v) = (0, 1, 0), Hessian weight w_f (the
spatial inertial kinds have r_q ≠ 0, weighted w_i / α_m; the planar inertia's r_q is
zero); C: (c_q, c_v) = (0, 1), no Hessian, on the kinds with r_v alone (``Kv``: spring,
rotational spring, spatial gyroscopic); M: c_q = c_v = 0 on the kinds with r_a alone
(``Km``: planar and spatial inertia, Euler regularization) — so J, K, C, M are the
numpy path's blocks up to summation order.  J is rebuilt at x_{k+1}, not taken from the
forward Newton loop (whose last matrix sits at the iterate before the last update):
the adjoint stays the exact discrete adjoint of the computed trajectory; a rebuilt J
and its LU cost ~5 µs here (benchmarks/README.md).

∂R/∂ρ by complex step inside the compiled code, one complex evaluation per design
column j with p + i·10⁻³⁰ on every parameter that column moves (model/component.py's
CS_H; exact to round-off, as the numpy path's own complex-step and analytic blocks):
column j evaluates only the elements that read a parameter of column j (the others do
not depend on ρ_j), and all columns come from one evaluation per state of the model
tiled nd times (stepper._tiled_arrays: copy j reads p perturbed for column j and writes
its own rows).  The index arrays arrive packed (stepper.pack; planar and spatial offsets apart, None
for a family the model lacks: newmark_step._evaluate): set 0 every element, 1 the
inertia (``Km``), 2 the spring kinds (``Kv``); the tiled design elements apart.

The numpy path stays the reference: complex states or parameters (the ``cs``
verification) never come here, and a singular J returns status 1 so the numpy step
reports it as always.
"""
import numpy as np
from ._jit import njit

from ..model.component import CS_H
from . import newton_lu
from .newmark_step import _evaluate


@njit(cache=True)
def _matrix(q, v, a, lam, p, t, n, w1, w2, cq, cv, hw, bh2, Kf, Kp, Ks, s, ca):
    """The (N, N) matrix of _evaluate at this state with these weights (R discarded),
    element set s (0 all, 1 ``Km``, 2 ``Kv``)."""
    N = n + lam.shape[0]
    R = np.zeros(N)
    J = np.zeros((N, N))
    _evaluate(q, v, a, lam, p, t, n, w1, w2, cq, cv, hw, bh2, True, R, J, Kf, Kp, Ks, s, ca)
    return J


@njit(cache=True)
def _tile(x, nd):
    out = np.empty(nd * x.shape[0])
    for j in range(nd):
        out[j * x.shape[0]:(j + 1) * x.shape[0]] = x
    return out


@njit(cache=True)
def _r_rho_at(q, v, a, lam, t, w1, w2, pc, n, bh2, nd, Kdf, Kdp, Kds, out):
    """out[:, j] = Im R(p + i h Σ_{dmap[i] = j} e_i)/h for every column j from one
    evaluation of the model tiled nd times (stepper._tiled_arrays; pc the nd perturbed
    copies of p)."""
    m = lam.shape[0]
    Rc = np.zeros(nd * (n + m), np.complex128)
    Jd = np.zeros((1, 1), np.complex128)          # not touched (want_J False)
    _evaluate(_tile(q, nd), _tile(v, nd), _tile(a, nd), _tile(lam, nd), pc, t, nd * n, w1, w2, 0.0, 0.0, 0.0,
              bh2, False, Rc, Jd, Kdf, Kdp, Kds, 0, 1.0)
    for j in range(nd):
        for i in range(n):
            out[i, j] = Rc[j * n + i].imag / CS_H
        for i in range(m):
            out[n + i, j] = Rc[nd * n + j * m + i].imag / CS_H


@njit(cache=True)
def _r_rho(q1, v1, a1, l1, t1, w1, w2, q0, v0, a0, l0, t0, w01, w02, old, p, n, bh2, dmap, nd, Kdf, Kdp, Kds):
    """(N, nd) matrices ∂[R₁; R₂]/∂ρ at x_{k+1} (weights w1, w2) and, when ``old``, at x_k
    (weights w01, w02; rows n.. unused): column j = Im R(p + i h Σ_{dmap[i] = j} e_i)/h,
    on the elements that read a parameter of column j only, all columns in one
    evaluation per state of the tiled model (stepper._tiled_arrays, packed in (Kdf, Kdp, Kds) as _evaluate's)."""
    N = n + l1.shape[0]
    out1, out0 = np.zeros((N, nd)), np.zeros((N, nd))
    npar = p.shape[0]
    pc = np.empty(nd * npar, np.complex128)
    for j in range(nd):
        for i in range(npar):
            pc[j * npar + i] = complex(p[i], CS_H) if dmap[i] == j else complex(p[i], 0.0)
    _r_rho_at(q1, v1, a1, l1, t1, w1, w2, pc, n, bh2, nd, Kdf, Kdp, Kds, out1)
    if old:
        _r_rho_at(q0, v0, a0, l0, t0, w01, w02, pc, n, bh2, nd, Kdf, Kdp, Kds, out0)
    return out1, out0


@njit(cache=True)
def _span(S, i, ncol):
    """Positions lo..hi of row i's entries: with S None every column < ncol (position =
    column), else the entries of J's CSR pattern (S[3], S[4]: compiled/newton_lu.py) —
    every block of the step (K, C, M, Φ_q) lies on J's pattern, so a product or sum
    over the pattern reads every nonzero, in the dense loop's column order."""
    if S is None:
        return 0, ncol
    return S[3][i], S[3][i + 1]


@njit(cache=True)
def _col(S, a):
    """The column of position a (``_span``)."""
    if S is None:
        return a
    return S[4][a]


@njit(cache=True)
def _tmul(A, r0, c0, nr, nc, X, w, S):
    """(w A[r0:r0+nr, c0:c0+nc])ᵀ X for X (nr, k), over J's pattern when S (``_span``)."""
    k = X.shape[1]
    out = np.zeros((nc, k))
    for i in range(nr):
        lo, hi = _span(S, r0 + i, c0 + nc)
        for a in range(lo, hi):
            j = _col(S, a) - c0
            if j < 0 or j >= nc:
                continue
            aij = w * A[r0 + i, c0 + j]
            if aij != 0.0:
                for c in range(k):
                    out[j, c] += aij * X[i, c]
    return out


@njit(cache=True)
def _mul(A, r0, c0, nr, nc, X, S=None):
    """A[r0:r0+nr, c0:c0+nc] X for X (nc, k), over J's pattern when S (``_span``)."""
    k = X.shape[1]
    out = np.zeros((nr, k))
    for i in range(nr):
        lo, hi = _span(S, r0 + i, c0 + nc)
        for a in range(lo, hi):
            j = _col(S, a) - c0
            if j < 0 or j >= nc:
                continue
            aij = A[r0 + i, c0 + j]
            if aij != 0.0:
                for c in range(k):
                    out[i, c] += aij * X[j, c]
    return out


@njit(cache=True)
def _pc(p, dmap, nd):
    """The nd perturbed copies of p of the tiled ∂R/∂ρ evaluation (``_r_rho``)."""
    npar = p.shape[0]
    pc = np.empty(nd * npar, np.complex128)
    for j in range(nd):
        for i in range(npar):
            pc[j * npar + i] = complex(p[i], CS_H) if dmap[i] == j else complex(p[i], 0.0)
    return pc


@njit(cache=True)
def _im_at(q, v, a, lam, t, w1, w2, pc, n, bh2, nd, Kdf, Kdp, Kds, s, out):
    """out[:, j] = Im R(p + i h Σ_{dmap[i] = j} e_i) (not yet divided by h) of the tiled
    design element set s (stepper.CompiledNewmark.design_arrays), weights (w1, w2)."""
    m = lam.shape[0]
    Rc = np.zeros(nd * (n + m), np.complex128)
    Jd = np.zeros((1, 1), np.complex128)          # not touched (want_J False)
    _evaluate(_tile(q, nd), _tile(v, nd), _tile(a, nd), _tile(lam, nd), pc, t, nd * n, w1, w2, 0.0, 0.0, 0.0,
              bh2, False, Rc, Jd, Kdf, Kdp, Kds, s, 1.0)
    for j in range(nd):
        for i in range(n):
            out[i, j] = Rc[j * n + i].imag
        for i in range(m):
            out[n + i, j] = Rc[nd * n + j * m + i].imag


@njit(cache=True)
def state_blocks(q, v, a, lam, p, pc, t, n, bh2, nd, MIp, Kf, Kp, Ks, Kdf, Kdp, Kds):
    """The unit-weight blocks of one state (module docstring, "by parts"): (K_I, K_F, C_F,
    M_I, Im ∂R_I/∂ρ, Im ∂R_F/∂ρ) — I the kinds weighted by 1 − α_m (r_a: ``Km``), F all
    the others (forces and constraints, weighted by 1 − α_f); rows n.. of K_F are Φ_q,
    of Im ∂R_F/∂ρ Im ∂Φ/∂ρ/(βh²).  K_I is zero on planar models (the planar inertia has
    no r_q).  MIp: M_I of a planar model, which depends on p alone (planar.inertia),
    evaluated once per call by ``_mass``; a spatial model's M_I is evaluated here."""
    N = n + lam.shape[0]
    KF = _matrix(q, v, a, lam, p, t, n, 0.0, 1.0, 1.0, 0.0, 1.0, bh2, Kf, Kp, Ks, 0, 0.0)
    KI = np.zeros((N, N))
    if Ks is not None:
        KI = _matrix(q, v, a, lam, p, t, n, 1.0, 0.0, 1.0, 0.0, 0.0, bh2, Kf, Kp, Ks, 1, 0.0)
    CF = _matrix(q, v, a, lam, p, t, n, 0.0, 1.0, 0.0, 1.0, 0.0, bh2, Kf, Kp, Ks, 2, 1.0)
    MI = MIp                                    # planar: r_a = diag(m, m, I) reads p alone
    if Ks is not None:
        MI = _matrix(q, v, a, lam, p, t, n, 1.0, 0.0, 0.0, 0.0, 0.0, bh2, Kf, Kp, Ks, 1, 1.0)
    RI, RF = np.zeros((N, nd)), np.zeros((N, nd))
    _im_at(q, v, a, lam, t, 1.0, 0.0, pc, n, bh2, nd, Kdf, Kdp, Kds, 1, RI)
    _im_at(q, v, a, lam, t, 0.0, 1.0, pc, n, bh2, nd, Kdf, Kdp, Kds, 0, RF)
    return KI, KF, CF, MI, RI, RF


@njit(cache=True)
def _mass(q, v, a, lam, p, t, n, bh2, Kf, Kp, Ks):
    """M_I at one state (``state_blocks``' MIp)."""
    return _matrix(q, v, a, lam, p, t, n, 1.0, 0.0, 0.0, 0.0, 0.0, bh2, Kf, Kp, Ks, 1, 1.0)


@njit(cache=True)
def _combine(wI, wF, XI, XF, r1, S):
    """wI X_I + wF X_F on rows < r1, X_F's own rows from r1 on (the unweighted Φ rows);
    with S on J's pattern only (the rest is zero in X_I and X_F: ``_span``)."""
    if S is None:
        out = XF.copy()
    else:
        out = np.zeros_like(XF)
    for i in range(XF.shape[0]):
        if S is None and i >= r1:
            break
        lo, hi = _span(S, i, XF.shape[1])
        for a in range(lo, hi):
            j = _col(S, a)
            out[i, j] = wI * XI[i, j] + wF * XF[i, j] if i < r1 else XF[i, j]
    return out


@njit(cache=True)
def _adjoint_by_parts(q1, l1, mq1, mv1, ma1, ml1, h, beta, gamma, am, af, nd, B1, B0, S):
    """The adjoint step from the unit-weight blocks B1 of x_{k+1} and B0 of x_k
    (``state_blocks``; B0 read only when α_m or α_f is nonzero); S: J's factorization
    (compiled/newton_lu.py)."""
    n, m = q1.shape[0], l1.shape[0]
    N = n + m
    kc = mq1.shape[1]
    bh2, gh = beta * h * h, gamma * h
    wi, wf = 1.0 - am, 1.0 - af
    KI, KF, CF, MI, RI, RF = B1
    Kq = _combine(wi, wf, KI, KF, n, S)
    J = np.zeros((N, N))                   # the Newton matrix at x_{k+1} from its parts
    for i in range(N):
        lo, hi = _span(S, i, N)
        for a in range(lo, hi):
            j = _col(S, a)
            if i < n:
                J[i, j] = wi * MI[i, j] + gh * (wf * CF[i, j]) + bh2 * Kq[i, j] if j < n else wf * KF[i, j]
            elif j < n:
                J[i, j] = KF[i, j]
    LU, piv, ok = newton_lu.factor(J, S)
    mq, mv, ma = np.zeros((n, kc)), np.zeros((n, kc)), np.zeros((n, kc))
    ml = np.zeros((m, kc))
    grad = np.zeros((nd, kc))
    if not ok:
        return mq, mv, ma, ml, grad, 1
    nu = np.empty((N, kc))
    b = np.empty(N)
    for c in range(kc):
        for i in range(n):
            b[i] = bh2 * mq1[i, c] + gh * mv1[i, c] + ma1[i, c]
        for i in range(m):
            b[n + i] = ml1[i, c]
        nu[:, c] = newton_lu.solve(J, LU, piv, S, b, True)
    nu1 = nu[:n].copy()
    nu2 = nu[n:] / bh2
    sq = _tmul(Kq, 0, 0, n, n, nu1, 1.0, S) + _tmul(KF, n, 0, m, n, nu2, 1.0, S)
    sv = _tmul(CF, 0, 0, n, n, nu1, wf, S)
    for i in range(n):
        for c in range(kc):
            dq = mq1[i, c] - sq[i, c]
            dv = mv1[i, c] - sv[i, c]
            mq[i, c] = dq
            mv[i, c] = h * dq + dv
            ma[i, c] = (0.5 - beta) * h * h * dq + (1.0 - gamma) * h * dv
    Rr = _combine(wi, wf, RI, RF, n, None) / CS_H
    grad -= _tmul(Rr, 0, 0, N, nd, nu, 1.0, None)
    if am != 0.0 or af != 0.0:
        KI, KF, CF, MI, RI, RF = B0
        mq -= _tmul(_combine(am, af, KI, KF, n, S), 0, 0, n, n, nu1, 1.0, S)
        mv -= _tmul(CF, 0, 0, n, n, nu1, af, S)
        ma -= _tmul(MI, 0, 0, n, n, nu1, am, S)
        ml -= af * _mul(KF, n, 0, m, n, nu1, S)              # rows n.. of a matrix of all kinds: G⁰
        grad -= _tmul(_combine(am, af, RI, RF, n, None) / CS_H, 0, 0, n, nd, nu1, 1.0, None)
    return mq, mv, ma, ml, grad, 0


@njit(cache=True)
def adjoint_step(q0, v0, a0, l0, q1, v1, a1, l1, mq1, mv1, ma1, ml1, p, t, h, beta, gamma, am, af,
                 dmap, nd, Kf, Kp, Ks, Kdf, Kdp, Kds, S):
    """(μ_q, μ_v, μ_a, μ_λ, ∇ψ increment (nd, k), status) of the step x_k → x_{k+1} at t
    (module docstring); status 0, or 1 at a singular J (nothing else is meaningful then)."""
    n = q1.shape[0]
    bh2 = beta * h * h
    old = am != 0.0 or af != 0.0
    pc = _pc(p, dmap, nd)
    MIp = _mass(q1, v1, a1, l1, p, t + h, n, bh2, Kf, Kp, Ks)
    B1 = state_blocks(q1, v1, a1, l1, p, pc, t + h, n, bh2, nd, MIp, Kf, Kp, Ks, Kdf, Kdp, Kds)
    B0 = state_blocks(q0, v0, a0, l0, p, pc, t, n, bh2, nd, MIp, Kf, Kp, Ks, Kdf, Kdp, Kds) if old else B1
    return _adjoint_by_parts(q1, l1, mq1, mv1, ma1, ml1, h, beta, gamma, am, af, nd, B1, B0, S)


@njit(cache=True)
def adjoint_sweep(Q, Vl, A, L, T, H, k0, k1, mq, mv, ma, ml, grad, gref, b0, GQ, GV, GA, GL, GP, GR, p, beta,
                  gamma, am, af, dmap, nd, timed, Kf, Kp, Ks, Kdf, Kdp, Kds, S):
    """Reverse steps k1−1, …, k0 of a stored trajectory (rows k of Q, Vl, A, L; t_k = T[k],
    h_k = H[k]) from μ_{k1} = (mq, mv, ma, ml) in one call: each step is ``adjoint_step``,
    with the blocks of a state evaluated once (x_k's serve step k as the old state and
    step k − 1 as the new one: ``state_blocks`` are weight-free), then the objective
    partials of state k (row k − b0 of GQ … GR: sensitivity/local_table.py) are added as
    Problem._adjoint_sweep adds them — μ_k = μ + g_x, ∇ψ = (∇ψ + Δ∇ψ) + g_ρ, g_ref summed
    — so the numbers are those of ``adjoint_step`` called step by step, bit for bit,
    without the Python work per step (benchmarks/README.md); ``timed``: the model has time-dependent kinds.  Returns
    (μ_k, ∇ψ, g_ref, k): k = k0 when every step ran, else k' + 1 where step k' met a
    singular J (μ, ∇ψ, g_ref then those of state k' + 1; the caller runs step k' on the
    numpy path, which reports)."""
    n = Q.shape[1]
    pc = _pc(p, dmap, nd)
    h = H[k1 - 1]
    MIp = _mass(Q[k1], Vl[k1], A[k1], L[k1], p, T[k1 - 1] + h, n, beta * h * h, Kf, Kp, Ks)
    B1 = state_blocks(Q[k1], Vl[k1], A[k1], L[k1], p, pc, T[k1 - 1] + h, n, beta * h * h, nd, MIp, Kf, Kp, Ks,
                      Kdf, Kdp, Kds)
    for k in range(k1 - 1, k0 - 1, -1):
        h = H[k]
        # x_{k+1}'s blocks from the last step hold for this one when they were evaluated
        # at the same βh² (rows n.. of ∂R/∂ρ) and time (t_{k+1} vs t_k + h_k: an ulp
        # apart on a grid t₀ + k h; only the time-dependent kinds read t)
        if k < k1 - 1 and not (H[k + 1] == h and (not timed or T[k + 1] == T[k] + h)):
            B1 = state_blocks(Q[k + 1], Vl[k + 1], A[k + 1], L[k + 1], p, pc, T[k] + h, n, beta * h * h, nd,
                              MIp, Kf, Kp, Ks, Kdf, Kdp, Kds)
        B0 = state_blocks(Q[k], Vl[k], A[k], L[k], p, pc, T[k], n, beta * h * h, nd, MIp, Kf, Kp, Ks, Kdf, Kdp,
                          Kds)
        r = _adjoint_by_parts(Q[k + 1], L[k + 1], mq, mv, ma, ml, h, beta, gamma, am, af, nd, B1, B0, S)
        if r[5] != 0:
            return mq, mv, ma, ml, grad, gref, k + 1
        i = k - b0
        mq = r[0] + GQ[i]
        mv = r[1] + GV[i]
        ma = r[2] + GA[i]
        ml = r[3] + GL[i]
        grad = grad + r[4] + GP[i]
        gref = gref + GR[i]
        B1 = B0
    return mq, mv, ma, ml, grad, gref, k0


@njit(cache=True)
def tangent_step(q0, v0, a0, l0, q1, v1, a1, l1, dq, dv, da, dl, p, t, h, beta, gamma, am, af, dmap, nd, Kf,
                 Kp, Ks, Kdf, Kdp, Kds, S):
    """(dq, dv, da, dλ of x_{k+1} (each (·, nd)), status) from those of x_k (module
    docstring); status 0, or 1 at a singular J."""
    n, m = q1.shape[0], l1.shape[0]
    N = n + m
    kc = dq.shape[1]
    bh2, gh = beta * h * h, gamma * h
    wi, wf = 1.0 - am, 1.0 - af
    t1 = t + h
    dqp = dq + h * dv + (0.5 - beta) * h * h * da
    dvp = dv + (1.0 - gamma) * h * da
    J = _matrix(q1, v1, a1, l1, p, t1, n, wi, wf, bh2, gh, wf * bh2, bh2, Kf, Kp, Ks, 0, 1.0)
    LU, piv, ok = newton_lu.factor(J, S)
    if not ok:
        return dqp, dvp, da, dl, 1
    Kq = _matrix(q1, v1, a1, l1, p, t1, n, wi, wf, 1.0, 0.0, wf, bh2, Kf, Kp, Ks, 0, 0.0)
    Cv = _matrix(q1, v1, a1, l1, p, t1, n, 0.0, wf, 0.0, 1.0, 0.0, bh2, Kf, Kp, Ks, 2, 1.0)
    old = am != 0.0 or af != 0.0
    Rr, R0 = _r_rho(q1, v1, a1, l1, t1, wi, wf, q0, v0, a0, l0, t, am, af, old, p, n, bh2, dmap, nd, Kdf, Kdp, Kds)
    r = Rr[:, :kc].copy()
    r[:n] += _mul(Kq, 0, 0, n, n, dqp, S) + _mul(Cv, 0, 0, n, n, dvp, S)
    r[n:] += _mul(J, n, 0, m, n, dqp, S) / bh2
    if old:
        K0 = _matrix(q0, v0, a0, l0, p, t, n, am, af, 1.0, 0.0, af, bh2, Kf, Kp, Ks, 0, 0.0)
        C0 = _matrix(q0, v0, a0, l0, p, t, n, 0.0, af, 0.0, 1.0, 0.0, bh2, Kf, Kp, Ks, 2, 1.0)
        M0 = _matrix(q0, v0, a0, l0, p, t, n, am, af, 0.0, 0.0, 0.0, bh2, Kf, Kp, Ks, 1, 1.0)
        r[:n] += (_mul(K0, 0, 0, n, n, dq, S) + _mul(C0, 0, 0, n, n, dv, S) + _mul(M0, 0, 0, n, n, da, S)
                  + af * _tmul(K0, n, 0, m, n, dl, 1.0, S) + R0[:n, :kc])
    dz = np.empty((N, kc))
    for c in range(kc):
        dz[:, c] = newton_lu.solve(J, LU, piv, S, -r[:, c], False)
    da1 = dz[:n].copy()
    return dqp + bh2 * da1, dvp + gh * da1, da1, dz[n:].copy(), 0
