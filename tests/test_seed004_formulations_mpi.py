"""Index-1 and Maggi under `mpirun -n 2`: the matrices distributed over COMM_WORLD
(MUMPS) give the serial (COMM_SELF) trajectory and gradients to round-off."""
import numpy as np
import pytest

from parmbs._petsc import PETSc
from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem

from conftest import CONFIGS


def _run(comm, formulation):
    ov = ["simulation.t_end=0.05", "simulation.dt=1e-2", f"simulation.formulation={formulation}",
          "simulation.integrator=trapezoidal"]
    pr = Problem(load_config(str(CONFIGS / "fivebar.toml"), ov), comm=comm)
    traj = pr.forward()
    return traj, pr.adjoint(), pr.direct()


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("formulation", ["index1", "maggi"])
def test_distributed_equals_serial(formulation):
    tp, ap, dp = _run(PETSc.COMM_WORLD, formulation)
    ts, as_, ds = _run(PETSc.COMM_SELF, formulation)
    assert PETSc.COMM_WORLD.getSize() >= 2
    # a and λ are Newton unknowns converged on the position update h²/4 |Δa| ≤ 1e-12(1 + |q|):
    # two solvers may stop at iterates that differ by up to that / (h²/4)
    assert np.max(np.abs(tp.q - ts.q)) <= 1e-11 * np.max(np.abs(ts.q))
    assert np.max(np.abs(tp.lam - ts.lam)) <= 1e-7 * np.max(np.abs(ts.lam))
    for k in as_:
        g = np.max(np.abs(as_[k]))
        assert np.max(np.abs(ap[k] - as_[k])) <= 1e-9 * g, k
        assert np.max(np.abs(dp[k] - ap[k])) <= 1e-9 * g, k
