"""``optimize.scaling = "bounds"``: TAO works in x = (ρ − lower)/(upper − lower)
(parmbs/optimize/driver.py).  On the five-bar (ψ1 over its five design variables, the
setting of tests/test_optimize.py) with a box around ρ⁰ whose widths differ by 10⁴:
the run starts at ρ⁰, stays in the box, lowers ψ, and the gradient TAO sees at ρ⁰ is
∇ψ ⊙ (upper − lower) (its norm in the history row of iteration 0, ρ⁰ interior);
unbounded variables are refused with one line naming the key."""
import h5py
import numpy as np

from parmbs.config import load_config
from parmbs.optimize import Optimization

from conftest import CONFIGS, record_file
from gradient_checks import cli_one_line_error

FIVEBAR = CONFIGS / "fivebar.toml"
SETS = ["simulation.t_end=0.5", "simulation.dt=1e-2", "optimize.objective=psi1",
        "optimize.max_it=3", "simulation.progress=false"]
#: half-widths of the box around ρ⁰ (the five-bar's Ls1, Ls2, m_A1, xG_A1, L_A1)
HALF = {"Ls1": 0.2, "Ls2": 0.2, "m_A1": 2e-5, "xG_A1": 0.2, "L_A1": 0.2}


def _box(rho0, names):
    return [f"design.{n}.{k}={v!r}" for n, r in zip(names, rho0)
            for k, v in (("lower", r - HALF[n]), ("upper", r + HALF[n]))]


def test_bounds_scaling_converges_inside_the_box(tmp_path):
    cfg = load_config(str(FIVEBAR), SETS)
    probe = Optimization(cfg, tmp_path / "probe.h5", out=lambda *a: None)
    rho0, names = probe.rho0.copy(), list(probe.problem.design.names)
    box = _box(rho0, names)
    opt = Optimization(load_config(str(FIVEBAR), SETS + box + ["optimize.scaling=bounds"]), tmp_path / "b.h5",
                       out=lambda *a: None)
    lo, hi = opt.problem.design.lower, opt.problem.design.upper
    code, rho = opt.run()
    with h5py.File(record_file(tmp_path / "b.h5"), "r") as f:
        x = f["optimize/x"][:f["optimize"].attrs["evaluations"]]
        g0 = f["optimize/g"][0]
    hist = opt.history
    # x₀ = (ρ⁰ − lo)/w, back to lo + x₀ w: ρ⁰ up to two roundings of numbers of size |ρ⁰|
    assert np.all(np.abs(x[0] - rho0) <= 4 * np.finfo(float).eps * np.maximum(np.abs(rho0), hi - lo))
    assert np.all(x >= lo) and np.all(x <= hi)
    print(f"psi {hist[0, 1]:.3e} -> {hist[-1, 1]:.3e} in {int(hist[-1, 0])} iterations, {len(x)} evaluations")
    assert code == 0 and hist[-1, 1] < 0.5 * hist[0, 1]
    # TAO's |g| at iteration 0 (no bound active at ρ⁰): the 2-norm of the scaled gradient,
    # the same five products and sum up to a few roundings
    assert abs(hist[0, 2] - np.linalg.norm(g0 * (hi - lo))) <= 1e-14 * hist[0, 2]


def test_bounds_scaling_needs_finite_bounds(tmp_path):
    cli_one_line_error(["optimize", FIVEBAR, "-o", tmp_path / "a.h5", *[a for s in SETS for a in ("--set", s)],
                        "--set", "optimize.scaling=bounds"], tmp_path, "optimize.scaling", "Ls1")
