"""Newton / tangent / adjoint solves of a model with FFR continua: a factorization of
the elastic block kept over Newton iterations, time steps and the adjoint sweep, a
Schur complement for the border, and iterative refinement against the exact matrix.

The (n + m) Newton matrix of the acceleration-form steppers splits into the elastic
coordinates of the continua (f, ~10⁵–10⁶ unknowns) and the border b (frames, rigid
bodies, multipliers: a few dozen):

    J = [[J_ff, J_fb], [J_bf, J_bb]],   J_ff = Σ_k (cM_k M_k + cG_k G_k) + cK K (+ joints' f × f)

(continuum_structured.py).  For steel-like continua cK K dominates cM M + cG G by
~10⁹, and cK = β h² (1 − α_f) is constant over a run, so a factorization F of J_ff
at one state is an almost exact factorization at every later state of the same
design.  With J̃ = J with J_ff replaced by F, solved exactly by the Schur complement

    Y = F⁻¹ J_fb,   S̃ = J_bb − J_bf Y,   z_b = S̃⁻¹ (r_b − J_bf F⁻¹ r_f),   z_f = F⁻¹ r_f − Y z_b,

the exact solve of J z = r is the refinement  z ← z + J̃⁻¹ (r − J z)  (contraction
‖J̃⁻¹(J_ff − F)‖ ~ 10⁻⁹ … 10⁻⁵), run until the correction stops shrinking or is
below 10⁻¹⁴ of z; F is refactored at the current state when the contraction exceeds
0.1 (or the design changed).  The transposed solve (adjoint) is the same with Fᵀ, so
the discrete adjoint stays exact to round-off: J is never approximated, only the
preconditioner.  F is a distributed PETSc AIJ matrix factored by MUMPS; the border and
the right-hand sides are replicated numpy arrays, like the rest of the state.

Cost per matrix (what makes a Newton iteration or an adjoint step cheap).  Only a few
border columns c (the frames' three, the pin joint's multipliers) have f rows and only a
few border rows r have f columns, so J_fb and J_bf are kept as dense nf × |c| and
|r| × nf blocks (U, V), J_bb as nb × nb, and the other groups' f × f entries as a CSR
of constant pattern: the pattern's entries are sorted into these blocks once (index
maps), no (n + m) sparse matrix is built or sliced per matrix.  Y = F⁻¹U has |c|
columns and is one product Z W of the per-factorization solves Z = F⁻¹[e_i …, Φ_k …]
(unit columns of the pin's f rows, the frames' constant border basis) with a small
coefficient matrix W, plus F⁻¹ of the frames' state-dependent remainder (the G u, M u,
G ü … columns of continuum_structured.py).  That remainder's solve is lagged: reused
while the remainder moved by less than ``REM_LAG`` of the border column since it was
solved (J̃ then differs from J by that much in the border, which the refinement of the
exact solves and Newton absorb); a refinement that stalls drops the lagged solve before
it refactors F, so a lag never causes a refactorization.
"""
import ctypes

import numpy as np
import scipy.sparse as sp

from .._memory import release
from .._petsc import PETSc
from ..model.assembly import BlockPattern, ColumnSolves, local_size
from . import continuum_amg as amg
from .continuum_structured import ContinuumStructure, structured_groups

#: refactor F when one refinement sweep shrinks the correction by less than this
REFACTOR_CONTRACTION = 0.1
#: stop refining when the correction is below this fraction of the solution
REFINE_RTOL = 1e-14
#: … or when the error left after a correction d, estimated θ/(1 − θ)|d| from the
#: contraction θ = |d_k|/|d_{k−1}| of the last two sweeps, is (Hairer & Wanner II §IV.8,
#: as the stepper's Newton), trusted for θ below this.  Saves the sweep that would only
#: measure it: the corrections reach a round-off floor of ~1e-14 … 1e-13 relative, where
#: the plain test then stops on "no longer shrinking" one or two sweeps later (crank
#: 100 × 40, 200 adjoint steps: 270 sweeps fewer; the sweep after an early stop measured
#: ≤ 3.4e-12 relative, that solve's own round-off floor)
REFINE_TRUST = 1e-2
#: on the Krylov path an exact solve (tangent, adjoint) runs GMRES to this relative
#: residual, a Newton solve to the user's ``-parmbs_schur_ksp_rtol``.  Why: the first
#: application z₀ = J̃⁻¹r counts as the correction from z = 0, so after one refinement
#: sweep the contraction θ = |d₁|/|z₀| is measured and the error estimate θ/(1 − θ)|d₁|
#: ≈ θ²|z| stops the refinement when θ ≲ 1e-7.  GMRES + GAMG contracts by ≈ its rtol per
#: sweep (crank 250 × 100, adjoint: rtol 1e-6 → |d₁|/|z| ≈ 2e-7 … 1.6e-6, then a second
#: sweep; 1e-8 → |d₁|/|z| ≈ 2e-9, the second sweep measured only the round-off floor
#: 1e-13): 2 F-solves of ≈ 18 + 21 GMRES iterations instead of 3 of ≈ 13 + 16 + 15
EXACT_KSP_RTOL = 1e-8
MAX_REFINE = 12
#: refactor before a Newton matrix whose estimated ‖F⁻¹(J_ff − F)‖ exceeds this
LAG_LIMIT = 0.05
#: reuse the F-solve of the frames' border remainder while max|R − R_solved| stays below
#: this fraction of max|border column| (measured on the crank: the remainder moves by
#: 0.3–2 % of the column per step with the index-3 trapezoidal rule's oscillating ü, and
#: solving it once per factorization left Newton iterations and refinement sweeps as
#: they were: 279 / 347 against 279 / 362 with a fresh solve per matrix, 100 steps 100 × 40)
REM_LAG = 0.1
#: with a Krylov solve of F (continuum_amg.py) an exact solve must end with a normwise
#: backward error ‖r − J z‖∞ / (‖J‖ ‖z‖∞ + ‖r‖∞) below this.  Round-off of the residual
#: itself: a row of J sums ≤ 18 products (f rows) or ~nf products (the border's dense
#: U, V rows), error ≲ √nf · u ≈ 3.5e-14 at nf = 10⁵ (u = 1.1e-16, random-walk summation,
#: Higham ASNA §3); 1e-12 is 30× above that.  The forward error is then ≤ κ(J) · 1e-12
#: (Higham Thm 7.2), the same bound a backward-stable LU gives with its own ~u: the
#: adjoint and direct solves of one J agree to it (tests/test_continuum_amg.py measures)
BACKWARD_TOL = 1e-12


class FPattern:
    """The CSR pattern of F = Σ_k (cM_k M_k + cG_k G_k) + cK K + S on this rank's f rows
    [r0, r1): that of M, G, K (``ContinuumStructure.pattern``, which they share) with the
    other groups' few f × f entries S (the pin joint's) merged in.  F's values are then
    O(nnz) combinations of the design's M, G, K data — no per-element blocks and no second
    element pattern (at 10⁶ elements 6.4·10⁷ slots and as many values per rank)."""

    def __init__(self, st, small_ff, r0, r1):
        P, nf, nl = st.pattern, st.nf, r1 - r0
        self.small = BlockPattern(nf, small_ff, (r0, r1))
        S = self.small
        key = lambda ip, ind: np.repeat(np.arange(nl, dtype=np.int64), np.diff(ip)) * nf + ind
        kP, kS = key(P.indptr, P.indices), key(S.indptr, S.indices)    # sorted: row-major CSR
        new = np.setdiff1d(kS, kP, assume_unique=True)
        if len(new):
            k = np.union1d(kP, new)
            self.pos = np.searchsorted(k, kP)
            rows, cols = k // nf, k % nf
            self.indices = cols.astype(PETSc.IntType)
            self.indptr = np.r_[0, np.cumsum(np.bincount(rows, minlength=nl))].astype(PETSc.IntType)
        else:
            k, self.pos = kP, None           # S within M, G, K's pattern (the crank's pin)
            self.indices, self.indptr = P.indices, P.indptr
        self.spos = np.searchsorted(k, kS)
        self.nnz = len(k)

    def values(self, d, small_vals):
        """F's CSR data from M, G, K's combined data ``d`` and the small groups' blocks."""
        if self.pos is None:
            data = np.array(d, float)
        else:
            data = np.zeros(self.nnz)
            data[self.pos] = d
        data[self.spos] += self.small.values(small_vals)
        return data


def usable(system):
    """True when the system has continua whose groups this solver can take over."""
    return bool(structured_groups(system))


class ContinuumSchurOperator(ColumnSolves):
    """The stepper's Newton matrix for a system with FFR continua (see module doc).

    ``set_newton(ev, cq, cv, ca, wi, wf, wh, wgt)`` takes the stepper's weights:
    force blocks cq r_q + cv r_v + ca r_a (inertial groups × wi, others × wf),
    constraint Hessians × wh, Φ_qᵀ × wgt, Φ_q × 1; ``solve``/``solve_many`` as
    ``SparseOperator``.  Counters: ``nfactor`` (F factorizations), ``nfsolve`` (F
    solves), ``nrefine`` (refinement sweeps)."""

    def __init__(self, system, plan, comm=None, options_prefix="parmbs_schur_", structure=None, pattern=None):
        self.sys, self.plan = system, plan
        self.comm = comm or PETSc.COMM_WORLD
        n, m = system.n, system.m
        self.N = N = n + m
        self.st = structure or ContinuumStructure(system, plan)      # may be shared (one per design)
        self.structured = {id(g) for g in self.st.groups}
        st = self.st
        f = st.fidx
        isf = np.zeros(N, bool)
        isf[f] = True
        self.bidx = np.nonzero(~isf)[0]
        self.nb = len(self.bidx)
        self.bpos = -np.ones(N, np.int64)
        self.bpos[self.bidx] = np.arange(self.nb)
        # the other groups' blocks (rigid bodies, joints, loads): the saddle-point pattern
        # without the continuum groups, all rows on every rank (a few hundred entries)
        from ..model.evaluation import StateEval
        probe = StateEval(system, 0.0, system.q_guess, np.zeros(n), np.zeros(n), np.zeros(m), system.p,
                          plan.design_map, plan)
        self.others = [i for i, (g, *_) in enumerate(probe.F) if id(g) not in self.structured]
        fi = [(probe._rows(probe.F[i][0]),) * 2 for i in self.others]
        ci = probe.constraint_index(n)
        self.small = BlockPattern(N, fi + [(r, r) for r, _ in ci] + [(c, r) for r, c in ci] + ci)
        self._border_maps(n, m)
        # F: pattern of M, G, K (+ the other groups' f × f entries), rows split over ranks
        fpos = np.r_[st.fpos, -np.ones(m, np.int64)]
        fp = lambda r: np.where(r >= 0, fpos[np.maximum(r, 0)], -1)
        small_ff = [(fp(r), fp(c)) for r, c in fi + [(r, r) for r, _ in ci]]
        nl, r0 = local_size(st.nf, self.comm)
        self.fr0, self.fr1 = r0, r0 + nl
        st.distribute(self.comm)             # M, G, K by F's rows (a no-op when they already are)
        # F's pattern: M, G, K's rows of this rank with the few other f × f entries merged
        # in; shared with another operator of the same system and communicator (the
        # initial state's)
        self.fpat = pattern if pattern is not None else FPattern(st, small_ff, self.fr0, self.fr1)
        self._small_ff = small_ff
        ksp = PETSc.KSP().create(self.comm)
        ksp.setType("preonly")
        pc = ksp.getPC()
        pc.setType("lu")
        pc.setFactorSolverType("mumps")
        ksp.setOptionsPrefix(options_prefix)
        ksp.setFromOptions()
        self.ksp = ksp
        #: a Krylov solve of F (-<prefix>ksp_type gmres -<prefix>pc_type gamg|hypre), not a
        #: factorization: its solves are inexact, the refinement's residual decides (solve)
        self.iterative = ksp.getType() != "preonly"
        self._rtol = ksp.getTolerances()[0]
        Fm = PETSc.Mat().createAIJ(((nl, st.nf), (nl, st.nf)), comm=self.comm)
        Fm.setPreallocationCSR((self.fpat.indptr, self.fpat.indices))
        Fm.setOption(PETSc.Mat.Option.NEW_NONZERO_ALLOCATION_ERR, True)
        if self.iterative:
            amg.attach_rigid_modes(Fm, st.rigid_modes(system.p)[self.fr0:self.fr1], self.comm)
            amg.configure(ksp)
        ksp.setOperators(Fm)
        self.F = Fm
        self.x, self.b = Fm.createVecs()
        self._serial = self.comm.getSize() == 1
        self._all, self._x_all = (None, None) if self._serial else PETSc.Scatter.toAll(self.x)
        self._Fvalid, self._Fversion = False, -1
        self.nfactor = self.nfsolve = self.nrefine = self.nkspit = 0
        self.backward = 0.0      # largest backward error certified (Krylov path)
        self.nfsolve_factor = 0     # of nfsolve: once per factorization (probe, Z)
        self._Y, self._Z, self._rem = {}, {}, {}
        self.exact = True        # refine to round-off; the stepper's Newton solves set False
        release()

    def _border_maps(self, n, m):
        """Sort the entries of the small pattern into the f × f CSR, the border blocks U
        (f rows × border columns c), V (border rows r × f columns) and J_bb, once."""
        st, N, nf, nb = self.st, self.N, self.st.nf, self.nb
        ip, cols = self.small.indptr, self.small.indices.astype(np.int64)
        rows = np.repeat(np.arange(N), np.diff(ip))
        fposN = np.r_[st.fpos, -np.ones(m, np.int64)]
        rf, cf, rb, cb = fposN[rows], fposN[cols], self.bpos[rows], self.bpos[cols]
        self._frame_b = [self.bpos[np.asarray(idx, np.int64)] for idx in st.frames]
        fb = np.concatenate(self._frame_b) if self._frame_b else np.zeros(0, np.int64)
        self.cset = np.unique(np.r_[cb[(rf >= 0) & (cb >= 0)], fb]).astype(np.int64)
        self.rset = np.unique(np.r_[rb[(rb >= 0) & (cf >= 0)], fb]).astype(np.int64)
        self.cpos, self.rpos = -np.ones(nb, np.int64), -np.ones(nb, np.int64)
        self.cpos[self.cset] = np.arange(len(self.cset))
        self.rpos[self.rset] = np.arange(len(self.rset))
        # f × f entries: CSR order of the (n + m) pattern is CSR order in f numbering
        e = np.nonzero((rf >= 0) & (cf >= 0))[0]
        self._ff = e
        self._ff_ptr = np.r_[0, np.cumsum(np.bincount(rf[e], minlength=nf))]
        self._ff_ind = cf[e]
        e = np.nonzero((rf >= 0) & (cb >= 0))[0]
        self._fb = (e, rf[e], self.cpos[cb[e]])
        e = np.nonzero((rb >= 0) & (cf >= 0))[0]
        self._bf = (e, self.rpos[rb[e]], cf[e])
        # … and their entries in this rank's f rows [fr0, fr1) (U, V hold those rows only)
        nl, r0 = local_size(nf, self.comm)
        r1 = r0 + nl
        e, i, j = self._fb
        k = (i >= r0) & (i < r1)
        self._fb_loc = (e[k], i[k] - r0, j[k])
        e, i, j = self._bf
        k = (j >= r0) & (j < r1)
        self._bf_loc = (e[k], i[k], j[k] - r0)
        e = np.nonzero((rb >= 0) & (cb >= 0))[0]
        self._bb = (e, rb[e], cb[e])
        # the unit right-hand sides e_i of Y's sparse part: f rows of U, f columns of V
        self._units = {False: np.unique(self._fb[1]), True: np.unique(self._bf[2])}

    # -- matrices ------------------------------------------------------------------------------
    def set_design(self, p):
        self.st.set_design(p)
        if self.st.version != self._Fversion:
            self._Fvalid = False

    def set_newton(self, ev, cq, cv, ca, wi, wf, wh, wgt):
        """The exact Newton matrix at state ``ev`` (a real StateEval with this plan)."""
        self.set_design(ev.p)
        st = self.st
        vals = []
        for g, q, v, a, p in ev.forces_except(self.structured):
            Jq, Jv, Ja = ev._memo(("jac", id(g)), lambda: g.jacobians(ev.t, q, v, a, p))
            B = np.zeros((g.ne, g.nq, g.nq))
            for c, Jx in ((ca, Ja), (cv, Jv), (cq, Jq)):
                if c and Jx is not None:
                    B = B + c * Jx
            vals.append((wi if g.inertial else wf) * B)
        G = ev.phi_q_blocks()
        vals += [wh * H for H in ev.hess_blocks()] + G + [wgt * np.swapaxes(Gb, 1, 2) for Gb in G]
        data = self.small.values(vals)
        self._small_vals = vals
        self.Jc = st.jacobian(ev.q, ev.v, ev.a, cq, cv, ca, wi, wf)
        nl, nb = self.fr1 - self.fr0, self.nb
        self._data = data
        self._Sff = data[self._ff]
        self._Aff = None
        # the border blocks on this rank's f rows only (issue 21 item 3): U (f rows ×
        # border columns), V (border rows × f columns); their products over all f rows
        # are this rank's partial sums, reduced with the gather that follows them
        U = np.zeros((nl, len(self.cset)))
        V = np.zeros((len(self.rset), nl))
        Jbb = np.zeros((nb, nb))
        e, i, j = self._fb_loc
        U[i, j] = data[e]
        e, i, j = self._bf_loc
        V[i, j] = data[e]
        e, i, j = self._bb
        Jbb[i, j] = data[e]
        for bi, (idx, col, row, ff, *_) in zip(self._frame_b, self.Jc.frames):
            U[:, self.cpos[bi]] += col
            V[self.rpos[bi]] += row
            Jbb[np.ix_(bi, bi)] += ff
        self.U, self.V, self.Jbb = U, V, Jbb
        self._Y = {}
        self._fresh = False
        if self._Fvalid and self._lag_estimate() > LAG_LIMIT:
            self._Fvalid = False
        if not self._Fvalid:
            self._factor()

    def invalidate(self):
        """Refactor F at the next Newton matrix."""
        self._Fvalid = False

    def _coefficients(self):
        return np.array([c for fr in self.Jc.frames for c in fr[4:6]] + [self.Jc.cK])

    def _lag_estimate(self):
        """≈ ‖F⁻¹(J_ff − F)‖ from the coefficient changes since the factorization:
        Σ_k (|ΔcM_k| + |ΔcG_k|) ρ + |ΔcK| / cK_F, with ρ ≈ ‖F⁻¹M‖ probed at factor time
        (G is M-bounded: |xᵀGy| ≤ ‖x‖_M ‖y‖_M, J orthogonal) and F ⪰ cK_F K; × 10 for
        safety.  Decides the refactorization before a Newton solve, where the inexact
        (unrefined) solves could not notice a stale factor."""
        c, cF = self._coefficients(), self._cF
        if (c[-1] == 0.0) != (cF[-1] == 0.0):
            return np.inf                    # stiffness switched on/off (initial state ↔ steps)
        dK = abs(c[-1] - cF[-1]) / abs(cF[-1]) if cF[-1] else 0.0
        return 10.0 * (float(np.abs(c[:-1] - cF[:-1]).sum()) * self._rho + dK)

    def _probe(self):
        """ρ ≈ ‖F⁻¹M‖ (all frames' M): two power-iteration sweeps from a random vector."""
        st = self.st
        x = np.random.default_rng(0).standard_normal(st.nf)
        x /= np.linalg.norm(x)
        r = 0.0
        for _ in range(2):
            y = self._fsolve(st.M_product(x))
            self.nfsolve_factor += 1
            r = np.linalg.norm(y)
            if r == 0.0 or not np.isfinite(r):
                return np.inf
            x = y / r
        return r

    def _factor(self):
        """F = the current J_ff (structured blocks by element, once per refactor)."""
        st, pat = self.st, self.fpat
        Ml, Gl, Kl, _ = st.local_rows()      # this rank's rows of the design's M_k, G_k, K
        d = self.Jc.cK * Kl.data
        for k, fr in enumerate(self.Jc.frames):
            d = d + fr[4] * Ml[k].data + fr[5] * Gl[k].data
        data = pat.values(d, self._small_vals[:len(self._small_ff)])
        self.F.setValuesCSR(pat.indptr, pat.indices, data)
        self.F.assemble()
        self._Fvalid = True
        self._Fversion = self.st.version
        self._fresh = True                   # F = J_ff of the current matrix
        self.nfactor += 1
        self._Y, self._Z, self._rem = {}, {}, {}
        self._cF = self._coefficients()
        self._rho = self._probe()
        release()                            # freed set-up temporaries back to the OS (_memory.py)

    def _fsolve(self, R, transpose=False, local=False):
        """F⁻¹ R (or F⁻ᵀ R) for an (nf,) or (nf, k) numpy array, replicated; ``local``: R
        and the solution are this rank's f rows [fr0, fr1) only (no gather)."""
        if R.ndim == 2:
            if R.shape[1] > 1 and not self.iterative:
                return self._fsolve_block(R, transpose, local)
            return np.stack([self._fsolve(R[:, j], transpose, local) for j in range(R.shape[1])], 1) \
                if R.shape[1] else np.zeros_like(R)
        self.b.setArray(R if local else R[self.fr0:self.fr1])
        try:
            (self.ksp.solveTranspose if transpose else self.ksp.solve)(self.b, self.x)
        except PETSc.Error as e:
            raise np.linalg.LinAlgError(f"linear solve failed (PETSc error {e.ierr})") from None
        if self.ksp.getConvergedReason() < 0:
            raise np.linalg.LinAlgError(f"linear solve failed (KSP reason {self.ksp.getConvergedReason()})")
        self.nfsolve += 1
        self.nkspit += self.ksp.getIterationNumber()
        if self._serial or local:
            return self.x.getArray(readonly=True).copy()
        self._all.scatter(self.x, self._x_all, addv=PETSc.InsertMode.INSERT, mode=PETSc.ScatterMode.FORWARD)
        return self._x_all.getArray(readonly=True).copy()

    def _fsolve_block(self, R, transpose, local=False):
        """F⁻¹ R (F⁻ᵀ R) for k > 1 columns by one MatMatSolve (MatMatSolveTranspose) of
        the MUMPS factor: MUMPS's solve phase takes the k right-hand sides together
        (blocked by ICNTL(27)), one pass over the factor instead of k.  Measured at 10⁵
        (crank 500 × 200, the border basis' 6 columns, ``benchmarks/mumps_solve.py``):
        19 ms CPU per column against 81 ms column by column on 1 rank, 37–41 ms against
        125–134 ms per rank on 2; the same solution to 3.8e-15 (max relative)."""
        k, nl = R.shape[1], self.fr1 - self.fr0
        self.ksp.setUp()                     # the factorization of the current F
        Ff = self.ksp.getPC().getFactorMatrix()
        B = PETSc.Mat().createDense(((nl, self.st.nf), (None, k)),
                                    array=np.asfortranarray(R if local else R[self.fr0:self.fr1]), comm=self.comm)
        X = PETSc.Mat().createDense(((nl, self.st.nf), (None, k)), comm=self.comm)
        X.setUp()
        try:
            if transpose:                    # petsc4py 3.18 does not wrap MatMatSolveTranspose
                from ..petsc_options import _libpetsc
                if _libpetsc().MatMatSolveTranspose(*(ctypes.c_void_p(M.handle) for M in (Ff, B, X))):
                    raise PETSc.Error(1)
            else:
                Ff.matSolve(B, X)
        except PETSc.Error as e:
            raise np.linalg.LinAlgError(f"linear solve failed (PETSc error {e.ierr})") from None
        self.nfsolve += k
        Xl = X.getDenseArray()
        if self._serial or local:
            out = np.array(Xl, order="C")
        else:
            out = np.empty((self.st.nf, k))
            for j in range(k):               # each column to every rank, as _fsolve's
                self.x.setArray(Xl[:, j])
                self._all.scatter(self.x, self._x_all, addv=PETSc.InsertMode.INSERT,
                                  mode=PETSc.ScatterMode.FORWARD)
                out[:, j] = self._x_all.getArray(readonly=True)
        B.destroy()
        X.destroy()
        bad = float(not np.all(np.isfinite(out)))
        if local and not self._serial:       # each rank sees its own rows only: decide together,
            bad = self.st.rows.allreduce(np.array([bad]), "max")[0]   # so every rank raises
        if bad:
            raise np.linalg.LinAlgError("linear solve failed (non-finite solution)")
        return out

    def _solved(self, transpose):
        """Z = F⁻¹ (or F⁻ᵀ) [e_i (unit columns of the border's sparse part), Φ_k (frame k's
        constant border basis, nf × 4) …]: solved once per factorization; this rank's f
        rows [fr0, fr1) only."""
        if transpose not in self._Z:
            st, units = self.st, self._units[transpose]
            r0, r1 = self.fr0, self.fr1
            E = np.zeros((r1 - r0, len(units) + 4 * len(self._frame_b)))
            mine = (units >= r0) & (units < r1)
            E[units[mine] - r0, np.arange(len(units))[mine]] = 1.0
            for k in range(len(self._frame_b)):
                E[:, len(units) + 4 * k:len(units) + 4 * k + 4] = st.basis(k, local=True)
            self._Z[transpose] = self._fsolve(E, transpose, local=True)      # this rank's rows
            self.nfsolve_factor += E.shape[1]
        return self._Z[transpose]

    def _rem_solve(self, R, scale, transpose):
        """F⁻¹ R (F⁻ᵀ R) of the frames' border remainder, lagged (module doc): (solve, lagged)."""
        lag = self._rem.get(transpose)
        if lag is not None and lag[0].shape == R.shape:
            # R, its solve: this rank's f rows; the decision from the global maxima (collective)
            d = self.st.rows.allreduce(np.array([np.max(np.abs(R - lag[0]), initial=0.0)]), "max")[0]
            if d <= REM_LAG * scale:
                return lag[1], True
        Yr = self._fsolve(R, transpose, local=True)
        self._rem[transpose] = (R.copy(), Yr)
        return Yr, False

    def _schur(self, transpose):
        """(Y, S̃⁻¹, border rows of the b × f block, their b indices, Y's b columns) for J̃
        (or J̃ᵀ), once per matrix.  Y = F⁻¹ J_fb on the border columns with f rows only:
        Z W (Z the per-factorization solves, W their coefficients: the other groups'
        few f entries and the frames' basis coefficients) + the remainder's lagged solve.
        Y and the border blocks hold this rank's f rows only; J_bf Y is reduced (|r| × |c|)."""
        if transpose not in self._Y:
            nb = self.nb
            Z = self._solved(transpose)
            units = self._units[transpose]
            upos = np.zeros(self.st.nf, np.int64)
            upos[units] = np.arange(len(units))
            if transpose:                    # J̃ᵀ: border columns are J_bf's rows, and back
                (e, j, i), cols, rows, pos, Cbf = self._bf, self.rset, self.cset, self.rpos, self.U.T
            else:
                (e, i, j), cols, rows, pos, Cbf = self._fb, self.cset, self.rset, self.cpos, self.V
            W = np.zeros((Z.shape[1], len(cols)))
            np.add.at(W, (upos[i], j), self._data[e])
            Rs, scale = [], 0.0
            for k, (bi, fr) in enumerate(zip(self._frame_b, self.Jc.frames)):
                _, Cc, Rc, Cr, Rr = fr[6]
                C, R = (Cr, Rr.T) if transpose else (Cc, Rc)
                o = len(units) + 4 * k
                W[o:o + 4, pos[bi]] += C
                scale = max(scale, np.max(np.abs(fr[2] if transpose else fr[1]), initial=0.0))
                Rs.append((bi, R))
            # R: this rank's f rows; which remainder columns are nonzero and the scale are
            # decided on the global maxima (one small Allreduce), the same on every rank
            nz = np.array([np.any(R[:, c] != 0.0) for _, R in Rs for c in range(3)], float)
            red = self.st.rows.allreduce(np.r_[nz, scale], "max")
            nz, scale = red[:-1] > 0, red[-1]
            rem, where = [], []
            for k, (bi, R) in enumerate(Rs):
                for c in range(3):
                    if nz[3 * k + c]:
                        rem.append(R[:, c])
                        where.append(pos[bi[c]])
            Y = Z @ W
            lagged = False
            if rem:
                Yr, lagged = self._rem_solve(np.column_stack(rem), scale, transpose)
                Y[:, where] += Yr
            Cbb = self.Jbb.T if transpose else self.Jbb
            S = Cbb.copy()
            S[np.ix_(rows, cols)] -= self.st.rows.allreduce(Cbf @ Y)      # Y, Cbf: this rank's f rows
            self._Y[transpose] = (Y, np.linalg.inv(S) if nb else S, Cbf, rows, cols, lagged)
        return self._Y[transpose]

    def _apply_tilde(self, r, transpose):
        Y, Sinv, Cbf, rows, cols, _ = self._schur(transpose)
        f, b = self.st.fidx, self.bidx
        fl = f[self.fr0:self.fr1]
        y = self._fsolve(np.ascontiguousarray(r[fl]), transpose, local=True)     # this rank's rows
        t = r[b].copy()
        t[rows] -= self.st.rows.allreduce(Cbf @ y)
        zb = Sinv @ t
        z = np.empty(self.N)
        z[f] = self.st.rows.gather(y - Y @ zb[cols])
        z[b] = zb
        return z

    def _small_rows(self):
        """The other groups' few f × f entries (the pin joint's) as CSR rows [fr0, fr1) of
        the matrix and of its transpose, once per matrix."""
        if self._Aff is None:
            S = sp.csr_matrix((self._Sff, self._ff_ind, self._ff_ptr), shape=(self.st.nf,) * 2)
            self._Aff = (S[self.fr0:self.fr1], S.T.tocsr()[self.fr0:self.fr1])
        return self._Aff

    def matvec(self, z, transpose=False):
        """J z (or Jᵀ z) with the exact matrix.  Its f rows by this rank's row block (the
        structured J_ff as one sparse product per coefficient, the border's U rows or V
        columns) and one gather, which also sums the ranks' parts of the border rows'
        V z_f (Uᵀ z_f); no whole J_ff or border on any rank."""
        f, b = self.st.fidx, self.bidx
        r0, r1 = self.fr0, self.fr1
        out = np.empty(self.N)
        zf, zb = z[f], z[b]
        Sl, Stl = self._small_rows()
        ob = (self.Jbb.T if transpose else self.Jbb) @ zb
        zl = zf[r0:r1]
        if transpose:
            yl = self.Jc.T.ff_product(zf) + Stl @ zf + self.V.T @ zb[self.rset]
            out[f], part = self.st.rows.gather_sum(yl, self.U.T @ zl)
            ob[self.cset] += part
        else:
            yl = self.Jc.ff_product(zf) + Sl @ zf + self.U @ zb[self.cset]
            out[f], part = self.st.rows.gather_sum(yl, self.V @ zl)
            ob[self.rset] += part
        out[b] = ob
        return out

    def solve(self, rhs, transpose=False):
        """z = J⁻¹ rhs (or J⁻ᵀ rhs) to round-off, by refinement on J̃ (module doc)."""
        if np.iscomplexobj(rhs):
            return self.solve(np.ascontiguousarray(rhs.real), transpose) \
                + 1j * self.solve(np.ascontiguousarray(rhs.imag), transpose)
        if not self.exact:
            return self._apply_tilde(rhs, transpose)
        if self.iterative:
            self.ksp.setTolerances(rtol=min(self._rtol, EXACT_KSP_RTOL))
            try:
                z = self._apply_tilde(rhs, transpose)
                return self._certified(self._refine(rhs, z, transpose), rhs, transpose)
            finally:
                self.ksp.setTolerances(rtol=self._rtol)
        return self._refine(rhs, self._apply_tilde(rhs, transpose), transpose)

    def _refine(self, rhs, z, transpose):
        """z ← z + J̃⁻¹(rhs − J z) until the correction, or its estimated remaining error,
        is below REFINE_RTOL of z.  The estimate's contraction θ = |d_k|/|d_{k−1}| takes
        z itself as d₀ (the first application is the correction from z = 0)."""
        prev = np.inf
        first = np.max(np.abs(z))
        for k in range(MAX_REFINE):
            d = self._apply_tilde(rhs - self.matvec(z, transpose), transpose)
            self.nrefine += 1
            z += d
            nd, nz = np.max(np.abs(d)), np.max(np.abs(z))
            if not np.isfinite(nd):
                raise np.linalg.LinAlgError("linear solve failed (refinement diverged)")
            if nd <= REFINE_RTOL * nz:
                return z
            last = prev if prev < np.inf else first
            theta = nd / last if last > 0 else np.inf
            if theta <= REFINE_TRUST and theta / (1.0 - theta) * nd <= REFINE_RTOL * nz:
                return z                     # the estimated error θ/(1−θ)|d| is below the tolerance
            slow = nd > 0.5 * prev or (k >= 2 and nd > REFACTOR_CONTRACTION * prev)
            if slow and nd > 1e-8 * nz:
                if self._Y[transpose][-1]:   # the lagged remainder solve first, never F
                    self._rem.pop(transpose, None)
                    self._Y.pop(transpose, None)
                    return self.solve(rhs, transpose)
                if not self._fresh:
                    self._factor()           # the lagged F is too far from J_ff: refactor here
                    return self.solve(rhs, transpose)
            if nd > 0.5 * prev:
                return z                     # no longer shrinking: round-off level
            prev = nd
        return z

    def _abs_sums(self):
        """This rank's row sums of |K|, |M_k|, |G_k| (also their column sums: M, K symmetric,
        G antisymmetric on one symmetric pattern), once per design."""
        st = self.st
        if getattr(self, "_abs_of", None) != st.version:
            Ml, Gl, Kl, _ = st.local_rows()
            nl = Kl.shape[0]
            row = np.repeat(np.arange(nl), np.diff(Kl.indptr))
            s = lambda A: np.bincount(row, np.abs(A.data), nl)
            self._abs = (s(Kl), [s(M) for M in Ml], [s(G) for G in Gl])
            self._abs_of = st.version
        return self._abs

    def _norm(self):
        """A lower bound of max(‖J‖₁, ‖J‖∞) of the exact matrix, once per matrix.  A lower
        bound makes the backward error of ``_certified`` an over-estimate (its test stays
        safe).  The f rows' and columns' absolute sums of J_ff = cK K + Σ (cM_k M_k + cG_k G_k)
        + S (S: the pin's few f × f entries) from the per-design sums of |K|, |M_k|, |G_k|
        by |a + b| ≥ |a| − |b|: ≥ |cK| Σ|K| − Σ_k (|cM_k| Σ|M_k| + |cG_k| Σ|G_k|) − Σ|S|
        (cK K dominates the rest by ~10⁹, so the bound is ‖J_ff‖ to ~1e-9), plus the
        border's U rows / V columns exactly; this rank's rows, one max-reduction.  O(nf/P)
        per matrix instead of combining the O(nnz) data (0.05 s CPU per adjoint step at 10⁵)."""
        if getattr(self, "_Jnorm_of", None) is not self._data:
            st, Jc = self.st, self.Jc
            r0, r1 = self.fr0, self.fr1
            aK, aM, aG = self._abs_sums()
            low = abs(Jc.cK) * aK
            for k, (_, _, _, _, cM, cG, _) in enumerate(Jc.frames):
                low = low - abs(cM) * aM[k] - abs(cG) * aG[k]
            Sl, Stl = self._small_rows()
            U, V, B = np.abs(self.U), np.abs(self.V), np.abs(self.Jbb)     # U, V: this rank's f rows
            rf = np.maximum(low - np.asarray(abs(Sl).sum(1)).ravel(), 0.0) + U.sum(1)
            cf = np.maximum(low - np.asarray(abs(Stl).sum(1)).ravel(), 0.0) + V.sum(0)
            rb, cb = B.sum(1), B.sum(0)
            sums = st.rows.allreduce(np.r_[V.sum(1), U.sum(0)])
            rb[self.rset] += sums[:len(self.rset)]
            cb[self.cset] += sums[len(self.rset):]
            nrm = max(np.max(rf, initial=0.0), np.max(cf, initial=0.0))
            if st.rows.parallel:
                from mpi4py import MPI
                nrm = st.rows.mpi.allreduce(nrm, op=MPI.MAX)
            self._Jnorm = max(nrm, np.max(rb, initial=0.0), np.max(cb, initial=0.0))
            self._Jnorm_of = self._data
        return self._Jnorm

    def _certified(self, z, rhs, transpose):
        """z when its normwise backward error ‖r − J z‖∞ / (‖J‖ ‖z‖∞ + ‖r‖∞) is at most
        ``BACKWARD_TOL``, else LinAlgError.  The Krylov path's acceptance test: a weak or
        failing inner solve (an F⁻¹ that returns ~0 makes the refinement's corrections
        vanish without solving anything) cannot pass it."""
        res = np.max(np.abs(rhs - self.matvec(z, transpose)), initial=0.0)
        scale = self._norm() * np.max(np.abs(z), initial=0.0) + np.max(np.abs(rhs), initial=0.0)
        eta = res / scale if scale > 0 else 0.0
        self.backward = max(self.backward, eta)
        if not eta <= BACKWARD_TOL:
            raise np.linalg.LinAlgError(f"linear solve failed (backward error {eta:.1e} > {BACKWARD_TOL:g} "
                                        f"after refinement with the Krylov solve of F)")
        return z

    def destroy(self):
        for o in (self.ksp, self.F, self.x, self.b, self._all, self._x_all):
            if o is not None:
                o.destroy()
