"""The coarse topopt-crank (FFR continuum, density field) on 2 ranks equals the serial run:

    mpirun --allow-run-as-root -n 2 python -m pytest --with-mpi tests/test_continuum_mpi.py

Matrices distributed over COMM_WORLD (MUMPS) vs the same problem on COMM_SELF: the
trajectory and the adjoint gradient over all 20 element densities to 1e-10.
"""
import copy

import numpy as np
import pytest

from test_continuum import crank_data, random_density, CONFIG


@pytest.mark.mpi(min_size=2)
def test_topopt_crank_parallel_equals_serial():
    from parmbs._petsc import PETSc
    from parmbs.config.loader import validate
    from parmbs.sensitivity.problem import Problem
    data = crank_data(E=2e9, density=random_density(20, np.random.default_rng(5)).tolist())
    data["simulation"].update(t_end=0.1, dt=0.02)
    cfg = validate(copy.deepcopy(data), CONFIG)
    par, ser = Problem(cfg, comm=PETSc.COMM_WORLD), Problem(cfg, comm=PETSc.COMM_SELF)
    tp, ts = par.forward(), ser.forward()
    assert np.max(np.abs(tp.q - ts.q)) <= 1e-10 * np.max(np.abs(ts.q))
    gp, gs = par.adjoint()["compliance"], ser.adjoint()["compliance"]
    assert np.max(np.abs(gp - gs)) <= 1e-10 * np.max(np.abs(gs))


@pytest.mark.mpi(min_size=2)
def test_block_solves_on_two_ranks_equal_column_solves():
    """MatMatSolve / MatMatSolveTranspose of the MUMPS factor distributed over 2 ranks
    (distributed right-hand sides) = the column-by-column solves."""
    from parmbs._petsc import PETSc
    from parmbs.config.loader import validate
    from parmbs.sensitivity.problem import Problem
    from test_continuum_structured import block_solves_match_columns
    data = crank_data(E=2e9, density=random_density(20, np.random.default_rng(5)).tolist())
    data["simulation"].update(t_end=0.04, dt=0.02)
    block_solves_match_columns(Problem(validate(copy.deepcopy(data), CONFIG), comm=PETSc.COMM_WORLD))
