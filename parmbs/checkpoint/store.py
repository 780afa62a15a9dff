"""The HDF5 checkpoint store: forward states by slot, the adjoint state, and the
bookkeeping that makes a file killed at any instant safe to resume from.

Layout (DESIGN.md "HDF5 layout"; extra groups are ours)::

    /meta, /config                     as every parmbs file (io/hdf5.py)
    /trajectory/t, q, v, a, lambda     schedule ``all``: row k = x_k;  attr valid_steps
    /checkpoint/t, q, v, a, lambda     schedules every/revolve: slot i holds one state
    /checkpoint/step                   (slots,) int64: the step slot i holds, −1 = empty
    /checkpoint/psi                    (slots, objectives): Σ_{j<k} w_j f_j(x_j), the
                                       objective integral up to the state (restart)
    /checkpoint/crc                    (slots,) uint32: CRC-32 of (k, t, q, v, a, λ, ψ)
    /checkpoint  attrs                 schedule, steps, slots, resolved_sha256, format
    /adjoint/c0, /adjoint/c1           two copies of the adjoint state after reverse
                                       step k: k, x_k, μ_k (q, v, a, λ blocks), the
                                       partial gradient and reference sensitivity, the
                                       objective values, crc
    /adjoint/marker                    [copy, k]: the valid copy (−1: none yet)

A stepper whose state carries trailing blocks after (q, v, a, λ) (Problem.state_blocks:
the pseudo-acceleration ``pseudo_a`` of integrators/genalpha_ab.py) adds one dataset per
block beside q, v, a, lambda, and x_NAME, mu_NAME to the adjoint copies; the CRCs cover
every block.

Adaptive runs (``simulation.adapt``; integrators/timeloop.py) add, with the attribute
``/checkpoint adaptive = 1``::

    /grid/t (C+1,), /grid/h (C,)       the accepted times t_k and steps h_k = t_{k+1} − t_k
                                       (as the controller chose them, bit for bit)
    /grid/crc (C+1,) uint32            CRC-32 of (k, t_k, h_{k−1}) per row
    /checkpoint/control (slots, 4+F+4Q) the loop state after the step to the state
                                       (MarchState.control: next h, last error norm,
                                       noise-floor hits, rejections; F = 4 with a digital-
                                       filter controller (adapt.controller): its history;
                                       F = 2 with adapt.grow_after: the PI controller's run;
                                       with Q error-controlled
                                       quadratures (adapt.objective_atol) their last three
                                       integrand values and ∫|f| dt), in the state's CRC
    /checkpoint/hist_t, hist_q, hist_v every:K only: t, q, v of the three accepted states
                                       before the slot's (the error estimator's nodes;
                                       ``all`` reads them from the rows before)

so the adjoint sweep and the recomputing providers take the accepted steps, and a
resumed forward run continues with the controller's state: it takes exactly the steps
of an uninterrupted run.  The number of steps C of an adaptive run is not known when
the file is created: it is allocated for the estimate t_end/dt and, when the run needs
more, *grown by copying* (``grow``): a complete copy with twice the capacity is
written to ``FILE.grow``, flushed and closed, then renamed over FILE (os.replace,
atomic) — so every file that ever carries the name FILE keeps the fixed-shape
invariant below, and a kill during the copy leaves the old file (the stale copy is
removed when the file is next opened).  When the forward run ends the file is
compacted the same way to exactly N steps, so a finished adaptive file has the shape
of a fixed-step one.  Copies cost at most ~3 N rows in all (doubling).

Why it survives SIGKILL: every dataset has a fixed shape and is allocated when the
file is created (H5D_ALLOC_TIME_EARLY, no fill), so later writes change raw data and
never HDF5's metadata (chunk indexes, heaps): a kill between or inside writes cannot
leave an unreadable file.  Progress is published only after the data it refers to
was flushed — valid_steps for ``all`` (rows are buffered and flushed every
``interval`` seconds), the slot's ``step`` entry for a slot, the marker for the
adjoint copy (written to the copy that is not current).  Every state carries a
CRC-32 that is checked whenever it is read: a state whose data does not match its
marker (a torn or corrupted write) is treated as missing and recomputed from an
earlier one (slots; x_0 can always be recomputed), or refused with a clear
HDF5Error (``all`` rows and adjoint copies).  So a file never gives a silently
wrong gradient.

MPI: the states of these rigid models are replicated on every rank; rank 0 does all
I/O (serial h5py, also when h5py is the MPI build) and broadcasts what it reads and
whether it succeeded, so every rank raises the same HDF5Error and no rank is left
waiting in a collective call.
"""
from __future__ import annotations

import os
import time
import zlib

import numpy as np

from ..io.hdf5 import HDF5Error, _comm, _short, _write_header, coordinate_names, put_names
from .._log import checkpoint_io, stage
from ..integrators.timeloop import memory_width

FORMAT = 1          # adaptive files add datasets (above) and are marked by /checkpoint adaptive = 1
#: seconds between flushes of buffered ``all`` rows and adjoint copies (0: every step)
DEFAULT_INTERVAL = 1.0
from .record_match import OUTPUT_KEYS, config_difference, matches, resolved_sha256  # noqa: F401


def _crc(k, t, x, psi, extra=()):
    """CRC-32 of a state; ``extra`` (adaptive runs: the loop state) is appended, so a
    fixed-step state's CRC is what it always was."""
    c = zlib.crc32(np.array([k], np.int64).tobytes())
    c = zlib.crc32(np.array([t], np.float64).tobytes(), c)
    for arr in (*x, psi, *extra):
        c = zlib.crc32(np.ascontiguousarray(arr, dtype=np.float64).tobytes(), c)
    return c


def _crc_grid(k, t, h):
    return zlib.crc32(np.array([k], np.int64).tobytes() + np.array([t, h], np.float64).tobytes())


#: rows copied per block when an adaptive file grows (~16 MB)
_COPY_BYTES = 16 << 20


class _Kill:
    """Test hook (``PARMBS_CHECKPOINT_KILL=event:n``): SIGKILL this process at the n-th
    ``event`` — ``forward`` (step computed), ``adjoint`` (reverse step done) or
    ``write`` (data written, progress marker not yet) or ``grow`` (an adaptive file's
    larger copy written, not yet renamed over the file).  ``raise:`` in front raises
    SimulatedKill instead (in-process tests under mpirun)."""

    def __init__(self):
        from ..faults import test_env
        spec = test_env("PARMBS_CHECKPOINT_KILL")       # inert without PARMBS_TEST_FAULTS=1
        self.raise_ = spec.startswith("raise:")
        spec = spec[6:] if self.raise_ else spec
        self.event, _, n = spec.partition(":")
        self.n = int(n) if n.isdigit() else -1
        self.count = {}

    def __call__(self, event):
        if event != self.event:
            return
        c = self.count[event] = self.count.get(event, 0) + 1
        if c == self.n:
            if self.raise_:
                raise SimulatedKill(f"{event}:{c}")
            import signal
            os.kill(os.getpid(), signal.SIGKILL)


class SimulatedKill(BaseException):
    """Raised by the kill hook in ``raise:`` mode (not an Exception: nothing catches it)."""


class CheckpointStore:
    """One checkpoint file; create on every rank (collective), use from every rank.

    ``open`` creates the file if it does not exist, else checks that it belongs to the
    same resolved config and schedule (HDF5Error otherwise, naming what differs).
    """

    def __init__(self, path, config, problem, schedule, comm=None, interval=None):
        self.path, self.comm = os.fspath(path), _comm(comm)
        self.root = self.comm.rank == 0
        self.schedule = schedule
        self.N = problem.nsteps               # adaptive: the capacity (an estimate; grown by copying)
        self.adaptive = problem.adapt is not None
        # MarchState.control's width: 4, the controller's history (a digital filter's: 4), plus 4 per
        # error-controlled quadrature (quad_error.py)
        self.control_width = 4 + memory_width(problem.adapt) + 4 * len(problem.quad_objectives())
        self._config, self._problem = config, problem
        self._grid = []                       # rank 0, adaptive: buffered (k, t_k, h_{k−1})
        self.grid_rows = 0                    # rank 0, adaptive: grid rows 0 … grid_rows−1 written
        self.n, self.m = problem.sys.n, problem.sys.m
        # the state's blocks: q, v, a, lambda and a stepper's trailing ones (Problem.state_blocks;
        # e.g. pseudo_a of integrators/genalpha_ab.py), one dataset each
        self.blocks = tuple(problem.state_blocks())
        self.names = tuple(name for name, _ in self.blocks)
        self.nobj, self.nd = len(problem.objectives), problem.design.nswept   # swept parameter columns (design.py)
        self.S = self._slots(self.N)
        self.sha = resolved_sha256(config)
        if interval is None:
            interval = float(os.environ.get("PARMBS_CHECKPOINT_INTERVAL", DEFAULT_INTERVAL))
        self.interval = interval
        self.kill = _Kill()
        self._pending = None                  # rank 0: error of a buffered write, raised collectively
        self.f = None
        self._rows = []                       # buffered ``all`` rows
        self._last = time.monotonic()
        self.valid_steps = -1
        self.slot_step = None
        self.adjoint_marker = (-1, -1)
        self.writes = 0                       # states written (statistics)
        self.created = False

        def do_open():
            import h5py
            exists = os.path.exists(self.path)
            if exists:
                self._open_existing(h5py)
            else:
                self._create(h5py, config, problem)
                self.created = True
            return (self.created, self.valid_steps, self.slot_step, self.adjoint_marker, self.N, self.S)

        info = self._root(do_open, "<file>")
        # (N, S: an adaptive file's capacity, read on rank 0, is every rank's)
        self.created, self.valid_steps, self.slot_step, self.adjoint_marker, self.N, self.S = info

    def _slots(self, N):
        """Slots for N steps; adaptive ``revolve:C``: min(C, N + 1) (online placement,
        schedules.Revolve.online_slot, may keep x_0 … x_N when C > N)."""
        if self.adaptive and self.schedule.kind == "revolve":
            return min(self.schedule.count, N + 1)
        return self.schedule.slots(N)

    # -- collective plumbing ----------------------------------------------------------------
    def _root(self, fn, key, pending_first=True):
        """Run fn on rank 0; broadcast its result, or the same HDF5Error to every rank."""
        res, err = None, None
        if self.root:
            try:
                if pending_first and self._pending is not None:   # a failed buffered row write
                    raise self._pending
                with stage("checkpoint I/O"):        # -log_view's "parmbs checkpoint I/O" (_log.py)
                    res = fn()
            except SimulatedKill:
                err = "kill"
            except HDF5Error as e:
                err = (e.file, e.key, e.message)
            except (OSError, ValueError, KeyError, TypeError, RuntimeError) as e:
                err = (self.path, key, _short(e))
        if self.comm.size > 1:
            res, err = self.comm.bcast((res, err), root=0)
        if err == "kill":
            raise SimulatedKill("write")
        if err is not None:
            if self.root and self.f is not None:
                try:
                    self.f.close()
                except Exception:  # noqa: BLE001
                    pass
                self.f = None
            raise HDF5Error(*err)
        return res

    # -- creating and opening -------------------------------------------------------------------
    def _dset(self, h5py, g, name, shape, dtype="f8"):
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
        dcpl.set_fill_time(h5py.h5d.FILL_TIME_NEVER)
        width = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        rows = max(1, min(shape[0], 65536 // (8 * max(width, 1))))   # ~64 kB chunks of whole steps
        chunks = (rows,) + tuple(max(s, 1) for s in shape[1:])
        if shape[0] == 0 or any(s == 0 for s in shape[1:]):
            return g.create_dataset(name, shape=shape, dtype=dtype)
        # maxshape: extendible like TrajectoryWriter's (never resized here: no metadata change)
        return g.create_dataset(name, shape=shape, dtype=dtype, chunks=chunks, dcpl=dcpl,
                                maxshape=(None,) + tuple(shape[1:]))

    def _create(self, h5py, config, problem, path=None):
        sys_, S, N = problem.sys, self.S, self.N
        f = h5py.File(path or self.path, "w")
        self.f = f
        _write_header(f, config, self.comm.size)
        data = f.create_group("trajectory" if self.schedule.kind == "all" else "checkpoint")
        ck = f.require_group("checkpoint")
        for name, width in (("t", None),) + self.blocks:
            self._dset(h5py, data, name, (S,) if width is None else (S, width))
        for name in ("q", "v", "a"):
            put_names(data[name], "coordinates", coordinate_names(sys_))
        put_names(data["lambda"], "constraints", sys_.constraint_names)
        self._dset(h5py, ck, "psi", (S, self.nobj))
        self._dset(h5py, ck, "crc", (S,), "u4")
        if self.schedule.kind != "all":
            self._dset(h5py, ck, "step", (S,), "i8")
            ck["step"][:] = -1
        if self.adaptive:                 # the accepted steps and the loop state (module docstring)
            gr = f.create_group("grid")
            self._dset(h5py, gr, "t", (N + 1,))
            self._dset(h5py, gr, "h", (N,))
            self._dset(h5py, gr, "crc", (N + 1,), "u4")
            self._dset(h5py, ck, "control", (S, self.control_width))
            if self.schedule.kind != "all":
                self._dset(h5py, ck, "hist_t", (S, 3))
                self._dset(h5py, ck, "hist_q", (S, 3, self.n))
                self._dset(h5py, ck, "hist_v", (S, 3, self.n))
            ck.attrs["adaptive"] = 1
        sim = config.simulation
        if self.schedule.kind == "all":
            g = data
            put_names(g, "coordinates", coordinate_names(sys_))
            put_names(g, "bodies", sys_.body_names)
            g.attrs["steps"] = N
            g.attrs["dt"] = float(sim.dt)
            g.attrs["t_end"] = float(sim.t_end)
            g.attrs["formulation"] = sim.formulation
            g.attrs["integrator"] = sim.integrator
            g.attrs["valid_steps"] = -1
        ck.attrs["schedule"] = self.schedule.text
        ck.attrs["steps"] = N
        ck.attrs["slots"] = S
        ck.attrs["resolved_sha256"] = self.sha
        ck.attrs["format"] = FORMAT
        ck.attrs["objectives"] = [o.name for o in problem.objectives]
        put_names(ck, "design", problem.design.names)     # 10⁵ field columns: /names/design
        self._new_adjoint(h5py, f)
        f.flush()
        self.slot_step = np.full(S, -1, np.int64) if self.schedule.kind != "all" else None

    def _new_adjoint(self, h5py, f):
        """/adjoint: two copies of the adjoint state and the marker (none valid yet)."""
        adj = f.create_group("adjoint")
        for c in ("c0", "c1"):
            g = adj.create_group(c)
            for name, shape in self._adjoint_shapes():
                self._dset(h5py, g, name, shape, "i8" if name == "k" else "u4" if name == "crc" else "f8")
        self._dset(h5py, adj, "marker", (2,), "i8")
        adj["marker"][:] = -1

    def _adjoint_shapes(self):
        n, m, K, nd = self.n, self.m, self.nobj, self.nd
        return ((("k", (1,)),) + tuple((f"x_{name}", (w,)) for name, w in self.blocks)
                + tuple((f"mu_{name}", (w, K)) for name, w in self.blocks)
                + (("grad", (nd, K)), ("gref", (2, K)), ("values", (K,)), ("crc", (1,))))

    def _open_existing(self, h5py):
        p = self.path
        try:
            ok = h5py.is_hdf5(p)
        except OSError as e:
            raise HDF5Error(p, "<file>", f"cannot read: {_short(e)}") from None
        if not ok:
            raise HDF5Error(p, "<file>", "not an HDF5 file (truncated or overwritten?); delete it to start afresh")
        try:
            f = h5py.File(p, "r+")
        except OSError as e:
            from ..io.outputs import is_lock_error      # a concurrent run holds it: not corrupt
            raise HDF5Error(p, "<file>", f"cannot open: {_short(e)}"
                            + ("" if is_lock_error(e) else " (corrupt or truncated file?)")) from None
        self.f = f
        if "checkpoint" not in f or "resolved_sha256" not in f["checkpoint"].attrs:
            raise HDF5Error(p, "/checkpoint", "not a parmbs checkpoint file (no /checkpoint); "
                            "delete it or choose another checkpoint.file")
        ck = f["checkpoint"]
        stale = p + ".grow"                 # a copy a kill interrupted (grow): the file itself is intact
        if os.path.exists(stale):
            os.remove(stale)
        sha = _str(ck.attrs["resolved_sha256"])
        if not matches(f, sha, self._config):      # (keys added to the schema since: record_match.py)
            raise HDF5Error(p, "/checkpoint.resolved_sha256", "the file was written for a different config "
                            f"({config_difference(f, self._config)}); it cannot be resumed — delete it or "
                            "give another file")
        if int(ck.attrs.get("format", -1)) != FORMAT:
            raise HDF5Error(p, "/checkpoint", f"unsupported checkpoint format {ck.attrs.get('format')}")
        if bool(int(ck.attrs.get("adaptive", 0))) != self.adaptive:
            raise HDF5Error(p, "/checkpoint", "the file was written for "
                            + ("adaptive" if not self.adaptive else "fixed") + " steps; delete it to start afresh")
        try:
            if self.adaptive:               # the capacity the file was grown/compacted to
                self.N, self.S = int(ck.attrs["steps"]), int(ck.attrs["slots"])
                self.grid_rows = self.N + 1      # (rows beyond the resume point are rewritten)
            if self.schedule.kind == "all":
                self.valid_steps = int(f["trajectory"].attrs["valid_steps"])
                for name in ("t",) + self.names:
                    if name not in f["trajectory"] or f["trajectory"][name].shape[0] != self.S:
                        raise HDF5Error(p, f"/trajectory/{name}", "wrong shape for this run")
            else:
                self.slot_step = np.asarray(ck["step"][:], np.int64)
                if self.slot_step.shape != (self.S,):
                    raise HDF5Error(p, "/checkpoint/step", "wrong shape for this run")
            mk = f["adjoint"]["marker"][:]
            self.adjoint_marker = (int(mk[0]), int(mk[1]))
            adj = f["adjoint"]
            if any(name not in adj[c] or adj[c][name].shape != shape
                   for c in ("c0", "c1") for name, shape in self._adjoint_shapes()):
                # an adjoint state laid out for other parameter columns (parmbs before
                # DesignSpace.read_by swept every column of a reduced body's densities): the
                # forward states are still this run's; the adjoint sweep starts again at t_N
                del f["adjoint"]
                self._new_adjoint(h5py, f)
                f.flush()
                self.adjoint_marker = (-1, -1)
        except (KeyError, OSError) as e:
            raise HDF5Error(p, "/checkpoint", f"malformed checkpoint file: {_short(e)}") from None

    # -- states ------------------------------------------------------------------------------------
    def _group(self):
        return self.f["trajectory" if self.schedule.kind == "all" else "checkpoint"]

    def put_row(self, k, t, x, psi, control=None):
        """Schedule ``all``: buffer row k (consecutive); flushed every ``interval`` s.
        ``control``: the adaptive loop state after step k (MarchState.control)."""
        self.writes += 1
        if not self.root or self._pending is not None:
            return
        row = (k, t, [np.array(a, dtype=float) for a in x], np.array(psi, dtype=float))
        if self.adaptive:
            row = row + ((np.array(control, dtype=float),),)
        self._rows.append(row)
        if time.monotonic() - self._last >= self.interval or (k == self.N and not self.adaptive):
            try:
                self.flush_rows()
            except (HDF5Error, SimulatedKill) as e:   # rank 0 alone: raised by the next collective call
                self._pending = e

    def sync(self):
        """Collective: flush buffered rows (and grid rows); raise a pending write error on every rank."""
        def fn():
            self.flush_rows()
            if self.adaptive and self._grid:
                self._write_grid()
                self.f.flush()
        self._root(fn, "/trajectory")

    @checkpoint_io
    def flush_rows(self):
        """Rank 0: write the buffered rows, flush, then advance valid_steps and flush again."""
        if not self.root or not self._rows:
            return
        try:
            k0, k1 = self._rows[0][0], self._rows[-1][0]
            if k0 != self.valid_steps + 1:
                raise RuntimeError(f"row {k0} after valid step {self.valid_steps}")
            g, ck = self._group(), self.f["checkpoint"]
            g["t"][k0:k1 + 1] = np.array([r[1] for r in self._rows])
            for j, name in enumerate(self.names):
                g[name][k0:k1 + 1] = np.array([r[2][j] for r in self._rows])
            ck["psi"][k0:k1 + 1] = np.array([r[3] for r in self._rows]).reshape(k1 - k0 + 1, self.nobj)
            ck["crc"][k0:k1 + 1] = np.array([_crc(*r) for r in self._rows], np.uint32)
            if self.adaptive:
                ck["control"][k0:k1 + 1] = np.array([r[4][0] for r in self._rows])
                self._write_grid()
            self.f.flush()
            self.kill("write")
            g.attrs["valid_steps"] = k1
            self.f.flush()
        except (OSError, ValueError, KeyError, RuntimeError) as e:
            raise HDF5Error(self.path, "/trajectory", f"write failed: {_short(e)}") from None
        self.valid_steps = k1
        self._rows = []
        self._last = time.monotonic()

    def put_slot(self, i, k, t, x, psi, extra=None):
        """Collective: write state k into slot i, flush, then publish slot i = k.
        ``extra`` (adaptive runs): (control, hist_t (3,), hist_q (3, n), hist_v (3, n))."""
        self.writes += 1

        def write():
            g, ck = self._group(), self.f["checkpoint"]
            if self.adaptive:
                self._write_grid()          # the steps up to x_k before x_k is published
            g["t"][i] = t
            for j, name in enumerate(self.names):
                g[name][i] = x[j]
            ck["psi"][i] = psi
            if self.adaptive:
                for name, arr in zip(("control", "hist_t", "hist_q", "hist_v"), extra):
                    ck[name][i] = arr
            ck["crc"][i] = _crc(k, t, x, psi, extra if self.adaptive else ())
            self.f.flush()
            self.kill("write")
            ck["step"][i] = k
            self.f.flush()
        self._root(write, f"/checkpoint/slot {i}")
        self.slot_step[i] = k

    def free_slot(self, i):
        """Forget slot i in memory (the file keeps its old, now unused, content)."""
        self.slot_step[i] = -1

    def read_state(self, i, k):
        """Collective: state k from slot (``all``: row) i, CRC-checked.

        Returns (t, x, psi), or None if the slot's data do not match (torn write);
        adaptive runs: (t, x, psi, extra) with extra as put_slot's."""
        def read():
            g, ck = self._group(), self.f["checkpoint"]
            t = float(g["t"][i])
            x = tuple(np.asarray(g[name][i], dtype=float) for name in self.names)
            psi = np.asarray(ck["psi"][i], dtype=float)
            extra = tuple(np.asarray(ck[name][i], dtype=float) for name in ("control", "hist_t", "hist_q", "hist_v")) \
                if self.adaptive else ()
            if int(ck["crc"][i]) != _crc(k, t, x, psi, extra):
                return None
            return (t, x, psi, extra) if self.adaptive else (t, x, psi)
        return self._root(read, f"/checkpoint slot {i}")

    def read_rows(self, k0, k1, control=False):
        """Collective, ``all``: rows k0..k1 (inclusive) as lists of (t, x, psi) —
        with ``control`` (adaptive) (t, x, psi, control) —, CRC-checked; a mismatch is
        an HDF5Error (rows ≤ valid_steps were flushed before the marker)."""
        def read():
            g, ck = self._group(), self.f["checkpoint"]
            t = np.asarray(g["t"][k0:k1 + 1])
            X = [np.asarray(g[name][k0:k1 + 1]) for name in self.names]
            psi = np.asarray(ck["psi"][k0:k1 + 1])
            crc = np.asarray(ck["crc"][k0:k1 + 1])
            ctl = np.asarray(ck["control"][k0:k1 + 1], dtype=float) if self.adaptive else None
            rows = []
            for j in range(k1 - k0 + 1):
                x = tuple(Xi[j] for Xi in X)
                extra = (ctl[j],) if self.adaptive else ()
                if int(crc[j]) != _crc(k0 + j, float(t[j]), x, psi[j], extra):
                    raise HDF5Error(self.path, f"/trajectory[{k0 + j}]",
                                    "checksum mismatch: the file is corrupted; delete it and rerun")
                rows.append((float(t[j]), x, psi[j]) + ((ctl[j],) if control else ()))
            return rows
        return self._root(read, "/trajectory")

    # -- the time grid of an adaptive run (module docstring) ------------------------------------
    def put_grid(self, k, t, h_prev):
        """Adaptive: buffer grid row k (t_k and h_{k−1}; h_prev is ignored for k = 0),
        written by the next row flush or slot write, before they publish x_k."""
        if self.root:
            self._grid.append((k, float(t), float(h_prev) if k > 0 else 0.0))

    def _write_grid(self):
        """Rank 0: write the buffered grid rows (the caller flushes)."""
        if not self._grid:
            return
        k0, k1 = self._grid[0][0], self._grid[-1][0]
        if k0 > self.grid_rows:
            raise RuntimeError(f"grid row {k0} after row {self.grid_rows - 1}")
        gr = self.f["grid"]
        gr["t"][k0:k1 + 1] = np.array([r[1] for r in self._grid])
        h = [r[2] for r in self._grid if r[0] > 0]
        if h:
            gr["h"][k1 - len(h):k1] = np.array(h)
        gr["crc"][k0:k1 + 1] = np.array([_crc_grid(*r) for r in self._grid], np.uint32)
        self.grid_rows = k1 + 1
        self._grid = []

    def read_grid(self, k):
        """Collective, adaptive: (t_0 … t_k, h_0 … h_{k−1}), CRC-checked (HDF5Error on
        a mismatch: these rows were flushed before x_k was published)."""
        def read():
            gr = self.f["grid"]
            t = np.asarray(gr["t"][:k + 1], dtype=float)
            h = np.asarray(gr["h"][:k], dtype=float)
            crc = np.asarray(gr["crc"][:k + 1])
            for j in range(k + 1):
                if int(crc[j]) != _crc_grid(j, t[j], h[j - 1] if j else 0.0):
                    raise HDF5Error(self.path, f"/grid[{j}]", "checksum mismatch: the file is corrupted; "
                                    "delete it and rerun")
            return t, h
        return self._root(read, "/grid")

    def ensure(self, k):
        """Collective, adaptive: room for state k — the file grows by copying to twice
        its capacity when k exceeds it (module docstring)."""
        if k > self.N:
            self.resize(max(2 * self.N, k, 16))

    def resize(self, cap):
        """Collective, adaptive: replace the file by a copy of capacity ``cap`` steps
        (written to FILE.grow, flushed, closed, renamed over FILE).  Forward run only
        (the adjoint records are copied as they are)."""
        if cap == self.N:
            return
        old_S = self.S
        self.N, self.S = cap, self._slots(cap)
        keep_slots = self.slot_step

        def do():
            import h5py
            if self.schedule.kind == "all":
                self.flush_rows()
            self._write_grid()
            old = self.f
            old.flush()
            tmp = self.path + ".grow"
            if os.path.exists(tmp):
                os.remove(tmp)
            try:
                self._create(h5py, self._config, self._problem, path=tmp)
                new = self.f
                for key, val in old["meta"].attrs.items():
                    new["meta"].attrs[key] = val
                every = self.schedule.kind != "all"
                rows = min(old_S, self.S) if every else self.valid_steps + 1
                g0, g1 = old["checkpoint" if every else "trajectory"], new["checkpoint" if every else "trajectory"]
                for name in ("t",) + self.names:
                    _copy(g0[name], g1[name], rows)
                names = ("psi", "crc", "control") + (("step", "hist_t", "hist_q", "hist_v") if every else ())
                for name in names:
                    _copy(old["checkpoint"][name], new["checkpoint"][name], rows)
                r = min(self.grid_rows, cap + 1)
                for name, n in (("t", r), ("crc", r), ("h", r - 1)):
                    _copy(old["grid"][name], new["grid"][name], n)
                for c in ("c0", "c1"):
                    for name in old["adjoint"][c]:
                        _copy(old["adjoint"][c][name], new["adjoint"][c][name], old["adjoint"][c][name].shape[0])
                new["adjoint"]["marker"][:] = old["adjoint"]["marker"][:]
                if not every:
                    new["trajectory"].attrs["valid_steps"] = self.valid_steps
                new.flush()
                self.kill("grow")
                new.close()
            except SimulatedKill:                 # as a kill leaves it (tests)
                self.f = old
                raise
            except BaseException:
                if self.f is not old:
                    try:
                        self.f.close()
                    except Exception:  # noqa: BLE001 - the original error matters more
                        pass
                    if os.path.exists(tmp):
                        os.remove(tmp)
                self.f = old
                raise
            old.close()
            os.replace(tmp, self.path)
            self.f = h5py.File(self.path, "r+")
        self._root(do, "<grow>")
        if keep_slots is not None:
            s = np.full(self.S, -1, np.int64)
            s[:min(old_S, self.S)] = keep_slots[:min(old_S, self.S)]
            self.slot_step = s

    # -- adjoint state -----------------------------------------------------------------------------
    def save_adjoint(self, k, x, mu, grad, gref, values, force=False):
        """Collective: adjoint state after reverse step k, written every ``interval`` s
        (always when ``force``) into the copy that is not current, then the marker."""
        now = time.monotonic()
        due = force or now - self._last >= self.interval
        if self.comm.size > 1:
            # rank 0's clock decides: ranks reading their own clocks could disagree about
            # this collective write (one rank in _root's bcast, the other already stepping)
            due = self.comm.bcast(due, root=0)
        if not due:
            return False
        self._last = now
        cur = self.adjoint_marker[0]
        new = 1 - cur if cur in (0, 1) else 0

        def write():
            g = self.f["adjoint"][f"c{new}"]
            arrays = self._adjoint_arrays(k, x, mu, grad, gref, values)
            for name, arr in arrays.items():
                g[name][...] = arr
            g["crc"][0] = _crc_adjoint(arrays)
            self.f.flush()
            self.kill("write")
            self.f["adjoint"]["marker"][:] = (new, k)
            self.f.flush()
        self._root(write, "/adjoint")
        self.adjoint_marker = (new, k)
        return True

    def _adjoint_arrays(self, k, x, mu, grad, gref, values):
        out = {"k": np.array([k], np.int64)}
        out.update({f"x_{nm}": np.asarray(a, float) for nm, a in zip(self.names, x)})
        out.update({f"mu_{nm}": np.asarray(a, float).reshape(-1, self.nobj) for nm, a in zip(self.names, mu)})
        out["grad"] = np.asarray(grad, float).reshape(self.nd, self.nobj)
        out["gref"] = np.asarray(gref, float).reshape(2, self.nobj)
        out["values"] = np.asarray(values, float).reshape(self.nobj)
        return out

    def load_adjoint(self):
        """Collective: (k, x_k, μ_k, grad, gref, values) of the current copy, or None."""
        c, k = self.adjoint_marker
        if c not in (0, 1):
            return None

        def read():
            g = self.f["adjoint"][f"c{c}"]
            arrays = {name: np.asarray(g[name][...]) for name, _ in self._adjoint_shapes() if name != "crc"}
            if int(g["crc"][0]) != _crc_adjoint(arrays) or int(arrays["k"][0]) != k:
                raise HDF5Error(self.path, f"/adjoint/c{c}", "checksum mismatch: the adjoint state is "
                                "corrupted; delete the file and rerun")
            return arrays
        a = self._root(read, "/adjoint")
        x = tuple(a[f"x_{nm}"] for nm in self.names)
        mu = [a[f"mu_{nm}"] for nm in self.names]
        return k, x, mu, a["grad"], a["gref"], a["values"]

    # -- closing -----------------------------------------------------------------------------------
    def close(self):
        """Collective: flush what is buffered and close."""
        def fin():
            try:
                if self.schedule.kind == "all" and self._pending is None:
                    self.flush_rows()
            finally:
                if self.f is not None:
                    self.f.close()
                    self.f = None
            if self._pending is not None:
                raise self._pending
        self._root(fin, "/trajectory", pending_first=False)

    def abandon(self):
        """Close without flushing the buffer (what a crash leaves; tests)."""
        if self.root and self.f is not None:
            self._rows = []
            self.f.close()
            self.f = None


def _copy(src, dst, rows):
    """dst[:rows] = src[:rows] in blocks of ~16 MB."""
    if rows <= 0 or src.size == 0 or dst.size == 0:
        return
    width = int(np.prod(src.shape[1:])) if src.ndim > 1 else 1
    B = max(1, _COPY_BYTES // (8 * max(width, 1)))
    for a in range(0, rows, B):
        b = min(rows, a + B)
        dst[a:b] = src[a:b]


def _crc_adjoint(arrays):
    c = 0
    for name in sorted(arrays):
        c = zlib.crc32(np.ascontiguousarray(arrays[name]).tobytes(), c)
    return c


def _str(v):
    return v.decode("utf-8") if isinstance(v, bytes) else str(v)
