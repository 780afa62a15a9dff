"""``simulation.petsc_options`` per Problem (parmbs/petsc_options.py): a later Problem
in the same process gets its own config's solver options, not the first one's, and an
option the user put into PETSc's database wins over every config."""
import os

import pytest

from parmbs._petsc import PETSc
from parmbs.config.loader import load_config
from parmbs.petsc_options import _FROM_CONFIG
from parmbs.sensitivity.problem import Problem

CONFIG = os.path.join(os.path.dirname(__file__), "..", "configs", "fivebar.toml")
KSP = "parmbs_ksp_type"


def ksp_type(options):
    sets = [f"simulation.petsc_options.{k}={v!r}" if isinstance(v, str) else f"simulation.petsc_options.{k}={v}"
            for k, v in options.items()]
    cfg = load_config(CONFIG, ["simulation.t_end=0.01"] + [s.replace("'", '"') for s in sets])
    pr = Problem(cfg)
    try:
        return pr.stepper.op.ksp.getType()
    finally:
        pr.stepper.op.ksp.destroy()


@pytest.fixture
def clean_db():
    opts = PETSc.Options()
    if opts.hasName(KSP) and KSP not in _FROM_CONFIG:     # (an earlier config's entry is fine)
        pytest.skip(f"-{KSP} is set in this process's PETSc options (command line / PETSC_OPTIONS)")
    yield opts
    if opts.hasName(KSP):
        opts.delValue(KSP)


def test_second_problem_gets_its_own_options(clean_db):
    assert ksp_type({"ksp_type": "gmres", "pc_type": "lu"}) == "gmres"
    # before: the first config's gmres stayed in the database and won here
    assert ksp_type({"ksp_type": "preonly", "pc_type": "lu"}) == "preonly"
    assert ksp_type({"ksp_type": "bcgs", "pc_type": "lu"}) == "bcgs"


def test_option_dropped_by_a_later_config_is_removed(clean_db):
    assert ksp_type({"ksp_type": "bcgs", "pc_type": "lu"}) == "bcgs"
    cfg = load_config(CONFIG, ["simulation.t_end=0.01"])
    cfg.simulation.petsc_options = {"pc_type": "lu"}                       # no ksp_type at all
    pr = Problem(cfg)
    assert not clean_db.hasName(KSP)
    assert pr.stepper.op.ksp.getType() == "gmres"                         # PETSc's own default


def test_user_option_wins_over_config(clean_db):
    clean_db.setValue(KSP, "richardson")
    assert ksp_type({"ksp_type": "gmres", "pc_type": "lu"}) == "richardson"
    assert clean_db.getString(KSP) == "richardson"


def test_user_overwrite_of_a_config_value_is_kept(clean_db):
    assert ksp_type({"ksp_type": "gmres", "pc_type": "lu"}) == "gmres"
    clean_db.setValue(KSP, "bcgs")                       # a script takes the name over
    assert ksp_type({"ksp_type": "preonly", "pc_type": "lu"}) == "bcgs"
