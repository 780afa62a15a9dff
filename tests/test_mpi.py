"""Results under `mpirun -n 2` equal serial results to round-off.

Run with `mpirun -n 2 python -m pytest --with-mpi -m mpi tests`: each rank solves the
model once with the matrices distributed over COMM_WORLD (MUMPS) and once alone on
COMM_SELF (PETSc LU), and the two must agree."""
import numpy as np
import pytest

from parmbs._petsc import PETSc
from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem

from conftest import CONFIGS


def _run(comm, name, overrides):
    pr = Problem(load_config(str(CONFIGS / f"{name}.toml"), overrides), comm=comm)
    traj = pr.forward()
    return traj, pr.objective_values(), pr.adjoint(), pr.direct()


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("name,integrator", [("fivebar", "trapezoidal"), ("fivebar", "genalpha"),
                                             ("double-pendulum", "newmark")])
def test_distributed_equals_serial(name, integrator):
    ov = ["simulation.t_end=0.1", f"simulation.integrator={integrator}"]
    tp, vp, ap, dp = _run(PETSc.COMM_WORLD, name, ov)
    ts, vs, as_, ds = _run(PETSc.COMM_SELF, name, ov)
    assert PETSc.COMM_WORLD.getSize() >= 2
    scale = np.max(np.abs(ts.q))
    assert np.max(np.abs(tp.q - ts.q)) <= 1e-12 * scale
    assert np.max(np.abs(tp.lam - ts.lam)) <= 1e-10 * max(1.0, np.max(np.abs(ts.lam)))
    for k in vs:
        assert abs(vp[k] - vs[k]) <= 1e-12 * abs(vs[k])
        g = np.max(np.abs(as_[k]))
        assert np.max(np.abs(ap[k] - as_[k])) <= 1e-10 * g, k
        assert np.max(np.abs(dp[k] - ap[k])) <= 1e-9 * g, k
