"""examples/*.py run and say what they claim (issue 23 item 1): each as a script, in a
fresh process (as a user runs it), on a short horizon."""
import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = {**os.environ, "PYTHONPATH": ROOT}


def _run(*args, cwd):
    r = subprocess.run([sys.executable, *args], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def test_fivebar_example_equals_the_cli(tmp_path):
    """The Python API and `parmbs gradient` on the same TOML give the same ψ and ∇ψ.
    The example prints 11 significant digits (rounding ≤ 5e-11 relative): compared at 1e-9."""
    out = _run(os.path.join(ROOT, "examples", "fivebar.py"), "--t-end", "0.2", cwd=tmp_path)
    _run("-m", "parmbs", "-q", "gradient", os.path.join(ROOT, "configs", "fivebar.toml"),
         "--set", "simulation.t_end=0.2", "--json", "g.json", cwd=tmp_path)
    cli = json.loads((tmp_path / "g.json").read_text())["objectives"]
    printed = dict(re.findall(r"^(psi\d) = (\S+)", out, re.M))
    assert set(printed) == set(cli) == {"psi1", "psi2", "psi3"}
    for o, od in cli.items():
        assert abs(float(printed[o]) - od["value"]) <= 1e-9 * abs(od["value"])
        for n, g in od["gradient"].items():
            m = re.search(rf"^  d{o}/d{n}\s*=\s*(\S+)", out, re.M)
            assert m, (o, n)
            assert abs(float(m.group(1)) - g) <= 1e-9 * max(abs(g), 1e-300), (o, n)
    # adjoint vs direct along the same trajectory: the example reports their difference
    for rel in re.findall(r"max relative difference (\S+)", out):
        assert float(rel) < 1e-10


def test_scipy_optimization_example_descends(tmp_path):
    """L-BFGS-B with adjoint gradients lowers ψ1 and moves both spring lengths."""
    out = _run(os.path.join(ROOT, "examples", "optimize_scipy.py"), "--t-end", "0.2", "--maxiter", "3",
               cwd=tmp_path)
    m = re.search(r"psi1: (\S+) -> (\S+) in (\d+) iterations, (\d+) forward", out)
    assert m, out
    psi0, psi, nit, nev = float(m.group(1)), float(m.group(2)), int(m.group(3)), int(m.group(4))
    assert psi < 0.5 * psi0, out
    assert nit >= 1 and nev >= nit + 1
    moved = re.findall(r"^  (Ls\d)\s+(\S+) -> (\S+)$", out, re.M)
    assert len(moved) == 2 and all(a != b for _, a, b in moved), out


# ----------------------------------------------------------------------------- the Python API (parmbs/api)

def _cli_json(cwd, *args):
    _run("-m", "parmbs", "-q", "gradient", *args, "--json", "g.json", cwd=cwd)
    return json.loads((cwd / "g.json").read_text())["objectives"]


def _printed(out, pattern):
    return {m[0]: float(m[1]) for m in re.findall(pattern, out, re.M)}


def test_fivebar_api_example_writes_a_toml_the_cli_runs(tmp_path):
    """The five-bar built in Python, written with --toml, run by `parmbs gradient`:
    the same ψ and ∇ψ (printed to 11 digits: compared at 1e-9, as above)."""
    out = _run(os.path.join(ROOT, "examples", "fivebar_api.py"), "--t-end", "0.2", "--toml", "fb.toml",
               cwd=tmp_path)
    cli = _cli_json(tmp_path, "fb.toml")
    values = _printed(out, r"^(psi\d) = (\S+)")
    grads = _printed(out, r"^  (d\w+/d\w+)\s*=\s*(\S+)")
    assert set(values) == set(cli) == {"psi1", "psi2", "psi3"} and len(grads) == 15
    for o, od in cli.items():
        assert abs(values[o] - od["value"]) <= 1e-9 * abs(od["value"])
        for n, g in od["gradient"].items():
            assert abs(grads[f"d{o}/d{n}"] - g) <= 1e-9 * max(abs(g), 1e-300), (o, n)


def test_custom_objective_example_verifies_and_runs_from_toml(tmp_path):
    """A Python integrand: adjoint = direct, `verify` OK (complex step, Taylor order 2),
    and the written TOML (callable = "custom_objective:rotational_energy") runs in the
    CLI with examples/ on PYTHONPATH, giving the printed numbers exactly (full repr;
    the same Config through the same Problem code)."""
    out = _run(os.path.join(ROOT, "examples", "custom_objective.py"), "--t-end", "0.05", "--verify",
               "--toml", "co.toml", cwd=tmp_path)
    assert "callable = 'custom_objective:rotational_energy'" in out
    assert re.search(r"^verify: OK$", out, re.M), out
    assert len(re.findall(r"^  verify \S+\s+ok ", out, re.M)) == 6, out
    rows = re.findall(r"^  denergy_B12/d(\w+)\s+adjoint (\S+)\s+direct (\S+)$", out, re.M)
    assert len(rows) == 6
    env = {**ENV, "PYTHONPATH": os.pathsep.join([ROOT, os.path.join(ROOT, "examples")])}
    r = subprocess.run([sys.executable, "-m", "parmbs", "-q", "gradient", "co.toml", "--json", "g.json"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    cli = json.loads((tmp_path / "g.json").read_text())["objectives"]["energy_B12"]
    assert cli["value"] == float(re.search(r"^energy_B12 = (\S+)$", out, re.M).group(1))
    for name, adj, _ in rows:
        assert cli["gradient"][name] == float(adj), name


def test_tao_optimization_example_descends(tmp_path):
    """TAO blmvm with adjoint gradients lowers ψ1 (measured: by 84x in 3 iterations at
    t_end 0.2) and moves both spring lengths within their ±20 % bounds."""
    out = _run(os.path.join(ROOT, "examples", "optimize_tao.py"), "--t-end", "0.2", "--maxit", "3",
               cwd=tmp_path)
    m = re.search(r"psi1: (\S+) -> (\S+) in (\d+) TAO iterations, (\d+) forward", out)
    assert m, out
    psi0, psi, nit, nev = float(m.group(1)), float(m.group(2)), int(m.group(3)), int(m.group(4))
    assert psi < 0.1 * psi0 and 1 <= nit <= 3 and nev >= nit + 1, out
    moved = re.findall(r"^  (Ls\d)\s+(\S+) -> (\S+)$", out, re.M)
    assert len(moved) == 2, out
    for _, a, b in moved:
        assert a != b and 0.8 * float(a) - 1e-6 <= float(b) <= 1.2 * float(a) + 1e-6, out


def test_batch_mpi_example_equals_serial_gradients(tmp_path):
    """Two batch groups under mpirun -n 2 (one scenario each) give the serial
    gradients of each scenario; batch.py: restricted problems compute the same
    numbers up to the order of BLAS sums (measured ≤ 1.3e-16 relative), asserted at
    1e-12 of the largest entry as in tests/test_parallel*.py."""
    import shutil
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        pytest.skip("mpirun not installed")
    env = {**ENV, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_mpi_yield_when_idle": "1"}
    r = subprocess.run([mpirun, "--oversubscribe", "-n", "2", sys.executable,
                        os.path.join(ROOT, "examples", "batch_mpi.py"), "--t-end", "0.1"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    out = r.stdout
    assert "2 ranks, 2 groups" in out and re.search(r"^rank 1 group 1: \S+", out, re.M), out
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    from parmbs.api import gradient
    from fivebar_api import build
    serial = {"nominal": gradient(build(0.1)),
              "stiff": gradient(build(0.1), overrides=["forces.S1.stiffness=200.0", "forces.S2.stiffness=200.0"])}
    for s, g in serial.items():
        for o, psi in g.values.items():
            got = float(re.search(rf"^{s} {o} = (\S+)$", out, re.M).group(1))
            assert abs(got - psi) <= 1e-12 * abs(psi), (s, o)
            scale = max(abs(g.gradients[o]))
            for n, ref in zip(g.design, g.gradients[o]):
                got = float(re.search(rf"^  {s} d{o}/d{n} = (\S+)$", out, re.M).group(1))
                assert abs(got - ref) <= 1e-12 * scale, (s, o, n)


def test_every_example_is_documented_and_run_here():
    """Each examples/*.py (scripts; helpers are imported by them) is listed in
    docs/python.md and run by a test of this file."""
    with open(os.path.join(ROOT, "docs", "python.md"), encoding="utf-8") as fh:
        doc = fh.read()
    with open(os.path.abspath(__file__), encoding="utf-8") as fh:
        here = fh.read()
    names = sorted(f for f in os.listdir(os.path.join(ROOT, "examples")) if f.endswith(".py"))
    assert len(names) >= 6
    for f in names:
        assert f"examples/{f}" in doc, f"{f} is not in docs/python.md"
        assert f'"{f}"' in here, f"{f} is not run by tests/test_examples.py"
