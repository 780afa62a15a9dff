"""Adaptive steps on a distributed run (parmbs/integrators/timeloop.py), under

    mpirun -n 2 python -m pytest -q --with-mpi -m mpi tests/test_adaptive_mpi.py

Every rank holds the whole state, but the LU is distributed (MUMPS), so the ranks'
numbers differ from a serial run in the last bits; the accept/reject verdict is
agreed by one allreduce per step, so both ranks take one step sequence, which matches
the serial one in count and to round-off in size.  Bounds: the distributed-run bound
of the other MPI tests (1e-10 relative, tests/test_checkpoint_mpi.py) for ψ and ∇ψ
(relative to max |∇ψ_o|; measured 2.6e-14 on the five-bar).  Step sizes: the
estimate e ≈ tol·h/T ≈ 5e-8 is a divided difference of q, so the ranks' δq ≈ 1e-15
moves it by δe/e ≈ 0.67 δq/e ≈ 1.3e-8, and h by K_I δe/e ≈ 5e-9 per step, a random
walk over ~170 steps: ≲ 6e-8; bound 1e-6, measured 6.5e-9 (2026-11), 1.4e-7 on a fresh AVX-512
machine (2026-11-27, 37 steps: the ranks' δq there is larger than the 1e-15 assumed; not measured).
The last step is not the controller's: it is clipped to land on t_end, h_N = t_end − t_(N−1), so
its difference is the sum of the others' (−Σ δh_k, exact but for round-off of t_end) and relative
to its own, possibly tiny, size means nothing (measured 3.9e-9 absolute = 6.0e-6 of an h_N of
6.6e-4): it is checked against that sum instead.
"""
import numpy as np
import pytest

import parmbs  # noqa: F401
from parmbs.config.loader import load_config
from parmbs.sensitivity.problem import Problem

from test_adaptive import ADAPT, FIVEBAR

GGL = ['simulation.integrator="trapezoidal"', 'simulation.stabilization="ggl"', 'simulation.compiled="off"']


@pytest.mark.mpi(min_size=2)
def test_distributed_adaptive_run_takes_the_serial_steps():
    from mpi4py import MPI
    from parmbs._petsc import PETSc
    comm = MPI.COMM_WORLD
    cfg = load_config(FIVEBAR, ADAPT + GGL)
    pd = Problem(cfg, comm=PETSc.COMM_WORLD)
    assert pd.stepper.op.comm.getSize() == comm.size          # the Newton matrix is distributed
    td = pd.forward()
    gd = pd.adjoint()
    ps = Problem(cfg, comm=PETSc.COMM_SELF)
    ts = ps.forward()
    gs = ps.adjoint()
    hs = comm.allgather(td.grid.h)
    assert all(np.array_equal(h, hs[0]) for h in hs)          # one step sequence on every rank
    assert td.grid.steps == ts.grid.steps and td.grid.h.max() > 3 * td.grid.h.min()
    dh = td.grid.h - ts.grid.h
    assert np.max(np.abs(dh[:-1]) / ts.grid.h[:-1]) <= 1e-6                # the controller's steps
    assert abs(dh[-1] + dh[:-1].sum()) <= 1e-15 * (1 + len(dh)) * td.grid.t[-1]   # the clipped last step
    vd, vs = pd.objective_values(), ps.objective_values()
    for o in gs:
        assert abs(vd[o] - vs[o]) <= 1e-10 * abs(vs[o]), o
        assert np.max(np.abs(gd[o] - gs[o])) <= 1e-10 * np.max(np.abs(gs[o])), o


@pytest.mark.mpi(min_size=2)
def test_distributed_quadrature_control_takes_the_serial_steps():
    """simulation.adapt.objective_atol (integrators/quad_error.py) on 2 ranks: the
    quadrature norm and Newton's cap (QuadratureError.newton_cap) join the one allreduced
    verdict, so both ranks take one step sequence, the serial one in count; ψ, ∇ψ as
    above (1e-10).  Step sizes: the quadrature estimate is a second difference of
    f = |r̈|², whose ranks' noise is δf/f ≈ 2 δq/(βh²|r̈|) ≈ 1e-9 (δq ≈ 1e-15, h ≈ 1e-3,
    |r̈| ≈ 10) — against a weight of rtol f = 1e-5 f that moves e by δe/e ≈ 1e-4 and h by
    K_I δe/e ≈ 4e-5 per step, a random walk over ~1 250 steps: ≲ 1.4e-3; bound 1e-2
    (measured 3.1e-7 over 1 255 steps; printed with -s)."""
    from mpi4py import MPI
    from parmbs._petsc import PETSc
    comm = MPI.COMM_WORLD
    short = ["simulation.t_end=0.03"]           # ~200 steps: the random walk below is shorter
    cfg = load_config(FIVEBAR, ADAPT + GGL + short + ["simulation.adapt.objective_atol=1e-8"])
    pd = Problem(cfg, comm=PETSc.COMM_WORLD)
    assert pd.quad_objectives()                                # the quadratures are in the test
    td = pd.forward()
    gd = pd.adjoint()
    ps = Problem(cfg, comm=PETSc.COMM_SELF)
    ts = ps.forward()
    gs = ps.adjoint()
    plain = Problem(load_config(FIVEBAR, ADAPT + GGL + short), comm=PETSc.COMM_SELF).forward()
    assert ts.grid.steps > plain.grid.steps                    # the quadrature test chose steps
    hs = comm.allgather(td.grid.h)
    assert all(np.array_equal(h, hs[0]) for h in hs)
    assert td.grid.steps == ts.grid.steps
    dh = float(np.max(np.abs(td.grid.h - ts.grid.h) / ts.grid.h))
    print(f"max relative step-size difference, 2 ranks vs serial: {dh:.1e} over {ts.grid.steps} steps")
    assert dh <= 1e-2
    vd, vs = pd.objective_values(), ps.objective_values()
    for o in gs:
        assert abs(vd[o] - vs[o]) <= 1e-10 * abs(vs[o]), o
        assert np.max(np.abs(gd[o] - gs[o])) <= 1e-10 * np.max(np.abs(gs[o])), o
