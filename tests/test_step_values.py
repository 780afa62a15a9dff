"""The integrands of all objectives at one state (sensitivity/step_values.py), which the
checkpointed forward run sums step by step (checkpoint/restart.py ``_integrands``): bit
for bit ``Term.value`` objective by objective, with terms of the same integrand stacked
into one call — here two pendulum beams (2 elements each, two lengths), the stress KS of both at one ρ (a stack of
two), a third at another ρ (alone), the tip speed of both (a second stack), a stress
KS-over-time pair and an objective without integrand."""
import numpy as np

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem

from spatial_flex_models import beam, spherical, toml


def _two_pendulums(tmp_path):
    sq = {"shape": "square", "side": 0.05}
    text = toml("two-pendulums", {"A": [0.0, 0.0, 0.0], "B": [0.0, 1.0, 0.0]},
                beams=[beam("a", 1.2, 2, sq, 4000.0, 1.0e7, [0.0, 0.0, 0.0], [1.0, 0.0, 0.0], omega=[0.0, 0.0, 1.0]),
                       beam("b", 1.0, 2, sq, 4000.0, 2.0e7, [0.0, 1.0, 0.0], [1.0, 0.0, 0.0], omega=[0.0, 0.5, 1.0])],
                joints=[spherical("A", "ground.A", "a.root"), spherical("B", "ground.B", "b.root")],
                simulation={"t_end": 0.02, "dt": 1e-3, "integrator": "variational"},
                objectives=[{"name": "sa", "integrand": "stress_ks", "body": "a", "ks_rho": 1e-3},
                            {"name": "tip_a", "integrand": "point_velocity_sq", "point": "a.tip"},
                            {"name": "sb", "integrand": "stress_ks", "body": "b", "ks_rho": 1e-3, "weight": 2.0},
                            {"name": "sa4", "integrand": "stress_ks", "body": "a", "ks_rho": 1e-4},
                            {"name": "tip_b", "integrand": "point_velocity_sq", "point": "b.tip"},
                            {"name": "pa", "integrand": "stress_ks_time", "body": "a", "ks_rho": 1e-3,
                             "stress_limit": 1e5},
                            {"name": "pb", "integrand": "stress_ks_time", "body": "b", "ks_rho": 1e-3,
                             "stress_limit": 1e5},
                            {"name": "end", "terminal": "stress_ks", "body": "b", "ks_rho": 1e-3}])
    path = tmp_path / "two.toml"
    path.write_text(text)
    return load_config(str(path))


def test_step_values_are_term_value_bit_for_bit(tmp_path):
    cfg = _two_pendulums(tmp_path)
    pr = Problem(cfg)
    traj = pr.forward()
    p = pr.sys.p
    refs = [ob.reference(pr.sys, traj.q[0], p) for ob in pr.objectives]
    sv = pr.step_values(refs)
    names = [ob.name for ob in pr.objectives]
    stacked = sorted(sorted(names[j] for j in rows) for rows, *_ in sv.stacks)
    assert stacked == [["pa", "pb"], ["sa", "sb"], ["tip_a", "tip_b"]]
    assert sorted(names[j] for j, _ in sv.alone) == ["sa4"]
    for k in range(traj.steps + 1):
        x = traj.x(k)
        want = np.array([ob.integrand.value(pr.sys, traj.t[k], x[:4], p, r) if ob.integrand else 0.0
                         for ob, r in zip(pr.objectives, refs)])
        got = sv(traj.t[k], x, p)
        assert np.all(want[:-1] != 0.0) and want[-1] == 0.0
        assert got.tobytes() == want.tobytes(), k


def test_checkpointed_values_are_the_in_memory_ones(tmp_path):
    """ψ summed step by step with StepValues in a checkpointed run equals ψ of the
    in-memory run (Problem.objective_values, by blocks of states) bit for bit."""
    cfg = _two_pendulums(tmp_path)
    pr = Problem(cfg)
    pr.forward()
    want = pr.objective_values()
    ck = Problem(cfg)
    ck.use_checkpoint(str(tmp_path / "ck.h5"))
    got = ck.forward().values
    assert set(got) == set(want) and all(want[k] != 0.0 for k in want)
    assert all(np.float64(got[k]).tobytes() == np.float64(want[k]).tobytes() for k in want), (got, want)
