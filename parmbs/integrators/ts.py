"""PETSc TS for the penalty ODE: forward run, TSAdjoint gradient, own tangent sweep.

Schemes (PETSc's TSTHETA family, fixed step h, ExactFinalTime MATCHSTEP):

* ``ts-beuler`` (θ = 1), ``ts-theta`` (θ = sim.theta, stage form):
      F(t_k + θh, X, (X − y_k)/(θh)) = 0,   y_{k+1} = y_k + (X − y_k)/θ
* ``ts-cn`` (θ = ½, endpoint form as PETSc writes it):
      F(t_{k+1}, y_{k+1}, (y_{k+1} − y_k)/(θh)) + (1−θ)/θ F(t_k, y_k, 0) = 0

Discrete objective: exactly Problem.objective_values of the stored trajectory,
ψ = Σ_k w_k g(t_k, q_k, v_k, a_k, λ_k) (trapezoid weights w_k), where a_k = v̇ solves
F₂(t_k, y_k, a) = 0 (the ODE's acceleration at the stored state) and λ_k the penalty
force there.  Because the integrand is a sum of point values, it is not fed to a TS
quadrature (whose rule is the scheme's own, not the trapezoid): the adjoint runs
TSAdjoint one step at a time (adjointSetSteps(1); adjointSolve()) and adds
w_k ∂g/∂y_k to the cost gradients between steps — a terminal cost at every step.
Those steps are taken by the reverse sweep every stepper's adjoint goes through
(Problem._adjoint_sweep, in memory and from a checkpoint file): this stepper gives its
reverse step (``adjoint_step_into``), its objective partials (``adjoint_local``) and
the initial-state terms (``adjoint_finish``).
The initial state y_0 = (q_0, v_0)(ρ) is the index-3 consistent one (InitialState).

Adaptive steps (``simulation.adapt = {rtol, atol, dt_min, dt_max}``, or
``-parmbs_ts_adapt_type basic``): PETSc's TSAdapt "basic" chooses h_k from the θ
scheme's local error estimate (TSEvaluateWLTE_Theta: backward differences over
y_{k−1}, y_k, y_{k+1}) in PETSc's weighted RMS norm, ‖e_i/(atol + rtol |y_i|)‖ ≤ 1;
the last step is cut to end at t_end (MATCHSTEP); a failed Newton solve rejects the
step.  The trajectory then holds the accepted steps only, and the objective's weights
are the trapezoid weights of those times (``time_weights``).  TSAdjoint, ``direct``
and ``own_adjoint`` differentiate the computation *on that step sequence*: the step
sizes are frozen, their own dependence on ρ (through the error estimate) is not
differentiated — as PETSc's TSAdjoint does.  ``freeze(t)`` replays a step sequence
with fixed steps, so finite differences check exactly that derivative.

The direct gradient is Problem's tangent loop with the tangent steps of the same schemes
(``tangent_step_at``; petsc4py has no TSForward) and ``own_adjoint`` its transpose,
written by hand: both agree with TSAdjoint to round-off, which for the penalty matrix
M + αΦ_qᵀΦ_q grows ∝ α (≈1e-12 at α = 1e5, ≈1e-10 at 1e7 on the double pendulum).

The TS lives on the problem's communicator (ts_layout.py: distributed Vecs and
Jacobians on several ranks); runs checkpoint to HDF5 with every schedule, fixed or
adaptive steps, and restart bit for bit (checkpoint/ts_run.py; ``fixed_times``: the times
a TS started at a stored state reaches; ``march_adaptive``: the exact accepted steps).
"""

import numpy as np

from .._petsc import PETSc
from .._log import stage
from ..petsc_options import adapt_type, set_config_options, set_trajectory_type
from ..model.assembly import SparseOperator
from ..model.system import ModelError
from .newmark import StepError, saddle_point_pattern
from .timeloop import StepSizeError, TimeGrid, march_ts
from .rerun import march_rerun
from .trajectory import Trajectory, quadrature_weights
from .initial import InitialState
from .ts_layout import TSLayout
from .ts_determinism import DistributedSolves
from .ts_steps import TSSteps

#: options prefix of everything the TS owns: PETSc's TS reads its prefix + "ts_<name>",
#: so the TS itself gets "parmbs_" (-parmbs_ts_monitor, -parmbs_ts_type, -parmbs_ts_adapt_type,
#: -parmbs_ts_trajectory_type) and its Newton solver this prefix (-parmbs_ts_snes_monitor,
#: -parmbs_ts_ksp_type, -parmbs_ts_pc_type).  Before, the TS had "parmbs_ts_" too and its
#: options were the doubled -parmbs_ts_ts_<name> (issue 20).
PREFIX = "parmbs_ts_"
TS_PREFIX = "parmbs_"


def time_weights(t):
    """Trapezoid weights of ∫ g dt on the times t_0 < … < t_N:
    w_0 = h_0/2, w_k = (h_{k−1} + h_k)/2, w_N = h_{N−1}/2 (h_k = t_{k+1} − t_k)."""
    h = np.diff(t)
    w = np.zeros(len(t))
    w[:-1] += 0.5 * h
    w[1:] += 0.5 * h
    return w


def rk_tableau(ts):
    """(A, b, c, embedded?) of ``ts``'s explicit RK method (TSRKGetTableau, not wrapped
    by petsc4py 3.18)."""
    import ctypes
    from ..petsc_options import _libpetsc
    lib = _libpetsc()
    Int = ctypes.c_int64 if np.dtype(PETSc.IntType).itemsize == 8 else ctypes.c_int32
    s, order, pinterp, fsal = Int(), Int(), Int(), ctypes.c_int()
    A, b, c, be = (ctypes.POINTER(ctypes.c_double)() for _ in range(4))
    if lib.TSRKGetTableau(ctypes.c_void_p(ts.handle), ctypes.byref(s), ctypes.byref(A), ctypes.byref(b),
                          ctypes.byref(c), ctypes.byref(be), ctypes.byref(order), ctypes.byref(pinterp),
                          ctypes.byref(fsal)) != 0:
        raise RuntimeError("TSRKGetTableau failed")
    ns = s.value
    return (np.array([A[i] for i in range(ns * ns)]).reshape(ns, ns), np.array([b[i] for i in range(ns)]),
            np.array([c[i] for i in range(ns)]), bool(be))


def tsadjoint_rk_ok(A, b):
    """Does PETSc 3.18's TSAdjointStep_RK differentiate this tableau?  It forms the stage
    adjoints as (Σ_j A_ji λ_j)/b_i (Sandu's form) and sets them to zero where b_i = 0, which
    is exact only if no later stage reads stage i (A_ji = 0 for j > i).  Measured: "4" and
    "3bs" agree with the tangent to 1e-16; "5f" and "5dp" (b_2 = 0, A_j2 ≠ 0) were off
    by 100 % in ψ1 on the five-bar."""
    return all(b[i] != 0 or not np.any(A[i + 1:, i]) for i in range(len(b)))


class _LinSolver:
    """An AIJ matrix of the penalty pattern with an LU KSP (natural ordering)."""

    def __init__(self, model, prefix):
        self.mod = model
        self.A = model.create_mat()
        self.x, self.b = self.A.createVecs()
        ksp = PETSc.KSP().create(PETSc.COMM_SELF)
        ksp.setOperators(self.A)
        ksp.setType("preonly")
        pc = ksp.getPC()
        pc.setType("lu")
        pc.setFactorOrdering("natural")
        ksp.setOptionsPrefix(prefix)
        ksp.setFromOptions()
        self.ksp = ksp

    def set(self, blocks):
        self.mod.fill(self.A, blocks)

    def solve(self, B, transpose=False):
        B = np.asarray(B)
        vec = B.ndim == 1
        B2 = B[:, None] if vec else B
        out = np.empty_like(B2)
        for j in range(B2.shape[1]):
            self.b.setArray(B2[:, j])
            (self.ksp.solveTranspose if transpose else self.ksp.solve)(self.b, self.x)
            if self.ksp.getConvergedReason() < 0:
                raise np.linalg.LinAlgError("penalty linear solve failed")
            out[:, j] = self.x.getArray(readonly=True)
        return out[:, 0] if vec else out


from .ts_arkimex import ARKIMEXSteps
from .ts_kept import KeptForward
from .ts_resume import AdaptiveResume


class _StateAt:
    """State k as a trajectory (what ``_ygrads`` and Problem._local_grads read)."""

    def __init__(self, T, k, x, stepper):
        self.t, self.steps, self._x = T, len(T) - 1, tuple(x[:4])
        self.y = {k: stepper.ystate(x)}
        self.a = {k: x[2]}

    def x(self, k):
        return self._x


class _Pair:
    """Steps k and k + 1 as a trajectory (what the own adjoint steps read: t, y)."""

    def __init__(self, T, k, xk, xk1, stepper):
        self.t = T
        self.y = {k: stepper.ystate(xk), k + 1: stepper.ystate(xk1)}


class TSStepper(ARKIMEXSteps, KeptForward, AdaptiveResume):
    #: the TS of the reverse steps (``open_adjoint``: TSAdjoint), or None (our own steps)
    _seg = None

    def __init__(self, model, sim, comm=None):
        self.mod, self.sim = model, sim
        self.h = sim.dt            # the next step() call's step size (timeloop.set_step)
        self.dt = sim.dt           # the nominal step: fixed runs' h, adaptive runs' first h
        self.kind = sim.integrator
        # the TS on the problem's communicator (ts_layout.py): distributed on several
        # ranks, the serial code's objects on one (or replicated: COMM_SELF)
        tscomm = comm if comm is not None else PETSc.COMM_WORLD
        if not hasattr(tscomm, "getSize"):            # an mpi4py communicator
            tscomm = PETSc.Comm(tscomm)
        self.layout = TSLayout(tscomm if tscomm.getSize() > 1 else PETSc.COMM_SELF, model)
        # error-controlled steps (TSAdapt "basic"): simulation.adapt; -parmbs_ts_adapt_type
        # basic turns them on without it (with the table's defaults), ... none off
        self.adapt = sim.adapt
        #: a frozen step sequence (times t_0 < ... < t_N) the runs replay with fixed steps,
        #: or None: the derivative of an adaptive run is taken on its accepted steps
        #: (TSAdjoint, direct), so FD checks perturb along the same mesh (freeze())
        self.grid = None
        self._qv0 = None
        self._h_try = sim.dt
        # ts-cn: the θ = ½ stage form (implicit midpoint).  PETSc's TSCN is the endpoint
        # variant, which assumes a constant mass matrix; with S(q) = M + αΦ_qᵀΦ_q it mixes
        # S(q_{k+1}) with the O(α) constraint forces at q_k and diverges within ~30 steps.
        self.theta, self.endpoint = {"ts-beuler": (1.0, False), "ts-cn": (0.5, False),
                                     "ts-theta": (float(sim.theta), False), "ts-rk": (None, False),
                                     "ts-arkimex": (None, False)}[self.kind]
        sys = model.sys
        n, m = sys.n, sys.m
        # the index-3 acceleration operator InitialState expects (NewmarkFamily's pattern)
        blocks, _ = saddle_point_pattern(sys)
        self.accel_op = SparseOperator(n + m, blocks, comm=PETSc.COMM_SELF,
                                       options_prefix="parmbs_tsinit_", options=sim.petsc_options)
        # distributed solves that repeat bit for bit (ts_determinism.py): a small
        # distributed system is factored whole on every rank (PCREDUNDANT), a large one by
        # parallel MUMPS, whose re-runs are then checked against a round-off bound
        self.solves = DistributedSolves(self.layout.dist, n + m, sim)
        self.init = InitialState(sys, self.accel_op, model.design_map, model.nd, sim.newton, comm=comm,
                                 options=self.solves.init_options())
        self.lin = _LinSolver(model, "parmbs_tsaux_")
        # one table under PREFIX: TS_PREFIX + "ts_<name>" is PREFIX + "<name>", so a
        # config's ts_<name> becomes <name> here
        defaults = {(k[3:] if k.startswith("ts_") else k): v for k, v in sim.petsc_options.items()}
        defaults.setdefault("pc_factor_mat_ordering_type", "natural")
        defaults.setdefault("snes_linesearch_type", "basic")
        defaults.setdefault("trajectory_type", "memory")
        # Newton starts from the current state y_k, not from PETSc's extrapolation of the
        # last stages: on the 20-link closed chain (ts-cn, h = 1e-3) the extrapolated guess
        # sent the first Newton update of step 126 to a residual 3e4 times larger and the
        # solve diverged (α = 1e7; t = 0.36 at α = 1e6; ts-beuler at α = 1e5: t = 0.038);
        # no line search (bt, l2, cp) nor trust region helped, and the explicit predictor
        # y_k + θh (v_k, a_k) failed too (ts-beuler α = 1e5 at t = 0.038, ts-theta 0.7 at
        # t = 0.231).  From y_k every scheme and α ran the chain's 1 s.  Cost: Newton
        # iterations per step 6.1 instead of 3.7 on the five-bar (benchmarks/README.md,
        # "Penalty on the 20-link chain"); -parmbs_ts_theta_initial_guess_extrapolate true
        # brings PETSc's guess back
        defaults.setdefault("theta_initial_guess_extrapolate", "false")
        # no SNES divergence test: the penalty rows carry α (1e7): after the first Newton
        # update their residual norm may rise 1e4-fold before it converges quadratically
        # (20-link closed chain, ts-cn, step 1: 9.8 -> 1.2e5 -> 1e-3 -> 7e-7), which the
        # default dtol 1e4 took for divergence and ended the run (issue 20 item 7);
        # max_it still bounds a Newton solve that does not converge
        defaults.setdefault("snes_divergence_tolerance", -1)
        if self.layout.dist:
            defaults.setdefault("pc_factor_mat_solver_type", "mumps")    # a parallel LU (ts_layout.py)
            self.solves.ts_options(defaults)
        set_config_options(PREFIX, defaults)

    # -- TS callbacks (vectorized; one evaluation cached per point) ----------------------
    def _eval(self, t, y, yd):
        key = (t, y.tobytes(), yd.tobytes())
        c = self._cache
        if c is None or c[0] != key:
            self._cache = c = (key, self.mod.eval(t, y, yd, self._p))
        return c[1]

    def _ifunction(self, ts, t, y, yd, f):
        self._h_try = ts.getTimeStep()          # (adaptive runs: the step size of this attempt)
        L = self.layout
        pe = self._eval(t, L.get(y), L.get(yd))
        L.set(f, pe.F())

    def _adjoint_ydot(self, t, shift, yd):
        """ẏ of the forward scheme at the point PETSc's adjoint evaluates (t, shift).

        PETSc 3.18's TSAdjointStep_Theta hands the Jacobian callbacks a stale Xdot (the
        last forward one); our F is nonlinear in ẏ (λ depends on v̇), so the exact
        discrete adjoint needs the scheme's own ẏ, rebuilt from the stored trajectory:
        stage form: (y_{k+1} − y_k)/h at t_k + θh; endpoint form: (y_{k+1} − y_k)/(θh)
        at t_{k+1} (shift ≠ 0) and 0 at t_k (shift = 0, the explicit half).
        """
        T, Y = self._adj
        th = self.theta
        if self.endpoint:
            if shift == 0.0:
                return np.zeros_like(yd)
            k = int(np.argmin(np.abs(T[1:] - t)))
            return (Y[k + 1] - Y[k]) / (th * (T[k + 1] - T[k]))
        k = int(np.argmin(np.abs(T[:-1] + th * np.diff(T) - t)))
        return (Y[k + 1] - Y[k]) / (T[k + 1] - T[k])

    def _args(self, t, y, yd, shift):
        yd = self.layout.get(yd)
        if self._adj is not None:
            yd = self._adjoint_ydot(t, shift, yd)
        return t, self.layout.get(y), yd

    def _ijacobian(self, ts, t, y, yd, shift, A, P):
        pe = self._eval(*self._args(t, y, yd, shift))
        self.layout.fill(P, pe.blocks(1.0, shift))
        if A != P:
            A.assemble()
        return True

    def _ijacobianp(self, ts, t, y, yd, shift, A):
        pe = self._eval(*self._args(t, y, yd, shift))
        self.layout.fill_p(A, pe.Fp())
        return True

    # explicit models (F = ẏ − G(t, y)): G, G_y, G_ρ for ts-rk
    def _rhsfunction(self, ts, t, y, f):
        self._h_try = ts.getTimeStep()          # (adaptive runs: the step size of this attempt)
        pe = self._eval(t, self.layout.get(y), np.zeros(self.mod.N))
        self.layout.set(f, pe.G())

    def _rhsjacobian(self, ts, t, y, A, P):
        pe = self._eval(t, self.layout.get(y), np.zeros(self.mod.N))
        self.layout.fill(P, pe.Gy())
        if A != P:
            A.assemble()
        return True

    def _rhsjacobianp(self, ts, t, y, A):
        pe = self._eval(t, self.layout.get(y), np.zeros(self.mod.N))
        self.layout.fill_p(A, pe.Gp())
        return True

    # -- the state x = (q, v, a, λ) of y, and back ------------------------------------------
    # y = (q, v) in the model's coordinates (penalty, index-1), or a reduced ODE's state
    # (``mod.reduced``: Maggi's y = (B q, B v), matrix-r's independent relative
    # coordinates) which the model presents as x and pulls gradients back from
    def _x(self, t, y, p, a0):
        """x = (q, v, a, λ) at the TS state y (``a0``: the last acceleration, a first guess)."""
        if getattr(self.mod, "reduced", False):
            return self.mod.present(t, y, p)
        n = self.mod.n
        a, lam = self._accel(t, y, p, a0)
        return (y[:n], y[n:], a, lam)

    def _y(self, q, v, p):
        """The TS state y of a consistent (q, v)."""
        if getattr(self.mod, "reduced", False):
            return self.mod.y_of(q, v, p)
        return np.concatenate([q, v])

    def _y_tangent(self, q, v, p, dq, dv):
        """dy/dρ of y(q, v; ρ) along (dq, dv) = d(q, v)/dρ (columns)."""
        if getattr(self.mod, "reduced", False):
            return self.mod.y_tangent(q, v, p, dq, dv)
        return np.concatenate([dq, dv])

    def _y_adjoint(self, q, v, p, ly):
        """The transpose of ``_y_tangent``: (μ_q, μ_v, ∂/∂ρ explicit) of a cost gradient λ on y."""
        if getattr(self.mod, "reduced", False):
            return self.mod.y_adjoint(q, v, p, ly)
        n = self.mod.n
        return ly[:n], ly[n:], 0.0

    # -- the stored state of a reduced ODE --------------------------------------------------------
    @property
    def reduced(self):
        return bool(getattr(self.mod, "reduced", False))

    @property
    def extra_state(self):
        """Trailing state blocks (sensitivity/problem.state_blocks) a checkpoint stores:
        a reduced ODE's y itself and its manifold Newton's first guess (the last solution).
        y is not recovered bit for bit from x = (q, v, a, λ), and the converged manifold
        point's last bits depend on the guess, so both are part of the state a TS
        restarts from (checkpoint/ts_run.py)."""
        blocks = (("y", self.mod.N), ("guess", self.mod.guess_size)) if self.reduced else ()
        if self.sim.adapt is None:
            return blocks
        blocks += (("h_next", 1),)
        if self.resumes_from_previous:
            blocks += (("prev", 2), ("y_prev", self.mod.N)) + ((("guess_prev", self.mod.guess_size),)
                                                                if self.reduced else ())
        return blocks

    @property
    def replays_attempts(self):
        """Does a re-run of a step repeat the forward run's attempts (adaptive ts-rk,
        ts-arkimex)?  PETSc undoes a rejected RK/ARKIMEX attempt by subtraction,
        y_k' = (y_k + h Σ b_j K_j) − h Σ b_j K_j (TSRollBack_RK, TSRollBack_ARKIMEX in
        PETSc 3.18), which is y_k only up to round-off, and the accepted attempt starts
        from y_k' (five-bar, 5dp, 0.5 s: 5 of 29 steps then differ by ≤ 2.2e-16 from a
        step taken from y_k).  No petsc4py hook sits between the rollback and the next
        attempt (ARKIMEX forms its stage-0 Z from y_k' before any callback), so a
        re-run does what the forward run did: it starts from the stored y_k with TSAdapt
        basic (the same tolerances, limits and end time) at the step size TSAdapt had
        proposed for step k — the ``h_next`` block of the stored state — and TSAdapt
        rejects and rolls back the same attempts from the same bits (its choice reads
        only this step's attempts: TSAdaptChoose_Basic), then accepts h_k.  Each re-run
        step's h is checked against the stored h_k and its state against the stored one
        (RuntimeError otherwise: checkpoint/ts_run.py)."""
        return self.sim.adapt is not None and self.kind in ("ts-rk", "ts-arkimex")

    def ystate(self, x):
        """The TS state y of a stored x (with ``extra_state``'s blocks for a reduced ODE)."""
        return np.array(x[4]) if self.reduced else np.r_[x[0], x[1]]

    def reseed(self, g):
        """A reduced ODE's manifold guess set to ``g`` and the evaluation cache emptied:
        every adjoint step and objective term starts from the stored guess of its state,
        in memory as in a checkpointed sweep, so both give the same bits."""
        if self.reduced and g is not None:
            self.mod.set_guess(g)
            self._cache = None

    # -- consistent acceleration a = v̇ at a stored state ---------------------------------
    def _accel(self, t, y, p, a0):
        if hasattr(self.mod, "accel"):                 # a model that has a(y) directly
            return self.mod.accel(t, y, p, a0)
        n = self.mod.n
        # F₂ is linear in v̇ for rigid bodies (one step); chord iterations with S
        # otherwise, until the update stops decreasing (round-off floor of S ~ α).
        # λ is affine in v̇ (λ = α(Φ_q v̇ + ...)): updated without a new evaluation.
        a = a0.copy()
        tol = self.sim.newton
        pe = self.mod.eval(t, y, np.r_[y[n:], a], p)
        self.lin.set(pe.blocks(0.0, 1.0))
        da = self.lin.solve(np.r_[np.zeros(n), -pe.F()[n:]])[n:]
        last = np.inf
        for it in range(tol.max_it):
            a = a + da
            pe = self.mod.eval(t, y, np.r_[y[n:], a], p)
            da = self.lin.solve(np.r_[np.zeros(n), -pe.F()[n:]])[n:]
            d = np.max(np.abs(da))
            if d <= tol.atol + tol.rtol * np.max(np.abs(a)) or d > 0.5 * last:
                break
            last = d
        return a + da, pe.lam + self.mod.alpha * pe.ev.phi_q_dot(da)

    # -- forward -------------------------------------------------------------------------------
    def fixed_times(self, problem):
        """t_0 … t_N of a fixed-step run as the TS reaches them: t_{k+1} = t_k + h, the
        sum PETSc forms (ts->ptime += ts->time_step; an IEEE double add here as there).
        The run ends at t_N (no MATCHSTEP sliver), so every t_k is the TS's own time and
        a TS started at a stored t_k with y_k repeats the run's steps bit for bit — what
        the checkpointed runs rely on (checkpoint/ts_run.py).  t_N differs from
        t_0 + N h by the round-off of N additions (≤ N ε t_N)."""
        N = self._nsteps(problem)
        T = np.empty(N + 1)
        t, h = float(problem.t0), float(self.dt)
        for k in range(N + 1):
            T[k] = t
            t = t + h
        return T

    @staticmethod
    def _nsteps(problem):
        """The nominal number of steps (an adaptive checkpointed run sets the problem's grid
        to its accepted steps: the nominal ones stay those of simulation.dt)."""
        fixed = getattr(problem, "_fixed_grid", None)
        return fixed.steps if fixed is not None else problem.nsteps

    def _make_ts(self, problem, p, save, k0=0, steps=None, seg=None, resume=None):
        """The TS of a run; ``k0``, ``steps``: a fixed-step run's part from t_k0 over
        ``steps`` steps (default: the whole run); ``seg`` = (t_k0, [h_k0, …], h_first): a
        part of an adaptive run repeated with its exact step sizes (no TSAdapt), or, when
        ``h_first`` is not None (``replays_attempts``), with TSAdapt from the step size it
        had proposed at k0, to the run's own end time, over len(hs) steps.  ``resume`` =
        (t, h): an adaptive run with TSAdapt from time t with first step h to the run's own
        end time (a resumed checkpointed run: ``_run``'s ``resume``)."""
        mod, sim = self.mod, self.sim
        h, N = self.dt, self._nsteps(problem)
        ts = PETSc.TS().create(comm=self.layout.comm)
        ts.setOptionsPrefix(TS_PREFIX)
        ts.getSNES().setOptionsPrefix(PREFIX)      # (its KSP and PC follow the SNES)
        ts.setProblemType(ts.ProblemType.NONLINEAR)
        self._f = self.layout.vec()
        self._J = self.layout.mat()
        if self.kind == "ts-rk":
            # explicit RK on ẏ = G(t, y) (models with F = ẏ − G); classical RK4 unless
            # -parmbs_ts_rk_type says otherwise (the tangent reads PETSc's tableau)
            ts.setType("rk")
            # classical RK4 for fixed steps; Dormand–Prince 5(4) (embedded estimate) for
            # adaptive ones (TSAdapt basic needs the embedded method; RK4 has none)
            ts.setRKType("5dp" if (self.adapt is not None or PETSc.Options().getString(
                PREFIX + "adapt_type", "none") != "none") else "4")
            ts.setRHSFunction(self._rhsfunction, self._f)
            ts.setRHSJacobian(self._rhsjacobian, self._J)
        elif self.kind == "ts-arkimex":
            # the L-stable two-stage SDIRK "l2" of ARKIMEX, fully implicit (no explicit
            # part); its stages are recomputed by the own tangent and adjoint (ts_arkimex.py)
            ts.setType("arkimex")
            ts.setARKIMEXType("l2")
            ts.setARKIMEXFullyImplicit(True)
            ts.setIFunction(self._ifunction, self._f)
            ts.setIJacobian(self._ijacobian, self._J)
        else:
            ts.setType("beuler" if self.kind == "ts-beuler" else "theta")
            if self.kind != "ts-beuler":
                ts.setTheta(self.theta)
                ts.setThetaEndpoint(False)
            ts.setIFunction(self._ifunction, self._f)
            ts.setIJacobian(self._ijacobian, self._J)
        grid = self.grid
        attempts = seg is not None and seg[2] is not None
        if attempts:                            # the forward run's attempts again (replays_attempts)
            ts.setTime(float(seg[0]))
            ts.setTimeStep(float(seg[2]))
            ts.setMaxTime(self.fixed_times(problem)[N])     # the forward run's (TSAdapt's MATCHSTEP)
            ts.setMaxSteps(len(seg[1]))
        elif seg is not None:
            t, hs = float(seg[0]), seg[1]
            ts.setTime(t)
            ts.setTimeStep(hs[0])
            for h_ in hs:                       # the end as PETSc reaches it (ptime += h)
                t = t + float(h_)
            ts.setMaxTime(t)
            ts.setMaxSteps(len(hs))
        elif resume is not None:                # TSAdapt's run from a stored state (its end: the forward run's)
            ts.setTime(float(resume[0]))
            ts.setTimeStep(float(resume[1]))
            ts.setMaxTime(self.fixed_times(problem)[N])
        elif grid is not None:
            ts.setTime(problem.t0)
            ts.setTimeStep(grid[1] - grid[0])
            ts.setMaxTime(grid[-1])
            ts.setMaxSteps(N)
        else:
            T = self.fixed_times(problem)
            ts.setTime(T[k0])
            ts.setTimeStep(h)
            ts.setMaxTime(T[N])
            ts.setMaxSteps(N - k0 if steps is None else steps)
        ts.setExactFinalTime(ts.ExactFinalTime.MATCHSTEP)
        # TSAdapt: its type, tolerances and step limits before setFromOptions, so the
        # user's -parmbs_ts_adapt_type/-parmbs_ts_rtol/-parmbs_ts_adapt_dt_min win
        ad = self._adapt_settings(problem)
        adapt_type(ts, "basic" if self.adapt is not None and grid is None and (seg is None or attempts) else "none")
        ts.setTolerances(rtol=ad.rtol, atol=ad.atol)
        # TSAdapt basic accepts a step at its minimum whatever its error: its floor is half
        # of dt_min so that such a step is seen (below dt_min) and refused by ``ts_step``
        # (StepSizeError naming step and time, as the own controller, timeloop.py)
        ts.setStepLimits(0.5 * ad.dt_min, ad.dt_max)
        snes = ts.getSNES()
        nt = sim.newton
        # converged on the update, ‖δX‖ ≤ newton.rtol ‖X‖ (stol; as the own steppers'
        # update test), or on ‖F‖ ≤ newton.atol; no test relative to the first residual
        # (rtol = 0): that one depends on the initial guess, and from the current state it
        # stopped ~1e-6 relative FD noise early (five-bar ts-beuler at α = 1e5: FD gap
        # 1.6e-6 instead of 5e-8)
        snes.setTolerances(rtol=0.0, atol=nt.atol, stol=max(nt.rtol, 1e-14), max_it=nt.max_it)
        if save and self.kind != "ts-arkimex":
            ts.setSaveTrajectory()
            # PETSc 3.18's trajectory has no options prefix: it reads the unprefixed
            # -ts_trajectory_type and defaulted to the on-disk "basic" (one file per step)
            # although -parmbs_ts_trajectory_type memory was set; set the type on it
            set_trajectory_type(ts, PETSc.Options().getString(PREFIX + "trajectory_type", "memory"))
            if mod.nd:
                self._Jp = self.layout.dense_p()
                if self.kind == "ts-rk":
                    ts.setRHSJacobianP(self._rhsjacobianp, self._Jp)
                else:
                    ts.setIJacobianP(self._ijacobianp, self._Jp)
        ts.setFromOptions()
        self.solves.note_solver(ts, self.kind)
        if save and steps is not None:
            # a checkpointed run's one-step TSAdjoint (checkpoint/ts_run.py): in memory whatever
            # the options say (-ts_trajectory_type basic would write a file per step)
            set_trajectory_type(ts, "memory")
        if attempts:
            self.adaptive = False               # (its steps are the stored ones: _run checks them)
            ts.setMaxSNESFailures(-1)           # as the forward run: a failed solve is a rejection
        elif seg is not None:
            adapt_type(ts, "none")                  # the stored steps whatever the options say
            self.adaptive = False
            hs = [float(h_) for h_ in seg[1]]
            ts.setPreStep(lambda ts_: ts_.setTimeStep(hs[ts_.getStepNumber()]))
        elif grid is not None:
            adapt_type(ts, "none")                  # a replay is fixed whatever the options say
            ts.setMaxSteps(len(grid) - 1)
            ts.setPreStep(self._replay_step)
            self.adaptive = False
        else:
            self.adaptive = adapt_type(ts) != "none"
            if not self.adaptive:
                # every step is h: TSAdapt's MATCHSTEP end game ("none" too) sets the last
                # step to t_N − t_{N−1}, which is not h in the last bits; a TS started at
                # t_{N−1} (checkpoints: checkpoint/ts_run.py) would take h (fixed_times)
                ts.setPreStep(lambda ts_: ts_.setTimeStep(h))
        if self.kind == "ts-rk":
            A, b, c, embedded = rk_tableau(ts)
            self._tableau = (A, b, c)
            if adapt_type(ts) != "none" and grid is None and seg is None and not embedded:
                raise ModelError("simulation.adapt", f"ts-rk type {ts.getRKType()!r} has no embedded error "
                                 "estimate for adaptive steps: use -parmbs_ts_rk_type 5dp (the default of "
                                 "adaptive ts-rk runs), 3bs, 5f, ...")
            if len(b) > 1 and np.array_equal(A[-1], b):
                # an FSAL tableau (5dp, 3bs): PETSc reuses the last stage's G as the next
                # step's first, evaluated at the stage vector y_k + h Σ A_sj K_j (equal to
                # y_{k+1} up to round-off) and, on a reduced ODE, from another manifold guess;
                # a TS started at a stored state evaluates G(y_k) afresh, so checkpointed runs
                # would differ from the uninterrupted one (Maggi, 3bs: 2.8e-17 at step 35 with
                # the reuse).  TSRestartStep after every step turns the reuse off (TSStep_RK:
                # FSAL off when steprestart): one more evaluation per step, the same bits
                ts.setPostStep(lambda ts_: ts_.restartStep())
        if self.kind == "ts-arkimex":
            from .ts_arkimex import check_type
            check_type(ts)
        if self.adaptive:
            # a failed Newton solve rejects the step (smaller h) instead of ending the run
            ts.setMaxSNESFailures(-1)
            ts.setMaxSteps(min(int(np.ceil((N * h) / ad.dt_min)) + 1, 2 ** 31 - 1))
        return ts

    def _adapt_settings(self, problem):
        """rtol, atol, dt_min, dt_max of TSAdapt: simulation.adapt, else its defaults;
        dt_min, dt_max default to 1e-10 and 1/10 of the time span (config/schema.py)."""
        from types import SimpleNamespace
        from ..config.schema import Adapt
        a = self.adapt if self.adapt is not None else Adapt()
        span = self._nsteps(problem) * self.dt
        return SimpleNamespace(rtol=a.rtol, atol=a.atol, dt_min=a.dt_min if a.dt_min is not None else 1e-10 * span,
                               dt_max=a.dt_max if a.dt_max is not None else 0.1 * span)

    def _replay_step(self, ts):
        """PreStep of a replay: the next step is the frozen one, h_k = t_{k+1} − t_k."""
        k = ts.getStepNumber()
        ts.setTimeStep(self.grid[k + 1] - self.grid[k])

    def freeze(self, t):
        """Replay the step sequence ``t`` (a trajectory's times) with fixed steps in every
        later run (forward, direct, adjoint, FD); ``freeze(None)`` ends it.  The replay at
        the same parameters repeats the adaptive run up to round-off in the step sizes
        (h_k = t_{k+1} − t_k recomputed from the stored times)."""
        self.grid = None if t is None else np.array(t, dtype=float)

    @stage("forward")          # (also the forward re-run inside adjoint and direct: -log_view)
    def _run(self, problem, p, save=False, progress=None, on_step=None, start=None, steps=None, keep=None,
             guarded=True, hs=None, resume=False):
        """The TS run; the in-memory Trajectory and the TS.  ``start`` = (k0, x_k0): a
        fixed-step run continued from a stored state (x_k0's a is the first guess of the
        next acceleration, as in the uninterrupted run), over ``steps`` steps (default:
        to t_N); ``keep(k, t_k, h, x_k)`` then receives every new state and no trajectory
        is kept (returns (None, ts)).  ``hs``: the exact step sizes of the ``steps`` steps
        from ``start`` (a stretch of an adaptive run, repeated without TSAdapt).  The
        states keep() receives carry a reduced ODE's y and manifold guess (``extra_state``).
        The steps are taken by parmbs's time loop (timeloop.march_ts), one TSStep each
        (``ts_step``; ts_steps.py): PETSc's TSSolve loop is not used.  ``resume``: ``start``
        = (k0, x_k0, t_k0) continues an adaptive run with TSAdapt in the state the
        uninterrupted run had after step k0 (``_resume_adaptive``)."""
        mod = self.mod
        N = self._nsteps(problem)
        self.release()                          # any other run: the kept forward run is no adjoint's
        self._p, self._cache, self._adj, self._kcache = p, None, None, None
        k0 = 0 if start is None else start[0]
        if start is None:
            q0, v0, _, _ = self.init.solve(problem.t0, p)
            a0 = np.zeros(mod.sys.n)
            self._qv0 = (q0, v0)                # y_0's (q, v): the initial terms of direct and adjoint
        else:
            q0, v0, a0 = start[1][0], start[1][1], start[1][2]
        if hs is not None:                      # start = (k0, x_k0, t_k0)
            steps = len(hs)
        h_first = float(self._block(start[1], "h_next")[0]) if hs is not None and self.replays_attempts else None
        first = None
        if resume:                              # TSAdapt from the step before x_k0, or from x_k0 at h_next
            h_next = float(self._block(start[1], "h_next")[0])
            first = tuple(float(v) for v in self._block(start[1], "prev")) if self.resumes_from_previous \
                else (float(start[2]), h_next)
        ts = self._make_ts(problem, p, save, k0, steps, None if hs is None else (start[2], hs, h_first), first)
        if start is not None and (self.adaptive or self.grid is not None) and not resume:
            raise RuntimeError("a TS run continues from a stored state with fixed steps only")
        T, Y, Q, V, A, L, H, G = [], [], [], [], [], [], [], []
        t0, t1 = problem.t0, ts.getMaxTime()
        variable = self.adaptive or self.grid is not None
        # instability guard (integrators/guard.py): its (-1)^k test is one of fixed steps;
        # an error-controlled run has its own control and is checked for non-finite values
        guard = getattr(problem, "guard", None) if not self.adaptive and guarded else None
        self._live = ts
        y = self.layout.vec()
        if start is None:
            self.layout.set(y, self._y(q0, v0, p))
        elif resume and self.resumes_from_previous:
            self.layout.set(y, self._block(start[1], "y_prev"))
            self.reseed(self._block(start[1], "guess_prev") if self.reduced else None)
        else:
            self.layout.set(y, self.ystate(start[1]))
            self.reseed(start[1][5] if self.reduced else None)
        self._steps = TSSteps(ts, y)
        last = None if start is None else (float(ts.getTime()), np.array(self.ystate(start[1])),
                                           start[1][5] if self.reduced else None)
        self._step_of = dict(hs=hs, h_first=h_first, guard=guard, t1=t1, t=ts.getTime(), a=np.asarray(a0, float).copy(),
                             dt_min=self._adapt_settings(problem).dt_min if self.adaptive else None, last=last)
        if resume and self.resumes_from_previous:
            self._resume_adaptive(ts, start, first, h_next)

        def record(k, t, h, x):
            """x_k to ``keep`` or to the in-memory trajectory; on_step."""
            if keep is not None:
                keep(k, t, h, x)
            else:
                T.append(t)
                Y.append(self.ystate(x))
                Q.append(x[0])
                V.append(x[1])
                A.append(x[2])
                L.append(x[3])
                H.append(h)
                if self.reduced:
                    G.append(x[5])
            if on_step:
                on_step(k, t, x[:4])

        x = start[1] if start is not None else None
        if start is None:                       # the initial state, as the first TS state
            t = ts.getTime()
            x = self._observe(t, y, p)
            if guard is not None:
                guard.start(0, t, x[:4], p)
            else:
                self._finite_or_fail(0, t, x)
            record(0, t, 0.0, x)
        its = march_ts(self, x, k0, record, guard, progress, N, (t0, t1) if variable else None)
        t_last = self._step_of.get("t", t0)
        done = abs(t_last - t1) <= 1e-12 * max(abs(t1), 1.0) if variable else \
            len(its) == (N - k0 if steps is None else steps)
        if ts.getConvergedReason() < 0 or not done:
            k = k0 + len(its) + 1
            why = {-1: "nonlinear solve failed", -2: "too many step rejections (adaptive)"}.get(
                ts.getConvergedReason(), f"reason {ts.getConvergedReason()}")
            raise StepError(f"step {k} (t = {ts.getTime():.6g}): TS stopped ({why})")
        self._steps = None
        self._last_its = its
        if keep is not None:
            return None, ts
        Y = np.array(Y)
        T = np.array(T)
        traj = Trajectory(T, np.array(Q), np.array(V), np.array(A), np.array(L), its)
        traj.y = Y
        traj.guess = np.array(G) if self.reduced else None
        traj.h = np.array(H[1:])                # h_0 … h_{N−1} as the TS took them
        # the objective's weights on the computed times (Problem reads problem.w; simulation.quadrature);
        # an adaptive run's from its exact step sizes (TimeGrid.weights: the same bits as a
        # checkpointed run's, checkpoint/ts_run.py)
        if self.adaptive:
            traj.w = TimeGrid(T, traj.h).weights(problem.quadrature)
        elif problem.quadrature != "trapezoid":     # the cubic rule (quadrature.py) on the same h as below
            traj.w = TimeGrid(T, np.diff(T) if variable else np.full(N, float(self.dt))).weights(problem.quadrature)
        else:
            traj.w = time_weights(T) if variable else quadrature_weights(N, self.dt)
        problem.w = traj.w
        return traj, ts

    def _observe(self, t, u, p, h=0.0):
        """x = (q, v, a, λ) at the TS state ``u`` (a Vec), reached by a step of size h,
        with ``extra_state``'s blocks."""
        ts, st = self._live, self._step_of
        y = np.array(self.layout.get(u))
        x = self._x(t, y, p, st["a"])
        if self.reduced:                    # y and the manifold guess: extra_state
            x = tuple(x) + (y, self.mod.get_guess())
            # the next step starts as a re-run from this stored state does (reseed): no
            # cached evaluation (an FSAL tableau's last stage is at y_{k+1} up to round-off,
            # its evaluation made from another guess; measured 2.8e-17 off with 3bs)
            self._cache = None
        x = tuple(x) + self._adaptive_blocks(t, y, x, h, ts.getTimeStep())
        st["a"] = x[2]
        return x

    @staticmethod
    def _finite_or_fail(k, t, x):
        if not all(np.all(np.isfinite(b)) for b in (x[0], x[1], x[2], x[3])):
            raise StepError(f"step {k} (t = {t:.6g}): non-finite state")

    def ts_finished(self):
        """Has the TS of the current run reached its end (timeloop.march_ts)?"""
        return self._steps.finished

    def ts_step(self, k, x):
        """One accepted TS step x_k → x_{k+1} (timeloop.march_ts; the TS holds x_k):
        (t_{k+1}, h_k, x_{k+1}, Newton iterations).  h_k is the stored one (``hs``),
        TSAdapt's accepted attempt (the last one the callbacks saw: PETSc's time step is
        already the next one here), or h."""
        ts, st = self._live, self._step_of
        try:
            self._steps.step()
        except PETSc.Error:
            raise StepError(f"step {k + 1} (t = {ts.getTime():.6g}): the TS step failed "
                            f"(nonlinear solve did not converge)") from None
        i, t = ts.getStepNumber(), ts.getTime()
        dt_min, t1 = st["dt_min"], st["t1"]
        if dt_min is not None and t - st["t"] < dt_min and t1 - t > 2 * dt_min:
            # an accepted step below dt_min away from the end (where MATCHSTEP shortens
            # the last one or two steps to land on t1): TSAdapt was at its floor
            raise StepSizeError(
                f"step {k + 1} (t = {t:.6g}): the step size fell below dt_min = {dt_min:.3g} s (TSAdapt "
                f"rejected {ts.getStepRejections()} steps); loosen simulation.adapt.rtol/atol or lower dt_min")
        hs = st["hs"]
        h = hs[i - 1] if hs is not None else self._h_try if self.adaptive else self.h
        if st["h_first"] is not None and self._h_try != h:
            raise RuntimeError(f"step {k + 1} (t = {t:.6g}): the adaptive {self.kind} step re-run from the "
                               f"checkpoint took h = {self._h_try!r}, the forward run {h!r}")
        st["t"] = t
        x1 = self._observe(t, ts.getSolution(), self._p, h)
        if st["guard"] is None:
            self._finite_or_fail(k + 1, t, x1)
        return t, h, x1, ts.getSNES().getIterationNumber()

    def forward(self, problem, p, progress=None, on_step=None):
        """The in-memory forward run; its TS is kept, trajectory saved, for an adjoint at
        the same p that follows (``_take_forward``): one forward run per gradient instead
        of two.  A frozen replay (FD, verify's perturbed runs) keeps none."""
        keep = problem.frozen_grid is None and self.grid is None
        traj, ts = self._run(problem, p, keep, progress, on_step)
        if keep:
            self._kept = (self._forward_key(problem, p), traj, ts, self._qv0)
        else:
            ts.destroy()
        return traj

    # -- the one-step interface of checkpointed runs (checkpoint/ts_run.py) ---------------
    def checkpoint_refusal(self):
        """Why this run cannot checkpoint (None: it can).  Every scheme, formulation and
        schedule checkpoints (checkpoint/ts_run.py); an adaptive run's steps follow
        simulation.adapt (TSAdapt basic), so -parmbs_ts_adapt_type must not contradict it."""
        kind = PETSc.Options().getString(PREFIX + "adapt_type", "")
        if kind and (kind != "none") != (self.sim.adapt is not None):
            return (f"-{PREFIX}adapt_type {kind} contradicts simulation.adapt in a checkpointed {self.kind} run "
                    "(TSAdapt): set or remove [simulation.adapt] instead")
        return None

    #: how a checkpointed run's reverse sweep goes (checkpoint.open_run picks the run by it):
    #: TS re-runs from stored states and TSAdjoint back through them, or our own adjoint
    #: steps (``uses_own_adjoint``): checkpoint/ts_run.py
    checkpoint_sweep = "ts"

    #: forward and adjoint run whole in PETSc TS (integrators/one_step.py); direct is Problem's
    #: loop with this scheme's tangent steps; an adaptive run's steps are TSAdapt's, replayed
    #: through ``freeze``
    whole_runs = frozenset(("forward", "adjoint"))
    freezes_steps = True

    #: the adjoint state is λ_y of the ODE: ``adjoint_local`` and ``adjoint_finish`` (one_step.py)
    own_adjoint_terms = True

    def initial(self, t0, p):
        """x_0 = (q_0, v_0, a_0, λ_0) as the forward run's first state."""
        q0, v0, _, _ = self.init.solve(t0, p)
        self._qv0 = (q0, v0)                    # (adjoint_finish's initial terms)
        y0 = self._y(q0, v0, p)
        x = self._x(t0, y0, p, np.zeros(self.mod.sys.n))
        if self.reduced:                         # the run's first state as _run has it (_observe)
            x = tuple(x) + (np.array(y0), self.mod.get_guess())
        if self.sim.adapt is not None:           # the first step the forward TS tries (_make_ts)
            self._step_of = {}
            x = tuple(x) + self._adaptive_blocks(t0, np.array(y0), x, 0.0, float(self.dt))
        return x

    def march_fixed(self, p, x, k0, grid, keep, guard, progress):
        """timeloop.march's fixed loop: one TS from the stored x_k0 to t_N (a checkpointed
        forward run, resumed at k0); returns (grid, Newton iterations)."""
        _, ts = self._run(self._problem, p, progress=progress, start=(k0, x), keep=keep)
        ts.destroy()
        return grid, self._last_its

    def march_adaptive(self, p, t_end, x, k0, t0, keep, ad, guard, progress, state):
        """timeloop.march's adaptive loop (a checkpointed forward run): one TS with TSAdapt;
        returns ((TimeGrid of steps k0 … N, Newton iterations), rejected steps).  keep()
        gets each accepted step's exact size (``_h_try``: what the scheme used, not
        t_{k+1} − t_k), which the reverse sweep's re-runs take again (``hs``).

        A run resumed at k0 > 0 continues from the stored x_k0 with TSAdapt in the state
        the uninterrupted run had there (``_march_resumed``, integrators/ts_resume.py: the
        same steps, bit for bit); k0 = 0 is the run from x_0."""
        if k0 > 0:
            return self._march_resumed(p, x, k0, t0, keep, state, progress)

        def run(kept):
            _, ts = self._run(self._problem, p, progress=progress, keep=kept)
            rejected = ts.getStepRejections()
            ts.destroy()
            return self._last_its, rejected
        return march_rerun("TS", k0, t0, x, keep, state, run,
                           lambda: (self._live.getTimeStep(), self._live.getStepRejections()))

    def step(self, k, t, x, p):
        """x_{k+1} from x_k: one TS step from the stored state (a checkpoint provider's
        recomputation; the bits of the whole run, ``fixed_times``)."""
        got = []
        if self.adapt is not None:              # a step of an adaptive run: its exact h (set_step)
            _, ts = self._run(self._problem, p, start=(k, x, t), keep=lambda *a: got.append(a[3]),
                              guarded=False, hs=[self.h])
        else:
            _, ts = self._run(self._problem, p, start=(k, x), steps=1, keep=lambda *a: got.append(a[3]),
                              guarded=False)
        ts.destroy()
        return got[0], int(self._last_its[0])

    # -- objective gradient at one stored state, reduced to y = (q, v) ----------------------
    def _ygrads(self, problem, ob, k, traj, p, ref):
        """(∂ψ_k/∂y_k (2n), ∂ψ_k/∂ρ explicit (nd), ∂ψ_k/∂ref (2)) with a_k(y_k), λ_k(y_k)."""
        mod = self.mod
        (gq, gv, ga, gl), gp, gr = problem._local_grads(ob, k, traj, p, ref)
        if getattr(mod, "reduced", False):       # through the presentation x(y; ρ)
            dy, dp = mod.present_grads(traj.t[k], traj.y[k], p, gq, gv, ga, gl)
            return dy, gp + dp, gr
        if (np.any(ga) or np.any(gl)) and hasattr(mod, "output_grads"):
            dy, dp = mod.output_grads(traj.t[k], traj.y[k], p, ga, gl)
            return np.r_[gq, gv] + dy, gp + dp, gr
        if np.any(ga) or np.any(gl):             # penalty: a, λ through F₂(t, y, a) = 0
            n, al = mod.n, mod.alpha
            c = self._kcache
            if c is None or c[0] != k:
                y = traj.y[k]
                pe = mod.eval(traj.t[k], y, np.r_[y[n:], traj.a[k]], p)
                Lq, Lv = pe.lam_ops()
                Lp = al * pe.Lam_p() if mod.nd else None
                Fy = mod.operator(pe.blocks(1.0, 0.0))
                Fp = pe.Fp()[n:] if mod.nd else None
                self._kcache = c = (k, pe, Lq, Lv, Lp, Fy, Fp, pe.blocks(0.0, 1.0))
            _, pe, Lq, Lv, Lp, Fy, Fp, Sb = c
            gq = gq + Lq.T @ gl
            gv = gv + Lv.T @ gl
            if mod.nd:
                gp = gp + Lp.T @ gl
            cc = ga + al * (pe.ev.G().T @ gl)
            self.lin.set(Sb)
            z = self.lin.solve(np.r_[np.zeros(n), cc], transpose=True)[n:]
            w = Fy.T @ np.r_[np.zeros(n), z]
            gq = gq - w[:n]
            gv = gv - w[n:]
            if mod.nd:
                gp = gp - Fp.T @ z
        return np.r_[gq, gv], gp, gr

    # -- discrete adjoint: the steps of Problem._adjoint_sweep ----------------------------------------
    # The reverse sweep is Problem's (the one every stepper's adjoint goes through): in memory
    # here (``adjoint``), from a checkpoint file in CheckpointedRun.adjoint (checkpoint/ts_run.py
    # supplies the states).  This stepper gives its steps (``adjoint_step_into``), its objective
    # partials reduced to y (``adjoint_local``) and the initial-state terms (``adjoint_finish``);
    # the adjoint state is λ_y packed as the record's blocks (μ_q, μ_v = y's halves: ``pack``).
    def uses_own_adjoint(self, problem):
        """Does the gradient come from our own adjoint steps instead of TSAdjoint?  PETSc
        3.18 has none for ARKIMEX, and its RK adjoint is wrong for some tableaus
        (``tsadjoint_rk_ok``: 5dp, 5f — the default of adaptive ts-rk)."""
        if self.kind == "ts-arkimex":
            return True
        return self.kind == "ts-rk" and not tsadjoint_rk_ok(*self._rk_probe(problem))

    def own_step(self):
        """The own adjoint step of this scheme: (k, traj, λ_{k+1}, p) → (λ_k, ∇ψ increment)."""
        return {"ts-arkimex": self._adjoint_step_ark, "ts-rk": self._adjoint_step_rk}.get(self.kind,
                                                                                       self._adjoint_step)

    def adjoint(self, problem, p, own=None):
        """∇ψ in memory: the forward TS run with its trajectory saved for TSAdjoint — the
        one ``forward`` kept at this p (ts_kept.py), else a new one — then Problem's
        reverse sweep over its states.  ``own``: our own adjoint steps instead of
        TSAdjoint (default ``uses_own_adjoint``; ``own_adjoint``: the cross-check)."""
        own = self.uses_own_adjoint(problem) if own is None else own
        if own and self.endpoint:
            raise NotImplementedError("own adjoint: stage-form theta schemes, ts-rk and ts-arkimex only")
        traj, ts = self._take_forward(problem, p, own)
        if traj is None:                        # no kept forward run for this p: run it again
            traj, ts = self._run(problem, p, save=not own)
            problem.traj = traj
        if own:
            if ts is not None:
                ts.destroy()
        else:
            self.open_adjoint(ts, p, traj.t, traj.y, len(problem.objectives))
        x = self._memory_states(traj)
        N = traj.steps
        refs = [ob.reference(self.mod.sys, traj.q[0], p) for ob in problem.objectives]
        try:
            mu, grad, gref = self.adjoint_local(problem, N, traj.t, x(N), p, refs)
            mu, grad, gref = problem._adjoint_sweep(p, N, x(N), mu, grad, gref, x, refs, t=traj.t, h=traj.h)
        finally:
            self.close_adjoint()
        return self.adjoint_finish(problem, p, x(0), mu, grad, gref)

    def own_adjoint(self, problem, p):
        """The discrete adjoint of the same TS scheme by our own steps (no TSAdjoint): the
        cross-check of PETSc's TSAdjoint path (they agree to round-off)."""
        return self.adjoint(problem, p, own=True)

    def _memory_states(self, traj):
        """x_k of an in-memory run as a checkpoint stores it (``extra_state``'s y and guess)."""
        if not self.reduced:
            return traj.x
        return lambda k: traj.x(k) + (traj.y[k], traj.guess[k])

    def open_adjoint(self, ts, p, T, Y, nobj):
        """The reverse steps from here on are TSAdjoint's on ``ts`` (its trajectory kept over
        the times T with states Y, what ``_adjoint_ydot`` reads), until ``close_adjoint``."""
        self.close_adjoint()
        lams, mus = [self.layout.vec() for _ in range(nobj)], [self.layout.pvec() for _ in range(nobj)]
        ts.setCostGradients(lams, mus if self.mod.nd else None)
        self._p, self._cache, self._adj = p, None, (np.asarray(T), np.asarray(Y))
        self._seg = (ts, lams, mus)

    def close_adjoint(self):
        seg, self._seg, self._adj = getattr(self, "_seg", None), None, None
        if seg is not None:
            for v in (seg[0], *seg[1], *seg[2]):
                v.destroy()

    def pack(self, ly):
        """λ_y (rows of y, one column per objective) as the adjoint state's blocks (μ_q, μ_v,
        μ_a, μ_λ, the trailing blocks): y's halves in μ_q and μ_v (a reduced y = (z, ż) is
        shorter than (q, v): zero-padded)."""
        d, n, m, nobj = self.mod.n, self.mod.sys.n, self.mod.sys.m, ly.shape[1]
        mq, mv = np.zeros((n, nobj)), np.zeros((n, nobj))
        mq[:d], mv[:d] = ly[:d], ly[d:]
        return [mq, mv, np.zeros((n, nobj)), np.zeros((m, nobj))] + [np.zeros((w, nobj)) for _, w in self.extra_state]

    def unpack(self, mu):
        d = self.mod.n
        return np.r_[np.asarray(mu[0])[:d], np.asarray(mu[1])[:d]]

    def adjoint_local(self, problem, k, T, x, p, refs):
        """Objective partials at the state x_k (Problem._adjoint_local): ``_ygrads`` of every
        objective, reduced to y, packed; from x_k's stored manifold guess."""
        self._kcache = None                       # (a cache of step k's evaluations, per call)
        self.reseed(x[5] if self.reduced else None)
        view = _StateAt(T, k, x, self)
        parts = [self._ygrads(problem, ob, k, view, p, ref) for ob, ref in zip(problem.objectives, refs)]
        gy, gp, gr = (np.stack([pt[i] for pt in parts], -1) for i in range(3))
        return self.pack(gy), gp, gr

    def adjoint_step_into(self, k, T, x0, x1, mu, grad, p):
        """Reverse step k+1 → k of Problem._adjoint_sweep: (μ_k before step k's objective
        terms, ∇ψ with the step's term added).  TSAdjoint (after ``open_adjoint``) keeps ∇ψ
        in its cost gradient μ and adds to it in place (VecAXPY), so ∇ψ goes in and out
        whole; else our own step (``own_step``) and ∇ψ + its increment."""
        ly = self.unpack(mu)
        self.reseed(x1[5] if self.reduced else None)
        if self._seg is None:
            ly, dg = self.own_step()(k, _Pair(T, k, x0, x1, self), ly, p)
            grad = grad + dg
        else:
            ts, lams, mus = self._seg
            nd = self.mod.nd
            for i in range(len(lams)):
                self.layout.set(lams[i], ly[:, i])
                self.layout.set(mus[i], np.array(grad[:, i]) if nd else np.zeros(1))
            ts.adjointSetSteps(1)
            ts.adjointSolve()
            ly = np.stack([self.layout.get(v) for v in lams], -1)
            grad = np.stack([self.layout.get(v)[:nd] for v in mus], -1)
        self.reseed(x0[5] if self.reduced else None)
        return self.pack(ly), grad

    def adjoint_finish(self, problem, p, x0, mu, grad, gref):
        """The gradient per objective from λ_0, ∂ψ/∂ρ and ∂ψ/∂ref: the reference and
        initial-state (assembly) terms added (Problem._adjoint_finish)."""
        mod = self.mod
        n, nd = mod.sys.n, mod.nd
        lam = self.unpack(mu)
        grads = {}
        for i, ob in enumerate(problem.objectives):
            Jq, Jp = ob.ref_grads(mod.sys, x0[0], p, mod.design_map, nd)
            # y_0 = y(q_0, v_0; ρ): the explicit ρ of the reduced coordinates, then (q_0, v_0)(ρ)
            mq, mv, gy0 = self._y_adjoint(*(self._qv0 or (None, None)), p, lam[:, i])
            mq = mq + Jq.T @ gref[:, i]
            col = lambda x: np.asarray(x, float).reshape(-1, 1)
            g0 = self.init.adjoint(p, col(mq), col(mv), col(np.zeros(n)), col(np.zeros(mod.sys.m)))
            grads[ob.name] = grad[:, i] + Jp.T @ gref[:, i] + gy0 + np.asarray(g0).reshape(-1)
        return grads

    def rerun(self, problem, base, x_base, k, T, y_k, p, H=None):
        """The states x_base … x_k of a checkpointed run, by the TS re-run from the stored
        x_base to t_k with its trajectory kept (memory: the stages TSAdjoint reads), which
        the next reverse steps run TSAdjoint back through (``open_adjoint``).  ``H``: an
        adaptive run's exact step sizes.  The re-run y_k must be ``y_k`` bit for bit (the
        state the sweep came from): otherwise RuntimeError — a stretch that does not repeat
        would give another gradient than the uninterrupted run."""
        X = {base: x_base}

        def keep(j, t, h, x):
            X[j] = x
        self.close_adjoint()
        if H is not None:                       # an adaptive run's stretch: its exact steps
            _, ts = self._run(problem, p, save=True, start=(base, x_base, T[base]), keep=keep, guarded=False,
                              hs=H[base:k])
        else:
            _, ts = self._run(problem, p, save=True, start=(base, x_base), steps=k - base, keep=keep,
                              guarded=False)
        why = self.solves.mismatch(self.ystate(X[k]), y_k, k - base)
        if why:
            ts.destroy()
            raise RuntimeError(f"step {k} (t = {T[k]:.6g}): the TS step recomputed from the checkpoint differs "
                               f"from the stored state {why}")
        Y = [self.ystate(X[j]) for j in range(base, k + 1)]
        self.open_adjoint(ts, p, T[base:k + 1], Y, len(problem.objectives))
        return X

    # -- tangent-linear (direct) steps of the same scheme: Problem's direct loop --------------------
    # The tangent state is (dy/dρ,) and the objective partials ([∂ψ_k/∂y_k], ∂ψ_k/∂ρ, ∂ψ_k/∂ref)
    # (``own_adjoint_terms``; integrators/one_step.py).
    # A reduced ODE's evaluations start from its state's stored manifold guess, as the adjoint
    # steps' do (``adjoint_step_into``: step k → k+1 from x_{k+1}'s guess, the objective terms at
    # k from x_k's): the manifold Newton's last bits depend on its first guess, so without it the
    # direct gradient depended on what ran before (the guess an adjoint sweep, a forward run or
    # the previous direct sweep left: Maggi ts-rk, 6e-15 absolute in ∇ψ) — tests/test_reduced_ts.py
    @staticmethod
    def _guess_at(traj, k):
        """x_k's stored manifold guess (in memory: traj.guess; a checkpoint's rows: block 5)."""
        g = getattr(traj, "guess", None)
        if g is not None:
            return g[k]
        extra = getattr(traj, "extra", ())
        return extra[1][k] if len(extra) >= 2 else None

    def tangent_start(self, dx0, p):
        """(dy_0/dρ,) from dx_0/dρ of the initial state (y_0 = y(q_0, v_0; ρ); no manifold solve)."""
        self._cache, self._kcache = None, None
        return (self._y_tangent(*(self._qv0 or (None, None)), p, dx0[0], dx0[1]),)

    def tangent_step_at(self, k, traj, dx, p):
        if self.reduced:
            self.reseed(self._guess_at(traj, k + 1))
        return (self._tangent_step(k, traj, dx[0], p),)

    def tangent_local(self, problem, ob, k, traj, p, ref):
        """Objective ``ob``'s partials at step k reduced to y (``_ygrads``), y's as one block."""
        if self.reduced:
            self.reseed(self._guess_at(traj, k))
        gy, gp, gr = self._ygrads(problem, ob, k, traj, p, ref)
        return [gy], gp, gr

    def _tangent_step(self, k, traj, dy, p):
        if self.kind == "ts-rk":
            return self._tangent_step_rk(k, traj, dy, p)
        if self.kind == "ts-arkimex":
            return self._tangent_step_ark(k, traj, dy, p)
        mod, th = self.mod, self.theta
        h = traj.t[k + 1] - traj.t[k]
        y0, y1 = traj.y[k], traj.y[k + 1]
        if not self.endpoint:
            X = y0 + th * (y1 - y0)
            pe = mod.eval(traj.t[k] + th * h, X, (y1 - y0) / h, p)
            # J (dX − dy_k) = −(F_y dy_k + F_ρ): no O(α/h) cancellation
            self.lin.set(pe.blocks(1.0, 1.0 / (th * h)))
            delta = self.lin.solve(-(mod.operator(pe.blocks(1.0, 0.0)) @ dy + pe.Fp()))
            return dy + delta / th
        pe1 = mod.eval(traj.t[k + 1], y1, (y1 - y0) / (th * h), p)
        pe0 = mod.eval(traj.t[k], y0, np.zeros_like(y0), p)
        self.lin.set(pe1.blocks(1.0, 1.0 / (th * h)))
        rhs = (mod.operator(pe1.blocks(0.0, 1.0)) @ dy / (th * h) - pe1.Fp()
               - (1 - th) / th * (mod.operator(pe0.blocks(1.0, 0.0)) @ dy + pe0.Fp()))
        return self.lin.solve(rhs)

    def _tangent_step_rk(self, k, traj, dy, p):
        """The tangent of one explicit RK step (PETSc's tableau A, b, c):
            Y_i = y_k + h Σ_{j<i} A_ij K_j,  K_i = G(t_k + c_i h, Y_i),  y_{k+1} = y_k + h Σ b_i K_i
            dY_i = dy_k + h Σ_{j<i} A_ij dK_j,  dK_i = G_y(Y_i) dY_i + G_ρ(Y_i)
            dy_{k+1} = dy_k + h Σ b_i dK_i
        (stage values recomputed here from y_k: PETSc's differ by round-off)."""
        A, b, c = self._tableau
        t0, y0 = traj.t[k], traj.y[k]
        h = traj.t[k + 1] - t0
        K, dK = [], []
        for i in range(len(b)):
            Y = y0 + h * sum((A[i, j] * K[j] for j in range(i) if A[i, j]), np.zeros_like(y0))
            dY = dy + h * sum((A[i, j] * dK[j] for j in range(i) if A[i, j]), np.zeros_like(dy))
            pe = self.mod.eval(t0 + c[i] * h, Y, np.zeros_like(Y), p)
            K.append(pe.G())
            dK.append(pe.Gy() @ dY + pe.Gp())
        return dy + h * sum(bi * dKi for bi, dKi in zip(b, dK) if bi)

    def _rk_probe(self, problem):
        """(A, b) of the RK method the runs will use (a TS made and destroyed)."""
        ts = self._make_ts(problem, problem.sys.p, False)
        A, b, _ = self._tableau
        ts.destroy()
        return A, b

    def _adjoint_step_rk(self, k, traj, lam1, p):
        """The transpose of ``_tangent_step_rk``: μ_K_i = h b_i λ_{k+1}, then for i = s−1 … 0
        μ_Y_i = G_yᵀ μ_K_i, ∇ψ += G_ρᵀ μ_K_i, μ_K_j += h A_ij μ_Y_i (j < i); λ_k = λ_{k+1} + Σ μ_Y_i."""
        A, b, c = self._tableau
        t0, y0 = traj.t[k], traj.y[k]
        h = traj.t[k + 1] - t0
        s = len(b)
        K, pes = [], []
        for i in range(s):
            Y = y0 + h * sum((A[i, j] * K[j] for j in range(i) if A[i, j]), np.zeros_like(y0))
            pe = self.mod.eval(t0 + c[i] * h, Y, np.zeros_like(Y), p)
            K.append(pe.G())
            pes.append(pe)
        mK = [h * b[i] * lam1 for i in range(s)]
        lam = lam1.copy()
        grad = 0.0
        for i in range(s - 1, -1, -1):
            mY = pes[i].Gy().T @ mK[i]
            grad = grad + pes[i].Gp().T @ mK[i]
            lam = lam + mY
            for j in range(i):
                if A[i, j]:
                    mK[j] = mK[j] + h * A[i, j] * mY
        return lam, grad

    def _adjoint_step(self, k, traj, lam1, p):
        """The transpose of ``_tangent_step`` (stage form): (λ_k, ∇ψ increment) from λ_{k+1}.

        Tangent: dy_{k+1} = dy_k + δ/θ,  J δ = −(F_y dy_k + F_ρ),  J = F_y + F_ẏ/(θh).
        So with ν = J⁻ᵀ λ_{k+1}/θ:  λ_k = λ_{k+1} − F_yᵀ ν,  ∇ψ −= F_ρᵀ ν.
        (Columns: one per objective.)"""
        mod, th = self.mod, self.theta
        h = traj.t[k + 1] - traj.t[k]
        y0, y1 = traj.y[k], traj.y[k + 1]
        pe = mod.eval(traj.t[k] + th * h, y0 + th * (y1 - y0), (y1 - y0) / h, p)
        self.lin.set(pe.blocks(1.0, 1.0 / (th * h)))
        nu = self.lin.solve(lam1 / th, transpose=True)
        lam0 = lam1 - mod.operator(pe.blocks(1.0, 0.0)).T @ nu
        return lam0, -(pe.Fp().T @ nu)
