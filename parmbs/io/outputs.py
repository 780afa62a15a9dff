"""No data lost: every output is built beside its target under another name and renamed
onto the target only once it is complete (``os.replace``: atomic within a directory on
POSIX).  A run that fails, or is killed, never touches an earlier file at the target.

Two kinds of working file:

* **temporary** ``DIR/STEM.tmp-PID.EXT`` (the extension is kept, so matplotlib and
  readers see the format): JSON, PNG, XDMF, the trajectory of a PETSc TS run, a
  batch-mode ``/gradient`` file.  Removed when the run fails; a SIGKILL leaves it behind
  (never read by parmbs: delete it).
* **in progress** ``OUT.h5.partial``: the resumable state of a checkpointed ``simulate``
  / ``gradient`` run (index-3 integrators) and of an optimization record.  It survives a
  kill; ``--restart OUT.h5`` continues it; it is renamed onto ``OUT.h5`` when the run is
  complete.  A fresh ``-o OUT.h5`` refuses to start while ``OUT.h5.partial`` exists
  (continue it with ``--restart`` or delete it), so no killed run's work is thrown away.

Inputs are never outputs: ``check_distinct`` refuses an output path that is the config,
the file of ``--restart`` (unless the output *is* the restarted result), or another
output of the same run.

MPI: the callers run on every rank; rank 0 alone touches the file system here and the
outcome is broadcast (``commit``), after a barrier that every rank reaches only when it
has finished writing its part.
"""
from __future__ import annotations

import os

PARTIAL = ".partial"


def partial_of(path) -> str:
    """The in-progress file of the result ``path``."""
    return os.fspath(path) + PARTIAL


def final_of(path) -> str:
    """The result a ``--restart`` path stands for (``OUT.h5.partial`` → ``OUT.h5``)."""
    path = os.fspath(path)
    return path[:-len(PARTIAL)] if path.endswith(PARTIAL) else path


def temp_of(path, pid=None) -> str:
    """``DIR/STEM.tmp-PID.EXT`` beside ``path`` (same directory: the rename stays atomic)."""
    d, base = os.path.split(os.fspath(path))
    stem, ext = os.path.splitext(base)
    return os.path.join(d, f"{stem}.tmp-{os.getpid() if pid is None else pid}{ext}")


def same_file(a, b) -> bool:
    """Whether ``a`` and ``b`` name one file (hard links and symlinks included)."""
    if a is None or b is None:
        return False
    a, b = os.fspath(a), os.fspath(b)
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


class Clash(Exception):
    """An output path that may not be written: ``option`` names it, ``message`` says why."""

    def __init__(self, option, message):
        self.option, self.message = option, message
        super().__init__(f"{option}: {message}")


def check_distinct(outputs, inputs):
    """Raise Clash for the first output that is an input or another output.

    ``outputs``/``inputs``: sequences of (option, path, what) — ``what`` describes the
    file in the message ("the config file", "the --restart file").  Also refused: an
    output whose directory does not exist or that is a directory."""
    outputs = [(o, os.fspath(p), w) for o, p, w in outputs if p is not None]
    inputs = [(o, os.fspath(p), w) for o, p, w in inputs if p is not None]
    for i, (opt, path, _) in enumerate(outputs):
        for iopt, ipath, what in inputs:
            if same_file(path, ipath):
                raise Clash(opt, f"{path} is {what} ({iopt}); an output never overwrites an input")
        for opt2, path2, what2 in outputs[:i]:
            if same_file(path, path2):
                raise Clash(opt, f"{path} is also {what2} ({opt2}); give each output its own file")
        d = os.path.dirname(path) or "."
        if not os.path.isdir(d):
            raise Clash(opt, f"{path}: no such directory {d}")
        if os.path.isdir(path):
            raise Clash(opt, f"{path} is a directory")


def in_use(path) -> bool:
    """Whether another process holds ``path`` open for writing (HDF5 file lock).  HDF5
    (≥ 1.10) locks a file it writes; opening it then fails with 'unable to lock file'."""
    if not os.path.exists(path):
        return False
    try:
        import h5py
        with h5py.File(path, "r"):
            return False
    except OSError as e:
        return is_lock_error(e)


def is_lock_error(e) -> bool:
    text = str(e).lower()
    return "unable to lock file" in text or "lock" in text and "errno = 11" in text


def remove_quietly(path):
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def _comm(comm):
    if comm is None:
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
    return comm


class Outputs:
    """The working files of one run and their targets.  ``add(tmp, final)`` registers a
    file written under ``tmp``; ``commit()`` (collective) renames every one onto its
    target once all ranks are done; ``discard()`` (after a failure) removes them.
    ``final=None``: a working file that is removed on success too."""

    def __init__(self, comm=None):
        self.comm = _comm(comm)
        self.items = []

    def temp(self, final):
        """A temporary name beside ``final`` (rank 0's pid on every rank), registered."""
        pid = self.comm.bcast(os.getpid() if self.comm.rank == 0 else None, root=0) \
            if self.comm.size > 1 else os.getpid()
        tmp = temp_of(final, pid)
        self.items.append((tmp, os.fspath(final)))
        return tmp

    def add(self, tmp, final):
        self.items.append((os.fspath(tmp), None if final is None else os.fspath(final)))

    def commit(self):
        """Collective: barrier (every rank has written its part), then rank 0 renames
        each working file onto its target (removes it where the target is None); an
        error becomes the same HDF5Error on every rank."""
        from .hdf5 import HDF5Error, _short
        if self.comm.size > 1:
            self.comm.barrier()
        err = None
        if self.comm.rank == 0:
            for tmp, final in self.items:
                try:
                    if final is None:
                        remove_quietly(tmp)
                    else:
                        os.replace(tmp, final)
                except OSError as e:
                    err = (final or tmp, "<file>", f"cannot rename {tmp} onto it: {_short(e)}")
                    break
        if self.comm.size > 1:
            err = self.comm.bcast(err, root=0)
        self.items = []
        if err is not None:
            raise HDF5Error(*err)

    def discard(self):
        """Rank 0: remove the working files (a failed run; not collective: safe on every
        exit path).  The targets are untouched."""
        if self.comm.rank == 0:
            for tmp, _ in self.items:
                try:
                    remove_quietly(tmp)
                except OSError:
                    pass
        self.items = []


def replace_on_root(path, write):
    """Rank-local: ``write(tmp)`` writes the whole file under a temporary name beside
    ``path``, which is then renamed onto ``path``; on any failure the temporary file is
    removed and ``path`` is untouched.  Returns ``write``'s result."""
    tmp = temp_of(path)
    try:
        res = write(tmp)
        os.replace(tmp, path)
    except BaseException:
        remove_quietly(tmp)
        raise
    return res
