"""The redundant parallelogram (configs/parallelogram.toml, one row dropped at set-up)
under `mpirun -n 2` equals its serial run
(`mpirun -n 2 python -m pytest --with-mpi -m mpi tests/test_redundancy_mpi.py`): the
Newton and initial matrices of the reduced model distributed over COMM_WORLD (MUMPS)
against each rank alone on COMM_SELF (PETSc LU)."""
import numpy as np
import pytest

from parmbs._petsc import PETSc
from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem

from conftest import CONFIGS


def _run(comm, integrator):
    ov = ["simulation.t_end=0.1", "simulation.dt=0.01", f"simulation.integrator={integrator}"]
    pr = Problem(load_config(str(CONFIGS / "parallelogram.toml"), ov), comm=comm)
    assert pr.sys.redundancy.dropped_names == ["KC3[1]"]
    traj = pr.forward()
    return traj, pr.objective_values(), pr.adjoint(), pr.direct()


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("integrator", ["trapezoidal", "genalpha"])
def test_redundant_parallelogram_distributed_equals_serial(integrator):
    tp, vp, ap, dp = _run(PETSc.COMM_WORLD, integrator)
    ts, vs, as_, ds = _run(PETSc.COMM_SELF, integrator)
    assert PETSc.COMM_WORLD.getSize() >= 2
    for a, b in ((tp.q, ts.q), (tp.v, ts.v), (tp.a, ts.a), (tp.lam, ts.lam)):
        assert np.max(np.abs(a - b)) <= 1e-9 * max(np.max(np.abs(b)), 1.0)
    for k in vs:
        assert abs(vp[k] - vs[k]) <= 1e-12 * abs(vs[k])
        g = np.max(np.abs(as_[k]))
        assert np.max(np.abs(ap[k] - as_[k])) <= 1e-10 * g, k
        assert np.max(np.abs(dp[k] - ap[k])) <= 1e-9 * g, k
