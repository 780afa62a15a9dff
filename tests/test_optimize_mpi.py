"""`parmbs optimize` under mpirun -n 2: a stopped and resumed run continues the
uninterrupted iterate sequence exactly (design Vec over both ranks, TAO on COMM_WORLD)."""
import numpy as np
import pytest

from test_optimize import run_api


@pytest.mark.mpi(min_size=2)
def test_restart_exact_under_mpi(tmp_path):
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    base = comm.bcast(str(tmp_path), root=0)          # one file for all ranks
    ref = run_api(f"{base}/ref.h5")
    run_api(f"{base}/r.h5", extra=["optimize.max_it=2"])
    got = run_api(f"{base}/r.h5", restart=True)
    assert np.array_equal(got[1], ref[1])
    assert np.array_equal(got[0], ref[0])
    # every rank holds the same result
    assert all(np.array_equal(r, ref[0]) for r in comm.allgather(ref[0]))
    assert ref[2][-1, 1] < 1e-12 * ref[2][0, 1]
