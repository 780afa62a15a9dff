"""Every stepper declares its checkpoint capabilities (integrators/one_step.py): a
``checkpoint_sweep`` that names a run of checkpoint.runs() and a ``checkpoint_refusal()``
— the checkpoint layer and the CLI read them instead of probing for ``forward``."""
import os

import pytest

import parmbs  # noqa: F401  (before numpy users: parmbs/_determinism.py)
from parmbs.checkpoint import refusal, runs
from parmbs.config.loader import load_config
from parmbs.sensitivity.problem import Problem

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIVEBAR = os.path.join(ROOT, "configs", "fivebar.toml")

#: (formulation, integrator, further settings, the sweep it declares)
STEPPERS = [
    ("index3", "trapezoidal", [], "adjoint_step"),
    ("index3", "genalpha", [], "adjoint_step"),
    ("index3", "genalpha", ['simulation.genalpha_form="arnold-bruls"'], "adjoint_step"),
    ("index3", "trapezoidal", ['simulation.stabilization="ggl"'], "adjoint_step"),
    ("index3", "variational", [], "adjoint_step"),
    ("index3", "ts-alpha2", [], "adjoint_step"),
    ("penalty", "ts-cn", [], "ts"),
    ("index1", "trapezoidal", [], "adjoint_step"),
    ("index1", "genalpha", [], "adjoint_step"),
    ("maggi", "trapezoidal", [], "adjoint_step"),
    ("matrix-r", "trapezoidal", [], "adjoint_step"),
]


@pytest.mark.parametrize("formulation,integrator,extra,sweep", STEPPERS)
def test_every_stepper_declares_its_checkpointed_run(formulation, integrator, extra, sweep):
    pr = Problem(load_config(FIVEBAR, [f'simulation.formulation="{formulation}"',
                                       f'simulation.integrator="{integrator}"', "simulation.t_end=0.01", *extra]))
    st = pr.stepper
    assert st.checkpoint_sweep == sweep and sweep in runs()
    assert st.checkpoint_refusal() is None and refusal(st, integrator) is None


def test_kinematic_analysis_declares_its_checkpointed_run():
    pr = Problem(load_config(os.path.join(ROOT, "configs", "slider-crank-kinematic.toml"), ["simulation.t_end=0.01"]))
    assert pr.stepper.checkpoint_sweep == "adjoint_step" and pr.stepper.checkpoint_refusal() is None


def test_a_stepper_without_a_sweep_keeps_its_trajectory_in_memory():
    """``checkpoint_sweep = None``: refused, naming the integrator."""
    class InMemory:
        checkpoint_sweep = None

        def checkpoint_refusal(self):
            return None
    assert "the ts-x integrator keeps its trajectory in memory" in refusal(InMemory(), "ts-x")
