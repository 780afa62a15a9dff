"""Communicator layout: the one place where parmbs splits communicators.

Three modes, one mechanism — the world's ranks are split into G *groups* of
contiguous ranks (``MPI.Comm.Split``), and each group gets a petsc4py communicator
for its matrices and solves:

* state-parallel (G = 1): one group holding every rank; the model's matrices are
  distributed over all of them (MUMPS);
* batch-parallel (G = size): one rank per group, each with its own copy of the
  (small) model; work — design-variable batches for direct/FD gradients,
  objective / scenario batches for the adjoint — is divided between groups;
* hybrid (1 < G < size): groups of several ranks, each group state-parallel.

A model too small to distribute (``DISTRIBUTE_MIN_UNKNOWNS``) is not: a state-parallel
request runs it *replicated* — every rank the whole serial model on COMM_SELF
(``replicate_small``), and ``parmbs gradient`` picks batch-parallel groups when it can
(cli.py ``_auto_batches``); ``parallel.distribute = "always"`` forces distribution.

Group sizes differ by at most one when G does not divide the rank count.  Besides
the split, this module holds the two collective patterns the batch driver needs:
an error check that every rank reaches (so a failing group cannot leave the others
waiting in a gather), and a gather of owned slices into one distributed PETSc Vec
(no rank ever assembles a dense state × parameter block).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def group_of(rank: int, size: int, groups: int) -> int:
    """Group index of ``rank`` when ``size`` ranks form ``groups`` contiguous groups.

    Group g holds ranks [g·size//G, (g+1)·size//G): sizes differ by at most one.
    """
    for g in range(groups):
        if rank < (g + 1) * size // groups:
            return g
    raise AssertionError((rank, size, groups))


class LayoutError(ValueError):
    """An impossible layout (more groups than ranks, G < 1)."""


@dataclass
class Layout:
    """Where this rank sits: world, its group, and the group's PETSc communicator.

    ``world``/``group``/``leaders`` are mpi4py communicators; ``petsc_group`` is the
    petsc4py wrap of ``group`` to pass as ``Problem(comm=...)``.  ``leaders`` holds
    the rank 0 of every group (``MPI.COMM_NULL`` elsewhere).
    """

    world: object
    groups: int
    group_index: int
    group: object
    petsc_group: object
    leaders: object

    @property
    def is_leader(self) -> bool:
        return self.group.rank == 0

    @property
    def mode(self) -> str:
        if self.groups == 1:
            return "state-parallel" if self.world.size > 1 else "serial"
        return "batch-parallel" if self.groups == self.world.size else "hybrid"

    def free(self) -> None:
        """Release the split communicators (collective over world)."""
        from mpi4py import MPI
        for c in (self.group, self.leaders):
            if c != MPI.COMM_NULL and c not in (MPI.COMM_WORLD, MPI.COMM_SELF):
                c.Free()


def make_layout(groups: int = 1, world=None) -> Layout:
    """Split ``world`` (default COMM_WORLD) into ``groups`` groups; collective.

    Raises ``LayoutError`` on every rank alike (the check uses only ``world.size``)
    when ``groups`` < 1 or exceeds the number of ranks.
    """
    from mpi4py import MPI
    from ._petsc import PETSc

    world = world if world is not None else MPI.COMM_WORLD
    size = world.size
    if not isinstance(groups, (int, np.integer)) or groups < 1:
        raise LayoutError(f"need at least 1 group, got {groups!r}")
    if groups > size:
        raise LayoutError(f"{groups} groups need at least {groups} MPI ranks, have {size} "
                          f"(run under mpirun -n {groups} or more)")
    g = group_of(world.rank, size, groups)
    group = world.Split(color=g, key=world.rank)
    leaders = world.Split(color=0 if group.rank == 0 else MPI.UNDEFINED, key=world.rank)
    return Layout(world, int(groups), g, group, PETSc.Comm(group), leaders)


# ----------------------------------------------------------------------------- collectives


class GroupFailure(RuntimeError):
    """A batch failed in some group; raised on every rank with the same message (the
    lowest failing rank's, plus a count of the others).

    ``code`` is the exit code the CLI should use (1: computation failed, 2: bad input
    discovered only while computing, e.g. a scenario whose initial assembly fails).
    """

    def __init__(self, message: str, code: int = 1):
        self.code = code
        super().__init__(message)


def raise_if_any_failed(layout: Layout, failure) -> None:
    """Collective: if any rank reports a failure, raise the same ``GroupFailure`` everywhere.

    ``failure`` is None or (code, message).  One allreduce of a flag, then (only if
    set) one allgather of the messages: every rank reaches both on every path, so a
    failing group makes the whole job stop instead of leaving the others blocked in
    the result gather.
    """
    from mpi4py import MPI
    flag = layout.world.allreduce(0 if failure is None else 1, op=MPI.MAX)
    if not flag:
        return
    reports = layout.world.allgather(failure)
    msgs = list(dict.fromkeys(r[1] for r in reports if r is not None))   # ranks of a group repeat
    first = next(r for r in reports if r is not None)
    extra = f" (+{len(msgs) - 1} more failed batch{'es' if len(msgs) > 2 else ''})" if len(msgs) > 1 else ""
    raise GroupFailure(first[1] + extra, code=first[0])


def gather_owned(layout: Layout, n: int, idx, vals, to_all: bool = True):
    """Assemble owned entries into one distributed Vec of length ``n`` and gather it.

    Each group *leader* contributes ``vals`` at global indices ``idx`` (other ranks
    pass what they like; it is ignored), so every entry is set exactly once.  The
    PETSc Vec is distributed over ``world`` (each rank stores ~n/size entries), and
    is then scattered to every rank (``to_all``) or to rank 0 only (others get
    None).  Returns (the distributed Vec, numpy array or None); the caller destroys
    the Vec.
    """
    from ._petsc import PETSc

    comm = PETSc.Comm(layout.world)
    vec = PETSc.Vec().createMPI(n, comm=comm)
    vec.set(0.0)
    if layout.is_leader and len(idx):
        vec.setValues(np.asarray(idx, dtype=PETSc.IntType), np.asarray(vals, dtype=float),
                      addv=PETSc.InsertMode.INSERT_VALUES)
    vec.assemblyBegin()
    vec.assemblyEnd()
    scat, full = (PETSc.Scatter.toAll(vec) if to_all else PETSc.Scatter.toZero(vec))
    scat.scatter(vec, full, addv=PETSc.InsertMode.INSERT_VALUES, mode=PETSc.ScatterMode.FORWARD)
    arr = full.getArray(readonly=True).copy() if (to_all or layout.world.rank == 0) else None
    scat.destroy()
    full.destroy()
    return vec, arr


# ----------------------------------------------------------------------------- small models


#: A state-parallel run (groups = 1 on several ranks) distributes the model's matrices
#: only from this many unknowns (n + m) up; below, every rank runs the whole model
#: serially on PETSc.COMM_SELF ("replicated").  Measured on this 2-core machine (load
#: 9-11, benchmarks/README.md "Small models under mpirun"): the five-bar (22 unknowns)
#: took 7-12x the serial wall time on 2 ranks, 15-26x in the stepping loop (MUMPS and
#: a gather per solve of a 22 x 22 system).  topopt-crank, rank-0 CPU on 2 ranks / serial CPU of the same 3 steps
#: (forward + adjoint): 2 138 unknowns 5.2x, 8 234 1.3x, 50 350 1.4x (the 200-step
#: extrapolation, where the first steps weigh less: 53 vs 51 s, even), 199 922 1.7x
#: (extrapolated 206 vs 168 s).  No size measured here wins on 2 ranks (the ranks share
#: 2 cores with other jobs); the loss is 6x at 2·10^3 and the 200-step extrapolations
#: are within -8 .. +23 % from 8·10^3 up.  The threshold sits at the top of that "about
#: even" band, where distributing also splits the factor's memory over the ranks: an
#: order of magnitude, not a fitted crossover; parallel.distribute = "always" below it.
DISTRIBUTE_MIN_UNKNOWNS = 50_000


def replicate_small(unknowns: int, distribute: str = "auto", world=None):
    """The PETSc communicator for a state-parallel Problem of ``unknowns`` unknowns.

    Returns ``(comm, note)``: ``(None, None)`` — the default, PETSc.COMM_WORLD,
    matrices distributed — on one rank, with ``distribute = "always"``, or from
    ``DISTRIBUTE_MIN_UNKNOWNS`` unknowns up; otherwise ``(PETSc.COMM_SELF, note)``:
    every rank computes the same serial model (the serial run's operations, so its
    numbers bit for bit, and no communication inside the run), and ``note`` is the one
    start-up line saying so.  Outputs are unaffected: they are written by rank 0 from
    the replicated state either way (io/hdf5.py, checkpoint/store.py).
    """
    from mpi4py import MPI
    from ._petsc import PETSc
    world = world if world is not None else MPI.COMM_WORLD
    if world.size == 1 or distribute == "always" or unknowns >= DISTRIBUTE_MIN_UNKNOWNS:
        return None, None
    note = (f"parallel: {unknowns} unknowns < {DISTRIBUTE_MIN_UNKNOWNS}: too small to distribute; "
            f"each of the {world.size} ranks runs the model serially (replicated, same numbers as one rank; "
            f"force distribution with parallel.distribute = \"always\" or --set parallel.distribute=always)")
    return PETSc.COMM_SELF, note


def auto_batch_note(units: int, what: str, size: int) -> str:
    """The start-up line of a gradient switched to batch-parallel groups automatically."""
    return (f"parallel: model too small to distribute; {units} {what} split over {size} batch-parallel groups "
            f"(one rank each; --groups 1 for replicated serial, parallel.distribute = \"always\" to distribute)")
