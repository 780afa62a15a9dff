"""The penalty formulation (Bayo's augmented-Lagrangian penalty; seed 004).

    M a + Φ_qᵀ λ = Q,   λ = α (Φ̈ + 2ξω Φ̇ + ω² Φ),
    Φ̈ = Φ_q a + γ(q, v, t),   Φ̇ = Φ_q v + Φ_t.

First-order implicit form for PETSc TS, y = (q, v), ẏ = (q̇, v̇):

    F₁ = q̇ − v
    F₂ = R(t, q, v, a = v̇, λ(q, v, v̇))          (R = Σ r + Φ_qᵀλ, StateEval.residual)
    λ  = α Λ,   Λ = Φ_q v̇ + γ + 2ξω (Φ_q v + Φ_t) + ω² Φ

Derivatives (all local per component element, so the Jacobians keep the block
sparsity of the components; α Φ_qᵀΦ_q couples only the coordinates of one element):

    ∂F₂/∂v̇ = r_a + α Φ_qᵀΦ_q                                     (=: S, "mass")
    ∂F₂/∂q = r_q + ∂(Φ_qᵀλ)/∂q|_λ + α Φ_qᵀ Λ_q
             Λ_q = ∂(Φ_q w)/∂q|_{w = v̇ + 2ξω v} + γ_q + 2ξω Φ_tq + ω² Φ_q
    ∂F₂/∂v = r_v + α Φ_qᵀ (γ_v + 2ξω Φ_q)
    ∂F₂/∂p = R_p|_λ + α Φ_qᵀ Λ_p,   Λ_p likewise (design columns only)

IJacobian = shift·∂F/∂ẏ + ∂F/∂y is assembled into a PETSc AIJ through a
``BlockPattern`` of the 2n unknowns.  ``make_ts_stepper`` (used by Problem) returns
the PETSc-TS stepper of ``parmbs/integrators/ts.py``.
"""
import numpy as np

from .._petsc import PETSc
from .._log import event
from ..model.assembly import BlockPattern
from ..model.component import Constraint
from ..model.evaluation import StateEval, LocalOperator


def _rheonomic(g):
    """Does the group override Φ_t (otherwise Φ_t ≡ 0 and its derivatives vanish)?"""
    return type(g).phi_t is not Constraint.phi_t


def _off(R, n):
    """Shift unknown indices into the v half of y (−1 stays −1)."""
    return np.where(R < 0, -1, R + n)


class PenaltyModel:
    """The penalty ODE of one system: residual, Jacobian blocks, pattern."""

    def __init__(self, system, alpha=1e7, xi=1.0, omega=10.0, design_map=None, ndesign=0):
        self.sys = system
        self.alpha, self.xi, self.omega = float(alpha), float(xi), float(omega)
        n, m = system.n, system.m
        self.n, self.m, self.N = n, m, 2 * n
        self.design_map = design_map if design_map is not None else -np.ones(len(system.p), np.int64)
        self.nd = ndesign
        probe = StateEval(system, 0.0, system.q_guess, np.zeros(n), np.zeros(n), np.zeros(m), system.p)
        I = np.arange(n).reshape(-1, 1)
        idx = [(I, I), (I, I + n), (I + n, I + n)]
        for g, *_ in probe.F:
            R = probe._rows(g)
            idx += [(_off(R, n), R), (_off(R, n), _off(R, n))]
        for g, *_ in probe.C:
            R = probe._rows(g)
            idx += [(_off(R, n), R), (_off(R, n), _off(R, n))]
        self.idx = idx
        self.pattern = BlockPattern(self.N, idx)

    # -- matrices ---------------------------------------------------------------
    def create_mat(self, comm=None):
        A = PETSc.Mat().createAIJ([self.N, self.N], comm=comm or PETSc.COMM_SELF)
        A.setPreallocationCSR((self.pattern.indptr, self.pattern.indices))
        A.setOption(PETSc.Mat.Option.NEW_NONZERO_ALLOCATION_ERR, True)
        A.setUp()
        return A

    @event("ParmbsAssemble")
    def fill(self, A, blocks):
        A.setValuesCSR(self.pattern.indptr, self.pattern.indices, self.pattern.values(blocks))
        A.assemble()

    def operator(self, blocks):
        """The same blocks as a matrix-free LocalOperator (for dense column blocks)."""
        return LocalOperator(self.N, self.N, [(r, c, B) for (r, c), B in zip(self.idx, blocks)])

    def eval(self, t, y, yd, p):
        return PenaltyEval(self, t, y, yd, p)


class PenaltyEval:
    """Everything at one point (t, y, ẏ; p)."""

    def __init__(self, model, t, y, yd, p):
        self.mod = model
        n = model.n
        self.t, self.p = t, p
        self.q, self.v = y[:n], y[n:]
        self.qd, self.vd = yd[:n], yd[n:]
        ev = StateEval(model.sys, t, self.q, self.v, self.vd, np.zeros(model.m), p, model.design_map)
        a, xi, om = model.alpha, model.xi, model.omega
        Lam = (ev.phi_q_dot(self.vd + 2 * xi * om * self.v) + ev.gamma() + 2 * xi * om * ev.phi_t()
               + om * om * ev.phi())
        lam = a * Lam
        # put λ into the evaluator (Φ_q is memoized: depends on q, p only)
        ev.lam = lam
        lam_g = np.append(lam, 0) if ev.plan.drop else lam      # a dropped redundant row (−1): λ = 0
        ev.C = [(g, q, v, aa, lam_g[g.rows], pp) for (g, q, v, aa, _, pp) in ev.C]
        self.ev, self.lam, self.Lam = ev, lam, Lam
        self._c = {}

    def _memo(self, key, fn):
        if key not in self._c:
            self._c[key] = fn()
        return self._c[key]

    # -- vectors ----------------------------------------------------------------------
    def F(self):
        return np.r_[self.qd - self.v, self.ev.residual()]

    # -- local pieces -----------------------------------------------------------------
    def _con_local(self):
        """Per constraint group: (G, Λ_q, Λ_v) local arrays."""
        def make():
            mod, ev = self.mod, self.ev
            xo = 2 * mod.xi * mod.omega
            w = mod.sys.extend(self.vd + xo * self.v)
            out = []
            for g, q, v, a, lam, p in ev.C:
                G = ev.phi_q_local(g, q, p)
                Lq = g.phi_q_w_q(self.t, q, p, w[g.qidx]) + g.gamma_q(self.t, q, v, p) + mod.omega ** 2 * G
                if xo and _rheonomic(g):
                    Lq = Lq + xo * g.phi_t_q(self.t, q, p)
                Lv = g.gamma_v(self.t, q, v, p) + xo * G
                out.append((G, Lq, Lv))
            return out
        return self._memo("con", make)

    def blocks(self, cy, cyd):
        """Local blocks of cy·∂F/∂y + cyd·∂F/∂ẏ, aligned with ``model.idx``."""
        mod, ev = self.mod, self.ev
        n, al = mod.n, mod.alpha
        ones = np.ones((n, 1, 1))
        out = [cyd * ones, -cy * ones, np.zeros((n, 1, 1))]
        Fq = ev.force_blocks(cy, 0.0, 0.0) if cy else [np.zeros((g.ne, g.nq, g.nq)) for g, *_ in ev.F]
        Fv = ev.force_blocks(0.0, cy, cyd)
        for bq, bv in zip(Fq, Fv):
            out += [bq, bv]
        H = ev.hess_blocks() if cy else None
        con = self._con_local() if cy else [(G, None, None) for G in ev.phi_q_blocks()]
        for k, (G, Lq, Lv) in enumerate(con):
            GT = np.swapaxes(G, 1, 2)
            if cy:
                bq = cy * (H[k] + al * GT @ Lq)
                bv = cy * al * (GT @ Lv)
            else:
                bq = np.zeros((G.shape[0], G.shape[2], G.shape[2]))
                bv = 0.0
            if cyd:
                bv = bv + cyd * al * (GT @ G)
            out += [bq, np.broadcast_to(bv, bq.shape)]
        return out

    # -- λ derivatives (for objectives of a, λ) ---------------------------------------
    def lam_ops(self):
        """∂λ/∂q|_a, ∂λ/∂v|_a as LocalOperators (m × n); ∂λ/∂a = α Φ_q."""
        ev, al = self.ev, self.mod.alpha
        rows = [(g.rows, ev._rows(g)) for g, *_ in ev.C]
        loc = self._con_local()
        Lq = LocalOperator(self.mod.m, self.mod.n, [(r, c, al * L[1]) for (r, c), L in zip(rows, loc)])
        Lv = LocalOperator(self.mod.m, self.mod.n, [(r, c, al * L[2]) for (r, c), L in zip(rows, loc)])
        return Lq, Lv

    def Lam_p(self):
        """∂Λ/∂ρ|_{y, ẏ} (m × nd) dense."""
        mod, ev = self.mod, self.ev
        nd = mod.nd
        I = np.eye(nd)
        xo = 2 * mod.xi * mod.omega
        L = (ev.phi_q_w_p(nd, self.vd + xo * self.v) + ev.gamma_p(nd) + ev.phi_p(nd).scaled(mod.omega ** 2))
        if any(_rheonomic(g) for g in mod.sys.constraints):
            L = L + ev.phi_t_p(nd).scaled(xo)
        return L @ I

    def Fp(self):
        """∂F/∂ρ (2n × nd) dense."""
        mod, ev = self.mod, self.ev
        nd, n = mod.nd, mod.n
        out = np.zeros((2 * n, nd))
        if nd:
            out[n:] = ev.R_p(nd) @ np.eye(nd) + ev.G().T @ (mod.alpha * self.Lam_p())
        return out


def make_ts_stepper(system, sim, design_map=None, ndesign=0, comm=None):
    """The PETSc-TS stepper for ``simulation.formulation = "penalty"``.  The TS and the
    initial assembly run on ``comm`` (default COMM_WORLD; integrators/ts_layout.py)."""
    from ..integrators.ts import TSStepper
    pen = sim.penalty
    model = PenaltyModel(system, pen.alpha, pen.xi, pen.omega, design_map, ndesign)
    if sim.integrator == "ts-rk":                  # ẏ = G(t, y) explicitly (penalty_explicit.py)
        from .penalty_explicit import PenaltyExplicit
        model = PenaltyExplicit(model, sim)
    return TSStepper(model, sim, comm=comm)
