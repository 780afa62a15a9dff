"""One compiled call per Newton iteration of the variational forward step (issues 19, 22;
benchmarks/README.md "Compiled variational kernels for the double wishbone", cwish22).

Stage 1 of the variational step (integrators/variational.py) solves, per Newton iteration,
J dz = −R with

    R = [M A + F(t_{n+½}, q_{n+½}, v_{n+½}) + G_nᵀΛ;  (2/h²) Φ(q_{n+1}, t_{n+1})],
    J = [[M + (h²/4) K_{n+½} + (h/2) C_{n+½}, G_nᵀ], [G_{n+1}, 0]],
    q_{n+½} = q_n + (h/2) v_n + (h²/4) A,  v_{n+½} = v_n + (h/2) A,  q_{n+1} = q_n + h v_n + (h²/2) A.

With compiled/variational_kinds.py's kernels the components cost ~1.5 ms a step, and the
Python around them (two StateEvals per iteration, a scatter per group, the block list
concatenated and summed by ``BlockPattern.values``, G_nᵀΛ as a LocalOperator) ~2.7 ms of
the ≈ 5.9 ms step.  ``fused`` computes R and J's CSR values in one call per iteration,
and stages 2–3's S and right-hand sides in one call each: the state gathers by the
groups' index maps, the same kernels, and every local value added straight into R or its
CSR slot (``BlockPattern.slots``: the slot of every local block entry in the pattern's
block order: force blocks, constraint Hessians, G_{n+1}, G_nᵀ, λ diagonal).

What is constant goes in once: per design, ``base`` (the CSR values of M, (h/2) × the
bending damping's r_v and the linear spherical joints' Φ_q in both G blocks), S's
constant values and the gravity vector; per step, G_n of the other constraints (at q_n)
is added to a copy of ``base`` and kept for G_nᵀΛ in every iteration.  Linear kinds
(r = B x with constant B: the inertias, the bending damping; Φ = Φ_q q: natural/beam
spherical joints) enter as (row, column, value) triples.  The ~50 index and constant
arrays travel packed in three (``pack``): numba types every argument of a call, and a
tuple of ~50 arrays took 15–45 µs a call against ~1 µs for plain arrays.

Numbers: the formulas of the numpy path in another summation order (each R entry and CSR
value sums its terms in the order the kinds are listed here, not group by group), so the
converged states differ from the per-group compiled step (cwish20) by round-off; bitwise
the same from run to run.  Used when every group of the model has a kernel and no kind
has more than one nonlinear group (``why_not`` says why not otherwise; the per-group step is then
used, unchanged).
"""
import numpy as np

from ._jit import njit
from .variational_kinds import elastic, axial_damping, pair_spring, orthonormality, weld, pair_distance, driver


# -- kernels ------------------------------------------------------------------------------------

@njit(cache=True)
def _gather(x, gidx):
    """x[gidx] for an (ne, k) index array into the extended state."""
    ne, k = gidx.shape
    out = np.empty((ne, k))
    for e in range(ne):
        for j in range(k):
            out[e, j] = x[gidx[e, j]]
    return out


@njit(cache=True)
def _add_vec(R, ridx, r, c):
    """R[ridx] += c r, entry by entry ((ne, k) arrays)."""
    ne, k = ridx.shape
    for e in range(ne):
        for j in range(k):
            R[ridx[e, j]] += c * r[e, j]


@njit(cache=True)
def _add_blocks(data, slot, B1, c1, B2, c2, two):
    """data[slot] += c1 B1 (+ c2 B2 with ``two``), ((ne, a, b) arrays)."""
    ne, a, b = slot.shape
    for e in range(ne):
        for i in range(a):
            for j in range(b):
                v = c1 * B1[e, i, j]
                if two:
                    v = c2 * B2[e, i, j] + v
                data[slot[e, i, j]] += v


@njit(cache=True)
def _ext_states(q0, v0, A, h):
    """Extended (ground slots zero) q_{n+½}, v_{n+½}, A, q_{n+1} — the Python step's formulas."""
    n = q0.shape[0]
    qm, vm, a, q1 = np.zeros(n + 3), np.zeros(n + 3), np.zeros(n + 3), np.zeros(n + 3)
    for i in range(n):
        qm[i] = q0[i] + 0.5 * h * v0[i] + 0.25 * h * h * A[i]
        vm[i] = v0[i] + 0.5 * h * A[i]
        a[i] = A[i]
        q1[i] = (q0[i] + h * v0[i]) + 0.5 * h * h * A[i]
    return qm, vm, a, q1


@njit(cache=True)
def _ext(x):
    """x with ground's three zero slots appended."""
    n = x.shape[0]
    out = np.zeros(n + 3)
    out[:n] = x
    return out


@njit(cache=True)
def _v1(X, M, k):
    o = M[k, 0]
    return X[o:o + M[k, 1]]


@njit(cache=True)
def _v2(X, M, k):
    o = M[k, 0]
    return X[o:o + M[k, 1] * M[k, 2]].reshape((M[k, 1], M[k, 2]))


@njit(cache=True)
def _v3(X, M, k):
    o = M[k, 0]
    return X[o:o + M[k, 1] * M[k, 2] * M[k, 3]].reshape((M[k, 1], M[k, 2], M[k, 3]))


#: the packed arrays in order (type f/i/s = float, int, int scalar; number of dimensions):
#: gravity; LF (4); EL (8); AD (4); PS (7); LC (3); OR (4); WE (9); PD (7); DR (6)
SPEC = ("f1 i1 i1 f1 i1 i2 i2 i3 f1 f1 f1 f3 f3 i2 i2 i3 f1 i2 i2 i3 f2 f2 f2 s i1 i1 f1 "
        "i2 i2 i3 i3 i2 i2 i3 i3 f2 f2 f2 f2 f1 i2 i2 i3 i3 f2 f2 f1 i2 i2 i3 i3 f2 s").split()


def pack(items):
    """(I, F, M): the arrays of ``items`` (``SPEC`` order) concatenated by type, M[k] =
    (offset, shape) of item k."""
    ints, flts, M = [], [], np.zeros((len(SPEC), 4), np.int64)
    sizes = {"i": 0, "f": 0}
    for k, (x, spec) in enumerate(zip(items, SPEC)):
        x = np.atleast_1d(np.asarray(x))
        kind = "f" if spec[0] == "f" else "i"
        nd = 1 if spec == "s" else int(spec[1])
        if x.ndim != nd or (kind == "f") != (x.dtype.kind == "f"):
            raise ValueError(f"packed item {k}: {x.dtype} {x.shape} is not {spec}")
        M[k, 0] = sizes[kind]
        M[k, 1:1 + nd] = x.shape
        sizes[kind] += x.size
        (flts if kind == "f" else ints).append(x.ravel().astype(np.float64 if kind == "f" else np.int64))
    if len(items) != len(SPEC):
        raise ValueError(f"{len(items)} packed items for {len(SPEC)}")
    return (np.concatenate(ints) if ints else np.zeros(0, np.int64), np.concatenate(flts) if flts else np.zeros(0), M)


@njit(cache=True)
def fused(mode, x1, x2, x3, lam, h, base, I, F, M, fdr, gn, gn_ridx, gn_lidx, slot1, slot2, R, data):
    """Everything of the step in one compiled function (one level above the kinds' kernels:
    numba re-optimizes a callee's code in every caller's library, so helper levels between
    this and the kernels cost compile time — 18–27 s CPU cold with four levels), on the
    packed arrays (``SPEC``), by ``mode``; returns two arrays (empty where not said):

    0: once a step, x1 = q_n: (G_n's values at q_n in ``slot1``'s order — the nonlinear
       constraint kinds' Φ_q, orthonormality, weld, distance, driver, each (ne, m, nq)
       raveled —, the step's constant CSR values: ``base`` + G_nᵀ at ``slot1``);
    1: a Newton iteration, x1, x2, x3 = q_n, v_n, A, λ (m + 1: the last 0 for dropped
       rows), base = the step's values, fdr = f(t_{n+1}) of the driver: R (N + 1: the last
       entry takes dropped rows) and J's CSR values ``data`` (nnz + 1: the pattern's spare
       slot), with G_n's values ``gn`` (R index ``gn_ridx``, λ index ``gn_lidx``) for G_nᵀΛ;
    2: stage 2, x1, x2, x3 = q_{n+1}, q_{n+½}, v_{n+½}, base = S's constant values
       (M, the linear joints' Φ_q), fdr = f′(t_{n+1}): (S's values: base + G_{n+1} at
       ``slot1`` (G_nᵀ's slots: S's G_{n+1}ᵀ) and ``slot2`` (G_{n+1}'s), ·) and the
       right-hand side [M v_{n+½} − (h/2) F(t_{n+½}, q_{n+½}, v_{n+½}); −Φ_t] in R;
    3: stage 3, x1, x2 = q_{n+1}, v_{n+1}, fdr = f″(t_{n+1}): −[F(t_{n+1}, q_{n+1}, v_{n+1});
       γ] in R (the inertial forces at a = 0 and Φ_qᵀλ at λ = 0 vanish; γ = 0 for the
       linear joints).

    Arrays (``SPEC``): grav the gravity vector; LF linear forces (R index, extended column,
    value, state 1 = v, 2 = a); EL, AD, PS elastic, axial damping, spring-damper (gather
    index, R index, J slots, constants); LC linear constraint rows (R index, extended
    column, value); OR, WE, PD, DR nonlinear constraints (gather index, R index of the
    rows, G_{n+1} slots, G_nᵀ slots, constants)."""
    grav = _v1(F, M, 0)
    LF0 = _v1(I, M, 1)
    LF1 = _v1(I, M, 2)
    LF2 = _v1(F, M, 3)
    LF3 = _v1(I, M, 4)
    EL0 = _v2(I, M, 5)
    EL1 = _v2(I, M, 6)
    EL2 = _v3(I, M, 7)
    EL3 = _v1(F, M, 8)
    EL4 = _v1(F, M, 9)
    EL5 = _v1(F, M, 10)
    EL6 = _v3(F, M, 11)
    EL7 = _v3(F, M, 12)
    AD0 = _v2(I, M, 13)
    AD1 = _v2(I, M, 14)
    AD2 = _v3(I, M, 15)
    AD3 = _v1(F, M, 16)
    PS0 = _v2(I, M, 17)
    PS1 = _v2(I, M, 18)
    PS2 = _v3(I, M, 19)
    PS3 = _v2(F, M, 20)
    PS4 = _v2(F, M, 21)
    PS5 = _v2(F, M, 22)
    PS6 = _v1(I, M, 23)[0] != 0
    LC0 = _v1(I, M, 24)
    LC1 = _v1(I, M, 25)
    LC2 = _v1(F, M, 26)
    OR0 = _v2(I, M, 27)
    OR1 = _v2(I, M, 28)
    OR2 = _v3(I, M, 29)
    OR3 = _v3(I, M, 30)
    WE0 = _v2(I, M, 31)
    WE1 = _v2(I, M, 32)
    WE2 = _v3(I, M, 33)
    WE3 = _v3(I, M, 34)
    WE4 = _v2(F, M, 35)
    WE5 = _v2(F, M, 36)
    WE6 = _v2(F, M, 37)
    WE7 = _v2(F, M, 38)
    WE8 = _v1(F, M, 39)
    PD0 = _v2(I, M, 40)
    PD1 = _v2(I, M, 41)
    PD2 = _v3(I, M, 42)
    PD3 = _v3(I, M, 43)
    PD4 = _v2(F, M, 44)
    PD5 = _v2(F, M, 45)
    PD6 = _v1(F, M, 46)
    DR0 = _v2(I, M, 47)
    DR1 = _v2(I, M, 48)
    DR2 = _v3(I, M, 49)
    DR3 = _v3(I, M, 50)
    DR4 = _v2(F, M, 51)
    DR5 = _v1(I, M, 52)[0]
    none = np.zeros(0)
    n = x1.shape[0]
    if mode == 1:
        cq, cv = 0.25 * h * h, 0.5 * h
        s = 2.0 / (h * h)
        qm, vm, a, q1 = _ext_states(x1, x2, x3, h)
        R[:] = 0.0
        data[:] = base
        R[:n] += grav
        # linear forces: r = B x (x = a for M A, v_{n+½} for the bending damping)
        for k in range(LF0.shape[0]):
            x = a[LF1[k]] if LF3[k] == 2 else vm[LF1[k]]
            R[LF0[k]] += LF2[k] * x
        # elastic force: r, (h²/4) ∂r/∂q
        r, Jq = elastic(_gather(qm, EL0), EL3, EL4, EL5, EL6, EL7, True)
        _add_vec(R, EL1, r, 1.0)
        _add_blocks(data, EL2, Jq, cq, Jq, 0.0, False)
        # axial damping: r, (h/2) ∂r/∂v + (h²/4) ∂r/∂q
        r, rq, rv = axial_damping(_gather(qm, AD0), _gather(vm, AD0), AD3, True)
        _add_vec(R, AD1, r, 1.0)
        _add_blocks(data, AD2, rv, cv, rq, cq, True)
        # spring-dampers between points
        r, rq, rv = pair_spring(_gather(qm, PS0), _gather(vm, PS0), PS3, PS4, PS5, PS6, True)
        _add_vec(R, PS1, r, 1.0)
        _add_blocks(data, PS2, rv, cv, rq, cq, True)
        # G_nᵀΛ
        for k in range(gn.shape[0]):
            R[gn_ridx[k]] += gn[k] * lam[gn_lidx[k]]
        # constraints at q_{n+1}: (2/h²) Φ and G_{n+1}
        for k in range(LC0.shape[0]):
            R[LC0[k]] += s * (LC2[k] * q1[LC1[k]])
        qo = _gather(q1, OR0)
        _add_vec(R, OR1, orthonormality(qo, qo, 0)[:, :, 0], s)
        go = orthonormality(qo, qo, 1)
        _add_blocks(data, OR2, go, 1.0, go, 0.0, False)
        qw = _gather(q1, WE0)
        _add_vec(R, WE1, weld(qw, qw, WE4, WE5, WE6, WE7, WE8, 0)[:, :, 0], s)
        gw = weld(qw, qw, WE4, WE5, WE6, WE7, WE8, 1)
        _add_blocks(data, WE2, gw, 1.0, gw, 0.0, False)
        qd = _gather(q1, PD0)
        _add_vec(R, PD1, pair_distance(qd, qd, PD4, PD5, PD6, 0)[:, :, 0], s)
        gd = pair_distance(qd, qd, PD4, PD5, PD6, 1)
        _add_blocks(data, PD2, gd, 1.0, gd, 0.0, False)
        qr = _gather(q1, DR0)
        _add_vec(R, DR1, driver(qr, qr, DR4, DR5, fdr, 0)[:, :, 0], s)
        gr = driver(qr, qr, DR4, DR5, fdr, 1)
        _add_blocks(data, DR2, gr, 1.0, gr, 0.0, False)
        return none, none
    x = _ext(x1)
    if mode == 0 or mode == 2:
        # Φ_q of the nonlinear constraint kinds at x1, flat
        qo = _gather(x, OR0)
        qw = _gather(x, WE0)
        qd = _gather(x, PD0)
        qr = _gather(x, DR0)
        g = np.concatenate((orthonormality(qo, qo, 1).ravel(), weld(qw, qw, WE4, WE5, WE6, WE7, WE8, 1).ravel(),
                            pair_distance(qd, qd, PD4, PD5, PD6, 1).ravel(),
                            driver(qr, qr, DR4, DR5, np.zeros(qr.shape[0]), 1).ravel()))
        vals = base.copy()
        for k in range(g.shape[0]):
            vals[slot1[k]] += g[k]
        if mode == 0:
            return g, vals
        for k in range(g.shape[0]):
            vals[slot2[k]] += g[k]
    # modes 2, 3: the forces wi Σ_inertial r + wf Σ_other r at (qx, vx, ax)
    if mode == 2:
        qx, vx, ax, wi, wf = _ext(x2), _ext(x3), _ext(x3), 1.0, -0.5 * h
    else:
        qx, vx, ax, wi, wf = x, _ext(x2), np.zeros(n + 3), -1.0, -1.0
    R[:] = 0.0
    for i in range(n):
        R[i] += wf * grav[i]
    for k in range(LF0.shape[0]):
        if LF3[k] == 2:
            R[LF0[k]] += wi * (LF2[k] * ax[LF1[k]])
        else:
            R[LF0[k]] += wf * (LF2[k] * vx[LF1[k]])
    _add_vec(R, EL1, elastic(_gather(qx, EL0), EL3, EL4, EL5, EL6, EL7, False)[0], wf)
    _add_vec(R, AD1, axial_damping(_gather(qx, AD0), _gather(vx, AD0), AD3, False)[0], wf)
    _add_vec(R, PS1, pair_spring(_gather(qx, PS0), _gather(vx, PS0), PS3, PS4, PS5, PS6, False)[0], wf)
    qr, vr = _gather(x, DR0), _gather(vx, DR0)
    if mode == 2:
        _add_vec(R, DR1, driver(qr, qr, DR4, DR5, fdr, 3)[:, :, 0], -1.0)          # −Φ_t
        return vals, none
    qo, vo = _gather(x, OR0), _gather(vx, OR0)
    _add_vec(R, OR1, orthonormality(qo, vo, 2)[:, :, 0], -1.0)
    qw, vw = _gather(x, WE0), _gather(vx, WE0)
    _add_vec(R, WE1, weld(qw, vw, WE4, WE5, WE6, WE7, WE8, 2)[:, :, 0], -1.0)
    qd, vd = _gather(x, PD0), _gather(vx, PD0)
    _add_vec(R, PD1, pair_distance(qd, vd, PD4, PD5, PD6, 2)[:, :, 0], -1.0)
    _add_vec(R, DR1, driver(qr, vr, DR4, DR5, fdr, 2)[:, :, 0], -1.0)
    return none, none

# -- the stepper's side ----------------------------------------------------------------------------

#: the proxy kinds (compiled/variational_kinds.py) ``fused`` evaluates; the nonlinear
#: ones at most one group each
LINEAR_FORCES = ("Inertia", "BendingDamping")
NONLINEAR_FORCES = ("Elastic", "AxialDamping", "PairSpring")
NONLINEAR_CONSTRAINTS = ("Orthonormality", "BeamWeld", "PairDistance", "Driver")
KINDS = ("Gravity",) + LINEAR_FORCES + NONLINEAR_FORCES + ("LinearSpherical",) + NONLINEAR_CONSTRAINTS


def why_not(forces, constraints):
    """None if ``FusedNewton`` can evaluate these groups (the compiled step's proxies), else
    the reason (the per-group compiled step is then used)."""
    names = [type(g).__name__ for g in list(forces) + list(constraints)]
    for nm in names:
        if nm not in KINDS:
            return f"a group without a kernel ({nm})"
    for nm in NONLINEAR_FORCES + NONLINEAR_CONSTRAINTS:
        if names.count(nm) > 1:
            return f"{names.count(nm)} groups of the kind {nm}"
    return None


def _i64(x):
    return np.ascontiguousarray(x, dtype=np.int64)


class FusedNewton:
    """R and J's CSR values of a variational Newton iteration by one ``fused`` call
    (module docstring); ``begin`` once a step, ``evaluate`` per iteration, ``project``
    for stages 2–3."""

    def __init__(self, system, pattern, forces, constraints):
        n, m = system.n, system.m
        self.n, self.m, self.N, self.nnz = n, m, n + m, pattern.nnz
        N = self.N
        self.forces, self.constraints = list(forces), list(constraints)
        nf, nc = len(self.forces), len(self.constraints)
        offs = np.r_[0, np.cumsum(pattern.sizes)]
        slots = pattern.slots.astype(np.int64)

        def block(i, shape):
            return slots[offs[i]:offs[i + 1]].reshape(shape)
        self.rowmap = rowmap = np.r_[np.arange(n), np.full(3, N)]      # extended -> R index (ground: dropped)
        self.fslot = [block(i, (g.ne, g.nq, g.nq)) for i, g in enumerate(self.forces)]
        self.g1slot = [block(nf + nc + j, (g.ne, g.m, g.nq)) for j, g in enumerate(self.constraints)]
        self.gnslot = [block(nf + 2 * nc + j, (g.ne, g.nq, g.m)).transpose(0, 2, 1)
                       for j, g in enumerate(self.constraints)]
        self.cidx = [np.where(g.rows < 0, N, n + g.rows) for g in self.constraints]
        self.lidx = [np.where(g.rows < 0, m, g.rows) for g in self.constraints]
        self.ridx = {id(g): rowmap[g.qidx] for g in self.forces + self.constraints}
        self._lam = np.zeros(m + 1)
        self._none, self._iz = np.zeros(0), np.zeros(0, np.int64)
        self.R, self.data = np.zeros(N + 1), np.zeros(self.nnz + 1)
        self._key = None
        # the nonlinear constraints' G_n layout (``fused`` mode 0 order): slots, R and λ index
        sl, rr, ll, s1 = [], [], [], []
        for name in NONLINEAR_CONSTRAINTS:
            for j, g in enumerate(self.constraints):
                if type(g).__name__ == name:
                    sl.append(self.gnslot[j].ravel())
                    s1.append(self.g1slot[j].ravel())
                    rr.append(np.broadcast_to(self.ridx[id(g)][:, None, :], (g.ne, g.m, g.nq)).ravel())
                    ll.append(np.broadcast_to(self.lidx[j][:, :, None], (g.ne, g.m, g.nq)).ravel())
        self.gn_slot = _i64(np.concatenate(sl) if sl else np.zeros(0))
        self.g1_slot = _i64(np.concatenate(s1) if s1 else np.zeros(0))
        self._gn_r = np.concatenate(rr) if rr else np.zeros(0, np.int64)
        self._gn_l = np.concatenate(ll) if ll else np.zeros(0, np.int64)

    def _group(self, name, kind):
        gs = [g for g in (self.forces if kind == "f" else self.constraints) if type(g).__name__ == name]
        return gs[0] if gs else None

    def _setup(self, p, h):
        """The per-design (and step size) arrays: ``packed``, ``base``, ``baseS``."""
        n, N, nnz = self.n, self.N, self.nnz
        local = lambda g: g.consts(p[g.pidx])                  # noqa: E731  (the proxy's constants)
        grav = np.zeros(N + 1)
        brows, bvals = [np.zeros(0, np.int64)], [np.zeros(0)]   # base CSR values (slot, value)
        lf = [[], [], [], []]
        srows, svals = [np.zeros(0, np.int64)], [np.zeros(0)]  # S's constant values: M, linear joints
        for g in self.forces:
            nm, ri, sl = type(g).__name__, self.ridx[id(g)], self.fslot[self.forces.index(g)]
            if nm == "Gravity":
                np.add.at(grav, ri.ravel(), local(g).ravel())
            elif nm in LINEAR_FORCES:
                B, src, c = (local(g), 2, 1.0) if nm == "Inertia" else (local(g)[1], 1, 0.5 * h)
                lf[0].append(np.broadcast_to(ri[:, :, None], B.shape).ravel())
                lf[1].append(np.broadcast_to(g.qidx[:, None, :], B.shape).ravel())
                lf[2].append(B.ravel())
                lf[3].append(np.full(B.size, src))
                brows.append(sl.ravel())
                bvals.append((c * B).ravel())
                if nm == "Inertia":
                    srows.append(sl.ravel())
                    svals.append(B.ravel())
        LF = tuple(_i64(np.concatenate(x)) if x else np.zeros(0, np.int64) for x in (lf[0], lf[1], lf[3]))
        LF = (LF[0], LF[1], np.concatenate(lf[2]) if lf[2] else np.zeros(0), LF[2])
        lc, gn_lc = [[], [], []], [[], [], []]
        for j, g in enumerate(self.constraints):
            if type(g).__name__ != "LinearSpherical":
                continue
            G = local(g)
            lc[0].append(np.broadcast_to(self.cidx[j][:, :, None], G.shape).ravel())
            lc[1].append(np.broadcast_to(g.qidx[:, None, :], G.shape).ravel())
            lc[2].append(G.ravel())
            brows += [self.g1slot[j].ravel(), self.gnslot[j].ravel()]
            bvals += [G.ravel(), G.ravel()]
            srows += [self.g1slot[j].ravel(), self.gnslot[j].ravel()]
            svals += [G.ravel(), G.ravel()]
            gn_lc[0].append(lc[1][-1])
            gn_lc[1].append(np.broadcast_to(self.lidx[j][:, :, None], G.shape).ravel())
            gn_lc[2].append(G.ravel())
        LC = (_i64(np.concatenate(lc[0]) if lc[0] else []), _i64(np.concatenate(lc[1]) if lc[1] else []),
              np.concatenate(lc[2]) if lc[2] else np.zeros(0))
        self._gn_lc = np.concatenate(gn_lc[2]) if gn_lc[2] else np.zeros(0)
        self.gn_ridx = _i64(np.r_[self._gn_r, self.rowmap[np.concatenate(gn_lc[0])] if gn_lc[0] else []])
        self.gn_lidx = _i64(np.r_[self._gn_l, np.concatenate(gn_lc[1]) if gn_lc[1] else []])
        base = np.bincount(np.concatenate(brows), weights=np.concatenate(bvals), minlength=nnz + 1)
        self.baseS = np.bincount(np.concatenate(srows), weights=np.concatenate(svals), minlength=nnz + 1)

        def idx(g, j=None):
            if j is None:
                return _i64(g.qidx), _i64(self.ridx[id(g)]), _i64(self.fslot[self.forces.index(g)])
            return _i64(g.qidx), _i64(self.cidx[j]), _i64(self.g1slot[j]), _i64(self.gnslot[j])

        def empty(nq, k):
            z = np.zeros((0, nq), np.int64)
            return (z, z, np.zeros((0, nq, nq), np.int64)) if k == "f" else \
                (z, np.zeros((0, 1), np.int64), np.zeros((0, 1, nq), np.int64), np.zeros((0, 1, nq), np.int64))
        z1, z2 = np.zeros(0), np.zeros((0, 4))
        g = self._group("Elastic", "f")
        EL = idx(g) + local(g) if g is not None else empty(12, "f") + (z1, z1, z1, np.zeros((0, 4, 4)), np.zeros((0, 4, 4)))
        g = self._group("AxialDamping", "f")
        AD = idx(g) + (local(g),) if g is not None else empty(12, "f") + (z1,)
        g = self._group("PairSpring", "f")
        PS = idx(g) + local(g) if g is not None else empty(24, "f") + (z2, z2, np.zeros((0, 3)), True)
        cons = {}
        for j, g in enumerate(self.constraints):
            cons[type(g).__name__] = (g, j)
        g, j = cons.get("Orthonormality", (None, None))
        OR = idx(g, j) if g is not None else empty(9, "c")
        g, j = cons.get("BeamWeld", (None, None))
        WE = idx(g, j) + local(g) if g is not None else empty(24, "c") + (z2, z2, z2, z2, z1)
        g, j = cons.get("PairDistance", (None, None))
        PD = idx(g, j) + local(g) if g is not None else empty(24, "c") + (z2, z2, z1)
        g, j = cons.get("Driver", (None, None))
        DR = idx(g, j) + local(g)[:2] if g is not None else empty(3, "c") + (np.zeros((0, 2)), 0)
        self._driver = g
        flat = [grav[:n].copy()]
        for part in (LF, EL, AD, PS, LC, OR, WE, PD, DR):
            flat += list(part)
        self.packed = pack(flat)
        self.base = base

    def begin(self, t1, q0, p, h):
        """Once a step: the design's arrays (rebuilt when p or h changes), G_n at q_n and the
        step's constant CSR values, the driver's time function at t_{n+1}."""
        key = (p.tobytes(), h)
        if key != self._key:
            self._setup(p, h)
            self._key = key
        z = self._none
        gn, self.dstep = fused(0, q0, z, z, z, h, self.base, *self.packed, z, z, self._iz, self._iz, self.gn_slot,
                               self._iz, z, z)
        self.gn = np.concatenate((gn, self._gn_lc))
        g = self._driver
        if g is None:
            self.fdr = self.fdr1 = self.fdr2 = np.zeros(0)
        else:
            pl = p[g.pidx]
            C = g.consts(pl)
            self.fdr, self.fdr1, self.fdr2 = (np.ascontiguousarray(g._f(C, t1, pl, o), dtype=np.float64)
                                              for o in (0, 1, 2))

    def evaluate(self, q0, v0, A, lam, h):
        """(R, J's CSR values) of the iteration at A, Λ (views of buffers reused by the next call)."""
        self._lam[:self.m] = lam
        fused(1, q0, v0, A, self._lam, h, self.dstep, *self.packed, self.fdr, self.gn, self.gn_ridx, self.gn_lidx,
              self._iz, self._iz, self.R, self.data)
        return self.R[:self.N], self.data[:self.nnz]

    def project(self, q1, qm, vm, h, Sop):
        """Stages 2–3 of the step (``Variational._project``) with S in ``Sop``
        (CompiledSaddleLU): (v_{n+1}, ξ, a_{n+1}, λ_{n+1})."""
        n, N = self.n, self.N
        z = self._none
        self.dS, _ = fused(2, q1, qm, vm, z, h, self.baseS, *self.packed, self.fdr1, z, self._iz, self._iz, self.gn_slot,
                           self.g1_slot, self.R, z)
        Sop.set_data(self.dS[:self.nnz])
        z = Sop.solve(self.R[:N])
        v1, xi = z[:n], z[n:]
        fused(3, q1, v1, z, z, h, z, *self.packed, self.fdr2, z, self._iz, self._iz, self._iz, self._iz, self.R, z)
        z = Sop.solve(self.R[:N])
        return v1, xi, z[:n], z[n:]
