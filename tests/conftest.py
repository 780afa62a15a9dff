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
