"""The index-1 equations as an ODE in y = (q, v), for PETSc TS (``formulation =
"index1"`` with a ``ts-*`` integrator; seed 004 §2.2, eq. 2.8, integrated as MBSVT did,
by a general ODE solver).

    ẏ = G(t, y; ρ) = (v, a),    [r_a  Φ_qᵀ] [a]     [r(q, v, a) + Φ_qᵀλ]
                                [Φ_q   0  ] [λ] = − [Φ_q a + γ        ]  at (a, λ) = 0

(r = M a − Q of every force group; the residual is affine in (a, λ), so one solve with
the saddle-point matrix K gives them exactly; a second one is made only if the
residual says r is not affine in a).  The implicit form the TSStepper uses is
F(t, y, ẏ) = ẏ − G(t, y), linear in ẏ:

    IJacobian  = shift·I − G_y,     G_y = [[0, I], [a_q, a_v]]
    IJacobianP = −G_ρ,              G_ρ = [0; a_ρ]
    (a, λ)_{q,v,ρ} = −K⁻¹ (R_q, R_v, R_ρ)   (R: the residual above; index1.py's partials)

G_y is dense (a depends on every coordinate through K⁻¹): 2n columns of one factored
K per Jacobian, stored in a dense-pattern AIJ.  Meant for small models (the seed 004
mechanisms, n ≲ 100); the scaling form is a sparse DAE in (q, v, λ).  ``ts-rk`` runs
the same G explicitly (RHSFunction/RHSJacobian/RHSJacobianP).

Drift: as index1.py; without stabilisation Φ and Φ̇ drift with the global error of the
scheme (the exact flow keeps Φ = Φ̇ = 0 from the consistent initial state).

Baumgarte (seed 004 §2.3; ``simulation.index1.baumgarte = {alpha, beta}``): the
constraint row of the residual becomes Φ_q a + γ + 2α(Φ_q v + Φ_t) + β²Φ (Φ̈ + 2αΦ̇ +
β²Φ = 0).  K is unchanged (the added terms do not contain a); R_q, R_v, R_ρ carry
2α((Φ_q v)_q + Φ_tq) + β²Φ_q, 2αΦ_q and 2α((Φ_q v)_ρ + Φ_tρ) + β²Φ_ρ — the core
stepper's own Baumgarte partials at h = 0 (index1.py), so G, G_y, G_ρ and the output
gradients stay exact.
"""
import numpy as np

from .._petsc import PETSc
from .._log import event
from .index1 import Index1Trapezoidal


class Index1ODE:
    """G(t, y; ρ) of one system and its derivatives (dense)."""

    explicit = True           # F = ẏ − G(t, y): ts-rk can run G directly

    def __init__(self, system, sim, design_map=None, ndesign=0):
        self.sys = system
        n, m = system.n, system.m
        self.n, self.m, self.N = n, m, 2 * n
        self.design_map = design_map if design_map is not None else -np.ones(len(system.p), np.int64)
        self.nd = ndesign
        # the trapezoidal index-1 stepper at h = 0: its matrix is K, its partials R_q, R_v, R_ρ
        self.core = Index1Trapezoidal(system, 0.0, newton=sim.newton, petsc_options=sim.petsc_options,
                                      design_map=self.design_map, ndesign=ndesign, comm=PETSc.COMM_SELF,
                                      baumgarte=sim.index1.baumgarte)
        self.tol = sim.newton

    # -- matrices (dense pattern) ----------------------------------------------------------------
    def create_mat(self, comm=None):
        N = self.N
        A = PETSc.Mat().createAIJ([N, N], nnz=N, comm=comm or PETSc.COMM_SELF)
        A.setUp()
        self._idx = np.arange(N, dtype=PETSc.IntType)
        return A

    @event("ParmbsAssemble")
    def fill(self, A, blocks):
        A.setValues(self._idx, self._idx, np.ascontiguousarray(blocks).ravel())
        A.assemble()

    def operator(self, blocks):
        return blocks

    def eval(self, t, y, yd, p):
        return Index1ODEEval(self, t, y, yd, p)

    # -- (a, λ) at a state ------------------------------------------------------------------------
    def solve_z(self, t, q, v, p):
        """(a, λ, evaluator at the solution) from K z = −R(z = 0).  K depends on q only,
        so the factorization stays valid at the solution.  R is affine in z for every
        shipped component; should a component's r be nonlinear in a, the solve is
        repeated (at most twice more) until the residual is at round-off of R(0)."""
        core, n, m = self.core, self.n, self.m
        z = np.zeros(n + m)
        ev = core._eval(t, (q, v, z[:n], z[n:]), p)
        R = core._residual(ev)
        R0 = np.max(np.abs(R), initial=0.0)
        core._set_matrix(ev)
        for it in range(3):
            z = z + core.op.solve(-R)
            ev = core._eval(t, (q, v, z[:n], z[n:]), p)
            R = core._residual(ev)
            if np.max(np.abs(R), initial=0.0) <= 1e-10 * R0:
                break
        return z[:n], z[n:], ev

    def accel(self, t, y, p, a0=None):
        """(a, λ) at the stored state y (the objective's a and λ)."""
        a, lam, _ = self.solve_z(t, y[:self.n], y[self.n:], p)
        return a, lam

    def output_grads(self, t, y, p, ga, gl):
        """(∂ψ/∂y, ∂ψ/∂ρ) of an objective term's (∂ψ/∂a, ∂ψ/∂λ) through (a, λ)(y, ρ):
        −(R_q, R_v, R_ρ)ᵀ K⁻ᵀ (g_a, g_λ)."""
        core = self.core
        _, _, ev = self.solve_z(t, y[:self.n], y[self.n:], p)
        core._set_matrix(ev)
        Rq, Rv, Rp = core._partials(ev, self.nd)
        w = core.op.solve(np.r_[ga, gl], transpose=True)
        return -np.r_[Rq.T @ w, Rv.T @ w], (-(Rp.T @ w) if self.nd else np.zeros(0))


class ExplicitODEEval:
    """F = ẏ − G(t, y; ρ) and its derivatives from an evaluation's G(), ``_derivs()`` =
    (G_y, G_ρ) and ``yd``: shared by the explicit ODEs on TS (index-1, Maggi, Matrix-R,
    explicit penalty)."""

    def F(self):
        return self.yd - self.G()

    def blocks(self, cy, cyd):
        """cy·∂F/∂y + cyd·∂F/∂ẏ = −cy G_y + cyd I (dense)."""
        return -cy * self._derivs()[0] + cyd * np.eye(self.mod.N)

    def Fp(self):
        return -self._derivs()[1]

    def Gy(self):
        return self._derivs()[0]

    def Gp(self):
        return self._derivs()[1]


def second_order_jacobians(ay, ayd, ap, nd):
    """G_y = [[0, I], [a_y, a_ẏ]] and G_ρ = [0; a_ρ] of ẏ = (ẏ₂, a) for y = (y₁, y₂), from
    the acceleration's derivatives (d × d, d × d, d × nd; ``ap`` unused when nd = 0)."""
    d = ay.shape[0]
    Gy = np.zeros((2 * d, 2 * d))
    Gy[:d, d:] = np.eye(d)
    Gy[d:, :d] = ay
    Gy[d:, d:] = ayd
    Gp = np.zeros((2 * d, nd))
    if nd:
        Gp[d:] = ap
    return Gy, Gp


class Index1ODEEval(ExplicitODEEval):
    """Everything at one point (t, y, ẏ; ρ): F = ẏ − G and its derivatives."""

    def __init__(self, model, t, y, yd, p):
        self.mod, self.t, self.y, self.yd, self.p = model, t, y, yd, p
        n = model.n
        self.a, self.lam, self.ev = model.solve_z(t, y[:n], y[n:], p)
        self._Gy = self._Gp = None

    def G(self):
        return np.r_[self.y[self.mod.n:], self.a]

    def _derivs(self):
        if self._Gy is None:
            mod = self.mod
            n, nd = mod.n, mod.nd
            core = mod.core
            core._set_matrix(self.ev)          # (K at this point: solve_z of another point may have run)
            Rq, Rv, Rp = core._partials(self.ev, nd)
            Ry = np.hstack([Rq @ np.eye(n), Rv @ np.eye(n)])
            dz = core.op.solve_many(-Ry)
            Gy = np.zeros((2 * n, 2 * n))
            Gy[:n, n:] = np.eye(n)
            Gy[n:] = dz[:n]
            Gp = np.zeros((2 * n, nd))
            if nd:
                Gp[n:] = core.op.solve_many(-(Rp @ np.eye(nd)))[:n]
            self._Gy, self._Gp = Gy, Gp
        return self._Gy, self._Gp


def make_index1_ts_stepper(system, sim, design_map=None, ndesign=0, comm=None):
    """The PETSc-TS stepper for ``formulation = "index1"`` with a ``ts-*`` integrator.
    The TS runs on ``comm`` (default COMM_WORLD; integrators/ts_layout.py)."""
    from ..integrators.ts import TSStepper
    return TSStepper(Index1ODE(system, sim, design_map, ndesign), sim, comm=comm)
