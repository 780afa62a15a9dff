"""A reduced body written by ``parmbs reduce`` and loaded by
``continua.NAME.reduction.load`` (parmbs/flexible/modal_io.py): the loaded body gives
the bits of the body reduced in-process — ψ and ∇ψ over its densities — without an
eigensolve; a file of another body is refused with one line naming the key (exit 2).

The 8 × 3 crank of tests/test_modal_reduction.py, K = 6 + the pin's two attachment
modes, written to TOML files.
"""
import copy

import h5py
import numpy as np
import pytest
import tomli_w

from test_checkpoint import _cli
from test_modal_reduction import crank


@pytest.fixture(scope="module")
def body(tmp_path_factory):
    """(directory, the config, the stored body, its gradient run's record)."""
    d = tmp_path_factory.mktemp("sid")
    data = crank(K=6, attachment=True)
    (d / "crank.toml").write_text(tomli_w.dumps(data))
    r = _cli("reduce", "crank.toml", "-o", "body.h5", cwd=d)
    assert r.returncode == 0, r.stderr
    assert not list(d.glob("*.tmp*")) and (d / "body.h5").exists()      # renamed into place
    r = _cli("gradient", "crank.toml", "-o", "full.h5", cwd=d)
    assert r.returncode == 0, r.stderr
    return d, data


def _loaded(data, **red):
    data = copy.deepcopy(data)
    data["continua"][0].pop("density")
    data["continua"][0]["reduction"].update({"load": "body.h5", **red})
    return data


def _record(h5):
    with h5py.File(h5, "r") as f:
        return f["gradient/compliance/x"][:], f["trajectory/q"][:]


def test_loaded_body_gives_identical_bits(body):
    """Round trip: the gradient run of the loaded body equals the in-process one bit
    for bit (trajectory and ∇ψ over the 24 densities), and the stored body data are
    those the in-process System put into p."""
    d, data = body
    (d / "loaded.toml").write_text(tomli_w.dumps(_loaded(data)))
    r = _cli("gradient", "loaded.toml", "-o", "loaded.h5", cwd=d)
    assert r.returncode == 0, r.stderr
    g0, q0 = _record(d / "full.h5")
    g1, q1 = _record(d / "loaded.h5")
    assert len(g0) == 24 and np.array_equal(g1, g0) and np.array_equal(q1, q0)
    from parmbs.config.loader import validate
    from parmbs.model.system import System
    from test_continuum import CONFIG
    sys_ = System(validate(copy.deepcopy(data), CONFIG))
    c = sys_.continua.continua["crank"]
    with h5py.File(d / "body.h5", "r") as f:
        g = f["reduced/crank"]
        assert np.array_equal(g["density"][:], np.array(data["continua"][0]["density"]))
        assert np.array_equal(g["data/K"][:].ravel(), sys_.p[c.stiffness_p])
        assert g["data/m"][()] == sys_.p[c.inertia_p[0]] and g["Phi"].shape == (c.reduction.nf, 6)


def test_loaded_body_is_not_reduced_again(body, monkeypatch):
    """Loading skips the eigensolve at the stored densities; a design step away from
    them reduces afresh (and there agrees with a body never loaded, to the bit)."""
    from parmbs.config.loader import validate
    from parmbs.flexible.modal import Reduction
    from parmbs.sensitivity.problem import Problem
    d, data = body
    calls = []
    orig = Reduction._eigenpairs
    monkeypatch.setattr(Reduction, "_eigenpairs", lambda self, *a: calls.append(1) or orig(self, *a))
    pr = Problem(validate(_loaded(data), str(d / "loaded.toml")))
    pr.forward()
    pr.adjoint()
    assert calls == []
    ref = Problem(validate(copy.deepcopy(data), str(d / "crank.toml")))
    calls.clear()
    rho = pr.design.values(pr.sys.p) * 0.9
    for q in (pr, ref):
        q.forward(q.design.apply(q.sys.p, rho))
    gs = [q.adjoint()["compliance"] for q in (pr, ref)]
    assert len(calls) == 2 and np.array_equal(gs[0], gs[1])


@pytest.mark.parametrize("change,key", [
    ({"modes": 5}, "continua.crank.reduction.modes"),
    ({"attachment": False}, "continua.crank.reduction.attachment"),
    ({"continua.E": 2.1e9}, "continua.crank.E"),
    ({"continua.nx": 9, "continua.points": {"pin": [8, 1]}}, "continua.crank.nx"),
    ({"continua.density": 0.5}, "continua.crank.density"),
    ({"load": "nope.h5"}, "continua.crank.reduction.load"),
    ({"load": "full.h5"}, "continua.crank.reduction.load"),
])
def test_a_file_of_another_body_is_refused(body, change, key, tmp_path):
    d, data = body
    red = {k: v for k, v in change.items() if not k.startswith("continua.")}
    data = _loaded(data, **red)
    for k, v in change.items():
        if k.startswith("continua."):
            data["continua"][0][k.split(".", 1)[1]] = v
    cfg = d / f"bad-{len(list(d.glob('bad-*.toml')))}.toml"
    cfg.write_text(tomli_w.dumps(data))
    r = _cli("info", cfg.name, cwd=d)
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{cfg.name}: {key}" in lines[0] and "Traceback" not in r.stderr, r.stderr
