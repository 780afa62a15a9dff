"""numba's cache of the compiled kernels lives in one directory per content of
parmbs/compiled/*.py (compiled/__init__.py ``_source_keyed_cache``): numba itself checks a
cached kernel against its own file only, so an edited callee (vehicle.py under ab_step.py)
or an upgrade over an old ``__pycache__`` loaded stale machine code."""
import os
import shutil
from pathlib import Path

import parmbs.compiled as compiled

SRC = Path(compiled.__file__).resolve().parent


def test_cache_directory_is_keyed_by_the_sources():
    path = Path(os.environ["NUMBA_CACHE_DIR"])
    assert path.name == compiled.cache_leaf(SRC)


def test_any_source_edit_gives_another_directory(tmp_path):
    for f in SRC.glob("*.py"):
        shutil.copy(f, tmp_path / f.name)
    before = compiled.cache_leaf(tmp_path)
    assert before == compiled.cache_leaf(SRC)
    with open(tmp_path / "vehicle.py", "a") as fh:
        fh.write("\n# an edit in a callee file\n")
    assert compiled.cache_leaf(tmp_path) != before


def test_a_user_cache_directory_is_the_base(tmp_path, monkeypatch):
    import numba
    saved = numba.config.CACHE_DIR
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    try:
        compiled._source_keyed_cache()
        want = str(tmp_path / compiled.cache_leaf(SRC))
        assert os.environ["NUMBA_CACHE_DIR"] == want and numba.config.CACHE_DIR == want
        compiled._source_keyed_cache()                  # a child process: kept as it is
        assert os.environ["NUMBA_CACHE_DIR"] == want
    finally:
        numba.config.CACHE_DIR = saved
