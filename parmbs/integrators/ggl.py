"""Stabilized index-2 (GGL) Newmark family: trapezoidal, Newmark and generalized-α with
the velocity constraint enforced beside the position constraint.

Forward step, tangent (direct) step and discrete adjoint step in one file, as
integrators/newmark.py, whose scheme this one extends (``simulation.stabilization =
"ggl"``).

Why.  The index-3 schemes enforce Φ(q) = 0 only; velocities and accelerations follow
from positions through the Newmark formulas, so a position error ε (Newton tolerance,
round-off) reaches a and λ as ε/(βh²).  Under the trapezoidal rule, whose algebraic
components have the amplification −1, the error passes through that −1 twice (v from
q, then a from v), and the (−1)ᵏ part of a and λ grows with the step count
(integrators/guard.py; the five-bar at dt 1e-4: 5e-5, 5e-3, 0.16 after 50, 500, 5000
steps, and ψ3 = ∫|r̈|² 1.1 % off at 5 s).  Gear, Gupta & Leimkuhler ("Automatic
integration of Euler–Lagrange equations with constraints", J. Comput. Appl. Math.
12–13 (1985) 77–90) add the velocity constraint and a second multiplier acting on the
positions:

    q̇ = v + Φ_qᵀ μ,   M v̇ + Φ_qᵀ λ = Q,   Φ(q, t) = 0,   Φ_q v + Φ_t = 0

(μ = 0 on the exact solution).  Discretised by the Newmark family, Φ_q v + Φ_t = 0 fixes
the constraint-normal velocities directly, so a position error no longer feeds v through
the difference quotient (Lunk & Simeon, "Solving constrained mechanical systems by the
family of Newmark and α-methods", ZAMM 86 (2006) 772–784, analyse the Newmark family on
the index-3 and this stabilized index-2 form; Arnold, Brüls & Cardona, "Error analysis of
generalized-α Lie group time integration methods for constrained mechanical systems",
Numer. Math. 129 (2015) 149–179, generalized-α on both).  Measured here
(tests/test_ggl.py, benchmarks/README.md "GGL"): a and λ stay smooth at dt 1e-4, ψ3 is
1.1e-8 off.  The scheme here is that stabilized index-2 formulation written in this
package's acceleration form with interpolated forces (Chung–Hulbert, as newmark.py),
the position correction taken along Φ_qᵀ at q_{n+1} (as Lunk & Simeon and Arnold et al.).

Scheme.  State x_n = (q_n, v_n, a_n, λ_n) exactly as the index-3 stepper's (objectives,
checkpoints, the guard and the initial state are shared).  Unknowns of a step
z = (a, d, λ, η) ∈ ℝⁿ × ℝⁿ × ℝᵐ × ℝᵐ:

    q_{n+1} = q̂ + βh² (a_{n+1} + d),    q̂ = q_n + h v_n + (½ − β) h² a_n
    v_{n+1} = v̂ + γh a_{n+1},            v̂ = v_n + (1 − γ) h a_n
    R₁ = (1−α_m) r_I(x_{n+1}) + (1−α_f)[r_F(x_{n+1}) + Φ_qᵀλ_{n+1}] + R_old = 0   (newmark.py)
    R_d = d − Φ_q(q_{n+1})ᵀ η = 0
    R₂ = Φ(q_{n+1}, t_{n+1}) / (βh²) = 0
    R₃ = (Φ_q(q_{n+1}) v_{n+1} + Φ_t(q_{n+1}, t_{n+1})) / (γh) = 0

βh² d = βh² Φ_qᵀη is the discrete Φ_qᵀμ term (μ ≈ βh η).  The auxiliary d is an unknown
of its own so that every block of the Newton matrix is a local component block (Φ_q,
Φ_qᵀ, the constraint Hessian (Φ_qᵀη)_q, force Jacobians): eliminating it would put the
products K Φ_qᵀ and M Φ_qᵀ, which no component pattern holds, into the matrix.  The
scalings 1/(βh²), 1/(γh) keep every row O(1), as the index-3 and Maggi steppers do:

    J = [[ A,              βh² (K+H_λ)·w,   w_f Φ_qᵀ, 0    ],      A = ∂R₁/∂a (newmark.py)
         [ −βh² H_η,       I − βh² H_η,     0,        −Φ_qᵀ],      H_η = (Φ_qᵀη)_q
         [ Φ_q,            Φ_q,             0,        0    ],
         [ Φ_q + βh/γ W,   βh/γ W,          0,        0    ]]      W = (Φ_q v)_q + Φ_tq

Newton converges when the position update βh²‖Δa + Δd‖∞ (and βh²‖Δa‖∞) is below
atol + rtol‖q‖∞, the index-3 steppers' test.

η and d are internal to the step: nothing of the next step depends on them (R_old
reads x_n only), so the state stays (q, v, a, λ).  The tangent and adjoint steps need η
(in H_η and ∂(Φ_qᵀη)/∂ρ) and recover it from x_n, x_{n+1}: d = (q_{n+1} − q̂)/(βh²) −
a_{n+1}, then η from Φ_qᵀη = d, which has a unique solution (Φ_q of full row rank; the
redundant rows are dropped at set-up), by the projection system
[[I, Φ_qᵀ], [Φ_q, 0]] [y; η] = [d; 0] (y = 0 when d ∈ range Φ_qᵀ).  The recovery
error is round-off of q over βh² (|δη| ≲ ε‖q‖/(βh²), 4e-8 at h = 1e-4 for ‖q‖ ~ 1),
and η enters J only as βh² H_η: the tangent and adjoint matrices differ from the
forward's by ≲ ε‖q‖‖Φ_qq‖, round-off.

Tangent step: J dz = −(R_q dq̂ + R_v dv̂ + R_ρ + R_old,x dx_n) (R_q, R_v at fixed z).
Adjoint step (μ_x = ∂ψ/∂x the adjoint state, as newmark.py):
    Jᵀ ν = ∂x_{n+1}/∂zᵀ μ_x,   ∂x_{n+1}/∂z: q ← βh² (a, d), v ← γh a, a ← a, λ ← λ,
    ∂ψ/∂q̂ = μ_q − R_qᵀν, ∂ψ/∂v̂ = μ_v − R_vᵀν, then the predictor's transpose, ∇ψ −= R_ρᵀν.

Step size: every step reads ``self.h`` when it runs (a driver may change it between
steps); nothing here depends on h before that.  The FFR continua's structured Schur
solver (flexible/continuum_schur.py) is not used: GGL factors its (2n + 2m) matrix with
the sparse LU of any other model.
"""
import numpy as np

from ..model.assembly import SparseOperator
from ..model.evaluation import EvalPlan, LocalOperator, StateEval
from .initial import InitialState
from .newmark import NewmarkParameterSets, StepError, _singular, family_member, saddle_point_pattern


def _shift(idx, off):
    """Global indices moved by ``off``; −1 (dropped) stays −1."""
    return np.where(idx < 0, -1, idx + off)


def _shifted(op, nrows, row_offset):
    """LocalOperator ``op`` placed at rows row_offset… of an ``nrows``-row operator."""
    return LocalOperator(nrows, op.shape[1], [(_shift(r, row_offset), c, B) for r, c, B in op.parts])


class GGLNewmarkFamily(NewmarkParameterSets):
    """The Newmark family (newmark.NewmarkFamily's parameters) on the stabilized index-2
    (GGL) equations; see the module docstring for the scheme and its derivatives."""

    name = "ggl-newmark-family"
    #: its Newton loop takes the per-component test of adaptive runs (integrators/newton_tol.py)
    noise_aware_newton = True

    def __init__(self, system, h, alpha_m=0.0, alpha_f=0.0, beta=0.25, gamma=0.5,
                 newton=None, petsc_options=None, design_map=None, ndesign=0, comm=None):
        self.sys, self.h = system, h
        self.am, self.af, self.beta, self.gamma = alpha_m, alpha_f, beta, gamma
        self.newton = newton
        n, m = system.n, system.m
        self.design_map = design_map if design_map is not None else -np.ones(len(system.p), np.int64)
        self.nd = ndesign
        self.plan = EvalPlan(system, self.design_map)
        probe = StateEval(system, 0.0, system.q_guess, np.zeros(n), np.zeros(n), np.zeros(m), system.p,
                          self.design_map, self.plan)
        fr = [r for r, _ in probe.force_index()]                 # force groups' coordinate rows
        cc = [c for c, _ in probe.constraint_index(0)]           # constraint groups' coordinates
        cr = [r for _, r in probe.constraint_index(0)]           # ... and their constraint rows
        sh = _shift
        dn = np.arange(n).reshape(-1, 1)
        dm = np.arange(2 * m).reshape(-1, 1)
        # block order = the value order of _set_matrix
        blocks = ([(r, r) for r in fr] + [(c, c) for c in cc]                         # R₁, a
                  + [(r, sh(r, n)) for r in fr] + [(c, sh(c, n)) for c in cc]         # R₁, d
                  + [(c, sh(r, 2 * n)) for c, r in zip(cc, cr)]                       # R₁, λ
                  + [(sh(c, n), c) for c in cc] + [(sh(c, n), sh(c, n)) for c in cc]  # R_d, a / d (H_η)
                  + [(dn + n, dn + n)]                                                # R_d, d (I)
                  + [(sh(c, n), sh(r, 2 * n + m)) for c, r in zip(cc, cr)]            # R_d, η
                  + [(sh(r, 2 * n), c) for c, r in zip(cc, cr)]                       # R₂, a
                  + [(sh(r, 2 * n), sh(c, n)) for c, r in zip(cc, cr)]                # R₂, d
                  + [(sh(r, 2 * n + m), c) for c, r in zip(cc, cr)]                   # R₃, a
                  + [(sh(r, 2 * n + m), sh(c, n)) for c, r in zip(cc, cr)]            # R₃, d
                  + [(dm + 2 * n, dm + 2 * n)])                                       # zero λ, η diagonal
        self.op = self.lin = SparseOperator(2 * n + 2 * m, blocks, comm=comm, options=petsc_options)
        # the projection system recovering η in the tangent and adjoint steps
        self.proj = SparseOperator(n + m, [(dn, dn)] + [(c, sh(r, n)) for c, r in zip(cc, cr)]
                                   + [(sh(r, n), c) for c, r in zip(cc, cr)] + [(dm[:m] + n, dm[:m] + n)],
                                   comm=comm, options_prefix="parmbs_ggl_proj_",
                                   options={"ksp_type": "preonly", "pc_type": "lu"})
        # the initial state's (n + m) saddle-point operator (newmark.py's pattern)
        sblocks, _ = saddle_point_pattern(system)
        self.init = InitialState(system, SparseOperator(n + m, sblocks, comm=comm, options=petsc_options),
                                 self.design_map, ndesign, newton, comm=comm)

    # -- pieces shared by the three steps ---------------------------------------------------------
    def _eval(self, t, x, p):
        return StateEval(self.sys, t, *x, p, self.design_map, self.plan)

    def _eta_local(self, ev, eta):
        """η per constraint group, (ne, m_g) (a dropped row reads 0, as λ)."""
        e = np.append(eta, 0) if self.plan.drop else eta
        return [e[g.rows] for g, *_ in ev.C]

    def _W_blocks(self, ev):
        """W = (Φ_q v)_q + Φ_tq per constraint group at ev's (q, v)."""
        ve = self.sys.extend(ev.v)
        return [g.phi_q_w_q(ev.t, q, p, ve[g.qidx]) + g.phi_t_q(ev.t, q, p) for g, q, v, a, lam, p in ev.C]

    def _H_eta_blocks(self, ev, eta):
        return [g.hess_lam(ev.t, q, p, e) for (g, q, v, a, lam, p), e in zip(ev.C, self._eta_local(ev, eta))]

    def _set_matrix(self, ev, eta):
        h, b, g = self.h, self.beta, self.gamma
        wi, wf = 1 - self.am, 1 - self.af
        bh2 = b * h * h
        Fa = ev.force_blocks(bh2, g * h, 1.0, wi, wf)
        Fd = ev.force_blocks(bh2, 0.0, 0.0, wi, wf)
        Hl = [wf * bh2 * Hb for Hb in ev.hess_blocks()]
        He = [-bh2 * Hb for Hb in self._H_eta_blocks(ev, eta)]
        G = ev.phi_q_blocks()
        GT = [np.swapaxes(Gb, 1, 2) for Gb in G]
        W = [(b * h / g) * Wb for Wb in self._W_blocks(ev)]
        n, m = self.sys.n, self.sys.m
        self.op.set_values(Fa + Hl + Fd + Hl + [wf * B for B in GT] + He + He + [np.ones((n, 1, 1))]
                           + [-B for B in GT] + G + G + [Gb + Wb for Gb, Wb in zip(G, W)] + W
                           + [np.zeros((2 * m, 1, 1))])

    def _residual(self, ev, d, eta, R_old):
        b, g, h = self.beta, self.gamma, self.h
        return np.r_[ev.residual(1 - self.am, 1 - self.af) + R_old,
                     d - ev.G().T @ eta,
                     ev.phi() / (b * h * h),
                     (ev.phi_q_dot(ev.v) + ev.phi_t()) / (g * h)]

    def _predict(self, x):
        q, v, a, _ = x
        h, b, g = self.h, self.beta, self.gamma
        return q + h * v + (0.5 - b) * h * h * a, v + (1 - g) * h * a

    def _eta(self, ev, x0):
        """η of the step x0 → x1 = ev's state, recovered as the module docstring says."""
        n, b, h = self.sys.n, self.beta, self.h
        qp, _ = self._predict(x0)
        d = (ev.q - qp) / (b * h * h) - ev.a
        G = ev.phi_q_blocks()
        m = self.sys.m
        self.proj.set_values([np.ones((n, 1, 1))] + [np.swapaxes(B, 1, 2) for B in G] + G
                             + [np.zeros((m, 1, 1))])
        return self.proj.solve(np.r_[d, np.zeros(m)])[n:]

    def _partials(self, ev, eta, nd):
        """∂R/∂q_{n+1}, ∂R/∂v_{n+1} ((2n+2m) × n) and ∂R/∂ρ ((2n+2m) × nd) at fixed z."""
        n, m = self.sys.n, self.sys.m
        N = 2 * n + 2 * m
        h, b, g = self.h, self.beta, self.gamma
        wi, wf = 1 - self.am, 1 - self.af
        rows = [self.plan.rows[id(gr)] for gr, *_ in ev.C]
        He = LocalOperator(n, n, [(r, r, -B) for r, B in zip(rows, self._H_eta_blocks(ev, eta))])
        Gop = ev.G()
        W = LocalOperator(m, n, [(gr.rows, r, B) for (gr, *_), r, B in zip(ev.C, rows, self._W_blocks(ev))])
        Rq = (LocalOperator(N, n, ev.K(wi, wf).parts) + _shifted(He, N, n)
              + _shifted(Gop.scaled(1 / (b * h * h)), N, 2 * n) + _shifted(W.scaled(1 / (g * h)), N, 2 * n + m))
        Rv = LocalOperator(N, n, ev.Cv(wi, wf).parts) + _shifted(Gop.scaled(1 / (g * h)), N, 2 * n + m)
        items = []
        for (gr, q, v, a, lam, p), e in zip(ev.C, self._eta_local(ev, eta)):
            cols, dcols = self.plan.pcols(gr)
            if len(cols):
                items.append((self.plan.rows[id(gr)], dcols, -gr.phi_qT_lam_p(ev.t, q, p, e, cols)))
        Rp = (LocalOperator(N, nd, ev.R_p(nd, wi, wf).parts) + _shifted(LocalOperator(n, nd, items), N, n)
              + _shifted(ev.phi_p(nd).scaled(1 / (b * h * h)), N, 2 * n)
              + _shifted((ev.phi_q_w_p(nd, ev.v) + ev.phi_t_p(nd)).scaled(1 / (g * h)), N, 2 * n + m))
        return Rq, Rv, Rp

    # -- forward ------------------------------------------------------------------------------------
    def initial(self, t0, p):
        return self.init.solve(t0, p)

    def step(self, k, t, x, p):
        """x_{k+1} from x_k at time t = t_k; returns (x_{k+1}, Newton iterations)."""
        h, b, g = self.h, self.beta, self.gamma
        bh2, gh = b * h * h, g * h
        t1 = t + h
        n, m = self.sys.n, self.sys.m
        qp, vp = self._predict(x)
        R_old = 0.0
        if self.am or self.af:
            R_old = self._eval(t, x, p).residual(self.am, self.af)
        a, lam = x[2].copy(), x[3].copy()
        d, eta = np.zeros_like(a), np.zeros(m, dtype=lam.dtype)
        tol = self.newton
        dq = prev = np.inf
        for it in range(1, tol.max_it + 1):
            q1 = qp + bh2 * (a + d)
            ev = self._eval(t1, (q1, vp + gh * a, a, lam), p)
            R = self._residual(ev, d, eta, R_old)
            self._set_matrix(ev.real(), np.real(eta))
            try:
                dz = self.op.solve(-R)
            except np.linalg.LinAlgError:
                raise _singular(ev, k + 1, t1) or StepError(f"step {k + 1} (t = {t1:.6g}): singular Newton "
                                                            "matrix") from None
            a += dz[:n]
            d += dz[n:2 * n]
            lam += dz[2 * n:2 * n + m]
            eta += dz[2 * n + m:]
            if not np.all(np.isfinite(dz)):
                break
            dqi = bh2 * np.maximum(np.abs(dz[:n] + dz[n:2 * n]), np.abs(dz[:n]))
            dq = np.max(dqi)
            done = getattr(tol, "done", None)     # adaptive runs: newton_tol.AdaptiveNewton
            if (done(dqi, q1, vp + gh * a, prev) if done is not None
                    else dq <= tol.atol + tol.rtol * np.max(np.abs(q1))):
                return (qp + bh2 * (a + d), vp + gh * a, a, lam), it
            prev = dq
        raise _singular(ev, k + 1, t1) or StepError(f"step {k + 1} (t = {t1:.6g}): Newton did not converge in "
                                                    f"{tol.max_it} iterations (last position update {dq:.2e})")

    # -- tangent (direct differentiation) ------------------------------------------------------
    def tangent_step(self, t, x0, x1, dx0, p):
        """dx_{k+1}/dρ from dx_k/dρ (each four (·, nd) blocks)."""
        h, b, g, nd = self.h, self.beta, self.gamma, self.nd
        n, m = self.sys.n, self.sys.m
        dq, dv, da, dl = dx0
        dqp = dq + h * dv + (0.5 - b) * h * h * da
        dvp = dv + (1 - g) * h * da
        ev = self._eval(t + h, x1, p)
        eta = self._eta(ev, x0)
        self._set_matrix(ev, eta)
        Rq, Rv, Rp = self._partials(ev, eta, nd)
        rhs = Rq @ dqp + Rv @ dvp + Rp @ np.eye(nd)
        if self.am or self.af:
            eo = self._eval(t, x0, p)
            rhs[:n] += (eo.K(self.am, self.af) @ dq + eo.Cv(self.am, self.af) @ dv + eo.Ma(self.am, self.af) @ da
                        + self.af * (eo.G().T @ dl) + eo.R_p(nd, self.am, self.af) @ np.eye(nd))
        dz = self.lin.solve_many(-rhs)
        da1, dd1, dl1 = dz[:n], dz[n:2 * n], dz[2 * n:2 * n + m]
        return dqp + b * h * h * (da1 + dd1), dvp + g * h * da1, da1, dl1

    # -- discrete adjoint -----------------------------------------------------------------------------
    def adjoint_step(self, t, x0, x1, mu1, p):
        """(μ_k, ∇ψ increment) from μ_{k+1} = (μ_q, μ_v, μ_a, μ_λ) of x_{k+1} (one column per
        objective)."""
        h, b, g, nd = self.h, self.beta, self.gamma, self.nd
        n, m = self.sys.n, self.sys.m
        mq1, mv1, ma1, ml1 = mu1
        ev = self._eval(t + h, x1, p)
        eta = self._eta(ev, x0)
        self._set_matrix(ev, eta)
        Rq, Rv, Rp = self._partials(ev, eta, nd)
        k = mq1.shape[1]
        rhs = np.vstack([b * h * h * mq1 + g * h * mv1 + ma1, b * h * h * mq1, ml1, np.zeros((m, k))])
        nu = self.lin.solve_many(rhs, transpose=True)
        mqp = mq1 - Rq.T @ nu                    # ∂ψ/∂q̂ and ∂ψ/∂v̂
        mvp = mv1 - Rv.T @ nu
        mq = mqp
        mv = h * mqp + mvp
        ma = (0.5 - b) * h * h * mqp + (1 - g) * h * mvp
        ml = np.zeros_like(ml1)
        grad = -(Rp.T @ nu)
        if self.am or self.af:
            nu1 = nu[:n]
            eo = self._eval(t, x0, p)
            mq = mq - eo.K(self.am, self.af).T @ nu1
            mv = mv - eo.Cv(self.am, self.af).T @ nu1
            ma = ma - eo.Ma(self.am, self.af).T @ nu1
            ml = ml - self.af * (eo.G() @ nu1)
            grad = grad - eo.R_p(nd, self.am, self.af).T @ nu1
        return (mq, mv, ma, ml), grad


def make_ggl_stepper(system, sim, **kw):
    """The GGL stepper for ``simulation.stabilization = "ggl"`` (index3 formulation;
    integrator trapezoidal, newmark, genalpha, hht or wbz)."""
    st = family_member(GGLNewmarkFamily, system, sim, newton=sim.newton, petsc_options=sim.petsc_options, **kw)
    if st is None:
        raise ValueError(f"no GGL stepper for integrator {sim.integrator!r}")
    return st
