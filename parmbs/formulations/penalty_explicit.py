"""The penalty ODE in explicit form ẏ = G(t, y; ρ), for ``ts-rk`` (the explicit
Runge–Kutta methods [Zhu 2014]'s MBSVT integrated the penalty formulation with).

penalty.py's implicit F(t, y, ẏ) = 0 is affine in ẏ for rigid bodies (F₁ = q̇ − v,
F₂ = M v̇ − Q + αΦ_qᵀ(Φ_q v̇ + γ + 2ξωΦ̇ + ω²Φ)), so

    G = (v, a),   S a = −F₂(t, q, v, 0),   S = ∂F₂/∂v̇ = M + αΦ_qᵀΦ_q

(one solve and iterative refinement while the residual halves, which also covers a
component that makes F₂ nonlinear in v̇), and
at F(t, y, G) = 0

    G_y = −F_ẏ⁻¹ F_y,   G_ρ = −F_ẏ⁻¹ F_ρ,   F_ẏ = [[I, 0], [0, S]]

(2n + nd columns through one factored F_ẏ; dense, small models).  The stiffness α sits
in S, not in the dynamics: along the constraints they are Φ̈ + 2ξωΦ̇ + ω²Φ ≈ 0 with
eigenvalues ≈ −ξω ± …, so an explicit step of h ≲ 2.8/max(ω, natural frequencies)
is stable whatever α (the five-bar at ω = 10: h = 1e-2 is fine).

Objectives of a and λ: a = G₂(y; ρ), λ = αΛ(q, v, a) (penalty.py), so
∂ψ/∂y = [Λ_q, Λ_v]ᵀ g_λ + G₂,yᵀ (g_a + αΦ_qᵀ g_λ), ∂ψ/∂ρ likewise with α Λ_ρ and G₂,ρ.
"""
import numpy as np
from scipy.linalg import lu_factor, lu_solve

from .index1_ode import ExplicitODEEval, Index1ODE


class PenaltyExplicit:
    explicit = True

    def __init__(self, base, sim):
        self.base = base
        self.sys, self.n, self.m, self.N = base.sys, base.n, base.m, base.N
        self.nd, self.design_map, self.alpha = base.nd, base.design_map, base.alpha
        self.newton = sim.newton

    create_mat = Index1ODE.create_mat
    fill = Index1ODE.fill
    operator = Index1ODE.operator

    def eval(self, t, y, yd, p):
        return PenaltyExplicitEval(self, t, y, p)

    def accel(self, t, y, p, a0=None):
        pe = PenaltyExplicitEval(self, t, y, p)
        return pe.a, pe.lam

    def output_grads(self, t, y, p, ga, gl):
        pe = PenaltyExplicitEval(self, t, y, p)
        n, al = self.n, self.alpha
        Lq, Lv = pe.pe.lam_ops()
        w = ga + al * (pe.pe.ev.G().T @ gl)
        gy = np.r_[Lq.T @ gl, Lv.T @ gl] + pe.Gy()[n:].T @ w
        gp = np.zeros(self.nd)
        if self.nd:
            gp = al * (pe.pe.Lam_p().T @ gl) + pe.Gp()[n:].T @ w
        return gy, gp


class PenaltyExplicitEval(ExplicitODEEval):
    def __init__(self, mod, t, y, p):
        base, n = mod.base, mod.n
        self.mod = mod
        a = np.zeros(n)
        # S depends on (q, ρ) only: one dense LU per point (LAPACK, pivoted; small models)
        pe = base.eval(t, y, np.r_[y[n:], a], p)
        S = base.operator(pe.blocks(0.0, 1.0)) @ np.eye(mod.N)
        self._lu = lu_factor(S[n:, n:], check_finite=False)
        # F₂ is affine in a for rigid bodies: one solve gives a to κ(S) ε (κ ∝ α); the
        # corrections are iterative refinement, kept while the residual halves (at most 4)
        r = -pe.F()[n:]
        last = np.inf
        for it in range(5):
            da = lu_solve(self._lu, r, check_finite=False)
            a1 = a + da
            pe1 = base.eval(t, y, np.r_[y[n:], a1], p)
            r1 = -pe1.F()[n:]
            R1 = np.max(np.abs(r1), initial=0.0)
            if it and R1 > 0.5 * last:
                break
            a, pe, r, last = a1, pe1, r1, R1
            if R1 == 0.0:
                break
        self.pe = pe
        self.y, self.a, self.lam = y, a, pe.lam
        self._Gy = None

    def _derivs(self):
        if self._Gy is None:
            mod, pe = self.mod, self.pe
            N = mod.N
            n = mod.n
            Fy = mod.base.operator(pe.blocks(1.0, 0.0)) @ np.eye(N)
            sol = lambda B: np.vstack([B[:n], lu_solve(self._lu, B[n:], check_finite=False)])   # F_ẏ⁻¹
            self._Gy = -sol(Fy)
            self._Gp = -sol(pe.Fp()) if mod.nd else np.zeros((N, 0))
        return self._Gy, self._Gp

    def G(self):
        return np.r_[self.y[self.mod.n:], self.a]

    def F(self):
        raise NotImplementedError("the explicit penalty ODE runs ts-rk only (RHSFunction)")
