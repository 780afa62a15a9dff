"""``ts-arkimex`` (integrators/ts_arkimex.py): PETSc's TSARKIMEX "l2" forward, our own
tangent (``direct``) and discrete adjoint (PETSc 3.18 has no TSAdjoint for ARKIMEX),
both recomputing the two SDIRK stages from the stored states.

Bounds and their estimates:
* adjoint vs direct: two exact derivatives of the same recomputed scheme; index-1
  (five-bar, 20 steps): round-off through K (κ ≲ 1e3) ≈ κ ε √N, measured ≤ 1e-15,
  bound 1e-9.  Penalty (double pendulum, α = 1e5, 30 steps): the gap grows ∝ α through
  M + αΦ_qᵀΦ_q (test_penalty.py: ≈ 1e-12 at 1e5 for the θ schemes), measured 3.1e-12,
  bound 1e-9.
* vs central FD of PETSc's forward at relative step s = 1e-5: truncation C s²
  (penalty: measured 2.9e-5, 2.9e-7, 2.7e-9 at s = 1e-3, 1e-4, 1e-5 — the s² law,
  the same for ts-cn) plus PETSc's Newton tolerance over s (the direct gradient
  differentiates stages solved to round-off, the forward's stop at newton.rtol):
  measured index-1 ≤ 4e-10, penalty ≤ 6.6e-9 (t_end = 0.03); bound 1e-6.
* forward: l2 and the implicit midpoint (ts-cn) are both second order: on the index-1
  ODE over 0.03 s at h = 1e-3 their states differ by O(h²) — measured 1.9e-8; bound 1e-6.
"""
import numpy as np
import pytest

from parmbs.config.loader import load_config
from parmbs.sensitivity.problem import Problem

from gradient_checks import assert_gradients_agree, cli_one_line_error
from test_index1_ts import FIVEBAR
from test_penalty import DP

SHORT = ["simulation.t_end=0.03", "simulation.dt=1e-3", 'simulation.integrator="ts-arkimex"']


def test_index1_adjoint_direct_fd():
    pr = Problem(load_config(FIVEBAR, SHORT + ['simulation.formulation="index1"', "simulation.t_end=0.02"]))
    assert_gradients_agree(pr, adj_dir=1e-9, adj_cs=None, adj_fd=1e-6, fd_step=1e-5, tag="index1 ts-arkimex ")


def test_penalty_adjoint_direct_fd():
    pr = Problem(load_config(DP, ["simulation.t_end=0.03", 'simulation.formulation="penalty"',
                                  'simulation.integrator="ts-arkimex"', "simulation.penalty.alpha=1e5"]))
    assert_gradients_agree(pr, adj_dir=1e-9, adj_cs=None, adj_fd=1e-6, fd_step=1e-5, tag="penalty ts-arkimex ")


def test_second_order_like_the_midpoint_rule():
    a = Problem(load_config(FIVEBAR, SHORT + ['simulation.formulation="index1"'])).forward()
    b = Problem(load_config(FIVEBAR, SHORT[:2] + ['simulation.formulation="index1"',
                                                  'simulation.integrator="ts-cn"'])).forward()
    d = np.max(np.abs(a.q - b.q))
    print(f"ts-arkimex vs ts-cn: max |dq| {d:.1e}")
    assert d <= 1e-6


@pytest.mark.parametrize("opt,word", [("-parmbs_ts_arkimex_type", "'l2' only")])
def test_other_arkimex_type_is_refused(tmp_path, opt, word):
    cli_one_line_error(["simulate", FIVEBAR, "--set", 'simulation.formulation="index1"', "--set",
                        'simulation.integrator="ts-arkimex"', "--set", "simulation.t_end=0.01",
                        "--output", tmp_path / "o.h5", opt, "3"], tmp_path, "simulation.integrator", word)


# checkpointed ts-arkimex runs (our adjoint steps on the schedule's states, SIGKILL +
# --restart): tests/test_ts_checkpoint.py
