"""The density filter of `[optimize] filter_radius` (parmbs/flexible/density_filter.py).

W = D⁻¹K on a structured mesh: rows sum to one (a constant field is unchanged), the
transpose used by the chain rule is the true transpose (⟨Wx, y⟩ = ⟨x, Wᵀy⟩), the
weights are the cone max(0, r − distance) of a brute-force reference, and the filtered
optimization gradient equals central differences of ψ(Wρ)."""
import h5py
import numpy as np
import pytest

from parmbs.config import ConfigError, load_config
from parmbs.optimize import Optimization
from parmbs.flexible.density_filter import ConeFilter

from conftest import CONFIGS


def brute_force(nx, ny, hx, hy, r):
    c = np.array([((i + 0.5) * hx, (j + 0.5) * hy) for j in range(ny) for i in range(nx)])
    w = np.maximum(0.0, r - np.linalg.norm(c[:, None] - c[None], axis=2))
    return w / w.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("nx, ny, hx, hy, r", [(7, 4, 1.0, 1.0, 1.5), (6, 5, 0.5, 0.3, 0.8), (3, 1, 1.0, 1.0, 0.9)])
def test_cone_filter_is_the_normalised_cone_and_its_transpose(nx, ny, hx, hy, r):
    f = ConeFilter(nx, ny, hx, hy, r)
    W = brute_force(nx, ny, hx, hy, r)
    rng = np.random.default_rng(3)
    x, y = rng.random(nx * ny), rng.random(nx * ny)
    np.testing.assert_allclose(f.apply(x), W @ x, rtol=1e-13)
    np.testing.assert_allclose(f.transpose(y), W.T @ y, rtol=1e-13)
    np.testing.assert_allclose(f.apply(np.ones(nx * ny)), 1.0, rtol=1e-14)
    np.testing.assert_allclose(f.apply(np.stack([x, y])), np.stack([W @ x, W @ y]), rtol=1e-13)  # rows of fields


PLATE = CONFIGS / "plate-pendulum.toml"
# dt 2e-3 (10 steps): the file's dt-converged 2.5e-4 is 8x the work; the optimiser is under test here
SETS = ["optimize.method=mma", "optimize.objective=compliance", "optimize.filter_radius=0.3",
        "optimize.constraints=[{kind='volume_fraction',field='plates.P.density',lower=0.8}]",
        "simulation.t_end=0.02", "simulation.dt=2e-3", "simulation.progress=false", "optimize.max_it=3",
        "plates.P.nx=4", "plates.P.ny=2", "plates.P.points={tip=[4,0]}"]


def test_filtered_gradient_matches_central_differences(tmp_path):
    cfg = load_config(str(PLATE), SETS)
    opt = Optimization(cfg, tmp_path / "g.h5", out=lambda *a: None)
    assert opt.filter and len(opt.filter.parts[0][1].offsets) > 1      # the radius reaches neighbours
    rng = np.random.default_rng(7)
    rho = rng.uniform(0.5, 1.0, len(opt.rho0))
    f0, g = opt.evaluate(rho)
    d = rng.standard_normal(len(rho))
    h = 1e-6
    fd = (opt.evaluate(rho + h * d)[0] - opt.evaluate(rho - h * d)[0]) / (2 * h)
    opt.log.close()
    print(f"filtered gradient: g·d = {g @ d:.10e}, central difference {fd:.10e}")
    assert abs(g @ d - fd) <= 1e-6 * abs(fd)
    # and the filter really is applied: the unfiltered gradient differs
    plain = Optimization(load_config(str(PLATE), [s for s in SETS if "filter" not in s]), tmp_path / "p.h5",
                         out=lambda *a: None)
    assert not np.allclose(plain.evaluate(rho)[1], g, rtol=1e-3)
    plain.log.close()


def test_filtered_mma_run_records_the_physical_design(tmp_path):
    cfg = load_config(str(PLATE), SETS)
    opt = Optimization(cfg, tmp_path / "r.h5", out=lambda *a: None)
    code, rho = opt.run()
    with h5py.File(tmp_path / "r.h5", "r") as f:
        design, phys = f["optimize/design"][()], f["optimize/design_physical"][()]
    np.testing.assert_allclose(phys, opt.filter.apply(design), rtol=1e-14)
    assert phys.mean() >= 0.8 * (1 - 1e-6) or opt.history[-1, 2] > 0   # volume on x̃ (feasible once converged)


def test_filter_needs_a_density_field(tmp_path):
    cfg = load_config(str(CONFIGS / "fivebar.toml"), ["optimize.filter_radius=0.1"])
    from parmbs.model.system import ModelError
    with pytest.raises(ModelError, match="optimize.filter_radius"):
        Optimization(cfg, tmp_path / "x.h5", out=lambda *a: None)
    with pytest.raises(ConfigError, match="optimize.filter_radius"):
        load_config(str(PLATE), ["optimize.filter_radius=-1"])
