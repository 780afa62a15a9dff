"""Every stepper declares its capabilities (integrators/one_step.py): a
``checkpoint_sweep`` that names a run of checkpoint.runs() and a ``checkpoint_refusal()``
— the checkpoint layer and the CLI read them instead of probing for ``forward`` — and the
runs it makes whole (``whole_runs``, ``freezes_steps``: read by Problem, verify,
complex_step, ride and the CLI)."""
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


#: every kind of stepper: the one-step ones, PETSc TS (penalty, index-1 ODE, ts-alpha2),
#: dopri5, and Maggi with the thesis' adjoint ODE (its own whole-run adjoint)
RUN_KINDS = [
    ("index3", "trapezoidal", [], set(), False),
    ("index3", "variational", [], set(), False),
    ("index1", "genalpha", [], set(), False),
    ("matrix-r", "trapezoidal", [], set(), False),
    ("maggi", "trapezoidal", [], set(), False),
    ("maggi", "trapezoidal", ['simulation.maggi.adjoint="second-order"'], {"adjoint"}, False),
    ("penalty", "ts-cn", [], {"forward", "adjoint"}, True),
    ("index1", "ts-rk", [], {"forward", "adjoint"}, True),
    ("index3", "ts-alpha2", [], {"forward", "direct", "adjoint"}, False),
    ("index1", "dopri5", [], {"forward", "direct", "adjoint"}, True),
]


@pytest.mark.parametrize("formulation,integrator,extra,whole,freezes", RUN_KINDS)
def test_every_stepper_declares_its_whole_runs(formulation, integrator, extra, whole, freezes):
    """``whole_runs`` / ``freezes_steps`` (what Problem, verify, complex_step, ride and the
    CLI read) name exactly the methods the stepper has: its own ``forward``/``direct``/
    ``adjoint`` and ``freeze``."""
    pr = Problem(load_config(FIVEBAR, [f'simulation.formulation="{formulation}"',
                                       f'simulation.integrator="{integrator}"', "simulation.t_end=0.01", *extra]))
    st = pr.stepper
    assert st.whole_runs == whole == {a for a in ("forward", "direct", "adjoint") if hasattr(st, a)}
    assert st.freezes_steps is freezes is hasattr(st, "freeze")
    assert "forward" in whole or hasattr(st, "step")           # complex_step steps the others
