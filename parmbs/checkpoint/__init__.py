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


def runs():
    """The checkpointed run of each ``checkpoint_sweep`` a stepper declares
    (integrators/one_step.py): restart.py's own adjoint steps, ts_run.py's TSAdjoint."""
    from .restart import CheckpointedRun
    from .ts_run import TSCheckpointedRun
    return {"adjoint_step": CheckpointedRun, "ts": TSCheckpointedRun}


def refusal(stepper, integrator):
    """Why ``stepper``'s run keeps no checkpoint file (a message), or None: its declared
    ``checkpoint_refusal()``, or no ``checkpoint_sweep`` (the trajectory stays in memory:
    schedule ``all`` without a file, no --restart)."""
    why = stepper.checkpoint_refusal()
    if why is None and stepper.checkpoint_sweep is None:
        why = (f"the {integrator} integrator keeps its trajectory in memory: only schedule 'all' without a "
               "checkpoint file or --restart is supported")
    return why


def open_run(problem, path, comm=None, interval=None):
    """A CheckpointedRun of ``problem`` on the file ``path`` (created or resumed).

    The stepper declares how its reverse sweep goes (``checkpoint_sweep``, a key of
    ``runs()``) and whether this run refuses a file (``checkpoint_refusal``;
    integrators/one_step.py): a refusal is a ConfigError (key ``checkpoint.schedule``)
    naming why.  The checkpoint layer builds the run around the stepper; the stepper never
    imports it.  Raises HDF5Error for a file that cannot be resumed (another config,
    corrupt)."""
    from ..config import ConfigError
    cfg = problem.config
    sched = parse_schedule(cfg.checkpoint.schedule)
    why = refusal(problem.stepper, cfg.simulation.integrator)
    if why:
        raise ConfigError(cfg.source or "<config>", "checkpoint.schedule", why)
    if cfg.simulation.formulation == "maggi" and cfg.simulation.maggi.adjoint != "discrete":
        raise ConfigError(cfg.source or "<config>", "simulation.maggi.adjoint",
                          f"{cfg.simulation.maggi.adjoint!r} integrates the thesis' adjoint ODE over the "
                          "in-memory trajectory (parmbs/formulations/maggi_avm.py): a checkpoint file or "
                          "--restart serves only 'discrete'")
    store = CheckpointStore(path, cfg, problem, sched, comm=comm, interval=interval)
    return runs()[problem.stepper.checkpoint_sweep](problem, store)
