"""The decisions of parmbs/agreement.py after its barrier, on a stand-in communicator
(serial, no MPI): which rank aborts, which waits, which goes on — for every combination
of agreement points the ranks can meet at.  The barrier tells only that every rank
reached SOME agreement point; a rank that left `parmbs optimize` with an exception of its
own (``agree_or_abort``) and ranks at an evaluation's ``exchange`` must not take each
other for "failed together" (the hang of tests/test_rank_failure.py's ``evaluation``
case, which this reproduces without mpirun)."""
import pytest

from parmbs import agreement


class _Abort(Exception):
    pass


class _Waits(Exception):
    pass


class _Req:
    def Test(self):
        return True

    def Wait(self):
        return None


class _Dup:
    """The private duplicate as rank ``rank`` sees it: the barrier completes at once, the
    allgather answers ``others`` with this rank's own entry put in."""

    def __init__(self, rank, others):
        self.rank, self.others = rank, others

    def Ibarrier(self):
        return _Req()

    def allgather(self, mine):
        got = list(self.others)
        got[self.rank] = mine
        return got

    def Barrier(self):
        raise _Waits()


class _Comm:
    def __init__(self, rank, size):
        self.rank, self.size = rank, size

    def Get_rank(self):
        return self.rank

    def Get_size(self):
        return self.size

    def py2f(self):
        return ("fake", self.rank, self.size)

    def Abort(self, code):
        raise _Abort(code)


@pytest.fixture
def world(monkeypatch):
    """(comm, dup) of rank ``rank`` whose peers answer ``others``."""
    def make(rank, others):
        comm, dup = _Comm(rank, len(others)), _Dup(rank, others)
        monkeypatch.setitem(agreement._dups, comm.py2f(), dup)
        return comm
    return make


F, E = (agreement.FAILED, None), (agreement.EVALUATION, None)


def test_failed_together_goes_on(world, capsys):
    agreement.agree_or_abort(world(1, [F, F, F]), "parmbs: error: x")
    assert capsys.readouterr().err == ""


def test_a_failure_meeting_an_exchange_aborts_at_once(world, capsys):
    """Rank 1 failed after the evaluation's collectives; rank 0 is at the exchange."""
    with pytest.raises(_Abort):
        agreement.agree_or_abort(world(1, [E, F]), "parmbs: error: x", limit=600)
    assert capsys.readouterr().err == ("parmbs: error: x [on rank 1 of 2 only: the other ranks did not fail "
                                       "with it and wait inside a collective call; aborting all ranks]\n")


def test_the_exchange_waits_for_that_abort(world, capsys):
    with pytest.raises(_Waits):
        agreement.exchange(world(0, [E, F]), None)
    with pytest.raises(_Waits):         # a failed trial of its own too: the other rank's abort ends it
        agreement.exchange(world(0, [(agreement.EVALUATION, "Newton failed"), F]), "Newton failed")
    assert capsys.readouterr().err == ""


def test_several_failed_ranks_one_message(world, capsys):
    """Ranks 1 and 2 of 3 failed, rank 0 did not: rank 1 alone prints and aborts."""
    with pytest.raises(_Abort):
        agreement.agree_or_abort(world(1, [E, F, F]), "parmbs: error: x")
    assert "[on ranks 1, 2 of 3 only:" in capsys.readouterr().err
    with pytest.raises(_Waits):
        agreement.agree_or_abort(world(2, [E, F, F]), "parmbs: error: x")
    assert capsys.readouterr().err == ""


def test_exchange_returns_every_rank_s_message(world):
    assert agreement.exchange(world(1, [(agreement.EVALUATION, "bad"), E]), None) == ["bad", None]
