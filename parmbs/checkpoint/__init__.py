"""HDF5 trajectory checkpoints, schedules and restart (config ``[checkpoint]``).

* ``store.py``      the file: fixed-shape pre-allocated datasets, CRC per state,
                    progress markers published after a flush (safe under SIGKILL)
* ``schedules.py``  ``all`` | ``every:K`` | ``revolve:C`` and their recomputation counts
* ``restart.py``    forward run and adjoint sweep through the file, resumable
* ``ts_run.py``     the same for PETSc TS steppers: TS re-runs for TSAdjoint's stages

Revolve: why our own 40 lines and not a package.  ``pyrevolve`` (2.2.8) ships only as
an sdist with a Cython/C++ extension (a compiler and Cython ≥ 3 at install time, on
every cluster) and drives the computation through its own Operator/Checkpoint classes
holding the snapshots in numpy memory — no on-disk slots, nothing to resume a killed
job from.  ``checkpoint_schedules`` (1.0.4, pure Python, LGPL-3) fits better but its
cost model re-executes the forward step before each reverse step to record its
"adjoint dependencies"; our adjoint step needs only x_k and x_{k+1} and already holds
x_{k+1}, so its schedules cost N more forward steps (14 vs 9 for 6 steps and 2
slots), and its schedule is a generator with no state to restart from.  The binomial
schedule here is the recursion itself, evaluated lazily from the slot table in the
file (so it resumes from whatever the file holds), with Griewank's closed-form cost
and an optimal split checked against the exhaustive recursion in the tests.
"""
from __future__ import annotations

from .schedules import parse_schedule, revolve_cost, revolve_split  # noqa: F401
from .store import CheckpointStore, HDF5Error, SimulatedKill, resolved_sha256  # noqa: F401


def open_run(problem, path, comm=None, interval=None):
    """A CheckpointedRun of ``problem`` on the file ``path`` (created or resumed).

    A whole-run PETSc TS stepper says how its reverse sweep goes (``checkpoint_sweep``):
    ``"ts"`` (integrators/ts.py: TS re-runs and TSAdjoint, ts_run.py) or ``"adjoint_step"``
    (integrators/ts_alpha2.py: the one-step steppers' CheckpointedRun), or is refused: ConfigError
    (key ``checkpoint.schedule``) naming why.  The checkpoint layer builds the run around
    the stepper; the stepper never imports it.  Raises HDF5Error for a file that cannot be
    resumed (another config, corrupt)."""
    from ..config import ConfigError
    from .restart import CheckpointedRun
    from .ts_run import TSCheckpointedRun
    cfg = problem.config
    sched = parse_schedule(cfg.checkpoint.schedule)
    sweep = getattr(problem.stepper, "checkpoint_sweep", None)
    if hasattr(problem.stepper, "forward"):
        why = getattr(problem.stepper, "checkpoint_refusal", lambda: None)()
        if sweep is None or why:
            raise ConfigError(cfg.source or "<config>", "checkpoint.schedule",
                              why or f"the {cfg.simulation.integrator} integrator (PETSc TS) keeps its trajectory "
                              "in memory: only schedule 'all' without a checkpoint file or --restart is supported")
    if cfg.simulation.formulation == "maggi" and cfg.simulation.maggi.adjoint != "discrete":
        raise ConfigError(cfg.source or "<config>", "simulation.maggi.adjoint",
                          f"{cfg.simulation.maggi.adjoint!r} integrates the thesis' adjoint ODE over the "
                          "in-memory trajectory (parmbs/formulations/maggi_avm.py): a checkpoint file or "
                          "--restart serves only 'discrete'")
    store = CheckpointStore(path, cfg, problem, sched, comm=comm, interval=interval)
    return (TSCheckpointedRun if sweep == "ts" else CheckpointedRun)(problem, store)
