"""One compiled call per forward step of generalized-α in the Arnold–Brüls form (issue 19).

The same step as ``ArnoldBrulsAlpha.step`` (integrators/genalpha_ab.py, equations in
its docstring): with c = (1−α_f)/(1−α_m) and s_n = (α_f q̈_n − α_m a_n)/(1−α_m),

    q̂ = q_n + h v_n + (½−β) h² a_n + βh² s_n,   v̂ = v_n + (1−γ) h a_n + γh s_n,

Newton on z = (q̈_{n+1}, λ_{n+1}) with q = q̂ + β'h² q̈, v = v̂ + γ'h q̈ (β' = cβ, γ' = cγ),

    R = [M q̈ + r_F + Φ_qᵀλ,  Φ/(β'h²)],
    J = [[Σ (r_a + γ'h r_v + β'h² r_q) + β'h² ∂(Φ_qᵀλ)/∂q,  Φ_qᵀ], [Φ_q, 0]],

the same convergence test as integrators/newmark.newton_acceleration_form, and
a_{n+1} = c q̈_{n+1} + s_n.  The model is evaluated by the kernels of compiled/planar.py
and compiled/spatial.py (newmark_step._evaluate, weights w_i = w_f = 1) and of
compiled/vehicle.py (tyres, spring-dampers, bump stops, universal and rigid joints,
revolute drivers); J is factored by compiled/sparse_lu.py in its static order, each
solve refined once (sparse_lu.solve_refined).  A failed step (zero pivot, non-finite or
unconverged update) returns a status and the stepper redoes it on the numpy path, which
names step and time.

The adjoint and tangent steps are compiled/ab_adjoint.py.
"""
import numpy as np
from ._jit import njit

from . import vehicle
from .newmark_step import _evaluate as _evaluate_rigid, _view
from .sparse_lu import factor, solve_refined
from .local_error import with_step


@njit(cache=True)
def unpack_vehicle(flat, o):
    """The 18 stacked index arrays of ab_stepper.VLAYOUT of one set (stepper.pack's packing,
    newmark_step._view)."""
    return (_view(flat, o, 0), _view(flat, o, 1), _view(flat, o, 2), _view(flat, o, 3),
            _view(flat, o, 4), _view(flat, o, 5), _view(flat, o, 6), _view(flat, o, 7),
            _view(flat, o, 8), _view(flat, o, 9), _view(flat, o, 10), _view(flat, o, 11),
            _view(flat, o, 12), _view(flat, o, 13), _view(flat, o, 14), _view(flat, o, 15),
            _view(flat, o, 16), _view(flat, o, 17))


@njit(cache=True)
def evaluate(q, v, a, lam, p, t, n, cq, cv, hw, bh2, want_J, R, J, Kf, Kp, Ks, Vf, Vo, s, rp, ca):
    """R (and J) of every group with unit weights: the rigid kinds (newmark_step._evaluate,
    (Kf, Kp, Ks) as there, c_a the weight of r_a), then the vehicle kinds in
    ab_stepper.VLAYOUT's order ((Vf, Vo): their packed arrays); s the element set."""
    _evaluate_rigid(q, v, a, lam, p, t, n, 1.0, 1.0, cq, cv, hw, bh2, want_J, R, J, Kf, Kp, Ks, s, ca)
    V = unpack_vehicle(Vf, Vo[s])
    if V[0].shape[0]:
        vehicle.force(vehicle.LINEAR, q, v, p, V[0], V[1], rp, R, J, 1.0, cq, cv, want_J)
    if V[2].shape[0]:
        vehicle.force(vehicle.ILTIS_STRUT, q, v, p, V[2], V[3], rp, R, J, 1.0, cq, cv, want_J)
    if V[4].shape[0]:
        vehicle.force(vehicle.BUMP_STOP, q, v, p, V[4], V[5], rp, R, J, 1.0, cq, cv, want_J)
    if V[6].shape[0]:
        vehicle.force(vehicle.TYRE, q, v, p, V[6], V[7], rp, R, J, 1.0, cq, cv, want_J)
    if V[8].shape[0]:
        vehicle.joint(q, lam, p, V[8], V[9], V[10], np.array([[0, 1]]), n, R, J, 1.0, bh2, hw, want_J)
    if V[11].shape[0]:
        vehicle.joint(q, lam, p, V[11], V[12], V[13], np.array([[0, 2], [0, 3], [1, 3]]), n, R, J, 1.0, bh2, hw,
                      want_J)
    if V[14].shape[0]:
        vehicle.revolute_driver(q, lam, p, V[14], V[15], V[16], V[17], n, t, R, J, 1.0, bh2, hw, want_J)


@njit(cache=True)
def ab_newton_step(q0, v0, qdd0, lam0, a0, p, t, h, beta, gamma, am, af, atol, rtol, max_it, Kf, Kp, Ks, Vf, Vo,
                   rp, perm, ptr, idx, jp, ji):
    """x_{n+1} at t + h from x_n = (q, v, q̈, λ, a) at t: returns (q, v, q̈, λ, a, iterations,
    status), status 0 converged, 1 zero pivot, 2 non-finite update, 3 not converged.
    (Kf, Kp, Ks), (Vf, Vo): the packed index arrays of the rigid and vehicle kinds (set 0);
    rp the road (vehicle.road_params); (perm, ptr, idx) sparse_lu's order, (jp, ji) J's
    pattern."""
    n, m = q0.shape[0], lam0.shape[0]
    N = n + m
    c = (1.0 - af) / (1.0 - am)
    c2 = (0.5 - beta) * h * h
    bb = beta * h * h
    c1 = (1 - gamma) * h
    gg = gamma * h
    s = np.empty(n)
    qp = np.empty(n)
    vp = np.empty(n)
    for i in range(n):
        s[i] = (af * qdd0[i] - am * a0[i]) / (1.0 - am)
        qp[i] = q0[i] + h * v0[i] + c2 * a0[i] + bb * s[i]
        vp[i] = v0[i] + c1 * a0[i] + gg * s[i]
    B = c * beta * h * h
    G = c * gamma * h
    J = np.zeros((N, N))
    R = np.zeros(N)
    qdd, lam = qdd0.copy(), lam0.copy()
    q1 = np.empty(n)
    v1 = np.empty(n)
    for it in range(1, max_it + 1):
        for i in range(n):
            q1[i] = qp[i] + B * qdd[i]
            v1[i] = vp[i] + G * qdd[i]
        R[:] = 0.0
        J[:, :] = 0.0
        evaluate(q1, v1, qdd, lam, p, t + h, n, B, G, B, B, True, R, J, Kf, Kp, Ks, Vf, Vo, 0, rp, 1.0)
        for i in range(N):
            R[i] = -R[i]
        LU, ok = factor(J, jp, ji, perm, ptr, idx)
        if not ok:
            return q1, v1, qdd, lam, qdd, it, 1
        dz = solve_refined(J, jp, ji, LU, perm, ptr, idx, R)
        dq = 0.0
        for i in range(n):
            qdd[i] += dz[i]
            dq = max(dq, abs(dz[i]))
        for i in range(m):
            lam[i] += dz[n + i]
        dq = B * dq
        for i in range(N):
            if not np.isfinite(dz[i]):
                return q1, v1, qdd, lam, qdd, it, 2
        qmax = 0.0
        for i in range(n):
            qmax = max(qmax, abs(q1[i]))
        if dq <= atol + rtol * qmax:
            a1 = np.empty(n)
            for i in range(n):
                q1[i] = qp[i] + B * qdd[i]
                v1[i] = vp[i] + G * qdd[i]
                a1[i] = c * qdd[i] + s[i]
            return q1, v1, qdd, lam, a1, it, 0
    return q1, v1, qdd, lam, qdd, max_it, 3


@njit(cache=True)
def ab_newton_step_estimate(q0, v0, qdd0, lam0, a0, p, t, h, beta, gamma, am, af, atol, rtol, max_it, Kf, Kp, Ks,
                            Vf, Vo, rp, perm, ptr, idx, jp, ji, ws, cur, z1, z2, z3, t1, s, dq_a, dq_b, err_prev,
                            mean):
    """``ab_newton_step``, and when it converged the adaptive loop's local error estimate
    of the new state in the same call (local_error.with_step, its arguments after ``ji``):
    (q, v, q̈, λ, a, iterations, status, ‖e‖, proposed h, noise-over flag), ‖e‖ = −2.0
    when not estimated (status ≠ 0)."""
    q1, v1, qdd, lam, a1, it, status = ab_newton_step(q0, v0, qdd0, lam0, a0, p, t, h, beta, gamma, am, af, atol,
                                                      rtol, max_it, Kf, Kp, Ks, Vf, Vo, rp, perm, ptr, idx, jp, ji)
    if status != 0:
        return q1, v1, qdd, lam, a1, it, status, -2.0, 0.0, 0.0
    err, hn, over = with_step(q1, v1, qdd, lam, a1, h, ws, cur, z1, z2, z3, t1, s, dq_a, dq_b, err_prev, mean)
    return q1, v1, qdd, lam, a1, it, status, err, hn, over
