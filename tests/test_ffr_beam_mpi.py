"""The flexible slider-crank (FFR beams) on 2 ranks equals the serial run:

    mpirun --allow-run-as-root -n 2 python -m pytest --with-mpi tests/test_ffr_beam_mpi.py

Forward trajectory and adjoint gradients of all six outputs (θ_C, x_S, node A elastic
coordinates, KS stress) over h_C, w_C, h_R, w_R, distributed over COMM_WORLD vs the
same problem on COMM_SELF, to 1e-10.
"""
import numpy as np
import pytest

from conftest import CONFIGS


@pytest.mark.mpi(min_size=2)
def test_slider_crank_flex_parallel_equals_serial():
    from parmbs._petsc import PETSc
    from parmbs.config import load_config
    from parmbs.sensitivity.problem import Problem
    cfg = load_config(str(CONFIGS / "slider-crank-flex.toml"), ["simulation.t_end=0.0003", "simulation.dt=1e-4", "simulation.progress=false"])
    par, ser = Problem(cfg, comm=PETSc.COMM_WORLD), Problem(cfg, comm=PETSc.COMM_SELF)
    tp, ts = par.forward(), ser.forward()
    assert np.max(np.abs(tp.q - ts.q)) <= 1e-10 * np.max(np.abs(ts.q))
    gp, gs = par.adjoint(), ser.adjoint()
    for k in gs:
        assert np.max(np.abs(gp[k] - gs[k])) <= 1e-10 * np.max(np.abs(gs[k])), k
