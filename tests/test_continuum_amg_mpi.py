"""The coarse topopt-crank on the Krylov + AMG path (GMRES + GAMG for the elastic
block, flexible/continuum_amg.py) on 2 ranks equals the serial run:

    mpirun --allow-run-as-root -n 2 python -m pytest --with-mpi tests/test_continuum_amg_mpi.py

GAMG's aggregates differ between 1 and 2 ranks, so the two runs' inner solves differ;
both refine to backward error ≤ 1e-12 against the same exact matrix, so trajectory and
gradient agree to the bound test_continuum_mpi.py uses for MUMPS (1e-10).  The
refinement stops after one sweep when its measured contraction allows it
(continuum_schur.EXACT_KSP_RTOL), so a rank-dependent early stop would show here; every
exact solve of both runs is certified at backward error ≤ BACKWARD_TOL.
"""
import copy

import numpy as np
import pytest

from test_continuum import crank_data, random_density, CONFIG
from test_continuum_amg import GAMG, options


@pytest.mark.mpi(min_size=2)
def test_amg_crank_parallel_equals_serial():
    from parmbs._petsc import PETSc
    from parmbs.config.loader import validate
    from parmbs.sensitivity.problem import Problem
    data = crank_data(nx=12, ny=4, E=2e9, density=random_density(48, np.random.default_rng(5)).tolist())
    data["simulation"].update(t_end=0.1, dt=0.02)
    cfg = validate(copy.deepcopy(data), CONFIG)
    with options(GAMG):
        par, ser = Problem(cfg, comm=PETSc.COMM_WORLD), Problem(cfg, comm=PETSc.COMM_SELF)
    assert par.stepper.schur.iterative and ser.stepper.schur.iterative
    tp, ts = par.forward(), ser.forward()
    assert np.max(np.abs(tp.q - ts.q)) <= 1e-10 * np.max(np.abs(ts.q))
    gp, gs = par.adjoint()["compliance"], ser.adjoint()["compliance"]
    assert np.max(np.abs(gp - gs)) <= 1e-10 * np.max(np.abs(gs))
    from parmbs.flexible.continuum_schur import BACKWARD_TOL
    for pr in (par, ser):
        assert 0.0 < pr.stepper.schur.backward <= BACKWARD_TOL
