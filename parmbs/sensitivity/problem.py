"""A model, a stepper, design variables and objectives: forward run, direct and
adjoint gradients of the discrete objectives, and finite differences.

The forward run keeps the trajectory in memory (checkpointing to HDF5 is the
checkpoint package's job); the adjoint sweeps it backward.

The trajectory remembers the parameters it was computed with (``traj.p``), and
``objective_values``, ``direct`` and ``adjoint`` called without ``p`` use them:

    pr.forward(p1)
    pr.objective_values()      # ψ(p1)
    pr.adjoint()               # ∇ψ(p1)

Giving a ``p`` other than the trajectory's is a ValueError (the derivatives would be
taken along a trajectory of other parameters: a wrong number, silently).  Before the
first ``forward`` there is no trajectory; ``objective_values``/``direct``/``adjoint``
then raise ValueError too (except the whole-run PETSc TS steppers' ``direct`` and
``adjoint``, which run their own forward at ``p``, default ``sys.p``).
"""
import contextlib
import time

import numpy as np

from .. import _log
from ..config import resources
from ..faults import rank_fault
from . import adjoint_batch
from ..model.assembly import new_run
from ..model.system import ModelError, System
from ..formulations import make_stepper
from .design import DesignSpace
from .objectives import Objective
from ..integrators.newton_tol import AdaptiveNewton
from ..integrators.timeloop import Adapt, TimeGrid, error_constant, march, newton_data, set_step
from ..integrators.trajectory import Trajectory


def state_blocks(stepper, n, m):
    """(name, width) of every block of the stepper's state: the physical (q, v, a, λ)
    every objective, output and guard reads, then the stepper's trailing internal blocks
    (``stepper.extra_state``, widths "n" or "m"; e.g. the pseudo-acceleration of
    integrators/genalpha_ab.py), which only the stepper's own steps and sweeps use."""
    size = {"n": n, "m": m}
    extra = tuple((name, size.get(w, w)) for name, w in getattr(stepper, "extra_state", ()))
    return (("q", n), ("v", n), ("a", n), ("lambda", m)) + extra


def physical(x):
    """The (q, v, a, λ) of a state that may carry trailing stepper blocks (state_blocks)."""
    return tuple(x[:4])


class _StateView:
    """One state seen as a trajectory (what ``_local_grads`` reads: t[k], x(k), steps)."""

    def __init__(self, t, x, steps):
        self.t, self._x, self.steps = t, x, steps

    def x(self, k):
        return self._x


class Problem:
    def __init__(self, config, system=None, comm=None, design_columns=None):
        """``comm``: the communicator the state's matrices are distributed over
        (default PETSc.COMM_WORLD).  ``design_columns``: differentiate only these
        columns of the design space (a batch of sensitivity/batch.py)."""
        self.config = config
        self.sys = system or System(config)
        self.design = DesignSpace(self.sys, config.design)
        if design_columns is not None:    # batch-parallel hook: a subset of the design columns
            if config.simulation.adapt is not None and config.simulation.adapt.sensitivities:
                raise ModelError("simulation.adapt.sensitivities", "batch-parallel gradients would choose one step "
                                 "sequence per batch of design columns (integrators/sens_error.py); remove it or "
                                 "run the gradient unbatched")
            self.design = self.design.subset(design_columns)
        sim = config.simulation
        self.h = sim.dt
        self.nsteps = int(round(sim.t_end / sim.dt))
        self.t0 = 0.0
        self.objectives = [Objective(self.sys, o) for o in config.objectives]
        # the steppers and objective partials run in the columns something reads (a reduced
        # body's densities only through its body data: design.py read_by); ``expand`` once
        self.design.read_by(self.sys, self.objectives)
        self.stepper = make_stepper(self.sys, sim, design_map=self.design.sweep_map, ndesign=self.design.nswept,
                                    comm=comm)
        self.quadrature = sim.quadrature      # weights of Σ w_k g_k (integrators/quadrature.py)
        self._check_history_objectives(config)
        self._comm = comm
        self._memory_checked = False
        resources.check_memory(config.source, self.nsteps, self.sys.n, self.sys.m, False, self._mpi())
        # the step sequence: fixed (known now), or chosen by the adaptive run
        # (simulation.adapt; integrators/timeloop.py), or a frozen replay of an earlier
        # run's accepted steps (finite differences, complex step, verify)
        self.adapt = Adapt.of(sim, self.t0)
        if self.adapt is not None and getattr(self.stepper, "noise_aware_newton", False):
            # Newton's stopping test tied to the error tolerance, its noise measured
            # (integrators/newton_tol.py); frozen replays (FD, complex step, verify) use it too
            self.stepper.newton = AdaptiveNewton(sim.newton, self.adapt.rtol, self.adapt.atol, self.adapt.horizon,
                                                 newton_data(self.stepper)[1])
        self.frozen_grid = None
        self._fixed_grid = TimeGrid.fixed(self.t0, self.h, self.nsteps)
        self._set_grid(self._fixed_grid)
        self.checkpoint = None            # a CheckpointedRun once use_checkpoint() was called
        self.sens_error = None            # the last adaptive run's SensitivityError (simulation.adapt.sensitivities)
        self.traj = None                  # the last forward run (traj.p: its parameters)
        # instability guard of the step loops (integrators/guard.py; simulation.guard)
        from ..integrators.guard import Guard
        self.guard = Guard(sim, self.sys, comm=self._mpi())
        if getattr(self.stepper, "compiled", None) is not None:
            self.guard.use_compiled()     # its per-step numbers in one compiled call too (compiled/monitor.py)

    def _history(self):
        """The objectives whose ψ is a function of the whole history (sensitivity/ride.py)."""
        return [ob for ob in self.objectives if getattr(ob.integrand, "history", False)]

    def _check_history_objectives(self, config):
        """Ride measures need the sweeps here (their per-step sources, ride.py): not a
        stepper with its own sweeps (PETSc TS, Maggi) and not a checkpoint schedule that
        does not keep every state."""
        from .ride import check_usable
        for ob in self._history():
            check_usable(self, ob)
            if self.quadrature != "trapezoid":     # ISO 2631-1 measures: their own trapezoid sums (ride.py)
                raise ModelError("simulation.quadrature",
                                 f"{self.quadrature!r} is for integral objectives; objective {ob.name!r} "
                                 f"({ob.integrand.kind!r}) sums its filtered history with the trapezoid")

    def _prepare_history(self, traj, p):
        """m_k = ∂ψ/∂s_k of every ride objective along the in-memory ``traj``."""
        from .ride import signal_history
        grid = self.grid if getattr(traj, "grid", None) is None else traj.grid
        for ob in self._history():
            ob.integrand.prepare(signal_history(self, ob.integrand, traj, p), grid)

    def _set_grid(self, grid):
        """The step sequence the sweeps and objective sums use (that of the last run)."""
        self.grid = grid
        self.nsteps = grid.steps
        self.w = grid.weights(self.quadrature)

    def frozen_steps(self):
        """``with problem.frozen_steps():`` forward runs inside replay the step sequence
        of the last run instead of choosing their own (adaptive runs: FD, complex step
        and verify differentiate on the same mesh as the direct/adjoint sweeps)."""
        return _Frozen(self)

    def _steps(self):
        """march()'s step-sequence argument of the next forward run."""
        if self.frozen_grid is not None:
            return dict(grid=self.frozen_grid)
        if self.adapt is not None:
            return dict(adapt=self.adapt)
        return dict(grid=self._fixed_grid)

    def _mpi(self):
        """The mpi4py communicator of this problem's matrices (resource checks agree on it)."""
        from .._petsc import PETSc
        c = self._comm or PETSc.COMM_WORLD
        return c.tompi4py() if hasattr(c, "tompi4py") else c

    def use_checkpoint(self, path, comm=None, interval=None):
        """Keep the forward states in the HDF5 checkpoint file ``path`` following
        ``config.checkpoint.schedule``, resuming what the file already holds (see
        parmbs/checkpoint).  Index-3 steppers only; raises HDF5Error for a file of
        another config, ValueError for a whole-run (PETSc TS) stepper."""
        from ..checkpoint import open_run, parse_schedule
        a = self.config.simulation.adapt
        if a is not None and a.sensitivities:
            raise ModelError("simulation.adapt.sensitivities", "the sensitivities' error control runs in memory "
                             "only (integrators/sens_error.py); remove it or run without a checkpoint file")
        resources.check_disk(self.config.source, path, parse_schedule(self.config.checkpoint.schedule).slots(self.nsteps),
                             self.sys.n, self.sys.m, len(self.objectives), comm if comm is not None else self._mpi())
        self.checkpoint = open_run(self, path, comm=comm, interval=interval)
        return self.checkpoint

    # -- forward -------------------------------------------------------------------------------
    @_log.stage("forward")          # -log_view (parmbs/_log.py)
    def forward(self, p=None, progress=None, on_step=None):
        """Run the simulation at ``p`` (default: the config's parameters ``sys.p``);
        returns the trajectory, also kept as ``self.traj`` with ``traj.p`` a copy of
        ``p`` (what the objective and gradient calls without ``p`` use)."""
        p = self.sys.p if p is None else p
        self.traj = None                              # a failed run leaves no stale trajectory
        new_run()                                     # factorizations from scratch: bits independent of earlier runs
        self.traj = self._forward(p, progress, on_step)
        self.traj.p = np.array(p, copy=True)
        return self.traj

    def _p(self, p, traj=None):
        """The parameters of a derivative/objective call: the trajectory's when ``p`` is
        None; a ``p`` other than the trajectory's is refused (module docstring)."""
        traj = self.traj if traj is None else traj
        if traj is None:
            # PETSc TS: direct/adjoint run their own forward; a checkpointed run resumes
            # from its HDF5 store, which holds (and checks) the run's parameters
            if "forward" in self.stepper.whole_runs or getattr(self, "checkpoint", None) is not None:
                return self.sys.p if p is None else p
            raise ValueError("no trajectory: call forward(p) first")
        tp = getattr(traj, "p", None)
        if p is None:
            return self.sys.p if tp is None else tp
        if tp is not None and p is not tp and not (np.shape(p) == np.shape(tp) and np.array_equal(p, tp)):
            raise ValueError("p differs from the parameters of the last forward run (traj.p); "
                             "call forward(p) first, or omit p")
        return p

    def _forward(self, p, progress, on_step):
        if self.design.linked:
            self._follow_design(p)
        if self.checkpoint is not None:               # states in an HDF5 checkpoint file
            return self.checkpoint.forward(p, progress, on_step)
        if not self._memory_checked:                  # the trajectory below must fit (config/resources.py)
            resources.check_memory(self.config.source, self.nsteps, self.sys.n, self.sys.m, True, self._mpi())
            self._memory_checked = True
        if "forward" in self.stepper.whole_runs:      # whole-run steppers (PETSc TS, dopri5)
            return self.stepper.forward(self, p, progress, on_step)   # TSAdapt chooses the steps (ts.py)
        steps = self._steps()
        rows = _Rows(self.state_blocks(), steps["grid"].steps if "grid" in steps else None)
        x = self.stepper.initial(self.t0, p)
        rows.put(0, x)
        self.guard.start(0, self.t0, x, p)
        self.guard.alternating = "adapt" not in steps  # the (−1)^k monitor assumes equal steps
        if on_step:
            on_step(0, self.t0, physical(x))

        def keep(k, t, h, x):
            rows.put(k, x)
            if on_step:
                on_step(k, t, physical(x))

        # adaptive runs: the quadratures' error test; frozen replays: its Newton bound (timeloop.newton_cap)
        quad = self.quadrature_error(p, x) if "adapt" in steps or self.frozen_grid is not None else None
        sens = self.sensitivity_error(p) if "adapt" in steps else None
        (grid, its), rejected = march(self.stepper, p, self.config.simulation.t_end, x, 0, self.t0, keep,
                                      guard=self.guard, progress=progress, comm=self._mpi_if_distributed(),
                                      quad=quad, sens=sens, **steps)
        self.sens_error = sens                        # its steps and final dx/dρ (tests, benchmarks)
        self._set_grid(grid)
        Q, V, A, L, *E = rows.arrays()
        return Trajectory(grid.t, Q, V, A, L, its, grid, rejected, extra=E)

    def sensitivity_error(self, p):
        """The SensitivityError of an adaptive run at p (``simulation.adapt.sensitivities``;
        integrators/sens_error.py), else None: the design's direct sensitivities, scaled
        column by column by p̄_j = |ρ_j| (1 where ρ_j = 0), as CVODES' pbar."""
        a = self.config.simulation.adapt
        if a is None or not a.sensitivities or self.design.nswept == 0:
            return None
        self.design.check_direct()
        from ..integrators.sens_error import SensitivityError
        st = self.stepper
        pbar = np.abs(np.asarray(np.real(p), dtype=float)[self.design.col_index[self.design.swept]])
        pbar[pbar == 0.0] = 1.0
        return SensitivityError(self.adapt, error_constant(st), newton_data(st)[1],
                                lambda t, x0, x1, dx0: st.tangent_step(t, x0, x1, dx0, p),
                                st.init.tangent(p), pbar)

    def step_values(self, refs):
        """g_j(t, x, p) of every objective at one state, unweighted, 0 without a per-step
        integrand — a callable (sensitivity/step_values.py) for a run that sums ψ step by
        step (checkpoint/restart.py); ``refs``: the objectives' references of the run."""
        from .step_values import StepValues
        return StepValues(self.sys, self.objectives, refs)

    def quad_objectives(self):
        """The integral objectives whose quadratures join an adaptive run's error test
        (``simulation.adapt.objective_atol`` set; integrators/quad_error.py), else []."""
        if self.adapt is None or self.adapt.objective_atol is None:
            return []
        return [ob for ob in self.objectives if ob.integrand]

    def quadrature_error(self, p, x0):
        """The QuadratureError of an adaptive run at p from x_0, or None (quad_objectives)."""
        obs = self.quad_objectives()
        if not obs:
            return None
        from ..integrators.quad_error import QuadratureError
        from .objectives import shared_state_grads, shared_values, shared_values_grads
        refs = [ob.reference(self.sys, x0[0], p) for ob in obs]
        sys_ = self.sys

        terms = [ob.integrand for ob in obs]
        st = self.stepper
        nt = getattr(st, "newton", None)
        capped = isinstance(nt, AdaptiveNewton)      # newton_cap reads the gains of every accepted state
        beta = getattr(st, "beta", 0.25)
        v_gain = newton_data(st)[1]
        dm, nd = self.design.sweep_map, self.design.nswept

        last = [None, None, None]            # (t, x, gains) of the last gains computed

        def keep_gains(t, x, grads):
            out = [[abs(ob.weight) * np.abs(np.real(dx[j])) for j in range(3)] for ob, dx in zip(obs, grads)]
            last[:] = (t, x, out)
            return out

        def f(t, x):
            """Term.value of each (weighted), one evaluation of an inner the integrands
            share (z̈², z̈⁴).  With newton_cap in use the gains of the same state come from
            the same stacked call (shared_values_grads: one z̈ evaluation for both; the
            values are computed at every trial state, the gains are needed at each
            accepted one, which was a trial state — 1 % of the Iltis' trials are
            rejected)."""
            if capped:
                vals, grads = shared_values_grads(terms, sys_, t, physical(x), p, refs, dm, nd)
                keep_gains(t, x, grads)
            else:
                vals = shared_values(terms, sys_, t, physical(x), p, refs)
            return [ob.weight * v for ob, v in zip(obs, vals)]

        def gains(t, x):
            """|w ∂f/∂q|, |w ∂f/∂v|, |w ∂f/∂q̈| of each objective's integrand (rows).  The
            last state's are kept: an accepted state's gains serve its quadrature noise
            (QuadratureError.norm) and then the next step's newton_cap, and a rejected
            step's retry from the same state (same t, same state object: same numbers)."""
            if last[0] == t and last[1] is x:
                return last[2]
            return keep_gains(t, x, shared_state_grads(terms, sys_, t, physical(x), p, refs, dm, nd))

        def noise(t, x, h):
            """δf of each objective from the position noise δq (quad_error.py docstring)."""
            q = np.real(x[0])
            if isinstance(nt, AdaptiveNewton):
                dq = np.real(nt.noise(q))
            else:
                tol = newton_data(st)[0]
                dq = tol[0] + tol[1] * float(np.max(np.abs(q)))
            dq = np.broadcast_to(np.asarray(dq, dtype=float), q.shape)
            return [float(gq @ dq + gv @ dq * v_gain / h + ga @ dq / (beta * h * h)) for gq, gv, ga in gains(t, x)]

        def unit_noise(t, x):
            """h ↦ δf of each objective for δq = 1 on every component (QuadratureError.newton_cap)."""
            G = np.array([[float(np.sum(g)) for g in row] for row in gains(t, x)])
            return lambda h: G[:, 0] + G[:, 1] * v_gain / h + G[:, 2] / (beta * h * h)
        a = self.adapt
        return QuadratureError(f, len(obs), a.rtol, a.objective_atol, a.horizon, self.t0, noise,
                               unit_noise if capped else None)

    def state_blocks(self):
        """(name, width) of the stepper's state blocks (module function state_blocks)."""
        return state_blocks(self.stepper, self.sys.n, self.sys.m)

    def _mpi_if_distributed(self):
        c = self._mpi()
        return c if c is not None and c.Get_size() > 1 else None

    def _follow_design(self, p):
        """Linked design (design.py): the initial assembly starts from the geometry of
        the design in p — the guess of the model built from the config with the design
        values written in (drives resolved) — not from the nominal one, from which
        Newton may not reach a design far away (a beam turned by 90°).  The guess only
        selects the assembly's solution branch, so values and gradients are unchanged;
        it depends on ρ alone, so resumed optimizations repeat their iterates."""
        rho = np.real(self.design.values(p))
        if getattr(self, "_guess_rho", None) is not None and np.array_equal(self._guess_rho, rho):
            return
        from ..config.paths import with_values
        cfg = with_values(self.config, {self.design.paths[sl.start]: float(rho[sl.start])
                                        for name, sl in self.design.fields.items() if not self.design.is_field(name)})
        self.sys.q_guess = System(cfg).q_guess
        self._guess_rho = rho.copy()

    def objective_values(self, traj=None, p=None):
        """ψ for every objective on ``traj`` (default: the last forward run) at its
        parameters (``p`` may be omitted; if given it must be the trajectory's)."""
        traj = self.traj if traj is None else traj
        p = self._p(p, traj)
        if getattr(traj, "values", None) is not None:     # checkpointed run: accumulated in forward
            return dict(traj.values)
        out = {}
        g = getattr(traj, "grid", None)
        w = self.w if g is None or g is self.grid else g.weights(self.quadrature)
        for ob in self.objectives:
            ref = ob.reference(self.sys, traj.q[0], p)
            val = 0.0
            if getattr(ob.integrand, "history", False):        # ISO 2631-1 a_w / VDV (ride.py)
                from .ride import signal_history
                val += ob.integrand.evaluate(signal_history(self, ob.integrand, traj, p),
                                             g if g is not None else self.grid)
            elif ob.integrand and self._batch_values(ob, traj):
                # by blocks of states (Term.values_batch): the same per-state values, summed
                # in the same order as below
                from .local_table import BLOCK
                X = (traj.q, traj.v, traj.a, traj.lam)
                g = np.concatenate([ob.integrand.values_batch(self.sys, tuple(y[i:i + BLOCK] for y in X), p, ref)
                                    for i in range(0, traj.steps + 1, BLOCK)])
                val += sum(w[k] * g[k] for k in range(traj.steps + 1))
            elif ob.integrand:
                val += sum(w[k] * ob.integrand.value(self.sys, traj.t[k], physical(traj.x(k)), p, ref)
                           for k in range(traj.steps + 1))
            if ob.terminal:
                val += ob.terminal.value(self.sys, traj.t[-1], physical(traj.x(traj.steps)), p, ref)
            out[ob.name] = ob.weight * val
        return out

    @staticmethod
    def _batch_values(ob, traj):
        """ψ's integrand by blocks of states applies: a batchable Term on a real trajectory."""
        from .objectives import Term
        return isinstance(ob.integrand, Term) and ob.integrand.batchable() and traj.q.dtype.kind == "f" \
            and traj.lam.dtype.kind == "f"

    def _local_grads(self, ob, k, traj, p, ref):
        """Weighted ∂ψ/∂x_k (one vector per state block; zero for the stepper's trailing
        blocks, which no objective reads), ∂ψ/∂ρ (explicit, per parameter column) and
        ∂ψ/∂ref at step k."""
        nd, dm = self.design.nswept, self.design.sweep_map
        x = traj.x(k)
        gx = [np.zeros(len(y)) for y in x]
        gp, gr = np.zeros(nd), np.zeros(2)
        terms = []
        if getattr(ob.integrand, "history", False):
            terms.append((ob.integrand, ob.integrand.m[k]))   # ∂ψ/∂s_k (ride.py: the adjoint filter)
        elif ob.integrand:
            terms.append((ob.integrand, self.w[k]))
        if ob.terminal and k == traj.steps:
            terms.append((ob.terminal, 1.0))
        for term, c in terms:
            dx, dp, dref = term.grads(self.sys, traj.t[k], physical(x), p, ref, dm, nd)
            gx = [g + c * ob.weight * d for g, d in zip(gx, dx)] + gx[len(dx):]
            gp = gp + c * ob.weight * dp
            gr = gr + c * ob.weight * dref
        return gx, gp, gr

    # -- direct differentiation ----------------------------------------------------------------------
    @_log.stage("direct")          # -log_view (parmbs/_log.py)
    def direct(self, p=None, progress=None, on_step=None):
        """∇ψ for every objective by the tangent (forward) sensitivity equations
        (per parameter column, then chained to the design variables: design.py), along
        the last forward run, at its parameters (``p`` may be omitted).
        ``progress(k, N)``: called after each tangent step (io/progress.py);
        ``on_step(k, t_k, grads, dx_k)``: the gradient summed over steps 0..k and
        dx_k/dp, per parameter column (sensitivity/history.py)."""
        p = self._p(p)
        self.design.check_direct()        # one dense column per design variable: refuse fields
        with _Reporting(self, progress, on_step):
            return self.design.chain(self._direct_columns(p), p, forward=True)

    def _direct_columns(self, p):
        """{objective: ∂ψ/∂p_cols} over all parameter columns (swept, then ``expand``)."""
        grads = self._direct_swept(p)
        return {k: self.design.expand(g) for k, g in grads.items()}

    def _direct_swept(self, p):
        st = self.stepper
        if "direct" in st.whole_runs:
            return st.direct(self, p)
        traj = self.traj
        if self.checkpoint is not None:
            traj = self.checkpoint.full_trajectory(traj)
        elif traj is None:                          # a whole-run forward (PETSc TS) at p
            traj = self.forward(p)
        nd = self.design.nswept
        dx = st.init.tangent(p)
        grads = {ob.name: np.zeros(nd) for ob in self.objectives}
        refs = {ob.name: ob.reference(self.sys, traj.q[0], p) for ob in self.objectives}
        dref = {}
        for ob in self.objectives:
            Jq, Jp = ob.ref_grads(self.sys, traj.q[0], p, self.design.sweep_map, nd)
            dref[ob.name] = Jq @ dx[0] + Jp
        dx = st.tangent_start(dx, p)                # the stepper's tangent state (one_step.py)
        H = self.grid.h if traj.h is None else traj.h
        ride = {ob.name: np.zeros((traj.steps + 1, nd)) for ob in self._history()}   # ds_k/dp (ride.py)
        with self._local_table(traj, p, [refs[ob.name] for ob in self.objectives]) as table:
            for k in range(traj.steps + 1):
                if k > 0:
                    set_step(st, H[k - 1], newton=False)
                    dx = st.tangent_step_at(k - 1, traj, dx, p)
                hit = table.get(k) if table is not None else None
                for j, ob in enumerate(self.objectives):
                    if ob.name in ride:
                        gs, gps = ob.integrand.signal_grads(self.sys, traj.t[k], physical(traj.x(k)), p,
                                                            self.design.sweep_map, nd)
                        ride[ob.name][k] = sum(g @ d for g, d in zip(gs, dx)) + gps
                        continue
                    # contiguous columns: a strided vector takes another BLAS path in ``@`` (other sums)
                    gx, gp, gr = ([g[:, j].copy() for g in hit[0]], hit[1][:, j].copy(), hit[2][:, j].copy()) \
                        if hit is not None else st.tangent_local(self, ob, k, traj, p, refs[ob.name]) \
                        if st.own_adjoint_terms else self._local_grads(ob, k, traj, p, refs[ob.name])
                    grads[ob.name] += sum(g @ d for g, d in zip(gx, dx)) + gp + gr @ dref[ob.name]
                self._observe(k, traj.t[k], grads, dx)
                if k > 0:
                    self._tick(k, traj.steps)
        if ride:                                    # the filter forward on the tangents (ride.py)
            from .ride import signal_history
            for ob in self._history():
                s = signal_history(self, ob.integrand, traj, p)
                grads[ob.name] = ob.weight * ob.integrand.direct(s, ride[ob.name],
                                                                       self.grid if traj.grid is None else traj.grid)
        return grads

    # -- discrete adjoint -------------------------------------------------------------------------------
    @_log.stage("adjoint")          # -log_view (parmbs/_log.py)
    def adjoint(self, p=None, progress=None, on_step=None):
        """∇ψ for every objective by one backward sweep (one adjoint column each; per
        parameter column, then chained to the design variables: design.py), along the
        last forward run, at its parameters (``p`` may be omitted).
        ``progress(N - k, N)``: called after each reverse step k (io/progress.py);
        ``on_step(k, t_k, grad, None)``: the gradient summed over steps N..k, (ncols, K),
        before the initial-state term (sensitivity/history.py)."""
        p = self._p(p)
        with _Reporting(self, progress, on_step):
            return self.design.chain(self._adjoint_columns(p), p)

    def _tick(self, k, N):
        """Report k of N done to the ``progress`` given to the sweep running now (if any):
        the in-memory and checkpointed sweeps here and the PETSc TS steppers call it."""
        cb = getattr(self, "_progress", None)
        if cb is not None:
            cb(k, N)

    def _observe(self, k, t, grad, dx=None):
        """Hand step k's accumulated gradient (and dx_k/dp) to the sweep's ``on_step``
        (in the swept parameter columns: ``design.expand`` puts them into all)."""
        cb = getattr(self, "_on_step", None)
        if cb is not None:
            cb(k, t, grad, dx)

    def _adjoint_columns(self, p):
        """{objective: ∂ψ/∂p_cols} over all parameter columns (swept, then ``expand``)."""
        grads = self._adjoint_swept(p)
        return {k: self.design.expand(g) for k, g in grads.items()}

    def _adjoint_swept(self, p):
        if self.checkpoint is not None:
            return self.checkpoint.adjoint(p)
        if "adjoint" in self.stepper.whole_runs:
            return self.stepper.adjoint(self, p)
        traj = self.traj
        N = traj.steps
        x0 = traj.x(0)
        refs = [ob.reference(self.sys, x0[0], p) for ob in self.objectives]
        self._prepare_history(traj, p)
        with self._local_table(traj, p, refs):
            mu, grad, gref = self._adjoint_local(N, traj.t[N], traj.x(N), p, refs, traj.t)
            mu, grad, gref = self._adjoint_sweep(p, N, traj.x(N), mu, grad, gref, traj.x, refs, t=traj.t)
        return self._adjoint_finish(p, x0, mu, grad, gref)

    @contextlib.contextmanager
    def _local_table(self, traj, p, refs):
        """The objective partials of the in-memory ``traj`` by blocks of steps while a sweep
        runs (sensitivity/local_table.py), when every objective allows it."""
        from .local_table import LocalGradTable
        self._table = LocalGradTable(self, traj, p, refs) if LocalGradTable.usable(self, traj) else None
        try:
            yield self._table
        finally:
            self._table = None

    def _adjoint_local(self, k, t, x, p, refs, T=None):
        """Objective partials at state x_k, one column per objective: (μ blocks, ∂ψ/∂ρ, ∂ψ/∂ref)
        (a PETSc TS stepper's own: reduced to its ODE's state, integrators/ts.py)."""
        if self.stepper.own_adjoint_terms:
            return self.stepper.adjoint_local(self, k, T if T is not None else self.grid.t, x, p, refs)
        table = getattr(self, "_table", None)
        hit = table.get(k) if table is not None else None
        if hit is not None:
            return hit
        view = _StateView(T if T is not None else self.grid.t, x, self.nsteps)
        parts = [self._local_grads(ob, k, view, p, ref) for ob, ref in zip(self.objectives, refs)]
        gx = [np.stack([pt[0][i] for pt in parts], -1) for i in range(len(x))]
        return gx, np.stack([pt[1] for pt in parts], -1), np.stack([pt[2] for pt in parts], -1)

    def _adjoint_sweep(self, p, k1, x1, mu, grad, gref, state, refs, after=None, t=None, h=None):
        """Reverse steps k1−1, …, 0 from μ_{k1} (x_{k1} given); ``state(k)`` supplies x_k in
        decreasing k (in memory, or a checkpoint provider); ``after(k, x_k, μ_k, grad, gref)``
        is called after each step (checkpointing the adjoint state).  The sweep of every
        stepper, by its ``adjoint_step_into`` (∇ψ in and out whole: integrators/one_step.py);
        ``t``, ``h``: the run's times and step sizes (default the problem's grid)."""
        T = t if t is not None else self.grid.t
        H = h if h is not None else self.grid.h
        N = len(T) - 1
        self._observe(k1, T[k1], grad)
        if after is None and t is not None and adjoint_batch.usable(self, state, p, mu):
            mu, grad, gref, k1 = adjoint_batch.sweep(self, p, k1, mu, grad, gref, T)   # issue 19: blocks of steps
            x1 = state(k1)
        for k in range(k1 - 1, -1, -1):
            x0 = state(k)
            set_step(self.stepper, H[k], newton=False)
            mu, grad = self.stepper.adjoint_step_into(k, T, x0, x1, mu, grad, p)
            mu = rank_fault("adjoint", k, mu)         # test hook (parmbs/faults.py); off: mu
            gx, gp, gr = self._adjoint_local(k, T[k], x0, p, refs, T)
            mu = [a + b for a, b in zip(mu, gx)]
            grad = grad + gp
            gref = gref + gr
            x1 = x0
            self._observe(k, T[k], grad)
            self._tick(N - k, N)
            if after is not None:
                grad = self.combine_gradient(grad)   # a checkpoint holds the whole gradient
                after(k, x0, mu, grad, gref)
        return mu, grad, gref

    def combine_gradient(self, grad):
        """The whole gradient from the sweep's per-rank accumulators (collective): a stepper
        whose ∂R/∂x is split over ranks by elements (flexible/continuum_split.py) leaves
        each rank's own density columns complete, combined here once per sweep."""
        split = getattr(getattr(self.stepper, "plan", None), "split", None)
        return grad if split is None else split.combine(grad)

    def _adjoint_finish(self, p, x0, mu, grad, gref):
        """Add the reference and initial-state (assembly) terms: the gradient dict
        (per swept parameter column; a PETSc TS stepper's own, integrators/ts.py)."""
        if self.stepper.own_adjoint_terms:
            return self.stepper.adjoint_finish(self, p, x0, mu, grad, gref)
        nd = self.design.nswept
        mu = [np.array(m, dtype=float) for m in mu]
        grad, gref = np.array(grad, dtype=float), np.asarray(gref)
        for j, ob in enumerate(self.objectives):
            Jq, Jp = ob.ref_grads(self.sys, x0[0], p, self.design.sweep_map, nd)
            mu[0][:, j] += Jq.T @ gref[:, j]
            grad[:, j] += Jp.T @ gref[:, j]
        grad = self.combine_gradient(grad + self.stepper.init.adjoint(p, *mu))
        return {ob.name: grad[:, j].copy() for j, ob in enumerate(self.objectives)}

    # -- finite differences -------------------------------------------------------------------------------
    @_log.stage("fd")          # -log_view (parmbs/_log.py)
    def finite_differences(self, rel_step=1e-6, progress=None):
        """Central differences of the whole discrete computation (verification only).
        ``progress(j, J)``: called after each design column (two forward runs)."""
        p0 = self.sys.p.copy()
        if self.adapt is not None and (self.traj is None or not np.array_equal(self.traj.p, p0)):
            self.forward(p0)                          # the step sequence FD replays
        checkpoint, self.checkpoint = self.checkpoint, None     # perturbed runs stay in memory
        try:
            with _Reporting(self, progress), self.frozen_steps():
                return self._finite_differences(p0, rel_step)
        finally:
            self.checkpoint = checkpoint

    def _finite_differences(self, p0, rel_step):
        rho = self.design.values(p0)
        grads = {ob.name: np.zeros(len(rho)) for ob in self.objectives}
        for j in range(len(rho)):
            hstep = rel_step * max(abs(rho[j]), 1.0)
            vals = []
            for s in (+1, -1):
                r = rho.copy()
                r[j] += s * hstep
                p = self.design.apply(p0, r)
                traj = self.forward(p)
                vals.append(self.objective_values(traj, p))
            for name in grads:
                grads[name][j] = (vals[0][name] - vals[1][name]) / (2 * hstep)
            self._tick(j + 1, len(rho))
        if self.checkpoint is None:
            self.forward(p0)
        return grads


class _Rows:
    """The in-memory trajectory's states: preallocated when the number of steps is
    known (fixed or frozen steps), grown step by step otherwise (adaptive)."""

    def __init__(self, blocks, N):
        self.N = N
        self.cols = tuple(w for _, w in blocks)       # Problem.state_blocks()
        # grown: capacity doubled when full, rows [0, K) filled (one row copy a block and
        # step, as the preallocated case; a list of per-step copies cost ≈ 2 µs more a step
        # of the five-bar's ≈ 60 µs adaptive step)
        self.arr = [np.empty((N + 1 if N is not None else 64, c)) for c in self.cols]
        self.K = 0

    def put(self, k, x):
        if self.N is None and k >= self.arr[0].shape[0]:
            self.arr = [np.concatenate([a, np.empty_like(a)]) for a in self.arr]
        for a, y in zip(self.arr, x):
            a[k] = y
        self.K = max(self.K, k + 1)

    def arrays(self):
        if self.N is not None:
            return self.arr
        return [a[:self.K].copy() for a in self.arr]


class _Frozen:
    """Context of ``Problem.frozen_steps``: replay the current grid, restore on exit."""

    def __init__(self, problem):
        self.pr = problem

    def __enter__(self):
        self.saved = self.pr.frozen_grid
        self.pr.frozen_grid = self.pr.grid
        st, tr = self.pr.stepper, self.pr.traj
        self.ts = st.freezes_steps and getattr(st, "adaptive", False) and tr is not None
        if self.ts:                       # PETSc TS replays its own accepted times
            st.freeze(tr.t)
        return self

    def __exit__(self, *exc):
        self.pr.frozen_grid = self.saved
        if self.ts:
            self.pr.stepper.freeze(None)
        return False


class _Reporting:
    """``with _Reporting(problem, progress):`` the sweep inside reports through
    ``problem._tick`` to ``progress`` (forward runs report through their own
    argument); the previous callback is restored on exit."""

    def __init__(self, problem, progress, on_step=None):
        self.problem, self.progress, self.on_step = problem, progress, on_step

    def __enter__(self):
        self.saved = getattr(self.problem, "_progress", None), getattr(self.problem, "_on_step", None)
        self.problem._progress, self.problem._on_step = self.progress, self.on_step
        return self

    def __exit__(self, *exc):
        self.problem._progress, self.problem._on_step = self.saved
        return False
