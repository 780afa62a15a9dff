"""Semi-recursive Matrix R in *independent* relative coordinates (seed 002 §2.2–2.3,
eqs. 9, 16, 24–29) with the trapezoidal rule: forward, direct and adjoint steps.

``simulation.matrix_r.coordinates = "independent"``.  Relative coordinates z, the
tree kinematics q = f(z; p), v = R ż, a = R z̈ + Ṙ ż and the cut constraints Φ_c are
those of matrix_r.py / relative.py.  The paper's second projection: a 0/1 selection B
picks d = nz − m_c independent relative coordinates z^i = B z (eq. 9), the dependent
ones follow from the loop closure Φ_c(f(z), t) = 0 (eq. 10), ż = R^Φ ż^i + S^Φ b
(eq. 24), and the dynamics are the ODE in z^i

    (R^Φᵀ M^d R^Φ) z̈^i = R^Φᵀ (Q^d − M^d (S^Φ c − R^Φ Ḃ ż)),                 (eq. 29)
    M^d = Rᵀ M R,   Q^d = Rᵀ (Q − M Ṙ ż)                                      (eq. 27)

Discretization: the trapezoidal rule on that ODE, written as Maggi's scheme
(maggi.py, seed 004 §2.5) in relative coordinates — one dense Newton system per step,
unknowns y = (z̈_{n+1}, λ_c, ξ_z, ξ_ż), D = the nz × m_c selection of the dependent
coordinates (B D = 0):

    z_{n+1} = ẑ  + βh² (z̈_{n+1} + D ξ_z),   ẑ  = z_n + h ż_n + (½−β) h² z̈_n
    ż_{n+1} = ẑ' + γh  (z̈_{n+1} + D ξ_ż),   ẑ' = ż_n + (1−γ) h z̈_n
    E₁ = Rᵀ [ r(q, v, a; p) + Φ_c,qᵀ λ_c ] = 0        (nz)   eq. 28 with λ_c:
    E₂ = Φ_c,q a + γ_c(q, v)             = 0        (m_c)  null(R^Φᵀ) = range(Φ_zᵀ)
    E₃ = Φ_c(q, t) / (βh²)               = 0        (m_c)  positions (eq. 10)
    E₄ = (Φ_c,q v + Φ_c,t) / (γh)        = 0        (m_c)  velocities (eq. 24)

with (q, v, a) = kin(z, ż, z̈) (so Φ_c,q a + γ_c = Φ̈_c, the acceleration relation
behind eq. 25).  B·(first two lines) is exactly the trapezoidal rule on z^i with
z̈^i = B z̈; E₃, E₄ put z, ż on the constraint manifold (the dependent coordinates as
functions of z^i); E₁, E₂ are eq. 29 with the multipliers kept instead of forming
R^Φ: R^Φᵀ E₁ = 0 is eq. 28, and E₂ with B z̈ = z̈^i is eq. 25.  The ξ corrections move
the dependent coordinates only.  The matrix J = ∂E/∂y is dense, (nz + 3 m_c)², LU by
LAPACK (modified Newton, as matrix_r.py: rebuilt only when the iteration contracts
slowly).

Jacobians at fixed y (E_z, E_ż, E_z̈, E_λ, E_p): E₁'s and Φ_z are matrix_r.py's
(_lin); E₂ and E₄ add, with W_a = ∂(Φ_q a)/∂q + γ_q and W_v = ∂(Φ_q v)/∂q + Φ_t,q
from the components,

    E₂_z = W_a R + γ_v V_z + Φ_q A_z,  E₂_ż = γ_v R + Φ_q A_ż,  E₂_z̈ = Φ_q R
    E₄_z = W_v R + Φ_q V_z,            E₄_ż = Φ_q R
    E₂_p = ∂(Φ_q a)/∂p + γ_p + W_a f_p + γ_v v_p + Φ_q a_p,   E₄_p likewise.

Direct step (DDM of the discrete scheme, the discrete counterpart of seed 002 eq. 48):
J dy = −(E_z dẑ + E_ż dẑ' + E_p).  Adjoint step (discrete counterpart of eqs. 68–69):
its exact transpose, Jᵀ ν = (∂ξ_{n+1}/∂y)ᵀ μ_{n+1}, μ_ẑ = μ_z − E_zᵀν,
μ_ẑ' = μ_ż − E_żᵀν, ∇ψ −= E_pᵀν.  States are presented to Problem as x = (q, v, a, λ)
in absolute coordinates by matrix_r.py's map P and its left inverse, so adjoint =
direct to round-off.

Independent coordinates (``simulation.matrix_r.independent``): tree joint names, the
joint naming the relative coordinate of the body it attaches to its parent.  Default:
at the initial state, greedy column pivoting (Gram–Schmidt with the largest remaining
column norm) on Φ_z = Φ_c,q R picks the m_c best-conditioned columns as dependent, the
rest are z^i; chosen once per stepper, so every run of a Problem (FD included) uses
the same B (unless ``reselect``, below).  Φ_z D must be nonsingular at t = 0
(otherwise ModelError naming the key; a driver on a tree joint whose coordinate is
listed is named: its coordinate is
prescribed, matrix_r.py "Drivers").  With drivers, E₄ carries Φ_c,t (ḟ) and E₂ the
driver's γ (f̈), so driven tree coordinates follow f, ḟ, f̈ at every step.

Re-selection (``simulation.matrix_r.reselect = τ``, off by default).  A fixed z^i
fails where it has a turning point along the motion while the mechanism moves on (a
fold of the coordinate on the configuration path, not a singularity of the mechanism:
Φ_z keeps full rank): Φ_z D is singular there, R^Φ unbounded, the dependent
coordinates are square-root functions of z^i, and the trapezoidal rule on z^i is not
dt-converged across it (configs/spatial-rsur-natural.toml: z^i = ball-rx folds at
t = 0.486 s, where σ_min(Φ_z D) drops from 0.24 to 3.5e-4 while σ_min(Φ_z) stays
0.147; ∇ψ changed 11–27 % between dt and dt/2 at 0.6 s).  With τ, the step that
starts at x_k uses the initial (or listed) choice while σ_min(Φ_z D) ≥ τ σ_min(Φ_z D*),
and D* otherwise; D* the largest-volume choice at x_k (``volume_choice``: |det(Φ_z D)| is
proportional to the minor of the null-space basis on the independent rows, so pivoting
on that basis; for one degree of freedom the coordinate that moves most along the
motion.  Column pivoting on Φ_z, the t0 default, picks good *dependent* columns, not the
best independent one: at 0.5725 s on the file it offers cross-1, σ_min(Φ_z D) = 0.109,
where pivot_c gives 0.142).  Each step is the scheme above
with its own D (ẑ, ẑ' are formed from all of z, ż, z̈, so nothing else changes), the
choice is a function of x_k alone (``_reselect_at``, remembered with the state), and
tangent_step / adjoint_step make the same choice from the same x_k: the discrete map
is differentiated exactly (adjoint = direct), and it is piecewise smooth in ρ (a
perturbation that moves a switch by one step is a jump of O(h³) in that step).

Drift: none beyond Newton's tolerance.  E₃, E₄ hold at every step:
|Φ_c(q_k)| ≤ βh² |E₃| and |Φ̇_c| ≤ γh |E₄| at the converged iterate; with newton
rtol = atol = 1e-12 tests/test_matrix_r_independent.py checks max_k |Φ| ≤ 1e-10 and
max_k |Φ_q v + Φ_t| ≤ 1e-9 on every row of the model.
"""
import warnings

import numpy as np

from ..model.evaluation import StateEval
from ..model.system import ModelError
from .matrix_r import MatrixRStepper, Factor, dense, _key

KEY = "simulation.matrix_r.independent"

#: the fold monitor's threshold on σ_min(Φ_z D) / σ_min(Φ_z) (module doc, "Re-selection")
FOLD_WARN = 0.05


def pivot_columns(A, k):
    """Indices of k columns of A chosen by greedy column pivoting (Gram–Schmidt,
    largest remaining norm; ties within 1e-8 go to the lowest index), and the
    smallest pivot norm relative to the largest column norm."""
    A = np.array(A, dtype=float)
    scale = max(np.max(np.linalg.norm(A, axis=0), initial=0.0), 1e-300)
    picked, smallest = [], np.inf
    for _ in range(k):
        nrm = np.linalg.norm(A, axis=0)
        nrm[picked] = -1.0
        j = int(np.flatnonzero(nrm >= nrm.max() * (1 - 1e-8))[0])
        smallest = min(smallest, nrm[j] / scale)
        picked.append(j)
        u = A[:, j] / max(nrm[j], 1e-300)
        A = A - np.outer(u, u @ A)
    return picked, smallest


def volume_choice(Phiz, d):
    """d independent columns of the full-rank Φ_z (m × (m + d)) for which |det(Φ_z D)| is
    large: by the complementary-minor identity (Jacobi) |det(Φ_z D)| ∝ |det(N_ind)|, N an
    orthonormal basis of null(Φ_z) and N_ind its rows of the independent columns, so
    greedy column pivoting on Nᵀ (the coordinates that move most along the admissible
    motions).  For d = 1 it is argmax |n_i| exactly."""
    if d == 0:
        return []
    N = np.linalg.svd(Phiz)[2][Phiz.shape[0]:].T
    return pivot_columns(N.T, d)[0]


def smin_dependent(Phiz, ind):
    """σ_min(Φ_z D), D the columns not in ``ind``."""
    dep = np.setdiff1d(np.arange(Phiz.shape[1]), ind)
    return np.linalg.svd(Phiz[:, dep], compute_uv=False)[-1] if len(dep) else np.inf


class MatrixRIndependent(MatrixRStepper):
    name = "matrix-r-independent"

    # class defaults: matrix_r_natural.MatrixRNatural (natural coordinates as DOF) skips
    # this __init__; its steps then neither re-select nor monitor (its _newton_lin
    # leaves _phiz None)
    reselect = None
    _base = None
    _phiz = None                              # Φ_z of the step's first Newton matrix (the fold monitor)
    _warned = False                           # the monitor warns once per stepper

    def __init__(self, system, h, newton, cut=None, independent=None, reselect=None, **kw):
        super().__init__(system, h, newton, cut=cut, **kw)
        self.reselect = reselect
        nz, mc = self.nz, self.ml            # ml: the rank of Φ_z (redundant rows dropped or least squares)
        self.nind = nz - mc
        if self.nind < 0:
            raise ModelError("simulation.matrix_r.coordinates",
                             f"the tree has {nz} relative coordinates but {mc} cut-constraint rows: "
                             "redundant constraints have no independent coordinates")
        self.ind = None
        if independent is not None:
            names = list(independent)
            joints = self.tree.tree_joints
            bad = [nm for nm in names if nm not in joints]
            if bad:
                raise ModelError(KEY, f"{bad[0]!r} is not a joint of the relative-coordinate tree (tree joints: "
                                      f"{', '.join(joints)}; cut: {', '.join(self.tree.cut_joints) or 'none'})")
            if len(names) != self.nind:
                raise ModelError(KEY, f"the model has {self.nind} degrees of freedom ({nz} relative coordinates, "
                                      f"{mc} cut-constraint rows) but {len(names)} independent coordinates are "
                                      f"listed ({', '.join(names) or 'none'})")
            self._set_selection(sorted(joints.index(nm) for nm in names))

    def _set_selection(self, ind):
        self.ind = np.array(ind, dtype=np.int64)
        self.dep = np.setdiff1d(np.arange(self.nz), self.ind)
        self.D = np.eye(self.nz)[:, self.dep]
        self.ind_names = [self.tree.tree_joints[i] for i in self.ind]

    # -- forward ---------------------------------------------------------------------------
    def initial(self, t0, p):
        x0 = super().initial(t0, p)
        xi = self._xi(x0, p)
        L = self._lin(t0, xi, p)
        if self._base is None:
            if self.ind is None:
                dep, _ = pivot_columns(L.Phiz, self.ml)
                self._set_selection(np.setdiff1d(np.arange(self.nz), dep))
            self._base = self.ind.copy()
        self._set_selection(self._base)
        PD = L.Phiz[:, self.dep]
        self._refuse_prescribed(L.Phiz)
        sv = np.linalg.svd(PD, compute_uv=False) if self.mc else np.ones(1)
        if self.mc and sv[-1] <= 1e-10 * max(sv[0], np.max(np.abs(L.Phiz)), 1e-300):
            raise ModelError(KEY, f"the independent coordinates ({', '.join(self.ind_names) or 'none'}) do not "
                                  "determine the configuration at t = 0 (Φ_z D is singular, seed 002 eq. 10); "
                                  "choose others")
        return x0

    def _reselect_at(self, t, x, p):
        """The selection for the step that starts at the presented state x (module doc,
        "Re-selection"): the base one unless σ_min(Φ_z D) falls below ``reselect`` times
        that of the largest-volume choice at x (``volume_choice``), then that one.  A
        function of x alone."""
        if self.reselect is None:
            return
        key = ("sel",) + _key(x, p)
        ind = self._memo.get(key)
        if ind is None:
            xi = self._xi(x, p)
            R = self.tree.jacobian(xi[0], p)
            ev = StateEval(self.view, t, x[0], x[1], x[2], xi[3], p, self.design_map, self.plan)
            Phiz = (dense(ev.G()) @ R)[:self.ml]
            best = np.sort(volume_choice(Phiz, self.nind))
            s_base, s_best = (smin_dependent(Phiz, i) for i in (self._base, best))
            ind = self._base if s_base >= self.reselect * s_best else best
            self._remember(key, ind)
        if not np.array_equal(ind, self.ind):
            self._set_selection(ind)

    def step(self, k, t, x, p):
        self._reselect_at(t, x, p)
        x1, it = super().step(k, t, x, p)
        if not self._warned and self.mc and self._phiz is not None:
            self._monitor(k, t + self.h)
        return x1, it

    def _monitor(self, k, t):
        """Warn (once) when the step's z^i nears a fold: σ_min(Φ_z D) < FOLD_WARN σ_min(Φ_z)."""
        P = self._phiz[:self.ml]
        s = np.linalg.svd(P, compute_uv=False)[-1]
        sD = np.linalg.svd(P[:, self.dep], compute_uv=False)[-1]
        if sD < FOLD_WARN * s:
            self._warned = True
            fix = ("simulation.matrix_r.reselect = 0.5 re-chooses them where they degrade, or list others in "
                   "simulation.matrix_r.independent") if self.reselect is None else \
                  "every choice is this poorly conditioned here (a singular configuration of the mechanism?)"
            warnings.warn(f"step {k + 1} (t = {t:.6g}): the independent coordinate(s) "
                          f"{', '.join(self.ind_names) or 'none'} are near a turning point along the motion: "
                          f"σ_min(Φ_z D) = {sD:.2e} is {sD / s:.2g} x σ_min(Φ_z) = {s:.2e} (the projection R^Φ "
                          f"grows as its inverse; the run past it is not dt-converged); {fix}",
                          RuntimeWarning, stacklevel=2)

    def _refuse_prescribed(self, Phiz):
        """A cut row that acts on independent coordinates only (its row of Φ_z D vanishes)
        — a driver on a tree joint whose coordinate is listed as independent: that
        coordinate is prescribed (z_j = f(t) in the driver's form, matrix_r.py "Drivers"),
        not a degree of freedom.  Refused naming the rows and the coordinates they fix
        (otherwise the refusal below would say only "Φ_z D is singular").  A row of Φ_z
        that vanishes entirely is left to that refusal."""
        tol = 1e-12 * max(np.max(np.abs(Phiz), initial=0.0), 1e-300)
        kept = Phiz[:self.ml]                 # (a redundant row's zero does not make a tall Φ_z D singular)
        idle = np.flatnonzero(np.max(np.abs(kept[:, self.dep]), axis=1, initial=0.0) <= tol)
        fixed = [nm for k, nm in zip(self.ind, self.ind_names) if np.any(np.abs(kept[idle, k]) > tol)]
        if not fixed:
            return
        rows = {int(r): nm for c in self.view.constraints for nm, rr in zip(c.names, c.rows) for r in rr}
        names = sorted({rows.get(int(r), f"cut row {int(r)}") for r in idle})
        raise ModelError(KEY, f"{', '.join(names)} prescribe{'s' if len(names) == 1 else ''} "
                              f"{', '.join(fixed)} alone (a driver fixes its tree joint's coordinate: it is not "
                              "a degree of freedom); list other independent coordinates, or leave "
                              "simulation.matrix_r.independent out to have them chosen")

    def _elin(self, t, xi, p, with_p=False, K=None):
        """matrix_r's _lin plus E₂, E₄ and the stacked E-Jacobians (module doc)."""
        L = self._lin(t, xi, p, with_p, K)
        ev, G, R = L.ev, L.Gc, L.R
        h, b, g = self.h, self.beta, self.gamma
        bh, gh = b * h * h, g * h
        nz, mc = self.nz, self.mc
        L.E2 = ev.phi_q_dot(L.a) + ev.gamma()
        L.E4 = ev.phi_q_dot(L.v) + ev.phi_t()
        Wa = dense(ev.phi_q_w_q(L.a)) + dense(ev.gamma_q())
        Gv = dense(ev.gamma_v())
        Wv = dense(ev.phi_q_w_q(L.v)) + dense(ev.phi_t_q())
        Z = np.zeros((mc, nz))
        L.Ez = np.vstack([L.F1_z, Wa @ R + Gv @ L.Vz + G @ L.Az, L.Phiz / bh, (Wv @ R + G @ L.Vz) / gh])
        L.Ezd = np.vstack([L.F1_zd, Gv @ R + G @ L.Azd, Z, L.Phiz / gh])
        L.Ezdd = np.vstack([L.F1_zdd, L.Phiz, Z, Z])
        ml = self.ml                          # multipliers: the kept rows (least squares: mc ≥ ml rows)
        El = np.vstack([L.Phiz[:ml].T, np.zeros((3 * mc, ml))])
        L.J = np.hstack([bh * L.Ez + gh * L.Ezd + L.Ezdd, El, bh * L.Ez @ self.D, gh * L.Ezd @ self.D])
        L.E = np.r_[L.F1, L.E2, L.phi / bh, L.E4 / gh]
        if with_p:
            nd = self.nd
            I = np.eye(nd)
            if nd:
                E2p = (ev.phi_q_w_p(nd, L.a) @ I + ev.gamma_p(nd) @ I + Wa @ L.Qp + Gv @ L.Vp + G @ L.Ap)
                E4p = (ev.phi_q_w_p(nd, L.v) @ I + ev.phi_t_p(nd) @ I + Wv @ L.Qp + G @ L.Vp)
            else:
                E2p = E4p = np.zeros((mc, 0))
            L.Ep = np.vstack([L.F1_p, E2p, L.Phi_p / bh, E4p / gh])
        return L

    def _split(self, y):
        nz, ml = self.nz, self.ml
        return y[:nz], y[nz:nz + ml], y[nz + ml:nz + 2 * ml], y[nz + 2 * ml:]

    def _states(self, zp, zdp, y):
        """ξ_{n+1} = (z, ż, z̈, λ_c) from the predictors and y (module doc)."""
        h, b, g = self.h, self.beta, self.gamma
        zdd, lam, xz, xzd = self._split(y)
        return (zp + b * h * h * (zdd + self.D @ xz), zdp + g * h * (zdd + self.D @ xzd), zdd, self._pad(lam))

    def _eresidual(self, t, xi, p):
        """E alone (module doc): one real kinematics pass with the columns of R (rows 1..
        of ż = e_k give v = R e_k) and the components' residuals and constraint terms."""
        nz, h = self.nz, self.h
        q, v, a = self.tree.kin(xi[0], np.vstack([xi[1], np.eye(nz)]), np.vstack([xi[2], np.zeros((nz, nz))]), p)
        ev = StateEval(self.view, t, q, v[0], a[0], xi[3], p, self.design_map, self.plan)
        return np.r_[v[1:] @ ev.residual(), ev.phi_q_dot(a[0]) + ev.gamma(), ev.phi() / (self.beta * h * h),
                     (ev.phi_q_dot(v[0]) + ev.phi_t()) / (self.gamma * h)]

    # -- the Newton hooks of MatrixRStepper.step (modified Newton, one loop) ---------------------
    def _unknowns(self, zdd0, l0):
        """y = (z̈, λ_c, x_z, x_ż) at the start of a step: the last step's, corrections 0."""
        return np.r_[zdd0, l0[:self.ml], np.zeros(2 * self.ml)]

    def _newton_lin(self, t, xi, p):
        L = self._elin(t, xi, p)
        self._phiz = L.Phiz
        return L.E, L.J

    def _newton_residual(self, t, xi, p):
        return self._eresidual(t, xi, p)

    def _update_size(self, dy):
        """βh² max(|Δz̈|, |Δx_z|): the position update held against Newton's tolerance."""
        nz, ml = self.nz, self.ml
        return self.beta * self.h * self.h * max(np.max(np.abs(dy[:nz]), initial=0.0),
                                                 np.max(np.abs(dy[nz + ml:nz + 2 * ml]), initial=0.0))

    def _singular_matrix(self):
        return (f"singular Newton matrix (independent coordinates {', '.join(self.ind_names) or 'none'} "
                "near a singular configuration?)")

    # -- tangent (direct differentiation) --------------------------------------------------------
    def tangent_step(self, t, x0, x1, dx0, p):
        """dx_{k+1}/dρ from dx_k/dρ (four (·, nd) blocks)."""
        self._reselect_at(t, x0, p)
        h, b, g = self.h, self.beta, self.gamma
        xi0, xi1 = self._xi(x0, p), self._xi(x1, p)
        dz, dzd, dzdd, _ = self._left_inverse(self._kin_p(x0, xi0, p), dx0)
        dzp = dz + h * dzd + (0.5 - b) * h * h * dzdd
        dzdp = dzd + (1 - g) * h * dzdd
        L = self._elin(t + h, xi1, p, with_p=True, K=self._kin_p(x1, xi1, p))
        dy = Factor(L.J).solve(-(L.Ez @ dzp + L.Ezd @ dzdp + L.Ep))
        dzdd1, dl1, dxz, dxzd = self._split(dy)
        dxi1 = (dzp + b * h * h * (dzdd1 + self.D @ dxz), dzdp + g * h * (dzdd1 + self.D @ dxzd), dzdd1, dl1)
        return self._present_tangent(t + h, x1, L, dxi1, p)

    # -- discrete adjoint --------------------------------------------------------------------------
    def adjoint_step(self, t, x0, x1, mu1, p):
        """(μ_k, ∇ψ increment) from μ_{k+1} (blocks on x_{k+1}, one column per objective)."""
        self._reselect_at(t, x0, p)
        h, b, g = self.h, self.beta, self.gamma
        bh, gh = b * h * h, g * h
        xi0, xi1 = self._xi(x0, p), self._xi(x1, p)
        L = self._elin(t + h, xi1, p, with_p=True, K=self._kin_p(x1, xi1, p))
        (mz, mzd, mzdd, ml), grad = self._present_adjoint(t + h, x1, L, mu1, p)
        Dt = self.D.T
        rhs = np.vstack([bh * mz + gh * mzd + mzdd, ml, bh * (Dt @ mz), gh * (Dt @ mzd)])
        nu = Factor(L.J).solve_t(rhs)
        mzp = mz - L.Ez.T @ nu
        mzdp = mzd - L.Ezd.T @ nu
        grad = grad - L.Ep.T @ nu
        mz0 = mzp
        mzd0 = h * mzp + mzdp
        mzdd0 = (0.5 - b) * h * h * mzp + (1 - g) * h * mzdp
        mu0, g0 = self._left_inverse_adjoint(self._kin_p(x0, xi0, p), (mz0, mzd0, mzdd0, np.zeros_like(ml)))
        return mu0, grad + g0


def make_matrix_r_independent_stepper(system, sim, design_map=None, ndesign=0, comm=None):
    """The stepper for ``simulation.formulation = "matrix-r"`` with
    ``simulation.matrix_r.coordinates = "independent"`` (trapezoidal rule only)."""
    if sim.integrator != "trapezoidal":
        raise ValueError(f"matrix-r runs the trapezoidal rule, not {sim.integrator!r}")
    names = sim.matrix_r.independent
    if names is not None and any("." in nm for nm in names):     # natural coordinates as DOF (eqs. 12–15)
        if sim.matrix_r.reselect is not None:
            raise ModelError("simulation.matrix_r.reselect", "re-selection chooses among tree-joint coordinates; "
                                                             "it does not apply to natural coordinates as degrees "
                                                             "of freedom (leave it out)")
        from .matrix_r_natural import MatrixRNatural
        return MatrixRNatural(system, sim.dt, sim.newton, cut=sim.matrix_r.cut, independent=names,
                              petsc_options=sim.petsc_options, design_map=design_map, ndesign=ndesign, comm=comm,
                              redundant=sim.matrix_r.redundant)
    return MatrixRIndependent(system, sim.dt, sim.newton, cut=sim.matrix_r.cut,
                              independent=sim.matrix_r.independent, petsc_options=sim.petsc_options,
                              design_map=design_map, ndesign=ndesign, comm=comm, redundant=sim.matrix_r.redundant,
                              reselect=sim.matrix_r.reselect)
