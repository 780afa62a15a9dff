"""The Python API (parmbs/api, issue 23 item 1): one schema, two front ends.

* the five-bar built in Python (examples/fivebar_api.py) validates to the config of
  configs/fivebar.toml and computes the same ψ and ∇ψ, bit for bit (same Config, same
  code: no tolerance);
* to_toml round-trips: the written file loads to an equal config (same text_sha256);
* a bad value is the loader's ConfigError naming the key;
* simulate / gradient / verify return the Problem's numbers as numpy.
"""
import os
import sys

import numpy as np
import pytest

from parmbs.api import Model, as_config, gradient, optimize, problem, simulate, verify
from parmbs.config import ConfigError, load_config

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIVEBAR = os.path.join(ROOT, "configs", "fivebar.toml")
PENDULUM = os.path.join(ROOT, "configs", "pendulum.toml")
sys.path.insert(0, os.path.join(ROOT, "examples"))
from fivebar_api import build  # noqa: E402


def test_fivebar_in_python_is_the_toml_model():
    assert build().config().to_dict() == load_config(FIVEBAR).to_dict()


def test_fivebar_in_python_gives_the_same_numbers_bit_for_bit():
    short = "simulation.t_end=0.1"
    g_py = gradient(build(), overrides=[short])
    g_toml = gradient(FIVEBAR, overrides=[short])
    assert g_py.design == g_toml.design == ["Ls1", "Ls2", "m_A1", "xG_A1", "L_A1"]
    assert g_py.values == g_toml.values
    for o in g_toml.gradients:
        assert np.array_equal(g_py.gradients[o], g_toml.gradients[o]), o
        assert np.any(g_py.gradients[o] != 0.0), o


def test_to_toml_round_trips(tmp_path):
    m = build(0.5)
    path = m.to_toml(tmp_path / "fivebar.toml")
    assert not os.path.exists(path + ".partial")
    loaded = load_config(path)
    cfg = m.config()
    assert loaded.to_dict() == cfg.to_dict()
    assert loaded.text_sha256 == cfg.text_sha256        # the same TOML text hashed
    assert Model.from_toml(path).config().to_dict() == cfg.to_dict()
    # overrides hash like the loader's
    ov = ["simulation.dt=2e-3"]
    assert load_config(path, ov).text_sha256 == m.config(ov).text_sha256


def test_numpy_values_are_stored_as_plain_toml():
    m = Model("np", gravity=np.array([0.0, -9.81]))
    m.body("b", mass=np.float64(2.0), inertia=0.1, points={"P": np.array([1.0, 0.0])}, reference=None)
    assert m.data["bodies"][0] == {"name": "b", "mass": 2.0, "inertia": 0.1, "points": {"P": [1.0, 0.0]}}
    assert type(m.data["bodies"][0]["mass"]) is float
    assert "[[bodies]]" in m.toml() or "bodies = [" in m.toml()


@pytest.mark.parametrize("edit,override", [
    (lambda m: m.data["bodies"][0].update(mass=-1.0), "bodies.A1.mass=-1.0"),
    (lambda m: m.data["bodies"][1].update(colour="red"), 'bodies.B12.colour="red"'),
    (lambda m: m.simulation(integrator="bogus"), 'simulation.integrator="bogus"'),
    (lambda m: m.data["joints"][1].update(b="nobody.O"), 'joints.J1.b="nobody.O"'),
])
def test_errors_name_the_key_like_the_loader(edit, override):
    """The same bad value, built in Python or set on the TOML file: the same key and
    message (the file's carries "(from --set ...)")."""
    with pytest.raises(ConfigError) as f:
        load_config(FIVEBAR, [override])
    m = build()
    edit(m)
    with pytest.raises(ConfigError) as e:
        m.config()
    assert e.value.key == f.value.key == override.split("=")[0]
    assert e.value.message == f.value.message.split(" (from --set")[0], (str(e.value), str(f.value))
    assert str(e.value) == f"<Model 'fivebar'>: {e.value.key}: {e.value.message}"


def test_a_lambda_objective_is_refused_with_the_key():
    m = build(0.1)
    with pytest.raises(ConfigError) as e:
        m.objective("bad", integrand=lambda *a: (0.0, {}))
    assert e.value.key == "objectives.bad.integrand" and "no importable name" in e.value.message
    with pytest.raises(ConfigError) as e:
        Model.from_toml("/nonexistent/model.toml")
    assert str(e.value) == "/nonexistent/model.toml: <file>: no such file"


def test_simulate_returns_the_trajectory_and_design_values():
    run = simulate(PENDULUM, design={"theta0": -1.0}, overrides=["simulation.t_end=0.05"])
    assert run.q.shape == (51, 3) and run.t[-1] == pytest.approx(0.05, rel=1e-12)
    assert run.rho[run.design.index("theta0")] == -1.0
    assert run.coordinate("bar.angle")[0] == pytest.approx(-1.0, abs=1e-12)   # independent: held
    again = simulate(as_config(PENDULUM, ["simulation.t_end=0.05"]))
    assert again.values != run.values                    # the design changed the run


def test_gradient_methods_agree_and_design_dict_moves_the_point():
    ov = ["simulation.t_end=0.05"]
    adj = gradient(PENDULUM, "adjoint", overrides=ov)
    dirg = gradient(PENDULUM, "direct", overrides=ov)
    # adjoint vs direct: the same linear algebra in reverse order, round-off only
    # (50 steps, a 3-coordinate model: ≤ ~1e-14 relative; verify.py measures the bound)
    for o in adj.gradients:
        scale = np.max(np.abs(adj.gradients[o]))
        assert np.max(np.abs(adj.gradients[o] - dirg.gradients[o])) <= 1e-12 * scale, o
    moved = gradient(PENDULUM, design={"m": 1.5}, overrides=ov)
    assert moved.rho[0] == 1.5 and moved.values != adj.values
    assert adj.as_dict()["final_angle"]["m"] == adj.gradients["final_angle"][0]
    with pytest.raises(KeyError):
        gradient(PENDULUM, design={"nope": 1.0}, overrides=ov)


def test_verify_passes_a_right_gradient_and_fails_a_wrong_partial(monkeypatch):
    """The verify wrapper can fail: a user integrand whose ∂g/∂p is off by 10 % gives
    adjoint = direct (both use the wrong partial) but complex step / FD disagree."""
    import custom_objective as co
    good = verify(co.model(0.02))
    assert good.ok, good.failures
    assert {c.name for c in good.checks} >= {"I_B12", "Ls1"}

    model = co.model(0.02)                # callable = "custom_objective:rotational_energy"
    right = co.rotational_energy

    def wrong(t, q, v, a, lam, p, model):
        value, partials = right(t, q, v, a, lam, p, model)
        return value, {"v": partials["v"], "p": 1.1 * partials["p"]}
    monkeypatch.setattr(co, "rotational_energy", wrong)
    bad = verify(model)                   # the callable is imported when the Problem is built
    assert not bad.ok and any("I_B12" in f for f in bad.failures), bad.failures


def test_readme_snippet_runs_and_is_the_pendulum_file(tmp_path, monkeypatch):
    """The README's Model snippet runs as printed and builds configs/pendulum.toml
    (with one design variable and one objective of it), numbers equal bit for bit."""
    import re
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        blocks = re.findall(r"```python\n(.*?)```", fh.read(), re.S)
    code = next(b for b in blocks if "from parmbs.api import Model" in b)
    monkeypatch.chdir(tmp_path)
    ns = {}
    exec(compile(code, "README.md", "exec"), ns)
    ref = load_config(PENDULUM).to_dict()
    ref["design"] = [d for d in ref["design"] if d["name"] == "m"]
    ref["objectives"] = [o for o in ref["objectives"] if o["name"] == "tip_deviation"]
    assert ns["m"].config().to_dict() == ref
    assert load_config(tmp_path / "pendulum.toml").to_dict() == ref
    g_file = gradient(PENDULUM)
    assert ns["g"].values["tip_deviation"] == g_file.values["tip_deviation"]
    assert ns["g"].gradients["tip_deviation"][0] == g_file.gradients["tip_deviation"][0]


def test_fd_and_cs_at_a_moved_design_agree_with_the_adjoint():
    """``design`` moves the point every method differentiates at.  Bounds (verify.py):
    complex step √(newton.rtol)·‖g‖∞ = 1e-6 relative; central FD at h = 1e-6·|ρ|:
    truncation ~h² ≈ 1e-12, noise ~ Newton rtol 1e-12 / h ≈ 1e-6 relative, so 1e-4
    (100x margin; measured 1.3e-12 and 2.2e-8).  The gradient at the moved design
    differs from the nominal one by far more (measured 1.1e-2 and 0.76 relative;
    checked > 1e-3), so a method that ignored the design would fail."""
    ov, moved = ["simulation.t_end=0.05"], {"theta0": -0.5, "m": 1.3}
    adj = gradient(PENDULUM, "adjoint", design=moved, overrides=ov)
    nominal = gradient(PENDULUM, "adjoint", overrides=ov)
    for method, rel in (("cs", 1e-6), ("fd", 1e-4)):
        other = gradient(PENDULUM, method, design=moved, overrides=ov)
        assert other.values == adj.values
        for o in adj.gradients:
            scale = np.max(np.abs(adj.gradients[o]))
            assert np.max(np.abs(other.gradients[o] - adj.gradients[o])) <= rel * scale, (method, o)
            assert np.max(np.abs(nominal.gradients[o] - adj.gradients[o])) > 1e-3 * scale, o


def test_optimize_is_the_cli_optimization(tmp_path):
    """``optimize`` runs parmbs optimize's driver: the same final design and history
    as the CLI on the same config (same input, same bytes), and the record in place."""
    import subprocess
    import h5py
    ov = ["simulation.t_end=0.02", "optimize.objective=tip_deviation", "optimize.max_it=2"]
    res = optimize(PENDULUM, tmp_path / "api.h5", overrides=ov)
    assert res.code == 0 and res.objective == "tip_deviation" and res.path == str(tmp_path / "api.h5")
    assert os.path.exists(res.path) and not os.path.exists(res.path + ".partial")
    env = {**os.environ, "PYTHONPATH": ROOT}
    r = subprocess.run([sys.executable, "-m", "parmbs", "-q", "optimize", PENDULUM,
                        *[a for s in ov for a in ("--set", s)], "-o", str(tmp_path / "cli.h5")],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    with h5py.File(tmp_path / "cli.h5") as f:
        assert np.array_equal(f["optimize/design"][()], res.rho)
        rows = f["optimize/history"][:len(res.history)]     # the dataset grows in chunks
        assert len(res.history) == 3                           # the start and 2 iterations
        assert np.array_equal(rows[:, :5], res.history[:, :5])  # all but the wall time (HIST_COLS)
    pr = problem(PENDULUM)
    assert not np.array_equal(res.rho, pr.design.values(pr.sys.p)), "the design did not move"


@pytest.mark.parametrize("name", sorted(f for f in os.listdir(os.path.join(ROOT, "configs")) if f.endswith(".toml")))
def test_every_shipped_config_round_trips_through_model(name, tmp_path):
    """Model.from_toml → to_toml → load_config is the file's config for every shipped
    model (rigid, beams, plates, continua, spatial, scenarios, drives)."""
    path = os.path.join(ROOT, "configs", name)
    ref = load_config(path).to_dict()
    m = Model.from_toml(path)
    assert m.config().to_dict() == ref
    assert load_config(m.to_toml(tmp_path / name)).to_dict() == ref


def test_a_flexible_beam_built_by_calls_is_the_file_and_runs_the_same():
    """configs/flexible-pendulum.toml (an ANCF beam) built call by call: the same config,
    the same ψ and ∇ψ bit for bit over 20 steps."""
    m = Model("flexible-pendulum", gravity=(0.0, -9.81))
    m.ground(A=(0.0, 0.0))
    m.beam("beam", type="ancf", length=1.2, elements=5, side=0.05, density=4000.0, E=1.0e7,
           initial={"x": 0.0, "y": 0.0, "angle": 0.0}, independent=["angle"])
    m.joint("pin", "revolute", a="ground.A", b="beam.root")
    m.simulation(t_end=4.0, dt=2.5e-4, integrator="variational")
    for name, path in (("h", "beams.beam.side"), ("rho", "beams.beam.density"), ("E", "beams.beam.E")):
        m.design(name, path)
    m.objective("tip_deflection_sq", integrand="deflection_sq", point="beam.tip")
    path = os.path.join(ROOT, "configs", "flexible-pendulum.toml")
    assert m.config().to_dict() == load_config(path).to_dict()
    ov = ["simulation.t_end=5e-3"]
    a, b = gradient(m, overrides=ov), gradient(path, overrides=ov)
    assert a.values == b.values and all(np.array_equal(a.gradients[o], b.gradients[o]) for o in b.gradients)
    assert all(np.any(g != 0.0) for g in a.gradients.values())
