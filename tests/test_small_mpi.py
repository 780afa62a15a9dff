"""A model too small to distribute, under `mpirun -n 2` (parmbs/parallel.py, replicate_small):

    mpirun -n 2 python -m pytest -q --with-mpi -m mpi tests/test_small_mpi.py

* ``simulate`` of the five-bar (22 unknowns < DISTRIBUTE_MIN_UNKNOWNS) runs replicated:
  every linear operator lives on a one-rank communicator, the start-up line is printed
  once (rank 0), and the file rank 0 writes equals a serial run bit for bit (the same
  operations: PETSc LU on one rank);
* ``parallel.distribute = "always"`` still distributes (every operator on both ranks,
  no start-up line);
* ``gradient`` of the same model is split into batch-parallel groups automatically
  (one line saying so; ``"groups": 2`` in the JSON);
* ``gradient`` of load cases (the README's example, configs/buggy-lane-change-speeds.toml)
  is split likewise, one rank per group, and equals the serial run bit for bit; with
  ``--groups 1`` the one group of all ranks runs it replicated, not distributed;
* a failure on one rank only of a replicated run ends the job with one line (mpirun
  subprocess from the serial suite, like tests/test_rank_failure.py).
"""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).parents[1]
FIVEBAR = str(ROOT / "configs" / "fivebar.toml")
SHORT = ["--set", "simulation.t_end=0.05", "--set", "simulation.progress=false"]
SPEEDS = str(ROOT / "configs" / "buggy-lane-change-speeds.toml")
# 4 load cases × 4 steps of 10 ms; the steering pulses moved to t = 0 (before the file's
# t = 2 s the roll rate is round-off: tests/test_verify_configs.py HORIZON)
SPEEDS_SHORT = ["simulation.t_end=0.04", "simulation.dt=1e-2", "simulation.progress=false",
                "spatial.joints.steer_fl.function.starts=[0.0,7.0]", "spatial.joints.steer_fr.function.starts=[0.0,7.0]"]


@pytest.fixture
def shared_tmp():
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    d = tempfile.mkdtemp(prefix="parmbs-small-") if comm.rank == 0 else None
    d = comm.bcast(d, root=0)
    yield pathlib.Path(d)
    comm.Barrier()
    if comm.rank == 0:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def operator_sizes(monkeypatch):
    """The communicator size of every SparseOperator built while the test runs."""
    from parmbs.model import assembly
    sizes = []
    init = assembly.SparseOperator.__init__

    def spy(self, N, blocks, comm=None, *a, **kw):
        init(self, N, blocks, comm, *a, **kw)
        sizes.append(self.comm.getSize())
    monkeypatch.setattr(assembly.SparseOperator, "__init__", spy)
    return sizes


def _serial_forward(overrides):
    """The serial run's trajectory: the Problem on PETSc.COMM_SELF (a one-rank run)."""
    from parmbs._petsc import PETSc
    from parmbs.config import load_config
    from parmbs.sensitivity.problem import Problem
    pr = Problem(load_config(FIVEBAR, overrides), comm=PETSc.COMM_SELF)
    return pr, pr.forward()


def _notes(text):
    return [line for line in text.splitlines() if line.startswith("parallel: ")]


@pytest.mark.mpi(min_size=2)
def test_small_model_runs_replicated_and_equals_serial_bitwise(shared_tmp, capsys, operator_sizes):
    from mpi4py import MPI
    import h5py
    from parmbs.cli import main
    from parmbs.parallel import DISTRIBUTE_MIN_UNKNOWNS
    comm = MPI.COMM_WORLD
    h5 = shared_tmp / "run.h5"
    rc = main(["simulate", FIVEBAR, *SHORT, "-o", str(h5)])
    assert comm.allgather(rc) == [0] * comm.size
    out = capsys.readouterr()
    assert operator_sizes and set(operator_sizes) == {1}, operator_sizes     # nothing distributed
    if comm.rank == 0:
        assert _notes(out.out) == [
            f"parallel: 22 unknowns < {DISTRIBUTE_MIN_UNKNOWNS}: too small to distribute; each of the "
            f"{comm.size} ranks runs the model serially (replicated, same numbers as one rank; force "
            "distribution with parallel.distribute = \"always\" or --set parallel.distribute=always)"], out.out
    else:
        assert out.out == "" and out.err == ""
    _, tr = _serial_forward(SHORT[1::2])
    comm.Barrier()
    with h5py.File(h5, "r") as f:
        g = f["trajectory"]
        for name, ref in (("t", tr.t), ("q", tr.q), ("v", tr.v), ("a", tr.a), ("lambda", tr.lam)):
            assert np.array_equal(g[name][:], ref), name         # bit for bit, not to a tolerance


@pytest.mark.mpi(min_size=2)
def test_forced_distribution_still_distributes(shared_tmp, capsys, operator_sizes):
    from mpi4py import MPI
    import h5py
    from parmbs.cli import main
    comm = MPI.COMM_WORLD
    h5 = shared_tmp / "dist.h5"
    rc = main(["simulate", FIVEBAR, *SHORT, "--set", "parallel.distribute=always", "-o", str(h5)])
    assert comm.allgather(rc) == [0] * comm.size
    out = capsys.readouterr()
    assert operator_sizes and set(operator_sizes) == {comm.size}, operator_sizes
    assert _notes(out.out) == []
    comm.Barrier()
    with h5py.File(h5, "r") as f:        # the values against an in-process distributed run: test_cli_mpi.py
        assert f["trajectory"].attrs["valid_steps"] == 50 and f["meta"].attrs["ranks"] == comm.size


@pytest.mark.mpi(min_size=2)
def test_small_gradient_splits_into_batches(shared_tmp, capsys):
    from mpi4py import MPI
    from parmbs.cli import main
    comm = MPI.COMM_WORLD
    js = shared_tmp / "g.json"
    rc = main(["gradient", FIVEBAR, *SHORT, "--method", "direct", "--json", str(js)])
    assert comm.allgather(rc) == [0] * comm.size
    out = capsys.readouterr()
    if comm.rank == 0:
        assert _notes(out.out) == [
            f"parallel: model too small to distribute; 5 design columns split over {comm.size} batch-parallel "
            "groups (one rank each; --groups 1 for replicated serial, parallel.distribute = \"always\" to "
            "distribute)"], out.out
    else:
        assert out.out == ""
    pr, _ = _serial_forward(SHORT[1::2])
    values, grads = pr.objective_values(), pr.direct()
    comm.Barrier()
    doc = json.loads(js.read_text())
    assert doc["groups"] == comm.size
    for o, g in grads.items():
        assert doc["objectives"][o]["value"] == values[o]              # the same forward run
        got = np.array([doc["objectives"][o]["gradient"][n] for n in pr.design.names])
        assert np.array_equal(got, g), (o, got - g)      # one-rank groups: the serial column solves


@pytest.mark.mpi(min_size=2)
def test_small_load_cases_split_into_batches_and_equal_serial(shared_tmp, capsys, operator_sizes):
    """The README's `mpirun -n 2 parmbs gradient configs/buggy-lane-change-speeds.toml`:
    no --groups, so one batch-parallel group per rank (the start-up line), nothing
    distributed, and the JSON's per-scenario values and gradients and their weighted
    sums are the serial ones bit for bit (one-rank groups do the serial run's operations).
    ``--groups 1``: replicated on every rank (before: MUMPS over all ranks, 25× the serial CPU)."""
    from mpi4py import MPI
    from parmbs._petsc import PETSc
    from parmbs.cli import main
    from parmbs.config import load_config
    from parmbs.sensitivity.problem import Problem
    from parmbs.sensitivity.scenarios import resolve_scenarios
    comm = MPI.COMM_WORLD
    sets = [a for kv in SPEEDS_SHORT for a in ("--set", kv)]
    docs = {}
    for groups in ([], ["--groups", "1"]):
        js = shared_tmp / f"g{len(groups)}.json"
        rc = main(["gradient", SPEEDS, *sets, *groups, "--json", str(js)])
        assert comm.allgather(rc) == [0] * comm.size
        out = capsys.readouterr()
        assert operator_sizes and set(operator_sizes) == {1}, (groups, operator_sizes)    # nothing distributed
        operator_sizes.clear()
        if comm.rank == 0:
            want = (f"4 (load case, objective) pairs (4 [[scenarios]] × 1 objectives) split over {comm.size} "
                    "batch-parallel groups" if not groups else f"each of the {comm.size} ranks runs the model serially")
            assert len(_notes(out.out)) == 1 and want in _notes(out.out)[0], out.out
        else:
            assert out.out == ""
        comm.Barrier()
        docs[len(groups)] = json.loads(js.read_text())
    assert docs[0]["groups"] == comm.size and docs[2]["groups"] == 1
    scs = resolve_scenarios(load_config(SPEEDS, SPEEDS_SHORT))
    assert [sc.name for sc in scs] == ["v6", "v8", "v10", "v12"]
    vals, grads = {}, {}
    for sc in scs:
        pr = Problem(sc.config, comm=PETSc.COMM_SELF)
        pr.forward()
        vals[sc.name], grads[sc.name] = pr.objective_values(), pr.adjoint()
    names = list(docs[0]["design"])
    for doc in docs.values():
        assert doc["objectives"].keys() == {"chassis_roll_rate"}
        for o, od in doc["objectives"].items():
            for sc in scs:
                sd = doc["scenarios"][sc.name]["objectives"][o]
                assert sd["value"] == vals[sc.name][o] and vals[sc.name][o] > 0
                assert [sd["gradient"][n] for n in names] == list(grads[sc.name][o])
            # the weighted sums as batch_gradient forms them, in scenario order
            assert od["value"] == float(sum(sc.weight * vals[sc.name][o] for sc in scs))
            total = sum((sc.weight * grads[sc.name][o] for sc in scs), np.zeros(len(names)))
            assert [od["gradient"][n] for n in names] == list(total)


def test_one_rank_failure_in_a_replicated_run_ends_the_job(tmp_path):
    """Serial suite: rank 1 alone fails at step 5 of a replicated run, in which no
    collective call happens inside the run; the job still ends with one line."""
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        pytest.skip("mpirun not installed")
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_mpi_yield_when_idle": "1", "PARMBS_RANK_FAIL": "1:forward:5:raise",
           "PARMBS_FAILURE_TIMEOUT": "1", "PARMBS_TEST_FAULTS": "1"}
    r = subprocess.run([mpirun, "--oversubscribe", "-n", "2", sys.executable, "-m", "parmbs", "simulate", FIVEBAR,
                        "--set", "simulation.t_end=0.2", "--set", "simulation.dt=1e-2", *SHORT[2:],
                        "-o", "x.h5"], capture_output=True, text=True, timeout=180, env=env, cwd=tmp_path)
    assert r.returncode != 0, (r.stdout, r.stderr)
    assert len(_notes(r.stdout)) == 1, r.stdout                       # it did run replicated
    errors = [line for line in r.stderr.splitlines() if line.startswith("parmbs: error:")]
    assert len(errors) == 1 and "forward step 5 failed on rank 1 only" in errors[0], r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "x.h5").exists()                           # nothing half-written kept as a result
