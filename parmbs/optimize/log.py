"""The optimization record in HDF5: every evaluation (ρ, ψ, ∇ψ) and one history row
per iteration, written so that a run killed at any instant can be resumed exactly.

Layout (DESIGN.md ``/optimize/…``)::

    /optimize/x        (R, nd)  design vectors, in evaluation order
    /optimize/f        (R,)     objective values
    /optimize/g        (R, nd)  gradients
    /optimize/crc      (R,)     CRC-32 of (row, x, f, g)
    /optimize          attrs    evaluations (rows that count), resolved_sha256, method, objective
    /optimize/history  (H, 6)   iteration, ψ, |∇ψ| (projected), step, evaluations, wall s
    /optimize/history  attrs    rows
    /optimize/design   final ρ (attr names), written at the end

Why a log of evaluations is the optimizer state: the optimizers (TAO's L-BFGS
variants, MMA) are deterministic functions of the sequence of (ρ, ψ, ∇ψ) they have
seen.  A restarted run starts the optimizer again from the same initial design and
answers each evaluation request from the log while the requested ρ is bit-for-bit
the logged one — so the optimizer rebuilds every internal quantity (L-BFGS pairs,
asymptotes, line-search state) exactly, and the resumed iterate sequence is the
uninterrupted one.  Should the replay request a different ρ (other PETSc build,
edited file) the run stops with a clear message instead of mixing two runs.

Atomicity: a row is written and flushed, and only then is the ``evaluations``
counter advanced and flushed.  Datasets are created with 256 rows; growing them
(a run of more evaluations) is the only change of HDF5 metadata after creation.  A row whose CRC does not
match is treated as not written.  Rank 0 does the I/O and broadcasts (rigid models:
design vectors are small and replicated).
"""
from __future__ import annotations

import os
import zlib

import numpy as np

from ..io.hdf5 import HDF5Error, _comm, _root_call, _short, _write_header

HIST_COLS = ("iteration", "objective", "gradient_norm", "step", "evaluations", "wall_s")


class _KillHook:
    """Test hook ``PARMBS_OPTIMIZE_KILL=event:n``: SIGKILL this process at the n-th
    ``event`` — ``forward`` (forward run done), ``adjoint`` (gradient computed, not
    yet logged) or ``write`` (row on disk, counter not yet advanced)."""

    def __init__(self):
        event, _, n = os.environ.get("PARMBS_OPTIMIZE_KILL", "").partition(":")
        self.event, self.n, self.count = event, int(n) if n.isdigit() else -1, 0

    def __call__(self, event):
        if event == self.event:
            self.count += 1
            if self.count == self.n:
                import signal
                os.kill(os.getpid(), signal.SIGKILL)


kill_hook = _KillHook()


def _crc(k, x, f, g):
    c = zlib.crc32(np.array([k], np.int64).tobytes())
    for a in (x, np.array([f]), g):
        c = zlib.crc32(np.ascontiguousarray(a, dtype=np.float64).tobytes(), c)
    return c


class EvaluationLog:
    """Create (``fresh``) or reopen (resume) the optimization record of ``path``."""

    def __init__(self, path, config, sha, names, method, objective, fresh, comm=None, rows=256):
        self.path, self.comm = os.fspath(path), _comm(comm)
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
        self.x, self.fv, self.g, self.hist_rows = self.comm.bcast(data, root=0)

    # -- rank 0 ------------------------------------------------------------------------
    def _open(self, config, sha, method, objective, fresh, rows):
        import h5py
        if fresh:
            f = h5py.File(self.path, "w")
            _write_header(f, config, self.comm.size)
            grp = f.create_group("optimize")
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            for name, shape, dt in (("x", (rows, self.nd), "f8"), ("f", (rows,), "f8"),
                                    ("g", (rows, self.nd), "f8"), ("crc", (rows,), "u4"),
                                    ("history", (rows, len(HIST_COLS)), "f8")):
                grp.create_dataset(name, shape=shape, dtype=dt, maxshape=(None,) + shape[1:],
                                   chunks=(min(rows, 64),) + tuple(max(s, 1) for s in shape[1:]))
            grp.attrs.update({"evaluations": 0, "resolved_sha256": sha, "method": method,
                              "objective": objective, "names": np.array(self.names, dtype="S")})
            grp["history"].attrs["rows"] = 0
            grp["history"].attrs["columns"] = ",".join(HIST_COLS)
            f.flush()
            self.f = f
            return np.zeros((0, self.nd)), np.zeros(0), np.zeros((0, self.nd)), 0
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
            if have != want:
                what = "the model, design or simulation settings differ" if key == "resolved_sha256" \
                    else f"{have!r} here, {want!r} now"
                raise HDF5Error(self.path, f"/optimize.{key}",
                                f"this file belongs to another optimization ({what}); "
                                "use a new output file or the original config")
        if grp["x"].shape[1] != self.nd:
            raise HDF5Error(self.path, "/optimize/x", f"{grp['x'].shape[1]} design variables, expected {self.nd}")
        k = int(grp.attrs["evaluations"])
        x, fv, g, crc = grp["x"][:k], grp["f"][:k], grp["g"][:k], grp["crc"][:k]
        for i in range(k):
            if _crc(i, x[i], fv[i], g[i]) != crc[i]:
                raise HDF5Error(self.path, f"/optimize/x[{i}]",
                                "evaluation record fails its checksum (corrupted file); refusing to resume")
        return x, fv, g, int(grp["history"].attrs["rows"])

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
        return len(self.fv)

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
        self.x = np.vstack([self.x, x[None]])
        self.fv = np.r_[self.fv, f]
        self.g = np.vstack([self.g, g[None]])

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

    def finish(self, rho, names):
        def write(grp):
            if "design" in grp:
                del grp["design"]
            ds = grp.create_dataset("design", data=rho)
            ds.attrs["names"] = np.array(names, dtype="S")
        self._root_write(write, "/optimize/design")

    def close(self):
        if self.f is not None:
            try:
                self.f.close()
            except Exception:  # pragma: no cover
                pass
            self.f = None
