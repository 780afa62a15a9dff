"""`parmbs optimize` under mpirun -n 2 when a NON-FINITE value appears on ONE rank in the
middle of a trial's forward run (hook parmbs/faults.py, mode ``nan``: rank 1's copy of
the state after step 10 of the second evaluation): the next Newton solve is collective,
so both ranks judge the trial failed together and TAO backtracks on both, taking the
same steps as for a trial failing on every rank (``PARMBS_OPTIMIZE_FAIL``).  The evaluations
after it succeed: before SparseOperator reset its factorization after a failed solve,
MUMPS kept its error code and every later evaluation failed too (PETSc errors 76, 56)."""
import numpy as np
import pytest

from parmbs.faults import rank_fault

from test_optimize_failed_trial import FIVEBAR, TAO_SETS, run_api


@pytest.mark.mpi(min_size=2)
def test_nan_on_one_rank_mid_forward_is_a_failed_trial(tmp_path):
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    base = comm.bcast(str(tmp_path), root=0)
    extra = ["optimize.max_it=2", "simulation.t_end=0.2"]
    ref = run_api(FIVEBAR, TAO_SETS, f"{base}/ref.h5", fail=[2], extra=extra)
    saved = dict(vars(rank_fault))
    try:
        rank_fault.active, rank_fault.rank, rank_fault.phase, rank_fault.step = True, 1, "forward", 10
        rank_fault.mode, rank_fault.call, rank_fault.count = "nan", 2, 0
        rho, (x, f, g), hist, lines = run_api(FIVEBAR, TAO_SETS, f"{base}/nan.h5", extra=extra)
    finally:
        vars(rank_fault).update(saved)
    failed = [l for l in lines if l.startswith("trial failed:")]
    assert len(failed) == 1 and "evaluation 2 recorded" in failed[0], lines
    assert f[1] > 1e2 * f[0] and not np.any(g[1])
    assert np.all(np.isfinite(f)) and np.all(f[2:] < f[0])          # later evaluations work again
    # the same decisions as a trial failing on every rank: the same evaluations and
    # iterates, bit for bit — every forward run factors from a fresh analysis
    # (assembly.new_run), so the failed factorization leaves nothing behind
    assert x.shape == ref[1][0].shape and np.array_equal(x, ref[1][0]) and np.array_equal(rho, ref[0])
    assert all(np.array_equal(r, x) for r in comm.allgather(x))
