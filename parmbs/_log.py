"""parmbs's PETSc log stages and events: what ``-log_view`` shows of a run.

PETSc attributes the time (and flops, messages) of everything inside a log *stage*
to it, its own events (KSPSolve, MatLUFactorNum, TSStep, ...) included, and lists
each stage in the ``-log_view`` summary ("Summary of Stages") with a table of its
events.  parmbs's stages are its phases, its events the work PETSc cannot see
(numpy evaluation and assembly, one time step of an own stepper):

    stage  "parmbs forward"            the forward run (and a TS adjoint's re-run)
           "parmbs adjoint"            the adjoint sweep (own steps or TSAdjoint)
           "parmbs direct"             the tangent sweep
           "parmbs checkpoint I/O"     reading and writing the HDF5 checkpoint store
           "parmbs fd", "parmbs cs"    finite-difference / complex-step gradients
    event  ParmbsNewton                one forward step of an own stepper (its Newton solve)
           ParmbsTangent, ParmbsAdjStep one tangent / adjoint step of an own stepper
           ParmbsResidual              a residual vector (StateEval.residual)
           ParmbsAssemble              local Jacobian blocks and their insertion into
                                       a PETSc matrix (force/Hessian blocks, setValuesCSR)

Use (both work as ``with`` blocks and as decorators)::

    with _log.stage("forward"): ...              @_log.stage("checkpoint I/O")
    with _log.event("ParmbsAssemble"): ...       def put_slot(self, ...): ...

A stage entered again inside itself (the CLI's "forward" around a Problem.forward
that pushes its own) is pushed once, so the stage's count in ``-log_view`` is the
number of phases.  Nested begins of one event PETSc counts once by itself (its
event depth: an assembly inside an assembly).

Registration follows one fixed order on every rank: PETSc's ``-log_view`` matches
stages and events across ranks by their registration index (PetscLogView_Default:
"a single processor can register more stages than another, but stages must all be
registered in order").  So the events are registered all together at the first use,
and a stage together with every stage before it in STAGES (a rank that writes the
checkpoint and one that does not still agree on the index of "adjoint").  A stage
registered but never entered is listed as "Unknown" in the per-event tables; STAGES
puts the common ones first, so a plain simulate registers only "forward".  Nothing
here touches PETSc at import (PETSc starts after the CLI has taken its options:
parmbs/_petsc.py).
"""
import functools

STAGES = ("forward", "adjoint", "direct", "checkpoint I/O", "fd", "cs")
EVENTS = ("ParmbsNewton", "ParmbsTangent", "ParmbsAdjStep", "ParmbsResidual", "ParmbsAssemble")

_table = {}            # {"stage:<name>": PETSc.Log.Stage, "<event>": PETSc.Log.Event}
_depth = {}            # stage name -> how often it is entered now


def _get(key):
    """The registered stage ("stage:<name>") or event; registers it (and what must
    come before it) at its first use: see the module docstring."""
    if key not in _table:
        from ._petsc import PETSc
        if not _table:
            _table.update({e: PETSc.Log.Event(e) for e in EVENTS})
        if key.startswith("stage:"):
            for s in STAGES[:STAGES.index(key[6:]) + 1]:
                if "stage:" + s not in _table:
                    _table["stage:" + s] = PETSc.Log.Stage(f"parmbs {s}")
    return _table[key]


class _Context:
    """A context manager that is also a decorator (a fresh enter per call)."""

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*a, **kw):
            with self:
                return fn(*a, **kw)
        return wrapped


class stage(_Context):
    """PETSc log stage "parmbs <what>" (``what`` one of STAGES)."""

    def __init__(self, what):
        if what not in STAGES:
            raise ValueError(f"no parmbs log stage {what!r} (one of {', '.join(STAGES)})")
        self.what = what

    def __enter__(self):
        d = _depth.get(self.what, 0)
        if d == 0:
            _get("stage:" + self.what).push()
        _depth[self.what] = d + 1
        return self

    def __exit__(self, *exc):
        d = _depth[self.what] - 1
        _depth[self.what] = d
        if d == 0:
            _get("stage:" + self.what).pop()
        return False


class event(_Context):
    """PETSc log event ``name`` (one of EVENTS) around a block or a function."""

    def __init__(self, name):
        if name not in EVENTS:
            raise ValueError(f"no parmbs log event {name!r} (one of {', '.join(EVENTS)})")
        self.name = name

    def __enter__(self):
        _get(self.name).begin()
        return self

    def __exit__(self, *exc):
        _get(self.name).end()
        return False


#: the per-step methods of the stepper protocol (formulations/__init__.py) and their events
STEP_EVENTS = {"step": "ParmbsNewton", "tangent_step": "ParmbsTangent", "adjoint_step": "ParmbsAdjStep"}


def instrument(stepper):
    """Log the stepper's ``step``/``tangent_step``/``adjoint_step`` (those it has) as
    their events (STEP_EVENTS), on this instance; returns the stepper.  Called once by
    formulations.make_stepper, so every stepper is logged without an edit in each."""
    for meth, name in STEP_EVENTS.items():
        fn = getattr(stepper, meth, None)
        if fn is not None and not getattr(fn, "_parmbs_logged", False):
            wrapped = event(name)(fn)
            wrapped._parmbs_logged = True
            setattr(stepper, meth, wrapped)
    return stepper


def checkpoint_io(fn):
    """Decorator: ``fn`` runs in the "parmbs checkpoint I/O" stage (checkpoint/store.py)."""
    return stage("checkpoint I/O")(fn)


__all__ = ["STAGES", "EVENTS", "stage", "event", "instrument", "checkpoint_io"]
