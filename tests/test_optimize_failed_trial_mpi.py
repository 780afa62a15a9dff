"""Failed trial designs under mpirun -n 2: the evaluation fails on ONE rank only (the
``PARMBS_OPTIMIZE_FAIL`` hook armed on that rank), and both ranks still take the same
decision — TAO backtracks, MMA halves the step — with identical records and no rank
left waiting in a collective (the failure flag is gathered over the communicator)."""
import numpy as np
import pytest

from test_optimize_failed_trial import FIVEBAR, MMA_SETS, PLATE, TAO_SETS, run_api


def _run_failing_on(rank, config, sets, path, extra):
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    return run_api(config, sets, path, fail=[2] if comm.rank == rank else [], extra=extra), comm


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("case", ["tao", "mma"])
def test_failure_on_one_rank(tmp_path, case):
    from mpi4py import MPI
    base = MPI.COMM_WORLD.bcast(str(tmp_path), root=0)
    if case == "tao":
        (rho, rec, hist, lines), comm = _run_failing_on(1, FIVEBAR, TAO_SETS, f"{base}/t.h5",
                                                        ["optimize.max_it=3"])
        assert any(l.startswith("trial failed:") and "backtracking" in l for l in lines)
        assert not np.any(rec[2][1]) and rec[1][1] > 1e2 * rec[1][0]
    else:
        (rho, rec, hist, lines), comm = _run_failing_on(0, PLATE, MMA_SETS, f"{base}/m.h5",
                                                        ["optimize.max_it=3"])
        assert any(l.startswith("trial failed:") and "step halved" in l for l in lines)
    assert all(np.array_equal(r, rho) for r in comm.allgather(rho))
    assert all(np.array_equal(r, rec[0]) for r in comm.allgather(rec[0]))
