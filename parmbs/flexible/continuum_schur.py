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
"""
import numpy as np
import scipy.sparse as sp

from .._petsc import PETSc
from ..model.assembly import BlockPattern, ColumnSolves, local_size
from .continuum_structured import ContinuumStructure, structured_groups

#: refactor F when one refinement sweep shrinks the correction by less than this
REFACTOR_CONTRACTION = 0.1
#: stop refining when the correction is below this fraction of the solution
REFINE_RTOL = 1e-14
MAX_REFINE = 12
#: refactor before a Newton matrix whose estimated ‖F⁻¹(J_ff − F)‖ exceeds this
LAG_LIMIT = 0.05


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

    def __init__(self, system, plan, comm=None, options_prefix="parmbs_schur_", structure=None):
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
        # F: pattern of M, G, K (+ the other groups' f × f entries), rows split over ranks
        fpos = np.r_[st.fpos, -np.ones(m, np.int64)]
        fp = lambda r: np.where(r >= 0, fpos[np.maximum(r, 0)], -1)
        small_ff = [(fp(r), fp(c)) for r, c in fi + [(r, r) for r, _ in ci]]
        nl, r0 = local_size(st.nf, self.comm)
        self.fr0, self.fr1 = r0, r0 + nl
        blocks = [(u, u) for u in st.uf_in] + [(u, u) for u in st.uf_el] + small_ff
        self.fpat = BlockPattern(st.nf, blocks, (self.fr0, self.fr1))
        self._nstruct = len(st.uf_in) + len(st.uf_el)
        self._small_ff = small_ff
        Fm = PETSc.Mat().createAIJ(((nl, st.nf), (nl, st.nf)), comm=self.comm)
        Fm.setPreallocationCSR((self.fpat.indptr, self.fpat.indices))
        Fm.setOption(PETSc.Mat.Option.NEW_NONZERO_ALLOCATION_ERR, True)
        self.F = Fm
        self.x, self.b = Fm.createVecs()
        self._serial = self.comm.getSize() == 1
        self._all, self._x_all = (None, None) if self._serial else PETSc.Scatter.toAll(self.x)
        ksp = PETSc.KSP().create(self.comm)
        ksp.setOperators(Fm)
        ksp.setType("preonly")
        pc = ksp.getPC()
        pc.setType("lu")
        pc.setFactorSolverType("mumps")
        ksp.setOptionsPrefix(options_prefix)
        ksp.setFromOptions()
        self.ksp = ksp
        self._Fvalid, self._Fversion = False, -1
        self.nfactor = self.nfsolve = self.nrefine = 0
        self._Y, self._Fcache = {}, {}
        self.exact = True        # refine to round-off; the stepper's Newton solves set False
        self._rem_step = None

    # -- matrices ------------------------------------------------------------------------------
    def set_design(self, p):
        self.st.set_design(p)
        if self.st.version != self._Fversion:
            self._Fvalid = False

    def set_newton(self, ev, cq, cv, ca, wi, wf, wh, wgt):
        """The exact Newton matrix at state ``ev`` (a real StateEval with this plan)."""
        self.set_design(ev.p)
        n, N = self.sys.n, self.N
        st = self.st
        vals = []
        for i in self.others:
            g, q, v, a, p = ev.F[i]
            Jq, Jv, Ja = ev._memo(("jac", id(g)), lambda: g.jacobians(ev.t, q, v, a, p))
            B = np.zeros((g.ne, g.nq, g.nq))
            for c, Jx in ((ca, Ja), (cv, Jv), (cq, Jq)):
                if c and Jx is not None:
                    B = B + c * Jx
            vals.append((wi if g.inertial else wf) * B)
        G = ev.phi_q_blocks()
        vals += [wh * H for H in ev.hess_blocks()] + G + [wgt * np.swapaxes(Gb, 1, 2) for Gb in G]
        self.S = sp.csr_matrix((self.small.values(vals), self.small.indices, self.small.indptr), shape=(N, N))
        self._small_vals = vals
        self.Jc = st.jacobian(ev.q, ev.v, ev.a, cq, cv, ca, wi, wf)
        f, b = st.fidx, self.bidx
        self._Sff, self._Aff = self.S[f][:, f], None
        # border, dense: f rows × b columns, b rows × f columns, b × b
        Sf = self.S[f]
        Sb = self.S[b]
        Jfb = Sf[:, b].toarray()
        Jbf = Sb[:, f].toarray()
        Jbb = Sb[:, b].toarray()
        for idx, col, row, ff, *_ in self.Jc.frames:
            bi = self.bpos[list(idx)]
            Jfb[:, bi] += col
            Jbf[bi] += row
            Jbb[np.ix_(bi, bi)] += ff
        self.Jfb, self.Jbf, self.Jbb = Jfb, Jbf, Jbb
        self.Sfb, self.Sbf = Sf[:, b].tocsc(), Sb[:, f].tocsr()
        self._Y = {}
        self._fresh = False
        if self._Fvalid and self._lag_estimate() > LAG_LIMIT:
            self._Fvalid = False
        if not self._Fvalid:
            self._factor()

    def invalidate(self):
        """Refactor F at the next Newton matrix."""
        self._Fvalid = False

    def begin_step(self):
        """A new time step's Newton loop (inexact solves): forget the lagged border solve."""
        self._rem_step = None

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
            y = self._fsolve(sum(M @ x for M in st.M))
            r = np.linalg.norm(y)
            if r == 0.0 or not np.isfinite(r):
                return np.inf
            x = y / r
        return r

    def _factor(self):
        """F = the current J_ff (structured blocks by element, once per refactor)."""
        st = self.st
        vals = []
        for g, uf, fo in zip(st.inertia, st.uf_in, st.frame_of):
            cMe = np.array([fr[4] for fr in self.Jc.frames])[fo]
            cGe = np.array([fr[5] for fr in self.Jc.frames])[fo]
            from .continuum import _gauss_mass, _CM, _CJ
            c = _gauss_mass(st._p[g.pidx], g.law)
            vals.append((c * cMe)[:, None, None] * _CM + (c * cGe)[:, None, None] * _CJ)
        for g in st.elastic:
            fac, Kh = g.stiffness(st._p[g.pidx])
            vals.append(self.Jc.cK * fac[:, None, None] * Kh)
        vals += self._small_vals[:len(self._small_ff)]
        data = self.fpat.values(vals)
        self.F.setValuesCSR(self.fpat.indptr, self.fpat.indices, data)
        self.F.assemble()
        self._Fvalid = True
        self._Fversion = self.st.version
        self._fresh = True                   # F = J_ff of the current matrix
        self.nfactor += 1
        self._Y = {}
        self._Fcache = {}
        self._rem_step = None
        self._cF = self._coefficients()
        self._rho = self._probe()

    def _fsolve(self, R, transpose=False):
        """F⁻¹ R (or F⁻ᵀ R) for an (nf,) or (nf, k) numpy array, replicated."""
        if R.ndim == 2:
            return np.stack([self._fsolve(R[:, j], transpose) for j in range(R.shape[1])], 1) \
                if R.shape[1] else np.zeros_like(R)
        self.b.setArray(R[self.fr0:self.fr1])
        try:
            (self.ksp.solveTranspose if transpose else self.ksp.solve)(self.b, self.x)
        except PETSc.Error as e:
            raise np.linalg.LinAlgError(f"linear solve failed (PETSc error {e.ierr})") from None
        if self.ksp.getConvergedReason() < 0:
            raise np.linalg.LinAlgError(f"linear solve failed (KSP reason {self.ksp.getConvergedReason()})")
        self.nfsolve += 1
        if self._serial:
            return self.x.getArray(readonly=True).copy()
        self._all.scatter(self.x, self._x_all, addv=PETSc.InsertMode.INSERT, mode=PETSc.ScatterMode.FORWARD)
        return self._x_all.getArray(readonly=True).copy()

    def _cached(self, key, transpose, make):
        """F⁻¹ (or F⁻ᵀ) of a constant right-hand side, solved once per factorization."""
        k = (key, transpose)
        if k not in self._Fcache:
            self._Fcache[k] = self._fsolve(make(), transpose)
        return self._Fcache[k]

    def _unit(self, i, transpose):
        def e():
            x = np.zeros(self.st.nf)
            x[i] = 1.0
            return x
        return self._cached(("e", int(i)), transpose, e)

    def _schur(self, transpose):
        """(Y, S̃⁻¹, the b × f border) for J̃ (or J̃ᵀ), once per matrix.  Y = F⁻¹ J_fb
        column by column from parts: the other groups' few f entries (F⁻¹ e_i, cached),
        the frames' constant basis (F⁻¹Φ, cached) and one solve for the frames'
        state-dependent remainder — one F solve per Newton matrix instead of one per
        border column."""
        if transpose not in self._Y:
            nf, nb = self.st.nf, self.nb
            Y = np.zeros((nf, nb))
            Sfb = (self.Sbf.T.tocsc() if transpose else self.Sfb)       # f × b sparse part
            for j in range(nb):
                lo, hi = Sfb.indptr[j], Sfb.indptr[j + 1]
                for i, val in zip(Sfb.indices[lo:hi], Sfb.data[lo:hi]):
                    if val != 0.0:
                        Y[:, j] += val * self._unit(i, transpose)
            rem, where = [], []
            for idx, col, row, ff, cM, cG, (k, Cc, Rc, Cr, Rr) in self.Jc.frames:
                bi = self.bpos[list(idx)]
                C, R = (Cr, Rr.T) if transpose else (Cc, Rc)
                Y[:, bi] += self._cached(("basis", k), transpose, lambda: self.st.basis(k)) @ C
                for c in range(3):
                    if np.any(R[:, c] != 0.0):
                        rem.append(R[:, c])
                        where.append(bi[c])
            if rem:
                if not self.exact and not transpose and self._rem_step is not None:
                    # later Newton iterations of a step: the border's state-dependent part
                    # moved by O(Newton update); its F-solve from the step's first
                    # iteration keeps J̃ within that of J (Newton needs no exact matrix)
                    Yr = self._rem_step
                else:
                    Yr = self._fsolve(np.column_stack(rem), transpose)
                    if not self.exact and not transpose:
                        self._rem_step = Yr
                Y[:, where] += Yr
            Cbf, Cbb = (self.Jfb.T, self.Jbb.T) if transpose else (self.Jbf, self.Jbb)
            nz = np.nonzero(np.any(Y != 0.0, axis=0))[0]
            S = Cbb.copy()
            S[:, nz] -= Cbf @ Y[:, nz]
            self._Y[transpose] = (Y, np.linalg.inv(S) if nb else S, Cbf)
        return self._Y[transpose]

    def _apply_tilde(self, r, transpose):
        Y, Sinv, Cbf = self._schur(transpose)
        f, b = self.st.fidx, self.bidx
        y = self._fsolve(np.ascontiguousarray(r[f]), transpose)
        zb = Sinv @ (r[b] - Cbf @ y)
        z = np.empty(self.N)
        z[f] = y - Y @ zb
        z[b] = zb
        return z

    def matvec(self, z, transpose=False):
        """J z (or Jᵀ z) with the exact matrix."""
        f, b = self.st.fidx, self.bidx
        out = np.empty(self.N)
        if self._Aff is None:                 # J_ff, assembled when an exact solve needs it
            self._Aff = self.Jc.ff_matrix() + self._Sff
        if transpose:
            out[f] = self._Aff.T @ z[f] + self.Jbf.T @ z[b]
            out[b] = self.Jfb.T @ z[f] + self.Jbb.T @ z[b]
        else:
            out[f] = self._Aff @ z[f] + self.Jfb @ z[b]
            out[b] = self.Jbf @ z[f] + self.Jbb @ z[b]
        return out

    def solve(self, rhs, transpose=False):
        """z = J⁻¹ rhs (or J⁻ᵀ rhs) to round-off, by refinement on J̃ (module doc)."""
        if np.iscomplexobj(rhs):
            return self.solve(np.ascontiguousarray(rhs.real), transpose) \
                + 1j * self.solve(np.ascontiguousarray(rhs.imag), transpose)
        z = self._apply_tilde(rhs, transpose)
        if not self.exact:
            return z
        prev = np.inf
        for k in range(MAX_REFINE):
            d = self._apply_tilde(rhs - self.matvec(z, transpose), transpose)
            self.nrefine += 1
            z += d
            nd, nz = np.max(np.abs(d)), np.max(np.abs(z))
            if not np.isfinite(nd):
                raise np.linalg.LinAlgError("linear solve failed (refinement diverged)")
            if nd <= REFINE_RTOL * nz:
                return z
            slow = nd > 0.5 * prev or (k >= 2 and nd > REFACTOR_CONTRACTION * prev)
            if slow and nd > 1e-8 * nz and not self._fresh:
                self._factor()               # the lagged F is too far from J_ff: refactor here
                return self.solve(rhs, transpose)
            if nd > 0.5 * prev:
                return z                     # no longer shrinking: round-off level
            prev = nd
        return z

    def destroy(self):
        for o in (self.ksp, self.F, self.x, self.b, self._all, self._x_all):
            if o is not None:
                o.destroy()
