"""The model's stacked index arrays and the Python side of the compiled step.

``CompiledNewmark`` is built once per stepper: for each kernel kind the groups' qidx
(mapped to unknown numbers, ground slots −1), pidx and rows, concatenated in system
order (empty arrays for absent kinds, so one compiled signature serves every model).
Nothing in it depends on h or on the design: ``step`` reads the stepper's h, β, γ,
α_m, α_f and Newton tolerances at every call (adaptive steps set ``stepper.h``).
"""
import time

import numpy as np

from ..model import forces as F, joints as J
from ..spatial import bodies as SB, joints as SJ
from .newmark_adjoint import adjoint_step, adjoint_sweep, tangent_step
from .local_error import Request
from .newmark_step import newton_step, newton_step_estimate
from .planar import CONSTANT, POLYNOMIAL, HARMONIC

#: the stacked arrays per kind, in newmark_step._evaluate's order: q (qidx), p (pidx),
#: r (rows), m (meta: [coordinate,] time-function kind, coefficients)
LAYOUT = ((F.Inertia, "qp"), (F.Gravity, "qp"), (F.Spring, "qp"), (F.RotationalSpring, "qp"),
          (F.PointForce, "qpm"), (F.Torque, "qpm"), (J.Revolute, "qpr"), (J.Weld, "qpr"),
          (J.Prismatic, "qpr"), (J.Driver, "qprm"),
          (SB.SpatialInertia, "qp"), (SB.SpatialGyroscopic, "qp"), (SB.EulerRegularization, "qp"),
          (SB.SpatialGravity, "qp"), (SB.Normalization, "qpr"), (SJ.SpatialSpherical, "qpr"),
          (SJ.SpatialRevolute, "qpr"))
#: the kinds with r_a (the adjoint's M) and with r_v (its C): compiled/newmark_adjoint.py
WITH_RA = (F.Inertia, SB.SpatialInertia, SB.EulerRegularization)
WITH_RV = (F.Spring, F.RotationalSpring, SB.SpatialGyroscopic)
#: the first N_PLANAR kinds of LAYOUT are planar (newmark_step.unpack_planar), the rest spatial
N_PLANAR = 10
KINDS_PLANAR = tuple(k for k, _ in LAYOUT[:N_PLANAR])
_FN = {"constant": CONSTANT, "polynomial": POLYNOMIAL, "harmonic": HARMONIC}
_COORD = {"x": 0, "y": 1, "angle": 2}


def _meta(g):
    fn = [_FN[g.function.kind], g.function.ncoef]
    return [_COORD[g.coordinate]] + fn if isinstance(g, J.Driver) else fn


def _stack(blocks):
    """Row-stack int arrays of possibly different widths (right-padded with 0: a
    parameter index never read beyond the element's own columns)."""
    w = max((b.shape[1] for b in blocks), default=0)
    out = np.zeros((sum(b.shape[0] for b in blocks), max(w, 1)), np.int64)
    r = 0
    for b in blocks:
        out[r:r + b.shape[0], :b.shape[1]] = b
        r += b.shape[0]
    return out


def _arrays(system, keep=None):
    """The stacked index arrays of ``LAYOUT``; ``keep(g)``: a bool per element of group g
    (default: every element)."""
    gi = np.r_[np.arange(system.n), -np.ones(3, np.int64)]           # extended slot -> unknown
    groups = list(system.forces) + list(system.constraints)
    K = []
    for kind, fields in LAYOUT:
        mine = [g for g in groups if type(g) is kind]
        get = {"q": lambda g: gi[g.qidx], "p": lambda g: np.asarray(g.pidx),
               "r": lambda g: np.asarray(g.rows), "m": lambda g: np.array([_meta(g)] * g.ne, np.int64)}
        sel = (lambda g: slice(None)) if keep is None else keep
        K += [_stack([get[f](g)[sel(g)] for g in mine]) for f in fields]
    return tuple(K)


def _tiled_arrays(system, design_map, nd, kinds=None):
    """``_arrays`` of the complex-step ∂R/∂ρ (compiled/newmark_adjoint._r_rho): for each
    design column j in turn, the elements that read a parameter of column j (the others'
    ∂R/∂ρ_j is identically zero), re-indexed into the j-th copy of a model tiled nd
    times — unknowns + j·n, constraint rows + j·m, parameters + j·len(p) — so that one
    evaluation of the tiled model gives every column (each copy reads its own
    perturbed p and writes its own rows; per column the elements' order is the model's).
    ``kinds``: only the groups of these kinds (default every group)."""
    n, m, npar = system.n, system.m, len(system.p)
    dm = np.asarray(design_map)
    gi = np.r_[np.arange(n), -np.ones(3, np.int64)]
    groups = list(system.forces) + list(system.constraints)
    shift = lambda A, d: np.where(A >= 0, A + d, -1)
    K = []
    for kind, fields in LAYOUT:
        blocks = {f: [] for f in fields}
        for j in range(nd):
            for g in (g for g in groups if type(g) is kind and (kinds is None or kind in kinds)):
                sel = np.any(dm[np.asarray(g.pidx)] == j, axis=1)
                if not np.any(sel):
                    continue
                blocks["q"].append(shift(gi[g.qidx][sel], j * n))
                blocks["p"].append(np.asarray(g.pidx)[sel] + j * npar)
                if "r" in blocks:
                    blocks["r"].append(shift(np.asarray(g.rows)[sel], j * m))
                if "m" in blocks:
                    blocks["m"].append(np.array([_meta(g)] * int(sel.sum()), np.int64))
        K += [_stack(blocks[f]) for f in fields]
    return tuple(K)


def pack(sets):
    """(flat int64 array, offsets (len(sets), 44, 3) of (start, rows, cols)) of a list of
    ``_arrays`` tuples (newmark_step.unpack_planar/unpack_spatial): two arguments per call
    instead of 44 arrays per set, whose typing dominated the Python → numba call."""
    chunks, offs, at = [], np.zeros((len(sets), len(sets[0]) if sets else 0, 3), np.int64), 0
    for i, arrays in enumerate(sets):
        for j, A in enumerate(arrays):
            A = np.ascontiguousarray(A, dtype=np.int64)
            offs[i, j] = at, A.shape[0], A.shape[1]
            chunks.append(A.ravel())
            at += A.size
    return np.concatenate(chunks) if chunks else np.zeros(0, np.int64), offs


#: the (sensitivity step, kernel family) whose first call (compile or cache load) this process has timed
_SENS_TIMED = set()


class CompiledNewmark:
    #: one line on the first compiled tangent/adjoint step of the process (the CLI prints it)
    sens_note = None

    def __init__(self, system, op=None):
        from .. import compiled
        from .newton_lu import sparse_order
        self.sys = system
        N = system.n + system.m
        #: J's factorization (compiled/newton_lu.py): None dense, else the sparse order of
        #: op's pattern (from ``compiled.SPARSE_FROM`` unknowns on; without op: dense)
        self.S = sparse_order(N, system.n, op) if op is not None and N >= compiled.SPARSE_FROM else None
        self.K = _arrays(system)
        # set 0 every element; 1 the kinds with r_a: M = ∂R₁/∂a; 2 the kinds with r_v:
        # C = ∂R₁/∂v (compiled/newmark_adjoint.py)
        Kf, Ko = pack([self.K, _arrays(system, lambda g: np.full(g.ne, type(g) in WITH_RA)),
                       _arrays(system, lambda g: np.full(g.ne, type(g) in WITH_RV))])
        self.Kf, self.Kp, self.Ks = self.families(Kf, Ko)
        self.family = (self.Kp is not None, self.Ks is not None)
        #: a kind reads t (time functions): the adjoint sweep's reuse of a state's blocks checks t
        self.timed = any(type(g) in (F.PointForce, F.Torque, J.Driver)
                         for g in list(system.forces) + list(system.constraints))
        self._Kd = {}

    def families(self, flat, offs):
        """(flat, planar offsets (sets, 27, 3), spatial offsets (sets, 17, 3)) with None for
        a family without elements in the model (newmark_step._evaluate then compiles no
        kernel of it: a planar model's compile does not type the spatial kinds)."""
        npl = sum(len(f) for _, f in LAYOUT[:N_PLANAR])
        groups = list(self.sys.forces) + list(self.sys.constraints)
        has_p = any(type(g) in KINDS_PLANAR for g in groups)
        has_s = any(type(g) not in KINDS_PLANAR for g in groups)
        Kp = np.ascontiguousarray(offs[:, :npl]) if has_p else None
        Ks = np.ascontiguousarray(offs[:, npl:]) if has_s else None
        return flat, Kp, Ks

    def sets(self, s=0):
        """The trailing arguments of newmark_step._evaluate for element set s (tests)."""
        return self.Kf, self.Kp, self.Ks, s

    def design_arrays(self, design_map, nd):
        """``_tiled_arrays`` packed (split as ``families``), cached per design map: set 0
        every group, set 1 the kinds with r_a alone (``WITH_RA``, weighted by 1 − α_m; the
        adjoint's ∂R₁/∂ρ by parts: compiled/newmark_adjoint.py)."""
        key = (design_map.tobytes(), nd)
        if key not in self._Kd:
            self._Kd[key] = self.families(*pack([_tiled_arrays(self.sys, design_map, nd),
                                                 _tiled_arrays(self.sys, design_map, nd, WITH_RA)]))
        return self._Kd[key]

    def _design(self, design_map, nd):
        """(design map as int64, packed per-column arrays); the last map's kept by identity
        (the stepper's own, every step)."""
        last = getattr(self, "_last", None)
        if last is None or last[0] is not design_map or last[1] != nd:
            dm = np.ascontiguousarray(design_map, dtype=np.int64)
            last = self._last = (design_map, nd, (dm, *self.design_arrays(dm, nd)))
        return last[2]

    def _first(self, fn, name, call):
        """``call()``; on the process's first call of ``fn`` for this kernel family, timed
        (compile or cache load) into ``sens_note`` as "compiled: <name> kernels ...".
        None when it was not the first."""
        if (fn.__name__, self.family) in _SENS_TIMED:
            return None
        _SENS_TIMED.add((fn.__name__, self.family))
        t0, w0 = time.process_time(), time.perf_counter()
        out = call()
        cpu, wall = time.process_time() - t0, time.perf_counter() - w0
        st = fn.stats
        how = "loaded from numba's cache" if st.cache_hits and not st.cache_misses else "compiled"
        self.sens_note = f"compiled: {name} kernels {how} in {cpu:.2f} s CPU ({wall:.2f} s wall)"
        return (out,)

    def adjoint_blocks(self, *args):
        """newmark_adjoint.adjoint_sweep(*args) (sensitivity/adjoint_batch.py), its first use
        in the process timed as the adjoint step's."""
        first = self._first(adjoint_sweep, "adjoint step", lambda: adjoint_sweep(*args))
        return first[0] if first is not None else adjoint_sweep(*args)

    def _sens(self, fn, x0, x1, d, p, t, h, beta, gamma, am, af, design_map, nd):
        f = lambda y: np.ascontiguousarray(y, dtype=np.float64)
        blk = [f(y).reshape(len(y), -1) for y in d]
        dm, Kdf, Kdp, Kds = self._design(design_map, nd)
        if (fn.__name__, self.family) not in _SENS_TIMED:   # first call in the process: compile or cache load
            _SENS_TIMED.add((fn.__name__, self.family))
            t0, w0 = time.process_time(), time.perf_counter()
            out = self._sens(fn, x0, x1, d, p, t, h, beta, gamma, am, af, design_map, nd)
            cpu, wall = time.process_time() - t0, time.perf_counter() - w0
            st = fn.stats
            how = "loaded from numba's cache" if st.cache_hits and not st.cache_misses else "compiled"
            self.sens_note = (f"compiled: {fn.__name__.replace('_', ' ')} kernels {how} in {cpu:.2f} s CPU "
                              f"({wall:.2f} s wall)")
            return out
        return fn(*(f(y) for y in x0), *(f(y) for y in x1), *blk, f(p), float(t), float(h), float(beta),
                  float(gamma), float(am), float(af), dm, int(nd), self.Kf, self.Kp, self.Ks, Kdf, Kdp, Kds, self.S)

    def adjoint(self, x0, x1, mu1, p, t, h, beta, gamma, am, af, design_map, nd):
        """The compiled adjoint step (newmark_adjoint.adjoint_step): ((μ_q, μ_v, μ_a, μ_λ),
        ∇ψ increment), or None at a singular Newton matrix (the numpy step then reports)."""
        *mu, grad, status = self._sens(adjoint_step, x0, x1, mu1, p, t, h, beta, gamma, am, af, design_map, nd)
        return None if status else (tuple(mu), grad)

    def tangent(self, x0, x1, dx0, p, t, h, beta, gamma, am, af, design_map, nd):
        """The compiled tangent step (newmark_adjoint.tangent_step): (dq, dv, da, dλ) of
        x_{k+1}, or None at a singular Newton matrix."""
        *dx, status = self._sens(tangent_step, x0, x1, dx0, p, t, h, beta, gamma, am, af, design_map, nd)
        return None if status else tuple(dx)

    def newton(self, x, p, t, h, beta, gamma, am, af, tol, estimate=None):
        """The compiled step from x at t: (q, v, a, λ, iterations, status) (newmark_step.newton_step);
        with a request ``estimate`` (local_error.Request, its ``args`` set: timeloop.LocalError.request)
        the same call also estimates the new state's local error (newmark_step.newton_step_estimate)
        into ``estimate.out``."""
        q, v, a, lam = (np.ascontiguousarray(y, dtype=np.float64) for y in x)
        return Request.call(estimate, newton_step, newton_step_estimate, (
            q, v, a, lam, np.ascontiguousarray(p, dtype=np.float64), float(t), float(h), float(beta), float(gamma),
            float(am), float(af), float(tol.atol), float(tol.rtol), int(tol.max_it), self.Kf, self.Kp, self.Ks,
            self.S), 6)

    def warm_up(self):
        """Compile (or load from numba's cache) and time it: the one-line note."""
        import numba
        from ..config.schema import Newton
        s = self.sys
        x = (s.q_guess, np.zeros(s.n), np.zeros(s.n), np.zeros(s.m))
        t0, w0 = time.process_time(), time.perf_counter()
        self.newton(x, s.p, 0.0, 1e-3, 0.25, 0.5, 0.0, 0.0, Newton(max_it=1))
        cpu, wall = time.process_time() - t0, time.perf_counter() - w0
        st = newton_step.stats
        how = ("loaded from numba's cache" if st.cache_hits and not st.cache_misses else
               "compiled (cached for the next runs)" if st.cache_path else "compiled (no cache directory)")
        return (f"compiled: one numba {numba.__version__} call per time step ({s.n + s.m} unknowns); kernels {how} "
                f"in {cpu:.2f} s CPU ({wall:.2f} s wall){f', cache {st.cache_path}' if st.cache_path else ''}; "
                f"simulation.compiled = \"off\" for the numpy path")
