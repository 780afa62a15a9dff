"""Index-1 generalized-α with Baumgarte stabilization: seed 001's own multibody scheme.

[Wehrle & Gufler 2024](docs/references.md#wehrle-2024) §2.3 and App. B (digest
../shared/research/seed001-generalized-alpha.md §3): the index-1 system

    M(q) q̈ + Φ_qᵀλ = Q(q, q̇, t),    Φ_q q̈ = F_c = −γ − 2α(Φ_q q̇ + Φ_t) − β²Φ         (33–36)

(γ such that Φ̈ = Φ_q q̈ + γ; the Baumgarte terms of ``simulation.index1.baumgarte``,
none when absent: the paper names Baumgarte but gives no coefficients) with the
generalized-α weights on *whole products* (37–40): the inertia, J_Φᵀλ and J_Φ q̈ at
α_m, every other force and F_c at α_f.  Acceleration form, Chung–Hulbert convention
(α weights the old state, seed 001 eqs. 1–9); state x_n = (q_n, v_n, a_n, λ_n),
unknowns z = (a_{n+1}, λ_{n+1}):

    q_{n+1} = q̂ + βh² a_{n+1},  q̂ = q_n + h v_n + (½ − β) h² a_n
    v_{n+1} = v̂ + γh a_{n+1},   v̂ = v_n + (1 − γ) h a_n
    R₁ = (1−α_m)[r_I + Φ_qᵀλ]_{n+1} + (1−α_f) r_F,{n+1} + α_m [r_I + Φ_qᵀλ]_n + α_f r_F,n = 0     (39)
    R₂ = (1−α_m)[Φ_q a]_{n+1} + (1−α_f) c_{n+1} + α_m [Φ_q a]_n + α_f c_n = 0                       (40)

with c = γ + 2α(Φ_q v + Φ_t) + β²Φ = −F_c, r_I the inertial force groups and r_F every
other one (model.component.Force.inertial).  One deviation: an FFR beam element
evaluates M(q)a and its quadratic velocity vector Q_v together (flexible/ffr_beam.py),
so Q_v rides with α_m here where the paper puts F_v at α_f; for rigid bodies r_I = M a
exactly.  α_m, α_f, β, γ from ρ∞ by eqs. 18–21 (``genalpha``), or the HHT, WBZ,
Newmark and trapezoidal sets (integrators/newmark.NewmarkParameterSets).

Newton matrix (eqs. 47–50, there for q̈ with ∂q/∂q̈ = βh², ∂q̇/∂q̈ = γh):

    J = [[(1−α_m)(r_I,a + γh r_I,v + βh² (r_I,q + (Φ_qᵀλ)_q)) + (1−α_f)(r_F,a + γh r_F,v + βh² r_F,q),
          (1−α_m)Φ_qᵀ],
         [(1−α_m)(Φ_q + βh² (Φ_q a)_q) + (1−α_f)(βh² c_q + γh c_v),   0]]

Direct step: J dz = −(R_{q̂} dq̂ + R_{v̂} dv̂ + R_x dx_n + R_ρ), the old-state partials
R_x from the α-terms (the paper's eqs. 51–59: Newton on ∇R with the primal matrix,
one solve per step since ∇R is linear in (∇q̈, ∇λ)).  Adjoint: its exact transpose,

    Jᵀν = [βh² μ_q + γh μ_v + μ_a;  μ_λ]_{n+1},   ∂ψ/∂q̂ = μ_q − R_{q̂}ᵀν,  ∂ψ/∂v̂ = μ_v − R_{v̂}ᵀν,
    μ_q,n = ∂ψ/∂q̂ − R_qᵀν,  μ_v,n = h ∂ψ/∂q̂ + ∂ψ/∂v̂ − R_vᵀν,
    μ_a,n = (½−β)h² ∂ψ/∂q̂ + (1−γ)h ∂ψ/∂v̂ − R_aᵀν,  μ_λ,n = −R_λᵀν,   ∇ψ −= R_ρᵀν

(R_q … R_λ the old-state partials).  Compared with the index-3 variant
(integrators/newmark.py): Φ is not enforced, only Φ̈ (+ Baumgarte), so positions
drift as for the trapezoidal index-1 stepper (formulations/index1.py), and the
weighting differs as above.  With a configuration-dependent mass matrix both are first
order (seed 001 §2.3).
"""
import numpy as np

from ..integrators.newmark import NewmarkParameterSets, newton_acceleration_form
from .index1 import Index1Trapezoidal, _sum_parts, group_blocks


class Index1NewmarkFamily(NewmarkParameterSets, Index1Trapezoidal):
    """Index-1 Newmark family with seed 001's α-weighting (module docstring)."""
    name = "index1-genalpha"

    def __init__(self, system, h, alpha_m=0.0, alpha_f=0.0, beta=0.25, gamma=0.5, **kw):
        Index1Trapezoidal.__init__(self, system, h, **kw)
        self.am, self.af, self.beta, self.gamma = alpha_m, alpha_f, beta, gamma

    # -- pieces -----------------------------------------------------------------------------------
    def _predict(self, x):
        q, v, a, _ = x
        h, b, g = self.h, self.beta, self.gamma
        return q + h * v + (0.5 - b) * h * h * a, v + (1 - g) * h * a

    def _c(self, ev):
        """c = γ + 2α(Φ_q v + Φ_t) + β²Φ (= −F_c)."""
        c = ev.gamma()
        if self.baumgarte is not None:
            al, be = self.baumgarte
            c = c + 2 * al * (ev.phi_q_dot(ev.v) + ev.phi_t()) + be * be * ev.phi()
        return c

    def _c_p(self, ev, nd):
        Cp = ev.gamma_p(nd)
        if self.baumgarte is not None:
            al, be = self.baumgarte
            Cp = Cp + (ev.phi_q_w_p(nd, ev.v) + ev.phi_t_p(nd)).scaled(2 * al) + ev.phi_p(nd).scaled(be * be)
        return Cp

    def _set_matrix(self, ev):
        h, b, g = self.h, self.beta, self.gamma
        wi, wf = 1 - self.am, 1 - self.af
        nc = len(ev.C)
        F = ev.force_blocks(b * h * h, g * h, 1.0, wi, wf)
        H = [wi * b * h * h * Hb for Hb in ev.hess_blocks()]
        G = ev.phi_q_blocks()
        Pa, Cq, Cv = (group_blocks(o, nc) for o in self._accel_ops(ev))
        A2 = [wi * (Gb + b * h * h * pa) + wf * (b * h * h * cq + g * h * cv)
              for Gb, pa, cq, cv in zip(G, Pa, Cq, Cv)]
        self.op.set_values(F + H + A2 + [wi * np.swapaxes(Gb, 1, 2) for Gb in G] + self.zero_diag)

    def _residual_parts(self, ev, wm, wf):
        """(R₁, R₂) contributions of one state with weights w_m (inertia, Φ_qᵀλ, Φ_q a) and w_f."""
        return (ev.residual(wm, wf, wl=wm),
                wm * ev.phi_q_dot(ev.a) + wf * self._c(ev))

    def _partials(self, ev, nd, wm, wf):
        """∂(R₁, R₂)/∂(q, v, a, ρ) of one state's contribution at fixed λ (R₁ rows, R₂ rows):
        ((K1, K2), (C1, C2), (M1, M2), (P1, P2)) as LocalOperators."""
        Pa, Cq, Cv = self._accel_ops(ev)
        K1 = ev.K(wm, wf, wl=wm)
        K2 = _sum_parts([(wm, Pa), (wf, Cq)])
        C1, C2 = ev.Cv(wm, wf), Cv.scaled(wf)
        M1, M2 = ev.Ma(wm, wf), ev.G().scaled(wm)
        P1 = ev.R_p(nd, wm, wf, wl=wm)
        P2 = ev.phi_q_w_p(nd, ev.a).scaled(wm) + self._c_p(ev, nd).scaled(wf)
        return (K1, K2), (C1, C2), (M1, M2), (P1, P2)

    # -- forward ------------------------------------------------------------------------------------
    def step(self, k, t, x, p):
        """x_{k+1} from x_k at time t = t_k; returns (x_{k+1}, Newton iterations)."""
        h, b, g = self.h, self.beta, self.gamma
        t1 = t + h
        qp, vp = self._predict(x)
        n = self.sys.n
        old = np.zeros(n + self.sys.m)
        if self.am or self.af:
            o1, o2 = self._residual_parts(self._eval(t, x, p), self.am, self.af)
            old = np.r_[o1, o2]

        def residual(ev):
            r1, r2 = self._residual_parts(ev, 1 - self.am, 1 - self.af)
            return np.r_[r1, r2] + old

        return newton_acceleration_form(k, t1, qp, vp, x[2], x[3], b * h * h, g * h, self.newton, self.op,
                                        self._set_matrix, lambda t_, x_: self._eval(t_, x_, p), residual)

    # -- tangent (direct differentiation) -------------------------------------------------------------
    def tangent_step(self, t, x0, x1, dx0, p):
        """dx_{k+1}/dρ from dx_k/dρ (each four (·, nd) blocks)."""
        h, b, g, nd = self.h, self.beta, self.gamma, self.nd
        dq, dv, da, dl = dx0
        dqp, dvp = self._predict(dx0)            # the predictor is linear: same map on dx
        ev = self._eval(t + h, x1, p)
        self._set_matrix(ev)
        I = np.eye(nd)
        (K1, K2), (C1, C2), _, (P1, P2) = self._partials(ev, nd, 1 - self.am, 1 - self.af)
        r1 = K1 @ dqp + C1 @ dvp + P1 @ I
        r2 = K2 @ dqp + C2 @ dvp + P2 @ I
        if self.am or self.af:
            eo = self._eval(t, x0, p)
            (K1, K2), (C1, C2), (M1, M2), (P1, P2) = self._partials(eo, nd, self.am, self.af)
            r1 += K1 @ dq + C1 @ dv + M1 @ da + self.am * (eo.G().T @ dl) + P1 @ I
            r2 += K2 @ dq + C2 @ dv + M2 @ da + P2 @ I
        dz = self.op.solve_many(-np.vstack([r1, r2]))
        n = self.sys.n
        da1, dl1 = dz[:n], dz[n:]
        return dqp + b * h * h * da1, dvp + g * h * da1, da1, dl1

    # -- discrete adjoint -----------------------------------------------------------------------------
    def adjoint_step(self, t, x0, x1, mu1, p):
        """(μ_k, ∇ψ increment) from μ_{k+1} = (μ_q, μ_v, μ_a, μ_λ) of x_{k+1} (one column per
        objective)."""
        h, b, g, nd = self.h, self.beta, self.gamma, self.nd
        mq1, mv1, ma1, ml1 = mu1
        n = self.sys.n
        ev = self._eval(t + h, x1, p)
        self._set_matrix(ev)
        nu = self.op.solve_many(np.vstack([b * h * h * mq1 + g * h * mv1 + ma1, ml1]), transpose=True)
        nu1, nu2 = nu[:n], nu[n:]
        (K1, K2), (C1, C2), _, (P1, P2) = self._partials(ev, nd, 1 - self.am, 1 - self.af)
        mqp = mq1 - K1.T @ nu1 - K2.T @ nu2          # ∂ψ/∂q̂, ∂ψ/∂v̂
        mvp = mv1 - C1.T @ nu1 - C2.T @ nu2
        grad = -(P1.T @ nu1 + P2.T @ nu2)
        mq = mqp
        mv = h * mqp + mvp
        ma = (0.5 - b) * h * h * mqp + (1 - g) * h * mvp
        ml = np.zeros_like(ml1)
        if self.am or self.af:
            eo = self._eval(t, x0, p)
            (K1, K2), (C1, C2), (M1, M2), (P1, P2) = self._partials(eo, nd, self.am, self.af)
            mq = mq - K1.T @ nu1 - K2.T @ nu2
            mv = mv - C1.T @ nu1 - C2.T @ nu2
            ma = ma - M1.T @ nu1 - M2.T @ nu2
            ml = ml - self.am * (eo.G() @ nu1)
            grad = grad - (P1.T @ nu1 + P2.T @ nu2)
        return (mq, mv, ma, ml), grad


def make_index1_newmark_stepper(system, sim, **kw):
    """``formulation = "index1"`` with integrator genalpha, hht, wbz or newmark."""
    common = dict(newton=sim.newton, petsc_options=sim.petsc_options, baumgarte=sim.index1.baumgarte, **kw)
    h = sim.dt
    if sim.integrator == "newmark":
        return Index1NewmarkFamily.newmark(system, h, sim.beta, sim.gamma, **common)
    if sim.integrator in ("genalpha", "hht", "wbz"):
        return getattr(Index1NewmarkFamily, sim.integrator)(system, h, sim.rho_inf, **common)
    raise ValueError(f"no index1 stepper {sim.integrator!r}")
