"""The optimization record in HDF5: every evaluation (ρ, ψ, ∇ψ) and one history row
per iteration, written so that a run killed at any instant can be resumed exactly.

Layout (DESIGN.md ``/optimize/…``)::

    /optimize/x        (R, nd)  design vectors, in evaluation order
    /optimize/f        (R,)     objective values
    /optimize/g        (R, nd)  gradients
    /optimize/crc      (R,)     CRC-32 of (row, x, f, g)
    /optimize          attrs    evaluations (rows that count), resolved_sha256, method, objective,
                                finished (True once /optimize/design is written: the run is over)
    /optimize/history  (H, 6)   iteration, ψ, |∇ψ| (projected), step, evaluations, wall s
                                (MMA: iteration, ψ, max constraint violation, step, evaluations, wall s)
    /optimize/history  attrs    rows, columns
    /optimize/design   final ρ (attr names), written at the end
    /optimize/design_physical  the filtered densities x̃ = W ρ the model saw (density filter only)
    /optimize/mma/state0, state1   (5, nd)  MMA x, xold1, xold2, low, upp (two slots)
    /optimize/mma/meta0, meta1     (6,)     iteration, objective scale, evaluations, halvings, move, CRC-32
                                   (halvings: how many times in a row the step to iterate
                                   ``iteration`` has been halved after failed trials; records
                                   written before it was stored have (4,) and resume with 0;
                                   move: the move limit of the update that made iterate
                                   ``iteration``, what ``optimize.adaptive_move`` changes —
                                   (5,) records resume with ``optimize.move``)
    /optimize/mma      attrs    current (the valid slot, −1 before the first update)

Why a log of evaluations is the optimizer state: the optimizers (TAO's L-BFGS
variants, MMA) are deterministic functions of the sequence of (ρ, ψ, ∇ψ) they have
seen.  A restarted run starts the optimizer again from the same initial design and
answers each evaluation request from the log while the requested ρ is bit-for-bit
the logged one — so the optimizer rebuilds every internal quantity (L-BFGS pairs,
asymptotes, line-search state) exactly, and the resumed iterate sequence is the
uninterrupted one.  Should the replay request a different ρ (other PETSc build,
edited file) the run stops with a clear message instead of mixing two runs.

MMA (``MMAState``) does not replay: its whole state — x, the two previous iterates, the
asymptotes, the iteration counter and the objective scale — is written after every
update into the slot the ``current`` attribute does not point at, flushed, and only then
is ``current`` flipped (the same data-then-counter rule), so a kill at any instant
leaves one complete, checksummed state.  A resumed MMA run evaluates ψ at the state's x
again (forward and adjoint are deterministic, so bit-identical) and continues.  The slot
also holds the number of step halvings already spent on the current iterate (failed
trials, driver.py): without it a run killed after a halving would resume with a fresh
budget of ``MMA_HALVINGS`` and take steps the uninterrupted run never takes.

Atomicity: a row is written and flushed, and only then is the ``evaluations``
counter advanced and flushed.  Datasets are created with 256 rows; growing them
(a run of more evaluations) is the only change of HDF5 metadata after creation.  A row whose CRC does not
match is treated as not written.  Rank 0 does the I/O and broadcasts (rigid models:
design vectors are small and replicated).
"""
from __future__ import annotations

import json
import os
import zlib

import numpy as np

from ..io.hdf5 import HDF5Error, MAX_NAME_ATTR, _comm, _root_call, _short, _write_header, put_names
from ..checkpoint.record_match import config_difference, older_sha256

HIST_COLS = ("iteration", "objective", "gradient_norm", "step", "evaluations", "wall_s")


class _KillHook:
    """Test hook ``PARMBS_OPTIMIZE_KILL=event:n``: SIGKILL this process at the n-th
    ``event`` — ``forward`` (forward run done), ``adjoint`` (gradient computed, not
    yet logged) or ``write`` (row on disk, counter not yet advanced)."""

    def __init__(self):
        from ..faults import test_env                # inert without PARMBS_TEST_FAULTS=1
        event, _, n = test_env("PARMBS_OPTIMIZE_KILL").partition(":")
        self.event, self.n, self.count = event, int(n) if n.isdigit() else -1, 0

    def __call__(self, event):
        if event == self.event:
            self.count += 1
            if self.count == self.n:
                import signal
                os.kill(os.getpid(), signal.SIGKILL)


kill_hook = _KillHook()


class _FailHook:
    """Test hook ``PARMBS_OPTIMIZE_FAIL=n[,m…]``: the n-th (m-th …) evaluation this
    process starts raises StepError, as a trial design whose forward Newton iteration
    diverges would (tests/test_optimize_failed_trial.py)."""

    def __init__(self):
        from ..faults import test_env                # inert without PARMBS_TEST_FAULTS=1
        spec = test_env("PARMBS_OPTIMIZE_FAIL")
        self.which = {int(t) for t in spec.split(",") if t.strip().isdigit()}
        self.count = 0

    def __call__(self):
        self.count += 1
        if self.count in self.which:
            from ..integrators.newmark import StepError
            raise StepError(f"PARMBS_OPTIMIZE_FAIL: evaluation {self.count} made to fail")


fail_hook = _FailHook()


def record_sets(path):
    """The ``--set`` overrides stored in the optimization record ``path`` (its in-progress
    ``path.partial`` first, io/outputs.py); [] when there is none or the file cannot be
    read (the restart itself then reports what is wrong)."""
    import h5py
    from ..io.outputs import final_of, partial_of
    fin = final_of(path)
    for f in (partial_of(fin), fin):
        if os.path.exists(f):
            try:
                with h5py.File(f, "r") as h:
                    raw = h["optimize"].attrs.get("sets") if "optimize" in h else None
                raw = raw.decode() if isinstance(raw, bytes) else raw
                return [str(x) for x in json.loads(raw)] if raw else []
            except (OSError, KeyError, ValueError, TypeError):
                return []
    return []


def merge_sets(old, new):
    """``--set`` overrides ``old`` then ``new``, one per key: a key given again takes its
    new value (and place).  What a resumed run is loaded with: the record's overrides
    and those of the restart command (e.g. a larger ``optimize.max_it``)."""
    out = {}
    for s in [*old, *new]:
        key = s.split("=", 1)[0].strip()
        out.pop(key, None)
        out[key] = s
    return list(out.values())


def _crc(k, x, f, g):
    c = zlib.crc32(np.array([k], np.int64).tobytes())
    for a in (x, np.array([f]), g):
        c = zlib.crc32(np.ascontiguousarray(a, dtype=np.float64).tobytes(), c)
    return c


class EvaluationLog:
    """Create (``fresh``) or reopen (resume) the optimization record of ``path``."""

    def __init__(self, path, config, sha, names, method, objective, fresh, comm=None, rows=256,
                 columns=HIST_COLS, keep=True, sets=None, ignore=()):
        """``keep``: hold every logged row in memory on every rank (what TAO's replay
        needs); MMA passes False — it resumes from its state, not a replay.  ``sets``:
        the ``--set`` overrides the config was loaded with, stored (attr ``sets``, JSON)
        so that ``--restart`` applies them again (``record_sets``).  ``ignore``: the
        (section, key) pairs left out of ``sha`` (named in a config-mismatch message)."""
        self.path, self.comm = os.fspath(path), _comm(comm)
        self.sets, self.ignore = (None if sets is None else list(sets)), tuple(ignore)
        self.columns, self.keep = tuple(columns), keep
        self.root = self.comm.rank == 0
        self.nd, self.names = len(names), list(names)
        self.f = None
        self.x = np.zeros((0, self.nd))
        self.fv = np.zeros(0)
        self.g = np.zeros((0, self.nd))
        self.hist_rows = 0
        try:
            data = _root_call(self.comm, lambda: self._open(config, sha, method, objective, fresh, rows),
                              self.path, "/optimize")
        except HDF5Error:
            self.close()
            raise
        self.x, self.fv, self.g, self.hist_rows, self.count = self.comm.bcast(data, root=0)

    # -- rank 0 ------------------------------------------------------------------------
    def _open(self, config, sha, method, objective, fresh, rows):
        import h5py
        if fresh:
            # built under a temporary name and renamed: a kill during creation leaves no
            # half-made record that --restart would refuse (or a job script would resume)
            tmp = f"{self.path}.creating-{os.getpid()}"
            f = h5py.File(tmp, "w")
            _write_header(f, config, self.comm.size)
            grp = f.create_group("optimize")
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            for name, shape, dt in (("x", (rows, self.nd), "f8"), ("f", (rows,), "f8"),
                                    ("g", (rows, self.nd), "f8"), ("crc", (rows,), "u4"),
                                    ("history", (rows, len(self.columns)), "f8")):
                grp.create_dataset(name, shape=shape, dtype=dt, maxshape=(None,) + shape[1:],
                                   chunks=(min(rows, 64),) + tuple(max(s, 1) for s in shape[1:]))
            grp.attrs.update({"evaluations": 0, "resolved_sha256": sha, "method": method,
                              "objective": objective})
            _put_design_names(grp, self.names)
            grp["history"].attrs["rows"] = 0
            grp["history"].attrs["columns"] = ",".join(self.columns)
            grp.attrs["finished"] = False
            if self.sets is not None:
                grp.attrs["sets"] = json.dumps(self.sets)
            f.close()
            os.replace(tmp, self.path)
            self.f = h5py.File(self.path, "r+")
            return np.zeros((0, self.nd)), np.zeros(0), np.zeros((0, self.nd)), 0, 0
        if not os.path.exists(self.path):
            raise HDF5Error(self.path, "--restart", "no such file")
        try:
            f = h5py.File(self.path, "r+")
        except OSError as e:
            raise HDF5Error(self.path, "--restart", f"not a readable HDF5 file ({_short(e)})") from None
        self.f = f
        if "optimize" not in f:
            raise HDF5Error(self.path, "/optimize", "no optimization record in this file")
        grp = f["optimize"]
        for key, want in (("resolved_sha256", sha), ("method", method), ("objective", objective)):
            have = grp.attrs.get(key)
            have = have.decode() if isinstance(have, bytes) else have
            if have != want and key == "resolved_sha256" and have == older_sha256(f, config, self.ignore):
                continue                  # written before some schema keys existed (record_match.py)
            if have != want:
                what = config_difference(f, config, self.ignore) \
                    if key == "resolved_sha256" \
                    else f"{have!r} here, {want!r} now"
                raise HDF5Error(self.path, f"/optimize.{key}",
                                f"this file belongs to another optimization ({what}); "
                                "use a new output file or the original config")
        if grp["x"].shape[1] != self.nd:
            raise HDF5Error(self.path, "/optimize/x", f"{grp['x'].shape[1]} design variables, expected {self.nd}")
        k = int(grp.attrs["evaluations"])
        if self.sets is not None:             # the overrides in force now (merged: record_sets)
            grp.attrs["sets"] = json.dumps(self.sets)
            f.flush()
        if not self.keep:
            return self.x, self.fv, self.g, int(grp["history"].attrs["rows"]), k
        x, fv, g, crc = grp["x"][:k], grp["f"][:k], grp["g"][:k], grp["crc"][:k]
        for i in range(k):
            if _crc(i, x[i], fv[i], g[i]) != crc[i]:
                raise HDF5Error(self.path, f"/optimize/x[{i}]",
                                "evaluation record fails its checksum (corrupted file); refusing to resume")
        return x, fv, g, int(grp["history"].attrs["rows"]), k

    def _grow(self, ds, need):
        if ds.shape[0] < need:
            ds.resize((max(need, 2 * ds.shape[0]),) + ds.shape[1:])

    def _root_write(self, fn, key):
        def write():
            fn(self.f["optimize"])
            self.f.flush()
        _root_call(self.comm, write, self.path, key)

    # -- every rank --------------------------------------------------------------------------
    @property
    def evaluations(self):
        return self.count

    def append(self, x, f, g):
        """Record evaluation number ``evaluations`` (data first, then the counter)."""
        k = self.evaluations

        def write(grp):
            for name in ("x", "f", "g", "crc"):
                self._grow(grp[name], k + 1)
            grp["x"][k], grp["f"][k], grp["g"][k] = x, f, g
            grp["crc"][k] = _crc(k, x, f, g)
            self.f.flush()
            kill_hook("write")
            grp.attrs["evaluations"] = k + 1

        self._root_write(write, f"/optimize/x[{k}]")
        self.count = k + 1
        if self.keep:
            self.x = np.vstack([self.x, x[None]])
            self.fv = np.r_[self.fv, f]
            self.g = np.vstack([self.g, g[None]])

    def truncate(self, k):
        """Count only the first ``k`` evaluations (an MMA resume re-evaluates from row k)."""
        if k < self.count:
            self._root_write(lambda grp: grp.attrs.__setitem__("evaluations", k), "/optimize")
            self.count = k

    def add_history(self, row):
        """History row ``row[0]`` (the iteration); rows already on disk are kept."""
        it = int(row[0])
        if it < self.hist_rows:
            return False

        def write(grp):
            ds = grp["history"]
            self._grow(ds, it + 1)
            ds[it] = row
            self.f.flush()
            ds.attrs["rows"] = it + 1

        self._root_write(write, "/optimize/history")
        self.hist_rows = it + 1
        return True

    def history(self):
        rows = None
        if self.root:
            rows = self.f["optimize/history"][:self.hist_rows]
        return self.comm.bcast(rows, root=0)

    def finish(self, rho, names, physical=None, reason=None):
        """The final design ρ, and with a density filter the physical x̃ = W ρ the model
        was evaluated at (``/optimize/design_physical``); ``reason``: why the run stopped
        (attribute ``reason`` of ``/optimize``)."""
        def write(grp):
            for key in ("design", "design_physical"):
                if key in grp:
                    del grp[key]
            ds = grp.create_dataset("design", data=rho)
            _put_design_names(ds, names)
            if physical is not None:
                _put_design_names(grp.create_dataset("design_physical", data=physical), names)
            if reason is not None:
                grp.attrs["reason"] = reason
            grp.attrs["finished"] = True      # what job scripts read: the run is over
        self._root_write(write, "/optimize/design")

    def close(self):
        if self.f is not None:
            try:
                self.f.close()
            except Exception:  # pragma: no cover
                pass
            self.f = None


class MMAState:
    """The MMA optimizer state in ``/optimize/mma`` of an open ``EvaluationLog``: two
    checksummed slots, ``current`` flipped only after the new slot is on disk."""

    KEYS = ("x", "xold1", "xold2", "low", "upp")

    def __init__(self, log):
        self.log, self.nd = log, log.nd

        def create(grp):
            if "mma" not in grp:
                g = grp.create_group("mma")
                for s in (0, 1):
                    g.create_dataset(f"state{s}", shape=(len(self.KEYS), self.nd), dtype="f8")
                    g.create_dataset(f"meta{s}", shape=(self.META,), dtype="f8")
                g.attrs["current"] = -1
                g.attrs["rows"] = ",".join(self.KEYS)
        log._root_write(create, "/optimize/mma")

    #: meta entries: iteration, objective scale, evaluations, halvings, move, CRC-32 (last)
    META = 6

    @staticmethod
    def _crc(state, meta):
        """CRC-32 of the state and of every meta entry but the last (the CRC itself;
        the same rule reads the (4,) meta of older records)."""
        c = zlib.crc32(np.ascontiguousarray(state, dtype=np.float64).tobytes())
        return zlib.crc32(np.ascontiguousarray(meta[:-1], dtype=np.float64).tobytes(), c)

    def save(self, it, state, fscale, evaluations, halvings=0, move=None):
        """Write ``state`` ((5, nd) on rank 0, None elsewhere) after update ``it`` into
        the slot ``current`` does not point at (a halved step after a failed trial
        rewrites the state of the same ``it``: the valid one is never overwritten).
        ``halvings``: the step halvings spent on iterate ``it`` so far; ``move``: the
        move limit the update to iterate ``it`` was solved with (None: not known, stored as NaN)."""
        def write(grp):
            g = grp["mma"]
            slot = 1 if int(g.attrs["current"]) == 0 else 0
            if g[f"meta{slot}"].shape != (self.META,):   # an older record's (4,)/(5,) slot: not the valid one
                del g[f"meta{slot}"]
                g.create_dataset(f"meta{slot}", shape=(self.META,), dtype="f8")
            meta = np.array([it, fscale, evaluations, halvings, np.nan if move is None else move, 0.0])
            meta[-1] = self._crc(state, meta)
            g[f"state{slot}"][...] = state
            g[f"meta{slot}"][...] = meta
            self.log.f.flush()
            kill_hook("write")
            g.attrs["current"] = slot
        self.log._root_write(write, "/optimize/mma/state")

    def load(self):
        """(iteration, state (5, nd), objective scale, evaluations, halvings, move) of the
        current slot, or None before the first update; every rank gets the full arrays.
        A (4,) meta (records written before the halving count was stored) reads as 0
        halvings — what those versions resumed with; a (4,) or (5,) meta (before the move
        was stored) reads move as None: the run's ``optimize.move``, what they used."""
        def read():
            g = self.log.f["optimize/mma"]
            slot = int(g.attrs["current"])
            if slot < 0:
                return None
            state, meta = g[f"state{slot}"][...], g[f"meta{slot}"][...]
            if meta.shape not in ((4,), (5,), (self.META,)):
                raise HDF5Error(self.log.path, f"/optimize/mma/meta{slot}",
                                f"shape {meta.shape}, expected ({self.META},); not an MMA state this "
                                "version can resume")
            if self._crc(state, meta) != int(meta[-1]):
                raise HDF5Error(self.log.path, f"/optimize/mma/state{slot}",
                                "MMA state fails its checksum (corrupted file); refusing to resume")
            halvings = int(meta[3]) if len(meta) >= 5 else 0
            move = float(meta[4]) if len(meta) == self.META and np.isfinite(meta[4]) else None
            return int(meta[0]), state, float(meta[1]), int(meta[2]), halvings, move
        out = _root_call(self.log.comm, read, self.log.path, "/optimize/mma")
        return self.log.comm.bcast(out, root=0)


def _put_design_names(obj, names):
    """The design names as attribute ``names`` (byte strings) when short; a 10⁵-entry
    density field exceeds HDF5's 64 KiB attribute limit, so long lists go to the string
    dataset /names/names (``io.hdf5.put_names``; read back by ``io.hdf5.get_names``)."""
    if len(names) <= MAX_NAME_ATTR:
        obj.attrs["names"] = np.array(names, dtype="S")
    else:
        put_names(obj, "names", names)
