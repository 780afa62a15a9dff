"""Spatial rigid bodies (parmbs/spatial): forward dynamics of the shipped spatial models —
constraints (joints and pᵀp = 1) at every step, energy of undamped models, initial
conditions."""
import numpy as np
import pytest

from parmbs.config import load_config
from parmbs.model.evaluation import StateEval
from parmbs.sensitivity.problem import Problem, physical

from conftest import CONFIGS


def run(name, overrides):
    pr = Problem(load_config(str(CONFIGS / f"{name}.toml"), overrides))
    return pr, pr.forward()


def state(pr, tr, k):
    """StateEval of step k: tr.x(k) is the stepper's state, (q, v, a, λ) and its trailing
    blocks (the Arnold–Brüls pseudo-acceleration: sensitivity/problem.state_blocks)."""
    return StateEval(pr.sys, tr.t[k], *physical(tr.x(k)), pr.sys.p)


def energy(pr, tr):
    return np.array([state(pr, tr, k).energy() for k in range(tr.steps + 1)])


#: the file's former GGL setting (trapezoidal and Chung–Hulbert generalized-α) and the
#: Arnold–Brüls form it ships
SCHEMES = {"trapezoidal": ["simulation.integrator=trapezoidal", "simulation.stabilization=ggl"],
           "genalpha": ["simulation.integrator=genalpha", "simulation.genalpha_form=chung-hulbert",
                        "simulation.stabilization=ggl"],
           "arnold-bruls": []}


@pytest.mark.parametrize("integrator", sorted(SCHEMES))
def test_double_pendulum_constraints_and_energy(integrator):
    """0.1 s at dt = 2e-3: every constraint row (joints and normalisation) ≤ 1e-10 at every
    step, energy conserved to 1e-5 relative (undamped)."""
    pr, tr = run("spatial-double-pendulum", ["simulation.t_end=0.1", "simulation.dt=2e-3", *SCHEMES[integrator]])
    viol = max(np.max(np.abs(state(pr, tr, k).phi())) for k in range(tr.steps + 1))
    E = energy(pr, tr)
    drift = np.max(np.abs(E - E[0])) / abs(E[0])
    print(f"{integrator}: max |Φ| = {viol:.2e}, relative energy drift {drift:.2e}")
    assert viol <= 1e-10
    assert drift <= 1e-5


def test_plot_spatial_trajectory(tmp_path):
    """``parmbs simulate --plot`` and ``parmbs plot`` of a spatial model: the energy panel
    sums SpatialInertia + SpatialGravity energies over all rows (io/plot.energy, which
    checks itself against StateEval.energy at the ends), paths and rotation angles."""
    from parmbs.cli import main
    from parmbs.io.hdf5 import read_trajectory
    from parmbs.io.plot import energy
    from parmbs.spatial.outputs import point_paths, rotation_angles
    h5, png = tmp_path / "dp.h5", tmp_path / "dp.png"
    cfg = str(CONFIGS / "spatial-double-pendulum.toml")
    assert main(["simulate", cfg, "--set", "simulation.t_end=0.02", "-o", str(h5), "--plot", str(png)]) == 0
    assert png.stat().st_size > 10_000
    assert main(["plot", str(h5), "-o", str(tmp_path / "again.png")]) == 0
    d = read_trajectory(h5)
    import h5py
    from parmbs.io.hdf5 import get_names
    with h5py.File(h5, "r") as fh:
        names = get_names(fh["trajectory/q"], "coordinates")
    assert names == [f"{b}.{c}" for b in ("upper", "lower") for c in ("x", "y", "z", "e0", "e1", "e2", "e3")]
    pr = Problem(load_config(cfg, ["simulation.t_end=0.02"]))
    E = energy(pr.sys, d.q, d.v, t=d.t)
    E_ref = [StateEval(pr.sys, d.t[k], d.q[k], d.v[k], d.a[k], d.lam[k], pr.sys.p).energy() for k in range(len(d.t))]
    assert np.allclose(E, E_ref, rtol=1e-12)
    paths = point_paths(pr.sys, d.q)
    assert np.allclose(paths["upper.top"], 0.0, atol=1e-12)          # hangs from ground.O
    assert np.allclose(paths["upper.bottom"], paths["lower.top"], atol=1e-12)
    assert np.all(rotation_angles(pr.sys, d.q)["upper"][1:] > 0.0)


def test_energy_error_is_second_order():
    """Trapezoidal rule + GGL, undamped double pendulum over 0.12 s: the largest energy error
    falls by ≈ 4 per halving of dt (measured ratios must lie in [3, 5.5])."""
    errs = []
    for dt in (6e-3, 3e-3, 1.5e-3):
        pr, tr = run("spatial-double-pendulum", ["simulation.t_end=0.12", f"simulation.dt={dt}",
                                                 *SCHEMES["trapezoidal"]])
        E = energy(pr, tr)
        errs.append(np.max(np.abs(E - E[0])))
    ratios = [errs[0] / errs[1], errs[1] / errs[2]]
    print(f"energy errors {errs}, ratios {ratios}")
    assert all(3.0 <= r <= 5.5 for r in ratios)
