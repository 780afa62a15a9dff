"""Did every rank fail, or only this one?  A bounded wait that keeps a parallel run from
hanging when one rank raises alone.

An expected failure (StepError, LinAlgError, a non-finite value, a config or file error)
normally reaches every rank together: the Newton and KSP decisions are taken on global
norms and on replicated solutions, file outcomes are broadcast.  Then the ranks can
leave together with one message and exit code 1 or 2.  A failure raised by ONE rank
alone in the middle of a forward run or an adjoint sweep (a rank-local check of its
slice, a bug in a local kernel) is different: the other ranks are already inside the
next collective call (a KSP solve, a Newton norm) and will wait there forever — any
collective the failing rank starts to "agree" (an allgather of a failure flag) waits
forever too, on another communicator (observed: `mpirun -n 2 parmbs simulate` with a
StepError on rank 1 at step 10 hangs until killed, no message printed).

So the failing rank posts a non-blocking barrier on a communicator of its own (a
duplicate of the run's, used for nothing else, so it can never be matched against
another collective) and waits at most ``timeout`` seconds for the other ranks to post
theirs.  If not all do, this rank failed alone: it prints one message naming itself
and aborts the job (MPI_Abort: every rank ends, non-zero).  Ranks that did not fail and
reach an agreement point (``exchange``) wait without limit: if a failed rank gives up,
its abort ends them.

A barrier says only that every rank reached SOME agreement point, not the same one:
``parmbs optimize`` meets at ``exchange`` after every evaluation, so a rank that raised
alone after the evaluation's last collective (leaving the optimizer through
``agree_on``) met the others' ``exchange`` barrier, took it for "failed together" and
went on to the collective clean-up while they waited in the exchange's allgather — a
hang whenever the others reached their exchange within the failing rank's wait (and an
abort when they came later: timing decided).  So every rank that passes the barrier
also gathers which point each rank is at (one allgather on the same duplicate: all of
them passed the barrier, so all of them make it).  The same point everywhere: the
caller goes on.  Different points: the failed rank(s) did not fail with the others —
the lowest of them prints its message and aborts, every other rank waits for that
abort.  The timeout decides only how long a failed rank waits for ranks that never
come; what happens after the barrier does not depend on timing.

The timeout (``PARMBS_FAILURE_TIMEOUT``, default 30 s) only bounds how long a lone
failure takes to end the job; ranks that fail together arrive within the same step
(milliseconds apart on a quiet machine; on a loaded one every message waits for both
ranks to be scheduled — measured: the distributed five-bar's `parmbs optimize` at nice
10, load ~17, had used 2 s of CPU per rank after 3 min of wall time — so ranks that
failed together can arrive far apart, and a timeout of a second or two can turn them
into a lone-failure abort: keep it well above that).
"""
from __future__ import annotations

import os
import sys
import time

DEFAULT_TIMEOUT = 30.0

_dups: dict = {}


def timeout() -> float:
    return float(os.environ.get("PARMBS_FAILURE_TIMEOUT", DEFAULT_TIMEOUT))


def prepare(comm):
    """The private duplicate of mpi4py ``comm`` (collective on first use: call it where
    every rank is, e.g. at start-up); None on one rank."""
    if comm.Get_size() == 1:
        return None
    key = comm.py2f()
    if key not in _dups:
        _dups[key] = comm.Dup()
    return _dups[key]


def _arrived(dup, limit):
    """Post the barrier; True once every rank posted it, False after ``limit`` s
    (None: wait without limit)."""
    req = dup.Ibarrier()
    if limit is None:
        req.Wait()
        return True
    end = time.monotonic() + limit
    while not req.Test():
        if time.monotonic() > end:
            return False            # (left pending: the job is aborted)
        time.sleep(0.005)
    return True


#: the agreement points a rank can be at when it posts its barrier
FAILED, EVALUATION = "failed", "evaluation"


def _points(dup, point, msg=None):
    """After the barrier (every rank passed it, so every rank makes this call): the
    (point, message) of every rank."""
    return dup.allgather((point, msg))


def _wait_for_abort(dup):
    """Another rank aborts the job (it failed where this one did not): wait for it.  A
    barrier that rank never joins, on the private duplicate: ended by its MPI_Abort."""
    dup.Barrier()
    raise AssertionError("agreement: the barrier of an aborting rank completed")   # pragma: no cover


def abort(comm, message, exc=None):
    """Print ``message`` (this rank's own line, not rank 0's; after the traceback of
    ``exc`` if given: a bug) and end every rank."""
    if exc is not None:
        import traceback
        traceback.print_exception(type(exc), exc, exc.__traceback__)
    # one write with its newline: Python's stderr writes through, so print() would send the
    # text and "\n" in two writes, and mpirun's abort banner can land between them (seen:
    # the line ran on into the banner's dashes, tests/test_rank_failure.py)
    sys.stderr.write(message + "\n")
    sys.stderr.flush()
    comm.Abort(1)


def _alone(comm, failed):
    """The suffix of a failure message: on which ranks the failure happened only."""
    where = f"rank {failed[0]}" if len(failed) == 1 else f"ranks {', '.join(map(str, failed))}"
    return (f" [on {where} of {comm.Get_size()} only: the other ranks did not fail with it and wait inside "
            "a collective call; aborting all ranks]")


def agree_or_abort(comm, message, limit=None, exc=None):
    """On a rank that caught a failure: return if every rank reaches this call within
    ``limit`` s (default ``timeout()``) — they failed together; otherwise print
    ``message`` + where it happened (with ``exc``'s traceback if given) and abort.
    Every rank reaching an ``exchange`` instead (they did not fail: this rank failed
    alone after the evaluation's collectives) ends the same way, however soon they
    came."""
    dup = prepare(comm)
    if dup is None:
        return
    if not _arrived(dup, timeout() if limit is None else limit):
        abort(comm, message + _alone(comm, [comm.Get_rank()]), exc)
    points = _points(dup, FAILED)
    if all(pt == FAILED for pt, _ in points):
        return
    failed = [r for r, (pt, _) in enumerate(points) if pt == FAILED]
    if comm.Get_rank() != failed[0]:
        _wait_for_abort(dup)
    abort(comm, message + _alone(comm, failed), exc)


def agree_on(comm, exc, message, limit=None, traceback=False):
    """``agree_or_abort`` once per exception ``exc`` (marked): the earliest clean-up that
    needs the other ranks (a collective close, a barrier) asks; later ones skip.
    ``traceback``: print it on abort (an unexpected exception: a bug)."""
    if getattr(exc, "_parmbs_agreed", False):
        return
    agree_or_abort(comm, message, limit, exc if traceback else None)
    try:
        exc._parmbs_agreed = True
    except AttributeError:  # pragma: no cover - an exception type without a __dict__
        pass


def exchange(comm, msg, message=None, limit=None):
    """Every rank after a computation whose failure is judged together (``parmbs
    optimize``'s trial designs): ``msg`` None on success, else this rank's failure.
    Returns the messages of every rank (allgather).  A failed rank waits at most
    ``limit`` s for the others (then prints ``message`` or ``msg`` and aborts); a rank
    that did not fail waits without limit.  A rank that meets another rank's
    ``agree_or_abort`` here (that one left the computation with an exception of its
    own) waits for that rank's abort."""
    dup = prepare(comm)
    if dup is None:
        return [msg]
    if not _arrived(dup, None if msg is None else (timeout() if limit is None else limit)):
        abort(comm, f"{message or msg} [on rank {comm.Get_rank()} of {comm.Get_size()} only, in the middle "
                    "of an evaluation: the other ranks wait inside a collective call; aborting all ranks]")
    points = _points(dup, EVALUATION, msg)
    if any(pt != EVALUATION for pt, _ in points):
        _wait_for_abort(dup)
    return [m for _, m in points]
