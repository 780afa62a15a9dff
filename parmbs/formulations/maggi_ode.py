"""Maggi's equations as an ODE in the independent coordinates, for PETSc TS
(``formulation = "maggi"`` with a ``ts-*`` integrator; seed 004 §2.5, integrated as
its MBSVT did, by a general ODE solver).

With the 0/1 selection B of d = n − m independent coordinates z = B q (eq. 2.26,
``simulation.maggi.independent``) the TS state is y = (z, ż) and

    ẏ = G(t, y; ρ) = (ż, B a(q, v)),

where (q, v) = X(t, y; ρ) are the coordinates on the constraint manifold,

    Φ(q, t) = 0, B q = z        (Newton with C = [Φ_q; B], eq. 2.26a)
    C v = [−Φ_t; ż]             (eq. 2.26b)

and a(q, v) is the acceleration of the index-1 equations at that state (index1_ode.py:
[M Φ_qᵀ; Φ_q 0](a, λ) = (Q, −γ)), which is eq. 2.27's M̄ z̈ = Q̄ written with the
multipliers kept: B a = z̈ is the Maggi ODE's solution (null(Rᵀ) = range(Φ_qᵀ)).

Derivatives (dense; the chain rule through X):

    q_z = C⁻¹ [0; I],  v_ż = q_z,  v_z = −C⁻¹ [W q_z; 0],    W = ∂(Φ_q v + Φ_t)/∂q
    q_ρ = −C⁻¹ [Φ_ρ; 0],  v_ρ = −C⁻¹ [W q_ρ + ∂(Φ_q v)/∂ρ + Φ_t,ρ; 0]
    G_y = [[0, I], [B (a_q q_z + a_v v_z), B a_v v_ż]],  G_ρ = [0; B (a_q q_ρ + a_v v_ρ + a_ρ)]

with a_q, a_v, a_ρ = −K⁻¹(R_q, R_v, R_ρ) of index1_ode.py.  IJacobian = shift·I − G_y,
IJacobianP = −G_ρ; ``ts-rk`` runs G explicitly (RHSJacobian/RHSJacobianP).

Presentation: the trajectory stores x = (q, v, a, λ) = (X(y), a, λ) in the model's
coordinates, so objectives, design variables and outputs are shared; an objective's
gradient (g_q, g_v, g_a, g_λ) comes back to y as X_yᵀ (g_q, g_v) + the index-1
pull-back of (g_a, g_λ).  The TS's initial state is y_0 = (B q_0, B v_0) of the
index-3 consistent (q_0, v_0)(ρ) (InitialState), so dy_0 = (B dq_0, B dv_0).

Newton on the manifold runs to round-off (until an update stops shrinking): X is
then a function of y to the last bits, whatever the first guess (the last solution),
and the derivatives above are those of the computed map.  The independent entries
are set exactly: q[B] = z, v[B] = ż.

Drift: none beyond that Newton's round-off (Φ and Φ̇ are solved at every state);
the error of the scheme lives in z alone.  Small models only (dense Jacobians, n ≲ 100).
"""
import numpy as np
from scipy.linalg import lu_factor, lu_solve

from ..integrators.newmark import StepError
from .index1_ode import ExplicitODEEval, Index1ODE, Index1ODEEval, second_order_jacobians
from .maggi import independent_coordinates
from .matrix_r import dense


def newton_to_roundoff(update, x, fixed, max_it=50):
    """Newton on the constraint manifold with the entries ``fixed`` held: x += update(x)
    until the update is at ε|x| or, once below 1e-8 |x|, stops shrinking (above that an
    update may grow before it converges: a 60-link chain's RK stage points, where a
    monotone test stopped early).  Converged: the update came down to 1e-6 |x| before it
    stalled (an ill-conditioned C = [Φ_q; B] stalls above ε: its floor is κ(C) ε).
    Returns (x, converged)."""
    last = step = np.inf
    for it in range(max_it):
        dx = update(x)
        dx[fixed] = 0.0
        step = np.max(np.abs(dx), initial=0.0)
        scale = max(np.max(np.abs(x)), 1.0)
        if not np.isfinite(step) or (step <= 1e-8 * scale and step > 0.5 * last):
            break
        x = x + dx
        last = step
        if step <= 4 * np.finfo(float).eps * scale:
            break
    return x, bool(np.isfinite(step) and min(step, last) <= 1e-6 * max(np.max(np.abs(x)), 1.0))


def short_names(names, k=4):
    """``names`` for a one-line message: the first k and how many more."""
    names = list(names)
    return ", ".join(names[:k]) + (f" (+{len(names) - k} more)" if len(names) > k else "")


class ManifoldGuess:
    """The manifold Newton's first guess of a reduced ODE — its last solution, the
    attribute named ``_GUESS``, ``guess_size`` long: part of a checkpointed state, since
    the converged point's last bits depend on it (checkpoint/ts_run.py)."""

    _GUESS = "_q"

    def get_guess(self):
        return np.array(getattr(self, self._GUESS), dtype=float)

    def set_guess(self, g):
        setattr(self, self._GUESS, np.array(g, dtype=float))


class MaggiODE(ManifoldGuess):
    """G(t, y; ρ) of Maggi's ODE in y = (z, ż) and its derivatives (dense)."""

    explicit = True           # F = ẏ − G(t, y): ts-rk can run G directly
    reduced = True            # y is not (q, v): the TS stepper presents x = X(y) (integrators/ts.py)

    def __init__(self, system, sim, design_map=None, ndesign=0):
        #: the index-1 ODE in (q, v): a(q, v), λ and their derivatives at a manifold point
        self.full = Index1ODE(system, sim, design_map, ndesign)
        self.sys, self.m, self.nq = system, system.m, system.n
        self.design_map, self.nd = self.full.design_map, ndesign
        self.ind, self.ind_names = independent_coordinates(system, list(sim.maggi.independent))
        d = len(self.ind)
        self.n, self.N = d, 2 * d             # the halves of y (integrators/ts.py reads mod.n, mod.N)
        self._q = None                        # the last manifold solution: the next Newton's first guess

    # dense matrices of y's size: index1_ode.py's
    create_mat = Index1ODE.create_mat
    fill = Index1ODE.fill
    operator = Index1ODE.operator

    # -- y of (q, v) and its transpose ---------------------------------------------------------
    def y_of(self, q, v, p):
        """y of a consistent (q, v); q becomes the manifold Newton's first guess, so a run
        from (q_0, v_0) does not depend on what the model evaluated before (bitwise
        restarts: checkpoint/ts_run.py)."""
        self._q = np.array(q, dtype=float)
        return np.concatenate([q[self.ind], v[self.ind]])

    guess_size = property(lambda self: self.nq)     # (ManifoldGuess: the last solution q)

    def y_tangent(self, q, v, p, dq, dv):
        return np.concatenate([dq[self.ind], dv[self.ind]])

    def y_adjoint(self, q, v, p, ly):
        d, n = self.n, self.nq
        mq, mv = np.zeros((n,) + ly.shape[1:]), np.zeros((n,) + ly.shape[1:])
        mq[self.ind], mv[self.ind] = ly[:d], ly[d:]
        return mq, mv, 0.0

    # -- the manifold map X(t, y; ρ) ------------------------------------------------------------
    def manifold(self, t, y, p):
        """(q, v, C's LU, the StateEval at (q, v)) of y = (z, ż)."""
        d, n, m = self.n, self.nq, self.m
        z, zd = y[:d], y[d:]
        q = (self._q if self._q is not None else self.sys.q_guess).astype(float).copy()
        q[self.ind] = z
        zero = np.zeros(n)
        C = np.zeros((n, n))
        C[m + np.arange(d), self.ind] = 1.0
        def update(q):
            ev = self.full.core._eval(t, (q, zero, zero, np.zeros(m)), p)
            C[:m] = dense(ev.G())
            return lu_solve(lu_factor(C, check_finite=False), np.r_[-ev.phi(), np.zeros(d)], check_finite=False)
        q, converged = newton_to_roundoff(update, q, self.ind)
        ev = self.full.core._eval(t, (q, zero, zero, np.zeros(m)), p)
        phi = np.max(np.abs(ev.phi()), initial=0.0)
        if not np.isfinite(phi) or not converged:
            raise StepError(f"t = {t:.6g}: the constraints Φ(q) = 0 at the independent coordinates "
                            f"{short_names(self.ind_names)} have no solution near the last state "
                            f"(|Φ| = {phi:.2e}; a singular configuration?)")
        self._q = q
        C[:m] = dense(ev.G())
        lu = lu_factor(C, check_finite=False)
        v = lu_solve(lu, np.r_[-ev.phi_t(), zd], check_finite=False)
        v[self.ind] = zd
        return q, v, lu, ev

    def eval(self, t, y, yd, p):
        return MaggiODEEval(self, t, y, yd, p)

    def present(self, t, y, p):
        """x = (q, v, a, λ) at y."""
        q, v, _, _ = self.manifold(t, y, p)
        a, lam, _ = self.full.solve_z(t, q, v, p)
        return q, v, a, lam

    def accel(self, t, y, p, a0=None):
        return self.present(t, y, p)[2:]

    def present_grads(self, t, y, p, gq, gv, ga, gl):
        """(∂ψ/∂y, ∂ψ/∂ρ) of an objective term's (g_q, g_v, g_a, g_λ) at X(y)."""
        pe = MaggiODEEval(self, t, y, np.zeros(self.N), p)
        gq, gv = np.asarray(gq, float), np.asarray(gv, float)
        gp = np.zeros(self.nd)
        if np.any(ga) or np.any(gl):
            dy, dp = self.full.output_grads(t, np.r_[pe.q, pe.v], p, ga, gl)
            gq, gv, gp = gq + dy[:self.nq], gv + dy[self.nq:], gp + dp
        qz, vz, qp, vp = pe.chain()
        gy = np.r_[qz.T @ gq + vz.T @ gv, qz.T @ gv]
        if self.nd:
            gp = gp + qp.T @ gq + vp.T @ gv
        return gy, gp


class ReducedODEEval(ExplicitODEEval):
    """G = (ż, B z̈) of a reduced ODE in y = (z, ż): ``a`` the full acceleration, B = ``mod.ind``."""

    def G(self):
        return np.r_[self.y[self.mod.n:], self.a[self.mod.ind]]


class MaggiODEEval(ReducedODEEval):
    """Everything at one point (t, y, ẏ; ρ): F = ẏ − G and its derivatives."""

    def __init__(self, model, t, y, yd, p):
        self.mod, self.t, self.y, self.yd, self.p = model, t, y, yd, p
        self.q, self.v, self._lu, self._ev = model.manifold(t, y, p)
        self.full = Index1ODEEval(model.full, t, np.r_[self.q, self.v], np.zeros(2 * model.nq), p)
        self.a, self.lam = self.full.a, self.full.lam
        self._chain = self._Gy = None

    def chain(self):
        """(q_z, v_z, q_ρ, v_ρ) of the manifold map (module doc); v_ż = q_z."""
        if self._chain is None:
            mod = self.mod
            n, m, d, nd = mod.nq, mod.m, mod.n, mod.nd
            ev, lu = self.full.ev, self._lu
            sol = lambda B: lu_solve(lu, B, check_finite=False)
            W = dense(ev.phi_q_w_q(self.v)) + dense(ev.phi_t_q())
            E = np.zeros((n, d))
            E[m:] = np.eye(d)
            qz = sol(E)
            vz = sol(np.vstack([-W @ qz, np.zeros((d, d))]))
            if nd:
                I = np.eye(nd)
                qp = sol(np.vstack([-(ev.phi_p(nd) @ I), np.zeros((d, nd))]))
                vp = sol(np.vstack([-(W @ qp + ev.phi_q_w_p(nd, self.v) @ I + ev.phi_t_p(nd) @ I),
                                    np.zeros((d, nd))]))
            else:
                qp = vp = np.zeros((n, 0))
            self._chain = (qz, vz, qp, vp)
        return self._chain

    def _derivs(self):
        if self._Gy is None:
            mod = self.mod
            n, ind = mod.nq, mod.ind
            Gyf, Gpf = self.full._derivs()
            aq, av, ap = Gyf[n:, :n], Gyf[n:, n:], Gpf[n:]
            qz, vz, qp, vp = self.chain()
            self._Gy, self._Gp = second_order_jacobians(
                (aq @ qz + av @ vz)[ind], (av @ qz)[ind], (aq @ qp + av @ vp + ap)[ind] if mod.nd else None, mod.nd)
        return self._Gy, self._Gp


def make_maggi_ts_stepper(system, sim, design_map=None, ndesign=0, comm=None):
    """The PETSc-TS stepper for ``formulation = "maggi"`` with a ``ts-*`` integrator."""
    from ..integrators.ts import TSStepper
    return TSStepper(MaggiODE(system, sim, design_map, ndesign), sim, comm=comm)
