"""numba's on-disk cache for parmbs's kernels, keyed by the *content* of compiled/*.py:
one cache for every clone, worktree and venv of the same sources (issue 19's suite time).

numba's own cache (numba.core.caching) files a kernel by its source file's *path* (the
``__pycache__`` beside it, or a subdirectory of ``NUMBA_CACHE_DIR`` named after the file's
absolute directory) and trusts it while the file's (mtime, size) stamp is unchanged: a
fresh clone of the same commit — another path, new mtimes — compiles every kernel again
(the suite's compile, tests/numba_warm.py: ≈ 170 s CPU for the generic CPU; measured in
benchmarks/README.md, "Serial-suite CPU, round 5").  It also does not follow an edit to a
*called* file (vehicle.py under ab_step.py): hence one directory per content.

For the dispatchers of compiled/_jit.py only (any other numba user keeps numba's cache):

* **where**: ``<base>/parmbs-<first 16 hex digits of the sha256 of compiled/*.py>/``
  (compiled/__init__.py ``cache_leaf``), base = ``NUMBA_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/parmbs/numba``
  (~/.cache/parmbs/numba), else (not writable) this package's ``__pycache__``;
* **invalidation**: any edit of any compiled/*.py is another directory; inside it an
  entry is trusted on the sha256 of those sources (not on a file's mtime) and numba's and
  numpy's versions (venvs may differ; numba types some numpy functions by numpy's version),
  so a checkout or copy of the same content, at any path, loads it.  numba's
  own entry key is kept: the argument types, the code-generation target (LLVM triple, CPU
  name, CPU features — ``NUMBA_CPU_NAME=generic``, tests/conftest.py, and the host CPU
  are different entries; tests/test_compiled_cache.py) and the sha256 of the function's
  bytecode;
* **concurrent writers** (pytest-xdist workers, mpirun ranks, several clones at once):
  each entry is its own file, named by the sha256 of its key and stamp, written to a temporary file
  and renamed over (numba's ``_open_for_write``), and holding its key, compared on load.
  numba's index instead numbers a function's data files in order of saving: two
  processes saving two signatures of one function at once can both take number 1 and
  leave the index naming the other's machine code (numba 0.56.4, ``IndexDataCacheFile.save``);
  here a lost race costs a compile, never a wrong load;
* **size**: a directory is ≈ 90 MB after the suite; creating one removes the ``parmbs-*``
  directories beside it beyond the ``KEEP`` most recently used that nobody used for a day.

Checked against numba 0.56.4 (``TESTED``: ``Cache.__init__`` asks the locator for path and
stamp, ``_load_overload``/``_save_overload`` go through ``IndexDataCacheFile.load``/``save``
only).  Another numba version gets numba's cache in one directory per content beside
these sources (``_fallback``: path- and mtime-keyed, as before) and the compile note says so.
"""
import hashlib
import os
import pickle
import shutil
import tempfile
import time
from pathlib import Path

import numba
import numpy
from numba.core import caching, config

from . import source_digest

HERE = Path(__file__).resolve().parent
#: numba (major, minor) versions whose caching internals this module was read against
TESTED = ((0, 56),)
#: ``_prune`` keeps the KEEP most recently used ``parmbs-*`` directories of a base, and
#: any used within the last KEEP_AGE seconds
KEEP, KEEP_AGE = 8, 86400.0

DIGEST = source_digest(HERE)
LEAF = "parmbs-" + DIGEST[:16]
#: an entry's stamp: compiled at these sources with this numpy (module docstring)
STAMP = (DIGEST, numpy.__version__)
SHARED = (tuple(int(x) for x in numba.__version__.split(".")[:2]) in TESTED
          and all(hasattr(caching, a) for a in ("_CacheLocator", "CompileResultCacheImpl", "FunctionCache",
                                                "IndexDataCacheFile")))
#: the compile notes' remark when this numba gets the per-clone fallback
NOTE = "" if SHARED else (f"; numba {numba.__version__} not checked by compiled/_cache.py: kernels cached "
                          "per clone (path and mtime), not shared")
#: the directories this process has checked and stamped as used
_DIRS = set()


def bases():
    """The candidate base directories, in order (module docstring)."""
    if config.CACHE_DIR:
        return [config.CACHE_DIR]
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return [os.path.join(xdg, "parmbs", "numba"), str(HERE / "__pycache__")]


def cache_dir():
    """This process's kernel directory (the first writable base's ``LEAF``), None if no
    base is writable.  Its mtime is set once per process: the last use, for ``_prune``."""
    for base in bases():
        path = base if Path(base).name == LEAF else os.path.join(base, LEAF)
        if path in _DIRS:
            return path
        try:
            new = not os.path.isdir(path)
            os.makedirs(path, exist_ok=True)
            tempfile.TemporaryFile(dir=path).close()
            os.utime(path)
        except OSError:
            continue
        if new:
            _prune(os.path.dirname(path), path)
        _DIRS.add(path)
        return path
    return None


def _prune(base, keep):
    """Remove the ``parmbs-*`` directories in ``base`` (not ``keep``) beyond the ``KEEP``
    - 1 most recently used, each only if unused for ``KEEP_AGE``; a process still using
    one recompiles what it misses (a missing file is a miss; saving recreates the directory)."""
    now, seen = time.time(), []
    for d in Path(base).glob("parmbs-*"):
        try:
            if d.is_dir() and str(d) != keep:
                seen.append((d.stat().st_mtime, d))
        except OSError:
            pass
    for mtime, d in sorted(seen, reverse=True)[KEEP - 1:]:
        if now - mtime > KEEP_AGE:
            shutil.rmtree(d, ignore_errors=True)


class _Locator(caching._CacheLocator):
    """numba's cache locator for a kernel of this package: ``cache_dir()``, stamped with
    ``STAMP`` (module docstring)."""

    def __init__(self, py_func, py_file, path):
        self._py_file, self._lineno, self._path = py_file, py_func.__code__.co_firstlineno, path

    def get_cache_path(self):
        return self._path

    def get_source_stamp(self):
        return STAMP

    def get_disambiguator(self):
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file):
        path = cache_dir()
        return None if path is None else cls(py_func, py_file, path)


class _Impl(caching.CompileResultCacheImpl):
    _locator_classes = [_Locator]


class _Entries(caching.IndexDataCacheFile):
    """One file per entry, ``<function>-<line>.pyXY.<sha256 of stamp and key>.nbc``: numba's
    version, then (source stamp, key, numba's reduced compile result); loaded only if all
    three match (module docstring: concurrent writers)."""

    def __init__(self, cache_path, filename_base, source_stamp):
        super().__init__(cache_path, filename_base, source_stamp)
        self._base = filename_base

    def _entry(self, key):
        return os.path.join(self._cache_path, f"{self._base}.{hashlib.sha256(repr((self._source_stamp, key)).encode()).hexdigest()[:16]}.nbc")

    def save(self, key, data):
        with self._open_for_write(self._entry(key)) as f:
            pickle.dump(self._version, f, protocol=-1)
            f.write(self._dump((self._source_stamp, key, data)))

    def load(self, key):
        try:
            with open(self._entry(key), "rb") as f:
                if pickle.load(f) != self._version:
                    return None
                stamp, stored, data = pickle.loads(f.read())
        except Exception:  # noqa: BLE001 - missing, or written by something else: a miss (numba compiles)
            return None
        return data if stamp == self._source_stamp and stored == key else None

    def flush(self):
        pass


class ContentCache(caching.FunctionCache):
    """numba's per-function cache with ``_Locator`` and ``_Entries``."""
    _impl_class = _Impl

    def __init__(self, py_func):
        super().__init__(py_func)
        self._cache_file = _Entries(self._cache_path, self._impl.filename_base, STAMP)


def _fallback():
    """numba's own cache in ``<base>/LEAF`` (base: ``NUMBA_CACHE_DIR``, else this package's
    ``__pycache__`` if writable, else ~/.cache/parmbs): one directory per content still,
    but within it numba's path and mtime checks.  Process-wide (numba.config.CACHE_DIR)."""
    base = config.CACHE_DIR
    if base and Path(base).name == LEAF:
        return
    if not base:
        pyc = HERE / "__pycache__"
        base = str(pyc) if os.access(pyc if pyc.exists() else HERE, os.W_OK) else \
            os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "parmbs")
    config.CACHE_DIR = os.path.join(base, LEAF)


def directory():
    """The directory this process's kernels are cached in (None: no writable one)."""
    if SHARED:
        return cache_dir()
    _fallback()
    return config.CACHE_DIR


def enable(disp):
    """Give dispatcher ``disp`` (compiled/_jit.py) its on-disk cache."""
    if SHARED:
        disp._cache = ContentCache(disp.py_func)
    else:
        _fallback()
        disp.enable_caching()
