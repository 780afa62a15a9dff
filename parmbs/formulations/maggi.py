"""Maggi's formulation with the trapezoidal rule: forward, direct and adjoint steps.

Seed 004 §2.5: with the user's 0/1 selection B of d = n − m independent coordinates
z = B q (eq. 2.26), the velocities and accelerations follow from

    [Φ_q; B] q̇ = [−Φ_t; ż],   [Φ_q; B] q̈ = [−γ; z̈]           (eqs. 2.26a,b, 2.27)

and the equations of motion projected on R = ∂q/∂z, R̄ᵀ(M q̈ − Q) = 0, are the ODE
M̄(z) z̈ = Q̄(z, ż) (eqs. 2.24–2.25).  The trapezoidal rule is applied to that ODE in
z; the dependent coordinates are solved from the constraints at every step.

Discrete scheme, written in the model's coordinates so objectives, design variables
and checkpoints are shared (D = the n × m selection of the dependent coordinates,
BD = 0; state x_n = (q_n, v_n, a_n, λ_n); unknowns y = (a_{n+1}, λ_{n+1}, ξ_q, ξ_v)):

    q_{n+1} = q̂ + h²/4 (a_{n+1} + D ξ_q),   q̂ = q_n + h v_n + h²/4 a_n
    v_{n+1} = v̂ + h/2 (a_{n+1} + D ξ_v),    v̂ = v_n + h/2 a_n
    E₁ = r(q, v, a) + Φ_qᵀλ = 0                       (n)   ⇔ Rᵀ(M a − Q) = 0 with
    E₂ = Φ_q a + γ = 0                                (m)     λ = Sᵀ(Q − M a)
    E₃ = Φ(q, t) / (h²/4) = 0                          (m)   position constraints
    E₄ = (Φ_q v + Φ_t) / (h/2) = 0                     (m)   velocity constraints

B·(first two lines) is exactly the trapezoidal rule for z = Bq, ż = Bv with z̈ = Ba
(B D = 0), E₃, E₄ put q and v on the constraint manifold (the dependent coordinates
as functions of z, eq. 2.26a), and E₁, E₂ are eqs. 2.23b–2.25 with the multipliers
kept (null(Rᵀ) = range(Φ_qᵀ)); so this is the trapezoidal rule for M̄ z̈ = Q̄.  The
ξ corrections move only the dependent coordinates.  Newton solves all of E at once;
the matrix J = ∂E/∂y is sparse, of size n + 3m, and factored by MUMPS (it needs
pivoting: Φ_q D has no natural-order LU in general).

Direct step: J dy = −(E_q dq̂ + E_v dv̂ + E_ρ) (the TLM of seed 004 eq. 3.27 integrated
by the same rule, in full coordinates: z_ρ = B q_ρ, q_ρ = R z_ρ − SΦ_ρ appear
implicitly through E₃, E₄).  Adjoint step: its exact transpose
Jᵀν = ∂x_{n+1}/∂y ᵀ μ_{n+1}, μ_n = Lᵀ(μ_{n+1} − (E_q, E_v)ᵀν), ∇ψ −= E_ρᵀν.

Differences to the thesis, written down:
* eqs. 3.22/3.25 and 3.28c differentiate q(z), q̇(z, ż) and R̄ᵀ(Q − MSc) only through
  z and the explicit ρ in Q and M.  For a parameter in the constraints (a bar length,
  L_A1) q also moves at fixed z (q_ρ = R z_ρ − SΦ_ρ, q̇ likewise) and R, S, c change
  (R_ρ, (Sc)_ρ); the full-coordinate residual above carries those terms exactly.  For
  parameters outside Φ (spring lengths, masses) both coincide.
* the thesis' AVMs (first-order explicit eq. 3.124, implicit eq. 3.131, second order
  eq. 3.146) are continuous adjoint ODEs integrated backward; they differ from the
  DDM by O(h) (Table 5.1 rows 4 and 8).  This adjoint is the transpose of the forward
  discretisation: it equals the direct gradient to round-off.
* seed 004's cost function is g(q, q̇, ρ) (eq. 3.21); here objectives may also read a
  and λ (they are part of the discrete state).
* Table 5.1 row 4 (DDM, h = 1e-2: −4.2300, 3.2112) is not reproduced by this scheme
  with either quadrature of ψ (trapezoidal weights: −4.2294, 3.2106; right-endpoint
  rule, which reproduces rows 1–2: −4.2383, 3.2165).  The thesis does not say how its
  Maggi ODE was integrated (its code MBSVT uses Runge–Kutta methods, §1.4); at h = 1e-3
  this scheme is within 1.8e-6 of the converged row 11 (benchmarks/fivebar_table51.py).
  The thesis' adjoint ODEs themselves are maggi_avm.py (``simulation.maggi.adjoint``).

Drift: none beyond Newton's tolerance.  E₃ and E₄ hold at every step, so
|Φ(q_k)| ≤ h²/4·|E₃| and |Φ̇| ≤ h/2·|E₄| at the converged iterate; tests/test_maggi.py
checks max_k |Φ| ≤ 1e-10 and max_k |Φ_q v + Φ_t| ≤ 1e-9 (newton rtol = atol = 1e-12).

Independent coordinates: ``simulation.maggi.independent`` lists centre-of-mass
coordinate names "BODY.x|y|angle" (or a flexible body's coordinate names, as in the
HDF5 output).  Empty (default): the bodies' ``independent`` lists, read as the same
coordinate of the centre of mass (for "angle" the frame's angle itself).
"""
import numpy as np

from ..integrators.initial import InitialState
from ..integrators.newmark import StepError
from ..integrators.one_step import OneStep
from ..io.hdf5 import coordinate_names
from ..model.assembly import SparseOperator
from ..model.evaluation import EvalPlan, LocalOperator, StateEval
from ..model.system import ModelError
from .index1 import BETA, GAMMA, group_blocks, predict, shifted

KEY = "simulation.maggi.independent"


def independent_coordinates(system, names):
    """Indices into q of the independent coordinates (the rows of B, eq. 2.26).

    ``names`` empty: the bodies' ``independent`` lists.  Raises ModelError naming
    ``simulation.maggi.independent`` for an unknown name, a repeat or a wrong count."""
    all_names = coordinate_names(system)
    index = {nm: i for i, nm in enumerate(all_names)}
    if not names:
        names = [f"{b.name}.{k}" for b in system.config.bodies for k in b.independent]
        src = "the bodies' 'independent' lists (default)"
    else:
        src = KEY
    unknown = [nm for nm in names if nm not in index]
    if unknown:
        raise ModelError(KEY, f"unknown coordinate {unknown[0]!r} (coordinates are BODY.x, BODY.y, "
                              f"BODY.angle of the centre of mass, e.g. {all_names[0]!r})")
    if len(set(names)) != len(names):
        raise ModelError(KEY, "a coordinate is listed twice")
    d = system.n - system.m
    if len(names) != d:
        raise ModelError(KEY, f"the model has {d} degrees of freedom ({system.n} coordinates, {system.m} "
                              f"constraints) but {src} give{'s' if src == KEY else ''} {len(names)} independent "
                              f"coordinates ({', '.join(names) or 'none'})")
    return np.array([index[nm] for nm in names], dtype=np.int64), list(names)


class MaggiTrapezoidal(OneStep):
    name = "maggi-trapezoidal"

    def __init__(self, system, h, independent=(), newton=None, petsc_options=None, design_map=None,
                 ndesign=0, comm=None):
        self.sys, self.h = system, h
        self.newton = newton
        n, m = system.n, system.m
        self.design_map = design_map if design_map is not None else -np.ones(len(system.p), np.int64)
        self.nd = ndesign
        self.ind, self.ind_names = independent_coordinates(system, list(independent))
        dep = np.setdiff1d(np.arange(n), self.ind)          # the columns of D
        self.dep = dep
        self.depcol = -np.ones(n + 1, np.int64)             # coordinate -> ξ index; [-1] for ground
        self.depcol[dep] = np.arange(len(dep))
        N = n + 3 * m
        self.N = N
        probe = StateEval(system, 0.0, system.q_guess, np.zeros(n), np.zeros(n), np.zeros(m), system.p)
        self.plan = EvalPlan(system, self.design_map)
        oq, ov = n + m, n + 2 * m                           # ξ_q, ξ_v columns; E₃, E₄ rows
        blocks = []
        for rows, _ in probe.force_index():                 # E₁ rows: [a | ξ_q | ξ_v]
            blocks.append((rows, np.hstack([rows, self._xi(rows, oq), self._xi(rows, ov)])))
        for r, c0 in probe.constraint_index(0):
            c = np.where(c0 >= 0, c0, -N)                   # a dropped redundant row (−1) stays < 0
            blocks.append((r, np.hstack([r, self._xi(r, oq)])))                 # E₁: (Φ_qᵀλ)_q
            blocks.append((r, c + n))                                           # E₁: Φ_qᵀ
            blocks.append((c + n, np.hstack([r, self._xi(r, oq), self._xi(r, ov)])))   # E₂
            blocks.append((c + n + m, np.hstack([r, self._xi(r, oq)])))         # E₃
            blocks.append((c + n + 2 * m, np.hstack([r, self._xi(r, oq), self._xi(r, ov)])))  # E₄
        diag = np.arange(n, N).reshape(-1, 1)
        blocks.append((diag, diag))                         # explicit zero diagonal
        self.zero_diag = [np.zeros((N - n, 1, 1))]
        opts = dict(petsc_options or {})
        opts.setdefault("pc_factor_mat_solver_type", "mumps")
        self.op = SparseOperator(N, blocks, comm=comm, options_prefix="parmbs_maggi_", options=opts)
        # initial assembly uses the index-3/index-1 (n+m) saddle-point pattern
        ci = probe.constraint_index(n)
        dg = np.arange(n, n + m).reshape(-1, 1)
        init_blocks = (probe.force_index() + [(r, r) for r, _ in ci] + [(c, r) for r, c in ci] + ci
                       + [(dg, dg)])
        self.init_op = SparseOperator(n + m, init_blocks, comm=comm, options=petsc_options)
        self.init = InitialState(system, self.init_op, self.design_map, ndesign, newton, comm=comm)

    def _xi(self, rows, offset):
        """ξ column of each coordinate row (−1 for independent coordinates and ground)."""
        c = self.depcol[np.where(rows >= 0, rows, -1)]
        return np.where(c >= 0, c + offset, -1)

    # -- pieces shared by the three steps ------------------------------------------------
    def _eval(self, t, x, p):
        return StateEval(self.sys, t, *x, p, self.design_map, self.plan)

    def _predict(self, x):
        return predict(x, self.h)

    def _split(self, y):
        n, m = self.sys.n, self.sys.m
        return y[:n], y[n:n + m], y[n + m:n + 2 * m], y[n + 2 * m:]

    def _states(self, qp, vp, a, xq, xv):
        """q_{n+1}, v_{n+1} from the predictors, a_{n+1} and the ξ corrections."""
        h = self.h
        cq, cv = a.copy(), a.copy()
        cq[self.dep] += xq
        cv[self.dep] += xv
        return qp + BETA * h * h * cq, vp + GAMMA * h * cv

    def _set_matrix(self, ev):
        h = self.h
        bh, gh = BETA * h * h, GAMMA * h
        s = bh / gh
        nc = len(ev.C)
        vals = []
        Fa = ev.force_blocks(bh, gh, 1.0)
        Fq = ev.force_blocks(bh, 0.0, 0.0)
        Fv = ev.force_blocks(0.0, gh, 0.0)
        vals += [np.concatenate([a, q, v], axis=2) for a, q, v in zip(Fa, Fq, Fv)]
        G = ev.phi_q_blocks()
        H = ev.hess_blocks()
        Pa, Gq, Gv = (group_blocks(o, nc) for o in (ev.phi_q_w_q(ev.a), ev.gamma_q(), ev.gamma_v()))
        Pv, Tq = (group_blocks(o, nc) for o in (ev.phi_q_w_q(ev.v), ev.phi_t_q()))
        for Gb, Hb, pa, gq, gv, pv, tq in zip(G, H, Pa, Gq, Gv, Pv, Tq):
            W2 = pa + gq
            W4 = s * (pv + tq)
            vals += [np.concatenate([bh * Hb, bh * Hb], axis=2),
                     np.swapaxes(Gb, 1, 2),
                     np.concatenate([Gb + bh * W2 + gh * gv, bh * W2, gh * gv], axis=2),
                     np.concatenate([Gb, Gb], axis=2),
                     np.concatenate([Gb + W4, W4, Gb], axis=2)]
        self.op.set_values(vals + self.zero_diag)

    def _residual(self, ev):
        h = self.h
        return np.r_[ev.residual(), ev.phi_q_dot(ev.a) + ev.gamma(), ev.phi() / (BETA * h * h),
                     (ev.phi_q_dot(ev.v) + ev.phi_t()) / (GAMMA * h)]

    def _partials(self, ev, nd):
        """∂E/∂q_{n+1}, ∂E/∂v_{n+1} (N × n) and ∂E/∂ρ (N × nd) at fixed y."""
        n, m, N, h = self.sys.n, self.sys.m, self.N, self.h
        bh, gh = BETA * h * h, GAMMA * h
        G = ev.G()
        Eq = (LocalOperator(N, n, ev.K().parts) + shifted(ev.phi_q_w_q(ev.a) + ev.gamma_q(), N, n)
              + shifted(G.scaled(1 / bh), N, n + m) + shifted((ev.phi_q_w_q(ev.v) + ev.phi_t_q()).scaled(1 / gh), N, n + 2 * m))
        Ev = (LocalOperator(N, n, ev.Cv().parts) + shifted(ev.gamma_v(), N, n)
              + shifted(G.scaled(1 / gh), N, n + 2 * m))
        Ep = (LocalOperator(N, nd, ev.R_p(nd).parts)
              + shifted(ev.phi_q_w_p(nd, ev.a) + ev.gamma_p(nd), N, n)
              + shifted(ev.phi_p(nd).scaled(1 / bh), N, n + m)
              + shifted((ev.phi_q_w_p(nd, ev.v) + ev.phi_t_p(nd)).scaled(1 / gh), N, n + 2 * m))
        return Eq, Ev, Ep

    # -- forward ---------------------------------------------------------------------------
    def initial(self, t0, p):
        x0 = self.init.solve(t0, p)
        # [Φ_q; B] must be invertible (eq. 2.27): Φ_q D nonsingular at the initial state
        ev = self._eval(t0, x0, p).real()
        self._set_matrix(ev)
        try:
            y = self.op.solve(np.ones(self.N))
            ok = np.all(np.isfinite(y))
        except np.linalg.LinAlgError:
            ok = False
        if not ok:
            raise ModelError(KEY, f"the independent coordinates {', '.join(self.ind_names)} do not determine "
                                  "the configuration at t = 0 ([Φ_q; B] of seed 004 eq. 2.27 is singular); "
                                  "choose others")
        return x0

    def step(self, k, t, x, p):
        """x_{k+1} from x_k at time t = t_k; returns (x_{k+1}, Newton iterations)."""
        h = self.h
        t1 = t + h
        qp, vp = self._predict(x)
        n, m = self.sys.n, self.sys.m
        y = np.r_[x[2], x[3], np.zeros(2 * m, dtype=x[2].dtype)]
        tol = self.newton
        dq = np.inf
        for it in range(1, tol.max_it + 1):
            a, lam, xq, xv = self._split(y)
            q1, v1 = self._states(qp, vp, a, xq, xv)
            ev = self._eval(t1, (q1, v1, a, lam), p)
            E = self._residual(ev)
            self._set_matrix(ev.real())
            try:
                dy = self.op.solve(-E)
            except np.linalg.LinAlgError:
                raise StepError(f"step {k + 1} (t = {t1:.6g}): singular Newton matrix (independent "
                                f"coordinates {', '.join(self.ind_names)} near a singular configuration?)") from None
            y = y + dy
            da, _, dxq, _ = self._split(dy)
            dq = BETA * h * h * max(np.max(np.abs(da)), np.max(np.abs(dxq), initial=0.0))
            if not np.all(np.isfinite(dy)):
                break
            if dq <= tol.atol + tol.rtol * np.max(np.abs(q1)):
                a, lam, xq, xv = self._split(y)
                q1, v1 = self._states(qp, vp, a, xq, xv)
                return (q1, v1, a.copy(), lam.copy()), it
        raise StepError(f"step {k + 1} (t = {t1:.6g}): Newton did not converge in {tol.max_it} "
                        f"iterations (last position update {dq:.2e})")

    # -- tangent (direct differentiation; seed 004 eq. 3.27 in full coordinates) -------------
    def tangent_step(self, t, x0, x1, dx0, p):
        """dx_{k+1}/dρ from dx_k/dρ (each four (·, nd) blocks)."""
        h, nd = self.h, self.nd
        dq, dv, da, dl = dx0
        dqp = dq + h * dv + (0.5 - BETA) * h * h * da
        dvp = dv + (1 - GAMMA) * h * da
        ev = self._eval(t + h, x1, p)
        self._set_matrix(ev)
        Eq, Ev, Ep = self._partials(ev, nd)
        dy = self.op.solve_many(-(Eq @ dqp + Ev @ dvp + Ep @ np.eye(nd)))
        da1, dl1, dxq, dxv = self._split(dy)
        cq, cv = da1.copy(), da1.copy()
        cq[self.dep] += dxq
        cv[self.dep] += dxv
        return dqp + BETA * h * h * cq, dvp + GAMMA * h * cv, da1, dl1

    # -- discrete adjoint ---------------------------------------------------------------------
    def adjoint_step(self, t, x0, x1, mu1, p):
        """(μ_k, ∇ψ increment) from μ_{k+1} = (μ_q, μ_v, μ_a, μ_λ) of x_{k+1} (one column per
        objective)."""
        h, nd = self.h, self.nd
        bh, gh = BETA * h * h, GAMMA * h
        mq1, mv1, ma1, ml1 = mu1
        ev = self._eval(t + h, x1, p)
        self._set_matrix(ev)
        Eq, Ev, Ep = self._partials(ev, nd)
        rhs = np.vstack([bh * mq1 + gh * mv1 + ma1, ml1, bh * mq1[self.dep], gh * mv1[self.dep]])
        nu = self.op.solve_many(rhs, transpose=True)
        mqp = mq1 - Eq.T @ nu            # ∂ψ/∂q̂ and ∂ψ/∂v̂
        mvp = mv1 - Ev.T @ nu
        mv = h * mqp + mvp
        ma = (0.5 - BETA) * h * h * mqp + (1 - GAMMA) * h * mvp
        return (mqp, mv, ma, np.zeros_like(ml1)), -(Ep.T @ nu)


def make_maggi_stepper(system, sim, design_map=None, ndesign=0, comm=None):
    """The Maggi stepper for ``simulation.formulation = "maggi"`` (trapezoidal rule)."""
    if sim.integrator != "trapezoidal":
        raise ValueError(f"no maggi stepper {sim.integrator!r}")
    st = MaggiTrapezoidal(system, sim.dt, independent=sim.maggi.independent, newton=sim.newton,
                          petsc_options=sim.petsc_options, design_map=design_map, ndesign=ndesign,
                          comm=comm)
    if sim.maggi.adjoint != "discrete":   # the thesis' adjoint ODEs: a whole-run adjoint (maggi_avm.py)
        from .maggi_avm import MaggiAVM
        st.adjoint = MaggiAVM(st, sim.maggi.adjoint)
        st.whole_runs = frozenset(("adjoint",))     # (integrators/one_step.py)
    return st
