"""Semi-recursive formulation in relative coordinates (seed 002 §2) with the implicit
trapezoidal rule, and its exact discrete direct and adjoint sensitivities.  Seed 002
§3 differentiates the continuous equations (TLM eq. 48, adjoint eqs. 68–69, then
discretized); here, as everywhere in parmbs, the discrete scheme itself is
differentiated (discretize-then-differentiate), so adjoint = direct to round-off and
both equal the derivative of the computed objective.

Coordinates.  z: one relative coordinate per body (relative/Tree in relative.py), q =
f(z; p) the bodies' COM coordinates, v = R ż, a = R z̈ + Ṙ ż with R = ∂q/∂z (seed 002
eqs. 2–4; R is seed 002's R^v, the velocity transformation of the tree).  Joints
outside the tree and drivers form the cut constraints Φ_c(q, t; p).

Equations of motion: the virtual-power projection of seed 002 eq. (27)–(28) onto
the tree, with the loop closure kept by multipliers λ_c instead of a second
projection R^Φ onto independent coordinates (eqs. 16, 29):

    F₁ = Rᵀ [ r(q, v, a; p) + Φ_c,qᵀ λ_c ] = 0      (r = M a − Q, from the components)
    F₂ = Φ_c(f(z), t) / (βh²)             = 0

For an open tree (no cut) this *is* the Matrix-R ODE RᵀMR z̈ = Rᵀ(Q − M Ṙ ż) (seed 002
eq. 29 with R^Φ = I).  With loops it is the same continuous dynamics written as an
index-3 DAE in z, which needs no independent-coordinate selection and no nested
position problem; the loop constraints hold to the Newton tolerance at every step.
Discretization: trapezoidal rule (β = ¼, γ = ½) on z exactly as
integrators/newmark.py on q; unknowns u = (z̈_{n+1}, λ_{n+1}):

    z_{n+1} = ẑ + βh² z̈_{n+1},  ẑ = z_n + h ż_n + (½−β) h² z̈_n
    ż_{n+1} = ẑ' + γh z̈_{n+1},  ẑ' = ż_n + (1−γ) h z̈_n
    J = [[F₁_z βh² + F₁_ż γh + F₁_z̈, (Φ_z)ᵀ], [Φ_z, 0]],   Φ_z = Φ_c,q R

    F₁_z  = Rᵀ (K R + C ∂v/∂z + M ∂a/∂z) + ∂(Rᵀ w)/∂z |_{w = r + Φ_qᵀλ}
    F₁_ż  = Rᵀ (C R + M ∂(Ṙż)/∂ż),   F₁_z̈ = Rᵀ M R
    F₁_p  = Rᵀ (r_p + K f_p + C v_p + M a_p) + ∂(Rᵀ w)/∂p,  Φ_p = Φ_c,p + Φ_c,q f_p

K, C, M (= ∂/∂q, ∂/∂v, ∂/∂a of r + Φ_qᵀλ), r_p and Φ_c come from the existing
components (model/evaluation.py StateEval on relative.CutView).  The kinematic
Jacobians (f_z = R, ∂v/∂z, ∂a/∂z, ∂a/∂ż, f_p, v_p, a_p, ∂(Rᵀw)/∂p) are
complex-step derivatives of closed-form expressions (relative.Tree.kin): exact to
round-off; ∂(Rᵀw)/∂z is written out (relative.Tree.rtw_z, checked against the complex
step in tests/test_matrix_r.py).  The z-space matrices are dense (the projected mass matrix RᵀMR of a
chain is full) and small (nz = number of bodies): LU by LAPACK.

States seen by Problem.  x = P(ξ; p) with ξ = (z, ż, z̈, λ_c): q = f(z), v = R ż,
a = R z̈ + Ṙ ż, λ = λ_c on the cut rows and the tree joints' reactions on theirs
(recovered from the full residual: Φ_t,qᵀ λ_t = −(r + Φ_c,qᵀ λ_c), consistent because
Rᵀ(r + Φ_c,qᵀλ_c) = 0 and R spans the null space of Φ_t,q).  So objectives, design
variables, reaction integrands and the initial state (integrators/initial.py, whose
tangent and adjoint are used as they are) work unchanged.  ξ is recovered from x by
the tree's closed-form inverse kinematics (z) and R⁺ = (RᵀR)⁻¹Rᵀ (ż, z̈):

    L:  dz = R⁺(dq − f_p),  dż = R⁺(dv − v_z dz − v_p),  dz̈ = R⁺(da − a_z dz − a_ż dż − a_p)

a left inverse of P's linearization on the states P produces, so one step's tangent
is  dx₁ = P_ξ(ξ₁) S(dξ₀) + P_p(ξ₁),  dξ₀ = L(ξ₀)(dx₀ − P_p(ξ₀)),  and the adjoint step
applies the transposes of the same maps in reverse order: adjoint = direct to
round-off.

Drivers.  Every driver is a row of Φ_c(q, t; p) — seed 002 eq. (5), Φ(q, z, ρ, t) = 0
with explicit t — also when it drives a tree joint's own coordinate (a revolute driver
sin(θ − f(t)) on a revolute or cylindrical tree joint, a translation driver d − f(t) on
a translational or cylindrical one: "drivers inside the tree").  At q = f(z) such a row
depends on that joint's coordinate alone (the relative pose of parent and child is ρ(z_j)
and the slide), with θ = ±z_j + const and d = ±z_j + const exactly: it is the rheonomic
row z_j = ±f(t) + const in the component's own form, and the driven coordinate is held
by it, not removed from z.  This is the paper's treatment: the driven coordinate is no
degree of freedom (a nonsingular Φ_z D must contain its column, whose row of Φ_z is its
alone; listing it in ``simulation.matrix_r.independent`` is refused naming the driver,
matrix_r_independent._refuse_prescribed), and f(t) enters the velocity and acceleration
levels through Φ_t (b = −Φ_t, ḟ: eqs. 18–19, 24) and Φ̇_t (c, f̈: eqs. 21–23, 25) — the
rows E₄, E₂ of matrix_r_independent.py and the initial state's velocity and acceleration
stages; this dependent (index-3) form imposes the position row only.  Their parameter
derivatives (f's coefficients as design variables) are the components' Φ_p, Φ_t,p, γ_p,
so the tangent and adjoint steps above are exact with no driver-specific term.
Substituting z_j = f(t) instead would save one unknown and one multiplier per driver; not
done: the row costs O(1) in the dense z-space system and keeps one path for drivers on
cut and on tree joints.  tests/test_matrix_r_driven.py: the driven coordinates follow f
to round-off (positions ≤ 2.3e-16; ż, z̈ relative 3e-14 where imposed), O(h²) agreement
with index-3 (orders 1.996, 1.999), adjoint = direct ≤ 4.3e-13, central FD ≤ 3.8e-9.

Redundant constraints (``simulation.matrix_r.redundant``).  When Φ_c,q has dependent
rows at every configuration (configs/parallelogram.toml), model/redundancy.py finds
them at set-up and drops them from the model.  Seed 002 eq. (17) instead keeps every
row and computes the projections by least squares on Θ_z = [Φ_z; B]:

    (Φ_zᵀΦ_z + BᵀB) [S^Φ  R^Φ] = [Φ_zᵀ  Bᵀ]                                  (eq. 17)

"least-squares" (the default, as the paper) does that: the cut view keeps the dropped
rows (relative.CutView ``full``; mc rows), the multipliers stay on the ml kept rows,
and each step's Newton system — the position, velocity and acceleration rows on all mc
rows, tall with full column rank — is solved in the least-squares sense by economic
QR (``Factor``; the same solution as eq. 17's normal equations without squaring the
condition number).  For the independent-coordinate steppers the position, velocity
and acceleration rows of that system act on the corrections and z̈ through Θ_z (B the
0/1 selection, or h_z with the T rows of matrix_r_natural.py, up to their O(h) z̈^i
terms): eqs. 13, 19 and 21, solved as eq. 17 solves them.
Why the multipliers may stay on the kept rows: when the redundancy holds (Φ_z R^Φ = 0
with eq. 17's R^Φ; the set-up check makes every dropped row a combination of kept
ones), range(Θ_z) = range(Φ_z) × R^d, so the off-diagonal block B (ΘᵀΘ)⁻¹ Φ_zᵀ of the
projector Θ_z Θ_z⁺ vanishes: R^Φᵀ Φ_zᵀ = 0, the null space of R^Φᵀ is range(Φ_zᵀ) =
range(Φ_kᵀ), and eq. 28 R^Φᵀ(M^d z̈ − Q^d) = 0 is E₁ with λ on the kept rows.  It
also follows that eq. 17's R^Φ equals the square inverse's R^Φ of the kept rows
(that one satisfies Φ_z R = 0, B R = I, so (Φ_zᵀΦ_z + BᵀB) R = Bᵀ): "least-squares"
and "drop" have the same solution at every step and differ by Newton's tolerance only
(parallelogram, 20 steps: |Δq| ≤ 3.1e-15, |Δλ| ≤ 1.7e-9 dependent; 2.1e-14 independent).
What "least-squares" adds: every row is enforced, so a dropped row that stops holding —
a design variable that breaks the redundancy (crank C3's length) — is detected
(``_check_redundant``: StepError), where "drop" silently integrates the mechanism
without it.  Sensitivities: at a consistent solution the tangent system J dy = −r is
consistent and J has full column rank, so dy = −J⁺r is the exact derivative; the
adjoint applies (J⁺)ᵀ = Q R⁻ᵀ (``Factor.solve_t``): adjoint = direct to round-off.
``ts-*`` integrators (matrix_r_ode.py) drop the rows.
"""
import warnings

import numpy as np
from scipy.linalg import lu_factor, lu_solve, cho_factor, cho_solve, qr, solve_triangular, LinAlgWarning

from ..model.assembly import SparseOperator
from ..model.component import CS_H
from ..model.evaluation import StateEval, EvalPlan
from ..integrators.newmark import StepError
from ..integrators.one_step import OneStep
from .relative import CutView, make_tree


def _key(x, p):
    return (x[0].tobytes(), x[1].tobytes(), x[2].tobytes(), x[3].tobytes(), p.tobytes())


def dense(op):
    """A LocalOperator (evaluation.py) as a dense array: one bincount over its blocks
    (−1 rows/columns, ground slots, dropped)."""
    N, M = op.shape
    out = np.zeros((N + 1) * (M + 1))
    for rows, cols, B in op.parts:
        r = np.where(rows < 0, N, rows)[:, :, None]
        c = np.where(cols < 0, M, cols)[:, None, :]
        out += np.bincount((r * (M + 1) + c).ravel(), weights=np.broadcast_to(B, r.shape[:2] + c.shape[2:]).ravel(),
                           minlength=out.size)
    return out.reshape(N + 1, M + 1)[:N, :M]


def _solve(J, F):
    """J⁻¹ F by LU (LAPACK through scipy: several times faster than numpy.linalg for
    these small dense systems); None if J is singular."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", LinAlgWarning)
        try:
            x = lu_solve(lu_factor(J, check_finite=False), F, check_finite=False)
        except (LinAlgWarning, ValueError, np.linalg.LinAlgError):
            return None
    return x if np.all(np.isfinite(x)) else None


class Factor:
    """The Newton matrix J of one step, factored: LU when square, economic QR when J is
    tall (the least-squares steps of redundant constraints, seed 002 eq. 17: J has full
    column rank and the equations are consistent at the solution).  ``solve(F)`` is
    J⁻¹F, resp. the least-squares J⁺F = R⁻¹QᵀF; ``solve_t(G)`` the transpose map,
    J⁻ᵀG resp. (J⁺)ᵀG = Q R⁻ᵀ G — so a tangent dy = −J⁺r and its adjoint are exact
    transposes of each other.  Raises ValueError when J is (numerically) singular:
    LAPACK's LinAlgWarning for LU; for QR the smallest |R_ii| below 1e-14 of the largest
    (the reciprocal condition number LU's warning tests, as a triangular bound)."""

    def __init__(self, J):
        self.tall = J.shape[0] > J.shape[1]
        if self.tall:
            self.Q, self.R = qr(J, mode="economic", check_finite=False)
            d = np.abs(np.diag(self.R))
            if not np.all(np.isfinite(self.R)) or d.min(initial=np.inf) <= 1e-14 * d.max(initial=0.0):
                raise ValueError("singular")
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("error", LinAlgWarning)
                try:
                    self.lu = lu_factor(J, check_finite=False)
                except LinAlgWarning:
                    raise ValueError("singular") from None

    def solve(self, F):
        if self.tall:
            return solve_triangular(self.R, self.Q.T @ F, check_finite=False)
        return lu_solve(self.lu, F, check_finite=False)

    def solve_t(self, G):
        if self.tall:
            return self.Q @ solve_triangular(self.R, G, trans="T", check_finite=False)
        return lu_solve(self.lu, G, trans=1, check_finite=False)


class _Lin:
    """Everything one state ξ contributes: kinematics and, with ``dyn``, the residuals
    and Jacobians of the z-space equations (attributes named as in the module doc)."""


class MatrixRStepper(OneStep):
    name = "matrix-r"

    def __init__(self, system, h, newton, cut=None, petsc_options=None, design_map=None, ndesign=0,
                 comm=None, redundant="drop"):
        self.sys, self.h, self.newton = system, h, newton
        self.beta, self.gamma = 0.25, 0.5
        self.tree = make_tree(system, cut)
        # redundant = "least-squares": the cut rows dropped at set-up are enforced too
        # (module doc, "Redundant constraints"); mc rows of Φ_c, ml ≤ mc multipliers
        self.view = CutView(system, self.tree, full=(redundant == "least-squares"))
        self.ls = self.view.dropped > 0
        self.nz, self.mc = self.tree.nz, self.view.m
        self.ml = self.mc - self.view.dropped
        self.design_map = design_map if design_map is not None else -np.ones(len(system.p), np.int64)
        self.nd = ndesign
        self.plan = EvalPlan(self.view, self.design_map)
        self.plan_full = EvalPlan(system, self.design_map)
        self.Ep = np.zeros((ndesign, len(system.p)))      # design column j -> its entries of p
        for i, j in enumerate(self.design_map):
            if j >= 0:
                self.Ep[j, i] = 1.0
        self.rows_cut, self.rows_tree = self.tree.rows_cut, self.tree.rows_tree
        # the full model's saddle operator, for InitialState's acceleration stage (as NewmarkFamily)
        n, m = system.n, system.m
        probe = StateEval(system, 0.0, system.q_guess, np.zeros(n), np.zeros(n), np.zeros(m), system.p)
        ci = probe.constraint_index(n)
        diag = np.arange(n, n + m).reshape(-1, 1)
        blocks = (probe.force_index() + [(r, r) for r, _ in ci] + [(c, r) for r, c in ci] + ci + [(diag, diag)])
        op = SparseOperator(n + m, blocks, comm=comm, options=petsc_options)
        from ..integrators.initial import InitialState
        self.init = InitialState(system, op, self.design_map, ndesign, newton, comm=comm)
        self._memo = {}
        # only these integrands read λ: without them the tree reactions' tangent is not
        # needed by any consumer of the direct sweep (it is left zero), see _present_tangent
        self.lam_read = any(o.integrand in ("reaction_sq", "python") for o in system.config.objectives)

    # -- kinematics of one state ------------------------------------------------------------
    def _kin(self, xi, p, with_p=False):
        """q, v, a at ξ and their exact Jacobians, from one batched complex-step call of
        Tree.kin: rows z + ih e_j (→ R = f_z, v_z, a_z) and ż + ih e_j (→ a_ż); with
        ``with_p`` the design directions (f_p, v_p, a_p) and, at velocity level with
        ż = e_k, ∂R_k/∂ρ_j (for ∂(Rᵀw)/∂ρ).  ∂(Rᵀw)/∂z is Tree.rtw_z, in closed form."""
        z, zd, zdd = xi[0], xi[1], xi[2]
        nz, n = self.nz, self.sys.n
        I, ih = np.eye(nz), 1j * CS_H
        ones = np.ones((nz, 1))
        q, v, a = self.tree.kin(np.vstack([z + ih * I, ones * z]), np.vstack([ones * zd, zd + ih * I]),
                                zdd, p)
        K = _Lin()
        K.q, K.v, K.a = q[0].real.copy(), v[0].real.copy(), a[0].real.copy()
        A = slice(0, nz)
        K.R = np.ascontiguousarray(q[A].imag.T / CS_H)
        K.Vz, K.Az = v[A].imag.T / CS_H, a[A].imag.T / CS_H
        K.Azd = a[nz:].imag.T / CS_H
        K.RtR = None
        if with_p:
            nd = self.nd
            if nd:
                Pc = p + ih * self.Ep
                qp, vp, ap = self.tree.kin(z, zd, zdd, Pc)
                K.Qp, K.Vp, K.Ap = (x.imag.T / CS_H for x in (qp, vp, ap))
                _, vRp = self.tree.kin(z, I, None, Pc[:, None, :], order=1)
                K.dRp = vRp.imag / CS_H                             # [j, k] = ∂R_k/∂ρ_j
            else:
                K.Qp = K.Vp = K.Ap = np.zeros((n, 0))
                K.dRp = np.zeros((0, nz, n))
        return K

    def _chol(self, K):
        if K.RtR is None:
            K.RtR = cho_factor(K.R.T @ K.R)
        return K.RtR

    def _lin(self, t, xi, p, with_p=False, K=None):
        """Residuals (F₁, Φ_c) and their Jacobians at ξ (module doc)."""
        L = K or self._kin(xi, p, with_p)
        lam = xi[3]
        ev = StateEval(self.view, t, L.q, L.v, L.a, lam, p, self.design_map, self.plan)
        L.ev = ev
        n = self.sys.n
        w = ev.residual()
        R = L.R
        L.F1 = R.T @ w
        L.phi = ev.phi()
        Kd, Cd, Md = dense(ev.K()), dense(ev.Cv()), dense(ev.Ma())
        G = dense(ev.G())
        L.Kd, L.Cd, L.Md, L.Gc = Kd, Cd, Md, G
        MR = Md @ R
        L.F1_z = R.T @ (Kd @ R + Cd @ L.Vz + Md @ L.Az) + self.tree.rtw_z(xi[0], p, w)
        L.F1_zd = R.T @ (Cd @ R + Md @ L.Azd)
        L.F1_zdd = R.T @ MR
        L.Phiz = G @ R
        if with_p:
            Rp = ev.R_p(self.nd) @ np.eye(self.nd) if self.nd else np.zeros((n, 0))
            L.F1_p = R.T @ (Rp + Kd @ L.Qp + Cd @ L.Vp + Md @ L.Ap) + np.einsum("jkn,n->kj", L.dRp, w)
            L.Phi_p = ((ev.phi_p(self.nd) @ np.eye(self.nd) if self.nd else np.zeros((self.mc, 0)))
                       + G @ L.Qp)
        h, b, g = self.h, self.beta, self.gamma
        J = np.block([[L.F1_z * (b * h * h) + L.F1_zd * (g * h) + L.F1_zdd, L.Phiz[:self.ml].T],
                      [L.Phiz, np.zeros((self.mc, self.ml))]])
        L.J = J
        return L

    # -- the presentation x = P(ξ) and its left inverse -----------------------------------------
    def _tree_lambda(self, t, K, lam_c, p):
        """λ on every model row: λ_c on the cut rows, tree reactions from
        Φ_t,qᵀ λ_t = −(r + Φ_c,qᵀ λ_c) (least squares on a consistent system)."""
        m = self.sys.m
        lam = np.zeros(m)
        lam[self.rows_cut] = lam_c
        if len(self.rows_tree):
            ev = StateEval(self.sys, t, K.q, K.v, K.a, lam, p, self.design_map, self.plan_full)
            Gt = dense(ev.G())[self.rows_tree]
            lam[self.rows_tree] = -cho_solve(cho_factor(Gt @ Gt.T), Gt @ ev.residual())
        return lam

    def _present(self, t, xi, p, K=None):
        if K is None:                       # the state alone: one real kinematics pass, no Jacobians
            K = _Lin()
            K.q, K.v, K.a = self.tree.kin(xi[0], xi[1], xi[2], p)
        return (K.q, K.v, K.a, self._tree_lambda(t, K, xi[3][:self.ml], p))

    def _pad(self, lam):
        """λ on the cut view's mc rows from the ml multipliers (0 on the rows dropped at set-up)."""
        return lam if self.ml == self.mc else np.r_[lam, np.zeros(self.mc - self.ml)]

    def _full_eval(self, t, x, p):
        """Full-model StateEval at x and the tree-row map W = (G_t G_tᵀ)⁻¹ G_t."""
        ev = StateEval(self.sys, t, *x, p, self.design_map, self.plan_full)
        G = dense(ev.G())
        Gt = G[self.rows_tree]
        W = cho_solve(cho_factor(Gt @ Gt.T), Gt)
        return ev, G, W

    def _present_tangent(self, t, x, K, dxi, p):
        """dx = P_ξ dξ + P_p (each (·, nd)).  The tree rows of dλ are computed only when
        an objective reads λ (``lam_read``): nothing else uses them (the left inverse L
        reads the cut rows only), and they cost a full-model evaluation per step."""
        dz, dzd, dzdd, dl = dxi
        dq = K.R @ dz + K.Qp
        dv = K.Vz @ dz + K.R @ dzd + K.Vp
        da = K.Az @ dz + K.Azd @ dzd + K.R @ dzdd + K.Ap
        dlam = np.zeros((self.sys.m, dz.shape[1]))
        dlam[self.rows_cut] = dl
        if len(self.rows_tree) and self.lam_read:
            # differentiate r + Φ_qᵀλ = 0 (full model): G_tᵀ dλ_t = −(K dq + C dv + M da + G_cᵀ dλ_c + r_p)
            ev, G, W = self._full_eval(t, x, p)
            y = ev.K() @ dq + ev.Cv() @ dv + ev.Ma() @ da + G.T @ dlam + ev.R_p(self.nd) @ np.eye(self.nd)
            dlam[self.rows_tree] = -W @ y
        return dq, dv, da, dlam

    def _present_adjoint(self, t, x, K, mu, p):
        """(P_ξᵀ μ, P_pᵀ μ) for μ on x (each (·, k))."""
        mq, mv, ma, ml = (np.array(m, dtype=float) for m in mu)
        mlc = ml[self.rows_cut].copy()
        grad = 0.0
        if len(self.rows_tree) and np.any(ml[self.rows_tree]):     # (zero unless ψ reads tree reactions)
            ev, G, W = self._full_eval(t, x, p)
            yb = -W.T @ ml[self.rows_tree]                 # adjoint of y ↦ −W y
            mq += ev.K().T @ yb
            mv += ev.Cv().T @ yb
            ma += ev.Ma().T @ yb
            mlc += (G @ yb)[self.rows_cut]
            grad = ev.R_p(self.nd).T @ yb
        mz = K.R.T @ mq + K.Vz.T @ mv + K.Az.T @ ma
        mzd = K.R.T @ mv + K.Azd.T @ ma
        mzdd = K.R.T @ ma
        grad = grad + K.Qp.T @ mq + K.Vp.T @ mv + K.Ap.T @ ma
        return (mz, mzd, mzdd, mlc), grad

    def _pinvT(self, K, y):
        return K.R @ cho_solve(self._chol(K), y)

    def _left_inverse(self, K, dx):
        dq, dv, da, dl = dx
        dz = cho_solve(self._chol(K), K.R.T @ (dq - K.Qp))
        dzd = cho_solve(self._chol(K), K.R.T @ (dv - K.Vz @ dz - K.Vp))
        dzdd = cho_solve(self._chol(K), K.R.T @ (da - K.Az @ dz - K.Azd @ dzd - K.Ap))
        return dz, dzd, dzdd, dl[self.rows_cut]

    def _left_inverse_adjoint(self, K, mxi):
        mz, mzd, mzdd, mlc = mxi
        ma = self._pinvT(K, mzdd)
        mv = self._pinvT(K, mzd - K.Azd.T @ ma)
        mq = self._pinvT(K, mz - K.Az.T @ ma - K.Vz.T @ mv)
        ml = np.zeros((self.sys.m, mz.shape[1]))
        ml[self.rows_cut] = mlc
        grad = -(K.Qp.T @ mq + K.Vp.T @ mv + K.Ap.T @ ma)
        return (mq, mv, ma, ml), grad

    def _xi(self, x, p):
        """ξ = (z, ż, z̈, λ_c) of a presented state (remembered for the last states)."""
        key = _key(x, p)
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        q, v, a, lam = x
        z = self.tree.positions(q, p)
        R = self.tree.jacobian(z, p)
        c = cho_factor(R.T @ R)
        zd = cho_solve(c, R.T @ v)
        zdd = cho_solve(c, R.T @ (a - self.tree.kin(z, zd, np.zeros_like(zd), p)[2]))
        xi = (z, zd, zdd, self._pad(np.array(lam[self.rows_cut], dtype=float)))
        self._remember(key, xi)
        return xi

    def _kin_p(self, x, xi, p):
        """_kin(ξ, with_p) of a presented state, remembered: a direct sweep meets each
        state as x₁ of one step and x₀ of the next, the adjoint sweep the other way."""
        key = ("kin",) + _key(x, p)
        K = self._memo.get(key)
        if K is None:
            K = self._kin(xi, p, with_p=True)
            self._remember(key, K)
        return K

    def _remember(self, key, xi):
        if len(self._memo) > 8:
            self._memo.pop(next(iter(self._memo)))
        self._memo[key] = xi

    # -- forward ---------------------------------------------------------------------------------
    def initial(self, t0, p):
        if np.iscomplexobj(p):
            raise TypeError("matrix-r runs in real arithmetic (use --method adjoint, direct or fd)")
        return self.init.solve(t0, p)

    def _residual(self, t, xi, p):
        """(F₁, Φ_c/(βh²)) alone: real kinematics, R and the component residuals."""
        nz = self.nz
        # one pass: row 0 the state, rows 1.. unit ż (v = R e_k: the columns of R)
        q, v, a = self.tree.kin(xi[0], np.vstack([xi[1], np.eye(nz)]), np.vstack([xi[2], np.zeros((nz, nz))]), p)
        ev = StateEval(self.view, t, q, v[0], a[0], xi[3], p, self.design_map, self.plan)   # q: no ż axis
        return np.r_[v[1:] @ ev.residual(), ev.phi() / (self.beta * self.h ** 2)]

    # -- the Newton hooks (matrix_r_independent.py adds its unknowns) -----------------------------
    def _unknowns(self, zdd0, l0):
        """Newton's unknowns y at the start of a step: (z̈, λ_c) = the last step's."""
        return np.r_[zdd0, l0[:self.ml]]

    def _states(self, zp, zdp, y):
        """ξ_{n+1} = (z, ż, z̈, λ_c) from the predictors and y = (z̈, λ_c)."""
        h, b, g, nz = self.h, self.beta, self.gamma, self.nz
        zdd = y[:nz]
        return (zp + b * h * h * zdd, zdp + g * h * zdd, zdd, self._pad(y[nz:]))

    def _newton_lin(self, t, xi, p):
        """(residual, exact Newton matrix) at ξ: (F₁, Φ_c/(βh²)) and J."""
        h, b = self.h, self.beta
        L = self._lin(t, xi, p)
        return np.r_[L.F1, L.phi / (b * h * h)], L.J

    def _newton_residual(self, t, xi, p):
        return self._residual(t, xi, p)

    def _update_size(self, dy):
        """The position update βh² max|Δz̈| held against Newton's tolerance."""
        return self.beta * self.h * self.h * np.max(np.abs(dy[:self.nz]), initial=0.0)

    def _singular_matrix(self):
        return "singular Newton matrix"

    def step(self, k, t, x, p):
        """x_{k+1} from x_k at t = t_k; returns (x_{k+1}, Newton iterations).

        Modified Newton: the (exact) matrix J is built and factored at the first
        iterate and rebuilt only when an update shrinks by less than a factor 4; the
        other iterations evaluate the residual alone (one real kinematics pass and the
        components' residuals), which costs a fraction of J's complex-step Jacobians.
        The unknowns, residual and update size are the hooks above, so the loop is
        one for both matrix-R formulations."""
        h, b, g = self.h, self.beta, self.gamma
        t1 = t + h
        z0, zd0, zdd0, l0 = self._xi(x, p)
        zp = z0 + h * zd0 + (0.5 - b) * h * h * zdd0
        zdp = zd0 + (1 - g) * h * zdd0
        y = self._unknowns(zdd0, l0)
        tol = self.newton
        dz, last, lu = np.inf, np.inf, None
        for it in range(1, tol.max_it + 1):
            xi = self._states(zp, zdp, y)
            if lu is None:
                F, J = self._newton_lin(t1, xi, p)
                try:
                    lu = Factor(J)
                except ValueError:
                    raise StepError(f"step {k + 1} (t = {t1:.6g}): {self._singular_matrix()}") from None
            else:
                F = self._newton_residual(t1, xi, p)
            dy = lu.solve(-F)
            if not np.all(np.isfinite(dy)):
                dz = np.inf
                break
            y = y + dy
            dz = self._update_size(dy)
            if dz <= tol.atol + tol.rtol * np.max(np.abs(xi[0]), initial=0.0):
                xi1 = self._states(zp, zdp, y)
                if self.ls:
                    self._check_redundant(k, t1, xi1, p)
                x1 = self._present(t1, xi1, p)
                self._remember(_key(x1, p), xi1)
                return x1, it
            if dz > 0.25 * last:
                lu = None                      # slow contraction: rebuild J at the next iterate
            last = dz
        raise StepError(f"step {k + 1} (t = {t1:.6g}): Newton did not converge in {tol.max_it} "
                        f"iterations (last position update {dz:.2e})")

    def _check_redundant(self, k, t, xi, p):
        """The rows dropped at set-up at the converged state of a least-squares step: a
        consistent redundant row holds to Newton's tolerance (|Φ| ≲ |Φ_z| δz, lever arms
        |Φ_z| ≲ 1 + |q|, δz ≤ atol + rtol |z|; factor 100 of margin, and redundancy.py's
        set-up bound 1e-10 (1 + |q|) as a floor).  A larger value means the redundant
        joints contradict the others (a design that breaks the redundancy): the least-
        squares step then has no exact solution and its derivatives would not be exact."""
        q = self.tree.kin(xi[0], None, None, p, order=0)
        zero = np.zeros(self.sys.n)
        phi = StateEval(self.view, t, q, zero, zero, np.zeros(self.mc), p, self.design_map, self.plan).phi()
        tol = self.newton
        sq = 1.0 + np.max(np.abs(q))
        bound = 1e-10 * sq + 100.0 * sq * (tol.atol + tol.rtol * np.max(np.abs(xi[0]), initial=0.0))
        bad = np.max(np.abs(phi[self.ml:]), initial=0.0)
        if bad > bound:
            names = ", ".join(self.sys.redundancy.dropped_names)
            raise StepError(f"step {k + 1} (t = {t:.6g}): the redundant constraint rows ({names}) are violated "
                            f"(|Φ| = {bad:.2e} > {bound:.1e}): the joints contradict each other (a design that "
                            "breaks the redundancy?); simulation.matrix_r.redundant = \"drop\" integrates the "
                            "mechanism without those rows")

    # -- tangent (direct differentiation) --------------------------------------------------------
    def tangent_step(self, t, x0, x1, dx0, p):
        """dx_{k+1}/dρ from dx_k/dρ (four (·, nd) blocks)."""
        h, b, g, nz = self.h, self.beta, self.gamma, self.nz
        xi0, xi1 = self._xi(x0, p), self._xi(x1, p)
        K0 = self._kin_p(x0, xi0, p)
        dz, dzd, dzdd, dl = self._left_inverse(K0, dx0)
        dzp = dz + h * dzd + (0.5 - b) * h * h * dzdd
        dzdp = dzd + (1 - g) * h * dzdd
        L = self._lin(t + h, xi1, p, with_p=True, K=self._kin_p(x1, xi1, p))
        r1 = L.F1_z @ dzp + L.F1_zd @ dzdp + L.F1_p
        r2 = (L.Phiz @ dzp + L.Phi_p) / (b * h * h)
        du = Factor(L.J).solve(-np.vstack([r1, r2]))
        dzdd1, dl1 = du[:nz], du[nz:]
        dxi1 = (dzp + b * h * h * dzdd1, dzdp + g * h * dzdd1, dzdd1, dl1)
        return self._present_tangent(t + h, x1, L, dxi1, p)

    # -- discrete adjoint --------------------------------------------------------------------------
    def adjoint_step(self, t, x0, x1, mu1, p):
        """(μ_k, ∇ψ increment) from μ_{k+1} (blocks on x_{k+1}, one column per objective)."""
        h, b, g, nz = self.h, self.beta, self.gamma, self.nz
        xi0, xi1 = self._xi(x0, p), self._xi(x1, p)
        L = self._lin(t + h, xi1, p, with_p=True, K=self._kin_p(x1, xi1, p))
        (mz, mzd, mzdd, ml), grad = self._present_adjoint(t + h, x1, L, mu1, p)
        nu = Factor(L.J).solve_t(np.vstack([b * h * h * mz + g * h * mzd + mzdd, ml]))
        nu1, nu2 = nu[:nz], nu[nz:] / (b * h * h)
        sq = L.F1_z.T @ nu1 + L.Phiz.T @ nu2
        sv = L.F1_zd.T @ nu1
        mz0 = mz - sq
        mzd0 = h * mz0 + mzd - sv
        mzdd0 = (0.5 - b) * h * h * mz0 + (1 - g) * h * (mzd - sv)
        grad = grad - (L.F1_p.T @ nu1 + L.Phi_p.T @ nu2)
        K0 = self._kin_p(x0, xi0, p)
        mu0, g0 = self._left_inverse_adjoint(K0, (mz0, mzd0, mzdd0, np.zeros_like(ml)))
        return mu0, grad + g0


def make_matrix_r_stepper(system, sim, design_map=None, ndesign=0, comm=None):
    """The matrix-r stepper (trapezoidal rule; the only integrator this formulation takes)."""
    if sim.integrator != "trapezoidal":
        raise ValueError(f"matrix-r runs the trapezoidal rule, not {sim.integrator!r}")
    return MatrixRStepper(system, sim.dt, sim.newton, cut=sim.matrix_r.cut, petsc_options=sim.petsc_options,
                          design_map=design_map, ndesign=ndesign, comm=comm, redundant=sim.matrix_r.redundant)
