"""benchmarks/iltis_four_post_opt.py's configs (the eight four-post ride optimisations of
Zhu 2014 tables 5.7-5.10): text edits of configs/iltis-four-post-{white,red}.toml.

Each is loaded and checked for what the edit promises (one design subset with the shipped
entries, the added upper bounds, box scaling, and nothing else changed), so a change of
the shipped files that breaks an edit fails here, not hours into a run.
"""
import pathlib
import sys

import pytest

from parmbs.config import load_config

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import iltis_four_post_opt as fp  # noqa: E402


@pytest.mark.parametrize("signal", fp.SIGNALS)
@pytest.mark.parametrize("name", sorted(fp.EXPERIMENTS))
def test_variant_subset_bounds_scaling(tmp_path, signal, name):
    shipped_path = ROOT / "configs" / f"iltis-four-post-{signal}.toml"
    path = tmp_path / f"{signal}-{name}.toml"
    path.write_text(fp.variant(shipped_path.read_text(), fp.EXPERIMENTS[name]))
    cfg, base = load_config(path), load_config(shipped_path)
    assert [d.name for d in cfg.design] == list(fp.EXPERIMENTS[name])
    shipped = {d.name: d for d in base.design}
    for d in cfg.design:
        s = shipped[d.name]
        assert (d.path, d.lower, d.drives) == (s.path, s.lower, s.drives)
        assert d.upper == fp.UPPER.get(d.name, s.upper) and d.upper is not None
    assert cfg.optimize.scaling == "bounds" and cfg.optimize.max_it == 60
    assert cfg.optimize.objective == base.optimize.objective == "psi4"
    assert cfg.optimize.method == base.optimize.method
    assert cfg.simulation == base.simulation          # steps, scheme, horizon untouched
    assert cfg.spatial == base.spatial                # the rig's signals untouched
    assert cfg.objectives == base.objectives
