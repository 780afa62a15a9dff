"""The spatial double pendulum on 2 ranks equals the serial run:

    mpirun --allow-run-as-root -n 2 python -m pytest --with-mpi tests/test_spatial_mpi.py

Forward trajectory, adjoint and direct gradients (mass, inertia, a point coordinate)
with the matrices distributed over COMM_WORLD (MUMPS) vs the same problem on COMM_SELF
(PETSc's LU in natural order, regularised Euler-parameter mass block), to 1e-10; and
``parmbs gradient --groups 2`` (one design variable batch per rank) equals serial.
"""
import numpy as np
import pytest

from conftest import CONFIGS

SETS = ["simulation.t_end=0.03", "simulation.dt=3e-3", "simulation.progress=false"]


@pytest.mark.mpi(min_size=2)
def test_spatial_double_pendulum_parallel_equals_serial():
    from parmbs._petsc import PETSc
    from parmbs.config import load_config
    from parmbs.sensitivity.problem import Problem
    # both on PETSc: the distributed run has no compiled step (compiled.runtime_why_not),
    # and a compiled serial run differs from the numpy path by the index-3 amplification of
    # tests/test_compiled_spatial.py's bounds (λ 1.7e-10 relative here), not by round-off
    cfg = load_config(str(CONFIGS / "spatial-double-pendulum.toml"), SETS + ["simulation.compiled=off"])
    par, ser = Problem(cfg, comm=PETSc.COMM_WORLD), Problem(cfg, comm=PETSc.COMM_SELF)
    assert par.stepper.compiled is None and ser.stepper.compiled is None
    tp, ts = par.forward(), ser.forward()
    assert np.max(np.abs(tp.q - ts.q)) <= 1e-10 * np.max(np.abs(ts.q))
    assert np.max(np.abs(tp.lam - ts.lam)) <= 1e-10 * np.max(np.abs(ts.lam))
    for gp, gs in ((par.adjoint(), ser.adjoint()), (par.direct(), ser.direct())):
        for k in gs:
            assert np.max(np.abs(gp[k] - gs[k])) <= 1e-10 * np.max(np.abs(gs[k])), k


@pytest.mark.mpi(min_size=2)
def test_spatial_gradient_groups_equal_serial(tmp_path):
    import json
    from mpi4py import MPI
    from parmbs.cli import main
    from parmbs.config import load_config
    from parmbs.sensitivity.problem import Problem
    cfg_file = str(CONFIGS / "spatial-double-pendulum.toml")
    out = tmp_path / "g.json" if MPI.COMM_WORLD.rank == 0 else None
    out = MPI.COMM_WORLD.bcast(str(out) if out else None, root=0)
    sets = sum((["--set", s] for s in SETS), [])
    assert main(["gradient", cfg_file, "--method", "direct", "--groups", "2", "--json", out] + sets) == 0
    from parmbs._petsc import PETSc
    ser = Problem(load_config(cfg_file, SETS), comm=PETSc.COMM_SELF)
    ser.forward()
    gs = ser.direct()
    grad = json.load(open(out))["objectives"]["elbow_load"]["gradient"]
    names = ser.design.names
    got = np.array([grad[n] for n in names])
    assert np.max(np.abs(got - gs["elbow_load"])) <= 1e-10 * np.max(np.abs(gs["elbow_load"]))
    MPI.COMM_WORLD.Barrier()
