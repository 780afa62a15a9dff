"""Consistent initial state x₀ = (q₀, v₀, a₀, λ₀)(p), and its tangent and adjoint.

Position:      E(q, p) = [Φ(q, p); Φ_ind(q, p)] = 0            (Newton)
Velocity:      E_q v = [−Φ_t; v_ind(p)]                          (linear)
Acceleration:  r(q, v, a) + Φ_qᵀλ = 0,  Φ_q a + γ(q, v) = 0       (Newton; linear for rigid)

Φ_ind fixes the user's independent coordinates (frame x, y or angle of a body) at
their given values, so E_q is square: n − m independent coordinates are required.
All three stages are differentiated exactly: geometric design variables (point
coordinates, lengths) move q₀ through E_p, as seeds 002/004 require.
"""
import numpy as np

from ..model.assembly import SparseOperator
from ..model.assembly_view import AssemblyView as _AssemblyView
from ..model.evaluation import StateEval
from ..model.system import ModelError


class InitialState:
    def __init__(self, system, accel_op, design_map, ndesign, newton, comm=None, options=None, plan=None):
        """``options``: more PETSc options of the position/velocity solve (prefix
        parmbs_init_) over the defaults below (a distributed TS run's PCREDUNDANT:
        integrators/ts_determinism.py).  ``plan``: the stepper's EvalPlan of ``system``
        (with ``design_map``) for the acceleration-level states — with FFR continua it
        carries their structured operators and element split (newmark.py), so the
        initial accelerations and their adjoint evaluate the continua by this rank's
        rows and elements, not by every element on every rank (issue 21 item 3)."""
        self.sys = system
        self.plan = plan if plan is not None and plan.sys is system and plan.design_map is design_map else None
        self.view = _AssemblyView(system)
        n, m = system.n, system.m
        if self.view.m != n:
            keys = ", ".join(k for k, *_ in system.independent) or "bodies.*.independent"
            raise ModelError(keys, f"the model has {n - m} degrees of freedom ({n} coordinates, "
                                   f"{m} constraints) but {self.view.m - m} independent coordinates are given")
        probe = StateEval(self.view, 0.0, system.q_guess, np.zeros(n), np.zeros(n), np.zeros(self.view.m), system.p)
        self.pos_op = SparseOperator(n, [(r, c) for c, r in probe.constraint_index(0)], comm=comm,
                                     options_prefix="parmbs_init_",
                                     options={"ksp_type": "preonly", "pc_type": "lu",
                                              # not symmetric, zero diagonals: needs pivoting
                                              "pc_factor_mat_solver_type": "mumps",
                                              # AMD: MUMPS's default (METIS here) took 7 s to
                                              # analyse the near-permutation rows of a
                                              # 25·10³-element continuum (AMD: 0.1 s)
                                              "mat_mumps_icntl_7": 0, **(options or {})})
        self.accel_op = accel_op          # the stepper's (n+m) matrix: same sparsity
        self.design_map, self.nd = design_map, ndesign
        self.newton = newton

    # -- forward ---------------------------------------------------------------------
    def solve(self, t0, p, guess=None):
        """x(t0) = (q, v, a, λ); ``guess``: Newton's start for q (default: the model's
        initial guess; the kinematic analysis passes the previous time's q)."""
        sys, view, n, m = self.sys, self.view, self.sys.n, self.sys.m
        q0 = sys.q_guess if guess is None else guess
        q = np.array(q0, dtype=np.result_type(p, q0))    # a copy; complex for complex-step gradients
        zero = np.zeros(n)
        for it in range(50):
            ev = StateEval(view, t0, q, zero, zero, np.zeros(view.m), p)
            E = ev.phi()
            self.pos_op.set_values(ev.real().phi_q_blocks())
            try:
                dq = self.pos_op.solve(-E)
            except np.linalg.LinAlgError:
                from ..model.redundancy import explain_singular_assembly
                raise ModelError("joints", explain_singular_assembly(sys, t0, q, p)) from None
            q += dq
            if np.max(np.abs(dq)) <= 1e-14 * (1 + np.max(np.abs(q))):
                break
        ev = StateEval(view, t0, q, zero, zero, np.zeros(view.m), p)
        # scale of the tolerance: the guess, not the result — a Newton run that diverged to
        # |q| ~ 1e16 would otherwise pass with a large |Φ|
        scale = 1 + np.max(np.abs(sys.q_guess), initial=0.0)
        if not np.all(np.isfinite(q)) or np.max(np.abs(ev.phi())) > 1e-10 * scale:
            raise ModelError("bodies.*.initial", "initial assembly did not converge: no configuration "
                             f"satisfies the joints (|Φ| = {np.max(np.abs(ev.phi())):.2e}); check "
                             "point coordinates, lengths and the initial guesses")
        self.pos_op.set_values(ev.real().phi_q_blocks())
        rhs = -ev.phi_t()
        rhs[m:] += p[view.vel_idx]
        v = self.pos_op.solve(rhs)
        if np.iscomplexobj(q):
            # complex step: E_q(q) is complex, the factored matrix real: refine
            for _ in range(3):
                v = v + self.pos_op.solve(rhs - ev.phi_q_dot(v))
        a, lam = self._accelerations(t0, q, v, p)
        self.x0 = (q, v, a, lam)
        self.t0 = t0
        return self.x0

    def _accelerations(self, t0, q, v, p):
        n, m = self.sys.n, self.sys.m
        a, lam = np.zeros(n, q.dtype), np.zeros(m, q.dtype)
        for it in range(self.newton.max_it):
            ev = StateEval(self.sys, t0, q, v, a, lam, p, self.design_map, self.plan)
            R = np.r_[ev.residual(), ev.phi_q_dot(a) + ev.gamma()]
            self._set_accel_matrix(ev.real())
            dz = self.accel_op.solve(-R)
            a += dz[:n]
            lam += dz[n:]
            if np.max(np.abs(dz)) <= self.newton.atol + self.newton.rtol * np.max(np.abs(np.r_[a, lam])):
                break
        return a, lam

    def _set_accel_matrix(self, ev):
        """[[r_a, Φ_qᵀ], [Φ_q, 0]] in the stepper's pattern (zero q-blocks)."""
        if hasattr(self.accel_op, "set_newton"):     # the FFR continua's Schur solver
            self.accel_op.set_newton(ev, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0)
            return
        F = ev.force_blocks(0.0, 0.0, 1.0)
        H = [0.0 * h for h in ev.hess_blocks()]
        G = ev.phi_q_blocks()
        self.accel_op.set_values(F + H + G + [np.swapaxes(g, 1, 2) for g in G] + [np.zeros((self.sys.m, 1, 1))])

    # -- derivatives ---------------------------------------------------------------------
    def _evals(self, p):
        q, v, a, lam = self.x0
        n = self.sys.n
        ev_pos = StateEval(self.view, self.t0, q, v, np.zeros(n), np.zeros(self.view.m), p, self.design_map)
        ev_acc = StateEval(self.sys, self.t0, q, v, a, lam, p, self.design_map, self.plan)
        return ev_pos, ev_acc

    def _vel_sel(self):
        """∂v_ind/∂ρ (ni × nd): selection of the initial-velocity design variables."""
        ni = len(self.view.vel_idx)
        S = np.zeros((ni, self.nd))
        cols = self.design_map[self.view.vel_idx]
        S[np.nonzero(cols >= 0)[0], cols[cols >= 0]] = 1.0
        return S

    def tangent(self, p):
        """dx₀/dρ as four (·, nd) arrays."""
        q, v, a, lam = self.x0
        n, m, nd = self.sys.n, self.sys.m, self.nd
        ev, ea = self._evals(p)
        self.pos_op.set_values(ev.phi_q_blocks())
        dq = self.pos_op.solve_many(-(ev.phi_p(nd) @ np.eye(nd)))
        rhs = -((ev.phi_q_w_q(v) + ev.phi_t_q()) @ dq + ev.phi_q_w_p(nd, v) @ np.eye(nd)
                + ev.phi_t_p(nd) @ np.eye(nd))
        rhs[m:] += self._vel_sel()
        dv = self.pos_op.solve_many(rhs)
        self._set_accel_matrix(ea)
        r1 = (ea.K() @ dq + ea.Cv() @ dv + ea.R_p(nd) @ np.eye(nd))
        r2 = ((ea.phi_q_w_q(a) + ea.gamma_q()) @ dq + ea.gamma_v() @ dv
              + ea.phi_q_w_p(nd, a) @ np.eye(nd) + ea.gamma_p(nd) @ np.eye(nd))
        dz = self.accel_op.solve_many(-np.vstack([r1, r2]))
        return dq, dv, dz[:n], dz[n:]

    def adjoint(self, p, mq, mv, ma, ml):
        """(dx₀/dρ)ᵀ μ₀ for μ₀ = (μ_q, μ_v, μ_a, μ_λ) (one column per objective):
        the initial-state part of the gradient, (nd, K)."""
        q, v, a, lam = self.x0
        n, m, nd = self.sys.n, self.sys.m, self.nd
        ev, ea = self._evals(p)
        mq, mv = mq.copy(), mv.copy()
        self._set_accel_matrix(ea)
        eta = self.accel_op.solve_many(np.vstack([ma, ml]), transpose=True)
        ea_, el = eta[:n], eta[n:]
        mq -= ea.K().T @ ea_ + (ea.phi_q_w_q(a) + ea.gamma_q()).T @ el
        mv -= ea.Cv().T @ ea_ + ea.gamma_v().T @ el
        # own=True: with a split plan, this rank's continuum elements only — the caller
        # combines the gradient (Problem.adjoint_finish, continuum_split.ElementSplit)
        grad = -(ea.R_p(nd, own=True).T @ ea_ + ea.phi_q_w_p(nd, a).T @ el + ea.gamma_p(nd).T @ el)
        self.pos_op.set_values(ev.phi_q_blocks())
        ev_ = self.pos_op.solve_many(mv, transpose=True)
        mq -= (ev.phi_q_w_q(v) + ev.phi_t_q()).T @ ev_
        grad -= (ev.phi_q_w_p(nd, v) + ev.phi_t_p(nd)).T @ ev_
        # (∂v_ind/∂ρ)ᵀ η without the dense (independent rows × nd) selection matrix: a
        # continuum's u̇ = 0 rows number 2·10⁵ against 10⁵ density columns
        cols = self.design_map[self.view.vel_idx]
        sel = cols >= 0
        np.add.at(grad, cols[sel], ev_[m:][sel])
        eq = self.pos_op.solve_many(mq, transpose=True)
        grad -= ev.phi_p(nd).T @ eq
        return grad
