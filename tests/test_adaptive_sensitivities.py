"""Error control on the forward sensitivities (simulation.adapt.sensitivities;
parmbs/integrators/sens_error.py), on the passive walker's first 0.02 s (contact,
friction and a knee lock letting go: tests/test_passive_walker.py):

* the sensitivities join the error test: the run takes more steps than without;
* the sensitivities carried in the forward run are those the direct sweep computes on
  the accepted step sequence;
* the gradients stay those of the accepted step sequence: adjoint = direct, = central FD
  on the frozen mesh;
* bad input (not a boolean, a PETSc TS integrator, a checkpoint file) is refused with
  one line naming the key."""
from __future__ import annotations

import parmbs  # noqa: F401  (before numpy users: parmbs/_determinism.py)
import numpy as np
import pytest

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem

from conftest import CONFIGS
from gradient_checks import assert_gradients_agree, cli_one_line_error

WALKER = str(CONFIGS / "passive-walker.toml")
SHORT = ["simulation.t_end=0.02", "simulation.progress=false"]
SENS = ["simulation.adapt.sensitivities=true"]       # the shipped file's setting
PLAIN = ["simulation.adapt.sensitivities=false"]


@pytest.fixture(scope="module")
def runs():
    out = {}
    for name, extra in (("plain", PLAIN), ("sens", SENS)):
        pr = Problem(load_config(WALKER, SHORT + extra))
        pr.forward()
        out[name] = pr
    return out


def test_sensitivities_refine_the_mesh(runs):
    """Without the key no tangent is carried; with it every accepted step had one (plus the
    rejected trials that passed the state test) and the mesh is finer (measured: 28 and 79
    steps)."""
    plain, sens = runs["plain"], runs["sens"]
    assert plain.sens_error is None
    assert sens.sens_error.steps >= sens.nsteps
    assert sens.nsteps > plain.nsteps


def test_carried_sensitivities_are_the_direct_sweeps(runs):
    """The forward run's dx_N/dρ (SensitivityError.dx) is the direct sweep's on the same
    accepted states and steps: the same tangent recurrence (identical operations; bound
    1e-12 relative for any difference in the order of evaluation, N κ ε with N ~ 100)."""
    pr = runs["sens"]
    last = {}

    def on_step(k, t, grads, dx):
        if k == pr.nsteps:
            last["dx"] = [np.array(b) for b in dx]

    pr.direct(on_step=on_step)
    for a, b in zip(pr.sens_error.dx[:2], last["dx"][:2]):
        assert np.max(np.abs(a - b)) <= 1e-12 * max(1.0, np.max(np.abs(b)))


def test_gradients_on_the_frozen_mesh(runs):
    """adjoint = direct ≤ 1e-9 and = central FD (δ = 3e-5, replaying the accepted steps)
    ≤ 1e-6, the bounds and FD step of tests/test_passive_walker.py (same model and regimes:
    the FD error there is Newton noise 1e-12/2δ times ψ's small gradients, ≤ 1e-7
    measured; here 9e-8)."""
    assert_gradients_agree(runs["sens"], adj_cs=None, fd_step=3e-5)


def test_not_a_boolean_is_one_line(tmp_path):
    """A string — even "yes", which a lax boolean would take — is one line naming file and
    key, exit 2 (a strict Bool, as simulation.progress)."""
    text = open(WALKER).read().replace("sensitivities = true", "sensitivities = \"yes\"", 1)
    assert "\"yes\"" in text
    p = tmp_path / "bad.toml"
    p.write_text(text)
    cli_one_line_error(["info", p], tmp_path, "bad.toml", "simulation.adapt.sensitivities")


def test_ts_integrators_refuse_the_key():
    """PETSc TS steppers choose their steps with TSAdapt: the key would be ignored."""
    from parmbs.config.errors import ConfigError
    with pytest.raises(ConfigError, match="simulation.adapt.sensitivities"):
        load_config(WALKER, SHORT + SENS + ['simulation.integrator="ts-alpha2"'])


def test_checkpoint_runs_refuse_the_key(tmp_path):
    """The carried sensitivities are not part of the stored loop state: a checkpointed run
    is refused (one line naming the key) rather than resumed without them."""
    from parmbs.errors import ModelError
    pr = Problem(load_config(WALKER, SHORT + SENS))
    with pytest.raises(ModelError, match="simulation.adapt.sensitivities"):
        pr.use_checkpoint(str(tmp_path / "run.h5"))


def test_batched_gradients_refuse_the_key():
    """A batch of design columns would carry only its own sensitivities and so choose its
    own step sequence: refused, naming the key."""
    from parmbs.errors import ModelError
    with pytest.raises(ModelError, match="simulation.adapt.sensitivities"):
        Problem(load_config(WALKER, SHORT + SENS), design_columns=[0])
