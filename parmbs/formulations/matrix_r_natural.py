"""Independent-coordinate Matrix R whose degrees of freedom may be natural coordinates
(seed 002 §2.2.3, eqs. 12–15 and 24–29 with a non-constant B = h_z): the trapezoidal
rule on z^i = h(z), forward, direct and adjoint steps.

``simulation.matrix_r.coordinates = "independent"`` with ``independent`` naming at
least one natural coordinate (natural_dof.py: ``BODY.POINT.x|y``, ``BODY.angle`` on planar
models, ``BODY.POINT.x|y|z`` on spatial rigid ones; the other entries tree joints).  matrix_r_independent.py integrates z^i = B z with a 0/1
B; here z^i = h(z; p) is a nonlinear function of z, so the trapezoidal rule is written
on the DOF values themselves, unknowns y = (z̈_{n+1}, λ_c, δ_z, δ_ż) with

    z_{n+1} = ẑ + βh² (z̈_{n+1} + δ_z),   ż_{n+1} = ẑ' + γh (z̈_{n+1} + δ_ż)
    E₁…E₄  as matrix_r_independent.py (eq. 28 with λ_c; Φ̈_c = 0; Φ_c = 0; Φ̇_c = 0)
    T₁ = (z^i(z_{n+1}) − ĥ) / (βh²) − z̈^i_{n+1},   ĥ  = z^i_n + h ż^i_n + (½−β) h² z̈^i_n
    T₂ = (ż^i(z_{n+1}, ż_{n+1}) − ĥ') / (γh) − z̈^i_{n+1},   ĥ' = ż^i_n + (1−γ) h z̈^i_n

with ż^i = B ż and z̈^i = B z̈ + Ḃ ż (eqs. 14–15, natural_dof.py).  nz + 3 m_c + 2d =
3 nz + m_c equations for as many unknowns (d = nz − m_c).  δ_z, δ_ż are free in R^nz:
T₁, T₂ fix their components along the DOF, E₃, E₄ the rest (the dependent coordinates
from the loop closure, eq. 13); for a 0/1 B, T₁ = B δ_z, T₂ = B δ_ż and the scheme is
matrix_r_independent.py's.  The Newton matrix is nonsingular where Θ_z = [Φ_z; B] is
(eq. 16), checked at t₀.

Redundant constraints: seed 002 eq. 17 computes R^Φ by least squares on [Φ_z; B].  With
``simulation.matrix_r.redundant = "least-squares"`` (default) the rows dropped at set-up
stay in E₂–E₄ and the tall Newton system is solved by least squares (matrix_r.py,
"Redundant constraints": its (z, ż, z̈) blocks are Θ_z = [Φ_z; B]); with "drop" Θ_z is
square.  Either way the multipliers of the dropped rows are reported as 0.

Sensitivities: the step is G(y; ẑ, ẑ', ĥ, ĥ', ρ) = 0; direct J dy = −(G_ẑ dẑ + G_ẑ' dẑ'
+ G_ĥ dĥ + G_ĥ' dĥ' + G_ρ) with dĥ, dĥ' from the DOF Jacobians at ξ_n (the discrete
counterpart of seed 002 eqs. 35–38: B_ρ, Ḃ, B̈ enter through those Jacobians), the
adjoint its exact transpose; states presented as x = (q, v, a, λ) by matrix_r.py's P
and its left inverse, so adjoint = direct to round-off.
"""
import numpy as np

from ..model.evaluation import StateEval
from ..model.system import ModelError
from .matrix_r import MatrixRStepper, Factor
from .matrix_r_independent import MatrixRIndependent
from .natural_dof import KEY, DofMap


class MatrixRNatural(MatrixRIndependent):
    name = "matrix-r-natural"

    def __init__(self, system, h, newton, cut=None, independent=(), **kw):
        MatrixRStepper.__init__(self, system, h, newton, cut=cut, **kw)
        nz, mc = self.nz, self.ml            # ml: the rank of Φ_z (module doc, "Redundant constraints")
        self.nind = nz - mc
        self.dof = DofMap(system, self.tree, independent, self.nd, self.Ep)
        if self.dof.d != self.nind:
            raise ModelError(KEY, f"the model has {self.nind} degrees of freedom ({nz} relative coordinates, "
                                  f"{mc} cut-constraint rows) but {self.dof.d} independent coordinates are "
                                  f"listed ({', '.join(independent) or 'none'})")
        self.D = np.eye(nz)
        self.ind_names = list(independent)

    def initial(self, t0, p):
        x0 = MatrixRStepper.initial(self, t0, p)
        xi = self._xi(x0, p)
        L = self._lin(t0, xi, p)
        _, G = self.dof.evaluate(L, xi, p)
        theta = np.vstack([L.Phiz, G.z])
        sv = np.linalg.svd(theta, compute_uv=False)
        if sv[-1] <= 1e-10 * max(sv[0], 1e-300):
            raise ModelError(KEY, f"the independent coordinates ({', '.join(self.ind_names)}) do not determine the "
                                  "configuration at t = 0 ([Φ_z; B] is singular, seed 002 eq. 16); choose others")
        return x0

    # -- the step's equations ---------------------------------------------------------------
    def _hat(self, g):
        """(ĥ, ĥ') from g = (z^i, ż^i, z̈^i) at t_n."""
        h, b, gm = self.h, self.beta, self.gamma
        return g[0] + h * g[1] + (0.5 - b) * h * h * g[2], g[1] + (1 - gm) * h * g[2]

    def _nlin(self, t, xi, p, hat, with_p=False, K=None):
        """_elin's E-rows with the T rows appended, and the Newton matrix J (module doc)."""
        L = self._elin(t, xi, p, with_p, K)
        h, b, gm = self.h, self.beta, self.gamma
        bh, gh = b * h * h, gm * h
        g, G = self.dof.evaluate(L, xi, p, with_p)
        L.g, L.G = g, G
        T1 = (g[0] - hat[0]) / bh - g[2]
        T2 = (g[1] - hat[1]) / gh - g[2]
        L.Ez = np.vstack([L.Ez, G.z / bh - G.ddz, G.dz / gh - G.ddz])
        L.Ezd = np.vstack([L.Ezd, -G.ddzd, G.dzd / gh - G.ddzd])
        L.Ezdd = np.vstack([L.Ezdd, -G.ddzdd, -G.ddzdd])
        L.E = np.r_[L.E, T1, T2]
        El = np.vstack([L.Phiz[:self.ml].T, np.zeros((len(L.E) - self.nz, self.ml))])
        L.J = np.hstack([bh * L.Ez + gh * L.Ezd + L.Ezdd, El, bh * L.Ez, gh * L.Ezd])
        if with_p:
            L.Ep = np.vstack([L.Ep, G.p / bh - G.ddp, G.dp / gh - G.ddp])
        return L

    def _split(self, y):
        nz, ml = self.nz, self.ml
        return y[:nz], y[nz:nz + ml], y[nz + ml:2 * nz + ml], y[2 * nz + ml:]

    def _nresidual(self, t, xi, p, hat):
        """E and T alone (one real kinematics pass, as _eresidual)."""
        nz, h, b, gm = self.nz, self.h, self.beta, self.gamma
        q, v, a = self.tree.kin(xi[0], np.vstack([xi[1], np.eye(nz)]), np.vstack([xi[2], np.zeros((nz, nz))]), p)
        ev = StateEval(self.view, t, q, v[0], a[0], xi[3], p, self.design_map, self.plan)
        g = self.dof.values(q, v[0], a[0], xi, p)
        return np.r_[v[1:] @ ev.residual(), ev.phi_q_dot(a[0]) + ev.gamma(), ev.phi() / (b * h * h),
                     (ev.phi_q_dot(v[0]) + ev.phi_t()) / (gm * h),
                     (g[0] - hat[0]) / (b * h * h) - g[2], (g[1] - hat[1]) / (gm * h) - g[2]]

    # -- forward: MatrixRStepper.step's loop with these hooks ---------------------------------
    def step(self, k, t, x, p):
        """x_{k+1} from x_k (matrix_r.py's modified Newton); first (ĥ, ĥ') from ξ_n."""
        xi0 = self._xi(x, p)
        q, v, a = self.tree.kin(xi0[0], xi0[1], xi0[2], p)
        self._step_hat = self._hat(self.dof.values(q, v, a, xi0, p))
        return super().step(k, t, x, p)

    def _unknowns(self, zdd0, l0):
        """y = (z̈, λ_c, δ_z, δ_ż) at the start of a step: the last step's, corrections 0."""
        return np.r_[zdd0, l0[:self.ml], np.zeros(2 * self.nz)]

    def _newton_lin(self, t, xi, p):
        L = self._nlin(t, xi, p, self._step_hat)
        return L.E, L.J

    def _newton_residual(self, t, xi, p):
        return self._nresidual(t, xi, p, self._step_hat)

    def _update_size(self, dy):
        """βh² max(|Δz̈|, |Δδ_z|)."""
        nz, ml = self.nz, self.ml
        return self.beta * self.h * self.h * max(np.max(np.abs(dy[:nz]), initial=0.0),
                                                 np.max(np.abs(dy[nz + ml:2 * nz + ml]), initial=0.0))

    # -- tangent (direct differentiation) --------------------------------------------------------
    def _dof_tangent(self, G0, dz, dzd, dzdd):
        """d(z^i, ż^i, z̈^i) at t_n from dξ_n (design columns included)."""
        return (G0.z @ dz + G0.p, G0.dz @ dz + G0.dzd @ dzd + G0.dp,
                G0.ddz @ dz + G0.ddzd @ dzd + G0.ddzdd @ dzdd + G0.ddp)

    def tangent_step(self, t, x0, x1, dx0, p):
        h, b, g = self.h, self.beta, self.gamma
        bh, gh = b * h * h, g * h
        xi0, xi1 = self._xi(x0, p), self._xi(x1, p)
        K0 = self._kin_p(x0, xi0, p)
        dz, dzd, dzdd, _ = self._left_inverse(K0, dx0)
        g0, G0 = self.dof.evaluate(K0, xi0, p, with_p=True)
        dhat, dhatd = self._hat(self._dof_tangent(G0, dz, dzd, dzdd))
        dzp = dz + h * dzd + (0.5 - b) * h * h * dzdd
        dzdp = dzd + (1 - g) * h * dzdd
        L = self._nlin(t + h, xi1, p, self._hat(g0), with_p=True, K=self._kin_p(x1, xi1, p))
        rhs = L.Ez @ dzp + L.Ezd @ dzdp + L.Ep
        d = self.dof.d
        rhs[-2 * d:-d] -= dhat / bh
        rhs[-d:] -= dhatd / gh
        dy = Factor(L.J).solve(-rhs)
        dzdd1, dl1, dxz, dxzd = self._split(dy)
        dxi1 = (dzp + bh * (dzdd1 + dxz), dzdp + gh * (dzdd1 + dxzd), dzdd1, dl1)
        return self._present_tangent(t + h, x1, L, dxi1, p)

    # -- discrete adjoint --------------------------------------------------------------------------
    def adjoint_step(self, t, x0, x1, mu1, p):
        h, b, g = self.h, self.beta, self.gamma
        bh, gh = b * h * h, g * h
        xi0, xi1 = self._xi(x0, p), self._xi(x1, p)
        K0 = self._kin_p(x0, xi0, p)
        g0, G0 = self.dof.evaluate(K0, xi0, p, with_p=True)
        L = self._nlin(t + h, xi1, p, self._hat(g0), with_p=True, K=self._kin_p(x1, xi1, p))
        (mz, mzd, mzdd, ml), grad = self._present_adjoint(t + h, x1, L, mu1, p)
        rhs = np.vstack([bh * mz + gh * mzd + mzdd, ml, bh * mz, gh * mzd])
        nu = Factor(L.J).solve_t(rhs)
        mzp = mz - L.Ez.T @ nu
        mzdp = mzd - L.Ezd.T @ nu
        grad = grad - L.Ep.T @ nu
        d = self.dof.d
        mhat, mhatd = nu[-2 * d:-d] / bh, nu[-d:] / gh
        mg0 = mhat
        mg1 = h * mhat + mhatd
        mg2 = (0.5 - b) * h * h * mhat + (1 - g) * h * mhatd
        mz0 = mzp + G0.z.T @ mg0 + G0.dz.T @ mg1 + G0.ddz.T @ mg2
        mzd0 = h * mzp + mzdp + G0.dzd.T @ mg1 + G0.ddzd.T @ mg2
        mzdd0 = (0.5 - b) * h * h * mzp + (1 - g) * h * mzdp + G0.ddzdd.T @ mg2
        grad = grad + G0.p.T @ mg0 + G0.dp.T @ mg1 + G0.ddp.T @ mg2
        mu0, gl = self._left_inverse_adjoint(K0, (mz0, mzd0, mzdd0, np.zeros_like(ml)))
        return mu0, grad + gl
