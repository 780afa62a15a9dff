"""Batch splitting, scenarios and the batch driver on one rank.

The plan is checked as a partition (every unit of every scenario exactly once,
chunks of one scenario within one unit of each other) and for balance; the batch
driver is run with more batches than groups (``nbatches``) so that the splitting
itself is exercised serially and must reproduce the unsplit gradient to round-off.
The same under mpirun: tests/test_parallel_mpi.py.
"""
from __future__ import annotations

import numpy as np
import pytest

from parmbs import parallel
from parmbs._petsc import PETSc
from parmbs.config import ConfigError, load_config
from parmbs.sensitivity.batch import CostModel, Task, _chunks, batch_gradient, plan, scenario_costs
from parmbs.sensitivity.problem import Problem
from parmbs.sensitivity.scenarios import resolve_scenarios

from conftest import CONFIGS

FIVEBAR = str(CONFIGS / "fivebar.toml")
SHORT = ["simulation.t_end=0.02", "simulation.progress=false"]

SCENARIOS = """
[[scenarios]]
name = "soft"
set = { "forces.S1.stiffness" = 60.0 }

[[scenarios]]
name = "stiff"
weight = 0.5
set = { "forces.S1.stiffness" = 150.0, "forces.S2.damping" = 2.0 }

[[scenarios]]
name = "short"
set = { "simulation.t_end" = 0.01 }
"""


def _with_scenarios(tmp_path, text=SCENARIOS):
    f = tmp_path / "fivebar-scenarios.toml"
    f.write_text(open(FIVEBAR).read() + text)
    return str(f)


def _assert_partition(p, nunits):
    seen = {s: [] for s in range(len(nunits))}
    for b in p.batches:
        for t in b:
            seen[t.scenario].extend(t.units)
    for s, n in enumerate(nunits):
        assert sorted(seen[s]) == list(range(n)), (s, seen[s])


# ----------------------------------------------------------------------------- splitting


@pytest.mark.parametrize("n,k", [(5, 2), (64, 2), (7, 3), (2, 5), (1, 1), (0, 3)])
def test_chunks_contiguous_and_even(n, k):
    ch = _chunks(n, k)
    assert [i for c in ch for i in c] == list(range(n))
    sizes = [len(c) for c in ch]
    assert max(sizes) - min(sizes) <= 1 and len(ch) <= max(k, 1)


def test_uneven_design_count_over_two_groups():
    # 5 design variables of one scenario on 2 groups: 3 + 2, not 5 + 0
    p = plan([10.0], [1.0], [5], 2)
    assert sorted(len(b[0].units) for b in p.batches) == [2, 3]
    _assert_partition(p, [5])
    assert p.makespan == pytest.approx(13.0)


def test_equal_scenarios_go_whole_and_balanced():
    # 8 equal load cases, 2 groups: 4 whole scenarios each (no forward run replicated)
    p = plan([100.0] * 8, [1.0] * 8, [3] * 8, 2)
    assert p.strategy == "whole"
    assert [len(b) for b in p.batches] == [4, 4]
    assert all(len(t.units) == 3 for b in p.batches for t in b)


def test_cost_sizing_separates_long_scenarios():
    # two long and two short scenarios: each group gets one long and one short
    p = plan([10.0, 1.0, 10.0, 1.0], [0.0] * 4, [1] * 4, 2)
    assert sorted(sorted(t.scenario for t in b) for b in p.batches) == [[0, 1], [2, 3]] or \
        sorted(sorted(t.scenario for t in b) for b in p.batches) == [[0, 3], [1, 2]]
    assert p.cost == [11.0, 11.0]


def test_split_beats_whole_when_scenarios_do_not_divide():
    # 3 scenarios, cheap forward, many design variables: splitting each over both groups
    # (costs 3 fixed + 96 units each) beats whole scenarios (2 × 65 on one group)
    p = plan([1.0] * 3, [1.0] * 3, [64] * 3, 2)
    assert p.strategy == "split"
    _assert_partition(p, [64] * 3)
    assert p.makespan < 2 * 65


def test_fewer_scenarios_than_groups_allocates_by_cost():
    # one expensive and one cheap scenario on 3 groups: the expensive one gets 2
    p = plan([1.0, 1.0], [1.0, 1.0], [40, 4], 3)
    assert p.strategy == "allocate"
    per = [sum(1 for b in p.batches for t in b if t.scenario == s) for s in (0, 1)]
    assert per == [2, 1]
    _assert_partition(p, [40, 4])


def test_random_plans_are_partitions_and_not_worse_than_whole():
    rng = np.random.default_rng(7)
    for _ in range(200):
        S, G = int(rng.integers(1, 6)), int(rng.integers(1, 6))
        fixed = list(rng.uniform(0.1, 10, S))
        unit = list(rng.uniform(0.01, 2, S))
        nunits = [int(x) for x in rng.integers(0, 20, S)]
        p = plan(fixed, unit, nunits, G)
        assert len(p.batches) == G
        _assert_partition(p, nunits)
        serial = sum(f + n * u for f, u, n in zip(fixed, unit, nunits))
        assert p.makespan <= serial + 1e-12
        assert p.makespan >= serial / G - 1e-12


def test_cost_model_scales_with_steps(tmp_path):
    scs = resolve_scenarios(load_config(_with_scenarios(tmp_path), SHORT))
    fixed, unit, n = scenario_costs(scs, "direct", CostModel(), 5)
    assert n == [5, 5, 5]
    assert fixed[2] == pytest.approx(fixed[0] / 2)        # "short" has half the steps
    fixed_a, unit_a, n_a = scenario_costs(scs, "adjoint", CostModel(), 5)
    assert n_a == [3, 3, 3] and unit_a[0] > 0


# ----------------------------------------------------------------------------- layout


@pytest.mark.parametrize("size,groups", [(2, 2), (5, 2), (7, 3), (4, 1), (1024, 64)])
def test_group_of_contiguous_sizes_within_one(size, groups):
    g = [parallel.group_of(r, size, groups) for r in range(size)]
    assert g == sorted(g) and set(g) == set(range(groups))
    counts = np.bincount(g)
    assert counts.max() - counts.min() <= 1


def test_layout_rejects_more_groups_than_ranks():
    from mpi4py import MPI
    with pytest.raises(parallel.LayoutError, match="need at least"):
        parallel.make_layout(MPI.COMM_SELF.size + 1, world=MPI.COMM_SELF)
    with pytest.raises(parallel.LayoutError):
        parallel.make_layout(0, world=MPI.COMM_SELF)


# ----------------------------------------------------------------------------- batch driver


def _self_layout():
    from mpi4py import MPI
    return parallel.make_layout(1, world=MPI.COMM_SELF)


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


@pytest.mark.parametrize("method", ["direct", "adjoint"])
def test_batches_reproduce_unsplit_gradient(method):
    """1, 2, 3 and 5 batches (5: every design column alone).  A one-column batch runs
    other BLAS kernels (matrix-vector instead of matrix-matrix products) than the
    five-column run; ψ3 = ∫|r̈|² amplifies that round-off to 1.2e-12 of ‖∇ψ3‖∞ at
    t_end = 0.02 and 2.3e-13 at t_end = 0.05 (used here)."""
    cfg = load_config(FIVEBAR, ["simulation.t_end=0.05", "simulation.progress=false"])
    pr = Problem(cfg, comm=PETSc.COMM_SELF)
    pr.forward()
    ref = pr.direct() if method == "direct" else pr.adjoint()
    vals = pr.objective_values()
    lay = _self_layout()
    for nb in (1, 2, 3, 5):
        res = batch_gradient(cfg, method, lay, nbatches=nb)
        assert len(res.plan.batches) == nb
        for o in ref:
            assert _rel(res.total_gradients[o], ref[o]) <= 1e-12, (nb, o)
            assert res.total_values[o] == pytest.approx(vals[o], rel=1e-14)
        res.destroy()
    lay.free()


def test_fd_batches_match_problem_fd():
    cfg = load_config(FIVEBAR, ["simulation.t_end=0.005", "simulation.progress=false"])
    pr = Problem(cfg, comm=PETSc.COMM_SELF)
    ref = pr.finite_differences(cfg.sensitivity.fd_step)
    lay = _self_layout()
    res = batch_gradient(cfg, "fd", lay, nbatches=2)
    for o in ref:
        assert _rel(res.total_gradients[o], ref[o]) <= 1e-12
    res.destroy()
    lay.free()


def test_scenarios_per_case_and_weighted_sum(tmp_path):
    path = _with_scenarios(tmp_path)
    cfg = load_config(path, SHORT)
    lay = _self_layout()
    res = batch_gradient(cfg, "adjoint", lay, nbatches=2)
    cases = {"soft": ["forces.S1.stiffness=60.0"],
             "stiff": ["forces.S1.stiffness=150.0", "forces.S2.damping=2.0"],
             "short": ["simulation.t_end=0.01"]}
    for name, ov in cases.items():
        pr = Problem(load_config(FIVEBAR, SHORT + ov), comm=PETSc.COMM_SELF)
        pr.forward()
        ref, vals = pr.adjoint(), pr.objective_values()
        for o in ref:
            assert _rel(res.gradients[name][o], ref[o]) <= 1e-12, (name, o)
            assert res.values[name][o] == pytest.approx(vals[o], rel=1e-14)
    w = {"soft": 1.0, "stiff": 0.5, "short": 1.0}
    for o in res.objectives:
        tot = sum(w[s] * res.gradients[s][o] for s in w)
        np.testing.assert_allclose(res.total_gradients[o], tot, rtol=1e-14)
    assert res.values["soft"]["psi1"] != res.values["stiff"]["psi1"]   # the overrides took effect
    res.destroy()
    lay.free()


def test_failed_batch_names_batch_scenario_and_step(tmp_path):
    path = _with_scenarios(tmp_path, """
[[scenarios]]
name = "ok"
set = { "forces.S1.stiffness" = 90.0 }

[[scenarios]]
name = "bad"
set = { "simulation.newton.max_it" = 1 }
""")
    lay = _self_layout()
    with pytest.raises(parallel.GroupFailure) as ei:
        batch_gradient(load_config(path, SHORT), "adjoint", lay, nbatches=2)
    msg = str(ei.value)
    assert ei.value.code == 1
    assert "batch 2/2" in msg and "'bad'" in msg and "step 1 " in msg and "forward run" in msg, msg
    lay.free()


# ----------------------------------------------------------------------------- config errors


@pytest.mark.parametrize("text,key,what", [
    ('set = { "forces.NOPE.stiffness" = 1.0 }', "scenarios.x.set.forces.NOPE.stiffness", "no entry"),
    ('set = { "forces.S1.stiffnes" = 1.0 }', "scenarios.x.set.forces.S1.stiffnes", "unknown key"),
    ('set = { "bodies.A1.mass" = -1.0 }', "scenarios.x.set.bodies.A1.mass", "must be >"),
    ('set = { "design.Ls1.path" = "x" }', "scenarios.x.set", "cannot override"),
    ('set = {}', "scenarios.x.set", "must not be empty"),
    ('set = { "simulation.t_end" = 1.0 }\nspeed = 2', "scenarios.x.speed", "unknown key"),
    ('set = { "simulation.dt" = 2.0 }', "scenarios.x.set.simulation.dt", "exceeds t_end"),
])
def test_bad_scenarios_name_file_and_key(tmp_path, text, key, what):
    path = _with_scenarios(tmp_path, f'\n[[scenarios]]\nname = "x"\n{text}\n')
    with pytest.raises(ConfigError) as ei:
        resolve_scenarios(load_config(path, SHORT))
    e = ei.value
    assert e.file == path and e.key == key and what in e.message, (e.key, e.message)


def test_duplicate_scenario_names(tmp_path):
    path = _with_scenarios(tmp_path, '\n[[scenarios]]\nname = "a"\nset = { "simulation.t_end" = 0.01 }\n' * 2)
    with pytest.raises(ConfigError, match="scenarios.a.name: duplicate"):
        resolve_scenarios(load_config(path, SHORT))


def test_cli_bad_scenario_exit_2_one_line(tmp_path, capsys):
    from parmbs.cli import main
    path = _with_scenarios(tmp_path, '\n[[scenarios]]\nname = "x"\nset = { "joints.JX.a" = "A1.O" }\n')
    assert main(["gradient", path, "--set", "simulation.t_end=0.01"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"parmbs: error: {path}: scenarios.x.set.joints.JX.a:"), err


def test_cli_groups_need_ranks(capsys):
    from parmbs.cli import main
    from mpi4py import MPI
    g = MPI.COMM_WORLD.size + 1
    assert main(["gradient", FIVEBAR, "--set", "simulation.t_end=0.01", "--groups", str(g)]) == 2
    err = capsys.readouterr().err
    assert f"{FIVEBAR}: --groups: {g} groups need at least {g} MPI ranks" in err
    assert main(["gradient", FIVEBAR, "--set", "simulation.t_end=0.01", "--groups", "0"]) == 2
    assert main(["gradient", FIVEBAR, "--set", "simulation.t_end=0.01", "--set", f"parallel.groups={g}"]) == 2
    assert "parallel.groups:" in capsys.readouterr().err


def test_cli_scenarios_json(tmp_path):
    import json
    from parmbs.cli import main
    path = _with_scenarios(tmp_path)
    js = tmp_path / "g.json"
    assert main(["gradient", path, "--set", "simulation.t_end=0.01", "--json", str(js)]) == 0
    doc = json.loads(js.read_text())
    assert doc["groups"] == 1 and set(doc["scenarios"]) == {"soft", "stiff", "short"}
    assert doc["scenarios"]["stiff"]["weight"] == 0.5
    for o, od in doc["objectives"].items():
        tot = sum(sc["weight"] * sc["objectives"][o]["value"] for sc in doc["scenarios"].values())
        assert od["value"] == pytest.approx(tot, rel=1e-14)
        assert set(od["gradient"]) == set(doc["design"])


def test_element_field_columns_split_between_batches(tmp_path):
    """An element-density field (one design entry, 32 columns) is split by columns
    (11 + 11 + 10), and the batch gradient equals the unsplit direct gradient; the
    JSON of the batch path shows the field as {"size", "norm", "hdf5"} (DESIGN.md)."""
    import json
    from parmbs.cli import main
    plate = str(CONFIGS / "plate-pendulum.toml")
    ov = ["simulation.t_end=0.006", "simulation.progress=false"]
    cfg = load_config(plate, ov)
    pr = Problem(cfg, comm=PETSc.COMM_SELF)
    pr.forward()
    ref = pr.direct()
    lay = _self_layout()
    res = batch_gradient(cfg, "direct", lay, nbatches=3)
    assert sorted(sum(len(t.units) for t in b) for b in res.plan.batches) == [10, 11, 11]
    assert len(res.design) == 32 and res.space.is_field("x")
    for o in ref:
        assert _rel(res.total_gradients[o], ref[o]) <= 1e-12, o
    res.destroy()
    lay.free()
    f = tmp_path / "plate-scenarios.toml"
    f.write_text(open(plate).read() + '\n[[scenarios]]\nname = "g2"\nset = { "model.gravity" = [0.0, -5.0] }\n')
    js = tmp_path / "g.json"
    assert main(["gradient", str(f), "--method", "adjoint", "--json", str(js)] + sum((["--set", s] for s in ov), [])) == 0
    doc = json.loads(js.read_text())
    for o, od in doc["objectives"].items():
        assert od["gradient"]["x"]["size"] == 32 and od["gradient"]["x"]["norm"] > 0
    assert doc["design"]["x"]["size"] == 32
