"""The Newmark family for index-3 DAEs: trapezoidal, Newmark and generalized-α.

One scheme, three parameter sets, and — in this one file so they cannot drift
apart — its forward step, tangent (direct) step and discrete adjoint step.

Generalized-α in acceleration form with interpolated forces (Chung–Hulbert; the
Newmark relations, the α-weighting and ρ∞ of seed 001 eqs. 1–5 and 18–21); state
x_n = (q_n, v_n, a_n, λ_n); unknowns z = (a_{n+1}, λ_{n+1}):

    q_{n+1} = q̂ + βh² a_{n+1},   q̂ = q_n + h v_n + (½ − β) h² a_n
    v_{n+1} = v̂ + γh a_{n+1},    v̂ = v_n + (1 − γ) h a_n
    R₁ = (1−α_m) r_I(x_{n+1}) + (1−α_f)[r_F(x_{n+1}) + Φ_qᵀλ_{n+1}] + R_old = 0
    R_old = α_m r_I(x_n) + α_f [r_F(x_n) + Φ_qᵀλ_n]
    R₂ = Φ(q_{n+1}, t_{n+1}) / (βh²) = 0

r_I is the inertial part (M a), r_F every other force.  Dividing Φ by βh² keeps the
Newton matrix J = [[∂R₁/∂a, (1−α_f)Φ_qᵀ], [Φ_q, 0]] of order one (the h² scaling of
the constraint rows).  α_m = α_f = 0 gives Newmark; β = ¼, γ = ½ the trapezoidal
rule (q_{n+1} = q_n + h/2 (v_n + v_{n+1}), v likewise).  ρ∞ gives (seed 001 eqs. 18–21)
α_m = (2ρ∞−1)/(ρ∞+1), α_f = ρ∞/(ρ∞+1), γ = ½ − α_m + α_f, β = ¼ (1 − α_m + α_f)².

This is *not* seed 001's multibody scheme (§2.3, eqs. 33–40): the paper solves the
index-1 system (J_Φ q̈ = F_c with Baumgarte terms) and weights J_Φᵀλ and J_Φ q̈ with α_m;
here the constraints stay at index 3 (Φ(q_{n+1}) = 0, h²-scaled), the reaction Φ_qᵀλ is
weighted with α_f like every other non-inertial force, and α_m weights only the inertial
groups r_I.  The paper's scheme is ``formulation = "index1"`` with integrator
``genalpha`` (formulations/index1_genalpha.py).  Both forms share the first-order
accuracy the paper notes for a configuration-dependent mass matrix (benchmarks/README.md,
dt-convergence section); the index-1 one is first order also for constant M
(tests/test_index1_genalpha.py).

Tangent step: differentiate R(z_{n+1}; x_n, ρ) = 0:  J dz = −(R_x dx_n + R_ρ).
Adjoint step (μ = ∂ψ/∂x, the total sensitivity of the objective to a state):
    Jᵀ ν = ∂x_{n+1}/∂z ᵀ μ_{n+1},   μ_n = L ᵀμ_{n+1} − R_xᵀ ν,   ∇ψ −= R_ρᵀ ν
with L the explicit (predictor) part of x_{n+1}(x_n).
"""
import numpy as np

from ..errors import StepError  # noqa: F401  (imported from here throughout)
from ..model.assembly import SparseOperator
from ..model.evaluation import StateEval, EvalPlan
from .one_step import OneStep


def saddle_point_pattern(system):
    """Block pattern of the (n + m) Newton matrix [[∂R/∂a, Φ_qᵀ], [Φ_q, 0]] shared by the
    acceleration-form steppers (and InitialState, which reuses their operator): force
    blocks, Hessian-of-constraint blocks, Φ_qᵀ, Φ_q and an explicit zero diagonal in the
    λ block (PETSc's LU wants every diagonal entry).  Returns (blocks, zero_diag values)."""
    n, m = system.n, system.m
    probe = StateEval(system, 0.0, system.q_guess, np.zeros(n), np.zeros(n), np.zeros(m), system.p)
    ci = probe.constraint_index(n)
    diag = np.arange(n, n + m).reshape(-1, 1)
    blocks = (probe.force_index() + [(r, r) for r, _ in ci] + [(c, r) for r, c in ci] + ci
              + [(diag, diag)])
    return blocks, [np.zeros((m, 1, 1))]


#: the contraction estimate θ_k = ‖Δ_k‖/‖Δ_{k−1}‖ is trusted below this (else: measured)
THETA_TRUST = 1e-3


def newton_acceleration_form(k, t1, qp, vp, a0, lam0, bh2, gh, tol, op, set_matrix, evaluate, residual,
                             estimate=False):
    """Newton on z = (a_{n+1}, λ_{n+1}) of the acceleration-form steppers (Newmark family,
    index-1): q = q̂ + βh² a, v = v̂ + γh a, J dz = −R(z) with ``residual(ev)`` and the
    matrix ``set_matrix(ev)`` of the stepper; converged when the position update βh²|da|
    is below atol + rtol |q|.  Returns ((q, v, a, λ), iterations); StepError names the
    step and time otherwise.

    ``estimate`` (the continuum Schur solver's Newton on a nearly exact J̃): also
    converged when the *estimated* error of the updated iterate, θ/(1 − θ) βh²|da| with
    θ = |Δ_k| / |Δ_{k−1}| the observed contraction, is below the same tolerance (Hairer &
    Wanner, Solving ODEs II, §IV.8, eqs. 8.10–8.11) — the tolerance is unchanged, only
    the extra iteration that would measure an update θ times smaller is saved.  Trusted
    for θ ≤ THETA_TRUST only (asymptotic regime: linear convergence at J̃'s contraction
    or faster, for which the estimate is an upper bound).  Measured on the topopt crank
    (10⁵ elements): θ ≈ 1e-7 … 1e-5 at the second iteration, estimate ≤ 2e-13, the
    third update it saves ≈ 1e-16; over 100 steps (100 × 40 mesh) 279 instead of 345
    iterations, trajectory within 8e-15, gradient within 1e-9 relative."""
    a, lam = a0.copy(), lam0.copy()
    n = len(a)
    dq = prev = np.inf
    for it in range(1, tol.max_it + 1):
        q1 = qp + bh2 * a
        ev = evaluate(t1, (q1, vp + gh * a, a, lam))
        R = residual(ev)
        set_matrix(ev.real())
        try:
            dz = op.solve(-R)
        except np.linalg.LinAlgError:
            raise _singular(ev, k + 1, t1) or StepError(f"step {k + 1} (t = {t1:.6g}): singular Newton matrix") \
                from None
        a += dz[:n]
        lam += dz[n:]
        dq = bh2 * np.max(np.abs(dz[:n]))
        if not np.all(np.isfinite(dz)):
            break
        done = getattr(tol, "done", None)         # adaptive runs: newton_tol.AdaptiveNewton
        if done is not None:
            if done(bh2 * np.abs(dz[:n]), q1, vp + gh * a, prev):
                return (qp + bh2 * a, vp + gh * a, a, lam), it
            prev = dq
            continue
        lim = tol.atol + tol.rtol * np.max(np.abs(q1))
        theta = dq / prev if estimate and 0.0 < prev < np.inf else np.inf
        if dq <= lim or (theta <= THETA_TRUST and theta / (1.0 - theta) * dq <= lim):
            return (qp + bh2 * a, vp + gh * a, a, lam), it
        prev = dq
    raise _singular(ev, k + 1, t1) or StepError(f"step {k + 1} (t = {t1:.6g}): Newton did not converge in "
                                                f"{tol.max_it} iterations (last position update {dq:.2e})")


def _singular(ev, step, t):
    """SingularConfiguration (exit 2, names the joints) when the failed Newton iterate sits
    at a configuration where the constraint rows are dependent, else None."""
    from ..model.redundancy import singular_configuration
    return singular_configuration(ev.sys, t, ev.q, ev.p, step)


class NewmarkParameterSets(OneStep):
    """The named parameter sets of the Newmark family (constructors of a stepper class
    whose __init__ takes (system, h, α_m, α_f, β, γ, **kw)): shared by NewmarkFamily
    and the GGL-stabilized family (ggl.py)."""

    @classmethod
    def trapezoidal(cls, system, h, **kw):
        return cls(system, h, 0.0, 0.0, 0.25, 0.5, **kw)

    @classmethod
    def newmark(cls, system, h, beta=0.25, gamma=0.5, **kw):
        return cls(system, h, 0.0, 0.0, beta, gamma, **kw)

    @classmethod
    def genalpha(cls, system, h, rho_inf=0.9, **kw):
        """α_m, α_f, β, γ from ρ∞ (Chung & Hulbert 1993; module docstring)."""
        am = (2 * rho_inf - 1) / (rho_inf + 1)
        af = rho_inf / (rho_inf + 1)
        g = 0.5 - am + af
        return cls(system, h, am, af, 0.25 * (1 - am + af) ** 2, g, **kw)

    @classmethod
    def hht(cls, system, h, rho_inf=0.9, **kw):
        """Hilber–Hughes–Taylor α (HHT-α): α_m = 0, α_f = (1 − ρ∞)/(1 + ρ∞) ∈ [0, ⅓] for
        ρ∞ ∈ [½, 1] (Hilber, Hughes & Taylor 1977, in the Chung–Hulbert convention where
        α weights the old state; Chung & Hulbert 1993 Table 1), γ, β as for genalpha."""
        af = (1 - rho_inf) / (1 + rho_inf)
        return cls(system, h, 0.0, af, 0.25 * (1 + af) ** 2, 0.5 + af, **kw)

    @classmethod
    def wbz(cls, system, h, rho_inf=0.9, **kw):
        """Wood–Bossak–Zienkiewicz α (WBZ-α): α_f = 0, α_m = (ρ∞ − 1)/(ρ∞ + 1) ≤ 0 (Wood,
        Bossak & Zienkiewicz 1980; Chung & Hulbert 1993 Table 1), γ, β as for genalpha."""
        am = (rho_inf - 1) / (rho_inf + 1)
        return cls(system, h, am, 0.0, 0.25 * (1 - am) ** 2, 0.5 - am, **kw)


class NewmarkFamily(NewmarkParameterSets):
    name = "newmark-family"
    #: its Newton loop takes the per-component test of adaptive runs (integrators/newton_tol.py)
    noise_aware_newton = True
    #: the compiled step estimates the local error too when the adaptive loop asks
    #: (``estimate_into``: integrators/one_step.py; compiled/newmark_step.newton_step_estimate)
    fuses_estimate = True
    #: (t, x_k copy, p, evaluation) of the last adjoint step's old state, or None (``_adjoint_eval``)
    _adj_prev = None

    def __init__(self, system, h, alpha_m=0.0, alpha_f=0.0, beta=0.25, gamma=0.5,
                 newton=None, petsc_options=None, design_map=None, ndesign=0, comm=None, compiled="off"):
        self.sys, self.h = system, h
        self.am, self.af, self.beta, self.gamma = alpha_m, alpha_f, beta, gamma
        self.newton = newton
        n, m = system.n, system.m
        self.design_map = design_map if design_map is not None else -np.ones(len(system.p), np.int64)
        self.nd = ndesign
        self.blocks, self.zero_diag = saddle_point_pattern(system)
        self._op, self._op_args = None, (n + m, comm, petsc_options)
        self.plan = EvalPlan(system, self.design_map)     # index arrays shared by every state
        # FFR continua: Newton matrices as structured operators, solved with a lagged
        # factorization of the elastic block + Schur border + refinement (exact;
        # flexible/continuum_schur.py); off with petsc option continuum_schur = false
        self.schur = None
        from ..flexible import continuum_schur
        from .._petsc import PETSc
        if not (continuum_schur.usable(system) and PETSc.Options().getBool("parmbs_continuum_schur", True)):
            self.lin = self.op
        else:
            self.schur = self.lin = continuum_schur.ContinuumSchurOperator(system, self.plan, comm=comm)
            self.plan.structured = self.schur.st
            # issue 5: the O(nnz) products by F's row split, ∂r/∂x of the adjoint by elements
            # (flexible/continuum_split.py); the sweep's gradient is combined in Problem
            from ..flexible.continuum_split import ElementSplit, split_groups
            self.schur.st.distribute(self.schur.comm)
            self.plan.split = ElementSplit(self.plan, split_groups(system), ndesign, self.schur.comm)
        from .initial import InitialState
        # the initial accelerations factor the mass block alone: their own Schur operator
        # (same constant matrices), so it does not replace the steps' stiffness-dominated
        # factorization twice per design (initial state, initial-state adjoint)
        init_op = self.op if self.schur is None else \
            continuum_schur.ContinuumSchurOperator(system, self.plan, comm=comm, options_prefix="parmbs_schur0_",
                                                   structure=self.schur.st, pattern=self.schur.fpat)
        self.init = InitialState(system, init_op, self.design_map, ndesign, newton, comm=comm, plan=self.plan)
        # issue 19: small planar rigid models take one compiled call per step (parmbs/compiled)
        from .. import compiled as _compiled
        self.compiled, self.compiled_note = (None, None) if self.schur is not None else \
            _compiled.make(system, compiled, self.op)

    @property
    def op(self):
        """The assembled (n + m) Newton matrix (SparseOperator), built on first use.  The
        continuum Schur path (``self.schur``) never assembles it: its pattern holds every
        element block of the continua (11 × 11 + 8 × 8 per element; at 10⁶ elements ≈ 1.5 GB
        of slots and the same again in temporaries while it is built), on every rank."""
        if self._op is None:
            N, comm, options = self._op_args
            self._op = SparseOperator(N, self.blocks, comm=comm, options=options)
        return self._op

    @op.setter
    def op(self, value):
        self._op = value

    # -- pieces shared by the three steps ---------------------------------------------------------
    def _eval(self, t, x, p):
        return StateEval(self.sys, t, *x, p, self.design_map, self.plan)

    def _set_matrix(self, ev):
        h, b, g = self.h, self.beta, self.gamma
        wi, wf = 1 - self.am, 1 - self.af
        if self.schur is not None:
            self.schur.set_newton(ev, b * h * h, g * h, 1.0, wi, wf, wf * b * h * h, wf)
            return
        F = ev.force_blocks(b * h * h, g * h, 1.0, wi, wf)
        H = [wf * b * h * h * Hb for Hb in ev.hess_blocks()]
        G = ev.phi_q_blocks()
        self.op.set_values(F + H + G + [wf * np.swapaxes(Gb, 1, 2) for Gb in G] + self.zero_diag)

    def _predict(self, x):
        q, v, a, _ = x
        h, b, g = self.h, self.beta, self.gamma
        return q + h * v + (0.5 - b) * h * h * a, v + (1 - g) * h * a

    # -- forward ------------------------------------------------------------------------------------
    def initial(self, t0, p):
        self._adj_prev = None          # a forward run: the last sweep's evaluation is not kept through it
        return self.init.solve(t0, p)

    def step(self, k, t, x, p, ev_old=None):
        """x_{k+1} from x_k at time t = t_k; returns (x_{k+1}, Newton iterations)."""
        h, b, g = self.h, self.beta, self.gamma
        if self.compiled is not None and not any(np.asarray(y).dtype.kind == "c" for y in (p, *x)):  # complex: numpy
            q1, v1, a1, l1, its, status = self.compiled.newton(x, p, t, h, b, g, self.am, self.af, self.newton,
                                                               self.estimate_into)
            if status == 0:
                return (q1, v1, a1, l1), its
            # a failed compiled step is redone below, so the error names step and time as always
        t1 = t + h
        qp, vp = self._predict(x)
        R_old = 0.0
        if self.am or self.af:                 # trapezoidal/Newmark: no old-state residual
            R_old = (ev_old or self._eval(t, x, p)).residual(self.am, self.af)
        newton = lambda: newton_acceleration_form(
            k, t1, qp, vp, x[2], x[3], b * h * h, g * h, self.newton, self.lin, self._set_matrix,
            lambda t_, x_: self._eval(t_, x_, p),
            lambda ev: np.r_[ev.residual(1 - self.am, 1 - self.af) + R_old, ev.phi() / (b * h * h)],
            estimate=self.schur is not None)
        if self.schur is None:
            return newton()
        # Newton needs no exact solve: J̃ (the lagged elastic factor) differs from J by
        # ~1e-9 relative, which leaves the quadratic convergence as it is.  Should the
        # lag estimate miss a stale factor, the step is redone with a fresh one and
        # refined (exact) solves before a failure is reported
        self.schur.exact = False
        try:
            return newton()
        except StepError:
            self.schur.invalidate()
            self.schur.exact = True
            return newton()
        finally:
            self.schur.exact = True

    def _compiled_real(self, p, *blocks):
        """The compiled tangent/adjoint step applies: a compiled stepper, real arrays (the
        complex-step verification keeps the numpy path)."""
        return self.compiled is not None and not any(np.asarray(y).dtype.kind == "c" for b in ((p,),) + blocks
                                                     for y in b)

    # -- tangent (direct differentiation) ------------------------------------------------------
    def tangent_step(self, t, x0, x1, dx0, p):
        """dx_{k+1}/dρ from dx_k/dρ (each four (·, nd) blocks)."""
        h, b, g, nd = self.h, self.beta, self.gamma, self.nd
        if self._compiled_real(p, x0, x1, dx0):      # issue 19: one compiled call (compiled/newmark_adjoint.py)
            out = self.compiled.tangent(x0, x1, dx0, p, t, h, b, g, self.am, self.af, self.design_map, nd)
            if out is not None:
                return out
        wi, wf = 1 - self.am, 1 - self.af
        dq, dv, da, dl = dx0
        dqp = dq + h * dv + (0.5 - b) * h * h * da
        dvp = dv + (1 - g) * h * da
        ev = self._eval(t + h, x1, p)
        self._set_matrix(ev)
        I = np.eye(nd)
        r1 = ev.K(wi, wf) @ dqp + ev.Cv(wi, wf) @ dvp + ev.R_p(nd, wi, wf) @ I
        r2 = (ev.G() @ dqp + ev.phi_p(nd) @ I) / (b * h * h)
        if self.am or self.af:
            eo = self._eval(t, x0, p)
            r1 += (eo.K(self.am, self.af) @ dq + eo.Cv(self.am, self.af) @ dv + eo.Ma(self.am, self.af) @ da
                   + self.af * (eo.G().T @ dl) + eo.R_p(nd, self.am, self.af) @ I)
        dz = self.lin.solve_many(-np.vstack([r1, r2]))
        n = self.sys.n
        da1, dl1 = dz[:n], dz[n:]
        return dqp + b * h * h * da1, dvp + g * h * da1, da1, dl1

    # -- discrete adjoint -----------------------------------------------------------------------------
    def adjoint_step(self, t, x0, x1, mu1, p):
        """(μ_k, ∇ψ increment) from μ_{k+1} = (μ_q, μ_v, μ_a, μ_λ) of x_{k+1}.

        Each μ block has one column per objective: all objectives share one sweep."""
        h, b, g, nd = self.h, self.beta, self.gamma, self.nd
        if self._compiled_real(p, x0, x1, mu1):      # issue 19: one compiled call (compiled/newmark_adjoint.py)
            out = self.compiled.adjoint(x0, x1, mu1, p, t, h, b, g, self.am, self.af, self.design_map, nd)
            if out is not None:
                return out
        wi, wf = 1 - self.am, 1 - self.af
        mq1, mv1, ma1, ml1 = mu1
        n = self.sys.n
        ev = self._adjoint_eval(t + h, x1, p)
        self._set_matrix(ev)
        nu = self.lin.solve_many(np.vstack([b * h * h * mq1 + g * h * mv1 + ma1, ml1]), transpose=True)
        nu1, nu2 = nu[:n], nu[n:] / (b * h * h)
        sq = ev.K(wi, wf).T @ nu1 + ev.G().T @ nu2          # ∂R/∂q_{k+1}ᵀ ν at fixed z
        sv = ev.Cv(wi, wf).T @ nu1
        mq = mq1 - sq
        mv = h * (mq1 - sq) + mv1 - sv
        ma = (0.5 - b) * h * h * (mq1 - sq) + (1 - g) * h * (mv1 - sv)
        ml = np.zeros_like(ml1)
        grad = -(ev.R_p(nd, wi, wf, own=True).T @ nu1 + ev.phi_p(nd).T @ nu2)   # own elements (combine: Problem)
        if self.am or self.af:
            eo = self._eval(t, x0, p)
            mq -= eo.K(self.am, self.af).T @ nu1
            mv -= eo.Cv(self.am, self.af).T @ nu1
            ma -= eo.Ma(self.am, self.af).T @ nu1
            ml -= self.af * (eo.G() @ nu1)
            grad -= eo.R_p(nd, self.am, self.af, own=True).T @ nu1
            self._adj_prev = (t, tuple(np.array(y, copy=True) for y in x0), p, eo)
        return (mq, mv, ma, ml), grad

    def _adjoint_eval(self, t1, x1, p):
        """The evaluation at x_{k+1} of adjoint step k: the previous adjoint step's
        old-state evaluation when that was this state (the backward sweep visits x_{k+1}
        as step k+1's x_k just before; compared by value, with time and parameters) —
        its element ∂r/∂ρ and structured Jacobians are remembered (model/evaluation.py),
        so each state's are computed once per sweep instead of twice — else a new one."""
        prev, self._adj_prev = self._adj_prev, None
        if prev is not None:
            t0, x0, p0, eo = prev
            if t0 == t1 and (p0 is p or np.array_equal(p0, p)) and all(
                    np.shape(y) == np.shape(z) and np.array_equal(y, z) for y, z in zip(x0, x1)):
                return eo
        return self._eval(t1, x1, p)


def family_member(family, system, sim, **common):
    """The member of a Newmark-family stepper class (``NewmarkFamily``, or
    ``GGLNewmarkFamily`` in ggl.py) named by ``simulation.integrator``, with its
    parameters from ``sim``; None for an integrator outside the family.  One dispatch, so
    the index-3 and GGL steppers cannot come to read different parameters."""
    h = sim.dt
    if sim.integrator == "trapezoidal":
        return family.trapezoidal(system, h, **common)
    if sim.integrator == "newmark":
        return family.newmark(system, h, sim.beta, sim.gamma, **common)
    if sim.integrator == "genalpha":
        return family.genalpha(system, h, sim.rho_inf, **common)
    if sim.integrator in ("hht", "wbz"):
        return getattr(family, sim.integrator)(system, h, sim.rho_inf, **common)
    return None


def make_stepper(system, sim, **kw):
    """The stepper named by ``simulation.integrator`` (index3 formulation)."""
    st = family_member(NewmarkFamily, system, sim, newton=sim.newton, petsc_options=sim.petsc_options,
                       compiled=sim.compiled, **kw)
    if st is None:
        raise ValueError(f"no index3 stepper {sim.integrator!r}")
    return st
