"""Generalized-α of the index-3 equations on PETSc TS (``integrator = "ts-alpha2"``).

PETSc's TSALPHA2 (src/ts/impls/implicit/alpha/alpha2.c, Chung–Hulbert 1993) steps a
second-order system F(t, X, Ẋ, Ẍ) = 0; here X = (q, λ), the multipliers among the
unknowns.  Per step it solves with SNES for X_{n+1} (not for a_{n+1} as our
NewmarkFamily does), with the Newmark update

    A_{n+1} = (X_{n+1} − X_n − h V_n)/(βh²) − (1 − 2β)/(2β) A_n
    V_{n+1} = V_n + h [(1 − γ) A_n + γ A_{n+1}]

— the same as ours (integrators/newmark.py) — and its α weights on the *new* state:
α_m^P = 1 − α_m, α_f^P = 1 − α_f (TSAlpha2SetRadius: α_m^P = (2−ρ∞)/(1+ρ∞),
α_f^P = 1/(1+ρ∞); γ and β equal ours).

Where the two forms differ.  TSALPHA2 evaluates the user's F *once*, at interpolated
states: F(t_n + α_f^P h, X_a, V_a, A_a) with X_a = X_n + α_f^P (X_{n+1} − X_n) (V_a, A_a
likewise, A with α_m^P), scaled by 1/α_f^P.  Our scheme interpolates *residuals*:
R₁ = (1−α_m) r_I(x_{n+1}) + (1−α_f)[r_F + Φ_qᵀλ](x_{n+1}) + α-weighted terms at x_n.
For a linear, constant-coefficient system the two coincide; for a multibody system
(M(q), Φ_q(q), forces nonlinear in q, v) they differ by O(h²) per step, so a plain
physical I2Function would *not* reproduce our stepper to round-off.  Reproduction is
exact here because the I2Function is not a physical residual at X_a: X_a is affine in
the unknown, so it recovers the end state,

    X_{n+1} = X_n + (X_a − X_n)/α_f^P,   a_{n+1}, v_{n+1}: the Newmark update above,

and returns our interpolated residual R(x_{n+1}; x_n) with the h²-scaled constraint
rows Φ(q_{n+1})/(βh²).  TSALPHA2 takes each step (parmbs's time loop calls TSStep:
timeloop.march_ts, ts_steps.py) with its own Newmark update, the SNES
Newton solve (our convergence test: the position update |ΔX_q|∞ = βh²|Δa|∞ below
atol + rtol |q|) and the LU of its Jacobian

    J_P = d(F/α_f^P)/dX_{n+1} = J diag(1/(βh²) I_n, I_m) / α_f^P

(J: our Newton matrix in z = (a, λ)).  Its own V_a, A_a are checked against ours at
every step (they agree when its A_0 is the consistent initial acceleration).

Initial acceleration.  TSALPHA2 does not take A_0: at its first step
(TSAlpha_Restart) it runs two backward-Euler half steps (parameters 1, 1, 1, ½) and
sets A_0 = (−3V_0 + 4V_1 − V_2)/(h/2) — twice the backward-difference derivative (PETSc
3.18; measured: a constant Ẍ = c in both half steps gives A_0 = 2c).  During those
half steps the I2Function here is F = (Ẍ_q − a_0/2, X_λ − λ_0), so A_0 = a_0, the
consistent acceleration of InitialState, and the λ rows stay at λ_0.  Should a PETSc
version change that formula, the per-step check of A_a names it.

Round-off.  TSALPHA2's unknown is the position, ours the acceleration: a_{n+1} recovered
from X_{n+1} carries ε|q|/(βh²) (and v_{n+1} ε|q|γ/(βh)), X_{n+1} from X_a a factor
1/α_f^P of ε|X|.  That, propagated over the run by the dynamics, is the agreement
bound of tests/test_ts_alpha2.py.

Derivatives: the discrete equations are ours, so ``direct`` and ``adjoint`` are
NewmarkFamily's tangent and adjoint sweeps over the TS's stored trajectory (PETSc has
no TSAdjoint for TSALPHA2).

Adaptive steps (``simulation.adapt``, or ``-parmbs_ts_adapt_type basic`` with its
defaults; ``none`` keeps dt): TSAdapt "basic" on TSALPHA2's own local error estimate
(TSEvaluateWLTE_Alpha2: variable-step backward differences over X_{n−1}, X_n, X_{n+1}
and V likewise, order 2; at the first step the restart's half steps) in PETSc's
weighted norm, the multiplier rows with atol = LAMBDA_ATOL so they count no error;
rtol, atol, dt_min, dt_max from simulation.adapt, dt the first step; a failed Newton
solve rejects the step; h pushed below dt_min is an error naming step and time
(``_floor``: PETSc's basic adapter would accept a step at its minimum whatever its error).  A rejected attempt is retried with a smaller h without a new
PreStep, so every callback reads the attempt's h = TSGetTimeStep and t_{n+1} = t_n + h
(``_attempt``).  The accepted (t_k, h_k) become the problem's grid: the sweeps above
differentiate the run on those steps with the step sizes frozen (as PETSc's TSAdjoint
does for its schemes), and a frozen replay (Problem.frozen_steps: FD, verify) repeats
the adaptive run bit for bit (tests/test_ts_alpha2_adapt.py).  Checkpointed adaptive
runs (every schedule): the file keeps the accepted t_k, h_k (parmbs's CheckpointedRun);
the forward run is one adaptive TSALPHA2 (``march_adaptive``), re-run from x_0 when
resumed in its forward part (TSAdapt's history is not in the file), and the reverse
sweep recomputes on the stored steps.  Fixed steps: HDF5 checkpoints with every schedule and --restart through
parmbs's CheckpointedRun (``_run`` starts TSALPHA2 at any stored state); the TS and
our Newton matrix on the problem's communicator (several ranks: X = (q, λ) split as
NewmarkFamily's operator, MUMPS, the model evaluated whole on every rank and each rank
setting its rows; tests/test_ts_mpi.py), rigid and beam models (not FFR continua, whose
Newton matrices are structured operators).
"""
import ctypes
from types import SimpleNamespace

import numpy as np

from .._petsc import PETSc
from .._log import stage, instrument
from ..model.system import ModelError
from ..petsc_options import _libpetsc, adapt_type, set_config_options
from .newmark import NewmarkFamily, StepError
from .rerun import march_rerun
from .timeloop import Adapt, StepSizeError, TimeGrid, march_ts
from .trajectory import Trajectory
from .ts import PREFIX, TS_PREFIX
from .ts_steps import TSSteps
from .one_step import WHOLE, OneStep

#: TSAlpha_Restart's parameters (α_m, α_f, γ, β) during its backward-Euler half steps
RESTART_PARAMS = (1.0, 1.0, 1.0, 0.5)
#: TSAlpha_Restart's A_0 is this multiple of the constant Ẍ of its two half steps
RESTART_FACTOR = 2.0
#: vector atol of the multiplier rows in TSAdapt's error norm: they contribute no error
#: (index-3 multipliers carry the h⁻² round-off amplification, not a truncation error)
LAMBDA_ATOL = 1e300


def _alpha2_params(ts, params=None):
    """TSAlpha2GetParams / TSAlpha2SetParams (petsc4py 3.18's get/setAlphaParams call
    the first-order TSALPHA's functions, which TSALPHA2 does not have)."""
    lib = _libpetsc()
    h = ctypes.c_void_p(ts.handle)
    if params is not None:
        lib.TSAlpha2SetParams.argtypes = [ctypes.c_void_p] + [ctypes.c_double] * 4
        if lib.TSAlpha2SetParams(h, *params) != 0:
            raise RuntimeError("TSAlpha2SetParams failed")
        return tuple(params)
    v = [ctypes.c_double() for _ in range(4)]
    if lib.TSAlpha2GetParams(h, *[ctypes.byref(x) for x in v]) != 0:
        raise RuntimeError("TSAlpha2GetParams failed")
    return tuple(x.value for x in v)


class TSAlpha2Stepper(OneStep):
    """Whole-run stepper: ``forward`` on TSALPHA2, ``direct``/``adjoint`` by
    NewmarkFamily's sweeps over its trajectory (module docstring)."""

    name = "ts-alpha2"

    def __init__(self, system, sim, design_map=None, ndesign=0, comm=None, native=False):
        self.sim = sim
        #: PETSc's own form instead (benchmarks/ts_alpha2_native.py only): the residual
        #: *at* the interpolated state, F = r(t_a, x_a) + Φ_q(q_a)ᵀλ_a, Φ(q_a)/(βh²) —
        #: not our scheme (module docstring); no derivatives
        self.native = native
        # the TS and our Newton matrix on the problem's communicator (several ranks:
        # distributed, MUMPS; one rank or COMM_SELF: the serial objects)
        c = comm if comm is not None else PETSc.COMM_WORLD
        if not hasattr(c, "getSize"):
            c = PETSc.Comm(c)
        nm = NewmarkFamily.genalpha(system, sim.dt, sim.rho_inf, newton=sim.newton,
                                    petsc_options=sim.petsc_options, design_map=design_map,
                                    ndesign=ndesign, comm=c if c.getSize() > 1 else PETSc.COMM_SELF)
        if nm.schur is not None:
            raise ModelError("simulation.integrator", "ts-alpha2 does not run FFR continua (their Newton "
                             "matrices are structured operators); use integrator = \"genalpha\"")
        self.nm = instrument(nm)            # its tangent/adjoint steps logged (-log_view)
        self.init, self.plan, self.sys = nm.init, nm.plan, system
        #: rows of X = (q, λ) this rank owns (nm's contiguous split), and whether split
        self.comm, self._lo, self._hi = nm.op.comm, nm.op.r0, nm.op.r1
        self.dist = self.comm.getSize() > 1
        self._counts = (np.array(self.comm.tompi4py().allgather(self._hi - self._lo), np.int64)
                        if self.dist else None)
        #: PETSc's parameters (weights on the new state), from ours
        self.params = (1.0 - nm.am, 1.0 - nm.af, nm.gamma, nm.beta)
        defaults = {(k[3:] if k.startswith("ts_") else k): v for k, v in sim.petsc_options.items()}
        defaults.setdefault("pc_factor_mat_ordering_type", "natural")    # saddle point: no pivoting
        defaults.setdefault("snes_linesearch_type", "basic")
        set_config_options(PREFIX, defaults)

    @property
    def h(self):
        return self.nm.h

    @h.setter
    def h(self, value):
        self.nm.h = value

    # -- X = (q, λ) on this rank's rows ----------------------------------------------------------
    def _full(self, v):
        """The whole of ``v`` on every rank (collective when distributed: Allgatherv)."""
        if not self.dist:
            return v.getArray(readonly=True).copy()
        out = np.empty(int(self._counts.sum()))
        self.comm.tompi4py().Allgatherv(np.ascontiguousarray(v.getArray(readonly=True)), [out, self._counts])
        return out

    def _put(self, v, full):
        """v's own rows from the whole array."""
        v.setArray(full[self._lo:self._hi])

    # -- the step's state from TSALPHA2's unknown X_{n+1} = (q, λ) ------------------------------
    def _newmark(self, q1):
        """(v_{n+1}, a_{n+1}) from q_{n+1}: TSALPHA2's update (TSAlpha_StageVecs), same order
        of operations."""
        q0, v0, a0, _ = self._x
        h, b, g = self.h, self.nm.beta, self.nm.gamma
        a1 = (-(1 - 2 * b) / (2 * b)) * a0 + (1 / (h * h * b)) * ((q1 - q0) - h * v0)
        v1 = v0 + (h * g) * ((1.0 - g) / g * a0 + a1)
        return v1, a1

    def _state(self, Xa, Va, Aa):
        """x_{n+1} = (q, v, a, λ) and our evaluator there, from the interpolated X_a."""
        key = Xa.tobytes()
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        n = self.sys.n
        amP, afP = self.params[:2]
        X0 = self._X0
        X1 = X0 + (Xa - X0) / afP
        q1, lam1 = X1[:n], X1[n:]
        v1, a1 = self._newmark(q1)
        self._check_interpolation(v1, a1, Va[:n], Aa[:n], amP, afP)
        x1 = (q1, v1, a1, lam1)
        ev = self.nm._eval(self._t1, x1, self._p)
        self._cache = (key, (x1, ev))
        return x1, ev

    def _check_interpolation(self, v1, a1, Va, Aa, amP, afP):
        """TSALPHA2's own V_a, A_a against ours: equal up to the round-off of recovering
        a from X (ε|q|/(βh²), module docstring); 1e-6 of the scale catches an A_0 that is
        not the consistent one (an O(1) difference), not round-off."""
        _, v0, a0, _ = self._x
        ea = np.max(np.abs(Aa - (a0 + amP * (a1 - a0))), initial=0.0)
        ev = np.max(np.abs(Va - (v0 + afP * (v1 - v0))), initial=0.0)
        sa = 1.0 + np.max(np.abs(a1), initial=0.0)
        sv = 1.0 + np.max(np.abs(v1), initial=0.0)
        if not (ea <= 1e-6 * sa and ev <= 1e-6 * sv):
            raise RuntimeError(f"TSALPHA2's interpolated acceleration/velocity differ from the generalized-α "
                               f"update by {ea:.2e}/{ev:.2e} at step {self._k + 1}: its initial acceleration "
                               f"(TSAlpha_Restart) is not the consistent one")

    # -- TS callbacks -----------------------------------------------------------------------------
    def _restarting(self, ts):
        return _alpha2_params(ts) == RESTART_PARAMS

    def _prestep(self, ts):
        k = self._k0 + ts.getStepNumber()
        g = self._grid
        self._k, self._x = k, self._states[k]
        self._t1 = None
        if g is not None:
            self.h = g.h[k]
            self._t1 = g.t[k] + g.h[k]
            if self._replay:
                ts.setTimeStep(g.h[k])          # a frozen (variable) step sequence
        self._X0 = np.r_[self._x[0], self._x[3]]
        nm = self.nm
        self._R_old = 0.0
        if nm.am or nm.af:
            tk = g.t[k] if g is not None else ts.getTime()
            self._R_old = nm._eval(tk, self._x, self._p).residual(nm.am, nm.af)
        self._cache = None

    def _attempt(self, ts):
        """Adaptive runs: the step size of this attempt (TSAdapt shrinks it after a
        rejection and retries the step without a new PreStep; petsc4py 3.18 has no
        PreStage) and its end time, the sum t_k + h PETSc forms (ts->ptime +=
        ts->time_step).  Called by every callback of the step's Newton solve."""
        if self._grid is None:
            h = ts.getTimeStep()
            if h != self.h or self._t1 is None:
                self._floor(ts, h)
                self.h = h
                self._t1 = ts.getTime() + h
                self._cache = None

    def _floor(self, ts, h):
        """Exit 1 (StepSizeError, step and time named) when TSAdapt's rejections push h
        below simulation.adapt.dt_min — as the own controller (timeloop.py) — instead of
        PETSc's basic adapter accepting a step at its minimum whatever its error.  TSAdapt
        gets half of dt_min as its floor so such an attempt is seen here; the last steps
        MATCHSTEP shortens to land on t_end (h = rest or rest/2) are not limited."""
        t, ad = ts.getTime(), self._ad
        t_end = self._t0 + ad.horizon
        if h < ad.dt_min and t + 2.0 * h < t_end - 1e-12 * max(abs(t_end), ad.horizon):
            k = self._k + 1
            self._fail = StepSizeError(
                f"step {k} (t = {t:.6g}): the step size fell below dt_min = {ad.dt_min:.3g} s (TSAdapt rejected "
                f"{ts.getStepRejections()} steps); loosen simulation.adapt.rtol/atol or lower dt_min")
            raise self._fail

    def _i2function(self, ts, t, X, V, A, F):
        n = self.sys.n
        Xa, Va, Aa = (self._full(u) for u in (X, V, A))
        if self._restarting(ts):
            # backward-Euler half steps: Ẍ_q = a_0/2 (A_0 = 2c, module docstring), λ = λ_0
            self._put(F, np.r_[Aa[:n] - self._x[2] / RESTART_FACTOR, Xa[n:] - self._x[3]])
            return
        self._attempt(ts)
        nm = self.nm
        bh2 = nm.beta * self.h * self.h
        if self.native:
            ev = self._native_eval(t, Xa, Va, Aa)
            self._put(F, np.r_[ev.residual(1.0, 1.0), ev.phi() / bh2])
            return
        x1, ev = self._state(Xa, Va, Aa)
        self._put(F, np.r_[ev.residual(1 - nm.am, 1 - nm.af) + self._R_old, ev.phi() / bh2])

    def _i2jacobian(self, ts, t, X, V, A, shift_v, shift_a, J, P):
        n, m = self.sys.n, self.sys.m
        if self._restarting(ts):
            P.zeroEntries()
            d = P.createVecLeft()
            self._put(d, np.r_[np.full(n, shift_a), np.ones(m)])
            P.setDiagonal(d)
        else:
            self._attempt(ts)
            nm = self.nm
            if self.native:
                self._native_matrix(self._native_eval(t, *(self._full(u) for u in (X, V, A))))
            else:
                _, ev = self._state(*(self._full(u) for u in (X, V, A)))
                nm._set_matrix(ev.real())
            nm.op.A.copy(P, PETSc.Mat.Structure.SAME_NONZERO_PATTERN)
            afP, bh2 = self.params[1], nm.beta * self.h * self.h
            s = P.createVecRight()
            self._put(s, np.r_[np.full(n, 1.0 / (bh2 * afP)), np.full(m, 1.0 / afP)])
            P.diagonalScale(None, s)
        P.assemble()
        if J != P:
            J.assemble()
        return True

    def _guess(self, snes, X):
        """Newton's first iterate: ours, X = (q̂ + βh² a_n, λ_n) — the predictor with the
        old acceleration — not TSALPHA2's X_n (SNESSetComputeInitialGuess; the restart's
        half steps keep X_n).  Same start, same iterates: 2 instead of 3 Newton
        iterations per step on the five-bar."""
        ts = self._ts
        if self._restarting(ts):
            return
        self._attempt(ts)
        qp, _ = self.nm._predict(self._x)
        h = self.h
        self._put(X, np.r_[qp + self.nm.beta * h * h * self._x[2], self._x[3]])

    def _native_eval(self, t, Xa, Va, Aa):
        n = self.sys.n
        return self.nm._eval(t, (Xa[:n], Va[:n], Aa[:n], Xa[n:]), self._p)

    def _native_matrix(self, ev):
        """d/dz of the native residual, z = (a_{n+1}, λ_{n+1}): q_a, v_a, a_a move by
        α_f^P βh², α_f^P γh, α_m^P per unit of a_{n+1}, λ_a by α_f^P per unit of λ_{n+1}."""
        nm, h = self.nm, self.h
        amP, afP = self.params[:2]
        bh2 = nm.beta * h * h
        F = ev.force_blocks(afP * bh2, afP * nm.gamma * h, amP, 1.0, 1.0)
        H = [afP * bh2 * Hb for Hb in ev.hess_blocks()]
        G = ev.phi_q_blocks()
        nm.op.set_values(F + H + [afP * Gb for Gb in G] + [afP * np.swapaxes(Gb, 1, 2) for Gb in G]
                         + nm.zero_diag)

    def _converged(self, snes, it, norms):
        """Our Newton test (newton_acceleration_form): |ΔX_q|∞ = βh²|Δa|∞ ≤ atol + rtol|q|∞."""
        R = PETSc.SNES.ConvergedReason
        if it == 0:
            return R.ITERATING
        n, tol = self.sys.n, self.sim.newton
        dX = snes.getSolutionUpdate().getArray(readonly=True)
        X = snes.getSolution().getArray(readonly=True)
        nq = max(0, min(n, self._hi) - self._lo)          # this rank's q rows
        finite = bool(np.all(np.isfinite(dX)) and np.all(np.isfinite(X)))
        dq = np.max(np.abs(dX[:nq]), initial=0.0) if finite else 0.0
        xq = np.max(np.abs(X[:nq]), initial=0.0) if finite else 0.0
        if self.dist:                                     # every rank the same verdict
            from mpi4py import MPI
            loc, glob = np.array([0.0 if finite else 1.0, dq, xq]), np.zeros(3)
            self.comm.tompi4py().Allreduce(loc, glob, op=MPI.MAX)
            finite, dq, xq = glob[0] == 0.0, glob[1], glob[2]
        if not finite:
            return R.DIVERGED_FNORM_NAN
        if dq <= tol.atol + tol.rtol * xq:
            return R.CONVERGED_SNORM_RELATIVE
        return R.DIVERGED_MAX_IT if it >= tol.max_it else R.ITERATING

    def _make_ts(self, k0, k1, ad=None):
        """The TSALPHA2 of steps k0 … k1 of ``self._grid``, or (``ad``: timeloop.Adapt)
        of an adaptive run from ``self._t0`` to ``ad``'s horizon (``_adapt``)."""
        n, m = self.sys.n, self.sys.m
        ts = PETSc.TS().create(comm=self.comm)
        ts.setOptionsPrefix(TS_PREFIX)
        ts.getSNES().setOptionsPrefix(PREFIX)
        ts.setProblemType(ts.ProblemType.NONLINEAR)
        ts.setType("alpha2")
        _alpha2_params(ts, self.params)
        self._F = self.nm.op.A.createVecLeft()
        self._J = self.nm.op.A.duplicate(copy=False)
        ts.setI2Function(self._i2function, self._F)
        ts.setI2Jacobian(self._i2jacobian, self._J)
        if ad is None:
            ts.setTime(self._grid.t[k0])
            ts.setTimeStep(self._grid.h[k0])
            ts.setMaxTime(self._grid.t[k1])
            ts.setMaxSteps(k1 - k0)
        else:
            # TSAdapt basic on TSALPHA2's own estimate (TSEvaluateWLTE_Alpha2: variable-step
            # backward differences of X and V, order 2); the multiplier rows weighted zero
            ts.setTime(self._t0)
            ts.setTimeStep(ad.dt0)
            ts.setMaxTime(self._t0 + ad.horizon)
            ts.setMaxSteps(min(int(np.ceil(ad.horizon / ad.dt_min)) + 1, 2 ** 31 - 1))
            adapt_type(ts, "basic")
            atol = self.nm.op.A.createVecRight()
            self._put(atol, np.r_[np.full(n, ad.atol), np.full(m, LAMBDA_ATOL)])
            ts.setTolerances(rtol=ad.rtol, atol=atol)
            ts.setStepLimits(0.5 * ad.dt_min, ad.dt_max)      # (below dt_min: _floor's error)
        ts.setExactFinalTime(ts.ExactFinalTime.MATCHSTEP)
        ts.setPreStep(self._prestep)
        ts.setFromOptions()
        if ad is None:
            adapt_type(ts, "none")              # the grid's steps whatever the options say
        else:
            ts.setMaxSNESFailures(-1)           # a failed Newton solve rejects the step (smaller h)
        got = _alpha2_params(ts)
        if not np.allclose(got, self.params, rtol=0.0, atol=0.0):
            raise ModelError("simulation.rho_inf", f"the TSALPHA2 parameters {got} from PETSc options "
                             f"(-{TS_PREFIX}ts_alpha_*) differ from simulation.rho_inf's {self.params}; "
                             "set rho_inf instead")
        snes = ts.getSNES()
        snes.setConvergenceTest(self._converged)
        self._ts = ts
        snes.setInitialGuess(self._guess)
        snes.setTolerances(max_it=self.sim.newton.max_it)
        return ts

    # -- forward: TSALPHA2 over steps k0 … k1 from a stored state ------------------------------------
    def _run(self, grid, p, k0, x, k1, keep, guard=None, progress=None, ad=None, t0=None):
        """TSALPHA2 from x_k0 at t_k0 through step k1 on ``grid``; ``keep(k, t_k, h_{k−1},
        x_k)`` for every state k0 < k ≤ k1.  Returns the Newton iterations per step.
        ``grid`` None: an adaptive run (``ad``: timeloop.Adapt) from x at ``t0`` (k0 = 0)
        to the end of the horizon, its steps chosen by TSAdapt; ``k1`` is then only the
        nominal step count of the progress report, and the accepted times and step sizes
        are ``self.accepted`` (T, H) afterwards.  The steps are taken by parmbs's time loop
        (timeloop.march_ts), one TSStep each (``ts_step``; ts_steps.py).

        A run may start from any stored state: x_{k+1} depends on x_k (ours: the
        predictor, the old residual, the Newmark update) and on TSALPHA2's X_n = (q_k,
        λ_k) alone — its own V_n, A_n enter only the check of its interpolated
        velocity/acceleration, and its restart half steps (TSAlpha_Restart, at the first
        step of every TS) leave X_n as it is.  So a run resumed from a checkpoint, or a
        step recomputed by a checkpoint provider, gives the bits of the uninterrupted run
        (tests/test_ts_checkpoint.py)."""
        self._grid, self._k0, self._t0, self._ad, self._fail = grid, k0, t0, ad, None
        self._replay = grid is not None and not np.all(grid.h == grid.h[0])
        self._p, self._cache = p, None
        self._states = {k0: x}
        self._TH = ([t0], [])
        ts = self._make_ts(k0, k1, ad if grid is None else None)
        X = self.nm.op.A.createVecRight()
        self._put(X, np.r_[x[0], x[3]])
        V = X.duplicate()
        self._put(V, np.r_[x[1], np.zeros(self.sys.m)])
        ts.setSolution2(X, V)
        try:
            self._steps = TSSteps(ts, X)
            its = march_ts(self, x, k0, keep, guard, progress, k1 if grid is None else grid.steps,
                           (t0, t0 + ad.horizon) if grid is None else None)
        finally:
            self._cache = None
            self._states = None
            self._steps = None
        reason = ts.getConvergedReason()
        self.rejected = ts.getStepRejections()
        tend = ts.getTime()
        self._ts = None
        T, H = self._TH
        if grid is None:
            done = abs(T[-1] - (t0 + ad.horizon)) <= 1e-12 * max(abs(t0 + ad.horizon), 1.0)
            self.accepted = (np.array(T), np.array(H))
        else:
            done = len(its) == k1 - k0
        if reason < 0 or not done:
            k = k0 + len(its) + 1
            why = {-2: "too many step rejections (adaptive)"}.get(reason, "Newton did not converge")
            t = tend if grid is None else grid.t[min(k, grid.steps)]
            ts.destroy()
            raise StepError(f"step {k} (t = {t:.6g}): TSALPHA2 stopped (reason {reason}: {why})")
        ts.destroy()
        return its

    def ts_finished(self):
        """Has the TSALPHA2 of the current run reached its end (timeloop.march_ts)?"""
        return self._steps.finished

    def ts_step(self, k, x):
        """One accepted TSALPHA2 step x_k → x_{k+1} (timeloop.march_ts): (t_{k+1}, h_k,
        x_{k+1}, Newton iterations); x_{k+1} from TSALPHA2's X_{n+1} by our Newmark update."""
        ts, grid, n = self._ts, self._grid, self.sys.n
        try:
            self._steps.step()
        except PETSc.Error:
            if self._fail is not None:
                raise self._fail from None
            raise StepError(f"step {k + 1} (t = {self._time_of(k + 1, ts):.6g}): the TSALPHA2 step failed "
                            f"(Newton did not converge in {self.sim.newton.max_it} iterations)") from None
        k += 1
        X = self._full(ts.getSolution())
        self._x = self._states[k - 1]
        if grid is not None:
            tk, hk = grid.t[k], grid.h[k - 1]
        else:                     # the accepted attempt's h (_attempt), t_k = t_{k−1} + h
            T, H = self._TH
            tk, hk = ts.getTime(), self.h
            if tk != T[-1] + hk:
                raise RuntimeError(f"step {k}: TSALPHA2 reached t = {tk!r}, not t_k + h = {T[-1] + hk!r}")
            T.append(tk)
            H.append(hk)
        self.h = hk
        v1, a1 = self._newmark(X[:n])
        x1 = (X[:n], v1, a1, X[n:])
        if not all(np.all(np.isfinite(y)) for y in x1):
            raise StepError(f"step {k} (t = {tk:.6g}): non-finite state")
        self._states[k] = x1
        del self._states[k - 1]
        return tk, hk, x1, ts.getSNES().getIterationNumber()

    def _time_of(self, k, ts):
        """t_k for a message: the grid's, or the TS's current time (adaptive)."""
        g = self._grid
        return g.t[min(k, g.steps)] if g is not None else ts.getTime()

    @stage("forward")
    def forward(self, problem, p, progress=None, on_step=None):
        ad = None if problem.frozen_grid is not None else self._adapt(problem)
        grid = problem.frozen_grid if problem.frozen_grid is not None else (
            None if ad is not None else problem._fixed_grid)
        t0 = problem.t0
        x0 = self.nm.initial(t0, p)
        guard = getattr(problem, "guard", None)
        if guard is not None:
            guard.alternating = grid is problem._fixed_grid     # the (−1)^k monitor assumes equal steps
            guard.start(0, t0, x0, p)
        if on_step:
            on_step(0, t0, x0)
        S = [x0]

        def keep(k, t, h, x):
            S.append(x)
            if on_step:
                on_step(k, t, x)

        its = self._run(grid, p, 0, x0, (grid or problem._fixed_grid).steps, keep, guard, progress, ad=ad, t0=t0)
        if grid is None:
            # the accepted steps: the sweeps (NewmarkFamily's, step sizes frozen) and the
            # objective's trapezoid weights run on them; FD replays them (frozen_steps)
            grid = TimeGrid(*self.accepted)
            problem._set_grid(grid)
        return Trajectory(np.array(grid.t), *(np.array([s[i] for s in S]) for i in range(4)), its, grid,
                          self.rejected if ad is not None else 0)

    def _adapt(self, problem):
        """The adaptive settings (timeloop.Adapt) of the next run, or None for fixed steps:
        simulation.adapt, or -parmbs_ts_adapt_type basic with the [simulation.adapt]
        defaults; -parmbs_ts_adapt_type none keeps an adaptive config's fixed dt."""
        from ..config.schema import Adapt as AdaptKeys
        kind = PETSc.Options().getString(PREFIX + "adapt_type", "")
        if kind == "none" or (problem.adapt is None and not kind):
            return None
        if problem.adapt is not None:
            return problem.adapt
        sim = SimpleNamespace(adapt=AdaptKeys(), t_end=self.sim.t_end, dt=self.sim.dt)
        return Adapt.of(sim, problem.t0)

    # -- one-step interface of the checkpointed runs (parmbs/checkpoint/restart.py) --------------------
    def march_fixed(self, p, x, k0, grid, keep, guard, progress):
        """timeloop.march's fixed/frozen loop for this stepper: one TS over steps k0 … N
        (a checkpointed forward run, resumed at k0).  Returns (grid, iterations)."""
        return grid, self._run(grid, p, k0, x, grid.steps, keep, guard, progress)

    def march_adaptive(self, p, t_end, x, k0, t0, keep, ad, guard, progress, state):
        """timeloop.march's adaptive loop for this stepper (a checkpointed forward run):
        one TSALPHA2 with TSAdapt.  Returns ((TimeGrid of steps k0 … N, Newton
        iterations), rejected steps).

        TSAdapt's estimate reads the previous steps (X_{n−1}, V_{n−1}, t_n − t_{n−1})
        and TSALPHA2 restarts (TSAlpha_Restart, its own first-step estimate) at a TS's
        first step, neither of which a TS started at a stored x_k0 has: it would take
        other steps.  So a run resumed at k0 > 0 is re-run from x_0 — deterministic, the
        same bits — its x_k0 and t_k0 checked against the stored ones (RuntimeError if a
        bit differs), and only the steps after k0 are kept.  ``state`` (MarchState)
        gets the next h and the rejections; there is no own controller state to keep."""
        t_start = state.t_start if state is not None else t0
        x_start = x if k0 == 0 else self.nm.initial(t_start, p)
        stepper = self

        class _After:
            """The guard from step k0 on (the re-run steps before it were checked)."""

            def check(self, k, t, xk):
                if k > k0 and guard is not None:
                    guard.h = stepper.h                   # this step's h (as _march_adaptive sets it)
                    guard.check(k, t, xk)

        nominal = max(1, int(round((t_end - t_start) / self.sim.dt)))

        def run(kept):
            return self._run(None, p, 0, x_start, nominal, kept, _After(), progress, ad=ad, t0=t_start), self.rejected
        return march_rerun("TSALPHA2", k0, t0, x, keep, state, run,
                           lambda: (self._ts.getTimeStep(), self._ts.getStepRejections()))

    def step(self, k, t, x, p):
        """x_{k+1} from x_k by one TSALPHA2 step (a checkpoint provider's recomputation;
        the bits of the whole run, ``_run``).  The step size is ``self.h`` (set_step)."""
        h = self.h
        got = []
        its = self._run(TimeGrid(np.array([t, t + h]), np.array([h])), p, 0, x, 1,
                        lambda k_, t_, h_, x_: got.append(x_))
        self.h = h
        return got[0], int(its[0])

    def checkpoint_refusal(self):
        """Why this run cannot checkpoint (None: it can).  Adaptive runs checkpoint
        (``march_adaptive``) when simulation.adapt says so: a checkpointed run's step
        sequence follows the config, so -parmbs_ts_adapt_type must not contradict it."""
        kind = PETSc.Options().getString(PREFIX + "adapt_type", "")
        if kind and (kind != "none") != (self.sim.adapt is not None):
            return (f"-{PREFIX}adapt_type {kind} contradicts simulation.adapt in a checkpointed ts-alpha2 run: "
                    "set or remove [simulation.adapt] instead")
        return None

    #: Checkpointed runs (every schedule, --restart): parmbs's own CheckpointedRun —
    #: its forward run takes the steps through ``march_fixed``, its providers recompute
    #: through ``step``, its reverse sweep is our adjoint (``adjoint_step``; checkpoint.open_run).
    checkpoint_sweep = "adjoint_step"

    #: forward on TSALPHA2, direct/adjoint by ``_sweep`` (integrators/one_step.py); a
    #: frozen replay takes Problem.frozen_grid (``forward``), no ``freeze``
    whole_runs = WHOLE
    freezes_steps = False

    def initial(self, t0, p):
        return self.nm.initial(t0, p)

    def adjoint_step(self, t, x0, x1, mu1, p):
        """Our generalized-α adjoint step (NewmarkFamily's: the discrete equations are ours)."""
        return self.nm.adjoint_step(t, x0, x1, mu1, p)

    def tangent_step(self, t, x0, x1, dx0, p):
        return self.nm.tangent_step(t, x0, x1, dx0, p)

    # nm's are logged already (formulations.make_stepper's instrument would nest the events)
    adjoint_step._parmbs_logged = tangent_step._parmbs_logged = True

    # -- derivatives: NewmarkFamily's sweeps over this trajectory ------------------------------------
    def _sweep(self, problem, p, method):
        traj = problem.traj
        if traj is None or not np.array_equal(getattr(traj, "p", None), p):
            problem.forward(p)
        stepper, problem.stepper = problem.stepper, self.nm     # Problem's in-memory sweeps
        try:
            return getattr(problem, method)(p)
        finally:
            problem.stepper = stepper

    def direct(self, problem, p):
        return self._sweep(problem, p, "_direct_swept")

    def adjoint(self, problem, p):
        return self._sweep(problem, p, "_adjoint_swept")


def make_alpha2_stepper(system, sim, design_map=None, ndesign=0, comm=None):
    """The TSALPHA2 stepper for ``formulation = "index3"``, ``integrator = "ts-alpha2"``."""
    return TSAlpha2Stepper(system, sim, design_map, ndesign, comm)
