"""PETSc's conventions on parmbs's command line (issue 20, DESIGN.md "Names fixed"):

* PETSc options after a command's arguments, ``parmbs simulate CONFIG -log_view
  -ksp_monitor``, start PETSc (``-log_view`` prints its summary at PetscFinalize);
* an unprefixed solver option reaches every parmbs solver unless given under that
  solver's prefix; the TS's options are ``-parmbs_ts_<name>`` (not the doubled
  ``-parmbs_ts_ts_<name>``);
* a value PETSc rejects, on the command line or in PETSC_OPTIONS: one line naming
  option and source, exit 2, no traceback; options nothing read: one warning line.

Each case is a subprocess of the real CLI on a 2- or 3-step run (~1-2 s each).
"""
from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).parents[1]
PENDULUM = str(ROOT / "configs" / "pendulum.toml")
DOUBLE = str(ROOT / "configs" / "double-pendulum.toml")
SHORT = ["--set", "simulation.t_end=0.002"]
TS = ["--set", "simulation.t_end=0.003", "--set", "simulation.dt=0.001", "--set", 'simulation.formulation="penalty"',
      "--set", 'simulation.integrator="ts-beuler"']
KSP_LINE = re.compile(r"^\s*Residual norms for (\S+) solve\.$", re.M)
TS_LINE = re.compile(r"^\d+ TS dt [0-9.e-]+ time ", re.M)


def cli(*args, cwd=None, petsc_options=None, mpi=0):
    env = {k: v for k, v in os.environ.items() if k != "PETSC_OPTIONS"}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    if petsc_options is not None:
        env["PETSC_OPTIONS"] = petsc_options
    cmd = [sys.executable, "-m", "parmbs", *args]
    if mpi:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        cmd = [shutil.which("mpirun"), "--oversubscribe", "-n", str(mpi), *cmd]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def one_error_line(r, start):
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(start), r.stderr
    assert "Traceback" not in r.stderr and "PETSC ERROR" not in r.stderr


# ----------------------------------------------------------------------------- accepted


def test_log_view_on_the_command_line_prints_the_summary():
    r = cli("simulate", PENDULUM, *SHORT, "-log_view")
    assert r.returncode == 0, r.stderr
    assert "PETSc Performance Summary" in r.stdout
    assert re.search(r"^KSPSolve\s+\d+", r.stdout, re.M)          # the run's solves are in it
    assert "warning" not in r.stderr                                # -log_view counts as read
    r = cli("simulate", PENDULUM, *SHORT)
    assert "PETSc Performance Summary" not in r.stdout             # (the control)


def test_every_command_takes_petsc_options(tmp_path):
    r = cli("info", PENDULUM, "-log_view")
    assert r.returncode == 0 and "PETSc Performance Summary" in r.stdout, r.stderr
    js = tmp_path / "g.json"
    r = cli("gradient", PENDULUM, *SHORT, "--json", str(js), "-ksp_monitor", "-log_view")
    assert r.returncode == 0 and js.exists(), r.stderr
    assert KSP_LINE.search(r.stdout) and "PETSc Performance Summary" in r.stdout


def test_options_left_is_petsc_s_not_argparse_s_o(tmp_path):
    """argparse alone read -options_left as ``-o ptions_left`` (an output file)."""
    r = cli("simulate", PENDULUM, *SHORT, "-options_left", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "#PETSc Option Table entries:" in r.stdout
    assert os.listdir(tmp_path) == []


def test_unprefixed_ksp_monitor_reaches_the_parmbs_solvers():
    for how in ({"args": ["-ksp_monitor"]}, {"args": [], "petsc_options": "-ksp_monitor"}):
        r = cli("simulate", PENDULUM, *SHORT, *how["args"], petsc_options=how.get("petsc_options"))
        assert r.returncode == 0, r.stderr
        solvers = set(KSP_LINE.findall(r.stdout))
        assert {"parmbs_", "parmbs_init_"} <= solvers, r.stdout[:500]
        assert "warning" not in r.stderr


def test_a_prefixed_option_wins_over_the_unprefixed_one():
    """-ksp_type gmres reaches every solver but the one given its own prefixed type
    (-ksp_view shows each solver's type)."""
    r = cli("simulate", PENDULUM, *SHORT, "-ksp_type", "gmres", "-parmbs_init_ksp_type", "bcgs",
            "-ksp_view")
    assert r.returncode == 0, r.stderr
    views = re.findall(r"^KSP Object: \((\S+)\).*\n\s+type: (\S+)", r.stdout, re.M)
    types = {pre: t for pre, t in views}
    assert types.get("parmbs_") == "gmres" and types.get("parmbs_init_") == "bcgs", views[:4]


def test_ts_options_are_parmbs_ts_name():
    r = cli("simulate", DOUBLE, *TS, "-parmbs_ts_monitor")
    assert r.returncode == 0, r.stderr
    assert len(TS_LINE.findall(r.stdout)) == 4                      # steps 0..3
    r = cli("simulate", DOUBLE, *TS, "-ts_monitor")                 # unprefixed: reaches it too
    assert len(TS_LINE.findall(r.stdout)) == 4, r.stdout[:300]
    r = cli("simulate", DOUBLE, *TS, "-parmbs_ts_ts_monitor")       # the old doubled name
    assert r.returncode == 0 and not TS_LINE.search(r.stdout)
    assert "-parmbs_ts_ts_monitor (command line)" in r.stderr


# ----------------------------------------------------------------------------- refused / warned


@pytest.mark.parametrize("args,start", [
    (["-parmbs_ksp_type", "bogus"], "parmbs: error: command line: -parmbs_ksp_type: PETSc rejects 'bogus'"),
    (["-pc_factor_mat_solver_type", "nosuch"],
     "parmbs: error: command line: -pc_factor_mat_solver_type: PETSc rejects 'nosuch'"),
    (["-parmbs_ts_type", "bogus"], "parmbs: error: command line: -parmbs_ts_type: PETSc rejects 'bogus'"),
    (["-ksp_type", "gmres", "-ksp_rtol", "abc"], "parmbs: error: command line: -ksp_rtol: PETSc rejects 'abc'"),
    (["-parmbs_opt_tao_type", "bogus"], "parmbs: error: command line: -parmbs_opt_tao_type: PETSc rejects 'bogus'"),
    (["-malloc_debug", "bogus"], "parmbs: error: command line: -malloc_debug bogus: PETSc rejects it"),
])
def test_bad_value_on_the_command_line_is_one_line_exit_2(args, start):
    one_error_line(cli("simulate", PENDULUM, *SHORT, "-log_view", *args), start)


def test_bad_value_in_petsc_options_names_petsc_options():
    r = cli("simulate", PENDULUM, *SHORT, petsc_options="-ksp_monitor -ksp_type bogus")
    one_error_line(r, "parmbs: error: PETSC_OPTIONS: -ksp_type: PETSc rejects 'bogus'")


def test_command_line_wins_over_petsc_options():
    r = cli("simulate", PENDULUM, *SHORT, "-parmbs_ksp_type", "gmres", petsc_options="-parmbs_ksp_type bogus")
    assert r.returncode == 0, r.stderr


def test_unknown_non_petsc_arguments_stay_usage_errors():
    one_error_line(cli("simulate", PENDULUM, *SHORT, "--frobnicate"), "parmbs: error: unrecognized arguments: --frobnicate")
    one_error_line(cli("simulate", PENDULUM, *SHORT, "extra"), "parmbs: error: unrecognized arguments: extra")


def test_options_nothing_read_are_one_warning_line():
    r = cli("simulate", PENDULUM, *SHORT, "-snes_monitor", "-parmbs_maggi_ksp_type", "gmres",
            petsc_options="-parmbs_ksp_tpye gmres")
    assert r.returncode == 0, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("parmbs: warning:"), r.stderr
    for name in ("-snes_monitor (command line)", "-parmbs_maggi_ksp_type (command line)",
                 "-parmbs_ksp_tpye (PETSC_OPTIONS)"):
        assert name in lines[0]
    assert "parmbs_init_snes_monitor" not in r.stderr + r.stdout     # the copies are not listed


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="no mpirun")
def test_two_ranks_log_view_and_bad_option():
    # the numpy path: with a cold numba cache both ranks first compile the planar step
    # kernels (measured: past the 120 s time-out on a loaded machine); -log_view does not
    # depend on the step's evaluation
    r = cli("simulate", PENDULUM, *SHORT, "--set", "simulation.compiled=off", "-log_view", mpi=2)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("PETSc Performance Summary") == 1 and "with 2 processors" in r.stdout
    r = cli("simulate", PENDULUM, *SHORT, "-parmbs_ksp_type", "bogus", mpi=2)
    assert r.returncode == 2 and r.stderr.count("parmbs: error: command line: -parmbs_ksp_type") == 1, r.stderr


# ----------------------------------------------------------------------------- in-process, docs


def test_second_command_in_one_process_gets_and_drops_its_options():
    """PETSc already runs (this pytest process): the options go into the database for
    the command and out after it; a bad one is still one line, exit 2."""
    from parmbs import cli as parmbs_cli
    from parmbs._petsc import PETSc
    opts = PETSc.Options()
    assert parmbs_cli.main(["info", PENDULUM, "-parmbs_ksp_type", "bogus"]) == 2
    assert parmbs_cli.main(["info", PENDULUM, "-parmbs_test_marker", "1", "-ksp_monitor"]) == 0
    assert not opts.hasName("parmbs_test_marker")
    assert not any(k.endswith("ksp_monitor") for k in opts.getAll())


def test_prefix_list_matches_the_source():
    """Every options prefix a parmbs solver sets is in PREFIXES (else unprefixed options
    would not reach it), and the README names each one."""
    from parmbs.petsc_options import PREFIXES
    found = set()
    for path in (ROOT / "parmbs").rglob("*.py"):
        text = path.read_text()
        found |= set(re.findall(r'(?:setOptionsPrefix\(|options_prefix=)"(parmbs_\w*_)"', text))
        found |= set(re.findall(r'^(?:TS_)?PREFIX = "(parmbs_\w*)"', text, re.M))
    found.discard("parmbs_probe_")
    assert found and found <= set(PREFIXES), found - set(PREFIXES)
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("### PETSc options"):]
    for pre in PREFIXES:
        assert f"-{pre}" in section, pre


def test_ts_adjoint_trajectory_is_in_memory_unless_asked(tmp_path):
    """PETSc 3.18's trajectory reads no prefix: -parmbs_ts_ts_trajectory_type memory was
    never read and TSAdjoint runs used the on-disk 'basic' trajectory (one file per step).
    -help prints the trajectory's type as PETSc has it when the TS reads its options."""
    grad = ["gradient", DOUBLE, *TS, "--method", "adjoint", "--json", str(tmp_path / "g.json"), "-help"]
    r = cli(*grad, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "-ts_trajectory_type <now memory" in r.stdout
    r = cli(*grad, "-parmbs_ts_trajectory_type", "basic", cwd=tmp_path)
    assert r.returncode == 0 and "-ts_trajectory_type <now basic" in r.stdout, r.stderr
