"""The ``parmbs`` command (DESIGN.md "CLI").

    parmbs --version
    parmbs info CONFIG
    parmbs simulate CONFIG [-o OUT.h5] [--plot OUT.png] [--restart FILE.h5] [--set k=v]...
    parmbs gradient CONFIG [--method adjoint|direct|fd|cs] [--json OUT.json] [-o OUT.h5]
                           [--restart FILE.h5] [--groups G] [--set k=v]...
    parmbs verify CONFIG [--set k=v]...
    parmbs optimize CONFIG [-o OUT.h5] [--restart FILE.h5] [--set k=v]...
    parmbs plot FILE.h5 [-o OUT.png]
    parmbs animate FILE.h5 -o OUT.gif|OUT.mp4 [--frames N] [--fps F]
    parmbs export FILE.h5 --xdmf OUT.xdmf [--frames N]

Every command takes ``-q/--quiet`` (stdout: only the result lines — objective values,
gradients, verify's verdict, optimize's final design — and the files written; no
progress) or ``-v/--verbose`` (also one stderr line per sweep: its steps or columns and
time; for forward runs the Newton iterations per step), before or after the command.

Every command takes PETSc options after its arguments, ``parmbs simulate CONFIG
-log_view -ksp_monitor``; see ``_start_petsc``.

Exit codes: 0 done; 1 the computation failed (Newton divergence, singular matrix:
the message names step and time); 2 bad usage or bad input (one line
``parmbs: error: <file>: <key>: <message>`` on stderr, no traceback); 3 ``verify``
disagreement.  Runs unchanged under ``mpirun -n N``; only rank 0 prints.

MPI discipline: every error handled here is raised identically on every rank
(config and model errors are deterministic; PETSc solves are collective; rank-0
file writes broadcast their outcome), so all ranks reach the same collective
calls and leave with the same exit code.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import numpy as np

from . import __version__

METHODS = ("adjoint", "direct", "fd", "cs")



# ----------------------------------------------------------------------------- plumbing


def _comm():
    from mpi4py import MPI
    return MPI.COMM_WORLD


def _rank():
    return _comm().rank


def out(*args, **kw):
    """print on rank 0 (stdout)."""
    if _rank() == 0:
        print(*args, **kw, flush=True)


def err(msg):
    if _rank() == 0:
        print(msg, file=sys.stderr, flush=True)


#: 0 with -q, 1 by default, 2 with -v (set by main() for each command)
VERBOSITY = 1


def info(*args, **kw):
    """An informational stdout line (run summary, notices) on rank 0; not with -q."""
    if VERBOSITY >= 1:
        out(*args, **kw)


def detail(msg):
    """With -v only: one diagnostics line ``parmbs: msg`` on stderr (rank 0)."""
    if VERBOSITY >= 2:
        err(f"parmbs: {msg}")


#: the PETSc log stage of a sweep label (parmbs/_log.py); labels not here have none
_SWEEP_STAGES = {"forward": "forward", "adjoint": "adjoint", "direct": "direct", "fd": "fd", "fd sweep": "fd",
                 "cs": "cs", "complex step": "cs"}


class _Sweep:
    """One sweep of a command (forward, adjoint, direct, fd, cs, ...): its progress and,
    with -v, one line with its size and time::

        with _Sweep(cfg, "adjoint") as pg:
            grads = pr.adjoint(progress=pg)

    ``pg(k, N)`` remembers the last k/N and forwards them to io/progress.py's bar or
    lines (rank 0; none with -q or ``simulation.progress = false``).  ``wall``: the
    sweep's seconds once the block is left."""

    def __init__(self, cfg, label, unit="step"):
        from .io.progress import make_progress
        from . import _log
        self.label, self.unit, self.k, self.N, self.wall = label, unit, 0, 0, None
        self.shown = None if VERBOSITY == 0 else make_progress(cfg, label=label, rank=_rank(), unit=unit)
        # the sweep's PETSc log stage (-log_view; parmbs/_log.py), if it has one
        what = _SWEEP_STAGES.get(label)
        self.stage = _log.stage(what) if what else None

    def __call__(self, k, N):
        self.k, self.N = k, N
        if self.shown is not None:
            self.shown(k, N)

    def __enter__(self):
        if self.stage is not None:
            self.stage.__enter__()
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, et, e, tb):
        self.wall = time.perf_counter() - self.t0
        if self.stage is not None:
            self.stage.__exit__(et, e, tb)
        if self.shown is not None:
            self.shown.close()
        if et is None:
            size = f"{self.k} {self.unit}{'s' if self.k != 1 else ''} in " if self.N else ""
            rate = f" ({self.k / max(self.wall, 1e-12):.3g} {self.unit}s/s)" if self.N else ""
            detail(f"{self.label}: {size}{self.wall:.3g} s{rate}")
        return False


class InputError(Exception):
    """Bad usage or bad input: exit 2 with ``parmbs: error: file: key: message``."""

    def __init__(self, file, key, message):
        self.file, self.key, self.message = file, key, message
        super().__init__(f"{file}: {key}: {message}" if file else f"{key}: {message}" if key else message)


class UsageError(Exception):
    pass


class _Exit(Exception):
    def __init__(self, status):
        self.status = status


class ComputationError(Exception):
    """Exit 1: the computation failed (message names step and time where known)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(f"{message} (see '{self.prog} --help')")

    def _print_message(self, message, file=None):
        if message and _rank() == 0:
            super()._print_message(message, file)

    def exit(self, status=0, message=None):
        if message:
            self._print_message(message, sys.stderr)
        raise _Exit(status)


def _on_root(fn, file, key):
    """Run ``fn`` on rank 0 only; its failure becomes the same InputError on every rank."""
    comm = _comm()
    res, failure = None, None
    if comm.rank == 0:
        try:
            res = fn()
        except Exception as e:  # noqa: BLE001 - mapped to one line below
            failure = _error_triplet(e, file, key)
    if comm.size > 1:
        failure = comm.bcast(failure, root=0)
    if failure is not None:
        raise InputError(*failure)
    return res


def _error_triplet(e, file, key):
    from .config import ConfigError
    from .io.hdf5 import HDF5Error
    from .model.system import ModelError
    if isinstance(e, (ConfigError, HDF5Error, InputError)):
        return (e.file, e.key, e.message)
    if isinstance(e, ModelError):
        return (file, e.key, e.message)
    if isinstance(e, OSError):
        return (e.filename or file, key, e.strerror or str(e))
    return (file, key, f"{type(e).__name__}: {' '.join(str(e).split())}")


class _Tracker:
    """Remembers the phase and the last completed forward step, for exit-1 messages."""

    def __init__(self):
        self.phase, self.k, self.t = "setup", None, None

    def on_step(self, k, t, x):
        self.k, self.t = k, t

    def where(self):
        s = self.phase
        if self.k is not None:
            s += f" (last completed step {self.k}, t = {self.t:.6g})"
        return s


def _chain(*fns):
    fns = [f for f in fns if f is not None]
    if not fns:
        return None
    if len(fns) == 1:
        return fns[0]

    def call(*a):
        for f in fns:
            f(*a)
    return call


def _load(args):
    from .config import load_config
    return load_config(args.config, args.set or [])


def _require_objectives(cfg, args):
    from .config.checks import require_objectives
    require_objectives(cfg, args.config, args.command)


def _system(cfg, args):
    """The model alone (its size decides the layout); a formulation's missing module is
    reported like _problem does."""
    from .model.system import System
    try:
        return System(cfg)
    except ImportError as e:
        sim = cfg.simulation
        raise InputError(args.config, "simulation.formulation",
                         f"formulation {sim.formulation!r} / integrator {sim.integrator!r} is not "
                         f"available in this build ({e})") from None


def _problem(cfg, args, system=None):
    """The Problem of a single-group command; a model too small to distribute runs
    replicated on COMM_SELF under mpirun (parallel.replicate_small, one start-up line)."""
    from .model.system import System
    from .sensitivity.problem import Problem
    from . import parallel
    try:
        sys_ = system or System(cfg)
        comm, note = parallel.replicate_small(sys_.n + sys_.m, cfg.parallel.distribute)
        if note:
            info(note)
        pr = Problem(cfg, system=sys_, comm=comm)
    except ImportError as e:  # e.g. the penalty formulation's module is not in this build
        sim = cfg.simulation
        raise InputError(args.config, "simulation.formulation",
                         f"formulation {sim.formulation!r} / integrator {sim.integrator!r} is not "
                         f"available in this build ({e})") from None
    if getattr(pr.sys, "redundancy", None) is not None:     # one line: the rows dropped at set-up
        info(pr.sys.redundancy.summary())
    if getattr(pr.stepper, "compiled_note", None):          # compiled step (parmbs/compiled): once per process
        info(pr.stepper.compiled_note)
    return pr


def _no_restart(args):
    if getattr(args, "restart", None):
        raise InputError(args.config, "--restart", f"restarting from {args.restart} is not supported yet")


class _closing:
    """Close a checkpoint run's file on every rank at the end of a block (collective);
    after a simulated kill (tests) leave it as a crash would."""

    def __init__(self, ck, file=None):
        self.ck, self.file = ck, file

    def __enter__(self):
        return self.ck

    def __exit__(self, et, e, tb):
        if self.ck is None:
            return False
        from .checkpoint import SimulatedKill
        if et is not None and issubclass(et, SimulatedKill):
            self.ck.store.abandon()
        else:
            if et is not None and issubclass(et, Exception):   # the close below is collective
                _agree(e, _failure_line(e, self.file)[1])
            try:
                self.ck.store.close()
            except Exception:  # noqa: BLE001 - the original error matters more
                if et is None:
                    raise
        return False


def _checkpoint_run(pr, cfg, args, method="adjoint"):
    """Attach an HDF5 checkpoint file to ``pr`` (parmbs/checkpoint) when the run has one.

    The states go to a working file, never to the result itself (io/outputs.py):

    * ``-o OUT.h5``: ``OUT.h5.partial`` (index-3 steppers), renamed onto OUT.h5 when the
      run is complete; refused while an unfinished ``OUT.h5.partial`` exists;
    * ``--restart OUT.h5`` (or ``OUT.h5.partial``): continue ``OUT.h5.partial`` if it
      exists, else a copy of the finished OUT.h5 (the original stays intact until the
      new result replaces it); ``-o``, if given, must name the same result;
    * ``checkpoint.schedule`` other than ``all`` without ``-o``: a temporary file beside
      ``checkpoint.file`` (``STEM.tmp-PID.h5``), removed at the end — no file is left
      behind and no later run resumes from it silently (give ``-o`` for a resumable one);
    * otherwise nothing: the trajectory stays in memory (returns None).
    The returned run has ``path`` (working file), ``final`` (the result, None for a
    temporary file) and ``origin`` (fresh, resume, copy, temp: what ``_after_failure``
    may delete).  A stepper checkpoints unless it refuses (``checkpoint.refusal``: its
    declared ``checkpoint_refusal()`` or no ``checkpoint_sweep``, integrators/one_step.py);
    a refused run keeps its trajectory in memory: only ``all``, no --restart.  Finite
    differences and complex step do not use a file."""
    from .io.outputs import final_of, partial_of, same_file, temp_of
    restart, output = getattr(args, "restart", None), getattr(args, "output", None)
    sched = cfg.checkpoint.schedule
    from .checkpoint import refusal
    why = refusal(pr.stepper, cfg.simulation.integrator)
    if why:
        from .config import ConfigError
        if sched != "all":
            raise ConfigError(args.config, "checkpoint.schedule", f"schedule {sched!r}: {why} (use 'all')")
        if restart:
            raise InputError(args.config, "--restart", f"cannot restart: {why}")
        return None
    if method not in ("adjoint", "direct"):
        if restart:
            raise InputError(args.config, "--restart", f"--method {method} does not use a checkpoint file")
        return None
    if restart:
        final = final_of(restart)
        if output and not (same_file(output, final) or same_file(output, restart)
                           or os.path.abspath(output) == os.path.abspath(final)):
            raise InputError(args.config, "-o", f"with --restart the output is the restart file {final}; "
                             "omit -o or give the same file")
        path, origin = partial_of(final), _restart_source(args, final)
    elif output:
        _refuse_unfinished(args, output, "-o")
        path, final, origin = partial_of(output), output, "fresh"
    elif sched != "all":
        pid = _comm().bcast(os.getpid(), root=0)
        path, final, origin = temp_of(cfg.checkpoint.file, pid), None, "temp"
    else:
        return None
    try:
        run = pr.use_checkpoint(path, comm=_comm())
    except BaseException as e:
        if origin != "resume":               # nothing computed in it: the source is intact
            _remove_on_root(path)
        from .io.hdf5 import HDF5Error
        if origin == "copy" and isinstance(e, HDF5Error) and e.file == path:
            raise HDF5Error(final, e.key, e.message) from None      # name the user's file
        raise
    run.path, run.final, run.origin = path, final, origin
    k0 = run.resume_point()
    if origin == "temp":
        info(f"checkpoint {path}: temporary (schedule {sched}; removed at the end; -o OUT.h5 keeps a "
            "resumable OUT.h5.partial)")
    if not run.store.created:
        done = run.store.adjoint_marker[0] in (0, 1) or (k0 >= pr.nsteps and pr.adapt is None)
        info(f"checkpoint {path}: resuming ({'forward complete' if done else f'forward from step {k0}'}"
            f"{'' if run.store.adjoint_marker[1] < 0 else f', adjoint at step {run.store.adjoint_marker[1]}'})")
    return run


def _restart_source(args, final):
    """Rank 0: ``resume`` (``final.partial`` exists), or ``copy`` (the finished ``final``
    copied to ``final.partial``: the original stays as it is until the new result is
    complete); InputError for a missing file or one another process is writing."""
    import shutil
    from .io.outputs import in_use, partial_of
    part = partial_of(final)

    def look():
        for f in (part, final):
            if os.path.exists(f) and in_use(f):
                raise InputError(args.config, "--restart", f"{f} is locked: in use by another process "
                                 "(a parmbs run still writing it?)")
        if os.path.exists(part):
            return "resume"
        if os.path.isfile(final):
            shutil.copyfile(final, part)
            return "copy"
        raise InputError(args.config, "--restart", f"{args.restart}: no such file")
    origin = _on_root(look, args.config, "--restart")
    return _comm().bcast(origin, root=0) if _comm().size > 1 else origin


def _refuse_unfinished(args, output, option):
    """A fresh ``-o OUT.h5`` never throws away the unfinished run in ``OUT.h5.partial``
    (killed, or stopped by an I/O error): continue it with --restart, or delete it."""
    from .io.outputs import in_use, partial_of
    part = partial_of(output)

    def look():
        if os.path.exists(part):
            if in_use(part):
                raise InputError(args.config, option, f"{part} is locked: in use by another process (is another "
                                 f"parmbs run writing {output}?)")
            raise InputError(args.config, option, f"{part} holds an unfinished run (killed, or stopped by an "
                             f"I/O error): continue it with --restart {output}, or delete it")
    _on_root(look, args.config, option)


def _remove_on_root(path):
    """Rank 0 removes ``path`` if it exists (not collective: safe on any exit path)."""
    from .io.outputs import remove_quietly
    if _rank() == 0:
        try:
            remove_quietly(path)
        except OSError:
            pass


def _after_failure(ck, e):
    """The working file of a checkpointed run that failed (the store is closed):
    a temporary file or a copy made for --restart is removed (the source is intact);
    a fresh run's ``OUT.h5.partial`` is removed when the computation itself failed
    (exit 1: resuming would fail the same way) and kept after an I/O error (exit 2:
    resumable once the disk is fixed); a resumed one is always kept."""
    if ck is None or ck.origin == "resume" or not isinstance(e, Exception):
        return
    code = _failure_line(e, None)[0]
    if ck.origin in ("temp", "copy") or (ck.origin == "fresh" and code == 1):
        _remove_on_root(ck.path)


class _committed:
    """``with _committed(outs, ck):`` around a command's work: at the end of the block
    the checkpoint file (if any) joins the outputs and all of them are renamed from
    their working names (``outs.commit()``, io/outputs.py); if the block or the commit
    fails, the working files are removed and the checkpoint file handled by
    ``_after_failure`` — except after a simulated kill (tests), which must leave the
    files as a crash would."""

    def __init__(self, outs, ck):
        self.outs, self.ck = outs, ck

    def __enter__(self):
        return self.outs

    def __exit__(self, et, e, tb):
        if et is not None:
            self._failed(e)
            return False
        try:
            if self.ck is not None:
                self.outs.add(self.ck.path, self.ck.final)
            self.outs.commit()
        except BaseException as failure:
            self._failed(failure)
            raise
        return False

    def _failed(self, e):
        if not _is_kill(e):
            self.outs.discard()
            _after_failure(self.ck, e)


def _is_kill(e):
    from .checkpoint import SimulatedKill
    return isinstance(e, SimulatedKill)


def _check_outputs(args, outputs=None, inputs=()):
    """Exit 2 (one line naming the option and file) for an output path that is an input
    (the config, the --restart file unless the output is the restarted result) or
    another output of the same run, or whose directory does not exist."""
    from .io.outputs import Clash, check_distinct, final_of, partial_of
    if outputs is None:
        o = getattr(args, "output", None)
        outputs = [("-o", o, "the -o output"), ("-o", o and partial_of(o), "the -o output's working file"),
                   ("--json", getattr(args, "json", None), "the --json output"),
                   ("--plot", getattr(args, "plot", None), "the --plot output")]
    inputs = [("CONFIG", getattr(args, "config", None), "the config file"), *inputs]
    restart = getattr(args, "restart", None)
    if restart:
        fin = final_of(restart)
        inputs += [("--restart", f, "the --restart file") for f in (restart, fin, partial_of(fin))]
        outputs = [(opt, p, w) for opt, p, w in outputs       # the restarted result itself: in place
                   if not (opt in ("-o", "--restart") and p in (restart, fin, partial_of(fin)))]
        outputs = [(opt, p, w) for opt, p, w in outputs
                   if not (opt == "-o" and p is not None and os.path.abspath(final_of(p)) == os.path.abspath(fin))]

    def check():
        try:
            check_distinct(outputs, inputs)
        except Clash as e:
            raise InputError(getattr(args, "config", None) or getattr(args, "file", None), e.option,
                             e.message) from None
    _on_root(check, getattr(args, "config", None), "output")


def _forward(pr, cfg, tracker, writer=None, label="forward"):
    sweep = _Sweep(cfg, label)
    tracker.phase = "forward run"
    t0 = time.perf_counter()
    try:
        with sweep:
            traj = pr.forward(progress=sweep, on_step=_chain(tracker.on_step, writer))
    except BaseException as exc:
        if writer is not None:
            if isinstance(exc, Exception):      # the close below is collective: agree first
                _agree(exc, _failure_line(exc, cfg.source)[1])
            try:
                writer.close()          # keep the valid rows; a write error is secondary here
            except Exception:  # noqa: BLE001
                pass
        raise
    if writer is not None:
        writer.close()
    its = np.asarray(traj.newton_its)
    if its.size:
        detail(f"{label}: Newton iterations per step: mean {its.mean():.2f}, max {int(its.max())} "
               f"on {int(np.count_nonzero(its == its.max()))} steps, total {int(its.sum())}")
    return traj, time.perf_counter() - t0


def _report_steps(traj, sim):
    """One line on an adaptive run's accepted steps (integrators/timeloop.py)."""
    g = getattr(traj, "grid", None)
    if sim.adapt is None or g is None or not g.steps:
        return
    floor = getattr(g, "floor_hits", 0)
    rej = getattr(traj, "rejected", 0)             # None: the run was read back complete from a file
    info(f"adaptive steps (rtol {sim.adapt.rtol:g}, atol {sim.adapt.atol:g}): {g.steps} accepted, "
         + (f"{rej} rejected, " if rej is not None else "")
         + f"h in [{g.h.min():.3g}, {g.h.max():.3g}] s"
         + (f"; on {floor} steps the noise of Newton's last update (round-off or simulation.newton), "
            "not the tolerance, set an error weight (a looser atol or stabilization = \"ggl\")" if floor else ""))


def _writer(path, cfg, pr):
    from .io.hdf5 import TrajectoryWriter
    return TrajectoryWriter(path, cfg, pr.sys, pr.nsteps, comm=_comm())


def _fmt(x):
    return f"{x: .10e}"


# ----------------------------------------------------------------------------- commands


def cmd_info(args):
    cfg = _load(args)
    pr = _problem(cfg, args)
    sys_, sim = pr.sys, cfg.simulation
    d = sys_.describe()
    rho = pr.design.values(sys_.p)
    out(f"model         {cfg.model.name}  ({args.config}, sha256 {cfg.text_sha256[:16]})")
    out(f"bodies        {d['bodies']} rigid" + (f": {', '.join(sys_.body_names)}" if d['bodies'] else ""))
    for kind, part in (("beams", sys_.beams), ("plates", sys_.plates), ("continua", sys_.continua)):
        if len(part):
            items = getattr(part, kind).values()
            out(f"{kind:<13} {len(part)}: " + ", ".join(f"{b.name} ({b.nel} elements, {b.ncoord} coordinates)"
                                                      for b in items))
    if len(sys_.ffr):
        out(f"{'FFR beams':<13} {len(sys_.ffr)}: " + ", ".join(f"{b.name} ({b.nel} elements, {b.ncoord} coordinates: "
                                                              "frame x, y, angle; nodal u, v, phi)"
                                                              for b in sys_.ffr.beams.values()))
    nsp = len(getattr(sys_, "spatial", ()))
    if nsp:                                 # spatial rigid bodies (parmbs/spatial)
        out(f"{'spatial':<13} {nsp} bodies: {', '.join(sys_.spatial.bodies)}; {len(cfg.spatial.joints)} joints: "
            + (", ".join(f"{j.name} ({j.type})" for j in cfg.spatial.joints) or "none")
            + "; independent: " + (", ".join(drv.names[0] for key, drv, _ in sys_.independent
                                             if key.startswith("spatial.") and not key.startswith("spatial.solids."))
                                   or "none"))
    sb, nb = getattr(sys_, "spatial_beams", ()), getattr(sys_, "natural", ())
    if len(sb) or len(nb):                  # spatial ANCF beams, natural-coordinate bodies
        out(f"{'spatial flex':<13} " + "; ".join(
            [f"beam {b.name} ({b.nel} elements, {b.section}, {b.ncoord} coordinates)" for b in sb.beams.values()]
            + [f"natural body {n} (12 coordinates: x, y, z, e1, e2, e3)" for n in nb.bodies])
            + f"; {len(cfg.spatial.joints)} spatial joints: "
            + (", ".join(f"{j.name} ({j.type})" for j in cfg.spatial.joints) or "none")
            + "; independent: " + (", ".join(drv.names[0] for key, drv, _ in sys_.independent
                                             if key.endswith(".independent") and key.startswith("spatial."))
                                   or "none"))
    so = getattr(sys_, "solids", ())
    if len(so):                             # hexahedral floating-frame solids (flexible/solids.py)
        out(f"{'solids':<13} {len(so)}: " + ", ".join(
            f"{b.name} ({b.nel} hexahedra, {b.ncoord} coordinates: frame x, y, z, e0..e3; "
            + (f"u_x, u_y, u_z of {b.nfree} free nodes)" if b.reduction is None
               else f"{b.nelastic} modal coordinates of {b.nfree} free nodes)") for b in so.solids.values()))
    nrigid = 3 * d['bodies']
    nodal = d['coordinates'] - nrigid - 7 * nsp - 12 * len(nb)
    out(f"coordinates   {d['coordinates']}  ({nrigid} rigid: x, y, angle of each centre of mass"
        + (f"; {7 * nsp} spatial: x, y, z, e0..e3 of each" if nsp else "")
        + (f"; {12 * len(nb)} natural: x, y, z, e1, e2, e3 of each" if len(nb) else "")
        + (f"; {nodal} nodal" if nodal > 0 else "") + ")")
    out(f"constraints   {d['constraints']}  ({len(cfg.joints)} joints: "
        f"{', '.join(f'{j.name} ({j.type})' for j in cfg.joints) or 'none'})")
    out(f"DOF           {d['dof']}  (independent coordinates: "
        f"{', '.join(f'{b.name}.{k}' for b in cfg.bodies for k in b.independent) or 'none'})")
    out(f"parameters    {d['parameters']}")
    out(f"components    {', '.join(f'{k} {v}' for k, v in d['components'].items())}")
    out(f"design        {len(pr.design)}" + (":" if len(pr.design) else ""))
    for entry, sl in pr.design.fields.items():
        if pr.design.is_field(entry):       # an element field: one line, not one per element
            r = rho[sl]
            out(f"  {entry:<12} field of {len(r)} entries in [{r.min():.6g}, {r.max():.6g}], "
                f"mean {r.mean():.6g}   {pr.design.paths[sl.start].rsplit('[', 1)[0]}")
        else:
            out(f"  {entry:<12} = {rho[sl.start]:<14.8g} {pr.design.paths[sl.start]}")
    for dd in cfg.design:                   # linked parameters (config/links.py)
        for dr in dd.drives:
            out(f"    drives {dr.path} = {dr.expression}  ({cfg.resolve_path(dr.path):.8g})")
    out(f"objectives    {len(cfg.objectives)}" + (":" if cfg.objectives else ""))
    for o in cfg.objectives:
        what = " ".join(str(x) for x in (o.integrand and f"∫ {o.integrand}", o.terminal and f"terminal {o.terminal}",
                                         o.point or o.body or o.force or o.joint) if x)
        out(f"  {o.name:<12} {what}")
    out(f"formulation   {sim.formulation} / {sim.integrator}" + (" (GGL-stabilized)" if sim.stabilization == "ggl" else "")
        + (f" ({sim.genalpha_form} form)" if sim.genalpha_form != "chung-hulbert" else ""))
    out(f"dt            {sim.dt:g} s, t_end {sim.t_end:g} s, {pr.nsteps} steps")
    out(f"sensitivity   {cfg.sensitivity.method}")
    out(f"MPI ranks     {_comm().size}")
    return 0


def cmd_simulate(args):
    """Forward run; every output is written under a working name and renamed at the end
    (io/outputs.py): a failed or killed run leaves any earlier file untouched."""
    from .io.outputs import Outputs
    cfg = _load(args)
    _check_outputs(args)
    pr = _problem(cfg, args)
    if args.plot and _sched_kind(cfg) != "all":
        raise InputError(args.config, "--plot", f"checkpoint.schedule {cfg.checkpoint.schedule!r} keeps only "
                         "checkpoints, not the trajectory to plot (use 'all')")
    tracker = _Tracker()
    outs = Outputs(_comm())
    ck = _checkpoint_run(pr, cfg, args)
    with _committed(outs, ck):
        writer = None
        if ck is not None:
            with _closing(ck, args.config):
                traj, wall = _forward(pr, cfg, tracker)
                if args.plot:
                    traj = traj.full()
        else:
            writer = _writer(outs.temp(args.output), cfg, pr) if args.output else None
            traj, wall = _forward(pr, cfg, tracker, writer)
        sim = cfg.simulation
        its = np.asarray(traj.newton_its)
        vals = pr.objective_values(traj)
        info(f"{cfg.model.name}: {sim.formulation}/{sim.integrator}{'+ggl' if sim.stabilization == 'ggl' else ''}"
             f"{'+' + sim.genalpha_form if sim.genalpha_form != 'chung-hulbert' else ''}, "
             f"dt = {sim.dt:g} s, "
             f"{traj.steps} steps to t = {traj.t[-1]:g} s in {wall:.3g} s "
             f"({traj.steps / max(wall, 1e-12):.0f} steps/s, ranks {_comm().size})")
        if its.size:
            info(f"Newton iterations per step: mean {its.mean():.2f}, max {int(its.max())}")
        _report_steps(traj, sim)
        for name, v in vals.items():
            out(f"  {name:<12} = {v:.12e}")
        if args.plot:
            from .io.plot import plot_trajectory
            png = outs.temp(args.plot)
            _on_root(lambda: plot_trajectory(pr.sys, traj.t, traj.q, traj.v, png), args.plot, "--plot")
    if ck is not None and ck.final is not None:
        out(f"wrote {ck.final} (checkpoint schedule {ck.sched.text}, {ck.store.writes} states written)")
    elif ck is not None:
        info(f"removed the temporary checkpoint {ck.path} ({ck.store.writes} states written)")
    if writer is not None:
        out(f"wrote {args.output} (valid_steps {writer.valid_steps})")
    if args.plot:
        out(f"wrote {args.plot}")
    return 0


def _sched_kind(cfg):
    from .checkpoint import parse_schedule
    try:
        return parse_schedule(cfg.checkpoint.schedule).kind
    except Exception:  # noqa: BLE001 - validated with the config; the run reports it
        return None


def _gradient(pr, cfg, method, tracker, on_step=None):
    tracker.phase = f"{method} gradient"
    with _Sweep(cfg, method, "step" if method in ("adjoint", "direct") else "column") as pg:
        if method in ("adjoint", "direct"):
            grads = (pr.adjoint if method == "adjoint" else pr.direct)(progress=pg, on_step=on_step)
            cs = getattr(pr.stepper, "compiled", None)        # compiled sensitivity steps: once per process
            if getattr(cs, "sens_note", None):
                info(cs.sens_note)
                cs.sens_note = None
            return grads
        if method == "fd":
            return pr.finite_differences(cfg.sensitivity.fd_step, progress=pg)
        if method == "cs":
            from .sensitivity.complex_step import complex_step_gradient
            grads = complex_step_gradient(pr, progress=pg)
    if method == "cs":
        pr.forward()                  # leave the problem at the nominal (real) design
        return grads
    raise AssertionError(method)


def _check_finite(values, grads, method):
    """A non-finite objective or gradient is a failed computation (exit 1), not a result:
    a NaN that appeared on one rank during the adjoint sweep reached every rank's
    gradient through the collective solves and was printed with exit 0.  The flag is
    reduced over the ranks, so all of them leave together."""
    bad = [o for o in grads if not (np.isfinite(values[o]) and np.all(np.isfinite(grads[o])))]
    if _comm().allreduce(1 if bad else 0) > 0:
        what = f"objective {bad[0]!r}" if bad else "on another rank"
        raise ComputationError(f"non-finite value or {method} gradient ({what})")


def _check_method(method, file):
    if method not in METHODS:
        raise InputError(file, "--method", f"unknown method {method!r} (choose {', '.join(METHODS)})")


def _check_cs(method, cfg, file):
    """Complex step runs our own steppers in complex arithmetic; PETSc TS is real."""
    ts = cfg.simulation.integrator.startswith("ts-") or cfg.simulation.integrator == "dopri5"
    if method == "cs" and (ts or cfg.simulation.formulation not in ("index3", "index1", "maggi", "kinematic")):
        why = (f"'{cfg.simulation.integrator}' runs in real-valued PETSc TS or compiled code" if ts
               else f"formulation '{cfg.simulation.formulation}' takes its own derivatives by complex step")
        raise InputError(file, "--method", f"complex step needs an index3 integrator (or index1, maggi); "
                         f"{why} (use --method fd)")


# -- batch-parallel gradients (parallel.groups / --groups, [[scenarios]]) ------------------


def _batched(args, cfg):
    """Whether ``gradient`` runs through the batch driver: G > 1 groups or scenarios."""
    if args.groups is not None and args.groups < 1:
        raise InputError(args.config, "--groups", f"need at least 1 group, got {args.groups}")
    return (args.groups or cfg.parallel.groups) != 1 or bool(cfg.scenarios)


def _auto_batches(args, cfg, system, method):
    """Groups for a gradient of a model too small to distribute (parallel.replicate_small)
    on several ranks when nobody asked for a layout: one batch-parallel group per rank if
    there are at least as many work units (objectives for the adjoint, design columns for
    direct/FD; times the load cases with [[scenarios]]) as ranks; None (replicated serial)
    otherwise, and without scenarios with -o (batches write /gradient only, not the
    trajectory), --restart, a checkpoint schedule or complex step (a scenario run is
    batched anyway: parmbs/sensitivity/batch.py, which replicates a small model in a
    group of several ranks)."""
    from . import parallel
    size = _comm().size
    plain = not cfg.scenarios
    if (size == 1 or args.groups is not None or "groups" in cfg.parallel.model_fields_set
            or method not in ("adjoint", "direct", "fd")
            or (plain and (args.output or getattr(args, "restart", None) or cfg.checkpoint.schedule != "all"))):
        return None
    if system is None:
        from .model.system import System
        system = System(cfg)
    if parallel.replicate_small(system.n + system.m, cfg.parallel.distribute)[0] is None:
        return None
    if method == "adjoint":
        units, what = len(cfg.objectives), "objectives"
    else:
        from .sensitivity.design import DesignSpace
        units, what = DesignSpace(system, cfg.design).ncols, "design columns"
    if not plain:
        S = len(cfg.scenarios)
        units, what = units * S, f"(load case, {what[:-1]}) pairs ({S} [[scenarios]] × {units} {what})"
    if units < size:
        return None
    info(parallel.auto_batch_note(units, what, size))
    return size


def _batch_steps(res):
    """The JSON ``steps`` of a batched gradient: the forward runs' time steps (adaptive:
    the accepted ones, not t_end/dt); with scenarios of different step counts none is
    the run's, so null (each scenario's own ``steps`` is beside it)."""
    counts = set(res.steps.values())
    return counts.pop() if len(counts) == 1 else None


def _cmd_gradient_batches(args, cfg, groups=None):
    """``parmbs gradient`` with the work split over groups (parmbs/sensitivity/batch.py).

    Same JSON as the single-group path plus ``groups`` and, with ``[[scenarios]]``,
    ``scenarios`` (per scenario × objective); ``objectives`` then holds the weighted
    sums over scenarios.  ``-o`` writes only /gradient (the trajectories stay in the
    groups).  A failed batch: exit 1 on every rank, naming batch, scenario and step.
    """
    from . import parallel
    from .io.outputs import Outputs
    from .sensitivity.batch import batch_gradient
    from .sensitivity.scenarios import resolve_scenarios
    groups = groups or args.groups or cfg.parallel.groups
    key = "--groups" if args.groups else "parallel.groups"
    if getattr(args, "restart", None):
        raise InputError(args.config, "--restart", "restart is not supported with parallel groups or "
                         "[[scenarios]] (the batches are short; rerun them)")
    method = args.method or cfg.sensitivity.method
    _check_method(method, args.config)
    if method == "cs":
        raise InputError(args.config, "--method", "complex step is not split into batches; "
                         "use --groups 1 without [[scenarios]], or --method fd")
    scenarios = resolve_scenarios(cfg)             # ConfigError: exit 2 on every rank alike
    try:
        layout = parallel.make_layout(groups)
    except parallel.LayoutError as e:
        raise InputError(args.config, key, str(e)) from None
    if layout.group.size > 1:       # a small model is replicated within each group (batch.task_comm)
        from .model.system import System
        sys_ = System(cfg)
        note = parallel.replicate_small(sys_.n + sys_.m, cfg.parallel.distribute, world=layout.group)[1]
        if note:
            info(note.replace("each of the", "in each group, each of its" if layout.groups > 1 else "each of the"))
    try:
        try:
            res = batch_gradient(cfg, method, layout, scenarios=scenarios)
        except parallel.GroupFailure as e:
            err(f"parmbs: error: {args.config}: computation failed: {e}")
            return e.code
        sim = cfg.simulation

        def block(vals, grads, output):
            # scalars by name; an element field as {"size", "norm", "hdf5"} (DESIGN.md)
            return {o: {"value": float(vals[o]), "gradient": _design_json(res.space, grads[o], output, o)}
                    for o in res.objectives}
        doc = {
            "parmbs": __version__, "config": args.config, "config_sha256": cfg.text_sha256,
            "method": method, "formulation": sim.formulation, "integrator": sim.integrator,
            "dt": sim.dt, "steps": _batch_steps(res), "ranks": _comm().size,
            "groups": layout.groups,
            "design": _design_json(res.space, res.rho, args.output, None),
            "objectives": block(res.total_values, res.total_gradients, args.output),
            "timing": {k: round(res.timing[k], 6) for k in ("forward_s", "gradient_s")},
        }
        if cfg.scenarios:
            doc["scenarios"] = {sc.name: {"weight": sc.weight, "steps": res.steps[sc.name],
                                          "objectives": block(res.values[sc.name], res.gradients[sc.name], None)}
                                for sc in res.scenarios}
        mode = layout.mode if not res.replicated else (
            "replicated" if layout.groups == 1 else f"{layout.mode}, replicated within groups")
        info(f"{cfg.model.name}: {method} gradient, {mode}, {layout.groups} group(s) on "
            f"{_comm().size} rank(s), {len(res.scenarios)} scenario(s), plan '{res.plan.strategy}' "
            f"({', '.join(str(sum(len(t.units) for t in b)) for b in res.plan.batches)} units per batch); "
            f"forward {res.timing['forward_s']:.3g} s, gradient {res.timing['gradient_s']:.3g} s (slowest group)")
        if cfg.scenarios:
            for sc in res.scenarios:
                for o in res.objectives:
                    out(f"[{sc.name}] {o} = {res.values[sc.name][o]:.12e}")
        outs = Outputs(_comm())
        try:
            _report_gradient(doc, args, " (weighted sum over scenarios)" if cfg.scenarios else "", outs=outs)
            if args.output:
                from .io.hdf5 import write_gradient
                sp = res.space
                write_gradient(outs.temp(args.output), res.total_gradients, res.design, config=cfg,
                               values=res.total_values, comm=_comm(),
                               fields={n: sl for n, sl in sp.fields.items() if sp.is_field(n)}, design=res.rho)
            outs.commit()
        except BaseException:
            outs.discard()
            raise
        if args.json:
            out(f"wrote {args.json}")
        if args.output:
            out(f"wrote {args.output} (/gradient)")
        res.destroy()
        return 0
    finally:
        layout.free()


def cmd_gradient(args):
    """Objective values and gradients; -o / --json written under working names and
    renamed once everything is done (io/outputs.py)."""
    from .io.outputs import Outputs
    cfg = _load(args)
    _check_outputs(args)
    _require_objectives(cfg, args)
    method = args.method or cfg.sensitivity.method
    _check_history(args, cfg, method)
    if _batched(args, cfg):
        _no_restart(args)
        return _cmd_gradient_batches(args, cfg, _auto_batches(args, cfg, None, method) if cfg.scenarios else None)
    _check_method(method, args.config)
    _check_cs(method, cfg, args.config)
    system = _system(cfg, args)
    groups = _auto_batches(args, cfg, system, method)
    if groups is not None:
        return _cmd_gradient_batches(args, cfg, groups)
    pr = _problem(cfg, args, system)
    if args.history and "forward" in pr.stepper.whole_runs:
        raise InputError(args.config, "--history", f"integrator {cfg.simulation.integrator!r} (PETSc TS) runs "
                         "its own sensitivity sweeps; --history needs trapezoidal, genalpha, newmark or variational")
    tracker = _Tracker()
    outs = Outputs(_comm())
    ck = _checkpoint_run(pr, cfg, args, method)
    with _committed(outs, ck):
        h5 = outs.temp(args.output) if args.output and ck is None else None   # where /gradient goes now
        writer = _writer(h5, cfg, pr) if h5 else None
        with _closing(ck, args.config):
            traj, t_fwd = _forward(pr, cfg, tracker, writer)
            values = pr.objective_values(traj)
            t0 = time.perf_counter()
            hist = None
            if args.history:
                from .sensitivity.history import History
                hist = History(pr, method)
            grads = _gradient(pr, cfg, method, tracker, on_step=hist)
            t_grad = time.perf_counter() - t0
        _check_finite(values, grads, method)
        final = args.output
        if ck is not None:
            h5, final = (ck.path if ck.final else None), ck.final
        names = list(pr.design.names)
        rho = pr.design.values(pr.sys.p)
        sim = cfg.simulation
        doc = {
            "parmbs": __version__,
            "config": args.config,
            "config_sha256": cfg.text_sha256,
            "method": method,
            "formulation": sim.formulation,
            "integrator": sim.integrator,
            "dt": sim.dt,
            "steps": traj.steps,            # (an adaptive run's accepted steps)
            "ranks": _comm().size,
            "design": _design_json(pr.design, rho, final, None),
            "objectives": {o: {"value": float(values[o]),
                               "gradient": _design_json(pr.design, np.asarray(grads[o]), final, o)}
                           for o in grads},
            "timing": {"forward_s": round(t_fwd, 6), "gradient_s": round(t_grad, 6)},
        }
        info(f"{cfg.model.name}: {method} gradient, {traj.steps} steps, forward {t_fwd:.3g} s, "
             f"gradient {t_grad:.3g} s, ranks {_comm().size}")
        _report_gradient(doc, args, outs=outs)
        if h5 is not None:
            from .io.hdf5 import write_gradient
            write_gradient(h5, grads, names, config=cfg, values=values, comm=_comm(),
                           fields={n: sl for n, sl in pr.design.fields.items() if pr.design.is_field(n)},
                           design=rho)
            if hist is not None:
                from .sensitivity.history import write_history
                write_history(h5, hist.finish(grads), comm=_comm())
        if args.plot:
            from .io.history_plot import history_dict, plot_histories
            from .io.plot import units
            png, hd = outs.temp(args.plot), history_dict(hist)
            _on_root(lambda: plot_histories([(hd, o) for o in hd["objectives"]], png,
                                            f"{cfg.model.name}: {method} sensitivity history",
                                            units(cfg)["time"]), args.plot, "--plot")
    if args.json:
        out(f"wrote {args.json}")
    if final is not None:
        out(f"wrote {final} (/trajectory, /gradient{', /sensitivity/history' if args.history else ''})")
    if args.plot:
        out(f"wrote {args.plot}")
    if ck is not None and ck.final is None:       # a -o run's checkpoint became the result
        info(f"removed the temporary checkpoint {ck.path}")
    return 0


def _check_history(args, cfg, method):
    """``--history`` (and its ``--plot``): direct or adjoint, one group, into the -o file."""
    if args.plot and not args.history:
        raise InputError(args.config, "--plot", "gradient --plot draws the sensitivity history: add --history")
    if not args.history:
        return
    if method not in ("adjoint", "direct"):
        raise InputError(args.config, "--history", f"a sensitivity history needs --method adjoint or direct, "
                         f"not {method!r}")
    if not args.output:
        raise InputError(args.config, "--history", "the history is written to /sensitivity/history of the "
                         "-o file: give -o OUT.h5")
    if _batched(args, cfg):
        raise InputError(args.config, "--history", "not with parallel groups or [[scenarios]] (one sweep "
                         "records one history): use --groups 1")


def _report_gradient(doc, args, note="", outs=None):
    """Print the gradients of a DESIGN.md gradient document; write it to --json under a
    working name registered in ``outs`` (renamed by ``outs.commit()``)."""
    for o, od in doc["objectives"].items():
        out(f"{o} = {od['value']:.12e}{note}")
        for n, g in od["gradient"].items():
            txt = f"{g: .12e}" if not isinstance(g, dict) else f"field of {g['size']}, norm {g['norm']:.6e}"
            out(f"  d{o}/d{n:<10} = {txt}")
    if args.json:
        tmp = outs.temp(args.json)

        def write_json():
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(doc, fh, indent=2)
                fh.write("\n")
        _on_root(write_json, args.json, "--json")


def _design_json(design, vec, output, objective):
    """Design values or one gradient by entry name (DESIGN.md): scalars as numbers, an
    element field as {"size", "norm", "hdf5"} (its values are in the -o file)."""
    doc = {}
    for name, sl in design.fields.items():
        if design.is_field(name):
            part = np.asarray(vec[sl], float)
            where = f"/gradient/{objective}/{name}" if objective else f"/design/{name}"
            doc[name] = {"size": int(part.size), "norm": float(np.linalg.norm(part)),
                         "hdf5": f"{output}:{where}" if output else None}
        else:
            doc[name] = float(vec[sl.start])
    return doc


def cmd_verify(args):
    """Adjoint vs direct (round-off bound measured), complex step and an FD step sweep
    as references, and a Taylor test; the logic and its estimates: sensitivity/verify.py."""
    from .sensitivity import verify as V
    cfg = _load(args)
    _require_objectives(cfg, args)
    if cfg.scenarios:      # say so: verify checks one model, not the weighted sum over load cases
        info(f"verify: checks the base config only; its {len(cfg.scenarios)} [[scenarios]] (load cases) are not "
             "run (each case's overrides can be given with --set to verify that case)")
    pr = _problem(cfg, args)
    tracker = _Tracker()
    traj, t_fwd = _forward(pr, cfg, tracker)
    values = pr.objective_values(traj)
    p0 = pr.sys.p.copy()
    timing = {}

    def timed(label, fn, unit="step"):
        tracker.phase = label
        with _Sweep(cfg, label, unit) as pg:        # progress and, with -v, one timing line
            res = fn(pg)
        timing[label] = pg.wall
        return res
    adj = timed("adjoint", lambda pg: pr.adjoint(progress=pg))
    dirg = timed("direct", lambda pg: pr.direct(progress=pg))
    _check_finite(values, adj, "adjoint")
    _check_finite(values, dirg, "direct")
    sigma = timed("round-off", lambda pg: V.roundoff_sigma(pr, adj, dirg))
    cs, cs_why = timed("complex step", lambda pg: V.complex_step_reference(pr, p0, progress=pg), "column")
    if cs is None:
        timing.pop("complex step")
    ncol = len(pr.design.values(p0))
    sweeps = timed("fd sweep", lambda pg: V.fd_sweep(pr, p0, progress=lambda j, sw: pg(j + 1, ncol)), "column")
    names = list(pr.design.names)
    info(f"{cfg.model.name}: verify, {pr.nsteps} steps, dt = {cfg.simulation.dt:g}; forward {t_fwd:.3g} s, "
        + ", ".join(f"{k} {v:.3g} s" for k, v in timing.items()))
    if sigma is not None:
        info(f"bound(adj,dir) = {V.ROUNDOFF_FACTOR:g}·√2·σ + {V.ROUNDOFF_FLOOR:g}·ε·‖g‖∞, σ: RMS change under one "
            f"rounding per step and LU backward error per solve ({V.ROUNDOFF_TRIALS} seeded trials)")
    else:
        info(f"bound(adj,dir) = {V.FIXED_REL:g}·max(|g_j|, {V.FIXED_REL:g}·‖g‖∞) "
            "(not measured: PETSc TS runs the sweeps)")
    info(f"bound(cs) = √(newton.rtol)·‖g‖∞ + {V.CS_ULP:g}·√N·bound(adj,dir)"
        + (f"  [complex step not available: {cs_why}]" if cs is None else ""))
    info(f"fd: central differences at h = s·10^-2 … s·10^-7 (s = |rho|, or 1); the plateau step (least change δ "
        f"to its neighbours) is used; bound(fd) = {V.FD_FACTOR:g}·δ + {V.FD_NOISE_FACTOR:g}·σ_ψ/2h "
        "+ √(newton.rtol)·‖g‖∞ + bound(adj,dir), σ_ψ: RMS of psi's noise seen by the steps below the plateaus")
    checks = V.make_checks(pr, adj, dirg, sigma, cs, sweeps)
    for o in adj:
        info(f"\n{o} = {values[o]:.12e}")
        info(f"  {'design':<12} {'adjoint':>18} {'direct':>18} {'complex step':>18} {'fd (plateau)':>18} "
            f"{'|adj-dir|':>9} {'bound':>9}  verdict")
        for c in (c for c in checks if c.objective == o):
            cs_txt = f"{c.cs:>18.10e}" if c.cs is not None else f"{'n/a':>18}"
            fd_txt = f"{c.fd:>18.10e}" if c.fd is not None else f"{'n/a':>18}"
            info(f"  {c.name:<12} {c.adjoint:>18.10e} {c.direct:>18.10e} {cs_txt} {fd_txt} "
                f"{abs(c.adjoint - c.direct):>9.2e} {c.bound_ad:>9.2e}  {c.status}")
    info("\nworst ratio to its bound: "
        + ", ".join(f"{k} {r:.2g} ({w})" for k, (r, w) in V.worst_ratios(checks).items()))
    flagged = [c for c in checks if c.status != "ok"]
    info("\nfd plateau (rel. step h/s per objective; the step sweep is printed for flagged variables):")
    for j, n in enumerate(names):
        sw = sweeps[j]
        mine = [c for c in flagged if c.name == n]
        if not mine:
            hs = ", ".join(f"{c.objective} {c.fd_h / sw.scale:.0e}" if c.fd_h else f"{c.objective} none"
                           for c in checks if c.name == n)
            info(f"  {n:<12} {hs}")
            continue
        info(f"  {n:<12} step sweep (s = {sw.scale:.6g}); " + "; ".join(f"{c.objective}: {c.reason}" for c in mine))
        obs = [c.objective for c in mine]
        info(f"    {'rel. step':>10} " + " ".join(f"{o[:18]:>18}" for o in obs))
        for i, hstep in enumerate(sw.h):
            row = " ".join(f"{sw.est[o][i]:>18.10e}" if sw.est[o][i] is not None else f"{'run failed':>18}"
                           for o in obs)
            info(f"    {hstep / sw.scale:>10.0e} {row}")
        for hstep, msg in sw.failed[:1]:
            info(f"    (perturbed run at h = {hstep:.1e} failed: {msg})")

    # Taylor test along one seeded random direction, relative to each design value.
    tracker.phase = "Taylor test"
    eps = list(V.TAYLOR_EPS)
    r = V.taylor_remainders(pr, p0, values, adj, eps)
    info(f"\nTaylor test: r(eps) = |psi(rho + eps d) - psi(rho) - eps grad.d|, d seeded ({V.TAYLOR_SEED}), "
        f"|d_j| <= s_j; order = log2(r(eps)/r(eps/2)) [need >= {V.MIN_TAYLOR_ORDER}]")
    failures = [f"{c.objective}/{c.name}: {c.reason}" for c in checks if c.status == "FAILED"]
    for o in adj:
        orders, order = V.taylor_orders(eps, r[o], values[o], noise=V.psi_noise(sweeps, o))
        info(f"{o}:")
        info(f"  {'eps':>10} {'r(eps)':>12} {'order':>7}")
        for i, e in enumerate(eps):
            o_txt = f"{orders[i - 1]:7.3f}" if i > 0 else " " * 7
            r_txt = f"{r[o][i]:>12.4e}" if r[o][i] is not None else f"{'run failed':>12}"
            info(f"  {e:>10.3e} {r_txt} {o_txt}")
        if order is None:
            info("  observed order: n/a (remainder at noise level: psi is linear along d)")
        else:
            info(f"  observed order: {order:.3f}")
            bad = V.taylor_failure(o, order, values[o], sweeps)
            if bad:
                failures.append(bad)
    notes = [c for c in checks if c.status in ("fd-unreliable", "cs-disagrees")]
    if failures:
        info()
        out("verify: FAILED")
        for f in failures:
            out(f"  {f}")
        err(f"parmbs: error: {args.config}: verify: {len(failures)} disagreement(s); first: {failures[0]} "
            "(the tables above show each method and, for a flagged variable, its FD step sweep)")
        return 3
    for c in notes:
        out(f"note: {c.objective}/{c.name}: {c.reason}")
    by = [m for m, st in (("complex step", "cs-disagrees"), ("FD", "fd-unreliable"))
          if (m != "complex step" or cs is not None) and all(c.status != st for c in checks)]
    info()
    out(f"verify: OK (adjoint = direct within the round-off bound; confirmed by "
        f"{' and '.join(by) or 'complex step or FD per variable'}; Taylor order ~2)")
    return 0


def cmd_optimize(args):
    """TAO or MMA on the adjoint gradient; every evaluation on disk; resumable (parmbs/optimize).

    The record is built in ``REC.h5.partial`` and renamed onto REC.h5 when the run is
    done (optimize/driver.py); ``--restart REC.h5`` continues the partial record (or a
    copy of the finished one) with the ``--set`` overrides the record remembers."""
    from .io.outputs import final_of, replace_on_root, same_file
    if args.restart and args.output and not (same_file(args.output, final_of(args.restart))
                                             or os.path.abspath(args.output) == os.path.abspath(final_of(args.restart))):
        raise InputError(args.config, "-o", "give either -o OUT.h5 (new run) or --restart FILE.h5, not both")
    sets = list(args.set or [])
    if args.restart:                    # the record remembers the first run's --set overrides
        from .optimize.log import merge_sets, record_sets
        got = _on_root(lambda: record_sets(args.restart), args.restart, "--restart")
        if _comm().size > 1:
            got = _comm().bcast(got, root=0)
        sets = merge_sets(got or [], sets)
    from .config import load_config
    cfg = load_config(args.config, sets)
    from .optimize import Optimization, plot_history
    from .optimize.driver import _Signals
    path = final_of(args.restart) if args.restart else args.output or f"{cfg.model.name}-optimize.h5"
    png = os.path.splitext(path)[0] + ".png"
    from .io.outputs import partial_of
    _check_outputs(args, outputs=[("-o" if not args.restart else "--restart", path, "the optimization record"),
                                  ("-o", partial_of(path), "the record's working file"),
                                  ("plot", png, "the history plot")])
    with _Signals() as signals:         # from set-up to exit: a batch system's signal never kills us
        opt = Optimization(cfg, path, restart=bool(args.restart), out=out if VERBOSITY else _optimize_result,
                           signals=signals, sets=sets)
        if opt.parallel_note:
            info(opt.parallel_note)
        code, rho = opt.run()
        _on_root(lambda: replace_on_root(png, lambda tmp: plot_history(
            opt.history, tmp, f"{cfg.model.name}: {opt.objective}", columns=opt.hist_columns)), png, "plot")
        out(f"wrote {opt.record_path} (/optimize) and {png}")
    return code


def _optimize_result(line):
    """-q for optimize: only the result, i.e. the ``done:`` line and the final design
    below it (indented), and the ``stopped on SIGNAL`` line with its resume command;
    the header, per-iteration and ``resumed:`` lines (optimize/driver.py) are dropped."""
    if line.startswith(("done:", "stopped on ", "  ")):
        out(line)


def cmd_plot(args):
    from .io.outputs import replace_on_root
    outp = args.output or (os.path.splitext(args.file)[0] + ".png")
    _check_outputs(args, outputs=[("-o", outp, "the plot")], inputs=[("FILE", args.file, "the file to plot")])

    def run():
        from .io.plot import plot_any
        # a trajectory, or an optimization record (+ densities, each written by replacement)
        return replace_on_root(outp, lambda tmp: plot_any(args.file, tmp, outp))
    written = _on_root(run, args.file, "<file>")
    out(f"wrote {', '.join(written or [outp])}")
    return 0


def cmd_animate(args):
    """The mechanism of a trajectory file moving, as GIF (Pillow) or MP4 (ffmpeg);
    written under a working name and renamed (io/animate.py)."""
    from .io.animate import AnimateError, animate_file, writer_for
    from .io.outputs import replace_on_root
    if args.frames < 2 or args.fps < 1:
        raise InputError(args.file, "--frames" if args.frames < 2 else "--fps", "must be >= 2 frames and >= 1 fps")
    try:
        writer_for(args.output)
    except AnimateError as e:
        raise InputError(args.file, e.option, e.message) from None
    _check_outputs(args, outputs=[("-o", args.output, "the animation")],
                   inputs=[("FILE", args.file, "the file to animate")])

    def run():
        try:
            return replace_on_root(args.output, lambda tmp: animate_file(args.file, args.output, args.frames,
                                                                         args.fps, tmp))
        except AnimateError as e:
            raise InputError(args.file, e.option, e.message) from None
    frames = _on_root(run, args.file, "<file>")
    out(f"wrote {args.output} ({frames} frames)")
    return 0


def cmd_export(args):
    """An XDMF time series of a trajectory file for ParaView (io/xdmf.py): OUT.xdmf and
    its heavy data OUT.xdmf.h5, both written under working names and renamed."""
    from .io.outputs import Outputs
    from .io.xdmf import ExportError, export_xdmf, heavy_path
    if args.frames < 2:
        raise InputError(args.file, "--frames", "must be >= 2")
    heavy = heavy_path(args.xdmf)
    _check_outputs(args, outputs=[("--xdmf", args.xdmf, "the XDMF file"), ("--xdmf", heavy, "its HDF5 data")],
                   inputs=[("FILE", args.file, "the file to export")])
    outs = Outputs(_comm())
    tx, th = outs.temp(args.xdmf), outs.temp(heavy)

    def run():
        try:
            return export_xdmf(args.file, args.xdmf, args.frames, tx, th)
        except ExportError as e:
            raise InputError(args.file, e.option, e.message) from None
    try:
        frames, cells, points = _on_root(run, args.file, "<file>") or (0, 0, 0)   # (rank 0 prints)
        outs.commit()
    except BaseException:
        outs.discard()
        raise
    out(f"wrote {args.xdmf} and {heavy} ({frames} time steps, {cells} cells, {points} points)")
    return 0


def cmd_reduce(args):
    """The reduced body of every continuum with ``continua.NAME.reduction``, at the
    config's densities, to HDF5 (parmbs/flexible/modal_io.py): its body data and the
    basis its design derivatives are computed from — for ``reduction.load`` in later
    runs.  Written on rank 0 under a working name and renamed."""
    from .flexible.modal_io import write_bodies
    from .io.outputs import replace_on_root
    cfg = _load(args)
    _check_outputs(args, outputs=[("-o", args.output, "the reduced-body file")])
    sys_ = _system(cfg, args)
    reds = sys_.continua.reductions()
    if not reds:
        raise InputError(args.config, "continua", "no continuum has a reduction (continua.NAME.reduction)")
    names = _on_root(lambda: replace_on_root(args.output, lambda tmp: write_bodies(tmp, reds, sys_.p)),
                     args.output, "-o")
    out(f"wrote {args.output} (reduced bodies: {', '.join(names)})")
    return 0


# ----------------------------------------------------------------------------- parser / main


def build_parser():
    p = _Parser(prog="parmbs", description="Planar multibody dynamics with exact discrete "
                "sensitivities on PETSc.  Runs unchanged under mpirun.")
    p.add_argument("--version", action="store_true", help="print the parmbs and PETSc versions")
    _verbosity_flags(p, False)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    def add(name, help_):
        sp = sub.add_parser(name, help=help_, description=help_)
        _verbosity_flags(sp, argparse.SUPPRESS)     # also after the command: parmbs gradient CFG -q
        return sp

    def sets(sp):
        sp.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config key, e.g. --set simulation.dt=5e-4 (repeatable)")

    sp = add("info", "model summary: DOFs, constraints, parameters, design, objectives, ranks")
    sp.add_argument("config", metavar="CONFIG")
    sets(sp)

    sp = add("simulate", "run the forward simulation")
    sp.add_argument("config", metavar="CONFIG")
    sp.add_argument("-o", "--output", metavar="OUT.h5", help="write the trajectory to HDF5")
    sp.add_argument("--plot", metavar="OUT.png", help="write a PNG plot of the trajectory")
    sp.add_argument("--restart", metavar="FILE.h5", help="continue the checkpoint file FILE.h5 (forward or adjoint)")
    sets(sp)

    sp = add("gradient", "objective values and their gradients")
    sp.add_argument("config", metavar="CONFIG")
    sp.add_argument("--method", metavar="|".join(METHODS),
                    help="sensitivity method (default: the config's sensitivity.method)")
    sp.add_argument("--json", metavar="OUT.json", help="write the gradient JSON")
    sp.add_argument("-o", "--output", metavar="OUT.h5", help="write trajectory and /gradient to HDF5")
    sp.add_argument("--restart", metavar="FILE.h5", help="continue the checkpoint file FILE.h5 (forward or adjoint)")
    sp.add_argument("--groups", type=int, metavar="G",
                    help="parallel groups: split design variables (direct, fd) or objectives/scenarios "
                    "(adjoint) into G batches (default: the config's parallel.groups)")
    sp.add_argument("--history", action="store_true",
                    help="also write the sensitivity history to /sensitivity/history of the -o file: the "
                    "gradient accumulated over time (direct: from t0, with dq/dv/da per design variable; "
                    "adjoint: from t_end backwards)")
    sp.add_argument("--plot", metavar="OUT.png", help="with --history: a PNG of the history, one panel per "
                    "design variable and objective")
    sets(sp)

    sp = add("verify", "adjoint vs direct (measured round-off bound), complex step and an FD step sweep, "
             "and a Taylor test; exit 3 on disagreement")
    sp.add_argument("config", metavar="CONFIG")
    sets(sp)

    sp = add("optimize", "design optimization (TAO or MMA on the adjoint gradient; restartable)")
    sp.add_argument("config", metavar="CONFIG")
    sp.add_argument("-o", "--output", metavar="OUT.h5")
    sp.add_argument("--restart", metavar="FILE.h5")
    sets(sp)

    sp = add("reduce", "write the modally reduced bodies (continua.NAME.reduction) to HDF5 for "
             "continua.NAME.reduction.load: body data and the basis of their design derivatives")
    sp.add_argument("config", metavar="CONFIG")
    sp.add_argument("-o", "--output", metavar="OUT.h5", required=True)
    sets(sp)

    sp = add("plot", "PNG plot of a trajectory HDF5 file")
    sp.add_argument("file", metavar="FILE.h5")
    sp.add_argument("-o", "--output", metavar="OUT.png", help="default: FILE.png")

    sp = add("animate", "GIF or MP4 of the mechanism moving, from a trajectory HDF5 file (planar models)")
    sp.add_argument("file", metavar="FILE.h5")
    sp.add_argument("-o", "--output", metavar="OUT.gif|OUT.mp4", required=True,
                    help="the video; .gif (Pillow) or .mp4 (needs ffmpeg)")
    sp.add_argument("--frames", type=int, default=120, metavar="N", help="at most N frames (default 120)")
    sp.add_argument("--fps", type=int, default=20, help="frames per second (default 20)")

    sp = add("export", "XDMF time series of a trajectory HDF5 file for ParaView: bodies and their frames, "
             "springs, beam centre lines, meshes with density and gradient fields")
    sp.add_argument("file", metavar="FILE.h5")
    sp.add_argument("--xdmf", metavar="OUT.xdmf", required=True,
                    help="the XDMF file; its heavy data go to OUT.xdmf.h5 beside it")
    sp.add_argument("--frames", type=int, default=200, metavar="N",
                    help="at most N time steps, evenly spaced, first and last kept (default 200)")
    return p


def _verbosity_flags(parser, default):
    """-v/--verbose and -q/--quiet on ``parser``; the subcommands' default SUPPRESS
    keeps a flag given before the command (``parmbs -q gradient CFG``)."""
    parser.add_argument("-v", "--verbose", action="store_true", default=default,
                        help="also one stderr line per sweep (steps, time; Newton iterations of forward runs)")
    parser.add_argument("-q", "--quiet", action="store_true", default=default,
                        help="only errors and the result lines (values, gradients, verdict, files written); "
                        "no progress")


COMMANDS = {"info": cmd_info, "simulate": cmd_simulate, "gradient": cmd_gradient,
            "verify": cmd_verify, "optimize": cmd_optimize, "plot": cmd_plot, "animate": cmd_animate,
            "export": cmd_export, "reduce": cmd_reduce}


def main(argv=None) -> int:
    """Run the CLI; returns the exit code (never calls sys.exit)."""
    parser = build_parser()
    from ._petsc import split_petsc_args
    argv, petsc_args = split_petsc_args(sys.argv[1:] if argv is None else list(argv), _own_options(parser))
    try:
        args = parser.parse_args(argv)
        _set_verbosity(args)
        user = _start_petsc(petsc_args)
    except _Exit as e:
        return int(e.status or 0)
    except UsageError as e:
        err(f"parmbs: error: {e}")
        return 2
    code = _main(args)
    line = user.finish(report=code in (0, 3))
    if line:
        err(line)
    return code


def _set_verbosity(args):
    global VERBOSITY
    if args.verbose and args.quiet:
        raise UsageError("-v/--verbose and -q/--quiet exclude each other")
    VERBOSITY = 2 if args.verbose else 0 if args.quiet else 1


def _own_options(parser):
    """Every option string of ``parser`` and its subcommands (-o, -h, --set, ...)."""
    own = set()
    for a in parser._actions:
        own.update(a.option_strings)
        for sp in (getattr(a, "choices", None) or {}).values():
            if isinstance(sp, argparse.ArgumentParser):
                own |= _own_options(sp)
    return own


def _start_petsc(petsc_args):
    """Start PETSc with the command line's PETSc options (``-log_view``, ``-ksp_monitor``,
    ``-parmbs_ksp_type gmres``: parmbs/_petsc.py) and check them and PETSC_OPTIONS; an
    unprefixed solver option reaches every parmbs solver (parmbs/petsc_options.py).
    Returns the UserOptions (its ``finish`` names the options nothing read); a value
    PETSc rejects is a UsageError naming option and source."""
    from . import _petsc
    at_init = _petsc.set_command_line(petsc_args)
    env = os.environ.get("PETSC_OPTIONS", "")
    try:
        from .petsc_options import OptionError, UserOptions  # (PETSc starts here)
    except _petsc.StartError as e:
        who = _petsc.blame(str(e), [("PETSC_OPTIONS", env.split()), ("command line", petsc_args)])
        raise UsageError(f"{who[0]}: {who[1]}: PETSc rejects it: {e}" if who
                         else f"PETSc did not start with the given options: {e}") from None
    user = UserOptions(petsc_args, env)
    try:
        user.start(at_init)
    except OptionError as e:
        raise UsageError(str(e)) from None
    return user


def _main(args) -> int:
    if args.version:
        from ._petsc import PETSC_VERSION
        out(f"parmbs {__version__} (PETSc {'.'.join(str(x) for x in PETSC_VERSION)})")
        return 0
    if not args.command:
        err("parmbs: error: a command is required (info, simulate, gradient, verify, optimize, plot, "
            "animate, export; "
            "see 'parmbs --help')")
        return 2
    _default_sigpipe()
    return run(args)


def _default_sigpipe():
    """`parmbs info CONFIG | head` should end quietly: PETSc's signal handler turns
    SIGPIPE into an MPI_Abort with a page of errors, so restore the Unix default once
    PETSc is initialised (main() only: library users keep their own handlers)."""
    import signal
    from ._petsc import PETSc  # noqa: F401  (initialises PETSc and its handlers first)
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)


def run(args) -> int:
    from .config import ConfigError
    from .integrators.newmark import StepError
    from .io.hdf5 import HDF5Error
    from .model.system import ModelError
    file = getattr(args, "config", None) or getattr(args, "file", None)
    from . import agreement
    agreement.prepare(_comm())          # collective, here where every rank is (agreement.py)
    try:
        return COMMANDS[args.command](args)
    except (ConfigError, HDF5Error, InputError, ModelError, StepError, ComputationError,
            np.linalg.LinAlgError, MemoryError) as e:
        code, line = _failure_line(e, file)
        _agree(e, line)                 # all ranks failed together, else this one aborts the job
        err(line)
        return code
    except Exception:
        _abort_other_ranks()
        raise


def _failure_line(e, file):
    """(exit code, the one ``parmbs: error:`` line) of an expected failure; (None, line)
    for anything else (a bug).  Inside an ``except`` block (the LinAlgError line looks up
    the tracker in the traceback)."""
    from .config import ConfigError
    from .integrators.newmark import StepError
    from .io.hdf5 import HDF5Error
    from .model.system import ModelError
    if isinstance(e, (ConfigError, HDF5Error, InputError)):
        return 2, f"parmbs: error: {e}"
    if isinstance(e, ModelError):
        return 2, f"parmbs: error: {file}: {e.key}: {e.message}"
    if isinstance(e, (StepError, ComputationError)):
        return 1, f"parmbs: error: {file}: computation failed: {e}"
    if isinstance(e, np.linalg.LinAlgError):
        return 1, f"parmbs: error: {file}: computation failed: singular matrix ({e}) in {_last_tracker_where()}"
    if isinstance(e, MemoryError):      # past config/resources.py's estimates (they are lower bounds)
        return 1, (f"parmbs: error: {file}: computation failed: out of memory ({' '.join(str(e).split())}) "
                   f"in {_last_tracker_where()}")
    return None, f"parmbs: error: {file}: {type(e).__name__}: {' '.join(str(e).split())}"


def _agree(e, line):
    """Before a failure's collective clean-up and exit: did every rank raise it?  If this
    rank raised alone (the others wait in a collective of the computation) print ``line``
    from this rank and abort the job (agreement.py) instead of hanging.  Once per
    exception: the earliest clean-up that needs the other ranks asks, run() then skips."""
    from . import agreement
    agreement.agree_on(_comm(), e, line, traceback=_failure_line(e, None)[0] is None)   # a bug: its traceback


def _abort_other_ranks():
    """An unexpected exception (a bug) on one rank of a parallel run: print its traceback
    and abort the whole job, so the other ranks do not wait forever in their next
    collective call (under mpirun a raising rank otherwise leaves its peers spinning)."""
    from . import agreement
    comm = _comm()
    if comm.Get_size() > 1:
        agreement.abort(comm, f"parmbs: error: unexpected exception on rank {comm.Get_rank()}: aborting all "
                              f"{comm.Get_size()} ranks (this is a bug: please report it with the traceback above)",
                        sys.exc_info()[1])


def _last_tracker_where():
    # the tracker lives in the command's frame; recover it from the traceback
    tb = sys.exc_info()[2]
    where = "the computation"
    while tb is not None:
        tr = tb.tb_frame.f_locals.get("tracker")
        if isinstance(tr, _Tracker):
            where = tr.where()
        tb = tb.tb_next
    return where


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
