"""The 60-variable double wishbone (configs/double-wishbone-opt.toml) on 2 ranks equals
the serial run:

    mpirun -n 2 python -m pytest --with-mpi -m mpi tests/test_double_wishbone_mpi.py

5 steps of the variational integrator (MUMPS LU of the saddle matrix, distributed over
COMM_WORLD vs the same problem on COMM_SELF): the trajectory, the 17 objective values and
their adjoint gradients over the 60 design variables.  The two runs differ by the order of
the LU's floating-point operations, ~κ ε per solve with κ ≲ 1e6 (the beams' slope masses
~1e-3 beside unit constraint rows): 1e-8 relative for q, ψ and ∇(∫|d_CM|²) (measured
7.1e-15, ψ equal, 1.5e-11).  The stress constraints (stress_ks, stress_ks_time) are functions of
σ = E(|r_j − r_i|/l − 1), a difference of O(1) positions, so their gradients carry
round-off of relative size ~ε/strain, and over 5 steps the tubes' strains are only
2.2e-7 … 5.6e-6 (computed here); the solves mix the tubes, so the bound is
100 ε / (smallest strain) = 1.0e-7 for all 16 (measured 3.8e-11 … 4.5e-9 over two 2-rank runs;
MUMPS's parallel reductions make them vary from run to run; q 5.7e-15, 7.1e-15; 71 s wall at load 15)."""
import numpy as np
import pytest

from conftest import CONFIGS

EPS = np.finfo(float).eps


@pytest.mark.mpi(min_size=2)
def test_double_wishbone_parallel_equals_serial():
    from parmbs._petsc import PETSc
    from parmbs.config import load_config
    from parmbs.flexible import ancf3d
    from parmbs.sensitivity.problem import Problem
    cfg = load_config(str(CONFIGS / "double-wishbone-opt.toml"), ["simulation.t_end=0.005",
                                                                   "simulation.progress=false"])
    par, ser = Problem(cfg, comm=PETSc.COMM_WORLD), Problem(cfg, comm=PETSc.COMM_SELF)
    tp, ts = par.forward(), ser.forward()
    dq = np.max(np.abs(tp.q - ts.q)) / np.max(np.abs(ts.q))
    vp, vs = par.objective_values(), ser.objective_values()
    gp, gs = par.adjoint(), ser.adjoint()
    dg = {k: np.max(np.abs(gp[k] - gs[k])) / np.max(np.abs(gs[k])) for k in gs}
    qi, pi = ser.sys.spatial_beams.stress_layout()
    strain = np.max(np.abs([ancf3d.axial_stress(ser.sys.extend(q)[qi], ser.sys.p[pi]) for q in ts.q]), 0) \
        / ser.sys.p[pi][:, 3]
    stress_bound = 100 * EPS / np.min(strain)
    print(f"rank {PETSc.COMM_WORLD.rank}: q {dq:.1e}; strains {np.min(strain):.1e} … {np.max(strain):.1e}, "
          f"stress bound {stress_bound:.1e}; gradients " + " ".join(f"{k} {v:.1e}" for k, v in dg.items()))
    assert dq <= 1e-8
    assert dg["cm_displacement"] <= 1e-8
    for k in gs:
        assert abs(vp[k] - vs[k]) <= 1e-8 * abs(vs[k]), k
        assert np.count_nonzero(gs[k]) > 0, k
        assert dg[k] <= (1e-8 if k == "cm_displacement" else stress_bound), (k, dg[k])
