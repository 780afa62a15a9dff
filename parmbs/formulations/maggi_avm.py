"""The thesis' adjoint variable methods for Maggi's formulation (seed 004 §3.2.4).

``simulation.maggi.adjoint`` selects how the Maggi stepper computes ∇ψ by the adjoint:

* ``"discrete"`` (default): the exact transpose of the trapezoidal scheme
  (MaggiTrapezoidal.adjoint_step, maggi.py); equals the direct gradient to round-off.
* ``"first-order-explicit"``: the adjoint ODE of ẏ = f(t, y, ρ), y = (z, ż)
  (eqs. 3.117–3.118):  μ̇ = −f_yᵀ μ − g_yᵀ, μ(t_F) = 0                    (eq. 3.124)
      ∇ψ = y_ρ(t₀)ᵀ μ(t₀) + ∫ (f_ρᵀ μ + g_ρᵀ) dt                         (eq. 3.125)
  with f_y = [0 I; −M̄⁻¹(K̄ + M̄_z z̈)  −M̄⁻¹C̄], f_ρ = [0; M̄⁻¹(Q̄_ρ − M̄_ρ z̈)] (eq. 3.126).
* ``"first-order-implicit"``: the adjoint of M̂ ẏ = Q̂, M̂ = diag(I, M̄):
      M̂ μ̇ = (M̂_y ẏ − Q̂_y − dM̂/dt)ᵀ μ − g_yᵀ, μ(t_F) = 0                 (eq. 3.131)
  with M̂_y ẏ − Q̂_y = [0 −I; K̄ + M̄_z z̈  C̄] (eqs. 3.132–3.133), dM̂/dt = diag(0, dM̄/dt)
  (eq. 3.134a);  ∇ψ = y_ρ(t₀)ᵀ M̂(t₀) μ(t₀) + ∫ ([0; Q̄_ρ − M̄_ρ z̈]ᵀ μ + g_ρᵀ) dt (eq. 3.135).
* ``"second-order"``: the size-d adjoint of M̄ z̈ = Q̄ (eq. 2.25):
      M̄ μ̈ + (2 dM̄/dt − C̄)ᵀ μ̇ + (M̄_z z̈ + K̄ − dC̄/dt + d²M̄/dt²)ᵀ μ = g_zᵀ − d/dt g_żᵀ
      μ(t_F) = 0,  M̄(t_F) μ̇(t_F) = −g_żᵀ(t_F)                            (eq. 3.146)
      ∇ψ = −z_ρᵀ(g_żᵀ + M̄ μ̇ + (dM̄/dt − C̄)ᵀ μ)|t₀ + ż_ρᵀ M̄ μ|t₀
           + ∫ ((Q̄_ρ − M̄_ρ z̈)ᵀ μ + g_ρᵀ) dt                                (eq. 3.147)

These are the thesis' continuous-adjoint methods, NOT the exact discrete adjoint: they
differentiate the ODE and then discretise the adjoint ODE, so they agree with the
direct (DDM) gradient of our discrete scheme only up to the discretisation error (the
thesis' Table 5.1 rows 4 and 8 differ in the fourth digit for that reason).

Discretisation used here (the thesis does not say how it integrated its adjoint ODEs):
each adjoint ODE is written as ẇ = A(t) w + b(t) and integrated backward over the
stored grid t_k by the trapezoidal rule, the same rule as the forward scheme, and the
gradient integrals use the trapezoidal weights of ψ (Problem.w).  All coefficients
are evaluated at the stored states x_k, so the error of every variant against the
exact gradient of the ODE, and hence against our discrete gradient (which is that
gradient + O(h²)), is O(h²).

The reduced-coordinate blocks are not re-derived: at each stored state the linearised
Maggi equations in full coordinates (the rows E₁…E₄ of maggi.py, ∂E/∂q, ∂E/∂v, ∂E/∂ρ
from MaggiTrapezoidal._partials with E₃, E₄ scaled back to Φ and Φ̇, plus ∂E/∂a =
[M; Φ_q], ∂E/∂λ = [Φ_qᵀ]) are solved with B δq = δz, B δv = δż.  That gives
R = ∂q/∂z, f_y = B ∂a/∂y and f_ρ = B ∂a/∂ρ at fixed y (including the motion of the
dependent coordinates at fixed z for parameters in Φ, see maggi.py), and
M̄ = Rᵀ M R (eq. 2.25b), K̄ + M̄_z z̈ = −M̄ f_z, C̄ = −M̄ f_ż, Q̄_ρ − M̄_ρ z̈ = M̄ f_ρ.
g_y, g_ρ are the total derivatives of the objective integrand through x(y, ρ) (so
integrands reading a or λ are allowed: on the motion they are functions of y).
The time derivatives dM̄/dt, d²M̄/dt², dC̄/dt, d/dt g_ż (thesis eqs. 3.148–3.152 give
them analytically) are taken here by second-order differences of the stored values
along the grid (numpy.gradient, edge_order=2): O(h²), like the integrator.

Limits: objectives with a terminal term are refused (the thesis' cost, eq. 3.119, is
an integral only); the in-memory trajectory is needed (a checkpoint file is refused
in parmbs/checkpoint/__init__.py, key simulation.maggi.adjoint); the
linearisation is dense (3n + m unknowns per stored state): meant for the thesis'
small rigid models.
"""
import numpy as np

from ..model.system import ModelError

KEY = "simulation.maggi.adjoint"
VARIANTS = ("first-order-explicit", "first-order-implicit", "second-order")


class MaggiAVM:
    """Whole-run ``adjoint(problem, p)`` of a MaggiTrapezoidal stepper by one of the
    thesis' adjoint ODEs (module docstring)."""

    def __init__(self, stepper, variant):
        if variant not in VARIANTS:
            raise ValueError(f"{KEY}: unknown variant {variant!r}")
        self.st, self.variant = stepper, variant

    # -- linearisation of the Maggi equations at one stored state ---------------------------
    def linearize(self, t, x, p):
        """(T, M): T = ∂(q, v, a, λ)/∂(z, ż, ρ) at the state x (3n+m × 2d+nd) from the
        linearised E₁…E₄ with B δq = δz, B δv = δż; M = ∂r/∂a (n × n)."""
        st = self.st
        n, m, nd, h = st.sys.n, st.sys.m, st.nd, st.h
        d, N = len(st.ind), st.N
        ev = st._eval(t, x, p)
        Eq, Ev, Ep = (op.dense() for op in st._partials(ev, nd))
        scale = np.ones(N)
        scale[n + m:n + 2 * m] = 0.25 * h * h          # E₃·h²/4 = Φ
        scale[n + 2 * m:] = 0.5 * h                    # E₄·h/2 = Φ_q v + Φ_t
        M, G = ev.Ma().dense(), ev.G().dense()
        A = np.zeros((3 * n + m, 3 * n + m))
        A[:N, :n] = scale[:, None] * Eq
        A[:N, n:2 * n] = scale[:, None] * Ev
        A[:n, 2 * n:3 * n] = M
        A[n:n + m, 2 * n:3 * n] = G
        A[:n, 3 * n:] = G.T
        A[N + np.arange(d), st.ind] = 1.0              # B δq = δz
        A[N + d + np.arange(d), n + st.ind] = 1.0      # B δv = δż
        rhs = np.zeros((3 * n + m, 2 * d + nd))
        rhs[N + np.arange(2 * d), np.arange(2 * d)] = 1.0
        rhs[:N, 2 * d:] = -scale[:, None] * Ep
        return np.linalg.solve(A, rhs), M

    # -- the whole-run adjoint -----------------------------------------------------------------
    def __call__(self, problem, p):
        st, sys = self.st, self.st.sys
        for ob in problem.objectives:
            if ob.terminal:
                raise ModelError(KEY, f"objective {ob.name!r} has a terminal term; the thesis' adjoint "
                                      f"ODEs (seed 004 eq. 3.119) take integrals only: use 'discrete'")
        traj = problem.traj
        n, nd, d = sys.n, st.nd, len(st.ind)
        dm, K, Nt = problem.design.sweep_map, len(problem.objectives), traj.steps
        h = st.h
        refs = [ob.reference(sys, traj.q[0], p) for ob in problem.objectives]
        Mb = np.empty((Nt + 1, d, d))
        fy = np.empty((Nt + 1, 2 * d, 2 * d))
        Qp = np.empty((Nt + 1, d, nd))                    # Q̄_ρ − M̄_ρ z̈ = M̄ f_ρ
        gy = np.zeros((Nt + 1, 2 * d, K))
        grho = np.zeros((Nt + 1, nd, K))
        gref = np.zeros((2, K))
        ind = st.ind
        for k in range(Nt + 1):
            x = traj.x(k)
            T, M = self.linearize(traj.t[k], x, p)
            Tx = (T[:n], T[n:2 * n], T[2 * n:3 * n], T[3 * n:])
            R = Tx[0][:, :d]
            Mb[k] = R.T @ M @ R
            fy[k, :d] = 0.0
            fy[k, :d, d:] = np.eye(d)
            fy[k, d:] = Tx[2][ind, :2 * d]
            Qp[k] = Mb[k] @ Tx[2][ind, 2 * d:]
            for j, (ob, ref) in enumerate(zip(problem.objectives, refs)):
                if not ob.integrand:
                    continue
                dx, dp, dr = ob.integrand.grads(sys, traj.t[k], x, p, ref, dm, nd)
                gtot = ob.weight * sum(g @ Ti for g, Ti in zip(dx, Tx))
                gy[k, :, j] = gtot[:2 * d]
                grho[k, :, j] = ob.weight * dp + gtot[2 * d:]
                gref[:, j] += problem.w[k] * ob.weight * dr
        dx0 = st.init.tangent(p)
        yp0 = np.vstack([dx0[0][ind], dx0[1][ind]])        # y_ρ(t₀) (2d × nd)
        w = problem.w
        if self.variant == "first-order-explicit":             # eqs. 3.124–3.126
            A = -np.swapaxes(fy, 1, 2)
            b = -gy
            F = np.concatenate([np.zeros((Nt + 1, d, nd)), np.linalg.solve(Mb, Qp)], axis=1)
            mu = backward_trapezoid(A, b, np.zeros((2 * d, K)), h)
            grad = yp0.T @ mu[0]
        else:
            Md = np.gradient(Mb, h, axis=0, edge_order=2)      # dM̄/dt along the grid
            Kt = -Mb @ fy[:, d:, :d]                           # K̄ + M̄_z z̈
            Cb = -Mb @ fy[:, d:, d:]                           # C̄
            if self.variant == "first-order-implicit":         # eqs. 3.131–3.137
                Mh = np.zeros((Nt + 1, 2 * d, 2 * d))
                Mh[:, :d, :d] = np.eye(d)
                Mh[:, d:, d:] = Mb
                Ai = np.zeros_like(Mh)                         # M̂_y ẏ − Q̂_y − dM̂/dt
                Ai[:, :d, d:] = -np.eye(d)
                Ai[:, d:, :d] = Kt
                Ai[:, d:, d:] = Cb - Md
                A = np.linalg.solve(Mh, np.swapaxes(Ai, 1, 2))
                b = -np.linalg.solve(Mh, gy)
                F = np.concatenate([np.zeros((Nt + 1, d, nd)), Qp], axis=1)
                mu = backward_trapezoid(A, b, np.zeros((2 * d, K)), h)
                grad = yp0.T @ (Mh[0] @ mu[0])
            else:                                              # eqs. 3.146–3.147, w = (μ, μ̇)
                Mdd = np.gradient(Md, h, axis=0, edge_order=2)
                Cd = np.gradient(Cb, h, axis=0, edge_order=2)
                gz, gzd = gy[:, :d], gy[:, d:]
                gzd_t = np.gradient(gzd, h, axis=0, edge_order=2)
                D = np.swapaxes(2 * Md - Cb, 1, 2)
                E = np.swapaxes(Kt - Cd + Mdd, 1, 2)
                A = np.zeros((Nt + 1, 2 * d, 2 * d))
                A[:, :d, d:] = np.eye(d)
                A[:, d:, :d] = -np.linalg.solve(Mb, E)
                A[:, d:, d:] = -np.linalg.solve(Mb, D)
                b = np.concatenate([np.zeros_like(gz), np.linalg.solve(Mb, gz - gzd_t)], axis=1)
                wN = np.concatenate([np.zeros((d, K)), -np.linalg.solve(Mb[-1], gzd[-1])])
                F = np.concatenate([Qp, np.zeros((Nt + 1, d, nd))], axis=1)
                mu = backward_trapezoid(A, b, wN, h)
                m0, md0 = mu[0][:d], mu[0][d:]
                grad = (-yp0[:d].T @ (gzd[0] + Mb[0] @ md0 + (Md[0] - Cb[0]).T @ m0)
                        + yp0[d:].T @ (Mb[0] @ m0))
        grad = grad + np.einsum("k,kai,kaj->ij", w, F, mu) + np.einsum("k,kij->ij", w, grho)
        out = {}
        for j, ob in enumerate(problem.objectives):
            Jq, Jp = ob.ref_grads(sys, traj.q[0], p, dm, nd)
            out[ob.name] = grad[:, j] + (Jq @ dx0[0] + Jp).T @ gref[:, j]
        return out


def backward_trapezoid(A, b, w_end, h):
    """w_k, k = N…0, of ẇ = A_k w + b_k (A (N+1, s, s), b (N+1, s, K)) from w_N = w_end
    by the trapezoidal rule: (I + h/2 A_k) w_k = (I − h/2 A_{k+1}) w_{k+1} − h/2 (b_k + b_{k+1})."""
    N = len(A) - 1
    eye = np.eye(A.shape[1])
    out = np.empty((N + 1,) + w_end.shape)
    out[N] = w_end
    for k in range(N - 1, -1, -1):
        rhs = out[k + 1] - 0.5 * h * (A[k + 1] @ out[k + 1] + b[k] + b[k + 1])
        out[k] = np.linalg.solve(eye + 0.5 * h * A[k], rhs)
    return out
