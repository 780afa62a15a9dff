"""HDF5 files of parmbs (DESIGN.md "HDF5 layout"): writing a trajectory while it is
computed, gradients, and reading a trajectory back with validation.

Layout written here::

    /meta                     attrs parmbs, petsc, ranks, config_sha256, created
    /config                   the resolved config as TOML text (string dataset)
    /trajectory/t             (rows,)      resizable, chunked by step
    /trajectory/q, v, a       (rows, n)    attrs: coordinates ("A1.x", "A1.y", "A1.angle", ...)
    /trajectory/lambda        (rows, m)    attrs: constraints ("JA[0]", ...)
    /trajectory               attrs valid_steps, steps, dt, t_end, formulation, integrator
    /gradient/<objective>/<design>   scalar datasets; attr value on /gradient/<objective>

``valid_steps`` is the index of the last step whose row is on disk and flushed
(-1: none yet); rows after it may be garbage after a crash.  Arrays are
replicated on every rank in this version, so rank 0 alone writes (h5py serial
build); every method here is called on all ranks and collective operations are
limited to broadcasting rank 0's success or failure, so an I/O error becomes the
same exception on every rank.
"""
from __future__ import annotations

import datetime as _dt
import os
import time

import numpy as np

import parmbs

DATASETS = ("t", "q", "v", "a", "lambda")


class HDF5Error(Exception):
    """A missing, unreadable or malformed parmbs HDF5 file: ``f"{file}: {key}: {message}"``."""

    def __init__(self, file, key, message):
        self.file, self.key, self.message = str(file), key, message
        super().__init__(f"{self.file}: {key}: {message}")


def _comm(comm):
    if comm is None:
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
    return comm


def _root_call(comm, fn, file, key):
    """Run ``fn`` on rank 0; every rank returns its result or raises the same HDF5Error."""
    comm = _comm(comm)
    res, err = None, None
    if comm.rank == 0:
        try:
            res = fn()
        except HDF5Error as e:
            err = (e.file, e.key, e.message)
        except (OSError, ValueError, KeyError, TypeError, RuntimeError) as e:
            # RuntimeError: what h5py raises for some corrupted files (a damaged object
            # header met while writing /gradient): one line, not a traceback
            err = (str(file), key, _short(e))
    if comm.size > 1:
        err = comm.bcast(err, root=0)
    if err is not None:
        raise HDF5Error(*err)
    return res


def _short(e):
    from .outputs import is_lock_error
    if isinstance(e, OSError) and is_lock_error(e):
        return "the file is locked: in use by another process (a parmbs run still writing it?)"
    if isinstance(e, RuntimeError):
        return f"{' '.join(str(e).split()) or 'RuntimeError'} (corrupt file?)"
    if isinstance(e, OSError) and e.errno:
        return f"cannot open or write: {os.strerror(e.errno)}"
    return " ".join(str(e).split()) or type(e).__name__


def _petsc_version():
    try:
        from .._petsc import PETSC_VERSION
        return ".".join(str(x) for x in PETSC_VERSION)
    except Exception:  # pragma: no cover
        return "unknown"


#: name lists longer than this go to /names/<key> datasets (an HDF5 attribute must
#: fit in its 64 KiB object header: ~2000 names of a 21000-coordinate chain do not)
MAX_NAME_ATTR = 1000


def put_names(obj, key, names):
    """Attach a list of names to ``obj``: as attribute ``key`` when short, else as the
    string dataset ``/names/<key>`` (readers look in both places: ``get_names``)."""
    names = list(names)
    if len(names) <= MAX_NAME_ATTR:
        obj.attrs[key] = names
        return
    import h5py
    grp = obj.file.require_group("names")
    if key not in grp:
        grp.create_dataset(key, data=np.array(names, dtype=object), dtype=h5py.string_dtype("utf-8"))


def get_names(obj, key):
    if key in obj.attrs:
        return [_plain(x) for x in obj.attrs[key]]
    f = obj.file
    if "names" in f and key in f["names"]:
        return [_plain(x) for x in f["names"][key][()]]
    return []


def coordinate_names(system):
    """One name per entry of q: rigid bodies' "B.x", "B.y", "B.angle" (centre of mass),
    then each flexible set's own names (``coordinate_names()`` of beams, plates …), and
    "q[i]" for any coordinate no set names, so the list always has n entries."""
    names = [f"{b}.{c}" for b in system.body_names for c in ("x", "y", "angle")]
    for part in (getattr(system, "beams", None), getattr(system, "ffr", None), getattr(system, "plates", None),
                 getattr(system, "continua", None), getattr(system, "spatial", None),
                 getattr(system, "spatial_beams", None), getattr(system, "natural", None),
                 getattr(system, "solids", None)):
        if part is not None and hasattr(part, "coordinate_names"):
            names += part.coordinate_names()
    return names + [f"q[{i}]" for i in range(len(names), system.n)]


def _write_header(f, config, ranks):
    import h5py
    meta = f.require_group("meta")
    meta.attrs["parmbs"] = parmbs.__version__
    meta.attrs["petsc"] = _petsc_version()
    meta.attrs["ranks"] = int(ranks)
    meta.attrs["config_sha256"] = getattr(config, "text_sha256", "") or ""
    meta.attrs["created"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    if "config" in f:
        del f["config"]
    f.create_dataset("config", data=config.to_toml(), dtype=h5py.string_dtype("utf-8"))


# ----------------------------------------------------------------------------- trajectory writer


class TrajectoryWriter:
    """``on_step`` callback for ``Problem.forward`` that streams the trajectory to HDF5.

    Create on every rank; pass as ``on_step``; call ``close()`` on every rank (also
    after a failed run: the rows computed so far stay valid).  Rank 0 buffers rows
    and flushes them every ``flush_seconds`` or ``flush_steps`` steps and at close.
    """

    def __init__(self, path, config, system, nsteps, comm=None, flush_seconds=1.0,
                 flush_steps=1000, mode="w"):
        self.path, self.comm = os.fspath(path), _comm(comm)
        self.root = self.comm.rank == 0
        self.nsteps, self.n, self.m = int(nsteps), system.n, system.m
        self.flush_seconds, self.flush_steps = flush_seconds, flush_steps
        self._buf, self._err, self.f = [], None, None
        self.valid_steps = -1
        self._last_flush = time.monotonic()
        sim = config.simulation
        self.adaptive = getattr(sim, "adapt", None) is not None

        def create():
            import h5py
            f = h5py.File(self.path, mode)
            try:
                _write_header(f, config, self.comm.size)
                if "trajectory" in f:
                    del f["trajectory"]
                g = f.create_group("trajectory")
                rows = self.nsteps + 1
                for name, width in (("t", None), ("q", self.n), ("v", self.n), ("a", self.n),
                                    ("lambda", self.m)):
                    shape = (0,) if width is None else (0, width)
                    maxshape = (None,) if width is None else (None, width)
                    chunks = (min(1024, rows),) if width is None else (min(1024, rows), max(width, 1))
                    d = g.create_dataset(name, shape=shape, maxshape=maxshape, chunks=chunks, dtype="f8")
                    if name in ("q", "v", "a"):
                        put_names(d, "coordinates", coordinate_names(system))
                    elif name == "lambda":
                        put_names(d, "constraints", system.constraint_names)
                put_names(g, "coordinates", coordinate_names(system))
                put_names(g, "bodies", system.body_names)
                g.attrs["steps"] = self.nsteps
                g.attrs["dt"] = float(sim.dt)
                g.attrs["t_end"] = float(sim.t_end)
                g.attrs["formulation"] = sim.formulation
                g.attrs["integrator"] = sim.integrator
                g.attrs["valid_steps"] = -1
                f.flush()
            except BaseException:
                f.close()
                raise
            return f

        f = _root_call(self.comm, create, self.path, "<file>")
        if self.root:
            self.f = f

    def __call__(self, k, t, x):
        if not self.root or self._err is not None:
            return
        try:
            q, v, a, lam = x
            self._buf.append((k, float(t), np.array(q, dtype=float), np.array(v, dtype=float),
                              np.array(a, dtype=float), np.array(lam, dtype=float)))
            now = time.monotonic()
            if (k == 0 or len(self._buf) >= self.flush_steps
                    or now - self._last_flush >= self.flush_seconds):
                self.flush()
        except Exception as e:  # keep running: the error is raised collectively in close()
            self._err = _short(e)

    def flush(self):
        """Rank 0: write buffered rows, flush the file, then advance ``valid_steps``."""
        if not self.root or not self._buf:
            return
        g = self.f["trajectory"]
        k0 = self._buf[0][0]
        k1 = self._buf[-1][0]
        if k0 != self.valid_steps + 1 or k1 - k0 + 1 != len(self._buf):
            raise ValueError(f"non-consecutive steps {k0}..{k1} after valid step {self.valid_steps}")
        rows = k1 + 1
        for j, name in enumerate(DATASETS):
            d = g[name]
            if d.shape[0] < rows:
                d.resize(rows, axis=0)
            d[k0:rows] = np.array([b[1 + j] for b in self._buf])
        self.f.flush()                    # data first ...
        if self.adaptive:                 # the number of steps is known as they are accepted
            g.attrs["steps"] = k1
        g.attrs["valid_steps"] = k1       # ... then the marker, flushed again
        self.f.flush()
        self.valid_steps = k1
        self._buf = []
        self._last_flush = time.monotonic()

    def close(self):
        """Collective: flush the rest, close, and raise HDF5Error on all ranks if writing failed."""
        def fin():
            try:
                if self._err is None:
                    self.flush()
            finally:
                if self.f is not None:
                    self.f.close()
                    self.f = None
            if self._err is not None:
                raise HDF5Error(self.path, "/trajectory", f"write failed: {self._err}")
        _root_call(self.comm, fin, self.path, "/trajectory")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ----------------------------------------------------------------------------- gradients


def write_gradient(path, grads, design_names, config=None, values=None, comm=None, fields=None, design=None):
    """Write ``/gradient/<objective>/<design>`` scalars (rank 0; collective error).

    Appends to an existing file (as left by TrajectoryWriter); creates it with
    /meta and /config if it does not exist and ``config`` is given.
    ``values`` optionally maps objective names to objective values (attr ``value``).
    ``fields`` maps an element-field design entry to its slice of columns: it is
    written as one vector dataset ``/gradient/<objective>/<entry>``, and its design
    values (``design``, all columns) as ``/design/<entry>``.

    On several ranks with an MPI build of h5py the field vectors (10⁵ entries for a
    topology design) are written in parallel: rank 0 creates the datasets, then every
    rank writes its block of each (PETSc's contiguous split, the MMA Vec's ownership)
    in one collective ``driver='mpio'`` write (``_write_fields_parallel``).
    """
    fields = fields or {}
    in_field = np.zeros(len(design_names), bool)
    for sl in fields.values():
        in_field[sl] = True
    path = os.fspath(path)
    comm = _comm(comm)
    parallel = bool(fields) and comm.size > 1 and _mpio()
    blocks = set()                # (group, name) of the vectors every rank writes a block of

    def vector(grp, name, data):
        if parallel:
            blocks.add((grp.name, name))
            grp.create_dataset(name, shape=data.shape, dtype=float)
        else:
            grp.create_dataset(name, data=data)

    def write():
        import h5py
        new = not os.path.exists(path)
        with h5py.File(path, "a") as f:
            if new and config is not None:
                _write_header(f, config, comm.size)
            if "gradient" in f:
                del f["gradient"]
            g = f.create_group("gradient")
            put_names(g, "design", design_names)     # 10⁵ field columns: /names/design
            for obj, grad in grads.items():
                go = g.create_group(obj)
                if values is not None and obj in values:
                    go.attrs["value"] = float(values[obj])
                grad = np.asarray(grad, dtype=float)
                for name, val, skip in zip(design_names, grad, in_field):
                    if not skip:
                        go.create_dataset(name, data=float(val))
                for name, sl in fields.items():
                    vector(go, name, grad[sl])
            if design is not None and fields:
                if "design" in f:
                    del f["design"]
                gd = f.create_group("design")
                for name, sl in fields.items():
                    vector(gd, name, np.asarray(design, float)[sl])
        return sorted(blocks)
    keys = _root_call(comm, write, path, "/gradient")
    if parallel:
        keys = comm.bcast(keys, root=0)
        _write_fields_parallel(comm, path, keys, blocks, grads, fields, design)


def _mpio():
    """True when h5py can open files with driver='mpio' (Debian's h5py picks its MPI
    build under mpirun)."""
    try:
        import h5py
        return bool(h5py.get_config().mpi)
    except ImportError:
        return False


def _write_fields_parallel(comm, path, keys, blocks, grads, fields, design):
    """Collective: every rank writes its contiguous block of each field vector that rank
    0 created (``keys``: (group, name) in rank 0's order; the vectors are the same on
    every rank, rebuilt here from ``grads``/``design``).  An error on any rank raises
    the same HDF5Error on all (one allreduce, reached on every path)."""
    import h5py
    from ..model.assembly import block_range
    vec = {}
    for obj, grad in grads.items():
        for name, sl in fields.items():
            vec[(f"/gradient/{obj}", name)] = np.asarray(grad, float)[sl]
    if design is not None:
        for name, sl in fields.items():
            vec[("/design", name)] = np.asarray(design, float)[sl]
    err = None
    try:
        with h5py.File(path, "r+", driver="mpio", comm=comm) as f:
            for grp, name in keys:
                ds, data = f[grp][name], vec[(grp, name)]
                lo, hi = block_range(len(data), comm.size, comm.rank)
                with ds.collective:
                    ds[lo:hi] = data[lo:hi]
    except (OSError, ValueError, KeyError, TypeError, RuntimeError) as e:
        err = _short(e)
    errs = [e for e in comm.allgather(err) if e is not None]
    if errs:
        raise HDF5Error(path, "/gradient", errs[0])


# ----------------------------------------------------------------------------- reading


class TrajectoryData:
    """What ``read_trajectory`` returns: arrays cut to the valid rows, plus metadata."""

    def __init__(self, path, t, q, v, a, lam, config_text, meta, attrs, coordinates):
        self.path, self.t, self.q, self.v, self.a, self.lam = path, t, q, v, a, lam
        self.config_text, self.meta, self.attrs, self.coordinates = config_text, meta, attrs, coordinates

    @property
    def steps(self):
        return len(self.t) - 1


def read_trajectory(path):
    """Read and validate ``/config`` and ``/trajectory`` of a parmbs file (serial).

    Raises HDF5Error (file, key, message) for a missing, non-HDF5 or malformed file.
    """
    import h5py
    path = os.fspath(path)
    if not os.path.exists(path):
        raise HDF5Error(path, "<file>", "no such file")
    try:
        ok = h5py.is_hdf5(path)
    except OSError as e:
        raise HDF5Error(path, "<file>", f"cannot read: {_short(e)}") from None
    if not ok:
        raise HDF5Error(path, "<file>", "not an HDF5 file")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise HDF5Error(path, "<file>", f"cannot open: {_short(e)}") from None
    with f:
        for key in ("meta", "config", "trajectory"):
            if key not in f:
                raise HDF5Error(path, f"/{key}", "missing (not a parmbs trajectory file)")
        try:
            text = f["config"][()]
            text = text.decode("utf-8") if isinstance(text, bytes) else str(text)
        except Exception as e:
            raise HDF5Error(path, "/config", f"unreadable: {_short(e)}") from None
        meta = {k: _plain(v) for k, v in f["meta"].attrs.items()}
        g = f["trajectory"]
        arrays = {}
        for name in DATASETS:
            if name not in g or not isinstance(g[name], h5py.Dataset):
                raise HDF5Error(path, f"/trajectory/{name}", "missing dataset")
        if "valid_steps" not in g.attrs:
            raise HDF5Error(path, "/trajectory", "attribute valid_steps missing")
        valid = int(g.attrs["valid_steps"])
        if valid < 0:
            raise HDF5Error(path, "/trajectory", "no valid steps (valid_steps = -1): the run "
                            "stopped before the first flush")
        n = None
        for name in DATASETS:
            d = g[name]
            want = 1 if name == "t" else 2
            if d.ndim != want or d.shape[0] < valid + 1:
                raise HDF5Error(path, f"/trajectory/{name}",
                                f"shape {d.shape} does not hold {valid + 1} valid rows")
            try:
                arrays[name] = np.asarray(d[: valid + 1], dtype=float)
            except Exception as e:
                raise HDF5Error(path, f"/trajectory/{name}", f"unreadable: {_short(e)}") from None
        n = arrays["q"].shape[1]
        for name in ("v", "a"):
            if arrays[name].shape[1] != n:
                raise HDF5Error(path, f"/trajectory/{name}", f"width {arrays[name].shape[1]} != q's {n}")
        attrs = {k: _plain(v) for k, v in g.attrs.items()}
        coords = get_names(g, "coordinates")
    return TrajectoryData(path, arrays["t"], arrays["q"], arrays["v"], arrays["a"], arrays["lambda"],
                          text, meta, attrs, coords)


def _plain(v):
    if isinstance(v, bytes):
        return v.decode("utf-8")
    if isinstance(v, np.ndarray):
        return [_plain(x) for x in v.tolist()]
    if isinstance(v, np.generic):
        return v.item()
    return v


def read_gradient(path):
    """``{objective: {design: value}}`` from /gradient (serial)."""
    import h5py
    path = os.fspath(path)
    try:
        with h5py.File(path, "r") as f:
            if "gradient" not in f:
                raise HDF5Error(path, "/gradient", "missing")
            return {o: {d: float(f["gradient"][o][d][()]) for d in f["gradient"][o]}
                    for o in f["gradient"]}
    except OSError as e:
        raise HDF5Error(path, "<file>", f"cannot open: {_short(e)}") from None
