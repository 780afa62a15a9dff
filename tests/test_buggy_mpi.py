"""The buggy's gradient on 2 ranks equals the serial one (batch over design variables):

    mpirun --allow-run-as-root -n 2 python -m pytest -q --with-mpi -m mpi tests/test_buggy_mpi.py

Step descent on the short horizon of tests/test_buggy.py (front wheels on the step's
edge).  One rank per group: the five design columns k_f, c_f, k_r, c_r, m_c are split
3 + 2 (sensitivity/batch.py), each group factors its matrices as the serial run does,
so the direct gradient equals the serial one to round-off (≤ 1e-12 asserted) and the
serial adjoint to ≤ 1e-8.  Every rank also computes the serial reference on COMM_SELF.
"""
import numpy as np
import pytest

from conftest import CONFIGS

STEP = str(CONFIGS / "buggy-step-descent.toml")
EDGE = ["spatial.road.x0=-0.52", "simulation.t_end=0.012", "simulation.progress=false"]


@pytest.mark.mpi(min_size=2)
def test_buggy_batch_gradient_equals_serial():
    from mpi4py import MPI
    from parmbs import parallel
    from parmbs._petsc import PETSc
    from parmbs.config import load_config
    from parmbs.sensitivity.batch import batch_gradient
    from parmbs.sensitivity.problem import Problem
    cfg = load_config(STEP, EDGE)
    pr = Problem(cfg, comm=PETSc.COMM_SELF)
    pr.forward()
    ref_dir, ref_adj = pr.direct()["chassis_vertical_acc"], pr.adjoint()["chassis_vertical_acc"]
    lay = parallel.make_layout(MPI.COMM_WORLD.size)
    res = batch_gradient(cfg, "direct", lay)
    g = np.array(res.total_gradients["chassis_vertical_acc"])
    value = float(res.total_values["chassis_vertical_acc"])
    res.destroy()
    lay.free()
    scale = np.max(np.abs(ref_dir))
    assert np.max(np.abs(g - ref_dir)) <= 1e-12 * scale
    assert np.max(np.abs(g - ref_adj) / np.abs(ref_adj)) <= 1e-8
    psi = pr.objective_values()["chassis_vertical_acc"]
    assert abs(value - psi) <= 1e-12 * psi
