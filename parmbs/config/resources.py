"""Memory and disk a run will need, estimated before anything is allocated.

``dt = 1e-9`` on a one-second run asked numpy for 15 GiB before saying anything, and
``checkpoint.schedule = "revolve:10000000"`` on a 200-step run wrote a 1.2 GB file
(issue 17).  The big allocations of a run are proportional to the number of steps N
or of checkpoint slots S, with a known size per entry, so they are estimated from the
model's sizes (n coordinates, m multipliers) and refused, with one line saying the
estimate and what to change, when they cannot fit:

* per step, always (``Problem``): the quadrature weights, the step times and the
  Newton counts of the forward run — 3 doubles, 24 bytes;
* the in-memory trajectory (a forward run without a checkpoint file, and PETSc TS
  runs, which keep theirs in memory): x_k = (q, v, a, λ) for k = 0..N — (N + 1)·(3n + m)
  doubles on top of the above;
* a checkpoint file (``checkpoint.schedule`` other than ``all``, or ``-o``): each of
  its S slots holds t, q, v, a, λ, the objective integrals and a step and CRC entry —
  (3n + m + objectives + 3)·8 bytes, all allocated when the file is created
  (parmbs/checkpoint/store.py: H5D_ALLOC_TIME_EARLY).

Memory is compared with ``MemAvailable`` of /proc/meminfo (what the kernel can give
without swapping), else the free physical pages of ``os.sysconf``; disk with
``shutil.disk_usage`` of the file's directory, less what an existing file already
holds.  The estimates are lower bounds (matrices, factorizations and Python objects
come on top), so a run that passes may still be too large; one that fails cannot fit.
Under MPI rank 0 measures and broadcasts (``comm``), so every rank takes the same
decision and leaves with the same one-line error.  Every rank holds its own replicated
trajectory, so the memory estimate is multiplied by the number of ranks sharing rank
0's machine (MPI_COMM_TYPE_SHARED).
"""
from __future__ import annotations

import os
import shutil

from .errors import ConfigError

#: bytes per step the run keeps whatever its storage (weights, times, Newton counts)
PER_STEP_BYTES = 3 * 8


def state_bytes(n: int, m: int) -> int:
    """Bytes of one state x = (q, v, a, λ) in doubles."""
    return 8 * (3 * n + m)


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation, or None if unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _gib(b: float) -> str:
    return f"{b / 2**30:.3g} GiB" if b >= 2**30 else f"{b / 2**20:.3g} MiB"


def _on_root(comm, fn):
    """fn() on rank 0 of the mpi4py ``comm`` (None: this process), broadcast."""
    if comm is None or comm.Get_size() == 1:
        return fn()
    return comm.bcast(fn() if comm.Get_rank() == 0 else None, root=0)


def _ranks_on_root_machine(comm) -> int:
    """How many ranks of ``comm`` share rank 0's machine (collective; 1 without MPI)."""
    if comm is None or comm.Get_size() == 1:
        return 1
    from mpi4py import MPI
    local = comm.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        return comm.bcast(local.Get_size() if comm.Get_rank() == 0 else None, root=0)
    finally:
        local.Free()


def check_memory(file: str, nsteps: int, n: int, m: int, trajectory: bool, comm=None,
                 available: int | None = None) -> int:
    """Refuse (ConfigError on ``simulation.dt``) a run whose per-step arrays, with the
    in-memory trajectory if ``trajectory``, exceed the available memory; return the
    estimate in bytes.  Collective over ``comm`` (mpi4py, or None); ``available``
    overrides the measured memory (tests)."""
    per = PER_STEP_BYTES + (state_bytes(n, m) if trajectory else 0)
    ranks = _ranks_on_root_machine(comm)
    need = (nsteps + 1) * per * ranks
    have = _on_root(comm, available_memory) if available is None else available
    if have is not None and need > have:
        what = (f"the in-memory trajectory of {nsteps} steps needs ~{_gib(need)} ({nsteps + 1} states × "
                f"{per} bytes: q, v, a of {n} and λ of {m} doubles)" if trajectory else
                f"{nsteps} steps need ~{_gib(need)} ({per} bytes per step)")
        if ranks > 1:
            what += f", × {ranks} ranks on this machine"
        hint = ("increase dt, reduce t_end, or keep the states in a checkpoint file "
                "(checkpoint.schedule = \"revolve:C\")" if trajectory else "increase dt or reduce t_end")
        raise ConfigError(file, "simulation.dt", f"{what}, more than the {_gib(have)} of memory available; {hint}")
    return need


def checkpoint_bytes(slots: int, n: int, m: int, nobj: int) -> int:
    """Bytes of the S slots of a checkpoint file (see the module doc)."""
    return slots * (state_bytes(n, m) + 8 * (nobj + 3))


def _free_and_held(path: str) -> tuple[int, int] | None:
    """(free bytes on the file system of ``path``, bytes the file already holds)."""
    try:
        free = shutil.disk_usage(os.path.dirname(os.path.abspath(path))).free
        return free, (os.path.getsize(path) if os.path.exists(path) else 0)
    except OSError:
        return None                                 # a missing directory: the file layer says so


def check_disk(file: str, path: str, slots: int, n: int, m: int, nobj: int, comm=None,
               free: int | None = None) -> int:
    """Refuse (ConfigError on ``checkpoint.schedule``) a checkpoint file at ``path``
    whose slots do not fit on its file system; return the estimate in bytes.  An
    existing file (a resumed run) already holds its space.  Collective over ``comm``
    (mpi4py, or None); ``free`` overrides the measured free space (tests)."""
    need = checkpoint_bytes(slots, n, m, nobj)
    path = os.fspath(path)
    measured = _on_root(comm, lambda: _free_and_held(path))
    if measured is None:
        return need
    have, held = measured if free is None else (free, measured[1])
    if need - held > have:
        raise ConfigError(file, "checkpoint.schedule", f"the checkpoint file {path} needs ~{_gib(need)} "
                          f"({slots} slots × {need // max(slots, 1)} bytes), more than the {_gib(have)} free "
                          "there; use revolve:C with fewer slots C, or a file system with more space")
    return need


def check_model_size(cfg, file: str, available: int | None = None) -> int:
    """Refuse a mesh too large to hold even its state: ``elements = 1000000000`` on a
    beam was a MemoryError traceback while the config was still being checked.

    A lower bound on the coordinates n from the config alone (flexible/*.py): an ANCF
    beam has 4 per node (4·(elements + 1)), an FFR beam 3 + 3·elements, a plate 2 per
    node (2·(nx + 1)(ny + 1)), a continuum at least its frame (3; its free nodes depend
    on the clamp), a solid its frame (7), a rigid body 3.  The run holds at least q, v and a (3n doubles, one
    state), so 24·n bytes beyond the available memory cannot fit.  Raises ConfigError
    naming the largest body's size key; returns the bound in bytes."""
    parts = [(3 * len(cfg.bodies), "bodies")]
    for b in cfg.beams:
        parts.append((4 * (b.elements + 1) if b.type == "ancf" else 3 + 3 * b.elements, f"beams.{b.name}.elements"))
    for p in cfg.plates:
        parts.append((2 * (p.nx + 1) * (p.ny + 1), f"plates.{p.name}.nx"))
    parts += [(3, f"continua.{c.name}.nx") for c in cfg.continua]
    if cfg.spatial is not None:                      # a solid: its frame (7; free nodes depend on the clamp)
        parts += [(7, f"spatial.solids.{c.name}.nx") for c in cfg.spatial.solids]
    n = sum(k for k, _ in parts)
    need = 24 * n
    if need <= 2 ** 28:                              # 256 MiB: fits anywhere parmbs runs; no need to ask
        return need
    have = available_memory() if available is None else available
    if have is not None and need > have:
        count, key = max(parts)
        raise ConfigError(file, key, f"the model has at least {n} coordinates ({count} here): its state alone "
                          f"(q, v, a) needs ~{_gib(need)}, more than the {_gib(have)} of memory available")
    return need
