"""Batch-parallel gradients under MPI: every grouping gives the serial gradient.

    mpirun -n 2 python -m pytest -q --with-mpi -m mpi tests/test_parallel_mpi.py
    mpirun -n 1 python -m pytest -q --with-mpi -m mpi tests/test_parallel_mpi.py

Each rank also computes the serial reference alone on COMM_SELF.  Groupings tried:
G = 1 (state-parallel over all ranks), G = size (one rank per group) and, from 4 ranks
on, G = size/2 (hybrid: groups of 2 state-parallel ranks).  The five-bar is below
parallel.DISTRIBUTE_MIN_UNKNOWNS, so a group of several ranks would run it replicated
(sensitivity/batch.py task_comm; tests/test_small_mpi.py): ``DISTRIBUTE`` forces the
state-parallel path these groupings test.  The ≤ 1e-12
comparison needs the same factorization in every group.  One-rank groups factor
as the serial run does; a multi-rank group uses MUMPS by default, whose different
pivoting moves the Newton iterates by round-off — amplified to ≈ 2e-11 in ψ3
(accelerations are solved to the Newton tolerance, see tests/test_mpi.py), and to
≈ 2e-10 in tiny entries of ∇ψ1 and in FD quotients (round-off / step).  The
fixture ``same_lu`` therefore selects ``pc_type redundant`` (every rank of a group
factors the gathered matrix as the serial run does) for the 1e-12 comparisons;
``test_one_rank_groups_equal_serial_with_default_solvers`` uses the defaults.
"""
from __future__ import annotations

import json
import pathlib
import shutil
import tempfile

import numpy as np
import pytest

from parmbs import parallel
from parmbs._petsc import PETSc
from parmbs.config import load_config
from parmbs.sensitivity.batch import batch_gradient
from parmbs.sensitivity.problem import Problem

ROOT = pathlib.Path(__file__).parents[1]
FIVEBAR = str(ROOT / "configs" / "fivebar.toml")
SHORT = ["simulation.t_end=0.02", "simulation.progress=false"]
DISTRIBUTE = ["parallel.distribute=always"]
SCENARIOS = """
[[scenarios]]
name = "soft"
set = { "forces.S1.stiffness" = 60.0 }

[[scenarios]]
name = "stiff"
weight = 0.5
set = { "forces.S1.stiffness" = 150.0 }

[[scenarios]]
name = "damped"
set = { "forces.S2.damping" = 3.0 }
"""
REDUNDANT = {"parmbs_pc_type": "redundant", "parmbs_redundant_pc_type": "lu",
             "parmbs_redundant_pc_factor_mat_ordering_type": "natural",
             "parmbs_init_pc_type": "redundant", "parmbs_init_redundant_pc_type": "lu",
             "parmbs_init_redundant_pc_factor_mat_solver_type": "mumps"}


@pytest.fixture
def same_lu():
    """The options above for one test, then removed.  Not restored to their earlier
    values: those are a config's defaults (e.g. parmbs_init_pc_type = lu, set by
    petsc_options.set_config_options), and a value put back by hand counts as the
    user's from then on (the config no longer owns it), so a later test's run in this
    process could not set its own (test_ts_mpi's PCREDUNDANT initial assembly saw "lu").
    Removed, the next run's config sets them again."""
    opts = PETSc.Options()
    for k, v in REDUNDANT.items():
        opts.setValue(k, v)
    yield
    for k in REDUNDANT:
        opts.delValue(k)


@pytest.fixture
def shared_tmp():
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    d = tempfile.mkdtemp(prefix="parmbs-par-") if comm.rank == 0 else None
    d = comm.bcast(d, root=0)
    yield pathlib.Path(d)
    comm.Barrier()
    if comm.rank == 0:
        shutil.rmtree(d, ignore_errors=True)


def _scenario_file(tmp, extra=SCENARIOS):
    from mpi4py import MPI
    f = tmp / "fivebar-scenarios.toml"
    if MPI.COMM_WORLD.rank == 0:
        f.write_text(open(FIVEBAR).read() + extra)
    MPI.COMM_WORLD.Barrier()
    return str(f)


def _serial(cfg, method):
    pr = Problem(cfg, comm=PETSc.COMM_SELF)
    if method == "fd":
        g = pr.finite_differences(cfg.sensitivity.fd_step)
    else:
        pr.forward()
        g = pr.direct() if method == "direct" else pr.adjoint()
    return pr.objective_values(), g


def _rel(a, b):
    return float(np.max(np.abs(np.asarray(a) - b)) / max(np.max(np.abs(b)), 1e-300))


def _groupings():
    """1 (state-parallel), size (one rank per group) and, from 4 ranks, size/2 (hybrid)."""
    from mpi4py import MPI
    size = MPI.COMM_WORLD.size
    return sorted({1, size} | ({size // 2} if size >= 4 else set()))


@pytest.mark.mpi
@pytest.mark.parametrize("method", ["direct", "adjoint", "fd"])
def test_every_grouping_equals_serial(method, same_lu):
    ov = SHORT if method != "fd" else ["simulation.t_end=0.005", "simulation.progress=false"]
    cfg = load_config(FIVEBAR, ov + DISTRIBUTE)
    vals, ref = _serial(cfg, method)
    worst = 0.0
    for G in _groupings():
        lay = parallel.make_layout(G)
        res = batch_gradient(cfg, method, lay)
        for o in ref:
            worst = max(worst, _rel(res.total_gradients[o], ref[o]))
            assert _rel(res.total_gradients[o], ref[o]) <= 1e-12, (G, o)
            assert abs(res.total_values[o] - vals[o]) <= 1e-12 * abs(vals[o]), (G, o)
        res.destroy()
        lay.free()
    print(f"{method}: worst relative difference to serial over groupings {_groupings()}: {worst:.1e}")


@pytest.mark.mpi
def test_one_rank_groups_equal_serial_with_default_solvers():
    """No solver options: G = size puts one rank in each group (PETSc LU, as serially)."""
    from mpi4py import MPI
    cfg = load_config(FIVEBAR, SHORT)
    vals, ref = _serial(cfg, "direct")
    lay = parallel.make_layout(MPI.COMM_WORLD.size)
    res = batch_gradient(cfg, "direct", lay)
    assert lay.mode in ("batch-parallel", "serial")
    for o in ref:
        assert _rel(res.total_gradients[o], ref[o]) <= 1e-12, o
    res.destroy()
    lay.free()


@pytest.mark.mpi
def test_scenario_batches_equal_serial(shared_tmp, same_lu):
    path = _scenario_file(shared_tmp)
    cfg = load_config(path, SHORT + DISTRIBUTE)
    over = {"soft": ["forces.S1.stiffness=60.0"], "stiff": ["forces.S1.stiffness=150.0"],
            "damped": ["forces.S2.damping=3.0"]}
    refs = {s: _serial(load_config(FIVEBAR, SHORT + ov), "adjoint") for s, ov in over.items()}
    for G in _groupings():
        lay = parallel.make_layout(G)
        res = batch_gradient(cfg, "adjoint", lay)
        for s, (vals, ref) in refs.items():
            for o in ref:
                assert _rel(res.gradients[s][o], ref[o]) <= 1e-12, (G, s, o)
                assert abs(res.values[s][o] - vals[o]) <= 1e-12 * abs(vals[o])
        res.destroy()
        lay.free()


@pytest.mark.mpi
def test_failing_group_stops_every_rank(shared_tmp, capsys):
    """One scenario's Newton fails in one group: every rank raises the same error (no hang),
    and the CLI exits 1 on every rank, rank 0 printing one line naming batch and step."""
    from mpi4py import MPI
    from parmbs.cli import main
    comm = MPI.COMM_WORLD
    path = _scenario_file(shared_tmp, """
[[scenarios]]
name = "ok"
set = { "forces.S1.stiffness" = 90.0 }

[[scenarios]]
name = "bad"
set = { "simulation.newton.max_it" = 1 }
""")
    lay = parallel.make_layout(comm.size)
    with pytest.raises(parallel.GroupFailure) as ei:
        batch_gradient(load_config(path, SHORT), "adjoint", lay)
    msgs = comm.allgather(str(ei.value))
    assert len(set(msgs)) == 1 and "'bad'" in msgs[0] and "step 1 " in msgs[0], msgs
    lay.free()
    capsys.readouterr()
    rc = main(["gradient", path, "--set", "simulation.t_end=0.02", "--groups", str(comm.size)])
    assert comm.allgather(rc) == [1] * comm.size
    err = capsys.readouterr().err
    if comm.rank == 0:
        assert err.count("\n") == 1 and "computation failed: batch" in err and "Newton" in err, err
    else:
        assert err == ""


@pytest.mark.mpi
def test_cli_groups_json_matches_in_process(shared_tmp, capsys):
    from mpi4py import MPI
    from parmbs.cli import main
    comm = MPI.COMM_WORLD
    js = shared_tmp / "g.json"
    rc = main(["gradient", FIVEBAR, "--set", "simulation.t_end=0.02", "--method", "direct",
               "--groups", str(comm.size), "--json", str(js)])
    assert comm.allgather(rc) == [0] * comm.size
    out = capsys.readouterr()
    if comm.rank:
        assert out.out == "" and out.err == ""
    cfg = load_config(FIVEBAR, ["simulation.t_end=0.02"])
    vals, ref = _serial(cfg, "direct")
    comm.Barrier()
    doc = json.loads(js.read_text())
    # G = 1 without scenarios runs the single-problem path, whose JSON has no "groups"
    assert doc["ranks"] == comm.size and doc.get("groups", 1) == comm.size and doc["method"] == "direct"
    assert "scenarios" not in doc
    for o, g in ref.items():
        got = [doc["objectives"][o]["gradient"][n] for n in doc["design"]]
        assert _rel(got, g) <= 1e-12
        assert doc["objectives"][o]["value"] == pytest.approx(vals[o], rel=1e-12)
