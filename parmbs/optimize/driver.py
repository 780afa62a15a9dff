"""Restartable gradient-based optimization: PETSc TAO or MMA on the adjoint gradient.

    minimize ψ(ρ)  subject to  ρ_lower ≤ ρ ≤ ρ_upper     (``[optimize]``, ``[[design]]``)
                               lower_i ≤ c_i(ρ) ≤ upper_i  (``[[optimize.constraints]]``, MMA only)

One evaluation = one forward run + one adjoint sweep of the chosen objective (and of
the objectives that are constrained: the same sweep, one adjoint column each).

MMA (``method = "mma"``, ``mma.py``): in ρ itself (MMA's asymptotes scale with
upper − lower), objective ψ/|ψ(ρ⁰)|, constraints as in ``constraints.py``.  Its full
state (x, xold1, xold2, low, upp, iteration, objective scale) is written to
``/optimize/mma`` after every update (``log.MMAState``); ``--restart`` loads it and
evaluates at its x again, so the iterate sequence continues exactly.

TAO: the
optimizer works in scaled variables x_j = ρ_j / s_j with s_j = |ρ_j⁰| (1 where ρ_j⁰ = 0),
so design variables of different units (a length in m, a stiffness in N/m) have
gradients of comparable size; bounds are scaled alike.  ``optimize.scaling = "bounds"``
uses x_j = (ρ_j − lower_j)/(upper_j − lower_j) ∈ [0, 1] instead (∂ψ/∂x_j = (upper_j −
lower_j) ∂ψ/∂ρ_j): for a box much narrower than |ρ⁰| (the Iltis strut stiffness k ∈
[2.83, 2.85]·10⁷, 0.7 % of its value) the value scaling makes ∂ψ/∂x_k ~10³ times the
others and every projected quasi-Newton trial lands on k's bound.

Restart (see ``log.py``): every evaluation is logged before the optimizer sees it; a
resumed run replays the log through the same deterministic optimizer, so it continues
the uninterrupted iterate sequence exactly.  SIGTERM / SIGUSR1 (what SLURM's
``--signal`` sends before the time limit) set a flag; the run stops at the next
safe point — before starting a new evaluation, when everything so far is on disk —
and exits 0 with the command that resumes it.  Ranks agree on stopping through one
allreduce per evaluation, so no rank is left in a collective call.

Failed trial designs (``try_evaluate_all``): a StepError, LinAlgError or non-finite ψ/∇ψ
(MMA also: a ModelError of the initial assembly) at a trial design is a bad point, not the end of the run (all ranks agree through one
allgather).  TAO gets a penalty value above ψ(ρ⁰) with zero gradient, so its line search
backtracks; the trial is logged like any evaluation (replayed identically on restart).
MMA replaces the iterate by x_prev + ½ (x − x_prev), up to ``MMA_HALVINGS`` times in a
row, and writes that state with the count of halvings so far before evaluating it (a
restart continues from both: the same trials, the same point of giving up).  A
failing initial design still ends the run (exit 1).

Descent guard (``optimize.descent = true``, MMA; ``descent_guard.py``): MMA is not a
descent method — its separable model is monotone in each variable unless the asymptotes
are near, so with no active constraint every variable steps to its move limit, and a ψ
curved on a shorter scale than the move limit zigzags across its valley with ψ rising
(the double wishbone, benchmarks/README.md).  With the guard, a trial iterate k whose ψ
is above iterate k − 1's while its violation did not fall is rejected like a failed
trial: the step is halved towards iterate k − 1 (same asymptotes), up to
``MMA_HALVINGS`` times; after that the trial is taken.  Iterate k − 1 is read from the
record's history, so a resumed run rejects the same trials.  The guard decides on the
forward run's values, before the gradient: a rejected trial costs one forward run (the
adjoint sweep was 57 % of an evaluation of the double wishbone, the 60 FD runs of
``gradient = "fd"`` 98 %).

Adaptive move limit (``optimize.adaptive_move = true``, MMA; implies the guard): the
guard alone halves every rising trial from the full move limit again at every iterate and
takes the 4th halving whatever its ψ, so on the double wishbone at T = 3 s every accepted
step was ≈ move/16 with ψ wandering, and xtol could never be met.  With it (1) the move
limit of the next update is the step that was accepted after halvings, or
``optimize.move`` again after a trial accepted as proposed
(``descent_guard.next_move``: a trust-region radius; stored with the MMA state, so a
restart repeats it); (2) a rising trial is never taken: the halvings go on without the
``MMA_HALVINGS`` cap, and when a trial whose step (max_j |Δρ_j|/(upper_j − lower_j), the
log's ``step``) is ≤ ``xtol`` still rises, the run has converged in step — it stops with
the last accepted iterate as its result and that reason in the log and the record
(``/optimize`` attribute ``reason``).
"""
from __future__ import annotations

import os
import signal
import time

import numpy as np

from .. import agreement
from .._petsc import PETSc
from ..checkpoint.store import resolved_sha256
from ..faults import rank_fault
from ..io.hdf5 import HDF5Error
from ..model.system import ModelError
from ..sensitivity.problem import Problem
from .constraints import Constraints, violation
from .descent_guard import DescentGuard, next_move
from ..flexible.density_filter import DensityFilter
from .log import HIST_COLS, EvaluationLog, MMAState, fail_hook, kill_hook
from .mma import MMA, vec_from

TAO_TYPES = {"tao-blmvm": "blmvm", "tao-bqnls": "bqnls", "tao-lmvm": "lmvm"}
#: [optimize] keys that only say how long to run, and MMA's asymptote bound, convexity
#: term, subproblem accuracy and descent guard (how the same problem is stepped, not which problem: a
#: continuation): a restart may change them
RUN_LENGTH_KEYS = ("max_it", "gatol", "grtol", "xtol", "ctol", "asymax", "raa0", "epsimin", "descent",
                   "adaptive_move")
#: MMA history columns (TAO's are log.HIST_COLS)
#: MMA: how many times the step to a failing trial design is halved before giving up
MMA_HALVINGS = 4
MMA_HIST_COLS = ("iteration", "objective", "max_violation", "step", "evaluations", "wall_s")


class StopRequested(Exception):
    """A stop signal arrived; raised at a safe point to unwind the optimizer."""


class ReplayMismatch(Exception):
    pass


def optimization_sha256(config) -> str:
    """sha256 of the resolved config without output keys and run-length rules."""
    return resolved_sha256(config, ignore=[("optimize", k) for k in RUN_LENGTH_KEYS])


class _Signals:
    """Install SIGTERM/SIGUSR1 handlers that only record the signal (restored on exit).

    ``parmbs optimize`` holds one instance from start-up to exit (``Optimization(...,
    signals=)``), so a signal during set-up stops the run before its first evaluation
    and a signal after ``done:`` (while the plot is written) is ignored: neither kills
    the ranks.  A run without an outer instance installs its own around the loop."""

    SIGNALS = tuple(s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGUSR1", None)) if s)

    def __init__(self):
        self.received = None
        self._old = {}

    def __enter__(self):
        for s in self.SIGNALS:
            try:
                self._old[s] = signal.signal(s, self._handler)
            except ValueError:          # not the main thread: signals cannot be caught here
                pass
        return self

    def _handler(self, signum, frame):
        self.received = signal.Signals(signum).name

    def __exit__(self, *exc):
        for s, h in self._old.items():
            signal.signal(s, h)


class Optimization:
    """``parmbs optimize``: one objective; bound constraints (TAO) or bounds and
    ``[[optimize.constraints]]`` (MMA); restartable."""

    def __init__(self, config, path, restart=False, comm=None, out=print, signals=None, sets=()):
        """``sets``: the ``--set KEY=VALUE`` overrides the config was loaded with (part of
        the record's resolved_sha256: stored in the record, ``log.record_sets``, so that
        ``parmbs optimize --restart`` applies them again).

        ``path`` names the result.  The live record is ``path.partial`` (io/outputs.py):
        created fresh (refused while an unfinished one exists), or on ``restart`` the
        existing partial or a copy of the finished ``path``; it is renamed onto ``path``
        when the run is done, so an earlier file at ``path`` is untouched until then and
        a killed or stopped run leaves a resumable ``path.partial``."""
        from ..io.outputs import final_of, partial_of
        self.config, self.out = config, out
        self.path = final_of(os.fspath(path))        # the result
        self.work = partial_of(self.path)            # the record while the run is going on
        self.finished = False
        self.sets = list(sets)
        self._outer_signals = signals
        self.comm = comm or PETSc.COMM_WORLD
        self.mpi = self.comm.tompi4py()
        agreement.prepare(self.mpi)     # collective: the failure agreement's communicator
        opt = config.optimize
        if opt.method not in TAO_TYPES and opt.method != "mma":
            raise ModelError("optimize.method", f"{opt.method!r} is not available (use one of "
                             f"{', '.join(TAO_TYPES)}, mma)")
        self.mma = opt.method == "mma"
        # a model too small to distribute runs replicated on every rank (parallel.py; the
        # serial run's numbers bit for bit); the design Vec, TAO/MMA and the record stay on comm
        from .. import parallel
        from ..model.system import System
        system = System(config)
        pcomm, self.parallel_note = parallel.replicate_small(system.n + system.m, config.parallel.distribute,
                                                             world=self.mpi)     # the CLI prints the note
        self.problem = pr = Problem(config, system=system, comm=pcomm or self.comm)
        if pr.sys.redundancy is not None:          # one line: the redundant rows dropped at set-up
            out(pr.sys.redundancy.summary())
        names = [o.name for o in pr.objectives]
        if not names:
            raise ModelError("objectives", "nothing to optimize: no [[objectives]]")
        self.objective = opt.objective or names[0]
        if self.objective not in names:
            raise ModelError("optimize.objective", f"unknown objective {self.objective!r} "
                             f"(known: {', '.join(names)})")
        if len(pr.design) == 0:
            raise ModelError("design", "nothing to optimize: no [[design]] variables")
        self.constraints = Constraints(config, pr.design)
        self.filter = DensityFilter(config, pr.design, opt.filter_radius)   # identity without a radius
        if opt.gradient == "fd" and opt.filter_radius is not None:
            raise ModelError("optimize.gradient", "gradient = \"fd\" differences the design variables "
                             "themselves: not with a density filter (remove optimize.filter_radius)")
        if opt.filter_radius is not None and not self.filter:
            raise ModelError("optimize.filter_radius", "a density filter needs a plate or continuum "
                             "density field among the [[design]] entries")
        # gradient = "fd" on a replicated model: the columns split over the ranks (_fd_gradients)
        self.fd_split = opt.gradient == "fd" and pcomm is not None and self.mpi.size > 1
        if self.fd_split:
            out(f"fd: {len(pr.design)} columns split over {self.mpi.size} ranks")
        need = {self.objective, *self.constraints.objectives}
        pr.objectives = [o for o in pr.objectives if o.name in need]
        self.p0 = pr.sys.p.copy()
        self.rho0 = pr.design.values(self.p0)
        self.scale = np.where(self.rho0 != 0, np.abs(self.rho0), 1.0)
        self.offset = None                  # TAO's x = ρ / scale (``optimize.scaling = "value"``)
        if opt.scaling == "bounds" and not self.mma:
            lo_, hi_ = pr.design.lower, pr.design.upper
            bad = [n for n, a, b in zip(pr.design.names, lo_, hi_) if not (np.isfinite(a) and np.isfinite(b))]
            if bad:
                raise ModelError("optimize.scaling", f"\"bounds\" needs finite lower and upper bounds "
                                 f"(design {bad[0]!r} has none)")
            self.offset, self.scale = lo_.astype(float), (hi_ - lo_).astype(float)
        if not restart and self._has_record():
            raise HDF5Error(self.path, "-o", "holds an optimization record already; continue it with "
                            f"--restart {self.path} or choose another output file")
        self.hist_columns = MMA_HIST_COLS if self.mma else HIST_COLS
        self.restart = restart
        self.origin = self._working_record(restart)
        try:
            self.log = EvaluationLog(self.work, config, optimization_sha256(config), pr.design.names,
                                     opt.method, self.objective, fresh=not restart, comm=self.mpi,
                                     columns=self.hist_columns, keep=not self.mma, sets=self.sets,
                                     ignore=[("optimize", k) for k in RUN_LENGTH_KEYS])
        except HDF5Error as e:
            if self.origin == "copy":            # nothing done in the copy: the original is intact
                self._remove_work()
                if e.file == self.work:
                    raise HDF5Error(self.path, e.key, e.message) from None
            raise
        self.replayed = 0
        done = self.log.history()
        self.t_start = time.perf_counter() - (float(done[-1, 5]) if len(done) else 0.0)   # cumulative wall
        self.signals = signals

    def resume_command(self):
        """The shell command that continues this run: config, --restart and every --set
        override in the original order (the record remembers them too: written out so
        the command says what the run is), each word quoted for a POSIX shell."""
        import shlex
        words = ["parmbs", "optimize", os.fspath(self.config.source), "--restart", self.path]
        for s in self.sets:
            words += ["--set", s]
        return shlex.join(words)

    def _signal_scope(self):
        """The outer handlers if the caller installed them, else our own for the loop."""
        if self._outer_signals is not None:
            import contextlib
            return contextlib.nullcontext(self._outer_signals)
        return _Signals()

    @property
    def record_path(self):
        """Where the record is now: ``path`` once the run is done, else ``path.partial``."""
        return self.path if self.finished else self.work

    def _working_record(self, restart):
        """Rank 0 prepares ``self.work``; every rank learns the origin (fresh, resume,
        copy) or gets the same HDF5Error: an unfinished record in the way of a fresh
        run, a record locked by another process, no record to restart."""
        import shutil
        from ..io.hdf5 import _root_call
        from ..io.outputs import in_use

        def look():
            for f in ((self.work,) if not restart else (self.work, self.path)):
                if os.path.exists(f) and in_use(f):
                    raise HDF5Error(f, "<file>", "the file is locked: in use by another process (another "
                                    "parmbs optimize writing this record?)")
            if not restart:
                if os.path.exists(self.work):
                    raise HDF5Error(self.path, "-o", f"{self.work} holds an unfinished optimization (killed or "
                                    f"stopped): continue it with --restart {self.path}, or delete it")
                return "fresh"
            if os.path.exists(self.work):
                return "resume"
            if os.path.isfile(self.path):
                shutil.copyfile(self.path, self.work)
                return "copy"
            raise HDF5Error(self.path, "--restart", "no such file")
        origin = _root_call(self.mpi, look, self.path, "--restart")
        return self.mpi.bcast(origin, root=0)

    def _remove_work(self):
        from ..io.outputs import remove_quietly
        if self.mpi.rank == 0:
            try:
                remove_quietly(self.work)
            except OSError:
                pass

    def _close_record(self, failed):
        """Collective, at the end of ``run``: close the record; when the run is done rename
        ``path.partial`` onto ``path`` (rank 0, after every rank closed: the barrier).
        After a failure, a fresh record without a single evaluation is removed (nothing
        to resume); anything else stays resumable in ``path.partial``."""
        from ..io.hdf5 import _root_call
        self.log.close()
        self.mpi.barrier()               # the file is closed when run() returns on any rank
        if self.finished:
            _root_call(self.mpi, lambda: os.replace(self.work, self.path), self.path, "<file>")
        elif failed and self.origin == "fresh" and self.log.evaluations == 0:
            self._remove_work()

    def _has_record(self):
        """Does the output file hold an optimization record?  (Rank 0 looks, all learn:
        a per-rank look could race with rank 0 creating the file.)"""
        ok = False
        if self.mpi.rank == 0 and os.path.exists(self.path):
            try:
                import h5py
                with h5py.File(self.path, "r") as f:
                    ok = "optimize" in f
            except OSError:
                ok = False
        return self.mpi.bcast(ok, root=0)

    # -- one evaluation ----------------------------------------------------------------------
    def evaluate_all(self, rho, physical=False, wanted=None):
        """Values and gradients of every objective in use: one forward run + one adjoint
        sweep (one adjoint column per objective), at the physical densities x̃ = W ρ
        (``flexible/density_filter.py``; W = I without ``filter_radius``).  Gradients with
        respect to ρ (Wᵀ ∂ψ/∂x̃), or to x̃ with ``physical=True``.  ``wanted(vals)``, if
        given (descent_guard.DescentGuard), sees the values after the forward run; if it
        returns False the gradients are not computed (``(vals, None)``): a trial the
        descent guard rejects costs one forward run, not an adjoint sweep or the FD runs
        too.  It must decide alike on every rank (the values are global)."""
        pr = self.problem
        phys = self.filter.apply(rho) if self.filter else rho
        p = pr.design.apply(self.p0, phys)
        pr.forward(p)
        kill_hook("forward")
        vals = {k: float(v) for k, v in pr.objective_values(pr.traj, p).items()}
        if wanted is not None and not wanted(vals):
            return vals, None
        if self.config.optimize.gradient == "fd":
            grads = self._fd_gradients(rho, vals)
            kill_hook("adjoint")
            return vals, grads
        grads = {k: np.asarray(v, float) for k, v in pr.adjoint(p).items()}
        kill_hook("adjoint")
        if self.filter and not physical:
            grads = {k: self.filter.transpose(g) for k, g in grads.items()}
        return vals, grads

    def _fd_gradients(self, rho, vals):
        """``optimize.gradient = "fd"``: forward differences of every objective in use,
        (ψ(ρ + h_j e_j) − ψ(ρ))/h_j, one forward run per design variable (the FD-driven runs
        [Ebrahimi 2019] §6.2–6.3 compare the adjoint with, at their 1 % step):
        h_j = fd_step·|ρ_j|, or fd_step·(upper_j − lower_j) (fd_step where unbounded) at
        ρ_j = 0; −h_j where ρ_j + h_j would leave the upper bound.  The perturbed runs replay
        the base run's steps (``frozen_steps``) and write no checkpoint.

        A replicated model under mpirun (``fd_split``: every rank holds the whole serial
        model, parallel.replicate_small) splits the columns over the ranks: rank r runs
        j ≡ r (mod size) — round robin rather than contiguous blocks, so columns of one kind
        (the double wishbone's 48 coordinates, then its heights, stiffnesses, dampings:
        Newton counts may differ by kind) are dealt evenly — and ``_gather_columns`` gives
        every rank all of them, bit for bit the serial gradient.  A distributed model runs
        every column on all ranks together, as the forward runs are collective."""
        pr, des = self.problem, self.problem.design
        step = self.config.optimize.fd_step
        span = des.upper - des.lower
        h = step * np.where(rho != 0, np.abs(rho), np.where(np.isfinite(span), span, 1.0))
        h = np.where(rho + h > des.upper, -h, h)
        grads = {k: np.zeros(len(rho)) for k in vals}
        split = self.fd_split
        mine = range(self.mpi.rank, len(rho), self.mpi.size) if split else range(len(rho))
        checkpoint, pr.checkpoint = pr.checkpoint, None
        failure = None
        try:
            with pr.frozen_steps():
                for j in mine:
                    r = rho.copy()
                    r[j] += h[j]
                    p = pr.design.apply(self.p0, r)
                    try:
                        pr.forward(p)
                        col = pr.objective_values(pr.traj, p)
                    except Exception as e:
                        if not split:
                            raise
                        failure = (j, e)        # this rank's first failing column: its later ones
                        break                   # cannot be the serial run's first failure
                    for k, v in col.items():
                        if k in grads:
                            grads[k][j] = (float(v) - vals[k]) / h[j]
        finally:
            pr.checkpoint = checkpoint
        return _gather_columns(self.mpi, grads, mine, failure) if split else grads

    def evaluate(self, rho):
        """ψ(ρ) and ∇ψ(ρ): forward run + adjoint sweep."""
        vals, grads = self.evaluate_all(rho)
        return vals[self.objective], grads[self.objective]

    def try_evaluate_all(self, rho, physical=False, trial=False, wanted=None):
        """``evaluate_all`` that turns a computation failure of this design (StepError,
        LinAlgError, non-finite ψ or gradient; with ``trial`` — an MMA iterate after the
        first — also a ModelError of the initial assembly, a singular or redundant-looking
        constraint Jacobian at the trial's geometry: the design, not the file, is at
        fault, as the initial design's assembly worked) into ``(None, message)`` — the same on
        every rank: the failure flag and the first failing rank's message are gathered
        over the communicator, so no rank is left waiting in a collective of the next
        evaluation.  (This covers failures every rank raises together — the Newton
        iterations and KSP solves decide on global norms — and failures found by one rank
        after the evaluation's collectives, such as a non-finite entry in its slice.)
        Config errors (ModelError, ConfigError) still propagate."""
        from ..integrators.newmark import StepError
        msg, res = None, None
        try:
            res = self.evaluate_all(rho, physical=physical, wanted=wanted)
            fail_hook()                 # (test hook: after the collectives, as a rank-local failure)
            rank_fault("evaluation", 0, ())     # (test hook, one rank: parmbs/faults.py)
            vals, grads = res
            if not (all(np.isfinite(v) for v in vals.values())
                    and all(np.all(np.isfinite(g)) for g in (grads or {}).values())):
                msg = "non-finite objective or gradient"
        except StepError as e:
            msg = str(e)
        except np.linalg.LinAlgError as e:
            msg = f"singular matrix ({e})"
        except ModelError as e:
            if not (trial and "initial assembly" in str(e)):
                raise
            msg = " ".join(str(e).split())
        # a rank that failed alone in the middle of the evaluation (the others wait in a
        # collective of the forward/adjoint) cannot be judged together: it aborts the job
        # after a bounded wait instead of waiting here forever (parmbs/agreement.py)
        msgs = [m for m in agreement.exchange(self.mpi, msg, f"parmbs: error: {self.config.source}: "
                                              f"computation failed: {msg}") if m is not None]
        return (None, msgs[0]) if msgs else (res, None)

    def _agree(self, e):
        """An exception leaving the optimizer loop: if this rank raised it alone (the
        others wait in a collective of an evaluation), abort the job with one line
        instead of hanging in the closing barrier (parmbs/agreement.py)."""
        from ..integrators.newmark import StepError
        expected = (StepError, np.linalg.LinAlgError, ModelError, HDF5Error, ReplayMismatch)
        agreement.agree_on(self.mpi, e, f"parmbs: error: {self.config.source}: {type(e).__name__}: "
                           f"{' '.join(str(e).split())}", traceback=not isinstance(e, expected))

    def _failed_value(self):
        """The objective reported to TAO for a failed trial design, with zero gradient:
        ψ(ρ⁰) + 10³ max(|ψ(ρ⁰)|, 10⁻³⁰⁰), above every iterate TAO accepts (its line
        searches only accept decrease from ψ(ρ⁰)).  Not +inf: TAO's default More–Thuente
        line search stops on an inf/NaN objective (PETSc 3.18, measured: BLMVM ends with
        DIVERGED_LS_FAILURE, and petsc4py 3.18 has no TaoSetFunctionDomainError nor a
        line-search accessor), while for a finite value above ψ at the start of the
        search it brackets and backtracks (the interpolated step of its sufficient-
        decrease test), as it would for the Armijo rule.  The value is logged like any
        evaluation, so a replay answers the same value and a restart stays exact."""
        f0 = float(self.log.fv[0])
        return f0 + 1e3 * max(abs(f0), 1e-300)

    def _rho(self, x):
        """ρ of TAO's variables x: x·s (``optimize.scaling = "value"``, s = |ρ⁰|) or
        lower + x·(upper − lower) (``"bounds"``); the gradient is scaled by s alike."""
        return x * self.scale if self.offset is None else self.offset + x * self.scale

    def _x(self, rho):
        """TAO's variables of ρ (the inverse of ``_rho``)."""
        return rho / self.scale if self.offset is None else (rho - self.offset) / self.scale

    def _gather(self, x):
        return np.concatenate(self.mpi.allgather(x.getArray(readonly=True).copy()))

    def _objective_gradient(self, tao, x, g):
        xs = self._gather(x)
        rho = self._rho(xs)
        k = self.replayed
        log = self.log
        if k < log.evaluations:
            if not np.array_equal(log.x[k], rho):
                raise ReplayMismatch(k)
            f, grad = log.fv[k], log.g[k]
            if k + 1 == log.evaluations:
                self.out(f"resumed: {log.evaluations} evaluations replayed from {self.path}")
        else:
            stop = self.signals.received if self.signals else None
            if self.mpi.allreduce(1 if stop else 0) > 0:
                raise StopRequested(stop or "signal on another rank")
            res, msg = self.try_evaluate_all(rho)
            if msg is None:
                f, grad = res[0][self.objective], res[1][self.objective]
            elif k == 0:                    # the initial design itself: nothing to step back to
                from ..integrators.newmark import StepError
                raise StepError(f"initial design: {msg}")
            else:
                f, grad = self._failed_value(), np.zeros(len(rho))
                self.out(f"trial failed: {msg}, backtracking (evaluation {k + 1} recorded with "
                         f"psi = {f:.3e}, zero gradient)")
            log.append(rho, f, grad)
        self.replayed = k + 1
        lo, hi = g.getOwnershipRange()
        g.setArray((grad * self.scale)[lo:hi])
        return f

    def _monitor(self, tao):
        its, f, gnorm, cnorm, step, reason = tao.getSolutionStatus()
        wall = time.perf_counter() - self.t_start
        row = np.array([its, f, gnorm, step, self.replayed, wall], float)
        if self.log.add_history(row):
            self.out(f"it {its:4d}  psi {f: .10e}  |grad| {gnorm:.3e}  step {step:.3e}  "
                     f"evals {self.replayed:4d}  {wall:8.1f} s")

    # -- the run -----------------------------------------------------------------------------------
    def run(self):
        """Optimize; returns (exit code, final ρ or None)."""
        if self.mma:
            return self._run_mma()
        opt, pr = self.config.optimize, self.problem
        nd = len(pr.design)
        tao = PETSc.TAO().create(self.comm)
        tao.setType(TAO_TYPES[opt.method])
        x = PETSc.Vec().createMPI(nd, comm=self.comm)
        lo_, hi_ = x.getOwnershipRange()
        x.setArray(self._x(self.rho0)[lo_:hi_])
        tao.setSolution(x)
        tao.setObjectiveGradient(self._objective_gradient, x.duplicate())
        if opt.method != "tao-lmvm":
            lb, ub = x.duplicate(), x.duplicate()
            big = PETSc.INFINITY
            lo = np.where(np.isfinite(pr.design.lower), self._x(pr.design.lower), -big)
            hi = np.where(np.isfinite(pr.design.upper), self._x(pr.design.upper), big)
            lb.setArray(lo[lo_:hi_])
            ub.setArray(hi[lo_:hi_])
            tao.setVariableBounds(lb, ub)
        tao.setTolerances(gatol=opt.gatol, grtol=opt.grtol, gttol=0.0)
        tao.setMaximumIterations(opt.max_it)
        tao.setMonitor(self._monitor)
        tao.setOptionsPrefix("parmbs_opt_")
        tao.setFromOptions()
        self.out(f"{self.config.model.name}: optimize {self.objective} over {nd} design variables with "
                 f"{opt.method} (max {opt.max_it} iterations); record {self.path}")
        code, rho, failed = 0, None, False
        try:
            with self._signal_scope() as self.signals:
                tao.solve()
            rho = self._rho(self._gather(tao.getSolution()))
            self.log.finish(rho, pr.design.names, physical=self.filter.apply(rho) if self.filter else None)
            self.finished = True
            its, f, gnorm, _, _, reason = tao.getSolutionStatus()
            self.out(f"done: {_reason(reason)} after {its} iterations, {self.log.evaluations} evaluations; "
                     f"psi = {f:.10e}, |grad| = {gnorm:.3e}")
            for n, v in zip(pr.design.names, rho):
                self.out(f"  {n:<12} = {v: .10e}")
        except StopRequested as e:
            self.out(f"stopped on {e.args[0]} at a safe point after {self.log.evaluations} evaluations "
                     f"(all on disk); resume with: {self.resume_command()}")
        except ReplayMismatch as e:
            raise HDF5Error(self.path, f"/optimize/x[{e.args[0]}]",
                            "the resumed optimizer asked for a different design than the recorded run "
                            "(other PETSc build or edited record); cannot resume exactly") from None
        except Exception as e:          # the clean-up below is collective: did every rank raise it?
            self._agree(e)
            failed = True
            raise
        finally:
            self.history = self.log.history()
            self._close_record(failed)
            for v in (tao, x):
                v.destroy()
        return code, rho


    # -- MMA ------------------------------------------------------------------------------------------
    def _mma_state(self, mma):
        """The (5, nd) state on rank 0 (None elsewhere): every rank sends its slices."""
        parts = [self.mpi.gather(getattr(mma, k).getArray(readonly=True).copy(), root=0) for k in MMAState.KEYS]
        return np.array([np.concatenate(p) for p in parts]) if self.mpi.rank == 0 else None

    @staticmethod
    def _halve_step(mma):
        """x ← x_prev + ½ (x − x_prev), x_prev = xold1 (the last evaluated iterate): the
        MMA step to a design whose evaluation failed, halved.  A convex combination of two
        points inside the bounds and the move limits stays inside; the asymptotes and
        xold1/xold2 are kept, so the next update sees the shortened step."""
        x, xp = mma.x.getArray(), mma.xold1.getArray(readonly=True)
        mma.x.setArray(xp + 0.5 * (x - xp))

    def _back_off(self, mma, store, fscale, halvings, why, move, cap=MMA_HALVINGS):
        """Step back from trial iterate mma.it (failed or rejected): halve the step, write
        the state with the halvings so far and the update's ``move`` limit (a restart
        continues from them), say ``why``.  ``cap``: the most halvings allowed (None: no
        cap, ``optimize.adaptive_move``'s rising trials).  Returns the new count."""
        k, halvings = mma.it, halvings + 1
        self._halve_step(mma)
        store.save(mma.it, self._mma_state(mma), fscale, self.log.evaluations, halvings, move)
        self.out(f"{why}, backtracking (MMA iterate {k}: step halved towards iterate {k - 1}, "
                 f"{halvings} of {cap})" if cap is not None else
                 f"{why}, backtracking (MMA iterate {k}: step halved towards iterate {k - 1}, {halvings} times)")
        return halvings

    def _run_mma(self):
        """MMA iterations k = 0, 1, …: evaluate at x_k, record (evaluation row k, history
        row k, one progress line), stop if converged or k = max_it, else update to x_{k+1}
        and write the state.  Safe point: the top of the loop (the state of x_k on disk)."""
        opt, pr, cons = self.config.optimize, self.problem, self.constraints
        nd, m = len(pr.design), len(self.constraints)
        comm = self.comm
        x0 = vec_from(comm, self.rho0)
        lo, hi = x0.getOwnershipRange()
        bounds = [vec_from(comm, pr.design.lower), vec_from(comm, pr.design.upper)]
        mma = MMA(x0, *bounds, m, move=opt.move,          # MMA keeps copies
                  **{k: getattr(opt, k) for k in ("asymax", "raa0", "epsimin") if getattr(opt, k) is not None})
        for v in bounds:
            v.destroy()
        store = MMAState(self.log)
        rng = pr.design.upper - pr.design.lower
        fscale = None
        saved = store.load() if self.restart else None
        halvings = 0                # step halvings spent on iterate mma.it (restored on resume)
        adaptive = opt.adaptive_move
        move = opt.move             # the move limit of the update to iterate mma.it (restored on resume)
        if saved is not None:
            it, state, fscale, _, halvings, saved_move = saved
            move = saved_move if adaptive and saved_move is not None else opt.move
            for key, row in zip(MMAState.KEYS, state):
                getattr(mma, key).setArray(row[lo:hi])
            mma.it = it
            self.log.truncate(it)
            self.out(f"resumed: MMA state after {it} updates"
                     f"{f' and {halvings} step halvings' if halvings else ''} from {self.path}")
        elif self.restart:
            self.log.truncate(0)
        self.out(f"{self.config.model.name}: optimize {self.objective} over {nd} design variables with "
                 f"mma, {m} constraint rows{': ' + '; '.join(cons.labels) if m else ''} "
                 f"(max {opt.max_it} iterations); record {self.path}")
        code, rho, reason, failed = 0, None, None, False
        accepted = None             # (ρ, x̃, values) of the last accepted iterate, while in memory
        try:
            with self._signal_scope() as self.signals:
                while True:
                    k = mma.it
                    stop = self.signals.received
                    if self.mpi.allreduce(1 if stop else 0) > 0:
                        raise StopRequested(stop or "signal on another rank")
                    rho = self._gather(mma.x)
                    phys = self.filter.apply(rho) if self.filter else rho
                    guard = DescentGuard(self.log.history, cons, self.objective, phys, k) \
                        if (opt.descent or adaptive) and k >= 1 and (adaptive or halvings < MMA_HALVINGS) else None
                    res, msg = self.try_evaluate_all(rho, physical=True, trial=k >= 1, wanted=guard)
                    if msg is not None:
                        if k == 0 or halvings >= MMA_HALVINGS:
                            from ..integrators.newmark import StepError
                            raise StepError(f"initial design: {msg}" if k == 0 else
                                            f"MMA iterate {k}: {msg} (still after {halvings} halvings "
                                            "of the step)")
                        halvings = self._back_off(mma, store, fscale, halvings, f"trial failed: {msg}", move)
                        continue
                    if guard is not None and guard.reason is not None:
                        if adaptive:
                            trial_step = float(np.max(np.abs(rho - self._gather(mma.xold1)) / rng))
                            if trial_step <= opt.xtol:
                                reason = (f"converged in step (the trial step {trial_step:.3e} <= xtol = "
                                          f"{opt.xtol:g} still rises: {guard.reason}); the result is iterate {k - 1}")
                                self.out(f"trial rejected: {guard.reason}")
                                rho = self._gather(mma.xold1)
                                phys = self.filter.apply(rho) if self.filter else rho
                                last = self.log.history()[k - 1]
                                f, viol = float(last[1]), float(last[2])
                                vals = accepted[2] if accepted is not None and np.array_equal(accepted[0], rho) \
                                    else None
                                break
                        halvings = self._back_off(mma, store, fscale, halvings, f"trial rejected: {guard.reason}",
                                                  move, None if adaptive else MMA_HALVINGS)
                        continue
                    vals, grads = res
                    fc, dfc = cons.evaluate(phys, vals, grads)      # constraints on x̃ ...
                    spent, halvings = halvings, 0
                    gobj = grads[self.objective]
                    if self.filter:                                 # ... chained to ρ
                        dfc, gobj = self.filter.transpose(dfc), self.filter.transpose(gobj)
                    f = vals[self.objective]
                    self.log.append(rho, f, gobj)
                    if fscale is None:
                        fscale = abs(f) if f != 0 else 1.0
                    viol = violation(fc)
                    step = 0.0 if k == 0 else float(np.max(np.abs(rho - self._gather(mma.xold1)) / rng))
                    accepted = (rho, phys, vals)
                    # adaptive: a step counts for xtol only as the model's own (taken as proposed, inside
                    # the move limit); one the halvings or the move limit shortened says nothing of a
                    # stationary point, the converged-in-step rule above ends such a run
                    own = not adaptive or (spent == 0 and step < (1 - 1e-6) * move)
                    if adaptive and k >= 1:         # the move limit of the update from iterate k
                        move = next_move(opt.move, step, spent)
                    wall = time.perf_counter() - self.t_start
                    if self.log.add_history(np.array([k, f, viol, step, k + 1, wall], float)):
                        self.out(f"it {k:4d}  psi {f: .10e}  viol {viol:.3e}  step {step:.3e}  {wall:8.1f} s"
                                 + (f"  move {move:.3e}" if adaptive else ""))
                    if k >= 1 and step <= opt.xtol and viol <= opt.ctol and own:
                        reason = f"converged (step <= xtol = {opt.xtol:g}, violation <= ctol = {opt.ctol:g})"
                        break
                    if k >= opt.max_it:
                        reason = f"max_it = {opt.max_it} reached"
                        break
                    mma.params["move"] = move
                    mma.update(gobj[lo:hi] / fscale, fc, dfc[:, lo:hi])
                    store.save(mma.it, self._mma_state(mma), fscale, self.log.evaluations, 0, move)
            self.log.finish(rho, pr.design.names, physical=phys if self.filter else None, reason=reason)
            self.finished = True
            self.out(f"done: {reason} after {mma.it} MMA updates; psi = {f:.10e}, "
                     f"max violation = {viol:.3e}")
            if vals is None:            # converged in step right after a resume: x_{k−1}'s values not in memory
                self.out("  (the constraint values of the result: its history row in the record)")
            for label, c in (cons.values(phys, vals) if vals is not None else ()):
                self.out(f"  {label:<40} value {c: .10e}")
            if nd <= 20:
                for n, v in zip(pr.design.names, rho):
                    self.out(f"  {n:<12} = {v: .10e}")
        except StopRequested as e:
            rho = None
            self.out(f"stopped on {e.args[0]} at a safe point after {mma.it} MMA updates "
                     f"(state on disk); resume with: {self.resume_command()}")
        except Exception as e:          # the clean-up below is collective: did every rank raise it?
            self._agree(e)
            failed = True
            raise
        finally:
            self.history = self.log.history()
            self._close_record(failed)
            mma.destroy()
            x0.destroy()
        return code, rho


def _gather_columns(comm, grads, mine, failure):
    """The FD columns computed on every rank (``mine``: this rank's, the others zero), on
    every rank: one allgather that every rank reaches, failed or not.  Each value is
    computed by one rank with the serial code and only copied, so the gradient is the
    serial one bit for bit.  ``failure``: (column, exception) of this rank's first failing
    column; if any rank has one, every rank raises the exception of the lowest failing
    column — the serial loop's first failure — rebuilt from its type, args and attributes
    (ModelError's ``__init__`` takes (key, message), so plain pickling cannot rebuild it):
    the same error on every rank, judged together by ``try_evaluate_all`` / ``_agree``."""
    import pickle
    sent = None
    if failure is not None:
        j, e = failure
        sent = (j, type(e), e.args, dict(getattr(e, "__dict__", {})))
        try:
            pickle.loads(pickle.dumps(sent))
        except Exception:               # not transportable: its type and message as text
            sent = (j, RuntimeError, (f"{type(e).__name__}: {e}",), {})
    cols = list(mine)
    parts = comm.allgather(({k: g[cols] for k, g in grads.items()}, cols, sent))
    failures = sorted((s for _, _, s in parts if s is not None), key=lambda s: s[0])
    if failures:
        j, cls, args, attrs = failures[0]
        if failure is not None and failure[0] == j:
            raise failure[1]
        exc = cls.__new__(cls)
        exc.args = args
        exc.__dict__.update(attrs)
        raise exc
    out = {k: np.zeros_like(g) for k, g in grads.items()}
    for vals, cs, _ in parts:
        for k, v in vals.items():
            out[k][cs] = v
    return out


def _reason(r):
    names = {v: k for k, v in vars(PETSc.TAO.Reason).items() if isinstance(v, int)}
    return names.get(r, str(r)).lower().replace("_", " ")
