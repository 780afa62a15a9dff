"""One compiled call per time step of the index-3 Newmark family (issue 19).

The same step as ``NewmarkFamily.step`` + ``newton_acceleration_form``
(integrators/newmark.py), for models whose every component group has a compiled
kernel (compiled/planar.py, compiled/spatial.py): predictor

    q̂ = q_n + h v_n + (½ − β) h² a_n,   v̂ = v_n + (1 − γ) h a_n,

the old-state residual R_old = α_m r_I(x_n) + α_f [r_F(x_n) + Φ_qᵀλ_n] (generalized-α
only), then Newton on z = (a, λ) with q = q̂ + βh² a, v = v̂ + γh a,

    R = [(1−α_m) r_I + (1−α_f)(r_F + Φ_qᵀλ) + R_old,  Φ/(βh²)],
    J = [[Σ w (r_a + γh r_v + βh² r_q) + (1−α_f) βh² ∂(Φ_qᵀλ)/∂q,  (1−α_f) Φ_qᵀ], [Φ_q, 0]],

J factored by compiled/newton_lu.py (dense LU, or sparse above a size), and the same
convergence test: the position update
βh² ‖Δa‖∞ ≤ atol + rtol ‖q‖∞ (q of the iterate the update was computed at).

Why one call per step: the numpy path spends ~90 % of a small model's step in numpy's
per-call overhead over ~20 small groups; a compiled step costs ~10 µs on the five-bar
(benchmarks/README.md, prototype a2).  A failed step (singular matrix, non-finite or
unconverged update) returns a status; the stepper then redoes that step on the numpy
path, which raises the usual StepError / SingularConfiguration naming step and time.

``newton_step_estimate`` is the same step with the adaptive loop's local error estimate
of the new state in the same call (compiled/local_error.with_step), as the Arnold–Brüls
step's ab_step.ab_newton_step_estimate: an adaptive step is then one dispatch from
Python, as a fixed one (benchmarks/README.md, "Adaptive vs fixed: the Newmark family's
fused estimate and the controller's defaults").
"""
import numpy as np
from ._jit import njit

from . import planar, spatial
from . import newton_lu
from .local_error import with_step


@njit(cache=True)
def _view(flat, o, i):
    """Array i of a packed tuple: flat[start : start + rows·cols] as (rows, cols)."""
    return flat[o[i, 0]:o[i, 0] + o[i, 1] * o[i, 2]].reshape((o[i, 1], o[i, 2]))


@njit(cache=True)
def unpack_planar(flat, o):
    """The 27 planar stacked index arrays (stepper.LAYOUT's first ten kinds) of one set
    from the flat int64 array and its (27, 3) offsets (start, rows, cols): passed packed,
    the Python → numba call types two arrays instead of a tuple of 27 (~0.3 µs each per
    call, stepper.pack)."""
    return (_view(flat, o, 0), _view(flat, o, 1), _view(flat, o, 2),
            _view(flat, o, 3), _view(flat, o, 4), _view(flat, o, 5),
            _view(flat, o, 6), _view(flat, o, 7), _view(flat, o, 8),
            _view(flat, o, 9), _view(flat, o, 10), _view(flat, o, 11),
            _view(flat, o, 12), _view(flat, o, 13), _view(flat, o, 14),
            _view(flat, o, 15), _view(flat, o, 16), _view(flat, o, 17),
            _view(flat, o, 18), _view(flat, o, 19), _view(flat, o, 20),
            _view(flat, o, 21), _view(flat, o, 22), _view(flat, o, 23),
            _view(flat, o, 24), _view(flat, o, 25), _view(flat, o, 26))


@njit(cache=True)
def unpack_spatial(flat, o):
    """The 17 spatial stacked index arrays (stepper.LAYOUT's last seven kinds) of one set,
    (17, 3) offsets."""
    return (_view(flat, o, 0), _view(flat, o, 1), _view(flat, o, 2),
            _view(flat, o, 3), _view(flat, o, 4), _view(flat, o, 5),
            _view(flat, o, 6), _view(flat, o, 7), _view(flat, o, 8),
            _view(flat, o, 9), _view(flat, o, 10), _view(flat, o, 11),
            _view(flat, o, 12), _view(flat, o, 13), _view(flat, o, 14),
            _view(flat, o, 15), _view(flat, o, 16))


@njit(cache=True)
def _planar(q, v, a, lam, p, t, n, wi, wf, cq, cv, hw, bh2, want_J, R, J, K, ca):
    """The planar kinds of _evaluate (compiled/planar.py); K: unpack_planar's tuple."""
    if K[0].shape[0]:
        planar.inertia(a, p, K[0], K[1], R, J, wi, ca, want_J)
    if K[2].shape[0]:
        planar.gravity(p, K[2], K[3], R, wf)
    if K[4].shape[0]:
        planar.spring(q, v, p, K[4], K[5], R, J, wf, cq, cv, want_J)
    if K[6].shape[0]:
        planar.rotational_spring(q, v, p, K[6], K[7], R, J, wf, cq, cv, want_J)
    if K[8].shape[0]:
        planar.point_force(q, p, K[8], K[9], K[10], t, R, J, wf, cq, want_J)
    if K[11].shape[0]:
        planar.torque(p, K[11], K[12], K[13], t, R, wf)
    if K[14].shape[0]:
        planar.revolute(q, lam, p, K[14], K[15], K[16], n, R, J, wf, bh2, hw, want_J)
    if K[17].shape[0]:
        planar.weld(q, lam, p, K[17], K[18], K[19], n, R, J, wf, bh2, hw, want_J)
    if K[20].shape[0]:
        planar.prismatic(q, lam, p, K[20], K[21], K[22], n, R, J, wf, bh2, hw, want_J)
    if K[23].shape[0]:
        planar.driver(q, lam, p, K[23], K[24], K[25], K[26], n, t, R, J, wf, bh2, hw, want_J)


@njit(cache=True)
def _spatial(q, v, a, lam, p, t, n, wi, wf, cq, cv, hw, bh2, want_J, R, J, K, ca):
    """The spatial kinds of _evaluate (compiled/spatial.py); K: unpack_spatial's tuple."""
    if K[0].shape[0]:
        spatial.inertia(q, a, p, K[0], K[1], R, J, wi, ca, cq, want_J)
    if K[2].shape[0]:
        spatial.gyroscopic(q, v, p, K[2], K[3], R, J, wf, cq, cv, want_J)
    if K[4].shape[0]:
        spatial.regularization(q, a, p, K[4], K[5], R, J, wi, ca, cq, want_J)
    if K[6].shape[0]:
        spatial.gravity(p, K[6], K[7], R, wf)
    if K[8].shape[0]:
        spatial.normalization(q, lam, p, K[8], K[9], K[10], n, R, J, wf, bh2, hw, want_J)
    if K[11].shape[0]:
        spatial.joint(q, lam, p, K[11], K[12], K[13], 0, n, R, J, wf, bh2, hw, want_J)
    if K[14].shape[0]:
        spatial.joint(q, lam, p, K[14], K[15], K[16], 2, n, R, J, wf, bh2, hw, want_J)


@njit(cache=True)
def _evaluate(q, v, a, lam, p, t, n, wi, wf, cq, cv, hw, bh2, want_J, R, J, Kf, Kp, Ks, s, ca):
    """R (and J when want_J) of every group at time t, forces first (the numpy order).
    J₁₁ += w (c_a r_a + c_v r_v + c_q r_q): c_a = 1 in the Newton matrix, 0 for the
    adjoint's K = ∂R₁/∂q, whose inertial kinds (the spatial ones) have r_q ≠ 0.
    (Kf, Kp, Ks): the stacked index arrays of stepper.CompiledNewmark packed (its
    ``LAYOUT``), Kp (sets, 27, 3) the planar and Ks (sets, 17, 3) the spatial offsets —
    None when the model has no kind of that family: numba then prunes the branch and
    neither types nor compiles those kernels (a planar model compiles no spatial
    kernel; benchmarks/README.md, "compile cost"); s: the set.  Kinds without elements
    are not called (their scratch arrays would still be allocated: the element sets of
    the adjoint step hold one to three kinds).  A model's forces come before its
    constraints within each family; no model mixes the two families."""
    if Kp is not None:
        _planar(q, v, a, lam, p, t, n, wi, wf, cq, cv, hw, bh2, want_J, R, J, unpack_planar(Kf, Kp[s]), ca)
    if Ks is not None:
        _spatial(q, v, a, lam, p, t, n, wi, wf, cq, cv, hw, bh2, want_J, R, J, unpack_spatial(Kf, Ks[s]), ca)


@njit(cache=True)
def newton_step(q0, v0, a0, lam0, p, t, h, beta, gamma, am, af, atol, rtol, max_it, Kf, Kp, Ks, S):
    """x_{n+1} at t + h from x_n = (q0, v0, a0, λ0) at t: returns (q, v, a, λ, iterations, status),
    status 0 converged, 1 singular matrix, 2 non-finite update, 3 not converged.
    (Kf, Kp, Ks): the model's index arrays packed (stepper.pack; set 0; _evaluate); S:
    the factorization's choice (compiled/newton_lu.py: None dense, else the sparse order)."""
    n, m = q0.shape[0], lam0.shape[0]
    N = n + m
    c2 = (0.5 - beta) * h * h
    c1 = (1 - gamma) * h
    qp = np.empty(n)
    vp = np.empty(n)
    for i in range(n):
        qp[i] = q0[i] + h * v0[i] + c2 * a0[i]
        vp[i] = v0[i] + c1 * a0[i]
    bh2 = beta * h * h
    gh = gamma * h
    wi, wf = 1 - am, 1 - af
    hw = wf * beta * h * h
    R_old = np.zeros(N)
    J = np.zeros((N, N))
    a, lam = a0.copy(), lam0.copy()
    q1 = np.empty(n)
    v1 = np.empty(n)
    R = np.zeros(N)
    # iteration 0 evaluates R_old at x_n (generalized-α only); one call site of _evaluate
    # keeps the compiled code (and its compile time) half the size
    first = 0 if (am != 0.0 or af != 0.0) else 1
    for it in range(first, max_it + 1):
        if it == 0:
            xq, xv, xa, xl, Rt, tx = q0, v0, a0, lam0, R_old, t
            w1, w2, cq, cv, cw, want_J = am, af, 0.0, 0.0, 0.0, False
        else:
            for i in range(n):
                q1[i] = qp[i] + bh2 * a[i]
                v1[i] = vp[i] + gh * a[i]
            R[:] = 0.0
            newton_lu.clear(J, S)
            xq, xv, xa, xl, Rt, tx = q1, v1, a, lam, R, t + h
            w1, w2, cq, cv, cw, want_J = wi, wf, bh2, gh, hw, True
        _evaluate(xq, xv, xa, xl, p, tx, n, w1, w2, cq, cv, cw, bh2, want_J, Rt, J, Kf, Kp, Ks, 0, 1.0)
        if it == 0:
            continue
        for i in range(n):
            R[i] = -(R[i] + R_old[i])
        for i in range(n, N):
            R[i] = -R[i]
        LU, piv, ok = newton_lu.factor(J, S)
        if not ok:
            return q1, v1, a, lam, it, 1
        dz = newton_lu.solve(J, LU, piv, S, R, False)
        dq = 0.0
        for i in range(n):
            a[i] += dz[i]
            dq = max(dq, abs(dz[i]))
        for i in range(m):
            lam[i] += dz[n + i]
        dq = bh2 * dq
        for i in range(N):
            if not np.isfinite(dz[i]):
                return q1, v1, a, lam, it, 2
        qmax = 0.0
        for i in range(n):
            qmax = max(qmax, abs(q1[i]))
        if dq <= atol + rtol * qmax:
            for i in range(n):
                q1[i] = qp[i] + bh2 * a[i]
                v1[i] = vp[i] + gh * a[i]
            return q1, v1, a, lam, it, 0
    return q1, v1, a, lam, max_it, 3


@njit(cache=True)
def newton_step_estimate(q0, v0, a0, lam0, p, t, h, beta, gamma, am, af, atol, rtol, max_it, Kf, Kp, Ks, S,
                         ws, cur, z1, z2, z3, t1, s, dq_a, dq_b, err_prev, mean):
    """``newton_step``, and when it converged the adaptive loop's local error estimate of
    the new state in the same call (local_error.with_step, its arguments after ``S``; the
    state has no trailing block): (q, v, a, λ, iterations, status, ‖e‖, proposed h,
    noise-over flag), ‖e‖ = −2.0 when not estimated (status ≠ 0)."""
    q1, v1, a, lam, it, status = newton_step(q0, v0, a0, lam0, p, t, h, beta, gamma, am, af, atol, rtol, max_it,
                                             Kf, Kp, Ks, S)
    if status != 0:
        return q1, v1, a, lam, it, status, -2.0, 0.0, 0.0
    err, hn, over = with_step(q1, v1, a, lam, np.empty(0), h, ws, cur, z1, z2, z3, t1, s, dq_a, dq_b, err_prev,
                              mean)
    return q1, v1, a, lam, it, status, err, hn, over
