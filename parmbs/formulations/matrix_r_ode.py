"""Semi-recursive Matrix R in independent relative coordinates as an ODE, for PETSc TS
(``formulation = "matrix-r"``, ``simulation.matrix_r.coordinates = "independent"``
with a ``ts-*`` integrator; seed 002 eqs. 24–29 integrated by a general ODE solver).

Relative coordinates z, tree kinematics q = f(z; p), v = R ż, a = R z̈ + Ṙ ż, cut
constraints Φ_c and the selection B of d = nz − m_c independent coordinates
z^i = B z are matrix_r_independent.py's (same default choice: column pivoting on Φ_z
at the initial state, once per stepper).  The TS state is y = (z^i, ż^i) and

    ẏ = G(t, y; ρ) = (ż^i, B z̈),

where (z, ż) = Z(t, y; ρ) lie on the loop closure,

    Φ_c(f(z), t) = 0, B z = z^i     (Newton with C = [Φ_z; B], seed 002 eq. 10)
    C ż = [−Φ_c,t; ż^i]             (eq. 24)

and (z̈, λ_c) solve the projected dynamics with the multipliers kept (eqs. 28–29 as
matrix_r_independent.py's E₁, E₂, affine in (z̈, λ_c)):

    E₁ = Rᵀ[r(q, v, a) + Φ_c,qᵀ λ_c] = 0,  E₂ = Φ_c,q a + γ_c = 0,
    K_r = [[RᵀMR, Φ_zᵀ], [Φ_z, 0]],  (z̈, λ_c) = −K_r⁻¹ E(z̈ = 0, λ_c = 0).

Derivatives (dense; E_z, E_ż, E_ρ at fixed (z̈, λ_c) and the E₄ = Φ_q v + Φ_t partials
are matrix_r_independent._elin's, evaluated with h = 1 so its row scalings βh² = ¼
and γh = ½ are undone exactly):

    z_{z^i} = C⁻¹[0; I],  ż_{ż^i} = z_{z^i},  ż_{z^i} = −C⁻¹[E₄_z z_{z^i}; 0]
    z_ρ = −C⁻¹[Φ_ρ; 0],   ż_ρ = −C⁻¹[E₄_z z_ρ + E₄_ρ; 0]
    (z̈, λ_c)_• = −K_r⁻¹ (E_z z_• + E_ż ż_• [+ E_ρ])
    G_y = [[0, I], [B z̈_{z^i}, B z̈_{ż^i}]],  G_ρ = [0; B z̈_ρ]

IJacobian = shift·I − G_y, IJacobianP = −G_ρ; ``ts-rk`` runs G explicitly.

Presentation: x = P(ξ; ρ), ξ = (z, ż, z̈, λ_c), matrix_r.py's map to the model's
absolute coordinates (q, v, a and every λ, tree reactions included); gradients come
back through P's transpose (matrix_r._present_adjoint), K_r⁻ᵀ and the manifold map.
The initial y_0 = (B z_0, B ż_0) with z_0 = f⁻¹(q_0) (closed-form inverse kinematics),
ż_0 = R⁺ v_0; its tangent is matrix_r's left inverse L, dz = R⁺(dq − f_ρ),
dż = R⁺(dv − v_z dz − v_ρ), which carries an explicit ρ part.

The manifold Newton runs to round-off (as maggi_ode.py), the independent entries set
exactly.  Drift: none beyond that round-off; the scheme's error lives in z^i.
"""
import numpy as np
from scipy.linalg import cho_factor, cho_solve, lu_factor, lu_solve

from ..integrators.newmark import StepError
from ..model.evaluation import StateEval
from .index1_ode import Index1ODE, second_order_jacobians
from .maggi_ode import ManifoldGuess, ReducedODEEval, newton_to_roundoff, short_names
from .matrix_r import dense
from .matrix_r_independent import MatrixRIndependent


class MatrixRODE(ManifoldGuess):
    """G(t, y; ρ) of the Matrix-R ODE in y = (z^i, ż^i) and its derivatives (dense)."""

    explicit = True           # F = ẏ − G(t, y): ts-rk can run G directly
    reduced = True            # y is not (q, v): the TS stepper presents x = P(ξ(y)) (integrators/ts.py)

    def __init__(self, system, sim, design_map=None, ndesign=0):
        mr = sim.matrix_r
        #: matrix_r_independent's stepper at h = 1: kinematics, presentation and E's Jacobians
        self.base = MatrixRIndependent(system, 1.0, sim.newton, cut=mr.cut, independent=mr.independent,
                                       petsc_options=sim.petsc_options, design_map=design_map,
                                       ndesign=ndesign, comm=None)
        b = self.base
        self.sys, self.m, self.nq = system, system.m, system.n
        self.design_map, self.nd = b.design_map, ndesign
        self.nz, self.mc = b.nz, b.mc
        # the default B at the initial state (t = 0, the nominal parameters), as
        # matrix_r_independent.initial picks it: fixed for every run of the stepper; a
        # listed B is checked there too (a singular choice, a driven coordinate listed:
        # ModelError on simulation.matrix_r.independent instead of a failing first step)
        b.initial(0.0, system.p)
        self.ind = b.ind
        self.n = len(self.ind)
        self.N = 2 * self.n                   # the halves of y (integrators/ts.py reads mod.n, mod.N)
        self._z = None                        # the last manifold solution: the next Newton's first guess

    create_mat = Index1ODE.create_mat
    fill = Index1ODE.fill
    operator = Index1ODE.operator

    # -- y of (q, v): inverse kinematics ------------------------------------------------------------
    def _zzd(self, q, v, p):
        tree = self.base.tree
        z = tree.positions(q, p)
        R = tree.jacobian(z, p)
        c = cho_factor(R.T @ R)
        return z, cho_solve(c, R.T @ v)

    def y_of(self, q, v, p):
        """y_0 of the initial state."""
        z, zd = self._zzd(q, v, p)
        self._z = z
        return np.r_[z[self.ind], zd[self.ind]]

    _GUESS = "_z"                                   # (ManifoldGuess: the last solution z)
    guess_size = property(lambda self: self.nz)

    def _left(self, q, v, p):
        b = self.base
        z, zd = self._zzd(q, v, p)
        K = b._kin((z, zd, np.zeros(self.nz), np.zeros(self.mc)), p, with_p=True)
        c = b._chol(K)
        return K, c

    def y_tangent(self, q, v, p, dq, dv):
        K, c = self._left(q, v, p)
        dz = cho_solve(c, K.R.T @ (dq - K.Qp))
        dzd = cho_solve(c, K.R.T @ (dv - K.Vz @ dz - K.Vp))
        return np.concatenate([dz[self.ind], dzd[self.ind]])

    def y_adjoint(self, q, v, p, ly):
        d = self.n
        K, c = self._left(q, v, p)
        mz, mzd = np.zeros(self.nz), np.zeros(self.nz)
        mz[self.ind], mzd[self.ind] = ly[:d], ly[d:]
        mv = K.R @ cho_solve(c, mzd)                       # transpose of dż = R⁺(dv − v_z dz − v_ρ)
        mq = K.R @ cho_solve(c, mz - K.Vz.T @ mv)          # ... and of dz = R⁺(dq − f_ρ)
        return mq, mv, -(K.Qp.T @ mq + K.Vp.T @ mv)

    # -- the manifold map Z(t, y; ρ) ------------------------------------------------------------------
    def _phiz(self, t, z, p):
        """(Φ_c, Φ_z, StateEval) at z (velocities zero)."""
        b = self.base
        q = b.tree.kin(z, None, None, p, order=0)
        R = b.tree.jacobian(z, p)
        zero = np.zeros(self.nq)
        ev = StateEval(b.view, t, q, zero, zero, np.zeros(self.mc), p, self.design_map, b.plan)
        return ev.phi(), dense(ev.G()) @ R, ev

    def manifold(self, t, y, p):
        """(z, ż, C's LU) of y = (z^i, ż^i)."""
        d, nz, mc = self.n, self.nz, self.mc
        zi, zid = y[:d], y[d:]
        z = self._z.copy()
        z[self.ind] = zi
        C = np.zeros((nz, nz))
        C[mc + np.arange(d), self.ind] = 1.0
        def update(z):
            phi, C[:mc], _ = self._phiz(t, z, p)
            return lu_solve(lu_factor(C, check_finite=False), np.r_[-phi, np.zeros(d)], check_finite=False)
        z, converged = newton_to_roundoff(update, z, self.ind)
        phi, C[:mc], ev = self._phiz(t, z, p)
        res = np.max(np.abs(phi), initial=0.0)
        if not np.isfinite(res) or not converged:
            raise StepError(f"t = {t:.6g}: the loop closure at the independent coordinates "
                            f"{short_names(self.base.ind_names)} has no solution near the last state "
                            f"(|Φ| = {res:.2e}; a singular configuration?)")
        self._z = z
        lu = lu_factor(C, check_finite=False)
        zd = lu_solve(lu, np.r_[-ev.phi_t(), zid], check_finite=False)
        zd[self.ind] = zid
        return z, zd, lu

    def eval(self, t, y, yd, p):
        return MatrixRODEEval(self, t, y, yd, p)

    def present(self, t, y, p):
        from types import SimpleNamespace
        pe = MatrixRODEEval(self, t, y, np.zeros(self.N), p)
        q, v, a = pe.x
        return self.base._present(t, pe.xi, p, SimpleNamespace(q=q, v=v, a=a))

    def accel(self, t, y, p, a0=None):
        return self.present(t, y, p)[2:]

    def present_grads(self, t, y, p, gq, gv, ga, gl):
        """(∂ψ/∂y, ∂ψ/∂ρ) of an objective term's (g_q, g_v, g_a, g_λ) at P(ξ(y))."""
        pe = MatrixRODEEval(self, t, y, np.zeros(self.N), p)
        b, nz = self.base, self.nz
        x = b._present(t, pe.xi, p, pe.K)
        (mz, mzd, mzdd, mlc), gp = b._present_adjoint(t, x, pe.K, (gq, gv, ga, gl), p)
        w = lu_solve(pe.Klu, np.r_[mzdd, mlc], trans=1, check_finite=False)   # through (z̈, λ_c) = −K_r⁻¹E
        mz = mz - pe.Az.T @ w
        mzd = mzd - pe.Azd.T @ w
        gp = gp - pe.Ap.T @ w
        zz, zdz, zp, zdp = pe.chain()
        gy = np.r_[zz.T @ mz + zdz.T @ mzd, zz.T @ mzd]
        if self.nd:
            gp = gp + zp.T @ mz + zdp.T @ mzd
        return gy, np.asarray(gp, float).reshape(self.nd)


class MatrixRODEEval(ReducedODEEval):
    """Everything at one point (t, y, ẏ; ρ): F = ẏ − G and its derivatives."""

    def __init__(self, model, t, y, yd, p):
        self.mod, self.t, self.y, self.yd, self.p = model, t, y, yd, p
        b, nz, mc = model.base, model.nz, model.mc
        z, zd, self._lu = model.manifold(t, y, p)
        # (z̈, λ_c) from K_r (z̈, λ_c) = −E(z, ż, 0, 0): E is affine in them (real kinematics
        # and one evaluation; the Jacobians below only when asked for)
        q, v, a0 = b.tree.kin(z, zd, np.zeros(nz), p)
        R = b.tree.jacobian(z, p)
        ev = StateEval(b.view, t, q, v, a0, np.zeros(mc), p, self.mod.design_map, b.plan)
        Phiz = dense(ev.G()) @ R
        Kr = np.block([[R.T @ dense(ev.Ma()) @ R, Phiz.T], [Phiz, np.zeros((mc, mc))]])
        self.Klu = lu_factor(Kr, check_finite=False)
        u = lu_solve(self.Klu, -np.r_[R.T @ ev.residual(), ev.phi_q_dot(a0) + ev.gamma()], check_finite=False)
        self.xi = (z, zd, u[:nz], u[nz:])
        self.x = (q, v, a0 + R @ u[:nz])             # (a = R z̈ + Ṙ ż is affine in z̈)
        self.a = self.xi[2]
        self._K = self._L_ = self._chain = self._Gy = None

    @property
    def K(self):
        """matrix_r's kinematic Jacobians at the solution (with the design directions)."""
        if self._K is None:
            self._K = self.mod.base._kin(self.xi, self.p, with_p=True)
        return self._K

    @property
    def _L(self):
        """_elin at the solution: E_z, E_ż, E_ρ depend on (z̈, λ_c)."""
        if self._L_ is None:
            self._L_ = self.mod.base._elin(self.t, self.xi, self.p, with_p=True, K=self.K)
        return self._L_

    @property
    def Az(self):
        return self._L.Ez[:self.mod.nz + self.mod.mc]

    @property
    def Azd(self):
        return self._L.Ezd[:self.mod.nz + self.mod.mc]

    @property
    def Ap(self):
        return self._L.Ep[:self.mod.nz + self.mod.mc]

    def chain(self):
        """(z_{z^i}, ż_{z^i}, z_ρ, ż_ρ) of the manifold map (module doc); ż_{ż^i} = z_{z^i}."""
        if self._chain is None:
            mod = self.mod
            nz, mc, d, nd = mod.nz, mod.mc, mod.n, mod.nd
            L, sol = self._L, (lambda B: lu_solve(self._lu, B, check_finite=False))
            E4z = 0.5 * L.Ez[nz + 2 * mc:]                     # (γh = ½ at h = 1)
            E = np.zeros((nz, d))
            E[mc:] = np.eye(d)
            zz = sol(E)
            zdz = sol(np.vstack([-E4z @ zz, np.zeros((d, d))]))
            if nd:
                Phip = 0.25 * L.Ep[nz + mc:nz + 2 * mc]         # (βh² = ¼)
                E4p = 0.5 * L.Ep[nz + 2 * mc:]
                zp = sol(np.vstack([-Phip, np.zeros((d, nd))]))
                zdp = sol(np.vstack([-(E4z @ zp + E4p), np.zeros((d, nd))]))
            else:
                zp = zdp = np.zeros((nz, 0))
            self._chain = (zz, zdz, zp, zdp)
        return self._chain

    def _derivs(self):
        if self._Gy is None:
            mod = self.mod
            nz, ind = mod.nz, mod.ind
            zz, zdz, zp, zdp = self.chain()
            sol = lambda B: lu_solve(self.Klu, B, check_finite=False)[:nz]
            self._Gy, self._Gp = second_order_jacobians(
                -sol(self.Az @ zz + self.Azd @ zdz)[ind], -sol(self.Azd @ zz)[ind],
                -sol(self.Az @ zp + self.Azd @ zdp + self.Ap)[ind] if mod.nd else None, mod.nd)
        return self._Gy, self._Gp


def make_matrix_r_ts_stepper(system, sim, design_map=None, ndesign=0, comm=None):
    """The PETSc-TS stepper for matrix-r in independent coordinates with a ``ts-*`` integrator."""
    from ..integrators.ts import TSStepper
    return TSStepper(MatrixRODE(system, sim, design_map, ndesign), sim, comm=comm)
