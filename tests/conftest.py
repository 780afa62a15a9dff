import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs"


@pytest.fixture
def config_path():
    return lambda name: str(CONFIGS / f"{name}.toml")
