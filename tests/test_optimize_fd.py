"""``optimize.gradient = "fd"``: the optimizer driven by forward differences instead of the
adjoint (the FD-driven runs [Ebrahimi 2019] §6.2–6.3 compare with), on the §6.2
rigid–spring–beam optimization over 0.02 s.

The check is the forward difference's first-order convergence to the adjoint gradient
(measured errors in the test's docstring)."""
import numpy as np
import pytest

from parmbs.config import load_config
from parmbs.model.system import ModelError
from parmbs.optimize import Optimization

from conftest import CONFIGS
from gradient_checks import rel

RSB = CONFIGS / "rigid-spring-beam-opt.toml"
SHORT = ["simulation.t_end=0.02", "simulation.progress=false"]


def _opt(tmp_path, name, sets):
    return Optimization(load_config(str(RSB), SHORT + sets), tmp_path / name, out=lambda *a: None)


def test_fd_gradient_is_the_forward_difference(tmp_path):
    """The "fd" gradient converges to the adjoint at first order in the step (a forward
    difference): errors measured 1.2e-3 and 1.2e-4 at fd_step 1e-5 and 1e-6 (truncation
    ½|ψ''|h dominates; the objective over 0.02 s is ~1e-13, its noise far below)."""
    adj = _opt(tmp_path, "a.h5", [])
    rho = adj.rho0
    fa, ga = adj.evaluate(rho)
    errs = []
    for k, step in enumerate((1e-5, 1e-6)):
        ff, gf = _opt(tmp_path, f"f{k}.h5", ["optimize.gradient=fd", f"optimize.fd_step={step}"]).evaluate(rho)
        assert ff == fa                              # the base run is the same run
        errs.append(rel(gf, ga))
    print(f"adjoint {ga}; forward-difference errors {errs}")
    assert 8.0 < errs[0] / errs[1] < 12.0            # first order: h → h/10 divides the error by 10
    assert errs[1] <= 1e-3


def test_fd_driven_run_lowers_the_objective(tmp_path):
    opt = _opt(tmp_path, "r.h5", ["optimize.gradient=fd", "optimize.max_it=2"])
    code, rho = opt.run()
    h = opt.history
    print(h)
    assert h[-1, 1] < h[0, 1]
    assert np.all((rho >= opt.problem.design.lower) & (rho <= opt.problem.design.upper))


def test_fd_refuses_a_density_filter():
    with pytest.raises(ModelError, match="optimize.gradient"):
        Optimization(load_config(str(CONFIGS / "plate-pendulum.toml"),
                                 ["optimize.gradient=fd", "optimize.filter_radius=0.1", "optimize.method=mma",
                                  "simulation.progress=false"]), "/tmp/never.h5", out=lambda *a: None)
