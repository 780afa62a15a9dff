"""numba's cache of the compiled kernels is kept by the content of parmbs/compiled/*.py
(compiled/_cache.py): one directory per content, shared by every clone at any path.  numba
itself files a kernel by its source file's path and checks it against the file's mtime,
so a fresh clone compiled every kernel again, and an edited callee (vehicle.py under
ab_step.py) or an upgrade over an old ``__pycache__`` loaded stale machine code.

The cross-clone tests run a small kernel (vehicle._ramp, two floats: ≈ 0.1 s to compile)
in a fresh interpreter each (≈ 0.8 s CPU), with their own ``NUMBA_CACHE_DIR``."""
import json
import os
import pickle
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import parmbs.compiled as compiled
from parmbs.model.component import CS_H

pytest.importorskip("numba")

from parmbs.compiled import _cache  # noqa: E402

SRC = Path(compiled.__file__).resolve().parent
ROOT = SRC.parents[1]
#: one call of a small kernel: its cache hits, misses (= compiles), directory and numba's key of the target
PROBE = """
import json
from parmbs.compiled import vehicle as V
V._ramp(0.5, 2.0)
s = V._ramp.stats
print(json.dumps([sum(s.cache_hits.values()), sum(s.cache_misses.values()), s.cache_path,
                  V._ramp.targetctx.codegen().magic_tuple()]))
"""


def _probe(root, cache, cpu_name):
    """PROBE with ``root`` first on the path, ``cache`` as NUMBA_CACHE_DIR and the CPU
    target ``cpu_name`` (None: numba's default, the host CPU)."""
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES")}
    env.update(NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(root), OMP_NUM_THREADS="1")
    if cpu_name is not None:
        env["NUMBA_CPU_NAME"] = cpu_name
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=root, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


def _copy(tmp_path, name):
    """A copy of the parmbs package under tmp_path/name: another path, new mtimes."""
    dst = tmp_path / name
    shutil.copytree(SRC.parent, dst / "parmbs", copy_function=shutil.copyfile,
                    ignore=shutil.ignore_patterns("__pycache__"))
    later = time.time() + 60
    for f in (dst / "parmbs" / "compiled").glob("*.py"):
        os.utime(f, (later, later))
    return dst


shared = pytest.mark.skipif(not _cache.SHARED,
                            reason="this numba gets numba's own per-clone cache (compiled/_cache.py)")


@pytest.fixture(scope="module")
def cached(tmp_path_factory):
    """A cache holding PROBE's kernel for the generic CPU, compiled from this tree: (its
    NUMBA_CACHE_DIR, the kernel's directory, numba's target tuple)."""
    cache = tmp_path_factory.mktemp("numba") / "cache"
    hits, misses, path, generic = _probe(ROOT, cache, "generic")
    assert (hits, misses) == (0, 1) and Path(path) == cache / compiled.cache_leaf(SRC)
    return cache, path, generic


@shared
def test_a_copy_at_another_path_loads_and_cpu_targets_stay_apart(cached, tmp_path):
    cache, path, generic = cached
    copy = _copy(tmp_path, "clone2")
    # another path, new mtimes, same content: loaded, not compiled
    assert _probe(copy, cache, "generic")[:3] == [1, 0, path]
    # the host CPU: numba's key holds the target, so another entry (unless the host is "generic")
    hits, misses, _, host = _probe(copy, cache, None)
    assert (hits, misses) == ((1, 0) if host == generic else (0, 1))
    # ... which did not replace the generic one
    assert _probe(ROOT, cache, "generic")[:2] == [1, 0]


@shared
def test_an_edited_source_misses(cached, tmp_path):
    cache, path, _ = cached
    copy = _copy(tmp_path, "edited")
    with open(copy / "parmbs" / "compiled" / "dense.py", "a") as fh:        # not the kernel's own file
        fh.write("\n# an edit in another compiled file\n")
    hits, misses, edited, _ = _probe(copy, cache, "generic")
    assert (hits, misses) == (0, 1) and edited != path


def test_an_entry_is_loaded_for_its_own_key_and_stamp_only(tmp_path):
    """numba's index numbers a function's data files in order of saving: two processes
    saving two signatures at once could leave it naming the other's code.  Here an entry
    is a file per key and stamp (sources, numpy) holding both, compared on load."""
    a, b = ("sig a", "cpu"), ("sig b", "cpu")
    e = _cache._Entries(str(tmp_path), "f-1.py311", "stamp 1")
    e.save(a, "code a")
    e.save(b, "code b")
    assert e.load(a) == "code a" and e.load(b) == "code b" and e.load(("sig c", "cpu")) is None
    other = _cache._Entries(str(tmp_path), "f-1.py311", "stamp 2")   # e.g. another numpy: its own file
    assert other.load(a) is None
    other.save(a, "code a, stamp 2")
    assert e.load(a) == "code a" and other.load(a) == "code a, stamp 2"

    def write(key, version, stamp, stored):        # what another writer could leave under key's name
        with open(e._entry(key), "wb") as fh:
            pickle.dump(version, fh)
            fh.write(e._dump((stamp, stored, "other code")))
    write(b, e._version, "stamp 1", a)             # another key's entry
    assert e.load(b) is None
    write(b, e._version, "stamp 2", b)             # another stamp
    assert e.load(b) is None
    write(b, "0.0.0", "stamp 1", b)                # another numba version
    assert e.load(b) is None
    write(b, e._version, "stamp 1", b)             # the control: all three match
    assert e.load(b) == "other code"


def test_any_source_edit_gives_another_directory(tmp_path):
    for f in SRC.glob("*.py"):
        shutil.copy(f, tmp_path / f.name)
    before = compiled.cache_leaf(tmp_path)
    assert before == compiled.cache_leaf(SRC) == _cache.LEAF
    with open(tmp_path / "vehicle.py", "a") as fh:
        fh.write("\n# an edit in a callee file\n")
    assert compiled.cache_leaf(tmp_path) != before


def test_a_frozen_global_from_outside_compiled_gives_another_directory(monkeypatch):
    """The kernels read model.component.CS_H as a global, frozen at compile time."""
    before = compiled.cache_leaf(SRC)
    assert ("model.component.CS_H", CS_H) in compiled.FROZEN_GLOBALS
    monkeypatch.setattr(compiled, "FROZEN_GLOBALS", (("model.component.CS_H", CS_H / 10),))
    assert compiled.cache_leaf(SRC) != before


def test_the_least_recently_used_directories_are_pruned(tmp_path):
    now, old = time.time(), time.time() - 2 * _cache.KEEP_AGE
    dirs = [tmp_path / f"parmbs-{i:016x}" for i in range(_cache.KEEP + 3)]
    for i, d in enumerate(dirs):       # three unused for two days, then KEEP used within KEEP_AGE
        d.mkdir()
        t = old + i if i < 3 else now - 100 + i
        os.utime(d, (t, t))
    other = tmp_path / "numba-other"    # not parmbs's
    other.mkdir()
    os.utime(other, (old, old))
    new = tmp_path / "parmbs-new"
    new.mkdir()
    _cache._prune(str(tmp_path), str(new))
    # the KEEP - 1 newest stay, and the KEEP-th (recently used); the three old ones go
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([new.name, other.name] + [d.name for d in dirs[3:]])


def test_a_user_cache_directory_is_the_base(tmp_path, monkeypatch):
    from numba.core import config
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path))
    assert _cache.cache_dir() == str(tmp_path / _cache.LEAF)
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path / _cache.LEAF))    # already the leaf: kept
    assert _cache.cache_dir() == str(tmp_path / _cache.LEAF)
    monkeypatch.setattr(config, "CACHE_DIR", "")
    _cache._fallback()                                  # another numba: numba's cache, one directory per content
    assert Path(config.CACHE_DIR).name == _cache.LEAF
