"""Distributed continuum work on 2 ranks (flexible/continuum_split.py) equals serial:

    mpirun -n 2 python -m pytest --with-mpi -m mpi tests/test_continuum_split_mpi.py

A 12 × 4 topopt-crank with a random density field on COMM_WORLD (rows of the
O(nnz) products split like F's MPIAIJ rows, ∂r/∂x of the adjoint by elements, the
gradient combined once per sweep) against the same problem on COMM_SELF: trajectory
and gradient to 1e-10; every adjoint ∂r/∂x call on a rank saw exactly that rank's
block of elements (the blocks cover the mesh once); a checkpointed adjoint interrupted
mid-sweep and resumed gives the same gradient (the accumulator in the file is the
combined one, not a rank's partial sums).
"""
import copy
import shutil
import tempfile

import numpy as np
import pytest

from test_continuum import crank_data, random_density, CONFIG

NX, NY = 12, 4


def _config():
    from parmbs.config.loader import validate
    data = crank_data(nx=NX, ny=NY, E=2e9,
                      density=random_density(NX * NY, np.random.default_rng(7)).tolist())
    # written for the trapezoidal rule (one R_p evaluation per step and element; the
    # shipped crank now runs generalized-α, whose adjoint also evaluates the old state)
    data["simulation"].update(t_end=0.08, dt=0.02, integrator="trapezoidal")
    return validate(copy.deepcopy(data), CONFIG)


@pytest.fixture(scope="module")
def serial():
    from parmbs._petsc import PETSc
    from parmbs.sensitivity.problem import Problem
    pr = Problem(_config(), comm=PETSc.COMM_SELF)
    traj = pr.forward()
    return traj.q.copy(), pr.adjoint()["compliance"]


@pytest.mark.mpi(min_size=2)
def test_split_trajectory_gradient_and_element_share(serial, monkeypatch):
    from mpi4py import MPI
    from parmbs._petsc import PETSc
    from parmbs.flexible.continuum import ContinuumInertia, ContinuumElastic
    from parmbs.flexible.continuum_split import block_range
    from parmbs.sensitivity.problem import Problem
    comm = MPI.COMM_WORLD
    qs, gs = serial
    pr = Problem(_config(), comm=PETSc.COMM_WORLD)
    split, st = pr.stepper.plan.split, pr.stepper.schur.st
    assert split.active
    # the numpy row block is F's MPIAIJ row block
    assert (st.rows.r0, st.rows.r1) == (pr.stepper.schur.fr0, pr.stepper.schur.fr1)
    assert 0 < st.rows.r1 - st.rows.r0 < st.nf
    ngather = st.rows.ngather
    traj = pr.forward()
    assert st.rows.ngather > ngather                      # the products were gathered, not replicated
    assert np.max(np.abs(traj.q - qs)) <= 1e-10 * np.max(np.abs(qs))

    seen = []
    for cls in (ContinuumInertia, ContinuumElastic):
        inner = cls.r_p

        def spy(self, t, q, v, a, p, cols=None, _inner=inner):
            seen.append((type(self).__name__, self.ne, q.shape[0]))
            return _inner(self, t, q, v, a, p, cols)
        monkeypatch.setattr(cls, "r_p", spy)
    mine = split.own_cols.copy()
    g = pr.adjoint()["compliance"]
    monkeypatch.undo()
    assert np.max(np.abs(g - gs)) <= 1e-10 * np.max(np.abs(gs))
    # the stepper's adjoint steps (4) and the initial-state adjoint (1) evaluated this
    # rank's block of every continuum group
    steps = [s for s in seen if s[2] != s[1]]
    e0, e1 = block_range(NX * NY, comm.size, comm.rank)
    assert len(steps) == 2 * (4 + 1) and all(s[2] == e1 - e0 for s in steps)
    assert sum(comm.allgather(e1 - e0)) == NX * NY
    own = comm.allgather(np.nonzero(mine)[0])
    assert sorted(np.concatenate(own).tolist()) == list(range(NX * NY))   # each column owned once


@pytest.mark.mpi(min_size=2)
def test_split_checkpointed_adjoint_restart(serial, monkeypatch):
    from mpi4py import MPI
    from parmbs._petsc import PETSc
    from parmbs.checkpoint import SimulatedKill
    from parmbs.sensitivity.problem import Problem
    comm = MPI.COMM_WORLD
    _, gs = serial
    d = comm.bcast(tempfile.mkdtemp(prefix="parmbs-split-") if comm.rank == 0 else None, root=0)
    path = f"{d}/run.h5"
    try:
        monkeypatch.setenv("PARMBS_TEST_FAULTS", "1")             # arms the hook (parmbs/faults.py)
        monkeypatch.setenv("PARMBS_CHECKPOINT_KILL", "raise:adjoint:2")
        pr = Problem(_config(), comm=PETSc.COMM_WORLD)
        pr.use_checkpoint(path, comm=comm, interval=0)
        pr.forward()
        with pytest.raises(SimulatedKill):
            pr.adjoint()
        pr.checkpoint.store.close()
        monkeypatch.delenv("PARMBS_CHECKPOINT_KILL")
        comm.Barrier()
        pr = Problem(_config(), comm=PETSc.COMM_WORLD)
        run = pr.use_checkpoint(path, comm=comm, interval=0)
        g = pr.adjoint()["compliance"]
        assert run.adjoint_steps == 3       # resumed: the kill came before the 2nd step's save
        run.store.close()
        assert np.max(np.abs(g - gs)) <= 1e-10 * np.max(np.abs(gs))
    finally:
        comm.Barrier()
        if comm.rank == 0:
            shutil.rmtree(d, ignore_errors=True)


@pytest.mark.mpi(min_size=2)
def test_gradient_field_written_in_parallel(monkeypatch):
    """write_gradient: rank 0 creates the field datasets, every rank writes its block in
    one collective mpio write; the file reads back whole (scalars by rank 0 as before)."""
    import h5py
    from mpi4py import MPI
    from parmbs.io import hdf5
    comm = MPI.COMM_WORLD
    if not h5py.get_config().mpi:
        pytest.skip("h5py without MPI (Debian picks its MPI build only under mpirun)")
    d = comm.bcast(tempfile.mkdtemp(prefix="parmbs-h5-") if comm.rank == 0 else None, root=0)
    path = f"{d}/g.h5"
    n = 1001
    names = ["L"] + [f"x[{i}]" for i in range(n)]
    g = np.r_[2.5, np.sin(np.arange(n))]
    design = np.r_[0.3, np.linspace(0.1, 1.0, n)]
    calls = []
    inner = hdf5._write_fields_parallel
    monkeypatch.setattr(hdf5, "_write_fields_parallel", lambda *a: calls.append(1) or inner(*a))
    try:
        hdf5.write_gradient(path, {"psi": g}, names, comm=comm, fields={"x": slice(1, n + 1)}, design=design)
        assert calls == [1]
        comm.Barrier()
        if comm.rank == 0:
            with h5py.File(path, "r") as f:
                assert np.array_equal(f["gradient/psi/x"][...], g[1:])
                assert np.array_equal(f["design/x"][...], design[1:])
                assert f["gradient/psi/L"][()] == 2.5
    finally:
        comm.Barrier()
        if comm.rank == 0:
            shutil.rmtree(d, ignore_errors=True)
