"""Variational integrator for index-3 DAEs (seed 000 §3; Leyendecker–Marsden–Ortiz),
with its exact discrete tangent (direct) and adjoint (DAVM, seed 000 §4) steps.

The scheme (seed 000 Eqs. 10, 13, 14, 17 with α = ½, the value of all its examples).
Lagrangian L = ½ q̇ᵀMq̇ − U(q) with a constant mass matrix M(p) (rigid bodies in
centre-of-mass coordinates, ANCF beams and plates: every inertial group is r = M a).
Discrete Lagrangian and discrete forcing per interval [t_n, t_{n+1}] (midpoint rule):

    L_d(q_n, q_{n+1}) = h L(q_{n+½}, v_{n+½}),   q_{n+½} = ½(q_n + q_{n+1}),
    v_{n+½} = (q_{n+1} − q_n)/h,                  f_d^± = −(h/2) F(t_{n+½}, q_{n+½}, v_{n+½}),

with F(t, q, v) = Σ non-inertial residuals r = ∇U − Q_nc of the component layer.  For a
conservative force F = ∇U the forcing term *is* D₁/D₂L_d of the potential part (both
are (h/2)∇U(q_{n+½}), seed Eq. 47 read with erratum E6), so gravity, springs and elastic
forces go through the potential and dampers, loads and the (non-conservative, E3)
seed ANCF elastic force through Lagrange–d'Alembert forcing with the same midpoint
quadrature (the seed leaves this open, digest A4).  The constraint term is the
trapezoidal (h/2)[λ_n·Φ(q_n) + λ_{n+1}·Φ(q_{n+1})] of Eq. 10, so node n receives the
constraint impulse h G_nᵀλ_n (G = Φ_q; erratum E5: ½ from each adjacent interval),
and the constrained discrete Euler–Lagrange equations (Eq. 13–14) read, n ≥ 1,

    c_n = M(q_{n+1} − 2q_n + q_{n−1})/h + (h/2)[F_{n−½} + F_{n+½}] + h G_nᵀλ_n = 0,
    Φ(q_{n+1}, t_{n+1}) = 0,                                     unknowns (q_{n+1}, λ_n),

and the start step (Eq. 17) M(q₁ − q₀)/h + (h/2)F_{½} + (h/2)G₀ᵀλ₀ = M q̇₀.

One-step form (what the stepper protocol needs: x_{n+1} from x_n alone).  Split the
node impulse h G_nᵀλ_n into the half (h/2)G_nᵀΛ_n of the interval after t_n and the
rest G_nᵀξ_n, chosen so that the node momentum p_n = M v_n satisfies the velocity
constraint (a RATTLE-type projection).  A step from x_n = (q_n, v_n, ·, ·) solves

  (1) Newton for (A, Λ_n), q_{n+1} = q_n + h v_n + (h²/2) A:
        R₁ = M A + F(t_{n+½}, q_{n+½}, v_{n+½}) + G_nᵀ Λ_n = 0     [(2/h)× the start-step
        R₂ = (2/h²) Φ(q_{n+1}, t_{n+1})                 = 0      form of Eq. 17 / Eq. 15]
      Newton matrix J = [[M + (h²/4) K_{n+½} + (h/2) C_{n+½}, G_nᵀ], [G_{n+1}, 0]]
      (K = ∂F/∂q, C = ∂F/∂v; G at two times: non-symmetric, as the digest notes);
  (2) the discrete Legendre transform p̃ = M v_{n+½} − (h/2) F_{n+½} (p⁺ of Eq. 15
      without the node's constraint impulse) and its projection
        S [v_{n+1}; ξ] = [p̃; −Φ_t],   S = [[M, G_{n+1}ᵀ], [G_{n+1}, 0]];
  (3) the acceleration and multiplier *of the state* (q_{n+1}, v_{n+1}) from the
      equations of motion, as the consistent initial state does at t₀:
        S [a_{n+1}; λ_{n+1}] = [−F(t_{n+1}, q_{n+1}, v_{n+1}); −γ(q_{n+1}, v_{n+1})].

Because G_{n+1} has full row rank, the next step's Λ_{n+1} absorbs whatever ξ took, so
the positions q_n are exactly those of the constrained DEL above (its node multiplier is
λ_n^DEL = (Λ_n + 2ξ_n/h)/2), for any split; the projection only defines the reported
velocity.  The state keeps x = (q, v, a, λ) of the other integrators: v_n is the
momentum-consistent velocity M⁻¹p_n with G_n v_n + Φ_t = 0; a_n, λ_n are the
accelerations and multipliers of (q_n, v_n) (second order, no (−1)ⁿ mode), so
objectives on v, a and λ keep their meaning; they are differentiated exactly below
(stages 2–3 enter the tangent and the adjoint).  x₀ comes from InitialState, which
is this same definition at t₀ (start step: p₀ = M q̇₀).

Tangent step: differentiate (1)–(3) in order with (dq_n, dv_n, dp) as input
(a_n, λ_n do not enter the step).  Adjoint step: the exact transpose, in reverse
order: S⁻ᵀ for stage 3, S⁻ᵀ for stage 2, the explicit Legendre map, J⁻ᵀ for stage 1
(seed 000 Eq. 25–26 in one-step form: J⁻ᵀ is its shifted-time saddle matrix with G_n
and G_{n+1}).  The design gradient collects −(ν·∂R/∂p) of all three stages
(Eq. 27, geometric variables through M(l), forces, joint offsets in Φ), and the
initial-state terms (Eq. 27's t = 0 brackets, erratum E9: q₀, q̇₀ depend on the
design) come from InitialState.adjoint.  The objective's time quadrature is the
project's trapezoidal sum over the states (not Eq. 18's midpoint sum): the adjoint
is the exact transpose of the discrete computation actually run.

Where the seed's formulas needed its errata (digest §6) and what we do instead:
  E5  c_n (Eq. 47) carries (h/2)G_nᵀλ_n; Eq. 13 with g_d = h g gives h G_nᵀλ_n.  We keep
      Eq. 13's scaling (node impulse h G_nᵀλ_n, start step (h/2)G₀ᵀλ₀ as Eq. 17), and
      report the continuous λ of (q_n, v_n), so λ-objectives mean the same as in the
      Newmark steppers (tests: the stored q_n solve Eq. 13/17, λ_DEL = λ_n + O(h²)).
  E6  (h/2)∂U((q_n + q_{n+1})/2)/∂q_n is read as (h/2)∇U at the midpoint (the forcing F_m).
  E7  ∂c_n/∂a enters once (R_p of each stage, once).
  E8  internal constraints carry adjoints like any row: every row of Φ has its
      multiplier in J and S (planar rigid bodies in (x, y, θ) have none; ANCF has none).
  E9  q₀, q̇₀ depend on geometric design variables: InitialState differentiates the
      assembly (Φ = 0 plus independent coordinates), its velocity and (a₀, λ₀).
  E1–E4 (ANCF element matrices, non-conservative elastic force, its l-derivatives) are
      handled in parmbs/flexible/ancf.py; the steps never assume a symmetric tangent.
Seed Eq. 25–26 ↔ here: its μ_n (adjoint of c_n) and η_{n+1} (of g_{n+1}) are, up to the
scalings 2/h and h²/2 of R₁, R₂, the two parts of ν = J⁻ᵀ[μ_A; 0] of step n; its terminal
system is the first adjoint step (μ_N from the objective's terminal/last-state partials),
and its t = 0 brackets of Eq. 27 are InitialState.adjoint applied to (μ_q, μ_v, μ_a, μ_λ)₀.
"""
import numpy as np

from ..model.assembly import SparseOperator
from ..model.evaluation import StateEval, EvalPlan
from ..model.system import ModelError
from .newmark import StepError, saddle_point_pattern
from .one_step import OneStep
from ..model.redundancy import singular_configuration


class _View:
    """A subset of a system's groups, seen by StateEval as a system of its own."""

    def __init__(self, system, forces, constraints):
        self.n, self.extend = system.n, system.extend
        self.forces, self.constraints = list(forces), list(constraints)
        self.m = system.m if self.constraints else 0


class _Views:
    """The four views a step evaluates: all forces, the inertial forces, the constraints, and
    all groups (the whole system's n, m)."""

    def __init__(self, dyn, mass, con, sys):
        self.dyn, self.mass, self.con, self.sys = dyn, mass, con, sys

    def __iter__(self):
        return iter((self.dyn, self.mass, self.con, self.sys))


class Variational(OneStep):
    name = "variational"

    def __init__(self, system, h, newton=None, petsc_options=None, design_map=None, ndesign=0,
                 comm=None, compiled="off"):
        self.sys, self.h, self.newton = system, h, newton
        n, m = system.n, system.m
        for g in system.forces:
            if g.inertial and (g.uses_q or g.uses_v):
                raise ModelError("simulation.integrator", f"the variational integrator needs a constant "
                                 f"mass matrix; {type(g).__name__} depends on the state")
            if not g.inertial and g.uses_a:
                raise ModelError("simulation.integrator", f"the variational integrator cannot take the "
                                 f"acceleration-dependent force {type(g).__name__}")
        self.design_map = design_map if design_map is not None else -np.ones(len(system.p), np.int64)
        self.nd = ndesign
        # views: all forces (midpoint forcing + M A), the mass alone, the joints alone
        self.dyn = _View(system, system.forces, [])
        self.mass = _View(system, [g for g in system.forces if g.inertial], [])
        self.con = _View(system, [], system.constraints)
        self.plans = {id(v): EvalPlan(v, self.design_map) for v in (self.dyn, self.mass, self.con)}
        self.plans[id(system)] = EvalPlan(system, self.design_map)
        self.views = _Views(self.dyn, self.mass, self.con, system)
        # the Newmark pattern (forces, constraint Hessians, Φ_q, Φ_qᵀ, λ diagonal): the
        # initial state fills it, J and S use it with zero Hessian blocks
        blocks, self.zero_diag = saddle_point_pattern(system)
        self.zero_hess = [np.zeros((g.ne, g.nq, g.nq)) for g in system.constraints]
        self.zero_force = [np.zeros((g.ne, g.nq, g.nq)) for g in system.forces]
        self.J = SparseOperator(n + m, blocks, comm=comm, options=petsc_options)
        self.S = SparseOperator(n + m, blocks, comm=comm, options=petsc_options)
        from .initial import InitialState
        self.init = InitialState(system, self.S, self.design_map, ndesign, newton, comm=comm)
        self._last = None      # (t, q, constraint eval, p, views) of the last step's end: next G_n
        self._mass_blocks = None   # (p, M blocks in the pattern's force order): M = M(p)
        # issue 19/22: the forward step's J and S factored and solved in compiled code
        # (compiled/saddle_lu.py), the adjoint step's too (below); tangent and initial state keep PETSc
        from .. import compiled as _compiled
        self.compiled, self.compiled_note = _compiled.make_variational(system, compiled, self.J)
        if self.compiled is not None:     # the failures a compiled step is redone on PETSc for (once, not per step)
            from ..compiled.saddle_lu import PivotFailure
            self._redo = (PivotFailure, StepError, ModelError)
            # the same views with the groups of compiled/variational_kinds.py's kinds on
            # their kernels (the compiled forward step only)
            fs, fc = self.compiled.forces, self.compiled.constraints
            self.fast = _Views(_View(system, fs, []), _View(system, [g for g in fs if g.inertial], []),
                               _View(system, [], fc), _View(system, fs, fc))
            for v in self.fast:
                self.plans[id(v)] = EvalPlan(v, self.design_map)
        # issues 19/22: the adjoint step's linearization, solves and products compiled
        # (compiled/variational_adjoint.py), with the forward's kernels and LU order
        self.adj = None
        if self.compiled is not None:
            from ..compiled.variational_adjoint import CompiledAdjoint
            self.adj = CompiledAdjoint(self.compiled)

    # -- evaluations --------------------------------------------------------------------------
    def _ev(self, view, t, q, v, a, lam, p):
        return StateEval(view, t, q, v, a, lam, p, self.design_map, self.plans[id(view)])

    def _con(self, t, q, p, lam=None, V=None):
        z = np.zeros(self.sys.n)
        return self._ev((V or self.views).con, t, q, z, z, np.zeros(self.sys.m) if lam is None else lam, p)

    def _mid(self, t, q0, v0, A, p, V=None):
        """The midpoint state of stage 1 and its all-forces eval (a = A)."""
        h = self.h
        qm = q0 + 0.5 * h * v0 + 0.25 * h * h * A
        vm = v0 + 0.5 * h * A
        return qm, vm, self._ev((V or self.views).dyn, t + 0.5 * h, qm, vm, A, np.zeros(0), p)

    def _set_J(self, em, e1, en, J=None):
        h = self.h
        G1, Gn = e1.phi_q_blocks(), en.phi_q_blocks()
        (self.J if J is None else J).set_values(em.force_blocks(0.25 * h * h, 0.5 * h, 1.0) + self.zero_hess + G1
                          + [np.swapaxes(g, 1, 2) for g in Gn] + self.zero_diag)

    def _set_S(self, e1, p, S=None):
        """S = [[M, G₁ᵀ], [G₁, 0]] (M from the inertial groups, zero blocks elsewhere) into
        ``S`` (default the PETSc operator)."""
        pr = p.real
        if self._mass_blocks is None or not np.array_equal(self._mass_blocks[0], pr):
            z = np.zeros(self.sys.n)
            mb = iter(self._ev(self.mass, 0.0, z, z, z, np.zeros(0), pr).force_blocks(0.0, 0.0, 1.0))
            self._mass_blocks = (pr.copy(), [next(mb) if g.inertial else zb
                                             for g, zb in zip(self.sys.forces, self.zero_force)])
        F = self._mass_blocks[1]
        G1 = e1.phi_q_blocks()
        (self.S if S is None else S).set_values(F + self.zero_hess + G1 + [np.swapaxes(g, 1, 2) for g in G1] + self.zero_diag)

    def _solve_S(self, rhs, ops, S=None):
        """S⁻¹ rhs; for complex-step runs (complex state, real S) refined with the
        complex operator ``ops`` (a function z -> S_complex z) to the exact solution."""
        S = self.S if S is None else S
        z = S.solve(rhs)
        if np.iscomplexobj(rhs):
            for _ in range(2):
                z = z + S.solve(rhs - ops(z))
        return z

    def _project(self, t1, q1, qm, vm, p, S=None, V=None):
        """Stages 2–3: (v₁, ξ, a₁, λ₁) at q₁ from the midpoint state (factors S, default
        the PETSc operator; ``V`` the views, default the numpy groups')."""
        n, h = self.sys.n, self.h
        V = V or self.views
        e1 = self._con(t1, q1, p, V=V)
        zero = np.zeros(n, q1.dtype)
        emv = self._ev(V.dyn, t1 - 0.5 * h, qm, vm, vm, np.zeros(0), p)
        ptil = emv.residual(1.0, -0.5 * h)                    # M v_m − (h/2) F_m
        self._set_S(e1.real(), p, S)
        G1 = e1.G()

        def Sop(z):      # S z in complex arithmetic (M z through the residual: complex-safe)
            Mz = self._ev(V.mass, t1, q1, zero, z[:n], np.zeros(0), p).residual()
            return np.r_[Mz + G1.T @ z[n:], G1 @ z[:n]]

        z = self._solve_S(np.r_[ptil, -e1.phi_t()], Sop, S)
        v1, xi = z[:n], z[n:]
        ev = self._ev(V.sys, t1, q1, v1, np.zeros(n, z.dtype), np.zeros(self.sys.m, z.dtype), p)
        z = self._solve_S(-np.r_[ev.residual(), ev.gamma()], Sop, S)
        return v1, xi, z[:n], z[n:], e1

    # -- forward ------------------------------------------------------------------------------
    def initial(self, t0, p):
        self._last = None
        return self.init.solve(t0, p)

    def step(self, k, t, x, p):
        """x_{k+1} from x_k at time t = t_k; returns (x_{k+1}, Newton iterations)."""
        if self.compiled is not None and not any(np.asarray(y).dtype.kind == "c" for y in (p, *x)):
            try:
                return self._step(k, t, x, p, self.compiled.J, self.compiled.S, self.fast)
            except self._redo:
                pass        # redone on PETSc below, so the error names step and time as always
        return self._step(k, t, x, p, None, None, self.views)

    def _step(self, k, t, x, p, Jop, Sop, V):
        """``step`` with the Newton matrix and S in ``Jop``, ``Sop`` (None: the PETSc
        operators) and the component groups of the views ``V`` (``self.views``: numpy;
        ``self.fast``: compiled/variational_kinds.py; with ``self.compiled.newton``, R, J and
        stages 2–3 by compiled/variational_newton.py's one call per iteration)."""
        h, n = self.h, self.sys.n
        q0, v0, a0, l0 = x
        t1 = t + h
        # the compiled step's R and J in one call per iteration (compiled/variational_newton.py)
        fused = self.compiled.newton if (Jop is not None and V is self.fast) else None
        if fused is not None:
            fused.begin(t1, q0, p, h)
        else:
            last = self._last
            if (last is not None and last[0] == t and last[1].shape == q0.shape and np.array_equal(last[1], q0)
                    and np.array_equal(last[3], p) and last[4] is V):
                en = last[2]
            else:
                en = self._con(t, q0, p, V=V)
            GnT = en.G().T
        A, lam = a0.copy(), l0.copy()
        qp = q0 + h * v0
        tol = self.newton
        for it in range(1, tol.max_it + 1):
            q1 = qp + 0.5 * h * h * A
            if fused is not None:
                R, data = fused.evaluate(q0, v0, A, lam, h)
                Jop.set_data(data)
            else:
                qm, vm, em = self._mid(t, q0, v0, A, p, V)
                e1 = self._con(t1, q1, p, V=V)
                R = np.r_[em.residual() + GnT @ lam, (2.0 / (h * h)) * e1.phi()]
                self._set_J(em.real(), e1.real(), en.real(), Jop)
            try:
                dz = (self.J if Jop is None else Jop).solve(-R)
            except np.linalg.LinAlgError:
                raise singular_configuration(self.sys, t1, q1, p, k + 1) \
                    or StepError(f"step {k + 1} (t = {t1:.6g}): singular Newton matrix") from None
            A += dz[:n]
            lam += dz[n:]
            dq = 0.5 * h * h * np.max(np.abs(dz[:n]))
            if not np.all(np.isfinite(dz)):
                break
            if dq <= tol.atol + tol.rtol * np.max(np.abs(q1)):
                q1 = qp + 0.5 * h * h * A
                qm, vm = q0 + 0.5 * h * v0 + 0.25 * h * h * A, v0 + 0.5 * h * A
                if fused is not None:
                    v1, _, a1, l1 = fused.project(q1, qm, vm, h, Sop)
                    self._last = None
                    return (q1, v1, a1, l1), it
                try:
                    v1, _, a1, l1, e1 = self._project(t1, q1, qm, vm, p, Sop, V)
                except np.linalg.LinAlgError:
                    raise StepError(f"step {k + 1} (t = {t1:.6g}): singular mass/constraint matrix "
                                    "(a body without mass or inertia?)") from None
                self._last = (t1, q1, e1, p.copy(), V)
                return (q1, v1, a1, l1), it
        raise singular_configuration(self.sys, t1, q1, p, k + 1) \
            or StepError(f"step {k + 1} (t = {t1:.6g}): Newton did not converge in {tol.max_it} "
                         f"iterations (last position update {dq:.2e})")

    # -- the linearization shared by tangent and adjoint -----------------------------------------
    def _linearize(self, t, x0, x1, p):
        """Evals and factored J, S of the step x0 -> x1, with Λ and ξ recovered (they are
        not part of the state): Λ from J [0; Λ] = [−(M A + F_m); 0] (exact, since the
        converged R₁ has M A + F_m in the range of G_nᵀ), ξ from stage 2."""
        h, n = self.h, self.sys.n
        q0, v0 = x0[0], x0[1]
        q1 = x1[0]
        t1 = t + h
        A = (2.0 / (h * h)) * (q1 - q0 - h * v0)
        qm, vm, em = self._mid(t, q0, v0, A, p)
        e0 = self._con(t, q0, p)
        e1 = self._con(t1, q1, p)
        self._set_J(em, e1, e0)
        lam = self.J.solve(np.r_[-em.residual(), np.zeros(self.sys.m)])[n:]
        en = self._con(t, q0, p, lam)
        self._set_S(e1, p)
        emv = self._ev(self.dyn, t + 0.5 * h, qm, vm, vm, np.zeros(0), p)
        xi = self.S.solve(np.r_[emv.residual(1.0, -0.5 * h), -e1.phi_t()])[n:]
        return self._linear_evals(t, x1, A, qm, vm, em, en, xi, p, self.views)

    def _linear_evals(self, t, x1, A, qm, vm, em, en, xi, p, V, stage3=True):
        """The rest of a linearization once Λ (in ``en``) and ξ are known, on the views ``V``
        (``_linearize``: numpy; ``_linearize_compiled``: compiled kinds): the evals at t_{n+1}
        and the midpoint, and ∂/∂ρ of the midpoint forces F_m (once), of M A and of M v_m;
        without ``stage3`` no eval of the whole system at x_{n+1} (``ev1``: stage 3 only)."""
        h, n, nd = self.h, self.sys.n, self.nd
        q1, v1, a1, l1 = x1
        t1 = t + h
        e1x = self._con(t1, q1, p, xi, V=V)
        zero = np.zeros(n)
        e1m = self._ev(V.mass, t1, q1, zero, v1, np.zeros(0), p)
        emm = self._ev(V.mass, t + 0.5 * h, qm, vm, vm, np.zeros(0), p)
        ev1 = self._ev(V.sys, t1, q1, v1, a1, l1, p) if stage3 else None
        RpF = em.R_p(nd, 0.0, 1.0)
        RpMA = self._ev(V.mass, t + 0.5 * h, qm, vm, A, np.zeros(0), p).R_p(nd)
        return dict(em=em, en=en, e1=e1x, e1m=e1m, ev1=ev1, v1=v1, a1=a1,
                    R1p=RpMA + RpF + en.R_p(nd), ptp=emm.R_p(nd) + RpF.scaled(-0.5 * h))

    def _linearize_compiled(self, t, x0, x1, p, stage3=True):
        """``_linearize`` on the compiled operators (``self.adj``: J and S factored by
        compiled/saddle_lu.py from the fused step's CSR values, Λ and ξ by its solves) and
        the groups of compiled/variational_kinds.py (``self.fast``)."""
        h, n, m = self.h, self.sys.n, self.sys.m
        q0, v0 = x0[0], x0[1]
        q1 = x1[0]
        t1 = t + h
        A = (2.0 / (h * h)) * (q1 - q0 - h * v0)
        ad, V = self.adj, self.fast
        qm, vm = q0 + 0.5 * h * v0 + 0.25 * h * h * A, v0 + 0.5 * h * A
        d = ad.linear_data(t, q0, v0, A, q1, qm, vm, p, h)
        em = self._ev(V.dyn, t + 0.5 * h, qm, vm, A, np.zeros(0), p)
        if d is not None:
            Jd, r1, Sd, r2 = d
            ad.J.set_data(Jd)
            ad.S.set_data(Sd)
        else:
            e0, e1 = self._con(t, q0, p, V=V), self._con(t1, q1, p, V=V)
            self._set_J(em, e1, e0, ad.J)
            self._set_S(e1, p, ad.S)
            r1 = em.residual()
            r2 = np.r_[self._ev(V.dyn, t + 0.5 * h, qm, vm, vm, np.zeros(0), p).residual(1.0, -0.5 * h), -e1.phi_t()]
        lam = ad.solve(ad.J, np.r_[-r1, np.zeros(m)])[n:]
        xi = ad.solve(ad.S, r2)[n:]
        en = self._con(t, q0, p, lam, V=V)
        return self._linear_evals(t, x1, A, qm, vm, em, en, xi, p, V, stage3)

    def _adjoint_step_compiled(self, t, x0, x1, mu1, p):
        """``adjoint_step`` with ``_linearize_compiled``, the compiled transposed solves and
        the products by compiled/variational_adjoint.tmatmul: the same equations, in the
        same order (Km and Cm applied to [ζ_v, ν₁] at once)."""
        from ..compiled.variational_adjoint import tmatmul as T
        h, n, m, nd = self.h, self.sys.n, self.sys.m, self.nd
        ad = self.adj
        mq1, mv1, ma1, ml1 = mu1
        stage3 = bool(np.any(ma1) or np.any(ml1))       # the eval at x_{n+1} only then
        L = self._linearize_compiled(t, x0, x1, p, stage3)
        em, en, e1, e1m, ev1 = (L[k] for k in ("em", "en", "e1", "e1m", "ev1"))
        v1, a1 = L["v1"], L["a1"]
        k = mq1.shape[1]
        if stage3:
            eta = ad.solve(ad.S, np.vstack([ma1, ml1]), transpose=True)
            ea, el = eta[:n], eta[n:]
            mq = mq1 - T(ev1.K(), ea) - T(ev1.phi_q_w_q(a1) + ev1.gamma_q(), el)
            mv = mv1 - T(ev1.Cv(), ea) - T(ev1.gamma_v(), el)
            grad = -(T(ev1.R_p(nd), ea) + T(ev1.phi_q_w_p(nd, a1) + ev1.gamma_p(nd), el))
        else:
            mq, mv, grad = mq1, mv1, np.zeros((nd, k))
        # stage 2
        zeta = ad.solve(ad.S, np.vstack([mv, np.zeros((m, k))]), transpose=True)
        zv, zx = zeta[:n], zeta[n:]
        mq = mq - T(e1.K(), zv) - T(e1.phi_q_w_q(v1) + e1.phi_t_q(), zx)
        grad = grad - (T(e1m.R_p(nd) + e1.R_p(nd), zv) + T(e1.phi_q_w_p(nd, v1) + e1.phi_t_p(nd), zx))
        Km, Cm = em.K(), em.Cv()
        mvm = T(em.Ma(), zv) - 0.5 * h * T(Cm, zv)
        mqm = -0.5 * h * T(Km, zv)
        grad = grad + T(L["ptp"], zv)
        # stage 1
        muA = 0.5 * h * h * mq + 0.25 * h * h * mqm + 0.5 * h * mvm
        mqn = mq + mqm
        mvn = h * mq + 0.5 * h * mqm + mvm
        nu = ad.solve(ad.J, np.vstack([muA, np.zeros((m, k))]), transpose=True)
        nu1, nu2 = nu[:n], (2.0 / (h * h)) * nu[n:]
        G1T = T(e1.G(), nu2)
        KmT = T(Km, nu1)
        mqn = mqn - (KmT + T(en.K(), nu1)) - G1T
        mvn = mvn - (0.5 * h * KmT + T(Cm, nu1)) - h * G1T
        grad = grad - (T(L["R1p"], nu1) + T(e1.phi_p(nd), nu2))
        return (mqn, mvn, np.zeros_like(ma1), np.zeros_like(ml1)), grad

    # -- tangent (direct differentiation) --------------------------------------------------------
    def tangent_step(self, t, x0, x1, dx0, p):
        """dx_{k+1}/dρ from dx_k/dρ (each four (·, nd) blocks)."""
        h, n, nd = self.h, self.sys.n, self.nd
        L = self._linearize(t, x0, x1, p)
        em, en, e1, e1m, ev1 = (L[k] for k in ("em", "en", "e1", "e1m", "ev1"))
        I = np.eye(nd)
        dq, dv = dx0[0], dx0[1]
        # stage 1: J [dA; dΛ] = −(∂R/∂(q_n, v_n) d(q_n, v_n) + ∂R/∂ρ)
        Km, Cm = em.K(), em.Cv()
        r1 = Km @ (dq + 0.5 * h * dv) + Cm @ dv + en.K() @ dq + L["R1p"] @ I
        r2 = (2.0 / (h * h)) * (e1.G() @ (dq + h * dv) + e1.phi_p(nd) @ I)
        dz = self.J.solve_many(-np.vstack([r1, r2]))
        dA = dz[:n]
        dq1 = dq + h * dv + 0.5 * h * h * dA
        dqm = dq + 0.5 * h * dv + 0.25 * h * h * dA
        dvm = dv + 0.5 * h * dA
        # stage 2: p̃ = M v_m − (h/2) F_m;  S [dv₁; dξ] = −(∂(M v₁ + G₁ᵀξ − p̃, G₁v₁ + Φ_t)/∂(q₁, p̃, ρ))
        dpt = em.Ma() @ dvm + L["ptp"] @ I - 0.5 * h * (Km @ dqm + Cm @ dvm)
        v1 = L["v1"]
        r1 = e1.K() @ dq1 + (e1m.R_p(nd) + e1.R_p(nd)) @ I - dpt
        r2 = (e1.phi_q_w_q(v1) + e1.phi_t_q()) @ dq1 + (e1.phi_q_w_p(nd, v1) + e1.phi_t_p(nd)) @ I
        dz = self.S.solve_many(-np.vstack([r1, r2]))
        dv1 = dz[:n]
        # stage 3: S [da₁; dλ₁] = −(∂(M a + F + Gᵀλ, G a + γ)/∂(q₁, v₁, ρ))
        a1 = L["a1"]
        r1 = ev1.K() @ dq1 + ev1.Cv() @ dv1 + ev1.R_p(nd) @ I
        r2 = ((ev1.phi_q_w_q(a1) + ev1.gamma_q()) @ dq1 + ev1.gamma_v() @ dv1
              + (ev1.phi_q_w_p(nd, a1) + ev1.gamma_p(nd)) @ I)
        dz = self.S.solve_many(-np.vstack([r1, r2]))
        return dq1, dv1, dz[:n], dz[n:]

    # -- discrete adjoint ---------------------------------------------------------------------------
    def adjoint_step(self, t, x0, x1, mu1, p):
        """(μ_k, ∇ψ increment) from μ_{k+1} = (μ_q, μ_v, μ_a, μ_λ) of x_{k+1}: the transpose
        of tangent_step, stages in reverse (one column per objective).  With the compiled
        step and real inputs: linearization, solves and products in compiled code
        (compiled/variational_adjoint.py; a zero pivot redoes the step here)."""
        if self.adj is not None and not any(np.iscomplexobj(y) for y in (p, *x0, *x1, *mu1)):
            try:
                return self._adjoint_step_compiled(t, x0, x1, mu1, p)
            except self._redo:
                pass
        h, n, nd = self.h, self.sys.n, self.nd
        L = self._linearize(t, x0, x1, p)
        em, en, e1, e1m, ev1 = (L[k] for k in ("em", "en", "e1", "e1m", "ev1"))
        mq1, mv1, ma1, ml1 = mu1
        v1, a1 = L["v1"], L["a1"]
        # stage 3 (a₁, λ₁ feed no later step: with no objective reading them, μ_a = μ_λ = 0
        # and the stage drops out exactly)
        if np.any(ma1) or np.any(ml1):
            eta = self.S.solve_many(np.vstack([ma1, ml1]), transpose=True)
            ea, el = eta[:n], eta[n:]
            mq = mq1 - ev1.K().T @ ea - (ev1.phi_q_w_q(a1) + ev1.gamma_q()).T @ el
            mv = mv1 - ev1.Cv().T @ ea - ev1.gamma_v().T @ el
            grad = -(ev1.R_p(nd).T @ ea + (ev1.phi_q_w_p(nd, a1) + ev1.gamma_p(nd)).T @ el)
        else:
            mq, mv, grad = mq1, mv1, np.zeros((nd, mq1.shape[1]))
        # stage 2
        zeta = self.S.solve_many(np.vstack([mv, np.zeros((self.sys.m, mv.shape[1]))]), transpose=True)
        zv, zx = zeta[:n], zeta[n:]
        mq = mq - e1.K().T @ zv - (e1.phi_q_w_q(v1) + e1.phi_t_q()).T @ zx
        grad -= (e1m.R_p(nd) + e1.R_p(nd)).T @ zv + (e1.phi_q_w_p(nd, v1) + e1.phi_t_p(nd)).T @ zx
        Km, Cm = em.K(), em.Cv()                          # μ_p̃ = ζ_v
        mvm = em.Ma().T @ zv - 0.5 * h * (Cm.T @ zv)
        mqm = -0.5 * h * (Km.T @ zv)
        grad += L["ptp"].T @ zv
        # stage 1: the explicit maps q₁, q_m, v_m of (q_n, v_n, A), then J⁻ᵀ
        muA = 0.5 * h * h * mq + 0.25 * h * h * mqm + 0.5 * h * mvm
        mqn = mq + mqm
        mvn = h * mq + 0.5 * h * mqm + mvm
        nu = self.J.solve_many(np.vstack([muA, np.zeros((self.sys.m, muA.shape[1]))]), transpose=True)
        nu1, nu2 = nu[:n], (2.0 / (h * h)) * nu[n:]
        G1 = e1.G()
        mqn = mqn - (Km.T @ nu1 + en.K().T @ nu1) - G1.T @ nu2
        mvn = mvn - (0.5 * h * (Km.T @ nu1) + Cm.T @ nu1) - h * (G1.T @ nu2)
        grad -= L["R1p"].T @ nu1 + e1.phi_p(nd).T @ nu2
        return (mqn, mvn, np.zeros_like(ma1), np.zeros_like(ml1)), grad


def make_variational_stepper(system, sim, design_map=None, ndesign=0, comm=None):
    """The variational stepper for ``simulation.integrator = "variational"`` (α = ½)."""
    return Variational(system, sim.dt, newton=sim.newton, petsc_options=sim.petsc_options,
                       design_map=design_map, ndesign=ndesign, comm=comm, compiled=sim.compiled)
