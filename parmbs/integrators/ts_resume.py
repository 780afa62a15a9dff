"""Resuming a checkpointed adaptive TS run at its last stored state (mixed into
integrators/ts.py's TSStepper; issue 18 item 4, checkpoint/ts_run.py).

A forward run with TSAdapt (``simulation.adapt``) killed part-way used to be re-run from
x_0 on ``--restart`` (integrators/rerun.py): TSAdapt's choice of the next step reads more
than the stored state.  What it reads, PETSc 3.18:

* TSAdaptChoose_Basic: the proposal h_next (ts->time_step after the last accepted step)
  and the scheme's error estimate; the controller keeps no state of its own between steps
  (its timestepjustdecreased counter stays 0 at the default
  -ts_adapt_time_step_increase_delay 0);
* TSEvaluateWLTE_Theta (ts-theta, ts-cn, ts-beuler): the backward difference over
  y_{k−1} (TSTHETA's vec_sol_prev, copied from X0 at the start of TSStep_Theta), y_k and
  y_{k+1} with h_prev = ts->ptime − ts->ptime_prev, and no estimate at all on a TS's
  first step (ts->steprestart);
* explicit RK and ARKIMEX: the embedded estimate of the step itself (FSAL off,
  ``_make_ts``; no explicit first stage): nothing of the step before.

So an adaptive checkpoint stores with x_k TSAdapt's proposal ``h_next`` and, for TSTHETA,
the step before: ``prev`` = (t_{k−1}, h_{k−1}), ``y_prev`` and a reduced ODE's
``guess_prev`` (``TSStepper.extra_state``).  A resumed run starts TSTHETA at
(t_{k−1}, y_{k−1}) and re-takes that step (``_resume_adaptive``): TSAdapt accepts a TS's
first step unestimated, and afterwards X0 = y_{k−1}, ptime_prev = t_{k−1}, ptime = t_k
and steprestart is clear — the uninterrupted run's state after step k, checked bit for
bit at y_k, t_k and h_{k−1}; then h_next.  RK and ARKIMEX start at x_k with h_next, as
their reverse-sweep re-runs already do (``replays_attempts``).  The resumed steps are the
uninterrupted run's bit for bit (tests/test_ts_checkpoint.py:
test_adaptive_forward_resumes_at_its_checkpoint, test_sigkill_then_restart_same_gradient).
"""
import numpy as np

from .timeloop import TimeGrid


class AdaptiveResume:
    """The resumable adaptive run of TSStepper (module docstring)."""

    @property
    def resumes_from_previous(self):
        """Does a resumed adaptive run need the state before the one it resumes from?
        TSTHETA's error estimate (TSEvaluateWLTE_Theta, PETSc 3.18; ts-theta, ts-cn,
        ts-beuler) is a backward difference over y_{k−1}, y_k, y_{k+1} with
        h_prev = t_k − t_{k−1} (ts->ptime_prev), skipped on a TS's first step
        (ts->steprestart), so an adaptive checkpoint stores with x_k the step before it:
        ``prev`` = (t_{k−1}, h_{k−1}), ``y_prev`` (and a reduced ODE's ``guess_prev``);
        ``h_next`` is TSAdapt's proposal for step k (every adaptive scheme).  An explicit
        RK or ARKIMEX step reads nothing of the step before (embedded estimate; FSAL off:
        ``_make_ts``) — h_next is all it needs (``replays_attempts``)."""
        return self.sim.adapt is not None and self.kind in ("ts-beuler", "ts-theta", "ts-cn")

    def _block(self, x, name):
        """The ``extra_state`` block ``name`` of a stored state x."""
        names = [b for b, _ in self.extra_state]
        return x[4 + names.index(name)]

    def _resume_adaptive(self, ts, start, first, h_next):
        """Put the TSTHETA run started at (t_{k0−1}, y_{k0−1}) into the state the
        uninterrupted run had after step k0 (``resumes_from_previous``): one TSStep of the
        stored h_{k0−1} — a TS's first step, which TSAdapt accepts without an estimate
        (TSEvaluateWLTE_Theta: steprestart) — sets TSTHETA's X0 = y_{k0−1} (the next step's
        vec_sol_prev), ts->ptime_prev = t_{k0−1}, ts->ptime = t_{k0−1} + h_{k0−1} (the sum the
        forward run formed) and clears steprestart; its t_k0 and h must be the stored ones
        bit for bit and its y_k0 too — or, for a distributed solve that does not repeat bit
        for bit (parallel MUMPS), within its round-off bound, the stored y_k0 then put in
        its place (ts_determinism.py) — RuntimeError otherwise.  Then TSAdapt's stored
        proposal h_next is the next step's size.  TSAdapt basic itself keeps no state
        between steps (its timestepjustdecreased counter stays 0 at the default
        -ts_adapt_time_step_increase_delay 0)."""
        k0, xs, tk = start
        self._steps.step()
        got, want = np.array(self.layout.get(ts.getSolution())), self.ystate(xs)
        why = "" if ts.getTime() == tk and self._h_try == first[1] else f"(t = {ts.getTime()!r}, h = {self._h_try!r})"
        why = why or self.solves.mismatch(got, want, 1)
        if why:
            ts.destroy()
            raise RuntimeError(f"step {k0} (t = {tk:.6g}): the adaptive {self.kind} step re-taken from the stored "
                               f"step before differs from the stored state it resumes from {why}")
        if not np.array_equal(got, want):       # a distributed solve within its bound (ts_determinism.py)
            self.layout.set(ts.getSolution(), want)
            got = np.array(want)
        ts.setTimeStep(h_next)
        self.reseed(xs[5] if self.reduced else None)
        st = self._step_of
        st["t"], st["last"], st["a"] = tk, (tk, got, xs[5] if self.reduced else None), np.asarray(xs[2], float).copy()
        st["rejected0"] = ts.getStepRejections()

    def _adaptive_blocks(self, t, y, x, h, h_next):
        """``extra_state``'s blocks of an adaptive run after (q, v, a, λ[, y, guess]): TSAdapt's
        next step h_next and (``resumes_from_previous``) the step before x: (t_{k−1}, h_{k−1}),
        y_{k−1}[, guess_{k−1}] — at x_0 its own t, 0, y, guess.  ``self._step_of["last"]``
        carries (t, y, guess) of the state before."""
        if self.sim.adapt is None:
            return ()
        out = (np.array([float(h_next)]),)
        if self.resumes_from_previous:
            st = self._step_of
            g = x[5] if self.reduced else None
            tp, yp, gp = st.get("last") or (t, y, g)
            out += (np.array([tp, h]), np.array(yp)) + ((np.array(gp),) if self.reduced else ())
            st["last"] = (t, y, g)
        return out

    def _march_resumed(self, p, x, k0, t0, keep, state, progress):
        """``march_adaptive`` from the stored x_k0 (k0 > 0): one TS with TSAdapt in the state
        of the uninterrupted run after step k0 (``_run``'s resume: the step before x_k0
        re-taken for TSTHETA, TSAdapt's proposal h_next for all), so the steps after k0 are
        the uninterrupted run's bit for bit (tests/test_ts_checkpoint.py).  ``state``: the
        rejections so far (stored) plus this run's."""
        T, H = [t0], []
        base = state.rejected if state is not None else 0

        def kept(k, t, h, xk):
            if state is not None:
                live = self._live
                state.h_next = live.getTimeStep()
                state.rejected = base + live.getStepRejections() - self._step_of.get("rejected0", 0)
                state.err_prev, state.hist = None, []
            T.append(t)
            H.append(h)
            keep(k, t, h, xk)
        _, ts = self._run(self._problem, p, progress=progress, start=(k0, x, t0), keep=kept, guarded=False,
                          resume=True)
        rejected = base + ts.getStepRejections() - self._step_of.get("rejected0", 0)
        ts.destroy()
        return (TimeGrid(np.array(T), np.array(H)), self._last_its), rejected
