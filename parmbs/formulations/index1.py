"""Index-1 formulation with the trapezoidal rule: forward, direct and adjoint steps.

Equations of motion with the constraints differentiated twice (seed 004 §2.2, eq. 2.8):

    M q̈ + Φ_qᵀλ = Q,       Φ_q q̈ + γ(q, q̇, t) = 0          (γ = −c of eq. 2.8b)

discretised by the trapezoidal rule (seed 004 eq. 2.5), written — like the index-3
Newmark stepper — in acceleration form.  State x_n = (q_n, v_n, a_n, λ_n); unknowns
z = (a_{n+1}, λ_{n+1}):

    q_{n+1} = q̂ + h²/4 a_{n+1},   q̂ = q_n + h v_n + h²/4 a_n
    v_{n+1} = v̂ + h/2 a_{n+1},    v̂ = v_n + h/2 a_n
    R₁ = r(q, v, a) + Φ_qᵀλ = 0                (r = M a − Q: every force group)
    R₂ = Φ_q a + γ(q, v, t) = 0                at x_{n+1}

Newton matrix (seed 004 eq. 2.11c, there for the unknown q_{n+1} and scaled by h²/4;
here for a_{n+1}, ∂q/∂a = h²/4, so both rows are O(1) without scaling):

    J = [[r_a + h/2 r_v + h²/4 (r_q + (Φ_qᵀλ)_q),   Φ_qᵀ],
         [Φ_q + h²/4 ((Φ_q a)_q + γ_q) + h/2 γ_v,      0 ]]

Direct step (seed 004 eqs. 3.13–3.15: the TLM DAE integrated with the same rule,
eq. 3.9):  J dz = −(R_q dq̂ + R_v dv̂ + R_ρ).  Integrating the TLM with the scheme
of the dynamics *is* the exact derivative of the discrete scheme, so this step equals
the thesis' DDM (row 2 of its Table 5.1).

Adjoint step: the exact transpose of the direct step (discrete adjoint),
    Jᵀν = ∂x_{n+1}/∂z ᵀ μ_{n+1},   μ_n = Lᵀ(μ_{n+1} − (R_q, R_v)ᵀν),   ∇ψ −= R_ρᵀν.
The thesis' AVM for index 1 (eqs. 3.53–3.61 approach 1, 3.62–3.70 approach 2) is the
*continuous* adjoint DAE, integrated backward with its own discretisation; it is
not the transpose of the forward discretisation and so differs from its own DDM by
O(h) (Table 5.1 rows 2 and 6: −4.2383 vs −4.2294 at h = 1e-2).  Here adjoint and
direct agree to round-off, and both converge to the same gradient as h → 0.

Baumgarte stabilisation (seed 004 §2.3; ``simulation.index1.baumgarte = {alpha, beta}``):
the acceleration constraint becomes Φ̈ + 2αΦ̇ + β²Φ = 0, i.e.

    R₂ = Φ_q a + γ + 2α(Φ_q v + Φ_t) + β²Φ = 0,

which adds 2α((Φ_q v)_q + Φ_tq) + β²Φ_q to ∂R₂/∂q, 2αΦ_q to ∂R₂/∂v and
2α((Φ_q v)_p + Φ_tp) + β²Φ_p to ∂R₂/∂ρ — the same tangent and adjoint steps, still
exact.  The drift then obeys a damped oscillator instead of growing freely (measured in
tests/test_index1.py).  Seed 004 gives no values for α, β; they are the user's choice
(α = β ≈ 1/(a few steps) is common; too large makes the rows stiff for the step).

Drift.  Without Baumgarte (the default, as seed 004 eq. 2.8) there is no projection:
position and velocity constraints are not enforced and drift like the
global error of the trapezoidal rule, O(h²) on a fixed interval (the exact flow keeps
Φ = Φ̇ = 0 from the consistent initial state).  Documented bound, checked by
tests/test_index1.py: five-bar over 1 s at h = 1e-2, max_k |Φ(q_k)| ≤ 5e-5 and
max_k |Φ_q v_k + Φ_t| ≤ 2e-4 (measured 1.9e-5, 6.8e-5; over 5 s 2.2e-5, 7.0e-5), and
both fall by ≈ 4 when h is halved.  Use index3 or maggi when the constraints must
hold to round-off.

Seed 004 Table 5.1 row 2 (index-1 DDM, h = 1e-2: −4.2383, 3.2169) is reproduced to
all printed digits, and row 1 (index-3) to 5e-5, when ψ is accumulated by the
right-endpoint rectangle rule h Σ_{k≥1} g(x_k) instead of Problem's trapezoidal weights
(benchmarks/fivebar_table51.py --right-rule): their 0.2 % gap to the converged value
is that O(h) quadrature error, not the scheme.
"""
import numpy as np

from ..integrators.initial import InitialState
from ..integrators.newmark import newton_acceleration_form, saddle_point_pattern
from ..integrators.one_step import OneStep
from ..model.assembly import SparseOperator
from ..model.evaluation import EvalPlan, LocalOperator, StateEval

BETA, GAMMA = 0.25, 0.5          # the trapezoidal rule as a Newmark pair


def predict(x, h):
    """The explicit part (q̂, v̂) of the trapezoidal step from x_n = (q, v, a, λ):
    q̂ = q + h v + (½ − β) h² a,  v̂ = v + (1 − γ) h a (index-1 and Maggi)."""
    q, v, a, _ = x
    return q + h * v + (0.5 - BETA) * h * h * a, v + (1 - GAMMA) * h * a


def _sum_parts(terms):
    """Σ c_i A_i of LocalOperators built over the same constraint groups (equal rows,
    columns and part order), as one operator with one part per group."""
    (c0, A0), rest = terms[0], terms[1:]
    parts = []
    for k, (r, c, B) in enumerate(A0.parts):
        acc = c0 * B
        for ci, Ai in rest:
            ri, cci, Bi = Ai.parts[k]
            acc = acc + ci * Bi
        parts.append((r, c, acc))
    return LocalOperator(*A0.shape, parts)


def group_blocks(op, ngroups):
    """The per-constraint-group local blocks of a LocalOperator built from ``ev.C``."""
    blocks = [B for _, _, B in op.parts]
    if len(blocks) != ngroups:
        raise RuntimeError("a constraint group has no elements")
    return blocks


def shifted(op, nrows, row_offset, ncols=None):
    """``op`` with its rows moved down by ``row_offset`` inside an ``nrows`` operator."""
    parts = [(np.where(r >= 0, r + row_offset, -1), c, B) for r, c, B in op.parts]
    return LocalOperator(nrows, ncols or op.shape[1], parts)


class Index1Trapezoidal(OneStep):
    name = "index1-trapezoidal"
    #: its Newton loop takes the per-component test of adaptive runs (integrators/newton_tol.py)
    noise_aware_newton = True

    def __init__(self, system, h, newton=None, petsc_options=None, design_map=None, ndesign=0, comm=None,
                 baumgarte=None):
        self.sys, self.h = system, h
        # Baumgarte's (α, β) (module docstring); None: the unstabilised eq. 2.8
        self.baumgarte = None if baumgarte is None else (float(baumgarte.alpha), float(baumgarte.beta))
        self.newton = newton
        n, m = system.n, system.m
        self.design_map = design_map if design_map is not None else -np.ones(len(system.p), np.int64)
        self.nd = ndesign
        # the index-3 stepper's pattern and block order, so InitialState can use this operator
        self.blocks, self.zero_diag = saddle_point_pattern(system)
        self.op = SparseOperator(n + m, self.blocks, comm=comm, options=petsc_options)
        self.plan = EvalPlan(system, self.design_map)
        self.init = InitialState(system, self.op, self.design_map, ndesign, newton, comm=comm)

    # -- pieces shared by the three steps ------------------------------------------------
    def _eval(self, t, x, p):
        return StateEval(self.sys, t, *x, p, self.design_map, self.plan)

    def _predict(self, x):
        return predict(x, self.h)

    def _accel_ops(self, ev):
        """The pieces of ∂R₂/∂q = (Φ_q a)_q + γ_q and ∂R₂/∂v = γ_v at x_{n+1} (m × n
        LocalOperators, one part per constraint group each); with Baumgarte, γ_q and γ_v
        include 2α((Φ_q v)_q + Φ_tq) + β²Φ_q and 2αΦ_q (summed per group, so each
        operator keeps one part per group)."""
        Pa, Gq, Gv = ev.phi_q_w_q(ev.a), ev.gamma_q(), ev.gamma_v()
        if self.baumgarte is None:
            return Pa, Gq, Gv
        al, be = self.baumgarte
        G = ev.G()
        return Pa, _sum_parts([(1.0, Gq), (2 * al, ev.phi_q_w_q(ev.v)), (2 * al, ev.phi_t_q()), (be * be, G)]), \
            _sum_parts([(1.0, Gv), (2 * al, G)])

    def _set_matrix(self, ev):
        h, b, g = self.h, BETA, GAMMA
        nc = len(ev.C)
        F = ev.force_blocks(b * h * h, g * h, 1.0)
        H = [b * h * h * Hb for Hb in ev.hess_blocks()]
        G = ev.phi_q_blocks()
        Pa, Gq, Gv = (group_blocks(o, nc) for o in self._accel_ops(ev))
        A2 = [Gb + b * h * h * (pa + gq) + g * h * gv for Gb, pa, gq, gv in zip(G, Pa, Gq, Gv)]
        self.op.set_values(F + H + A2 + [np.swapaxes(Gb, 1, 2) for Gb in G] + self.zero_diag)

    def _residual(self, ev):
        r2 = ev.phi_q_dot(ev.a) + ev.gamma()
        if self.baumgarte is not None:
            al, be = self.baumgarte
            r2 = r2 + 2 * al * (ev.phi_q_dot(ev.v) + ev.phi_t()) + be * be * ev.phi()
        return np.r_[ev.residual(), r2]

    def _partials(self, ev, nd):
        """∂R/∂q_{n+1}, ∂R/∂v_{n+1} ((n+m) × n) and ∂R/∂ρ ((n+m) × nd) at fixed z."""
        n, m = self.sys.n, self.sys.m
        N = n + m
        Pa, Gq, Gv = self._accel_ops(ev)
        Rq = LocalOperator(N, n, ev.K().parts) + shifted(Pa + Gq, N, n)
        Rv = LocalOperator(N, n, ev.Cv().parts) + shifted(Gv, N, n)
        Cp = ev.phi_q_w_p(nd, ev.a) + ev.gamma_p(nd)
        if self.baumgarte is not None:
            al, be = self.baumgarte
            Cp = Cp + (ev.phi_q_w_p(nd, ev.v) + ev.phi_t_p(nd)).scaled(2 * al) + ev.phi_p(nd).scaled(be * be)
        Rp = LocalOperator(N, nd, ev.R_p(nd).parts) + shifted(Cp, N, n)
        return Rq, Rv, Rp

    # -- forward ---------------------------------------------------------------------------
    def initial(self, t0, p):
        return self.init.solve(t0, p)

    def step(self, k, t, x, p):
        """x_{k+1} from x_k at time t = t_k; returns (x_{k+1}, Newton iterations)."""
        h, b, g = self.h, BETA, GAMMA
        t1 = t + h
        qp, vp = self._predict(x)
        return newton_acceleration_form(k, t1, qp, vp, x[2], x[3], b * h * h, g * h, self.newton, self.op,
                                        self._set_matrix, lambda t_, x_: self._eval(t_, x_, p), self._residual)

    # -- tangent (direct differentiation, seed 004 eqs. 3.13–3.15) -----------------------------
    def tangent_step(self, t, x0, x1, dx0, p):
        """dx_{k+1}/dρ from dx_k/dρ (each four (·, nd) blocks)."""
        h, b, g, nd = self.h, BETA, GAMMA, self.nd
        dq, dv, da, dl = dx0
        dqp = dq + h * dv + (0.5 - b) * h * h * da
        dvp = dv + (1 - g) * h * da
        ev = self._eval(t + h, x1, p)
        self._set_matrix(ev)
        Rq, Rv, Rp = self._partials(ev, nd)
        dz = self.op.solve_many(-(Rq @ dqp + Rv @ dvp + Rp @ np.eye(nd)))
        n = self.sys.n
        da1, dl1 = dz[:n], dz[n:]
        return dqp + b * h * h * da1, dvp + g * h * da1, da1, dl1

    # -- discrete adjoint ---------------------------------------------------------------------
    def adjoint_step(self, t, x0, x1, mu1, p):
        """(μ_k, ∇ψ increment) from μ_{k+1} = (μ_q, μ_v, μ_a, μ_λ) of x_{k+1} (one column per
        objective)."""
        h, b, g, nd = self.h, BETA, GAMMA, self.nd
        mq1, mv1, ma1, ml1 = mu1
        ev = self._eval(t + h, x1, p)
        self._set_matrix(ev)
        Rq, Rv, Rp = self._partials(ev, nd)
        nu = self.op.solve_many(np.vstack([b * h * h * mq1 + g * h * mv1 + ma1, ml1]), transpose=True)
        mqp = mq1 - Rq.T @ nu            # ∂ψ/∂q̂ and ∂ψ/∂v̂
        mvp = mv1 - Rv.T @ nu
        mq = mqp
        mv = h * mqp + mvp
        ma = (0.5 - b) * h * h * mqp + (1 - g) * h * mvp
        return (mq, mv, ma, np.zeros_like(ml1)), -(Rp.T @ nu)


def make_index1_stepper(system, sim, design_map=None, ndesign=0, comm=None):
    """The index-1 stepper for ``simulation.formulation = "index1"``: the trapezoidal rule
    here, generalized-α (seed 001's own scheme), HHT, WBZ and Newmark in index1_genalpha.py."""
    if sim.integrator != "trapezoidal":
        from .index1_genalpha import make_index1_newmark_stepper
        return make_index1_newmark_stepper(system, sim, design_map=design_map, ndesign=ndesign, comm=comm)
    return Index1Trapezoidal(system, sim.dt, newton=sim.newton, petsc_options=sim.petsc_options,
                             design_map=design_map, ndesign=ndesign, comm=comm, baumgarte=sim.index1.baumgarte)
