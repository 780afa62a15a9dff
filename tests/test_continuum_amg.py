"""The Krylov + AMG solve of the continuum Schur solver's elastic block
(flexible/continuum_amg.py, selected by -parmbs_schur_ksp_type gmres
-parmbs_schur_pc_type gamg): exact solves, the MUMPS path's trajectory and gradient,
and a refusal when the inner solve is too weak."""
import contextlib

import numpy as np
import pytest

from parmbs._petsc import PETSc
from test_continuum_structured import assert_same_run, crank_data, problem, random_state, spinning_matrices

GAMG = {"parmbs_schur_ksp_type": "gmres", "parmbs_schur_pc_type": "gamg", "parmbs_schur_ksp_rtol": "1e-6"}


@contextlib.contextmanager
def options(values):
    opts = PETSc.Options()
    for k, v in values.items():
        opts.setValue(k, v)
    try:
        yield
    finally:
        for k in values:
            opts.delValue(k)


def test_amg_solve_is_exact_forward_and_transposed():
    """J z = r and Jᵀ z = r with GMRES + GAMG inside the refinement: backward error at
    most BACKWARD_TOL (1e-12, the acceptance test), and z the dense LU solve's to
    2 κ∞(J) (η + n u): both are backward-stable solutions, each off by ≤ κ (its backward
    error), LU's ≤ n u (Higham Thm 7.2, 9.5).  Measured: κ∞ ≈ 1e5, η ~ 1e-17, so the bound
    is ≈ 3e-9 and the difference ≈ 1e-13."""
    from parmbs.flexible.continuum_schur import BACKWARD_TOL
    with options(GAMG):
        pr = problem(crank_data(), schur=True)
    sch, sys = pr.stepper.schur, pr.sys
    assert sch.iterative and sch.ksp.getPC().getType() == "gamg"
    assert sch.F.getNearNullSpace().getVecs()           # the rigid modes are attached
    rng = np.random.default_rng(2)
    n, m = sys.n, sys.m
    for _ in spinning_matrices(pr, 2, rng):
        for tr in (False, True):
            r = rng.standard_normal(n + m)
            z = sch.solve(r, transpose=tr)
            Jz = sch.matvec(z, tr)
            eta = np.max(np.abs(Jz - r)) / (sch._norm() * np.max(np.abs(z)) + np.max(np.abs(r)))
            assert eta <= BACKWARD_TOL
            E = np.eye(n + m)
            Jm = np.column_stack([sch.matvec(E[:, j], tr) for j in range(n + m)])
            zd = np.linalg.solve(Jm, r)
            bound = 2 * np.linalg.cond(Jm, np.inf) * (eta + (n + m) * np.finfo(float).eps / 2)
            assert np.max(np.abs(z - zd)) <= bound * np.max(np.abs(zd))
    assert sch.nkspit > 0 and sch.backward <= BACKWARD_TOL


def test_amg_path_gives_the_mumps_path_trajectory_and_gradient():
    """Same discrete model, two exact linear solvers: the trajectory and the adjoint
    gradient agree to the bounds test_continuum_structured uses for Schur vs LU (1e-10,
    1e-8), and on the AMG path adjoint = direct ≤ 1e-9.  Estimate: per solve the two
    paths differ by ≤ κ∞(J)(η + n u) ≈ 1e5 · 1.3e-14 ≈ 1e-9 (the test above), over the
    5 steps' Newton and adjoint solves ≲ 1e-8 worst case; measured 7e-14 (gradients),
    2e-16 (trajectory), adjoint − direct 7e-14 (MUMPS path: 1e-13)."""
    data = crank_data(nx=10, ny=4)
    data["simulation"]["integrator"] = "genalpha"
    mumps = problem(data, schur=True)
    with options(GAMG):
        amg = problem(data, schur=True)
    assert amg.stepper.schur.iterative and not mumps.stepper.schur.iterative
    assert_same_run(mumps, amg)


def test_a_too_weak_inner_solve_is_refused_not_returned():
    """One unpreconditioned GMRES iteration per F-solve cannot make the refinement
    converge: the solve raises (backward-error test) instead of returning z."""
    weak = {"parmbs_schur_ksp_type": "gmres", "parmbs_schur_pc_type": "none",
            "parmbs_schur_ksp_max_it": "1", "parmbs_schur_ksp_converged_maxits": "true"}
    with options(weak):
        pr = problem(crank_data(), schur=True)
    st, sch, sys = pr.stepper, pr.stepper.schur, pr.sys
    rng = np.random.default_rng(4)
    q, v, a = random_state(sys, rng)
    st._set_matrix(st._eval(0.0, (q, v, a, rng.standard_normal(sys.m)), sys.p))
    with pytest.raises(np.linalg.LinAlgError, match="backward error"):
        sch.solve(rng.standard_normal(sys.n + sys.m))
