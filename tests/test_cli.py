"""The ``parmbs`` command line (serial): subcommands, files written, exit codes, errors.

Runs are short (t_end = 0.05 s).  ``parmbs(...)`` runs ``cli.main`` in this process
(tests/cli_helpers.py: the function ``python -m parmbs`` calls, so the same code picks
the exit code and the one error line; a ``python -m parmbs`` start alone costs 0.5-0.9 s
CPU); ``parmbs(..., process=True)`` a real ``python -m parmbs`` subprocess, so exit codes
and the absence of tracebacks are what a user or job script sees — kept for one case of
each exit code: 0 (``simulated``), 1 (test_newton_failure_exit_1), 2 (test_bad_usage and
test_bad_input_exit_2's "unknown key").
"""
from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from cli_helpers import parmbs_in_process

ROOT = pathlib.Path(__file__).parents[1]
FIVEBAR = ROOT / "configs" / "fivebar.toml"
SHORT = ["--set", "simulation.t_end=0.05"]
DESIGN_KEYS = {"parmbs", "config", "config_sha256", "method", "formulation", "integrator", "dt",
               "steps", "ranks", "design", "objectives", "timing"}


def parmbs(*args, cwd=ROOT, process=False):
    if not process:
        return parmbs_in_process(*args, cwd=cwd)
    return subprocess.run([sys.executable, "-m", "parmbs", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    d = tmp_path_factory.mktemp("sim")
    h5, png = d / "run.h5", d / "run.png"
    r = parmbs("simulate", FIVEBAR, *SHORT, "-o", h5, "--plot", png, process=True)
    return r, h5, png


@pytest.fixture(scope="module")
def problem():
    from parmbs.config import load_config
    from parmbs.sensitivity.problem import Problem
    pr = Problem(load_config(FIVEBAR, ["simulation.t_end=0.05"]))
    pr.forward()
    return pr


# ----------------------------------------------------------------------------- happy paths


def test_version():
    r = parmbs("--version")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("parmbs 0.1.0")
    assert "PETSc 3." in r.stdout


def test_help():
    r = parmbs("--help")
    assert r.returncode == 0
    for cmd in ("info", "simulate", "gradient", "verify", "optimize", "plot"):
        assert cmd in r.stdout


def test_info():
    r = parmbs("info", FIVEBAR)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for text in ("fivebar", "bodies        4", "coordinates   12", "constraints   10", "DOF           2",
                 "parameters", "Ls1", "L_A1", "psi1", "psi3", "index3 / genalpha", "5000 steps",
                 "MPI ranks     1"):
        assert text in out, (text, out)


def test_info_flexible_models_summarise_fields_and_name_every_coordinate():
    """A plate model: the density field is one summary line (not one per element) and
    every coordinate of q has a name in the HDF5 files (rigid, beam and plate nodes)."""
    from parmbs.config import load_config
    from parmbs.io.hdf5 import coordinate_names
    from parmbs.model.system import System
    r = parmbs("info", ROOT / "configs" / "plate-pendulum.toml")
    assert r.returncode == 0, r.stderr
    assert "plates        1: P (32 elements, 90 coordinates)" in r.stdout, r.stdout
    assert "field of 32 entries" in r.stdout and "density[5]" not in r.stdout, r.stdout
    for name in ("plate-pendulum", "flexible-pendulum", "fivebar"):
        sys_ = System(load_config(str(ROOT / "configs" / f"{name}.toml")))
        names = coordinate_names(sys_)
        assert len(names) == sys_.n and len(set(names)) == sys_.n, name


def test_simulate_writes_hdf5_layout(simulated, problem):
    import h5py
    r, h5, _ = simulated
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    N = problem.nsteps
    assert N == 50
    with h5py.File(h5, "r") as f:
        for k in ("parmbs", "petsc", "ranks", "config_sha256", "created"):
            assert k in f["meta"].attrs
        assert f["meta"].attrs["parmbs"] == "0.1.0"
        assert f["meta"].attrs["ranks"] == 1
        assert f["meta"].attrs["config_sha256"] == problem.config.text_sha256
        text = f["config"][()]
        text = text.decode() if isinstance(text, bytes) else text
        assert text == problem.config.to_toml()
        g = f["trajectory"]
        assert g.attrs["valid_steps"] == N
        n, m = problem.sys.n, problem.sys.m
        assert g["t"].shape == (N + 1,)
        for name, width in (("q", n), ("v", n), ("a", n), ("lambda", m)):
            assert g[name].shape == (N + 1, width)
            assert g[name].maxshape == (None, width)
            assert g[name].chunks is not None
        coords = [c.decode() if isinstance(c, bytes) else c for c in g.attrs["coordinates"]]
        assert coords[:3] == ["A1.x", "A1.y", "A1.angle"] and len(coords) == n
        tr = problem.traj
        np.testing.assert_allclose(g["t"][:], tr.t, rtol=0, atol=1e-14)
        np.testing.assert_allclose(g["q"][:], tr.q, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(g["lambda"][:], tr.lam, rtol=1e-10, atol=1e-10)


def test_read_trajectory_roundtrip(simulated, problem):
    from parmbs.io.hdf5 import read_trajectory
    _, h5, _ = simulated
    data = read_trajectory(h5)
    assert data.steps == problem.nsteps
    np.testing.assert_allclose(data.q, problem.traj.q, rtol=1e-12, atol=1e-13)


def test_simulate_plot_png(simulated):
    r, _, png = simulated
    assert r.returncode == 0, r.stderr
    assert png.stat().st_size > 10_000
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_file(simulated, tmp_path):
    _, h5, _ = simulated
    out = tmp_path / "p.png"
    r = parmbs("plot", h5, "-o", out)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_gradient_json_adjoint(problem, tmp_path):
    js, h5 = tmp_path / "g.json", tmp_path / "g.h5"
    r = parmbs("gradient", FIVEBAR, *SHORT, "--json", js, "-o", h5)
    assert r.returncode == 0, r.stderr
    doc = json.loads(js.read_text())
    assert set(doc) == DESIGN_KEYS
    assert doc["parmbs"] == "0.1.0" and doc["method"] == "adjoint"
    assert doc["config"] == str(FIVEBAR)
    assert doc["config_sha256"] == problem.config.text_sha256
    assert (doc["formulation"], doc["integrator"]) == ("index3", "genalpha")
    assert doc["dt"] == 1e-3 and doc["steps"] == 50 and doc["ranks"] == 1
    assert set(doc["timing"]) == {"forward_s", "gradient_s"}
    names = problem.design.names
    assert list(doc["design"]) == names
    np.testing.assert_array_equal([doc["design"][n] for n in names], problem.design.values(problem.sys.p))
    values = problem.objective_values()
    adj = problem.adjoint()
    assert list(doc["objectives"]) == list(adj)
    for o, g in adj.items():
        assert set(doc["objectives"][o]) == {"value", "gradient"}
        assert doc["objectives"][o]["value"] == pytest.approx(values[o], rel=1e-13)
        np.testing.assert_allclose([doc["objectives"][o]["gradient"][n] for n in names], g,
                                   rtol=1e-12, atol=0)
    from parmbs.io.hdf5 import read_gradient, read_trajectory
    hg = read_gradient(h5)
    for o, g in adj.items():
        np.testing.assert_allclose([hg[o][n] for n in names], g, rtol=1e-12)
    assert read_trajectory(h5).steps == 50


@pytest.mark.parametrize("method", ["direct", "fd", "cs"])
def test_gradient_other_methods(problem, tmp_path, method):
    js = tmp_path / "g.json"
    r = parmbs("gradient", FIVEBAR, *SHORT, "--method", method, "--json", js)
    assert r.returncode == 0, r.stderr
    doc = json.loads(js.read_text())
    assert doc["method"] == method
    adj = problem.adjoint()
    names = problem.design.names
    for o, g in adj.items():
        got = np.array([doc["objectives"][o]["gradient"][n] for n in names])
        scale = np.max(np.abs(g))
        tol = 1e-5 if method == "fd" else 1e-10
        assert np.max(np.abs(got - g)) <= tol * scale, (o, got, g)


def test_verify_ok():
    r = parmbs("verify", FIVEBAR, *SHORT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "verify: OK" in r.stdout
    assert "observed order: 2.0" in r.stdout or "observed order: 1.9" in r.stdout


def test_taylor_orders_helper():
    from parmbs.sensitivity.verify import taylor_orders
    eps = [1e-2 / 2 ** k for k in range(6)]
    orders, order = taylor_orders(eps, [3 * e ** 2 for e in eps], psi=1.0)
    assert order == pytest.approx(2.0)
    orders, order = taylor_orders(eps, [3 * e for e in eps], psi=1.0)   # wrong gradient
    assert order == pytest.approx(1.0)


def test_taylor_floor_from_the_measured_noise():
    """ψ with a large constant (the stress KS of one element: ln 2/ρ per unit time): the
    remainders of the double wishbone's stress3 over 5 steps (verify's ε, measured) are
    δ² from r = 4e-5 down, below 1e-9|ψ| = 3.5e-5; with the FD sweep's measured noise of ψ
    (3.3e-9) the floor is 3.3e-7 and the asymptotic pairs decide.  A wrong gradient
    (remainder + 1e-2 ε: a gradient error of 1e-2 along d) still fails (1.47)."""
    from parmbs.sensitivity.verify import TAYLOR_EPS, taylor_orders
    r = [1.283e-03, 5.196e-04, 1.574e-04, 4.294e-05, 1.120e-05, 2.858e-06, 7.229e-07, 1.810e-07, 4.465e-08,
         1.326e-08, 6.396e-10]
    psi, noise = 3.465834e4, 3.3e-9
    assert taylor_orders(TAYLOR_EPS, r, psi)[1] < 1.8                 # the former floor: 3 pre-asymptotic pairs
    assert taylor_orders(TAYLOR_EPS, r, psi, noise=noise)[1] >= 1.9
    wrong = [x + 1e-2 * e for x, e in zip(r, TAYLOR_EPS)]
    assert taylor_orders(TAYLOR_EPS, wrong, psi, noise=noise)[1] < 1.6


# ----------------------------------------------------------------------------- failures


def assert_one_line_error(r, code, *needles):
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr + r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("parmbs: error: "), lines[0]
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


FEW_INDEPENDENT = FIVEBAR.read_text().replace('independent = ["angle"]\n', "")

BAD_INPUT = {
    "unknown key": (["simulate", FIVEBAR, "--set", "model.foo=1"], "model.foo"),
    "wrong type": (["simulate", FIVEBAR, "--set", "bodies.A1.mass=abc"], "bodies.A1.mass"),
    "dangling point": (["simulate", FIVEBAR, "--set", "joints.J1.b=B12.NOPE"], "joints.J1.b"),
    "negative mass": (["simulate", FIVEBAR, "--set", "bodies.A1.mass=-1"], "bodies.A1.mass"),
    "nan": (["gradient", FIVEBAR, "--set", "forces.S1.stiffness=nan"], "forces.S1.stiffness"),
    "dt <= 0": (["simulate", FIVEBAR, "--set", "simulation.dt=0"], "simulation.dt"),
    "bad --set": (["simulate", FIVEBAR, "--set", "simulation.dt"], "<set>"),
    "missing config": (["info", "configs/nonexistent.toml"], "<file>"),
    "unassemblable": (["simulate", FIVEBAR, *SHORT, "--set", "bodies.A1.points.P1.x=10"], "initial"),
    "unknown design path": (["gradient", FIVEBAR, "--set", "design.Ls1.path=forces.S1.nope"], "design.Ls1.path"),
    "unknown method": (["gradient", FIVEBAR, *SHORT, "--method", "magic"], "--method"),
    "complex step on TS": (["gradient", FIVEBAR, *SHORT, "--method", "cs", "--set", "simulation.formulation=penalty",
                            "--set", "simulation.integrator=ts-beuler"], "--method"),
    "plot non-HDF5": (["plot", FIVEBAR], "<file>"),
    "plot missing": (["plot", "nonexistent.h5"], "<file>"),
    "restart": (["simulate", FIVEBAR, "--restart", "old.h5"], "--restart"),
    "optimize unknown objective": (["optimize", FIVEBAR, *SHORT, "--set", "optimize.objective=nope"],
                                   "optimize.objective"),
}


@pytest.mark.parametrize("case", list(BAD_INPUT))
def test_bad_input_exit_2(case):
    args, key = BAD_INPUT[case]
    r = parmbs(*args, process=case == "unknown key")
    filename = pathlib.Path(str(args[1])).name
    line = assert_one_line_error(r, 2, filename, key)
    if case == "complex step on TS":
        assert "complex step needs an index3 integrator" in line


def test_too_few_independent_coordinates(tmp_path):
    cfg = tmp_path / "few.toml"
    cfg.write_text(FEW_INDEPENDENT)
    r = parmbs("simulate", cfg, *SHORT)
    line = assert_one_line_error(r, 2, "few.toml", "independent")
    assert "degrees of freedom" in line


def test_plot_corrupt_hdf5(tmp_path, simulated):
    import h5py
    bad = tmp_path / "empty.h5"
    with h5py.File(bad, "w") as f:
        f.create_group("meta")
    assert_one_line_error(parmbs("plot", bad), 2, "empty.h5", "/config")
    trunc = tmp_path / "trunc.h5"
    trunc.write_bytes(simulated[1].read_bytes()[:600])
    assert_one_line_error(parmbs("plot", trunc), 2, "trunc.h5")


def test_bad_usage():
    r = parmbs("simulate", process=True)
    assert_one_line_error(r, 2, "CONFIG")
    r = parmbs("frobnicate", process=True)
    assert_one_line_error(r, 2, "frobnicate")


def test_newton_failure_exit_1():
    r = parmbs("simulate", FIVEBAR, *SHORT, "--set", "simulation.newton.max_it=1", process=True)
    line = assert_one_line_error(r, 1, "fivebar.toml", "step 1", "t = 0.001")
    assert "Newton" in line


def test_partial_file_is_readable(tmp_path):
    """A run that fails keeps the rows flushed so far valid (valid_steps < steps)."""
    from parmbs.config import load_config
    from parmbs.io.hdf5 import TrajectoryWriter, read_trajectory
    from parmbs.sensitivity.problem import Problem
    pr = Problem(load_config(FIVEBAR, ["simulation.t_end=0.01"]))
    w = TrajectoryWriter(tmp_path / "part.h5", pr.config, pr.sys, pr.nsteps, flush_steps=3)
    tr = pr.forward()
    for k in range(6):
        w(k, tr.t[k], tr.x(k))
    assert w.valid_steps in (3, 5)          # flushed at k = 0 and then every 3 rows
    w.close()
    data = read_trajectory(tmp_path / "part.h5")
    assert data.steps == 5 and data.attrs["steps"] == 10
    np.testing.assert_array_equal(data.q, tr.q[:6])


def test_progress_plain(capsys):
    import io
    from parmbs.io.progress import PlainProgress, make_progress
    s = io.StringIO()
    pg = PlainProgress(stream=s, min_interval=0.0)
    for k in range(1, 101):
        pg(k, 100)
    lines = s.getvalue().splitlines()
    assert len(lines) == 10 and "100/100" in lines[-1] and "ETA" in lines[0]
    assert make_progress(enabled=False) is None
    assert make_progress(rank=1, enabled=True) is None


def test_verify_disagreement_exit_3(monkeypatch, capsys):
    """In-process with an impossible Taylor threshold: verify must report exit 3."""
    from parmbs import cli
    from parmbs.sensitivity import verify
    monkeypatch.setattr(verify, "MIN_TAYLOR_ORDER", 2.5)
    rc = cli.main(["verify", str(FIVEBAR), "--set", "simulation.t_end=0.02",    # (the fd sweep's progress
                   "--set", "simulation.progress=false"])                       # lines: > 2 s when loaded)
    assert rc == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Taylor order" in err[0] and "fivebar.toml" in err[0]


def test_progress_tqdm_on_tty():
    import io
    from parmbs.io.progress import TqdmProgress, make_progress

    class TTY(io.StringIO):
        def isatty(self):
            return True
    s = TTY()
    pg = make_progress(rank=0, enabled=True, stream=s)
    assert isinstance(pg, TqdmProgress)
    for k in range(1, 51):
        pg(k, 50)
    pg.close()
    assert "50/50" in s.getvalue()


def test_gradient_json_element_field(tmp_path):
    """An element-field design entry: {"size", "norm", "hdf5"} in the JSON, vectors in HDF5."""
    import h5py
    js, h5 = tmp_path / "g.json", tmp_path / "g.h5"
    r = parmbs("gradient", ROOT / "configs" / "plate-pendulum.toml", "--set", "simulation.t_end=0.02",
               "--json", js, "-o", h5)
    assert r.returncode == 0, r.stderr
    doc = json.loads(js.read_text())
    (name, d), = doc["design"].items()
    assert d["size"] > 1 and d["hdf5"] == f"{h5}:/design/{name}"
    with h5py.File(h5, "r") as f:
        assert f[f"design/{name}"].shape == (d["size"],)
        for o, od in doc["objectives"].items():
            g = od["gradient"][name]
            vec = f[f"gradient/{o}/{name}"][:]
            assert g["hdf5"] == f"{h5}:/gradient/{o}/{name}" and vec.shape == (g["size"],)
            assert abs(np.linalg.norm(vec) - g["norm"]) <= 1e-12 * g["norm"] and g["norm"] > 0
