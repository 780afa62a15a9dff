"""The variational integrator's forward solves in compiled code (issue 19, issue 22).

The variational step (integrators/variational.py) assembles and solves two saddle-point
matrices of the same pattern per step: J = [[M + h²/4 K + h/2 C, G_nᵀ], [G_{n+1}, 0]]
once per Newton iteration, S = [[M, G_{n+1}ᵀ], [G_{n+1}, 0]] once, solved twice (the
projection and the acceleration/multiplier stages).  On the double wishbone (N = 395:
251 coordinates, 144 rows) that is ~5 PETSc assemblies and MUMPS solves a step, ~40 % of
the numpy step's time (benchmarks/README.md "Compiled forward for the double
wishbone").  ``CompiledSaddleLU`` replaces the PETSc operator in the *forward* step
only: the same CSR values (BlockPattern.values, the numpy path's assembly), factored by
compiled/sparse_lu.py in the static constrained minimum-degree order of the pattern
(computed once per stepper) and solved with one step of iterative refinement.  The
component evaluations of the forward step run compiled/variational_kinds.py's kernels
where a kind has them (``CompiledVariational.forces``, ``.constraints``), numpy otherwise;
when every group has a kernel, ``CompiledVariational.newton`` (compiled/variational_newton.py)
computes each Newton iteration's R and J's CSR values, and stages 2–3's S and right-hand
sides, in one call each (``CompiledSaddleLU.set_data`` factors those values);
the adjoint step factors and solves with the same order (compiled/variational_adjoint.py);
the tangent and initial state keep the PETSc operators and numpy groups (the
reference path).  Used from ``compiled.SPARSE_FROM`` unknowns on:
below, on the flexible pendulum (N = 26) and the rigid–spring–beam (N = 21), the forward
was as fast with PETSc's LU (±3 %, CPU per step, 2 × 200 steps each, load ~10).

A zero or non-finite pivot (the static order does not pivot) raises ``PivotFailure``
(not a LinAlgError): the stepper then redoes the whole step with PETSc, which pivots or
names step and time.  Numbers: not bitwise those of MUMPS (another elimination order);
bitwise the same from run to run (the order is deterministic; tests/test_compiled_variational.py
holds the bound against the numpy path).
"""
import numpy as np

from ._jit import njit
from . import sparse_lu


@njit(cache=True)
def factor_csr(data, jp, ji, perm, ptr, idx):
    """``sparse_lu.factor`` of the matrix with CSR values ``data`` on (jp, ji), filled into
    the permuted work array straight from ``data`` (no dense copy of J: the same numbers)."""
    N = jp.shape[0] - 1
    pos = np.empty(N, np.int64)
    for k in range(N):
        pos[perm[k]] = k
    A = np.zeros((N, N))
    for i in range(N):
        for a in range(jp[i], jp[i + 1]):
            A[pos[i], pos[ji[a]]] = data[a]
    return A, sparse_lu.eliminate(A, ptr, idx)


@njit(cache=True)
def solve_refined_csr(data, jp, ji, A, perm, ptr, idx, b):
    """``sparse_lu.solve_refined`` with the residual b − J x over the CSR values (the same
    products in the same order as over the dense copy)."""
    x = sparse_lu.solve(A, perm, ptr, idx, b)
    N = b.shape[0]
    r = np.empty(N)
    for i in range(N):
        s = b[i]
        for a in range(jp[i], jp[i + 1]):
            s -= data[a] * x[ji[a]]
        r[i] = s
    d = sparse_lu.solve(A, perm, ptr, idx, r)
    for i in range(N):
        x[i] += d[i]
    return x


class PivotFailure(Exception):
    """The static-order LU met a zero or non-finite pivot: redo the step on PETSc."""


class CompiledSaddleLU:
    """``set_values`` / ``solve`` of a SparseOperator (real right-hand sides, one rank),
    on its pattern, in compiled code.  ``order``: newton_lu.sparse_order of the pattern
    (shared by J and S, which have the same pattern)."""

    def __init__(self, op, order):
        self.pattern, self.N = op.pattern, op.N
        self.perm, self.ptr, self.idx, self.jp, self.ji = order
        self.data = self.LU = None

    def set_values(self, vals):
        self.set_data(np.ascontiguousarray(self.pattern.values(vals), dtype=np.float64))

    def set_data(self, data):
        """Factor the matrix of CSR values ``data`` (kept, not copied, for the refined solves)."""
        self.data = data
        self.LU, ok = factor_csr(data, self.jp, self.ji, self.perm, self.ptr, self.idx)
        if not ok:
            self.LU = None
            raise PivotFailure("zero or non-finite pivot in the static order")

    def solve(self, rhs):
        if np.iscomplexobj(rhs):               # complex-step runs never get here (numpy path)
            raise TypeError("CompiledSaddleLU solves real right-hand sides only")
        x = solve_refined_csr(self.data, self.jp, self.ji, self.LU, self.perm, self.ptr, self.idx,
                              np.ascontiguousarray(rhs, dtype=np.float64))
        if not np.all(np.isfinite(x)):
            raise PivotFailure("non-finite solution")
        return x


class CompiledVariational:
    """The compiled operators of one variational stepper: ``J`` (Newton) and ``S``
    (projection, accelerations), one sparse order of the stepper's pattern."""
    family = "variational-lu"

    def __init__(self, system, op):
        from .newton_lu import sparse_order
        from .variational_kinds import fast_group
        order = sparse_order(op.N, system.n, op)
        self.J, self.S = CompiledSaddleLU(op, order), CompiledSaddleLU(op, order)
        self.N, self.flops = op.N, sparse_lu.flops(order[1])
        # the groups the compiled forward step evaluates: compiled/variational_kinds.py's
        # proxies where a kind has kernels, the numpy group otherwise
        self.forces = [fast_group(g) for g in system.forces]
        self.constraints = [fast_group(g) for g in system.constraints]
        groups = self.forces + self.constraints
        self.nfast = sum(g is not o for g, o in zip(groups, list(system.forces) + list(system.constraints)))
        self.ngroups = len(groups)
        # one compiled call per Newton iteration (compiled/variational_newton.py) when every
        # group is of a kind it evaluates; else None (the per-group step)
        from . import variational_newton as VN
        self.newton_note = VN.why_not(self.forces, self.constraints)
        self.newton = VN.FusedNewton(system, op.pattern, self.forces, self.constraints) \
            if self.newton_note is None else None
        self._system = system

    def warm_up(self):
        """Compile (or load from numba's cache) the kernels on a 2 × 2 saddle point
        and time it: the one-line note."""
        import time
        import numba
        t0, w0 = time.process_time(), time.perf_counter()
        jp, ji = np.array([0, 2, 3], np.int64), np.array([0, 1, 0], np.int64)
        perm, ptr, idx = sparse_lu.order(2, 1, jp, ji)
        data = np.array([2.0, 1.0, 1.0])
        LU, _ = factor_csr(data, jp, ji, perm, ptr, idx)
        solve_refined_csr(data, jp, ji, LU, perm, ptr, idx, np.ones(2))
        from . import variational_adjoint
        variational_adjoint.warm_up()
        if self.nfast:
            from . import variational_kinds
            variational_kinds.warm_up()
        if self.newton is not None:       # one iteration at the assembled guess (compiles the fused kernels)
            s = self._system
            z = np.zeros(s.n)
            self.newton.begin(0.0, s.q_guess, s.p, 1e-3)
            self.newton.evaluate(s.q_guess, z, z, np.zeros(s.m), 1e-3)
            self.newton._key = None
        cpu, wall = time.process_time() - t0, time.perf_counter() - w0
        st = factor_csr.stats
        how = "loaded from numba's cache" if st.cache_hits and not st.cache_misses else "compiled"
        return (f"compiled: the variational step's J and S factored by numba {numba.__version__} "
                f"(sparse LU, {self.N} unknowns, {self.flops} multiply-adds a factorization; "
                f"{self.nfast} of {self.ngroups} component groups on kernels, the others numpy; "
                f"{'one call per Newton iteration' if self.newton is not None else 'per group: ' + str(self.newton_note)}); kernels {how} in {cpu:.2f} s CPU ({wall:.2f} s wall); "
                f"simulation.compiled = \"off\" for PETSc")
