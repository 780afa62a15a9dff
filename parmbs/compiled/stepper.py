"""The model's stacked index arrays and the Python side of the compiled step.

``CompiledNewmark`` is built once per stepper: for each kernel kind the groups' qidx
(mapped to unknown numbers, ground slots −1), pidx and rows, concatenated in system
order (empty arrays for absent kinds, so one compiled signature serves every model).
Nothing in it depends on h or on the design: ``step`` reads the stepper's h, β, γ,
α_m, α_f and Newton tolerances at every call (adaptive steps set ``stepper.h``).
"""
import time

import numpy as np

from . import KINDS
from .newmark_step import newton_step

_ORDER = ("i", "g", "s", "t", "r", "w")


class CompiledNewmark:
    def __init__(self, system):
        self.sys = system
        n = system.n
        gi = np.r_[np.arange(n), -np.ones(3, np.int64)]           # extended slot -> unknown
        parts = {key: ([], [], []) for key in _ORDER}
        for g in list(system.forces) + list(system.constraints):
            key, nq, np_, m = KINDS[type(g)]
            qs, ps, rs = parts[key]
            qs.append(gi[g.qidx])
            ps.append(np.asarray(g.pidx))
            rs.append(np.asarray(g.rows) if m else None)
        widths = {key: (nq, np_, m) for key, nq, np_, m in KINDS.values()}
        self.args = []
        for key in _ORDER:
            nq, np_, m = widths[key]
            qs, ps, rs = parts[key]
            cat = (lambda xs, w: np.ascontiguousarray(np.concatenate(xs), dtype=np.int64) if xs
                   else np.zeros((0, w), np.int64))
            self.args += [cat(qs, nq), cat(ps, np_)]
            if m:
                self.args.append(cat(rs, m))

    def newton(self, x, p, h, beta, gamma, am, af, tol):
        """The compiled step: (q, v, a, λ, iterations, status) (newmark_step.newton_step)."""
        q, v, a, lam = (np.ascontiguousarray(y, dtype=np.float64) for y in x)
        return newton_step(q, v, a, lam, np.ascontiguousarray(p, dtype=np.float64), float(h), float(beta),
                           float(gamma), float(am), float(af), float(tol.atol), float(tol.rtol), int(tol.max_it),
                           *self.args)

    def warm_up(self):
        """Compile (or load from numba's cache) and time it: the one-line note."""
        import numba
        from ..config.schema import Newton
        s = self.sys
        x = (s.q_guess, np.zeros(s.n), np.zeros(s.n), np.zeros(s.m))
        t0, w0 = time.process_time(), time.perf_counter()
        self.newton(x, s.p, 1e-3, 0.25, 0.5, 0.0, 0.0, Newton(max_it=1))
        cpu, wall = time.process_time() - t0, time.perf_counter() - w0
        st = newton_step.stats
        how = ("loaded from numba's cache" if st.cache_hits and not st.cache_misses else
               "compiled (cached for the next runs)" if st.cache_path else "compiled (no cache directory)")
        return (f"compiled: one numba {numba.__version__} call per time step ({s.n + s.m} unknowns); kernels {how} "
                f"in {cpu:.2f} s CPU ({wall:.2f} s wall){f', cache {st.cache_path}' if st.cache_path else ''}; "
                f"simulation.compiled = \"off\" for the numpy path")
