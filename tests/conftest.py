# parmbs first, before any test module imports numpy: its thread and SIMD pinning
# (parmbs/_determinism.py) only takes full effect before numpy loads
import parmbs  # noqa: F401

import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs"


@pytest.fixture
def config_path():
    return lambda name: str(CONFIGS / f"{name}.toml")


def pytest_configure(config):
    config.addinivalue_line("markers", "slurm: submits jobs/ scripts to a private SLURM on localhost "
                            "(tests/slurm_cluster.py); serial suite only")


def record_file(path):
    """Where a run's HDF5 output is now: ``path`` once the run is complete, else its
    in-progress ``path.partial`` (a killed, stopped or failed checkpointed run or
    optimization keeps its resumable state there: parmbs/io/outputs.py)."""
    path = pathlib.Path(path)
    part = path.with_name(path.name + ".partial")
    return part if part.exists() else path


#: the environment switch that arms parmbs's fault-injection hooks (parmbs/faults.py)
FAULTS = {"PARMBS_TEST_FAULTS": "1"}
