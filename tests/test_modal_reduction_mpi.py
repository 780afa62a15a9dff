"""The modally reduced crank (continua.crank.reduction, parmbs/flexible/modal.py) on 2
ranks equals the serial run:

    mpirun -n 2 python -m pytest -q --with-mpi -m mpi tests/test_modal_reduction_mpi.py

The 8 × 3 crank of tests/test_modal_reduction.py with K = 6 eigenmodes + the pin's two
attachment modes.  The same Problem on COMM_WORLD (the reduced system's matrices
distributed, MUMPS) and on COMM_SELF: trajectory, ψ and the adjoint gradient over the
24 densities (through the reduction's eigen-adjoint, computed on every rank from the
same replicated data).  The basis is computed identically on every rank (scipy on the
replicated densities): its bytes are asserted equal.  The two runs then differ only
in the order of the reduced LU's sums (MUMPS on 1 vs 2 ranks): ε ≈ 1e-16 times the
Newton matrix's condition (≲ 1e4 at dt = 0.02) per step, over 10 steps, ≲ 1e-11;
measured q 1.6e-16, ψ 9.9e-15, ∇ψ 6.9e-14.  Bound 1e-10 (the full-order crank's in
tests/test_continuum_mpi.py).
"""
import copy

import numpy as np
import pytest

from test_modal_reduction import crank
from test_continuum import CONFIG


@pytest.mark.mpi(min_size=2)
def test_reduced_crank_parallel_equals_serial():
    from mpi4py import MPI
    from parmbs._petsc import PETSc
    from parmbs.config.loader import validate
    from parmbs.sensitivity.problem import Problem
    cfg = validate(copy.deepcopy(crank(K=6, attachment=True)), CONFIG)
    par, ser = Problem(cfg, comm=PETSc.COMM_WORLD), Problem(cfg, comm=PETSc.COMM_SELF)
    V = par.sys.continua.reductions()[0].state(par.sys.p)["V"]
    Vs = MPI.COMM_WORLD.allgather(V.tobytes())
    assert all(v == Vs[0] for v in Vs)                    # the same basis bytes on every rank
    tp, ts = par.forward(), ser.forward()
    e_q = np.max(np.abs(tp.q - ts.q)) / np.max(np.abs(ts.q))
    psi_p, psi_s = par.objective_values()["compliance"], ser.objective_values()["compliance"]
    gp, gs = par.adjoint()["compliance"], ser.adjoint()["compliance"]
    e_g = np.max(np.abs(gp - gs)) / np.max(np.abs(gs))
    print(f"2 ranks vs serial: q {e_q:.1e}, ψ {abs(psi_p - psi_s) / psi_s:.1e}, ∇ψ {e_g:.1e}")
    assert e_q <= 1e-10 and abs(psi_p - psi_s) <= 1e-10 * psi_s and e_g <= 1e-10
    # every rank holds the whole gradient, and the same one
    G = MPI.COMM_WORLD.allgather(gp.tobytes())
    assert all(g == G[0] for g in G)


@pytest.mark.mpi(min_size=2)
def test_distributed_kff_factor_equals_superlu(monkeypatch):
    """modal_factor.py: above MUMPS_MIN_DOFS (10⁶ free dofs) K_ff is factored by one MUMPS
    Cholesky over the ranks instead of a SuperLU LU on every rank.  Forced here (threshold
    0) on the 8 × 3 crank, with the large-body path forced too (DENSE_MAX = 0: ARPACK on
    the factor, the deflated CGs): a solve, the eigenvalues, the body data D and the
    chain ρ̄ = vjp equal those of SuperLU on the same basis path to the two
    factorizations' backward errors: relative ≲ ε·cond(K_ff) per solve (cond from the
    dense matrix), bound 100 ε cond; every rank gets the same bytes (the replicated
    reduction stays in lockstep).  Measured: solve 5.0e-13, λ 2.0e-15, D 7.0e-13, vjp
    2.0e-12 against ε cond = 5.3e-11."""
    from mpi4py import MPI
    from parmbs._petsc import PETSc
    from parmbs.config.loader import validate
    from parmbs.flexible import modal, modal_factor
    from parmbs.sensitivity.problem import Problem
    monkeypatch.setattr(modal, "DENSE_MAX", 0)
    cfg = validate(copy.deepcopy(crank(K=6, attachment=True)), CONFIG)
    pr = Problem(cfg, comm=PETSc.COMM_SELF)
    red = pr.sys.continua.reductions()[0]
    p0 = pr.sys.p.copy()
    Db = np.random.default_rng(4).uniform(-1, 1, len(red.data_index))
    red._cache = None
    st = red.state(p0)
    assert not isinstance(st["Kfac"], modal_factor.MumpsCholesky)
    B = np.random.default_rng(5).standard_normal((red.nf, 3))
    ref = (st["Kfac"].solve(B), st["lam"], red.data(p0), red.vjp(p0, Db))
    monkeypatch.setattr(modal_factor, "MUMPS_MIN_DOFS", 0)
    red._cache = None
    st = red.state(p0)
    assert isinstance(st["Kfac"], modal_factor.MumpsCholesky) and MPI.COMM_WORLD.size > 1
    got = (st["Kfac"].solve(B), st["lam"], red.data(p0), red.vjp(p0, Db))
    red._cache = None
    cond = np.linalg.cond(st["Kf"].toarray())
    eps = np.finfo(float).eps
    for name, a, b in zip(("solve", "λ", "D", "vjp"), ref, got):
        e = np.max(np.abs(a - b)) / np.max(np.abs(a))
        print(f"MUMPS Cholesky on {MPI.COMM_WORLD.size} ranks vs SuperLU: {name} {e:.1e} (ε cond {eps * cond:.1e})")
        assert e <= 100 * eps * cond, name
        same = MPI.COMM_WORLD.allgather(b.tobytes())
        assert all(s == same[0] for s in same), name
