"""Compiled per-step evaluation of small models (issue 19), optional.

``simulation.compiled`` chooses (``--set simulation.compiled=off`` on the command line):

* ``"auto"`` (default): the index-3 Newmark-family steppers (trapezoidal, Newmark,
  generalized-α) take one compiled call per time step (compiled/newmark_step.py) when
  numba is importable, the model has at most ``MAX_UNKNOWNS`` unknowns n + m, every
  component group is of a kind with a kernel (``KINDS``, compiled/planar.py and
  compiled/spatial.py), its matrices are not distributed (one rank, or replicated
  under mpirun) and its Newton
  solver is the default direct LU (ksp_type preonly, pc_type lu); silently the numpy
  path otherwise;
* ``"on"``: the same, but when it cannot be used one line says why (numpy path then);
* ``"off"``: the numpy components and PETSc, always.

The same models take one compiled call per tangent and per adjoint step
(compiled/newmark_adjoint.py: the step's blocks, ∂R/∂ρ by complex step in compiled
code, J's LU and its transposed solve).  J is factored dense below ``SPARSE_FROM``
unknowns, sparse in a static order from there on (compiled/newton_lu.py).  The numpy path stays the reference: the
complex-step verification (complex states and parameters always run numpy), the
initial state and its adjoint, and every failed compiled step (redone on numpy, which
names step and time) use it.
Numbers: not bitwise those of the numpy path (another summation order and LU; the
bounds are in tests/test_compiled.py), bitwise the same from run to run.

The variational integrator (integrators/variational.py) takes compiled solves and
component kernels: its forward step's J and S are factored by compiled/saddle_lu.py, and
the groups of the kinds in compiled/variational_kinds.py (the double wishbone's) are
evaluated by numba kernels, the others by numpy (so every kind qualifies; from
``SPARSE_FROM`` to ``MAX_UNKNOWNS`` unknowns, one rank, the default direct LU); its
adjoint step factors J and S the same way and solves and multiplies all objective columns
in compiled code (compiled/variational_adjoint.py); tangent and initial state stay on
PETSc and numpy (``make_variational``).

Generalized-α in the Arnold–Brüls form (integrators/genalpha_ab.py) has its own compiled
forward and adjoint steps, which also take the vehicle kinds and factor sparse
(compiled/ab_stepper.py: the same three modes, its own model test).

Compile time: the kernels are compiled at the first use in a process, or loaded from
numba's on-disk cache, kept by content and shared by every clone, worktree and venv of
the same sources (compiled/_cache.py): ``parmbs-<sha256 of compiled/*.py>`` under
``NUMBA_CACHE_DIR`` if set, else ~/.cache/parmbs/numba; any edit of these files is
another directory, the CPU target (``NUMBA_CPU_NAME``) another entry.  The time is
measured and reported once per process and kernel family (planar, spatial) in ``note``
(the CLI prints it); a planar model compiles no spatial kernel and vice versa.
"""
import hashlib
from pathlib import Path

from ..model import forces as F, joints as J
from ..model.component import CS_H
from ..spatial import bodies as SB, joints as SJ

#: values defined outside compiled/ that kernels read as globals: numba freezes a global's
#: value into the machine code at compile time, so a change of one must give another cache
#: directory, as an edit of compiled/*.py does (ab_adjoint, newmark_adjoint and vehicle read
#: the complex-step size)
FROZEN_GLOBALS = (("model.component.CS_H", CS_H),)


def source_digest(src):
    """sha256 (hex) of the ``*.py`` files in ``src`` (names and bytes, in name order) and of
    ``FROZEN_GLOBALS``' names and values."""
    h = hashlib.sha256()
    for f in sorted(Path(src).glob("*.py")):
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    h.update(repr(FROZEN_GLOBALS).encode())
    return h.hexdigest()


def cache_leaf(src):
    """``parmbs-`` + the first 16 hex digits of ``source_digest(src)``: the kernels' cache
    directory (compiled/_cache.py)."""
    return "parmbs-" + source_digest(src)[:16]


def cache_note():
    """"" when the kernels use the cache shared by content (compiled/_cache.py), else the
    compile note's remark on numba's per-clone cache."""
    from ._cache import NOTE
    return NOTE


#: component kinds with a kernel (compiled/planar.py, compiled/spatial.py), in the order
#: of the stacked arrays (stepper.LAYOUT); the time-dependent ones for these time
#: functions only.  The spatial ones: configs/spatial-double-pendulum.toml's and
#: heavy-top.toml's kinds
KINDS = (F.Inertia, F.Gravity, F.Spring, F.RotationalSpring, F.PointForce, F.Torque,
         J.Revolute, J.Weld, J.Prismatic, J.Driver,
         SB.SpatialInertia, SB.SpatialGyroscopic, SB.EulerRegularization, SB.SpatialGravity, SB.Normalization,
         SJ.SpatialSpherical, SJ.SpatialRevolute)
TIME_FUNCTIONS = ("constant", "polynomial", "harmonic")

#: from this many unknowns n + m on the Newton matrix is factored sparse
#: (compiled/newton_lu.py), below dense: measured on hanging chains
#: (benchmarks/compiled.py --crossover), CPU per step sparse ÷ dense forward, adjoint:
#: N = 40 1.55, 0.96; N = 60 1.03, 0.71; N = 100 0.43, 0.43; N = 300 0.06, 0.09
SPARSE_FROM = 60
#: above this many unknowns the compiled step is not used: the step keeps J and the
#: adjoint's blocks as dense (N, N) arrays next to the sparse factors (zeroed and
#: copied: N² memory passes); the compiled sparse step per numpy step on the chains,
#: forward, adjoint: N = 500 ×6.4, ×3.7; N = 1000 ×4.1, ×1.4
MAX_UNKNOWNS = 1000

#: the kernel families (planar, spatial present) whose compile this process has timed
_REPORTED = set()


def unsupported(system):
    """Names of the component kinds without a compiled kernel (empty: all have one)."""
    bad = set()
    for g in list(system.forces) + list(system.constraints):
        fn = getattr(g, "function", None)
        if type(g) not in KINDS:
            bad.add(type(g).__name__)
        elif fn is not None and fn.kind not in TIME_FUNCTIONS:
            bad.add(f"{type(g).__name__} ({fn.kind} function)")
    return sorted(bad)


def why_not(system, op=None):
    """None if the compiled step can run this model, else the reason (one phrase).
    ``op``: the stepper's SparseOperator — its KSP must be the direct LU the compiled
    step replaces (a user's iterative or other solver choice is kept)."""
    N = system.n + system.m
    if N > MAX_UNKNOWNS:
        return f"{N} unknowns > {MAX_UNKNOWNS}"
    bad = unsupported(system)
    if bad:
        return f"no compiled kernel for {', '.join(bad)}"
    return runtime_why_not(op)


def runtime_why_not(op=None):
    """The model-independent part of ``why_not`` (also compiled/ab_stepper.py's): the
    operator's distribution and solver, numba's presence and cache."""
    if op is not None and op.comm.getSize() > 1:
        return "matrices distributed over several ranks"
    if op is not None and (op.ksp.getType(), op.ksp.getPC().getType()) != ("preonly", "lu"):
        return (f"the Newton solver is ksp_type {op.ksp.getType()} / pc_type {op.ksp.getPC().getType()}, "
                "not the direct LU the compiled step replaces")
    try:
        import numba  # noqa: F401
    except ImportError:
        return "numba is not installed (Debian: apt-get install python3-numba)"
    try:                   # decorating with cache=True fails without a writable cache directory
        from . import stepper  # noqa: F401
    except Exception as e:  # noqa: BLE001 - any failure of numba's set-up means: numpy path
        return f"numba cannot be used here ({type(e).__name__}: {e}; NUMBA_CACHE_DIR names a writable cache directory)"
    return None


def make(system, mode="auto", op=None, why=None, build=None):
    """(CompiledNewmark or None, note or None) for ``simulation.compiled = mode``.  ``why``
    and ``build`` (system, op): another compiled stepper's model test and constructor
    (compiled/ab_stepper.py); its ``family`` keys the once-per-process compile note."""
    if mode == "off":
        return None, None
    reason = (why or why_not)(system, op)
    if reason is not None:
        return None, (f"compiled: not used ({reason}); numpy path" if mode == "on" else None)
    if build is None:
        from .stepper import CompiledNewmark
        build = CompiledNewmark
    cs = build(system, op)
    note = None
    if cs.family not in _REPORTED:       # a planar and a spatial model compile apart (stepper.families)
        _REPORTED.add(cs.family)
        note = cs.warm_up() + cache_note()
    return cs, note


def make_variational(system, mode="auto", op=None):
    """(CompiledVariational or None, note or None) for the variational stepper's forward
    solves (compiled/saddle_lu.py): the model test is the size and ``runtime_why_not``
    (a kind without a kernel in compiled/variational_kinds.py is evaluated by numpy, so no
    kind is missing one)."""
    def why(system, op):
        N = system.n + system.m
        if N < SPARSE_FROM:    # measured: no gain (flexible pendulum N = 26, rigid-spring-beam 21: ±3 %)
            return f"{N} unknowns < {SPARSE_FROM}: PETSc's LU is as fast"
        return f"{N} unknowns > {MAX_UNKNOWNS}" if N > MAX_UNKNOWNS else runtime_why_not(op)

    def build(system, op):
        from .saddle_lu import CompiledVariational
        return CompiledVariational(system, op)
    return make(system, mode, op, why=why, build=build)
