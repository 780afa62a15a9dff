"""The CLI on 2 ranks, in-process:

    mpirun --allow-run-as-root -n 2 python -m pytest --with-mpi tests/test_cli_mpi.py

Rank 0 alone writes the files; their content must equal the trajectory and gradient
computed in-process on the same communicator; only rank 0 prints; error paths give
the same exit code on every rank (and do not hang).
"""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import tempfile

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).parents[1]
FIVEBAR = str(ROOT / "configs" / "fivebar.toml")


@pytest.fixture
def shared_tmp():
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    d = tempfile.mkdtemp(prefix="parmbs-mpi-") if comm.rank == 0 else None
    d = comm.bcast(d, root=0)
    yield pathlib.Path(d)
    comm.Barrier()
    if comm.rank == 0:
        shutil.rmtree(d, ignore_errors=True)


def _problem(overrides):
    from parmbs.config import load_config
    from parmbs.sensitivity.problem import Problem
    return Problem(load_config(FIVEBAR, overrides))


@pytest.mark.mpi(min_size=2)
def test_simulate_file_matches_forward(shared_tmp, capsys):
    from mpi4py import MPI
    import h5py
    from parmbs.cli import main
    comm = MPI.COMM_WORLD
    h5 = shared_tmp / "run.h5"
    # distributed like _problem's (the five-bar alone would run replicated: test_small_mpi.py)
    rc = main(["simulate", FIVEBAR, "--set", "simulation.t_end=0.1", "--set", "parallel.distribute=always",
               "-o", str(h5)])
    assert comm.allgather(rc) == [0] * comm.size
    out = capsys.readouterr()
    if comm.rank == 0:
        assert "wrote" in out.out
    else:
        assert out.out == "" and out.err == ""           # only rank 0 prints
    pr = _problem(["simulation.t_end=0.1"])
    tr = pr.forward()
    comm.Barrier()
    with h5py.File(h5, "r") as f:
        g = f["trajectory"]
        assert g.attrs["valid_steps"] == pr.nsteps == 100
        assert f["meta"].attrs["ranks"] == comm.size
        for name, ref in (("t", tr.t), ("q", tr.q), ("v", tr.v), ("a", tr.a), ("lambda", tr.lam)):
            got = g[name][:]
            assert got.shape == ref.shape
            np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12, err_msg=name)


@pytest.mark.mpi(min_size=2)
def test_gradient_json_matches_adjoint(shared_tmp):
    from mpi4py import MPI
    from parmbs.cli import main
    comm = MPI.COMM_WORLD
    js = shared_tmp / "g.json"
    rc = main(["gradient", FIVEBAR, "--set", "simulation.t_end=0.05", "--set", "parallel.distribute=always",
               "--json", str(js)])
    assert comm.allgather(rc) == [0] * comm.size
    pr = _problem(["simulation.t_end=0.05"])
    pr.forward()
    values, adj = pr.objective_values(), pr.adjoint()
    comm.Barrier()
    doc = json.loads(js.read_text())
    assert doc["ranks"] == comm.size and doc["method"] == "adjoint"
    for o, g in adj.items():
        assert doc["objectives"][o]["value"] == pytest.approx(values[o], rel=1e-12)
        got = [doc["objectives"][o]["gradient"][n] for n in pr.design.names]
        np.testing.assert_allclose(got, g, rtol=1e-12, atol=1e-14 * np.max(np.abs(g)))


@pytest.mark.mpi(min_size=2)
def test_errors_same_exit_code_on_all_ranks(shared_tmp, capsys):
    from mpi4py import MPI
    from parmbs.cli import main
    comm = MPI.COMM_WORLD
    cases = [
        (["simulate", FIVEBAR, "--set", "bodies.A1.mass=-1"], 2),
        (["simulate", FIVEBAR, "--set", "simulation.t_end=0.05", "--set", "bodies.A1.points.P1.x=10"], 2),
        (["simulate", FIVEBAR, "--set", "simulation.t_end=0.05", "--set", "simulation.newton.max_it=1",
          "-o", str(shared_tmp / "fail.h5")], 1),
        (["simulate", FIVEBAR, "--set", "simulation.t_end=0.05", "-o", str(shared_tmp / "no" / "x.h5")], 2),
        (["gradient", FIVEBAR, "--set", "simulation.t_end=0.05", "--json", str(shared_tmp / "no" / "g.json")], 2),
        (["plot", FIVEBAR], 2),
    ]
    for argv, code in cases:
        rc = main(argv)
        assert comm.allgather(rc) == [code] * comm.size, argv
        out = capsys.readouterr()
        if comm.rank == 0:
            assert out.err.count("\n") == 1 and out.err.startswith("parmbs: error: "), out.err
        else:
            assert out.err == "" and out.out == ""
