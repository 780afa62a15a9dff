"""Generalized-α in the Arnold–Brüls form: the equations of motion and the constraints
at one time t_{n+1}, second order also where the mass matrix depends on q.

Forward step, tangent (direct) step and discrete adjoint step in one file, as
integrators/newmark.py (``simulation.genalpha_form = "arnold-bruls"``).

Why.  newmark.py's generalized-α (Chung–Hulbert form) interpolates the forces,
(1−α_m) M(q_{n+1}) a_{n+1} + α_m M(q_n) a_n + (1−α_f) r_F(x_{n+1}) + α_f r_F(x_n) = 0:
where M depends on q (Euler-parameter bodies, FFR bodies) the interpolated inertia
M a is not the inertia at any one time, and the scheme drops to first order
(benchmarks/README.md "dt-convergence of the shipped configs").  Arnold & Brüls,
"Convergence of the generalized-α scheme for constrained mechanical systems",
Multibody Syst. Dyn. 18 (2007) 185–202, put the equations at t_{n+1} and move the α
weights into a linear recursion of a pseudo-acceleration a:

    M(q_{n+1}) q̈_{n+1} + Φ_qᵀ λ_{n+1} = f(q_{n+1}, v_{n+1}, t_{n+1}),   Φ(q_{n+1}, t_{n+1}) = 0
    (1−α_m) a_{n+1} + α_m a_n = (1−α_f) q̈_{n+1} + α_f q̈_n
    q_{n+1} = q_n + h v_n + h² (½−β) a_n + h² β a_{n+1}
    v_{n+1} = v_n + h (1−γ) a_n + h γ a_{n+1}

with α_m = (2ρ∞−1)/(ρ∞+1), α_f = ρ∞/(ρ∞+1), γ = ½ − α_m + α_f, β = ¼ (γ + ½)²
(Chung & Hulbert 1993, as newmark.py's ``genalpha``), a_0 = q̈_0.  Arnold & Brüls show
second-order convergence of q and v for any M(q); q̈ and λ carry an O(h) transient from
the start value a_0 = q̈_0 (a_n approximates q̈(t_n + (α_m − α_f) h), not q̈(t_n)), which
the numerical damping (ρ∞ < 1) removes.  Measured (tests/test_genalpha_ab.py, heavy
top): observed order 2.00 in q_N and v_N where the Chung–Hulbert form gives 1.04.

State.  x_n = (q_n, v_n, q̈_n, λ_n, a_n): the first four are the physical state every
objective, output and guard reads (q̈ in the acceleration slot); the pseudo-acceleration
a_n is a fifth block, ``extra_state`` (Problem, the checkpoint store and the sweeps carry
trailing blocks generically; objectives never see them).

Step.  Unknowns z = (q̈_{n+1}, λ_{n+1}).  With c = (1−α_f)/(1−α_m) and
s_n = (α_f q̈_n − α_m a_n)/(1−α_m), a_{n+1} = c q̈_{n+1} + s_n, so

    q_{n+1} = q̂ + β'h² q̈_{n+1},  q̂ = q_n + h v_n + (½−β) h² a_n + βh² s_n,   β' = cβ
    v_{n+1} = v̂ + γ'h q̈_{n+1},   v̂ = v_n + (1−γ) h a_n + γh s_n,            γ' = cγ
    R₁ = M(q_{n+1}) q̈_{n+1} + r_F(x_{n+1}) + Φ_qᵀλ_{n+1} = 0,   R₂ = Φ(q_{n+1}, t_{n+1}) / (β'h²) = 0

— newmark.py's acceleration-form Newton (``newton_acceleration_form``) with β', γ',
α_m = α_f = 0 in the residual and this predictor; the 1/(β'h²) row scaling makes the
Newton matrix [[M + γ'h C + β'h² K, Φ_qᵀ], [Φ_q, 0]] of order one.

Tangent step: J dz = −(R_q dq̂ + R_v dv̂ + R_ρ) at fixed z, then x_{n+1}'s blocks from dz
and da_{n+1} = c dq̈_{n+1} + ds_n.
Adjoint step (μ = ∂ψ/∂x, blocks (q, v, q̈, λ, a)):
    Jᵀ ν = [β'h² μ_q + γ'h μ_v + μ_q̈ + c μ_a;  μ_λ],
    ∂ψ/∂q̂ = μ_q − R_qᵀν,  ∂ψ/∂v̂ = μ_v − R_vᵀν,  ∂ψ/∂s = βh² ∂ψ/∂q̂ + γh ∂ψ/∂v̂ + μ_a,
    μ_q,n = ∂ψ/∂q̂,  μ_v,n = h ∂ψ/∂q̂ + ∂ψ/∂v̂,
    μ_a,n = (½−β)h² ∂ψ/∂q̂ + (1−γ)h ∂ψ/∂v̂ − α_m/(1−α_m) ∂ψ/∂s,  μ_q̈,n = α_f/(1−α_m) ∂ψ/∂s,
    μ_λ,n = 0,  ∇ψ −= R_ρᵀν.

Step size: every step reads ``self.h`` when it runs (adaptive runs change it between
steps).  With a varying h the pseudo-acceleration a_n ≈ q̈(t_n + (α_m − α_f) h_{n−1})
enters a step of size h_n: an error ≈ (α_m − α_f)(h_n − h_{n−1}) q⃛ in a, times h² in q —
small for the controller's gradual step changes (Arnold & Brüls analyse constant h).
"""
import numpy as np

from .newmark import NewmarkFamily, StepError, newton_acceleration_form


class _InitialWithPseudo:
    """The index-3 initial state with a_0 = q̈_0 appended (tangent and adjoint likewise);
    everything else is the wrapped InitialState's."""

    def __init__(self, init):
        self._init = init

    def __getattr__(self, name):
        return getattr(self._init, name)

    def solve(self, t0, p):
        x = self._init.solve(t0, p)
        return tuple(x) + (x[2].copy(),)

    def tangent(self, p):
        dx = self._init.tangent(p)
        return tuple(dx) + (dx[2].copy(),)

    def adjoint(self, p, mq, mv, ma, ml, m_pseudo):
        return self._init.adjoint(p, mq, mv, ma + m_pseudo, ml)


class ArnoldBrulsAlpha(NewmarkFamily):
    """Generalized-α with the equations of motion at t_{n+1} (module docstring).  The
    parameters are newmark.NewmarkFamily's (``genalpha(system, h, rho_inf)``); the
    matrices, Newton and the FFR Schur solver are shared with it."""

    name = "genalpha-arnold-bruls"
    #: trailing state blocks after (q, v, a, λ): (name, width) — the pseudo-acceleration
    extra_state = (("pseudo_a", "n"),)
    #: the compiled step estimates the local error too when the adaptive loop asks
    #: (``estimate_into``: integrators/one_step.py, timeloop.LocalError.request)
    fuses_estimate = True

    def __init__(self, system, h, alpha_m=0.0, alpha_f=0.0, beta=0.25, gamma=0.5, compiled="off", **kw):
        if not alpha_m < 1.0:
            raise ValueError(f"alpha_m = {alpha_m} must be below 1")
        super().__init__(system, h, alpha_m, alpha_f, beta, gamma, compiled="off", **kw)
        # issue 19: one compiled call per forward, tangent and adjoint step
        # (compiled/ab_step.py, ab_adjoint.py)
        from ..compiled import ab_stepper
        self.compiled, self.compiled_note = (None, None) if self.schur is not None else \
            ab_stepper.make(system, compiled, self.op)
        self.c = (1.0 - alpha_f) / (1.0 - alpha_m)
        self.init = _InitialWithPseudo(self.init)

    # -- pieces shared by the three steps ---------------------------------------------------------
    def _coef(self):
        """(β'h², γ'h) of the current step."""
        h = self.h
        return self.c * self.beta * h * h, self.c * self.gamma * h

    def _set_matrix(self, ev):
        B, G = self._coef()
        if self.schur is not None:
            self.schur.set_newton(ev, B, G, 1.0, 1.0, 1.0, B, 1.0)
            return
        F = ev.force_blocks(B, G, 1.0, 1.0, 1.0)
        H = [B * Hb for Hb in ev.hess_blocks()]
        Gq = ev.phi_q_blocks()
        self.op.set_values(F + H + Gq + [np.swapaxes(Gb, 1, 2) for Gb in Gq] + self.zero_diag)

    def _predict(self, q, v, qdd, a):
        """(q̂, v̂, s_n) of the module docstring (also applied to tangent columns: linear)."""
        h, b, g = self.h, self.beta, self.gamma
        s = (self.af * qdd - self.am * a) / (1.0 - self.am)
        return q + h * v + (0.5 - b) * h * h * a + b * h * h * s, v + (1 - g) * h * a + g * h * s, s

    def _eval(self, t, x, p):
        return super()._eval(t, tuple(x[:4]), p)

    # -- forward ------------------------------------------------------------------------------------
    def step(self, k, t, x, p, ev_old=None):
        """x_{k+1} from x_k = (q, v, q̈, λ, a) at time t = t_k; returns (x_{k+1}, Newton iterations)."""
        q, v, qdd, lam, a = x
        if self.compiled is not None and not any(np.iscomplexobj(y) for y in (p, *x)):
            *x1, its, status = self.compiled.newton(x, p, t, self.h, self.beta, self.gamma, self.am, self.af,
                                                    self.newton, self.estimate_into)
            if status == 0:
                return tuple(x1), its
            # a failed compiled step is redone below, so the error names step and time as always
        B, G = self._coef()
        t1 = t + self.h
        qp, vp, s = self._predict(q, v, qdd, a)
        newton = lambda: newton_acceleration_form(
            k, t1, qp, vp, qdd, lam, B, G, self.newton, self.lin, self._set_matrix,
            lambda t_, x_: self._eval(t_, x_, p),
            lambda ev: np.r_[ev.residual(1.0, 1.0), ev.phi() / B],
            estimate=self.schur is not None)
        if self.schur is None:
            x1, its = newton()
        else:                             # lagged elastic factor first, as newmark.py
            self.schur.exact = False
            try:
                x1, its = newton()
            except StepError:
                self.schur.invalidate()
                self.schur.exact = True
                x1, its = newton()
            finally:
                self.schur.exact = True
        q1, v1, qdd1, lam1 = x1
        return (q1, v1, qdd1, lam1, self.c * qdd1 + s), its

    # -- tangent (direct differentiation) ------------------------------------------------------
    def tangent_step(self, t, x0, x1, dx0, p):
        """dx_{k+1}/dρ from dx_k/dρ (each five (·, nd) blocks)."""
        nd = self.nd
        if self.compiled is not None and not any(np.iscomplexobj(y) for y in (p, *x1, *dx0)):
            out = self.compiled.tangent(x1, dx0, p, t, self.h, self.beta, self.gamma, self.am, self.af,
                                        self.design_map, nd)                  # ab_adjoint.py
            if out is not None:
                return out
        B, G = self._coef()
        dq, dv, dqdd, dl, da = dx0
        dqp, dvp, ds = self._predict(dq, dv, dqdd, da)
        ev = self._eval(t + self.h, x1, p)
        self._set_matrix(ev)
        I = np.eye(nd)
        r1 = ev.K() @ dqp + ev.Cv() @ dvp + ev.R_p(nd) @ I
        r2 = (ev.G() @ dqp + ev.phi_p(nd) @ I) / B
        dz = self.lin.solve_many(-np.vstack([r1, r2]))
        n = self.sys.n
        dqdd1, dl1 = dz[:n], dz[n:]
        return dqp + B * dqdd1, dvp + G * dqdd1, dqdd1, dl1, self.c * dqdd1 + ds

    # -- discrete adjoint -----------------------------------------------------------------------------
    def adjoint_step(self, t, x0, x1, mu1, p):
        """(μ_k, ∇ψ increment) from μ_{k+1} = (μ_q, μ_v, μ_q̈, μ_λ, μ_a) of x_{k+1}
        (one column per objective)."""
        h, b, g, nd = self.h, self.beta, self.gamma, self.nd
        am, af = self.am, self.af
        B, G = self._coef()
        if self.compiled is not None and not any(np.iscomplexobj(y) for y in (p, *x1, *mu1)):
            out = self.compiled.adjoint(x1, mu1, p, t, h, b, g, am, af, self.design_map, nd)   # ab_adjoint.py
            if out is not None:
                return out
        mq1, mv1, mqdd1, ml1, ma1 = mu1
        n = self.sys.n
        ev = self._eval(t + h, x1, p)
        self._set_matrix(ev)
        nu = self.lin.solve_many(np.vstack([B * mq1 + G * mv1 + mqdd1 + self.c * ma1, ml1]), transpose=True)
        nu1, nu2 = nu[:n], nu[n:] / B
        mqp = mq1 - (ev.K().T @ nu1 + ev.G().T @ nu2)      # ∂ψ/∂q̂
        mvp = mv1 - ev.Cv().T @ nu1                         # ∂ψ/∂v̂
        ms = b * h * h * mqp + g * h * mvp + ma1            # ∂ψ/∂s_n
        mq = mqp
        mv = h * mqp + mvp
        ma = (0.5 - b) * h * h * mqp + (1 - g) * h * mvp - am / (1.0 - am) * ms
        mqdd = af / (1.0 - am) * ms
        ml = np.zeros_like(ml1)
        grad = -(ev.R_p(nd, own=True).T @ nu1 + ev.phi_p(nd).T @ nu2)   # own elements (combine: Problem)
        return (mq, mv, mqdd, ml, ma), grad


def make_ab_stepper(system, sim, **kw):
    """The stepper for ``integrator = "genalpha"`` with ``genalpha_form = "arnold-bruls"``."""
    kw.pop("compiled", None)
    return ArnoldBrulsAlpha.genalpha(system, sim.dt, sim.rho_inf, newton=sim.newton,
                                     petsc_options=sim.petsc_options, compiled=sim.compiled, **kw)
