"""benchmarks/iltis_bump_opt.py's configs (the four speed-bump optimisations of Zhu 2014
tables 5.11-5.12) and benchmarks/iltis_window.py's windowed ride objective.

The configs are text edits of configs/iltis.toml; these tests load each one and check
what the edit promises (fixed steps, one design subset, the settled variant's window), so
a change of the shipped file that breaks an edit fails here, not hours into a run.
"""
import pathlib
import sys

import numpy as np
import pytest

from parmbs.config import load_config

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import iltis_bump_opt as bo  # noqa: E402
import iltis_window  # noqa: E402

TEXT = (ROOT / "configs" / "iltis.toml").read_text()


@pytest.mark.parametrize("name", sorted(bo.EXPERIMENTS))
def test_variant_fixed_steps_and_subset(tmp_path, name):
    path = tmp_path / f"{name}.toml"
    path.write_text(bo.variant(TEXT, bo.EXPERIMENTS[name], 1e-3))
    cfg = load_config(path)
    assert cfg.simulation.adapt is None and cfg.simulation.dt == 1e-3
    assert [d.name for d in cfg.design] == list(bo.EXPERIMENTS[name])
    shipped = {d.name: d for d in load_config(ROOT / "configs" / "iltis.toml").design}
    for d in cfg.design:                       # the same entries as the shipped file's
        assert (d.path, d.lower, d.upper, d.drives) == (shipped[d.name].path, shipped[d.name].lower,
                                                         shipped[d.name].upper, shipped[d.name].drives)


def test_settled_variant(tmp_path):
    path = tmp_path / "k.toml"
    path.write_text(bo.variant(TEXT, bo.EXPERIMENTS["k"], 1e-3, settle=2.0))
    cfg, base = load_config(path), load_config(ROOT / "configs" / "iltis.toml")
    assert cfg.simulation.t_end == base.simulation.t_end + 2.0
    assert cfg.spatial.road.x0 == base.spatial.road.x0 + 5.0 * 2.0     # 5 m/s: the step 2 s later
    psi4 = next(o for o in cfg.objectives if o.name == "psi4")
    assert psi4.integrand == "python" and psi4.callable == "benchmarks.iltis_window:psi4_after_2000"
    with pytest.raises(AssertionError):        # T0 not a whole number of steps
        bo.variant(TEXT, bo.EXPERIMENTS["k"], 3e-3, settle=2.0)


class _Spatial:
    def body_qidx(self, name):
        assert name == "chassis"
        return np.arange(3, 10)                # the chassis' 7 coordinates, z at 5


class _Model:
    spatial = _Spatial()


def test_window_value_and_partial():
    """g = w(t) z̈⁴ with w = 0 before T0 = 2 s; ∂g/∂a = 4 w z̈³ at the chassis z only,
    against a complex step of g in each a entry (exact to rounding: g is a polynomial)."""
    g = iltis_window.psi4_after_2000
    rng = np.random.default_rng(3)
    q, v, a = rng.normal(size=(3, 12))
    for t, w in ((1.999, 0.0), (2.0, 1.0), (2.5, 1.0)):
        value, part = g(t, q, v, a, np.zeros(4), np.zeros(2), _Model())
        assert value == w * a[5] ** 4
        cs = np.array([np.imag(g(t, q, v, a + 1e-30j * np.eye(12)[i], np.zeros(4), np.zeros(2), _Model())[0]) / 1e-30
                       for i in range(12)])
        assert np.array_equal(np.nonzero(part["a"])[0], [5] if w else [])
        # a few roundings of a degree-4 polynomial either way (complex power vs z**3): ≤ ~10 ulp
        np.testing.assert_allclose(part["a"], cs, rtol=2e-15, atol=0)
