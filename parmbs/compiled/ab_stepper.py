"""The Python side of the compiled Arnold–Brüls step (compiled/ab_step.py): which models
it takes, their stacked index arrays, the sparse order, and the one call per step.

``simulation.compiled`` as for the Newmark family (compiled/__init__.py): ``auto`` takes
a model whose every group has a kernel — the rigid kinds of ``compiled.KINDS`` and the
vehicle kinds of ``VLAYOUT`` (time functions ``TIME_FUNCTIONS``; tyres on one road of
a kind vehicle.road_params knows) — with at most ``MAX_UNKNOWNS`` unknowns; ``on`` says
why not; ``off`` never.  No dense limit of 200 here: J is factored sparse
(compiled/sparse_lu.py).
"""
import time

import numpy as np

from .. import compiled as _c
from ..spatial import drivers as SD, forces as SF, joints as SJ, tyre as ST

#: the vehicle kinds' stacked arrays, in ab_step.evaluate's order (fields as stepper.LAYOUT)
VLAYOUT = ((SF.SpatialSpring, "qp"), (SF.SpatialNonlinearSpringDamper, "qp"), (SF.SpatialBumpStop, "qp"),
           (ST.Tyre, "qp"), (SJ.SpatialUniversal, "qpr"), (SJ.SpatialRigid, "qpr"), (SD.RevoluteDriver, "qprm"))
VKINDS = tuple(k for k, _ in VLAYOUT)
#: the revolute driver's time functions (codes of compiled/planar.py and vehicle.SINE_PULSES)
DRIVER_FUNCTIONS = {"constant": 0, "polynomial": 1, "harmonic": 2, "sine_pulses": 3}
#: the step keeps J as a dense (N, N) array (zeroed, permuted into the factor each
#: iteration: 2 N² memory passes) next to its sparse factorization; beyond ~10³
#: unknowns those passes, not the elimination, would dominate — such models stay on
#: PETSc
MAX_UNKNOWNS = 1000


def _varrays(system, keep=None):
    """The stacked index arrays of ``VLAYOUT`` (stepper._arrays' conventions; ``keep(g)``:
    a bool per element of group g, default every element)."""
    from .stepper import _stack
    gi = np.r_[np.arange(system.n), -np.ones(3, np.int64)]
    groups = list(system.forces) + list(system.constraints)
    meta = lambda g: np.array([[DRIVER_FUNCTIONS[g.function.kind], g.function.ncoef]] * g.ne, np.int64)
    get = {"q": lambda g: gi[g.qidx], "p": lambda g: np.asarray(g.pidx), "r": lambda g: np.asarray(g.rows),
           "m": meta}
    sel = (lambda g: slice(None)) if keep is None else keep
    return tuple(_stack([get[f](g)[sel(g)] for g in groups if type(g) is kind])
                 for kind, fields in VLAYOUT for f in fields)


def _road(system):
    """(road parameters, None) or (None, reason): every tyre on one road of a known kind."""
    from .vehicle import road_params
    roads = [g.road for g in system.forces if type(g) is ST.Tyre]
    if not roads:
        return road_params(None), None
    rps = [road_params(r) for r in roads]
    if any(r is None for r in rps):
        return None, f"road {roads[0].kind!r} has no compiled form"
    if any(not np.array_equal(r, rps[0]) for r in rps):
        return None, "tyres on different roads"
    return rps[0], None


def why_not(system, op):
    """None if the compiled Arnold–Brüls step can run this model, else the reason."""
    N = system.n + system.m
    if N > MAX_UNKNOWNS:
        return f"{N} unknowns > {MAX_UNKNOWNS}"
    bad = set()
    for g in list(system.forces) + list(system.constraints):
        fn = getattr(g, "function", None)
        if type(g) not in _c.KINDS + VKINDS:
            bad.add(type(g).__name__)
        elif fn is not None and fn.kind not in (DRIVER_FUNCTIONS if type(g) is SD.RevoluteDriver
                                                 else _c.TIME_FUNCTIONS):
            bad.add(f"{type(g).__name__} ({fn.kind} function)")
    if bad:
        return f"no compiled kernel for {', '.join(sorted(bad))}"
    reason = _c.runtime_why_not(op)
    if reason is None:
        try:
            from . import ab_step  # noqa: F401
        except Exception as e:  # noqa: BLE001 - any failure of numba's set-up means: numpy path
            return f"numba cannot be used here ({type(e).__name__}: {e})"
    return reason or _road(system)[1]


class CompiledAB:
    """Index arrays, road and sparse order of one model; ``newton`` is the step."""

    def __init__(self, system, op):
        from .sparse_lu import order
        from .stepper import _arrays, pack
        self.sys = system
        self.Kf, self.Kp, self.Ks = self._families(*pack([_arrays(system)]))
        #: compiled.make's key of the once-per-process compile note (its own kernels)
        self.family = ("arnold-bruls", self.Kp is not None, self.Ks is not None)
        self.Vf, self.Vo = pack([_varrays(system)])
        self.rp = _road(system)[0]
        pat = op.pattern
        self.jp, self.ji = np.asarray(pat.indptr, np.int64), np.asarray(pat.indices, np.int64)
        self.perm, self.ptr, self.idx = order(system.n + system.m, system.n, self.jp, self.ji)

    def newton(self, x, p, t, h, beta, gamma, am, af, tol, estimate=None):
        """(q, v, q̈, λ, a, iterations, status) of ab_step.ab_newton_step; with a request
        ``estimate`` (local_error.Request, its ``args`` set: timeloop.LocalError.request)
        the same call also estimates the new state's local error
        (ab_step.ab_newton_step_estimate) into ``estimate.out``."""
        from .ab_step import ab_newton_step, ab_newton_step_estimate
        from .local_error import Request
        f = lambda y: np.ascontiguousarray(y, dtype=np.float64)
        return Request.call(estimate, ab_newton_step, ab_newton_step_estimate, (
            *(f(y) for y in x), f(p), float(t), float(h), float(beta), float(gamma), float(am), float(af),
            float(tol.atol), float(tol.rtol), int(tol.max_it), self.Kf, self.Kp, self.Ks, self.Vf, self.Vo, self.rp,
            self.perm, self.ptr, self.idx, self.jp, self.ji), 7)

    #: one line on the first compiled adjoint step of the process (the CLI prints it)
    sens_note = None
    #: the sensitivity steps whose first call this process has timed
    _timed = set()

    def _families(self, flat, offs):
        """stepper.CompiledNewmark.families: the planar and spatial offsets apart, None for a
        family the model does not have (newmark_step._evaluate)."""
        from .stepper import CompiledNewmark
        return CompiledNewmark.families(self, flat, offs)

    def _design(self, design_map, nd):
        """Per design column j the elements that read a parameter of column j (the others'
        ∂R/∂ρ_j is identically zero), packed as nd sets (Kd, Kdp, Kds, Vd, Vdo); the last map's
        kept by identity (the stepper's own, every step)."""
        from .stepper import _arrays, pack
        last = getattr(self, "_last", None)
        if last is None or last[0] is not design_map or last[1] != nd:
            dm = np.asarray(design_map)
            col = lambda j: (lambda g: np.any(dm[np.asarray(g.pidx)] == j, axis=1))
            Kd = self._families(*pack([_arrays(self.sys, col(j)) for j in range(nd)]))
            Vd = pack([_varrays(self.sys, col(j)) for j in range(nd)])
            last = self._last = (design_map, nd, (np.ascontiguousarray(dm, dtype=np.int64), *Kd, *Vd))
        return last[2]

    def _sens(self, fn, x1, d, p, t, h, beta, gamma, am, af, design_map, nd):
        """One call of ``fn`` (ab_adjoint.ab_adjoint_step / ab_tangent_step); its first call
        in the process (compile or cache load) is timed into ``sens_note``."""
        f = lambda y: np.ascontiguousarray(y, dtype=np.float64)
        args = ([f(y) for y in x1[:4]] + [f(y).reshape(len(y), -1) for y in d]
                + [f(p), float(t), float(h), float(beta), float(gamma), float(am), float(af),
                   *self._design(design_map, nd), int(nd), self.Kf, self.Kp, self.Ks, self.Vf, self.Vo,
                   self.rp, self.perm, self.ptr, self.idx, self.jp, self.ji])
        return self._timed_call(fn, args, f"{fn.__name__.split('_')[1]} step")

    def _timed_call(self, fn, args, what):
        """fn(*args); its first call in the process timed into ``sens_note`` (compiled or
        loaded from numba's cache, CPU and wall)."""
        if fn.__name__ in CompiledAB._timed:
            return fn(*args)
        CompiledAB._timed.add(fn.__name__)
        t0, w0 = time.process_time(), time.perf_counter()
        out = fn(*args)
        st = fn.stats
        how = "loaded from numba's cache" if st.cache_hits and not st.cache_misses else "compiled"
        self.sens_note = (f"compiled: Arnold-Bruls {what} kernels {how} in "
                          f"{time.process_time() - t0:.2f} s CPU ({time.perf_counter() - w0:.2f} s wall)")
        return out

    def adjoint(self, x1, mu1, p, t, h, beta, gamma, am, af, design_map, nd):
        """The compiled adjoint step (ab_adjoint.ab_adjoint_step): ((μ_q, μ_v, μ_q̈, μ_λ, μ_a),
        ∇ψ increment), or None at a zero pivot (the numpy step then runs and reports)."""
        from .ab_adjoint import ab_adjoint_step
        *mu, grad, status = self._sens(ab_adjoint_step, x1, mu1, p, t, h, beta, gamma, am, af, design_map, nd)
        return None if status else (tuple(mu), grad)

    #: the trailing state blocks ``adjoint_blocks`` carries (the pseudo-acceleration:
    #: sensitivity/adjoint_batch.py)
    extra_blocks = 1

    def adjoint_blocks(self, Q, V, QDD, L, T, H, k0, k1, mu, grad, gref, b0, gx, gp, gr, p, beta, gamma, am, af,
                       design_map, nd):
        """Reverse steps k1−1, …, k0 in one call (ab_adjoint.ab_adjoint_sweep; arrays
        contiguous float64, μ five (·, K) blocks): (μ_k, ∇ψ, g_ref, k), its first use in the
        process timed into ``sens_note`` as the adjoint step's."""
        from .ab_adjoint import ab_adjoint_sweep
        f = lambda y: np.ascontiguousarray(y, dtype=np.float64)
        args = (Q, V, QDD, L, T, H, int(k0), int(k1), *mu, grad, gref, int(b0), *(f(g) for g in gx), f(gp), f(gr),
                f(p), float(beta), float(gamma), float(am), float(af), *self._design(design_map, nd), int(nd),
                self.Kf, self.Kp, self.Ks, self.Vf, self.Vo, self.rp, self.perm, self.ptr, self.idx, self.jp,
                self.ji)
        *mu, grad, gref, k = self._timed_call(ab_adjoint_sweep, args, "adjoint sweep")
        return list(mu), grad, gref, k

    def tangent(self, x1, dx0, p, t, h, beta, gamma, am, af, design_map, nd):
        """The compiled tangent step (ab_adjoint.ab_tangent_step): (dq, dv, dq̈, dλ, da) of
        x_{k+1}, or None at a zero pivot."""
        from .ab_adjoint import ab_tangent_step
        *dx, status = self._sens(ab_tangent_step, x1, dx0, p, t, h, beta, gamma, am, af, design_map, nd)
        return None if status else tuple(dx)

    def warm_up(self):
        """Compile (or load from numba's cache) and time it: the one-line note."""
        import numba
        from ..config.schema import Newton
        from .ab_step import ab_newton_step
        s = self.sys
        x = (s.q_guess, np.zeros(s.n), np.zeros(s.n), np.zeros(s.m), np.zeros(s.n))
        t0, w0 = time.process_time(), time.perf_counter()
        self.newton(x, s.p, 0.0, 1e-3, 0.25, 0.5, 0.0, 0.0, Newton(max_it=1))
        cpu, wall = time.process_time() - t0, time.perf_counter() - w0
        st = ab_newton_step.stats
        how = ("loaded from numba's cache" if st.cache_hits and not st.cache_misses else
               "compiled (cached for the next runs)" if st.cache_path else "compiled (no cache directory)")
        from .sparse_lu import flops
        return (f"compiled: one numba {numba.__version__} call per Arnold-Bruls step ({s.n + s.m} unknowns, "
                f"sparse LU {flops(self.ptr)} multiply-adds); kernels {how} in {cpu:.2f} s CPU ({wall:.2f} s wall); "
                f"simulation.compiled = \"off\" for the numpy path")


def make(system, mode="auto", op=None):
    """(CompiledAB or None, note or None) for ``simulation.compiled = mode`` (compiled.make)."""
    return _c.make(system, mode, op, why_not, CompiledAB)
