"""The in-memory forward TS run kept for the adjoint that follows it (mixed into
integrators/ts.py's TSStepper; issue 18 item 1, "one time loop").

``parmbs gradient`` and every optimizer evaluation run ``Problem.forward`` and then
``Problem.adjoint`` at the same p.  TSAdjoint needs a TS whose TSTrajectory holds each
step's stages, and petsc4py 3.18 cannot fill a TSTrajectory from stored states (ts_run.py),
so the adjoint used to run the forward TS again with its trajectory saved.  Now the
forward run saves its trajectory and keeps its TS (``TSStepper.forward``); the adjoint
takes it when it is the run it would compute — the same problem, the bytes of p, the
step sequence and options (``_forward_key``), and still ``problem.traj`` — and runs
TSAdjoint back through it; otherwise (another p, a frozen replay, an adjoint without a
forward) it runs the forward as before.  Any other TS run (``_run``: checkpointed runs
and their re-runs, FD, another forward) and ``release`` drop it, so a kept TS never
crosses a checkpointed or restarted run.  Our own adjoint steps (ts-arkimex, ts-rk 5dp:
``uses_own_adjoint``) read only the states, so they take the kept trajectory alone.

The gradient's bytes are those of the re-run path: the forward TS run is deterministic
(``ψ``, ``∇ψ`` sha256 equal on 18 TS runs, benchmarks/ts_forward_kept.py); the cost is one
forward run less per gradient (benchmarks/README.md, "TS forward run kept for the
adjoint") and the saved stages in memory until the adjoint or the next run.
"""
import numpy as np

from .._petsc import PETSc


class KeptForward:
    """The kept forward run of TSStepper (module docstring)."""

    #: (key, trajectory, TS, (q_0, v_0)) of the last in-memory forward run (``forward``), or None
    _kept = None

    def _forward_key(self, problem, p):
        """What the adjoint's forward run would be computed from: the problem, the bytes of
        p, the step sequence (nominal steps, frozen times, adaptive settings), the objective
        quadrature and every PETSc option (-parmbs_ts_* may change the scheme, TSAdapt or
        the solver).  A kept run is reused only when all of it is equal."""
        pa = np.asarray(p)
        opts = PETSc.Options().getAll()
        return (id(problem), pa.dtype.str, pa.shape, pa.tobytes(), float(problem.t0), self._nsteps(problem),
                float(self.dt), repr(self.adapt), None if self.grid is None else self.grid.tobytes(),
                problem.quadrature, tuple(sorted((k, str(v)) for k, v in opts.items())))

    def _take_forward(self, problem, p, own):
        """(trajectory, TS) of the kept forward run when it is this adjoint's — the same
        key (``_forward_key``), still ``problem.traj``, and a saved TSTrajectory unless
        ``own`` (our adjoint steps read only the states) — else (None, None).  The kept
        run is taken either way (one adjoint consumes it: TSAdjoint runs its TS back).

        The adjoint then runs on exactly the states the objective values were computed
        from.  Before, it re-ran the forward with the trajectory saved (petsc4py 3.18
        cannot fill a TSTrajectory from stored states: ts_run.py), the same bits at
        the cost of a second forward run (benchmarks/README.md, "TS forward run kept
        for the adjoint")."""
        kept, self._kept = self._kept, None
        if kept is None:
            return None, None
        key, traj, ts, qv0 = kept
        ok = key == self._forward_key(problem, p) and problem.traj is traj and (own or ts is not None)
        if not ok:
            ts.destroy()
            return None, None
        self._qv0 = qv0                         # (adjoint_finish's initial terms)
        return traj, ts

    def release(self):
        """Destroy the kept forward run's TS (and its trajectory's stages), if any."""
        kept, self._kept = self._kept, None
        if kept is not None:
            kept[2].destroy()
