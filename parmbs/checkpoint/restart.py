"""Forward run and adjoint sweep through a checkpoint file, resumable at any point.

``CheckpointedRun(problem, store)`` replaces the in-memory trajectory of
``Problem.forward``/``Problem.adjoint`` (index-3 steppers).  The forward run starts
from the last valid state in the file (its objective integral so far is stored with
it) and writes the states the schedule keeps; when it ends it writes the adjoint
start record (k = N: x_N, μ_N = ∂ψ/∂x_N, the objective values).  The adjoint sweep
starts from the last adjoint record and gets every x_k it needs from a *provider*
(one per schedule), which reads stored states and recomputes the others with the
same deterministic forward step — so the gradient does not depend on the schedule or
on where a run was interrupted (bitwise, in the tests).

Adaptive runs (``simulation.adapt``): the number of steps is known only at the end.
The file keeps the accepted t_k, h_k and, with every stored state, the loop state
(``timeloop.MarchState``: next h, the PI controller's last error, the estimator's
three previous nodes), so a resumed run continues the controller exactly where the
interrupted one was and takes the same steps, bit for bit; the file grows by copying
and is compacted to N steps at the end (store.py).  The states kept in memory for the
reverse sweep follow the schedule's rule with the current step as N.  ``revolve:C``
places its forward checkpoints online (schedules.Revolve.online_slot: equidistant,
thinned by doubling, on half the slots); the reverse sweep is the fixed-step one.
"""
from __future__ import annotations

import numpy as np

from ..integrators import quadrature
from ..integrators.timeloop import MarchState, TimeGrid, march, memory_width, newton_cap, set_step
from ..integrators.trajectory import Trajectory
from ..model.system import ModelError
from .schedules import revolve_split

#: rows of ``all`` read per block in the reverse sweep (bounded by ~16 MB)
_BLOCK_BYTES = 16 << 20


class StoredTrajectory:
    """What ``Problem.forward`` returns with a checkpoint file: times, objective
    values, Newton iterations of the steps computed in this job.  The states are in
    the file (``full()`` reads them back collectively for schedule ``all``)."""

    def __init__(self, run, t, values, newton_its, resumed_from, grid=None, rejected=0):
        self._run, self.t, self.values = run, t, values
        self.newton_its, self.resumed_from = newton_its, resumed_from
        self.grid, self.rejected = grid, rejected     # TimeGrid; rejected steps (adaptive, whole run)

    @property
    def steps(self):
        return len(self.t) - 1

    def full(self):
        """Collective: the whole trajectory as an in-memory Trajectory (schedule ``all``)."""
        rows = self._run.store.read_rows(0, self.steps)
        Q, V, A, L, *E = (np.array([r[1][j] for r in rows]) for j in range(len(rows[0][1])))
        return Trajectory(np.array([r[0] for r in rows]), Q, V, A, L, self.newton_its, self.grid, self.rejected,
                          extra=E)

    def __getattr__(self, name):
        if name in ("q", "v", "a", "lam"):
            raise AttributeError(f"the states of a checkpointed run are in {self._run.store.path}; "
                                 "use .full() (schedule 'all') or run without [checkpoint]")
        raise AttributeError(name)


class CheckpointedRun:
    def __init__(self, problem, store):
        self.pr, self.store, self.sched = problem, store, store.schedule
        self.N = problem.nsteps
        self.T = problem.grid.t            # fixed steps; adaptive: set when the forward run ends
        self.adaptive = problem.adapt is not None
        self.H = None                      # adaptive: h_0 … h_{k−1} of the forward run so far
        self.held = {}                 # states kept in memory from the forward run
        self.mem = {}                  # revolve: mirror of the slots
        self.forward_steps = 0         # forward steps computed in the forward run (this job)
        self.recomputed = 0            # forward steps recomputed by the reverse sweep (this job)
        self.adjoint_steps = 0
        self._step_values = None       # the integrands' evaluator of the current refs (_integrands)
        check_ride_schedule(self)          # ride objectives: schedule 'all' only
        why = quadrature.checkpoint_refusal(problem.quadrature) if self.adaptive else None
        if why:                            # w_k must be known once h_k is (_weight)
            raise ModelError("simulation.quadrature", why)

    # -- forward ------------------------------------------------------------------------------
    def resume_point(self):
        """Step the forward run would start from (N if it is complete)."""
        st = self.store
        if st.adjoint_marker[0] in (0, 1):
            return st.N if self.adaptive else self.N     # (an adaptive file is compacted to N)
        if self.sched.kind == "all":
            return max(st.valid_steps, 0)
        used = st.slot_step[st.slot_step >= 0]
        return int(used.max()) if used.size else 0

    def _integrands(self, k, x, p, refs):
        """w_k f_k(x_k) for every objective (0 without integrand): ``Problem.step_values``
        (sensitivity/step_values.py; ``Term.value`` bit for bit, in fewer numpy calls),
        built once per list of references (once per forward run)."""
        pr = self.pr
        w = pr.w[k] if self.H is None else self._weight(k)
        if self._step_values is None or self._step_values.refs is not refs:
            self._step_values = pr.step_values(refs)
        return w * self._step_values(self.T[k], x, p)

    def _weight(self, k):
        """Adaptive: w_k once h_k is known, as TimeGrid.weights() computes it (bit for bit)."""
        H = self.H
        lo = 0.5 * H[k - 1] if k > 0 else 0.0
        hi = 0.5 * H[k] if k < len(H) else 0.0
        return lo + hi

    def _values(self, psi, x, p, refs):
        pr = self.pr
        out = np.zeros(len(pr.objectives))
        for j, (ob, ref) in enumerate(zip(pr.objectives, refs)):
            val = 0.0
            if getattr(ob.integrand, "history", False):     # ride measure: from the stored states (ride.py)
                val += self._prepare_history(ob, p)
            elif ob.integrand:
                val += psi[j] + pr.w[self.N] * ob.integrand.value(pr.sys, self.T[self.N], x[:4], p, ref)
            if ob.terminal:
                val += ob.terminal.value(pr.sys, self.T[self.N], x[:4], p, ref)
            out[j] = ob.weight * val
        return out

    def _start(self, p):
        """(k0, x_k0, ψ_k0) to continue the forward run from, and x_0."""
        pr, st = self.pr, self.store
        x0 = pr.stepper.initial(pr.t0, p)
        if self.adaptive:
            return self._start_adaptive(x0)
        if self.sched.kind == "all":
            if st.valid_steps >= 0:
                k = st.valid_steps
                t, x, psi = st.read_rows(k, k)[0]
                return k, x, psi, x0
        else:
            for i in np.argsort(-st.slot_step, kind="stable"):
                k = int(st.slot_step[i])
                if k < 0:
                    break
                got = st.read_state(int(i), k)
                if got is None:                         # torn write: not a state
                    st.free_slot(int(i))
                    continue
                if self.sched.kind == "revolve":
                    self.mem[k] = got[1]
                return k, got[1], got[2], x0
        return 0, x0, np.zeros(len(pr.objectives)), x0

    def _start_adaptive(self, x0):
        """Adaptive: (k0, x_k0, ψ_k0, x0) as ``_start``, and the loop state after step
        k0 (self.state) and the grid t_0 … t_k0 (self.T, self.H) read from the file."""
        pr, st = self.pr, self.store
        self.state = MarchState(pr.t0, x0, memory_width(pr.adapt))
        self.T, self.H = [pr.t0], []
        found = None
        if self.sched.kind == "all":
            if st.valid_steps > 0:
                k = st.valid_steps
                rows = st.read_rows(max(0, k - 3), k, control=True)
                hist = [(r[0], r[1][0], r[1][1]) for r in rows]
                found = k, rows[-1][1], rows[-1][2], rows[-1][3], hist
        else:
            for i in np.argsort(-st.slot_step, kind="stable"):
                k = int(st.slot_step[i])
                if k <= 0:
                    break
                got = st.read_state(int(i), k)
                if got is None:                         # torn write: not a state
                    st.free_slot(int(i))
                    continue
                t, x, psi, (ctl, ht, hq, hv) = got
                hist = [(ht[j], hq[j], hv[j]) for j in range(3) if not np.isnan(ht[j])] + [(t, x[0], x[1])]
                found = k, x, psi, ctl, hist
                break
        if found is None:
            if st.root:
                st.grid_rows = 0
            return 0, x0, np.zeros(len(pr.objectives)), x0
        k, x, psi, ctl, hist = found
        t, h = st.read_grid(k)
        if st.root:
            st.grid_rows = k + 1                         # rows after k are rewritten
        self.T, self.H = list(t), list(h)
        self.state.restore(ctl, hist)
        return k, x, psi, x0

    def _hist_before(self):
        """every:K, adaptive: (t, q, v) of the three states before the current one, NaN-padded."""
        hist = self.state.hist[:-1][-3:]
        n = self.pr.sys.n
        ht, hq, hv = np.full(3, np.nan), np.zeros((3, n)), np.zeros((3, n))
        for j, (t, q, v) in enumerate(hist):
            ht[j], hq[j], hv[j] = t, np.real(q), np.real(v)
        return ht, hq, hv

    def _complete_adaptive(self):
        """Adaptive: the run's grid becomes the problem's (sweeps, weights, N)."""
        grid = TimeGrid(np.array(self.T), np.array(self.H))
        self.pr._set_grid(grid)
        self.T, self.N, self.H = grid.t, grid.steps, None
        return grid

    def forward(self, p, progress=None, on_step=None):
        if self.adaptive:
            return self._forward_adaptive(p, progress, on_step)
        pr, st, N, T = self.pr, self.store, self.N, self.T
        refs_of = lambda x0: [ob.reference(pr.sys, x0[0], p) for ob in pr.objectives]  # noqa: E731
        rec = st.load_adjoint() if st.adjoint_marker[0] in (0, 1) else None
        if rec is not None:                               # forward already complete
            return StoredTrajectory(self, self.T, dict(zip(self._names(), rec[5])), np.zeros(0, np.int64), N)
        k0, x, psi, x0 = self._start(p)
        refs = refs_of(x0)
        keep = self.sched.forward_keep(N)
        if k0 == 0:
            self._put(0, x, psi)
        if on_step:                    # on_step sees the steps computed in this job
            on_step(k0, T[k0], x[:4])
        if k0 >= keep:
            self.held[k0] = x
        pr.guard.start(k0, T[k0], x, p)                 # instability guard (integrators/guard.py)
        prev = [x]                                      # x_{k−1} of the state kept next

        def kept(k, t, h, xk):
            """x_k accepted by the time loop: ψ_k = ψ_{k−1} + w_{k−1} f(x_{k−1}), stored."""
            nonlocal psi
            psi = psi + self._integrands(k - 1, prev[0], p, refs)
            prev[0] = xk
            self.forward_steps += 1
            st.kill("forward")
            self._put(k, xk, psi)
            if k >= keep:
                self.held[k] = xk
            if on_step:
                on_step(k, t, xk[:4])

        (_, its), _ = march(pr.stepper, p, T[-1], x, k0, T[k0], kept, grid=pr.grid, guard=pr.guard,
                            progress=progress, quad=pr.quadrature_error(p, x0))
        x = prev[0]
        if self.sched.kind == "all":
            st.sync()
        values = self._values(psi, x, p, refs)
        if pr.objectives:              # seed of a later adjoint sweep (none without objectives)
            mu, grad, gref = self._adjoint_seed(N, x, p, refs)
            st.save_adjoint(N, x, mu, grad, gref, values, force=True)
        return StoredTrajectory(self, T, dict(zip(self._names(), values)), its, k0)

    def _forward_adaptive(self, p, progress, on_step):
        """The forward run of an adaptive run (module docstring): march chooses the
        steps, continuing from the loop state stored with the resume state."""
        pr, st = self.pr, self.store
        rec = st.load_adjoint() if st.adjoint_marker[0] in (0, 1) else None
        if rec is not None:                               # forward already complete: its grid
            t, h = st.read_grid(st.N)
            self.T, self.H = list(t), list(h)
            grid = self._complete_adaptive()
            return StoredTrajectory(self, self.T, dict(zip(self._names(), rec[5])), np.zeros(0, np.int64),
                                    self.N, grid, None)          # (rejections: counted by the run that made it)
        k0, x, psi, x0 = self._start(p)
        refs = [ob.reference(pr.sys, x0[0], p) for ob in pr.objectives]
        sched = self.sched
        if k0 == 0:
            self._put(0, x, psi)
        if on_step:
            on_step(k0, self.T[k0], x[:4])
        self.held = {k0: x}
        pr.guard.start(k0, self.T[k0], x, p)
        pr.guard.alternating = False                      # the (−1)^k monitor assumes equal steps
        prev = [x]

        def kept(k, t, h, xk):
            nonlocal psi
            self.T.append(t)
            self.H.append(h)
            psi = psi + self._integrands(k - 1, prev[0], p, refs)
            prev[0] = xk
            self.forward_steps += 1
            st.kill("forward")
            self._put(k, xk, psi)
            self.held[k] = xk
            lo = sched.forward_keep(k)                   # the schedule's rule with k as N
            for j in [j for j in self.held if j < lo]:
                del self.held[j]
            if on_step:
                on_step(k, t, xk[:4])

        (_, its), _ = march(pr.stepper, p, pr.config.simulation.t_end, x, k0, self.T[k0], kept, adapt=pr.adapt,
                            guard=pr.guard, progress=progress, comm=pr._mpi_if_distributed(), state=self.state,
                            quad=pr.quadrature_error(p, x0))
        x = prev[0]
        st.sync()
        grid = self._complete_adaptive()
        st.resize(self.N)                                 # compacted to exactly N steps
        values = self._values(psi, x, p, refs)
        if pr.objectives:
            mu, grad, gref = self._adjoint_seed(self.N, x, p, refs)
            st.save_adjoint(self.N, x, mu, grad, gref, values, force=True)
        return StoredTrajectory(self, self.T, dict(zip(self._names(), values)), its, k0, grid,
                                self.state.rejected)

    def _prepare_history(self, ob, p):
        """A ride objective's ψ (unweighted), its m_k = ∂ψ/∂s_k set, from the signal
        history recomputed from the file's states (schedule ``all``; sensitivity/ride.py)."""
        return ob.integrand.prepare(stored_signal_history(self, ob.integrand, p), self.pr.grid)

    def _adjoint_seed(self, N, x, p, refs):
        """The adjoint record at k = N: (μ_N blocks, ∂ψ/∂ρ, ∂ψ/∂ref) per objective column
        (a PETSc TS run stores its own: checkpoint/ts_run.py)."""
        return self.pr._adjoint_local(N, self.T[N], x, p, refs)

    def _names(self):
        return [ob.name for ob in self.pr.objectives]

    def _put(self, k, x, psi):
        st = self.store
        if self.adaptive:
            return self._put_adaptive(k, x, psi)
        if self.sched.kind == "all":
            if k > st.valid_steps:
                st.put_row(k, self.T[k], x, psi)
            return
        i = self.sched.forward_slot(k, self.N)
        if i is not None and st.slot_step[i] != k:
            st.put_slot(i, k, self.T[k], x, psi)
            if self.sched.kind == "revolve":
                self.mem[k] = x

    def _put_adaptive(self, k, x, psi):
        st = self.store
        st.ensure(k)
        ctl = self.state.control() if k > 0 else np.full(st.control_width, np.nan)
        st.put_grid(k, self.T[k], self.H[k - 1] if k else 0.0)
        if self.sched.kind == "all":
            if k > st.valid_steps:
                st.put_row(k, self.T[k], x, psi, ctl)
            return
        i = self.sched.forward_slot(k, st.N) if self.sched.kind == "every" else \
            self.sched.online_slot(k, st.slot_step)
        if i is not None and st.slot_step[i] != k:
            if k > 0:
                ht, hq, hv = self._hist_before()
            else:
                ht, hq, hv = np.full(3, np.nan), np.zeros((3, self.pr.sys.n)), np.zeros((3, self.pr.sys.n))
            st.put_slot(i, k, self.T[k], x, psi, (ctl, ht, hq, hv))

    def _block(self):
        width = 8 * (3 * self.pr.sys.n + self.pr.sys.m + 2)
        return max(1, _BLOCK_BYTES // width)

    # -- adjoint ------------------------------------------------------------------------------
    def adjoint(self, p):
        """∇ψ (dict by objective) continuing from the last adjoint record in the file."""
        pr, st = self.pr, self.store
        rec = st.load_adjoint()
        if rec is None:
            self.forward(p)
            rec = st.load_adjoint()
        k, x1, mu, grad, gref, values = rec
        for ob in pr._history():                         # ride objectives: m_k from the stored states
            self._prepare_history(ob, p)
        x0 = pr.stepper.initial(pr.t0, p)
        refs = [ob.reference(pr.sys, x0[0], p) for ob in pr.objectives]
        provider = self._provider(p, k, x0, x1)

        def after(j, xj, mu_, grad_, gref_):
            self.adjoint_steps += 1
            st.kill("adjoint")
            st.save_adjoint(j, xj, mu_, grad_, gref_, values, force=(j == 0))

        mu, grad, gref = pr._adjoint_sweep(p, k, x1, mu, grad, gref, provider.state, refs, after)
        self.recomputed += provider.recomputed
        self.held.clear()
        return pr._adjoint_finish(p, x0, mu, grad, gref)

    def _provider(self, p, k, x0, x1):
        """The schedule's provider of x_{k−1}, …, x_0 (the adjoint record at k holds x1)."""
        return {"all": _AllProvider, "every": _EveryProvider, "revolve": _RevolveProvider}[self.sched.kind](
            self, p, k, x0)


class _Provider:
    """Gives x_k for k = K−1, K−2, …, 0 in that order (K the adjoint record's step)."""

    def __init__(self, run, p, k, x0):
        self.run, self.p, self.x0 = run, p, x0
        self.st, self.pr, self.T = run.store, run.pr, run.T
        self.recomputed = 0
        self.held = {j: x for j, x in run.held.items() if j < k}
        self.quad = self.pr.quadrature_error(p, x0)     # Newton's bound of the forward (timeloop.newton_cap)

    def advance(self, j, x, to):
        """x_to from x_j by recomputing forward steps."""
        for i in range(j, to):
            set_step(self.pr.stepper, self.pr.grid.h[i], newton_cap(self.quad, self.T[i], x, self.pr.grid.h[i]))
            x, _ = self.pr.stepper.step(i, self.T[i], x, self.p)
            self.recomputed += 1
        return x


class _AllProvider(_Provider):
    def __init__(self, *a):
        super().__init__(*a)
        self.B = self.run._block()
        self.cache = {}

    def state(self, k):
        if k in self.held:
            return self.held.pop(k)
        if k not in self.cache:
            lo = max(0, k - self.B + 1)
            self.cache = {lo + j: x for j, (_, x, _) in enumerate(self.st.read_rows(lo, k))}
        return self.cache.pop(k)


class _EveryProvider(_Provider):
    def state(self, k):
        if k in self.held:
            return self.held.pop(k)
        K = self.run.sched.count
        base = (k // K) * K
        while True:
            if base == 0 and self.st.slot_step[0] != 0:
                x = self.x0
                break
            i = base // K
            got = self.st.read_state(i, base) if self.st.slot_step[i] == base else None
            if got is not None:
                x = got[1]
                break
            base -= K                      # torn or missing: start from the one before
            base = max(base, 0)
        for j in range(base, k):
            self.held[j] = x
            x = self.advance(j, x, j + 1)
        return x


class _RevolveProvider(_Provider):
    def __init__(self, run, p, k, x0):
        super().__init__(run, p, k, x0)
        st = self.st
        for i, s in enumerate(st.slot_step):           # states after k are never needed again
            if s >= k:
                st.free_slot(i)
        self.mem = {j: x for j, x in run.mem.items() if j in set(st.slot_step.tolist())}

    def _slot_of(self, step):
        return int(np.flatnonzero(self.st.slot_step == step)[0])

    def _load(self, s):
        if s in self.mem:
            return self.mem[s]
        got = self.st.read_state(self._slot_of(s), s)
        if got is None:
            return None
        self.mem[s] = got[1]
        return got[1]

    def state(self, k):
        if k in self.held:
            return self.held.pop(k)
        st = self.st
        while True:
            used = st.slot_step[(st.slot_step >= 0) & (st.slot_step <= k)]
            s = int(used.max()) if used.size else None
            x = self._load(s) if s is not None else None
            if s is not None and x is None:              # torn write: forget that slot
                st.free_slot(self._slot_of(s))
                continue
            if s is None:
                s, x = 0, self.x0
            if s == k:
                if np.any(st.slot_step == k):
                    st.free_slot(self._slot_of(k))
                self.mem.pop(k, None)
                return x
            free = int(np.sum(st.slot_step < 0))
            m = revolve_split(k + 1 - s, free + 1)
            x = self.advance(s, x, s + m)
            if s + m == k:
                return x
            i = int(np.flatnonzero(st.slot_step < 0)[0])
            extra = None
            if self.run.adaptive:        # no loop state: the forward run never resumes from these
                n = self.pr.sys.n
                extra = (np.full(st.control_width, np.nan), np.full(3, np.nan), np.zeros((3, n)), np.zeros((3, n)))
            st.put_slot(i, s + m, self.T[s + m], x, np.zeros(len(self.pr.objectives)), extra)
            self.mem[s + m] = x


def _full_trajectory(self, traj):
    """An in-memory Trajectory for the direct method (schedule ``all`` only)."""
    if not isinstance(traj, StoredTrajectory):
        return traj
    if self.sched.kind != "all":
        from ..config import ConfigError
        raise ConfigError(self.pr.config.source or "<config>", "checkpoint.schedule",
                          f"the direct method needs every state; schedule {self.sched.text!r} keeps only "
                          "checkpoints (use 'all' or the adjoint method)")
    return traj.full()


CheckpointedRun.full_trajectory = _full_trajectory


# -- ride objectives (sensitivity/ride.py) over a checkpoint file ------------------------

def check_ride_schedule(run):
    """A checkpointed run keeps every state only with schedule ``all`` (the signal history
    is recomputed from them); refuse the others while ride objectives (sensitivity/ride.py:
    an integrand with ``history``) are present."""
    rides = [ob for ob in run.pr.objectives if getattr(ob.integrand, "history", False)]
    if rides and run.sched.kind != "all":
        raise ModelError("checkpoint.schedule", f"schedule {run.sched.kind!r} with the ride objective "
                         f"{rides[0].name!r}: its signal history is recomputed from every stored state, "
                         "use 'all'")


def stored_signal_history(run, term, p):
    """s_0 … s_N of a ride objective's signal ``term`` read back from a checkpoint file
    of schedule ``all`` (CheckpointedRun; sensitivity/ride.py)."""
    st, N = run.store, run.N
    out = np.zeros(N + 1)
    step = run._block()
    for k0 in range(0, N + 1, step):
        k1 = min(N, k0 + step - 1)
        for j, row in enumerate(st.read_rows(k0, k1)):
            out[k0 + j] = term.value(run.pr.sys, row[0], tuple(row[1][:4]), p, None)
    return out
