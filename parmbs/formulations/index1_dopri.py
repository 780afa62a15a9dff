"""The index-1 ODE on an own explicit Dormand–Prince 5(4) with its exact discrete
tangent and adjoint (``formulation = "index1"``, ``integrator = "dopri5"``; issue 18).

Why not PETSc's TSRK (``ts-rk``, index1_ode.py): at ∇ψ ≈ 1e-6 on the five-bar both take
a few hundred steps, but each TS step calls back into Python per stage (measured: 12 µs
per right-hand side of a TS with a trivial callback, 74 µs per 5dp step, before any
model work), PETSc 3.18's RK adjoint is wrong for 5dp (``ts.tsadjoint_rk_ok``), so the
adjoint is our own Python stage loop anyway, and the numpy right-hand side costs
≈ 0.8 ms.  Here the whole step — its seven right-hand sides, the embedded estimate —
is one compiled call (compiled/index1_rk.py), and so are its tangent and adjoint steps
and the objectives' pull-back through (a, λ)(y); the controller is a few Python lines
per step (benchmarks/README.md, "Compiled Dormand–Prince on the index-1 ODE").

Steps (``simulation.adapt`` = {rtol, atol, dt_min, dt_max}; absent: fixed steps of
``dt``): the error of y_{k+1} (fifth order) against the embedded fourth-order ŷ in
PETSc's weighted RMS norm ‖(y − ŷ)_i / (atol + rtol max(|y_i|, |ŷ_i|))‖₂/√N ≤ 1, and
the next step h·clip(0.9 e^(−1/5), 0.1, 10) (0.45 after a rejection) within
[dt_min, dt_max] — TSAdapt "basic"'s rule and defaults; the last step ends on t_end
(MATCHSTEP); a step at dt_min that fails is a StepSizeError.  First same as last: the
seventh stage is G(y_{k+1}), the next step's first and the stored a_{k+1}, λ_{k+1}.

Derivatives: ``direct`` and ``adjoint`` differentiate the accepted step sequence with
the step sizes frozen (as PETSc's TSAdjoint does; their dependence on ρ through the
error estimate is not differentiated), ``freeze(t)`` replays it so finite differences
check that derivative.  ψ = Σ_k w_k g(t_k, x_k) with ``simulation.quadrature``'s weights
on the accepted times (``cubic``: fourth order, which the fifth-order states need);
a_k, λ_k are functions of y_k = (q_k, v_k) (K z = −R), so ∂g/∂(a, λ) is pulled back to y_k
and ρ by −(R_q, R_v, R_ρ)ᵀ K⁻ᵀ.  y_0 = (q_0, v_0)(ρ) is the index-3 consistent state
(InitialState) and its adjoint closes the sweep.

Back-ends: ``simulation.compiled`` "auto"/"on" takes compiled/index1_rk.py when every
component kind has a kernel there (``index1_rk.KINDS``), numba runs, there is no
Baumgarte term and the problem is on one rank; "off" (or any of those missing) takes the
numpy components (index1_ode.Index1ODE: G, G_y, G_ρ) with the same controller and sweeps —
the reference path (tests/test_dopri.py: both agree to ≤ 1e-13).
"""
import time

import numpy as np

from .._log import stage
from ..integrators.newmark import StepError
from ..integrators.one_step import WHOLE
from ..integrators.timeloop import StepSizeError, TimeGrid
from ..integrators.trajectory import Trajectory, quadrature_weights
from ..model import forces as F, joints as J
from .index1_ode import Index1ODE

#: the component kinds of compiled/index1_rk.py, in its argument order (LAYOUT positions)
KINDS = (F.Inertia, F.Gravity, F.Spring, F.RotationalSpring, J.Revolute, J.Weld)

#: TSAdapt basic's constants (PETSc 3.18 adaptbasic.c defaults)
SAFETY, REJECT_SAFETY, CLIP = 0.9, 0.5, (0.1, 10.0)


def why_not_compiled(system, sim, comm=None):
    """None if compiled/index1_rk.py can run this model, else the reason."""
    bad = sorted({type(g).__name__ for g in list(system.forces) + list(system.constraints) if type(g) not in KINDS})
    if bad:
        return f"no compiled index-1 kernel for {', '.join(bad)}"
    if sim.index1.baumgarte is not None:
        return "Baumgarte terms (simulation.index1.baumgarte) have no compiled kernel"
    if comm is not None and hasattr(comm, "getSize") and comm.getSize() > 1:
        return "matrices distributed over several ranks"
    from ..compiled import runtime_why_not
    why = runtime_why_not()
    if why is None:
        try:
            from ..compiled import index1_rk  # noqa: F401
        except Exception as e:  # noqa: BLE001 - numba's set-up failing means: numpy path
            return f"numba cannot be used here ({type(e).__name__}: {e})"
    return why


class _NumpyRHS:
    """The reference back-end: index1_ode.Index1ODE's G, G_y, G_ρ (numpy components)."""

    def __init__(self, mod, tab):
        self.mod, (self.A, self.b, self.bh, self.c) = mod, tab

    def first(self, t, y, p):
        a, lam, _ = self.mod.solve_z(t, y[:self.mod.n], y[self.mod.n:], p)
        return np.r_[y[self.mod.n:], a], a, lam

    def attempt(self, t, y, k1, h, p, rtol, atol):
        A, b, bh, c = self.A, self.b, self.bh, self.c
        s, n = len(b), self.mod.n
        K = [k1]
        for i in range(1, s - 1):
            Y = y.copy()
            for j in range(i):
                if A[i, j] != 0.0:
                    Y += (h * A[i, j]) * K[j]
            K.append(self.first(t + c[i] * h, Y, p)[0])
        ynew = y.copy()
        for j in range(s - 1):
            if b[j] != 0.0:
                ynew += (h * b[j]) * K[j]
        klast, a, lam = self.first(t + h, ynew, p)
        K.append(klast)
        yh = y.copy()
        for j in range(s):
            if bh[j] != 0.0:
                yh += (h * bh[j]) * K[j]
        if not (np.all(np.isfinite(ynew)) and np.all(np.isfinite(yh))):
            return y, k1, None, None, np.inf, False
        tol = atol + rtol * np.maximum(np.abs(ynew), np.abs(yh))
        err = float(np.sqrt(np.sum(((ynew - yh) / tol) ** 2) / len(y)))
        del n
        return ynew, klast, a, lam, err, True

    def _stages(self, t, y, h, p):
        A, b, c = self.A, self.b, self.c
        s = len(b)
        Ys, K = [], []
        for i in range(s):
            Y = y.copy()
            for j in range(i):
                if A[i, j] != 0.0:
                    Y += (h * A[i, j]) * K[j]
            Ys.append(Y)
            K.append(self.first(t + c[i] * h, Y, p)[0])
        return Ys

    def _used(self):
        """Stages with b_i ≠ 0 or read by a later stage (DP5: all but the seventh)."""
        return [bool(self.b[i]) or bool(np.any(self.A[i + 1:, i])) for i in range(len(self.b))]

    def tangent(self, t, y, h, p, dy):
        A, b, c = self.A, self.b, self.c
        used, Ys = self._used(), self._stages(t, y, h, p)
        dK, out = [None] * len(b), dy.copy()
        for i in range(len(b)):
            if not used[i]:
                continue
            dY = dy + sum(((h * A[i, j]) * dK[j] for j in range(i) if A[i, j] != 0.0), np.zeros_like(dy))
            pe = self.mod.eval(t + c[i] * h, Ys[i], np.zeros_like(y), p)
            dK[i] = pe.Gy() @ dY + pe.Gp()
            if b[i] != 0.0:
                out += (h * b[i]) * dK[i]
        return out

    def adjoint(self, t, y, h, p, lam1):
        A, b, c = self.A, self.b, self.c
        used, Ys = self._used(), self._stages(t, y, h, p)
        mK = [(h * b[i]) * lam1 if b[i] != 0.0 else np.zeros_like(lam1) for i in range(len(b))]
        lam, grad = lam1.copy(), np.zeros((self.mod.nd, lam1.shape[1]))
        for i in range(len(b) - 1, -1, -1):
            if not used[i]:
                continue
            pe = self.mod.eval(t + c[i] * h, Ys[i], np.zeros_like(y), p)
            mY = pe.Gy().T @ mK[i]
            grad += pe.Gp().T @ mK[i]
            lam += mY
            for j in range(i):
                if A[i, j] != 0.0:
                    mK[j] += (h * A[i, j]) * mY
        return lam, grad

    def pull(self, t, y, p, ga, gl):
        gy, gp = np.zeros((len(y), ga.shape[1])), np.zeros((self.mod.nd, ga.shape[1]))
        for j in range(ga.shape[1]):
            gy[:, j], gp[:, j] = self.mod.output_grads(t, y, p, ga[:, j], gl[:, j])
        return gy, gp


class _CompiledRHS:
    """compiled/index1_rk.py: one numba call per step attempt, tangent, adjoint step, pull-back."""

    def __init__(self, mod, tab):
        from ..compiled import index1_rk as K
        from ..compiled.stepper import LAYOUT, _arrays
        self.K, self.mod = K, mod
        arrays, at = _arrays(mod.sys), 0
        per = {}
        for kind, fields in LAYOUT:
            per[kind] = arrays[at:at + len(fields)]
            at += len(fields)
        from ..compiled.stepper import pack
        self.flat, offs = pack([[per[kind][i] for kind in KINDS for i in range(len(per[kind]))]])
        self.offs = np.ascontiguousarray(offs[0])
        self.n, self.m = mod.n, mod.m
        self.A, self.b, self.bh, _ = (np.ascontiguousarray(x, np.float64) for x in tab)
        self.dm = np.ascontiguousarray(mod.design_map, np.int64)
        self.nd = int(mod.nd)

    def warm_up(self, p):
        """Compile (or load from numba's cache) every kernel; the one-line note."""
        import numba
        from ..compiled import cache_note
        c0, w0 = time.process_time(), time.perf_counter()
        n = self.n
        y = np.r_[self.mod.sys.q_guess, np.zeros(n)]
        k1, _, _ = self.first(0.0, y, p)
        self.attempt(0.0, y, k1, 1e-6, p, 1e-6, 1e-6)
        self.tangent(0.0, y, 1e-6, p, np.zeros((2 * n, self.nd)))
        self.adjoint(0.0, y, 1e-6, p, np.zeros((2 * n, 1)))
        self.pull(0.0, y, p, np.zeros((n, 1)), np.zeros((self.m, 1)))
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        st = self.K.rk_adjoint.stats
        how = "loaded from numba's cache" if st.cache_hits and not st.cache_misses else "compiled"
        return (f"compiled: dopri5 index-1 kernels (numba {numba.__version__}, {self.n + self.m} unknowns) {how} "
                f"in {cpu:.2f} s CPU ({wall:.2f} s wall); simulation.compiled = \"off\" for the numpy path"
                f"{cache_note()}")

    def first(self, t, y, p):
        z, ok = self.K.first(y[:self.n].copy(), y[self.n:].copy(), p, self.n, self.m, self.flat, self.offs)
        if not ok:
            raise StepError(f"t = {t:.6g}: singular index-1 matrix K")
        return np.r_[y[self.n:], z[:self.n]], z[:self.n], z[self.n:]

    def attempt(self, t, y, k1, h, p, rtol, atol):
        ynew, klast, z, err, ok = self.K.rk_attempt(y, k1, float(h), p, self.n, self.m, self.flat, self.offs, self.A,
                                                     self.b, self.bh, float(rtol), float(atol))
        return ynew, klast, z[:self.n], z[self.n:], err, ok

    def tangent(self, t, y, h, p, dy):
        out, ok = self.K.rk_tangent(y, float(h), p, self.n, self.m, self.flat, self.offs, self.dm, self.nd, self.A,
                                    self.b, np.ascontiguousarray(dy, np.float64))
        if not ok:
            raise StepError(f"t = {t:.6g}: singular index-1 matrix K in the tangent step")
        return out

    def adjoint(self, t, y, h, p, lam1):
        lam, grad, ok = self.K.rk_adjoint(y, float(h), p, self.n, self.m, self.flat, self.offs, self.dm, self.nd,
                                          self.A, self.b, np.ascontiguousarray(lam1, np.float64))
        if not ok:
            raise StepError(f"t = {t:.6g}: singular index-1 matrix K in the adjoint step")
        return lam, grad

    def pull(self, t, y, p, ga, gl):
        gy, gp, ok = self.K.pullback(y[:self.n].copy(), y[self.n:].copy(), p, self.n, self.m, self.flat, self.offs,
                                     self.dm, self.nd, np.ascontiguousarray(ga, np.float64),
                                     np.ascontiguousarray(gl, np.float64))
        if not ok:
            raise StepError(f"t = {t:.6g}: singular index-1 matrix K")
        return gy, gp


class DormandPrince:
    """Whole-run stepper (forward, direct, adjoint) of the index-1 ODE; module docstring."""

    #: no checkpointed sweep (cli.py keeps the run in memory; checkpoint.open_run refuses)
    checkpoint_sweep = None

    #: forward, direct and adjoint are its own (integrators/one_step.py); an adaptive
    #: run's steps are its controller's, replayed through ``freeze``
    whole_runs = WHOLE
    freezes_steps = True

    #: its sensitivities are the record's blocks where Problem reads them (the local-gradient
    #: table, sensitivity/local_table.py): the capability of integrators/one_step.py
    own_adjoint_terms = False

    def __init__(self, system, sim, design_map=None, ndesign=0, comm=None):
        from ..compiled.index1_rk import DP_A, DP_B, DP_BH, DP_C
        self.sys, self.sim = system, sim
        self.mod = Index1ODE(system, sim, design_map, ndesign)
        self.init = self.mod.core.init
        self.dt, self.adapt = sim.dt, sim.adapt
        self.adaptive = sim.adapt is not None
        self.grid = None                        # a frozen step sequence (freeze)
        self._last = None                       # (t, h) of the last run: a replay takes its exact h
        tab = (DP_A, DP_B, DP_BH, DP_C)
        why = None if sim.compiled != "off" else "simulation.compiled = \"off\""
        if why is None:
            why = why_not_compiled(system, sim, comm)
        self.compiled_note = None
        if why is None:
            self.rhs = _CompiledRHS(self.mod, tab)
            self.compiled_note = self.rhs.warm_up(system.p)
        else:
            self.rhs = _NumpyRHS(self.mod, tab)
            if sim.compiled == "on":
                self.compiled_note = f"compiled: not used ({why}); numpy path"
        self.backend = "compiled" if isinstance(self.rhs, _CompiledRHS) else "numpy"

    def checkpoint_refusal(self):
        return "dopri5 keeps its run in memory (no checkpointed sweep)"

    def freeze(self, t):
        """Replay the step sequence ``t`` in every later run (FD on the frozen mesh); None ends it."""
        self.grid = None if t is None else np.array(t, dtype=float)

    def _settings(self, problem):
        a = self.adapt
        span = problem.nsteps * self.dt if getattr(problem, "_fixed_grid", None) is None \
            else problem._fixed_grid.steps * self.dt
        return (a.rtol, a.atol, a.dt_min if a.dt_min is not None else 1e-10 * span,
                a.dt_max if a.dt_max is not None else 0.1 * span)

    # -- forward ------------------------------------------------------------------------------------
    @stage("forward")
    def forward(self, problem, p, progress=None, on_step=None):
        n = self.mod.n
        t0 = float(problem.t0)
        t_end = float(self.sim.t_end)
        q0, v0, _, _ = self.init.solve(t0, p)
        self._qv0 = (q0, v0)
        p = np.ascontiguousarray(p, np.float64)
        y = np.r_[q0, v0]
        k1, a, lam = self.rhs.first(t0, y, p)
        T, Y, A, L, H = [t0], [y], [a], [lam], []
        rejected = 0
        if self.grid is not None:               # a frozen replay: its exact steps
            last = self._last
            hs = list(last[1]) if last is not None and np.array_equal(last[0], self.grid) else list(np.diff(self.grid))
        elif not self.adaptive:
            hs = [float(self.dt)] * int(round((t_end - t0) / self.dt))
        else:
            hs = None
        t = t0
        if hs is not None:
            for k, h in enumerate(hs):
                ynew, k1, a, lam, err, ok = self.rhs.attempt(t, y, k1, h, p, 1.0, 1.0)
                if not ok:
                    raise StepError(f"step {k + 1} (t = {t:.6g}): non-finite state")
                t = float(self.grid[k + 1]) if self.grid is not None else t + h
                y = ynew
                T.append(t), Y.append(y), A.append(a), L.append(lam), H.append(h)
                if on_step:
                    on_step(k + 1, t, (y[:n], y[n:], a, lam))
                if progress:
                    progress(k + 1, len(hs))
        else:
            rtol, atol, dt_min, dt_max = self._settings(problem)
            h = min(max(float(self.dt), dt_min), dt_max)
            N0 = problem.nsteps
            while t < t_end:
                end = t + h >= t_end
                if end:
                    h = t_end - t
                ynew, klast, a, lam, err, ok = self.rhs.attempt(t, y, k1, h, p, rtol, atol)
                accept = ok and err <= 1.0
                fac = SAFETY * (err ** -0.2 if err > 0 else CLIP[1]) if ok else 0.25
                if accept:
                    t = t_end if end else t + h
                    y, k1 = ynew, klast
                    T.append(t), Y.append(y), A.append(a), L.append(lam), H.append(h)
                    if on_step:
                        on_step(len(H), t, (y[:n], y[n:], a, lam))
                    if progress:
                        progress(int(round(N0 * (t - t0) / (t_end - t0))), N0)
                else:
                    rejected += 1
                    if h <= dt_min * (1 + 1e-12):
                        raise StepSizeError(f"step {len(H) + 1} (t = {t:.6g}): the step size fell below dt_min = "
                                            f"{dt_min:.3g} s; loosen simulation.adapt.rtol/atol or lower dt_min")
                    if ok:
                        fac *= REJECT_SAFETY
                h = min(max(h * min(max(fac, CLIP[0]), CLIP[1]), dt_min), dt_max)
        T, H = np.array(T), np.array(H)
        Y = np.array(Y)
        traj = Trajectory(T, Y[:, :n].copy(), Y[:, n:].copy(), np.array(A), np.array(L),
                          np.zeros(len(H), np.int64), rejected=rejected)
        traj.y, traj.h = Y, H
        if self.adaptive or self.grid is not None or problem.quadrature != "trapezoid":
            traj.w = TimeGrid(T, H).weights(problem.quadrature)
        else:
            traj.w = quadrature_weights(len(H), self.dt)
        problem.w = traj.w
        self._last = (T, H)
        return traj

    def _traj(self, problem, p):
        tr = getattr(problem, "traj", None)
        if tr is None or getattr(tr, "y", None) is None or not np.array_equal(getattr(tr, "p", None), p):
            tr = problem.forward(p)
        problem.w = tr.w
        return tr

    # -- objective partials at a stored state, on y = (q, v) ------------------------------------------
    def _locals(self, problem, traj, p, refs):
        """local(k) -> (∂ψ/∂y_k (2n, c), ∂ψ/∂ρ (nd, c), ∂ψ/∂ref (2, c))."""
        obs = problem.objectives
        nd = self.mod.nd

        def local(k, table):
            hit = table.get(k) if table is not None else None
            if hit is None:
                parts = [problem._local_grads(ob, k, traj, p, ref) for ob, ref in zip(obs, refs)]
                gx = [np.stack([pt[0][i] for pt in parts], -1) for i in range(4)]
                gp, gr = np.stack([pt[1] for pt in parts], -1), np.stack([pt[2] for pt in parts], -1)
            else:
                gx, gp, gr = hit
            gy = np.r_[gx[0], gx[1]]
            gp = np.array(gp, dtype=float).reshape(nd, len(obs))
            if np.any(gx[2]) or np.any(gx[3]):
                dy, dp = self.rhs.pull(traj.t[k], traj.y[k], p, gx[2], gx[3])
                gy, gp = gy + dy, gp + dp
            return gy, gp, np.asarray(gr, dtype=float)
        return local

    # -- adjoint ------------------------------------------------------------------------------------
    @stage("adjoint")
    def adjoint(self, problem, p):
        p = np.ascontiguousarray(p, np.float64)
        traj = self._traj(problem, p)
        obs = problem.objectives
        refs = [ob.reference(self.sys, traj.q[0], p) for ob in obs]
        local = self._locals(problem, traj, p, refs)
        N = traj.steps
        with problem._local_table(traj, p, refs) as table:
            lam, grad, gref = local(N, table)
            for k in range(N - 1, -1, -1):
                lam, dg = self.rhs.adjoint(traj.t[k], traj.y[k], traj.h[k], p, lam)
                gy, gp, gr = local(k, table)
                lam, grad, gref = lam + gy, grad + dg + gp, gref + gr
                problem._tick(N - k, N)
        return self._finish(problem, traj.q[0], p, lam, grad, gref)

    def _finish(self, problem, q0, p, lam, grad, gref):
        """λ_0 through y_0 = (q_0, v_0)(ρ) (InitialState's adjoint) and the references' terms."""
        n, nd = self.sys.n, self.mod.nd
        grads = {}
        col = lambda x: np.asarray(x, float).reshape(-1, 1)
        for i, ob in enumerate(problem.objectives):
            Jq, Jp = ob.ref_grads(self.sys, q0, p, self.mod.design_map, nd)
            mq = lam[:n, i] + Jq.T @ gref[:, i]
            g0 = self.init.adjoint(p, col(mq), col(lam[n:, i]), col(np.zeros(n)), col(np.zeros(self.sys.m)))
            grads[ob.name] = grad[:, i] + Jp.T @ gref[:, i] + np.asarray(g0).reshape(-1)
        return grads

    # -- direct -------------------------------------------------------------------------------------
    @stage("direct")
    def direct(self, problem, p):
        p = np.ascontiguousarray(p, np.float64)
        traj = self._traj(problem, p)
        nd = self.mod.nd
        dq, dv, _, _ = self.init.tangent(p)
        dy = np.r_[np.asarray(dq).reshape(-1, nd), np.asarray(dv).reshape(-1, nd)]
        obs = problem.objectives
        refs = [ob.reference(self.sys, traj.q[0], p) for ob in obs]
        drefs = []
        for ob in obs:
            Jq, Jp = ob.ref_grads(self.sys, traj.q[0], p, self.mod.design_map, nd)
            drefs.append(Jq @ dq + Jp)
        local = self._locals(problem, traj, p, refs)
        grads = {ob.name: np.zeros(nd) for ob in obs}
        with problem._local_table(traj, p, refs) as table:
            for k in range(traj.steps + 1):
                if k > 0:
                    dy = self.rhs.tangent(traj.t[k - 1], traj.y[k - 1], traj.h[k - 1], p, dy)
                gy, gp, gr = local(k, table)
                for i, ob in enumerate(obs):
                    grads[ob.name] += gy[:, i] @ dy + gp[:, i] + gr[:, i] @ drefs[i]
                if k > 0:
                    problem._tick(k, traj.steps)
        return grads


def make_index1_dopri_stepper(system, sim, design_map=None, ndesign=0, comm=None):
    return DormandPrince(system, sim, design_map, ndesign, comm)
