"""The FFR continuum's Jacobians as constant sparse matrices with scalar coefficients.

Why.  Evaluating ∂r/∂(q, v, a) of ``ContinuumInertia`` element by element (11 × 11
blocks of 10⁵ elements) and refactoring the assembled (n + m) Newton matrix every
iteration cost ≈ 1 s + 2.5 s per Newton iteration at 10⁵ elements.  For small
deformation in a floating frame (seed 003 §2.1, Eq. 7, 66–70) every block that
couples two elastic coordinates is a combination of three constant matrices with
scalars taken from the frame's motion, and everything else is a border of three
frame rows and columns.

Assembled quantities (c_e the Gauss mass of element e, N_g, J, X_g as in
``continuum.py``; sums over elements and Gauss points, u the elastic coordinates):

    M = Σ c N_gᵀN_g,  G = Σ c N_gᵀ J N_g,  K = Σ x^s E0 K̂_e          (nf × nf, sparse)
    B = Σ c N̄ᵀ (nf × 2),  b_X = Σ c N_gᵀX_g,  b_JX = Σ c N_gᵀ J X_g   (vectors)
    m0 = Σ 4c,  x0 = Σ c X_g,  I0 = Σ c |X_g|²                         (frame scalars)

With S = x0 + Bᵀu (= Σ c s_g), s_u = b_X + M u (= Σ c N_gᵀ s_g), j_u = b_JX + G u
(= Σ c N_gᵀ J s_g), the Jacobians of the inertia residual Σ c L̄_gᵀ ā_g (Eq. 66–70)
are, block by block (R, θ the frame rows/columns, f the elastic ones):

    ∂r/∂a:  RR m0 I, Rθ A J S, θθ I0 + 2b_Xᵀu + uᵀMu, Rf A Bᵀ, θf j_uᵀ, ff M  (symmetric)
    ∂r/∂v:  Rθ A(−2θ̇ S + 2J Bᵀu̇), θθ 2 s_uᵀu̇, fθ −2θ̇ s_u + 2G u̇,
            Rf 2θ̇ A J Bᵀ, θf 2θ̇ s_uᵀ, ff 2θ̇ G
    ∂r/∂q:  Rθ −m0 A J_b + A J Σā, θθ −(J S)·J_b, fθ −B J_b,
            Rf A(θ̈ J − θ̇² I)Bᵀ, θf 2θ̈ s_uᵀ − J_bᵀBᵀ − (G ü)ᵀ + 2θ̇ (M u̇)ᵀ,
            ff θ̈ G − θ̇² M
    with J_b = J AᵀR̈ and Σā = m0 AᵀR̈ + (θ̈ J − θ̇²) S + Bᵀü + 2θ̇ J Bᵀu̇,

and ∂r/∂q of the elastic force is K.  The residual itself is, on the f rows,
M ü + B AᵀR̈ + θ̈ j_u − θ̇² s_u + 2θ̇ G u̇ (+ K u), on the R rows A Σā and on the θ
row (J S)·AᵀR̈ + θ̈ (I0 + 2b_Xᵀu + uᵀMu) + j_uᵀü + 2θ̇ s_uᵀu̇.  These are the same
algebra as ``ContinuumInertia.jacobians`` summed over the mesh (checked against the
element assembly in tests/test_continuum_structured.py); each costs O(nnz) vector
operations instead of O(ne · 121) per evaluation.

Distributed rows (issue 5).  After ``distribute(comm)`` a rank computes only its f rows
[r0, r1) of every O(nnz) product — the seven M u, G u, M u̇, G u̇, G ü, M ü (per frame) and
K u of a state, and the ff block's product in ``StructuredJacobian @`` (Jᵀ by the
symmetry of M, K and the antisymmetry of G: (cK K + cM M + cG G)ᵀ = cK K + cM M − cG G)
— and one Allgatherv per evaluation makes them whole (continuum_split.RowSplit; the
rows are F's MPIAIJ rows in continuum_schur.py).  The O(nf) border arithmetic stays
replicated.
"""
import numpy as np
import scipy.sparse as sp

from .._memory import release
from ..model.assembly import BlockPattern, scatter_add_cols
from .continuum_split import RowSplit
from .continuum import ContinuumInertia, ContinuumElastic, _NG, _NBAR, _CM, _CJ, _GPOS, _cells, _gauss_mass

_J2 = np.array([[0.0, -1.0], [1.0, 0.0]])


def _A(th):
    c, s = np.cos(th), np.sin(th)
    return np.array([[c, -s], [s, c]])


def structured_groups(system):
    """The force groups this module takes over: every ContinuumInertia and ContinuumElastic."""
    return [g for g in system.forces if isinstance(g, (ContinuumInertia, ContinuumElastic))]


class ContinuumStructure:
    """Per-design constant matrices and vectors of every FFR continuum of a system.

    ``fidx``: the unknowns that are elastic continuum coordinates (sorted), the
    "f" set; ``frames``: one (R_x, R_y, θ) unknown triple per continuum.  Matrices are
    scipy CSR in f numbering; M and G per frame (their coefficients depend on the
    frame's θ̇, θ̈), K once."""

    def __init__(self, system, plan):
        self.sys = system
        self.groups = structured_groups(system)
        self.ids = {id(g) for g in self.groups}
        self.inertia = [g for g in self.groups if isinstance(g, ContinuumInertia)]
        self.elastic = [g for g in self.groups if isinstance(g, ContinuumElastic)]
        n = system.n
        rows = {id(g): plan.rows[id(g)] for g in self.groups}
        uf = np.concatenate([rows[id(g)][:, 3:11].ravel() for g in self.inertia]
                            + [rows[id(g)].ravel() for g in self.elastic])
        self.fidx = np.unique(uf[uf >= 0])
        self.nf = len(self.fidx)
        fpos = -np.ones(n, np.int64)
        fpos[self.fidx] = np.arange(self.nf)
        self.fpos = fpos
        fp = lambda r: np.where(r >= 0, fpos[np.maximum(r, 0)], -1)
        # element blocks in f numbering; frames = unique (R, θ) triples
        self.uf_in = [fp(rows[id(g)][:, 3:11]) for g in self.inertia]
        self.uf_el = [fp(rows[id(g)]) for g in self.elastic]
        fr = np.vstack([rows[id(g)][:, 0:3] for g in self.inertia]) if self.inertia else np.zeros((0, 3), np.int64)
        self.frames, inv = np.unique(fr, axis=0, return_inverse=True)
        inv = inv.ravel()
        splits = np.cumsum([g.ne for g in self.inertia])[:-1]
        self.frame_of = np.split(inv, splits)            # per inertia group: frame of each element
        self._pattern = None                 # M, G, K's pattern: this rank's rows, built at set_design
        self._p = None
        self.version = 0
        self.rows = RowSplit(self.nf, None, serial=True)
        self._loc = None
        self._prod = None                    # ``product``'s (version, x, {id(A): A @ x})

    def distribute(self, comm):
        """Compute the O(nnz) products by f rows over the ranks of ``comm`` (a petsc4py
        communicator; the split of continuum_schur.py's F), gathered once per evaluation."""
        rows = RowSplit(self.nf, comm)
        if (rows.r0, rows.r1, rows.size) == (self.rows.r0, self.rows.r1, self.rows.size):
            return                           # already split so (the operators share this structure)
        self.rows = rows
        self._loc, self._last, self._prod = None, None, None
        self._pattern, self._p = None, None  # M, G, K again, by this rank's rows

    @property
    def pattern(self):
        """The pattern of M, G, K: this rank's f rows [r0, r1) and only the elements that
        touch them (BlockPattern ``by_element``), so no rank holds or assembles the whole
        matrices (issue 21 item 3: at 10⁶ elements each is ≈ 36 M entries)."""
        if self._pattern is None:
            self._pattern = BlockPattern(self.nf, [(u, u) for u in self.uf_in] + [(u, u) for u in self.uf_el],
                                         (self.rows.r0, self.rows.r1), by_element=True)
            release()
        return self._pattern

    def local_rows(self):
        """(M_k, G_k per frame, K) of this rank's f rows (CSR, (r1 − r0) × nf), per design."""
        return self.M, self.G, self.K, None

    def _csr(self, data):
        return sp.csr_matrix((data, self.pattern.indices, self.pattern.indptr),
                             shape=(self.rows.r1 - self.rows.r0, self.nf))

    def M_product(self, x):
        """Σ_k M_k x (nf,) whole on every rank: this rank's rows and one gather."""
        return self.rows.gather(sum(M @ x for M in self.M))

    def product(self, A, x):
        """A @ x for one of this design's M_k, G_k, K (this rank's rows), remembered for
        the last x (compared by value): the adjoint step multiplies one ν by ∂r/∂q, ∂r/∂v,
        ∂r/∂a of two states (integrators/newmark.py), nine products of three matrices
        (the same numbers as recomputing each)."""
        c = self._prod
        if c is None or c[0] != self.version or c[1].shape != x.shape or c[1].dtype != x.dtype \
                or not np.array_equal(c[1], x):
            c = self._prod = (self.version, x.copy(), {})
        y = c[2].get(id(A))
        if y is None:
            y = c[2][id(A)] = A @ x
        return y

    def set_design(self, p):
        """Recompute the constant matrices when p changed (once per design)."""
        if self._p is not None and np.array_equal(self._p, p):
            return False
        self._p = p.copy()
        self.version += 1                    # factorizations of older designs are stale
        nf, nk = self.nf, len(self.frames)
        pat, ni = self.pattern, len(self.inertia)
        zin, zel = [None] * ni, [None] * len(self.elastic)       # zero blocks (BlockPattern.values)
        self.M, self.G, self.B, self.bX, self.bJX = [], [], [], [], []
        self.m0, self.x0, self.I0 = np.zeros(nk), np.zeros((nk, 2)), np.zeros(nk)
        for k in range(nk):
            mb, gb = [], []
            B = np.zeros((nf, 2))
            bX, bJX = np.zeros(nf), np.zeros(nf)
            for i, (g, uf, fo) in enumerate(zip(self.inertia, self.uf_in, self.frame_of)):
                P = p[g.pidx]
                c = np.where(fo == k, _gauss_mass(P, g.law), 0.0)
                hx, hy, cx, cy = _cells(P)
                X = np.stack([cx[:, None] + _GPOS[:, 0] * hx[:, None],
                              cy[:, None] + _GPOS[:, 1] * hy[:, None]], -1)          # (ne, 4, 2)
                cl = pat.pick(i, c)          # this rank's rows' elements
                mb.append(cl[:, None, None] * _CM)
                gb.append(cl[:, None, None] * _CJ)
                B += scatter_add_cols(nf, uf, c[:, None, None] * _NBAR.T[None])
                bX += scatter_add_cols(nf, uf, (c[:, None] * np.einsum("gik,egi->ek", _NG, X))[..., None])[:, 0]
                bJX += scatter_add_cols(nf, uf, (c[:, None] * np.einsum("gik,egi->ek", _NG, X @ _J2.T))[..., None])[:, 0]
                self.m0[k] += 4.0 * c.sum()
                self.x0[k] += np.einsum("e,egi->i", c, X)
                self.I0[k] += np.einsum("e,egi,egi->", c, X, X)
            self.M.append(self._csr(self.pattern.values(mb + zel)))
            self.G.append(self._csr(self.pattern.values(gb + zel)))
            self.B.append(B)
            self.bX.append(bX)
            self.bJX.append(bJX)
        kb = []
        for j, g in enumerate(self.elastic):
            fac, Kh = g.stiffness(p[g.pidx])
            kb.append(pat.pick(ni + j, fac)[:, None, None] * (Kh if Kh.shape[0] == 1 else pat.pick(ni + j, Kh)))
        self.K = self._csr(self.pattern.values(zin + kb))
        release()                            # the set-up's freed temporaries back to the OS (_memory.py)
        return True

    def rigid_modes(self, p):
        """The in-plane rigid-body displacements of the elastic coordinates (nf × 3:
        x translation, y translation, rotation about the nodes' centroid), the kernel of
        the unclamped K and the near-null space an algebraic multigrid of the elastic
        block needs (PETSc's MatSetNearNullSpace for GAMG; Vaněk, Mandel & Brezina 1996:
        smoothed aggregation reproduces the kernel on every level).  Node positions from
        the element geometry (continuum.py's _cells; element dofs ll, lr, ur, ul × (x, y))."""
        Z = np.zeros((self.nf, 3))
        X = np.zeros((self.nf, 2))
        corner = np.array([[0, 0], [1, 0], [1, 1], [0, 1]], float)
        for g, uf in zip(self.inertia, self.uf_in):
            hx, hy, cx, cy = _cells(p[g.pidx])
            for c in range(4):
                pos = np.column_stack([cx + corner[c, 0] * hx, cy + corner[c, 1] * hy])
                for i in range(2):
                    d = uf[:, 2 * c + i]
                    ok = d >= 0
                    X[d[ok]] = pos[ok]
                    Z[d[ok], i] = 1.0
        xc = X[Z[:, 0] > 0, 0].mean() if np.any(Z[:, 0] > 0) else 0.0
        yc = X[Z[:, 1] > 0, 1].mean() if np.any(Z[:, 1] > 0) else 0.0
        Z[:, 2] = -(X[:, 1] - yc) * Z[:, 0] + (X[:, 0] - xc) * Z[:, 1]
        return Z

    def basis(self, k, local=False):
        """Φ_k = [B, b_X, b_JX] (nf × 4): the constant part of frame k's border, once per
        design; ``local``: this rank's f rows [r0, r1) of it."""
        key = (self.version, self.rows.r0, self.rows.r1)
        if getattr(self, "_basis_of", None) != key:
            self._basis = [np.column_stack([self.B[j], self.bX[j], self.bJX[j]]) for j in range(len(self.B))]
            self._basis_of = key
        Phi = self._basis[k]
        return Phi[self.rows.r0:self.rows.r1] if local else Phi

    # -- the state-dependent pieces ---------------------------------------------------------
    def frame_state(self, q, v, a):
        """Per frame: dict of θ, θ̇, θ̈, R̈, A, u, u̇, ü restricted to f and the products
        S, s_u, j_u, G u̇ ... used by both the Jacobians and the residual."""
        return self.state_products(q, v, a)[0]

    def state_products(self, q, v, a):
        """(``frame_state``, K u).  Remembered for the last (q, v, a) objects: a StateEval
        asks for the residual, ∂r/∂q, ∂r/∂v … of one state."""
        last = getattr(self, "_last", None)
        if (last is not None and last[3] is self._p and all(x.dtype == y.dtype and np.array_equal(x, y)
                                                             for x, y in zip(last[:3], (q, v, a)))):
            return last[4]                   # (compared by value: callers update a in place)
        out = self._frame_state(q, v, a)
        self._last = (q.copy(), v.copy(), a.copy(), self._p, out)
        return out

    def _frame_state(self, q, v, a):
        """The products on this rank's f rows [r0, r1) only (s_u, j_u, G u̇ … of the dict
        and K u: (r1 − r0,) vectors; issue 21 item 3) — the Jacobian's border needs those
        rows, the residual gathers its f rows once — and the three dot products over all
        f rows the frame rows need (uᵀMu, j_uᵀü, s_uᵀu̇) as this rank's partial sums, made
        whole by one small Allreduce per state (serial: the same sums as before)."""
        f = self.fidx
        u, w, ud = q[f], v[f], a[f]
        r0, r1 = self.rows.r0, self.rows.r1
        ul, wl, udl = u[r0:r1], w[r0:r1], ud[r0:r1]
        Ml, Gl, Kl, _ = self.local_rows()
        loc, dots = [], []
        for k, (M, G) in enumerate(zip(Ml, Gl)):
            Mu, Gu, Mw, Gw, Ga, Ma = M @ u, G @ u, M @ w, G @ w, G @ ud, M @ ud
            su, ju = self.bX[k][r0:r1] + Mu, self.bJX[k][r0:r1] + Gu
            loc.append(dict(Mu=Mu, Gu=Gu, su=su, ju=ju, Gw=Gw, Ga=Ga, Mw=Mw, Ma=Ma))
            dots += [ul @ Mu, ju @ udl, su @ wl]
        dots = self.rows.allreduce(np.array(dots))
        out = []
        for k, (iR0, iR1, ith) in enumerate(self.frames):
            B = self.B[k]
            th, dth, ddth = q[ith], v[ith], a[ith]
            A = _A(th)
            Rdd = a[[iR0, iR1]]
            S = self.x0[k] + B.T @ u
            out.append(dict(idx=(iR0, iR1, ith), th=th, dth=dth, ddth=ddth, A=A, ATR=A.T @ Rdd, S=S,
                            Btw=B.T @ w, Bta=B.T @ ud, SS=self.I0[k] + 2 * self.bX[k] @ u + dots[3 * k],
                            juA=dots[3 * k + 1], suV=dots[3 * k + 2], **loc[k]))
        return out, Kl @ u

    def residual(self, q, v, a, wi, wf, out):
        """Adds wi r_inertia + wf r_elastic of every continuum to ``out`` (n,): the f rows
        on this rank's rows and one Allgatherv."""
        f = self.fidx
        r0, r1 = self.rows.r0, self.rows.r1
        frames, Ku = self.state_products(q, v, a)
        rf = wf * Ku
        for k, s in enumerate(frames):
            iR0, iR1, ith = s["idx"]
            dth, ddth = s["dth"], s["ddth"]
            rf += wi * (s["Ma"] + self.B[k][r0:r1] @ s["ATR"] + ddth * s["ju"] - dth ** 2 * s["su"]
                        + 2 * dth * s["Gw"])
            sa = self.m0[k] * s["ATR"] + ddth * (_J2 @ s["S"]) - dth ** 2 * s["S"] + s["Bta"] + 2 * dth * (_J2 @ s["Btw"])
            out[[iR0, iR1]] += wi * (s["A"] @ sa)
            out[ith] += wi * ((_J2 @ s["S"]) @ s["ATR"] + ddth * s["SS"] + s["juA"] + 2 * dth * s["suV"])
        out[f] += self.rows.gather(rf)
        return out

    def jacobian(self, q, v, a, cq, cv, ca, wi, wf):
        """cq ∂r/∂q + cv ∂r/∂v + ca ∂r/∂a (inertia weighted wi, elastic wf) as a
        ``StructuredJacobian``.  The border's f parts (``col``, ``row``, the remainders
        Rc, Rr) are this rank's f rows [r0, r1) only (issue 21 item 3: no O(nf) border
        arithmetic repeated on every rank); their consumers reduce the few products
        with them over the ranks."""
        return self.weigh(self.jacobian_frames(q, v, a, cq, cv, ca), cq, wi, wf)

    @staticmethod
    def _weigh_frame(fr, wi):
        idx, col, row, ff, cM, cG, (k, Cc, Rc, Cr, Rr) = fr
        return idx, wi * col, wi * row, wi * ff, wi * cM, wi * cG, (k, wi * Cc, wi * Rc, wi * Cr, wi * Rr)

    def weigh(self, frames, cq, wi, wf):
        """The ``StructuredJacobian`` of unweighted ``jacobian_frames`` with the inertia
        weighted wi and the elastic part wf: every weighted entry is wi times the
        unweighted one, as ``jacobian`` computes it, so one border serves every weighting
        of a state (the adjoint step asks for ∂r/∂q and ∂r/∂v of a state twice)."""
        return StructuredJacobian(self, [self._weigh_frame(fr, wi) for fr in frames], wf * cq)

    def jacobian_frames(self, q, v, a, cq, cv, ca):
        """Per frame the unweighted border of ``jacobian``: (idx, col, row, ff, cM, cG,
        (k, Cc, Rc, Cr, Rr)) with the inertia weight 1 (``weigh`` applies the weights)."""
        frames = []
        r0, r1 = self.rows.r0, self.rows.r1
        nl = r1 - r0
        dt = np.result_type(q, v, a)
        for k, s in enumerate(self.frame_state(q, v, a)):
            th, dth, ddth, A, S = s["th"], s["dth"], s["ddth"], s["A"], s["S"]
            JS = _J2 @ S
            Jb = _J2 @ s["ATR"]
            sa = self.m0[k] * s["ATR"] + ddth * JS - dth ** 2 * S + s["Bta"] + 2 * dth * (_J2 @ s["Btw"])
            # border = constant basis Φ = [B, b_X, b_JX] (nf × 4) times coefficients + a
            # state-dependent remainder: col = Φ Cc + Rc (f rows × frame columns),
            # row = (Φ Cr)ᵀ + Rr (frame rows × f columns); the solver reuses F⁻¹Φ
            Cc, Cr = np.zeros((4, 3), dt), np.zeros((4, 3), dt)
            Rc, Rr = np.zeros((nl, 3), dt), np.zeros((3, nl), dt)
            ff = np.zeros((3, 3), dt)
            Gu, Mu, Gw, Ga, Mw = s["Gu"], s["Mu"], s["Gw"], s["Ga"], s["Mw"]     # this rank's rows
            I2 = np.eye(2)
            if ca:                                   # ∂r/∂a
                Cc[0:2, 0:2] += ca * A.T
                Cc[3, 2] += ca
                Rc[:, 2] += ca * Gu
                Cr[0:2, 0:2] += ca * A.T
                Cr[3, 2] += ca
                Rr[2] += ca * Gu
                ff[0:2, 0:2] += ca * self.m0[k] * I2
                ff[0:2, 2] += ca * (A @ JS)
                ff[2, 0:2] += ca * (A @ JS)
                ff[2, 2] += ca * s["SS"]
            if cv:                                   # ∂r/∂v
                ff[0:2, 2] += cv * (A @ (-2 * dth * S + 2 * (_J2 @ s["Btw"])))
                ff[2, 2] += cv * 2 * s["suV"]
                Cc[2, 2] += -2 * dth * cv
                Rc[:, 2] += cv * (-2 * dth * Mu + 2 * Gw)
                Cr[0:2, 0:2] += cv * 2 * dth * (A @ _J2).T
                Cr[2, 2] += cv * 2 * dth
                Rr[2] += cv * 2 * dth * Mu
            if cq:                                   # ∂r/∂q
                ff[0:2, 2] += cq * (-self.m0[k] * (A @ Jb) + A @ (_J2 @ sa))
                ff[2, 2] += cq * (-(JS @ Jb))
                Cc[0:2, 2] += -cq * Jb
                Cr[0:2, 0:2] += cq * (A @ (ddth * _J2 - dth ** 2 * I2)).T
                Cr[2, 2] += cq * 2 * ddth
                Cr[0:2, 2] += -cq * Jb
                Rr[2] += cq * (2 * ddth * Mu - Ga + 2 * dth * Mw)
            Phi = self.basis(k, local=True)
            col = Phi @ Cc + Rc
            row = (Phi @ Cr).T + Rr
            frames.append((s["idx"], col, row, ff, ca - cq * dth ** 2, 2 * cv * dth + cq * ddth,
                           (k, Cc, Rc, Cr, Rr)))
        return frames


class StructuredJacobian:
    """Σ_k (cM_k M_k + cG_k G_k) + cK K on f × f plus, per frame, the dense border:
    f rows × frame columns (``col``), frame rows × f columns (``row``) — both on this
    rank's f rows [r0, r1) only — and the 3 × 3 frame block (``ff``).  Acts on n-vectors
    or (n, k) blocks (``@``, ``.T @``)."""

    def __init__(self, st, frames, cK, transposed=False):
        self.st, self.frames, self.cK, self.transposed = st, frames, cK, transposed
        self.shape = (st.sys.n, st.sys.n)

    @property
    def T(self):
        return StructuredJacobian(self.st, self.frames, self.cK, not self.transposed)

    def scaled(self, c):
        return StructuredJacobian(self.st, [(i, c * a, c * b, c * d, c * e, c * g,
                                             (x[0], c * x[1], c * x[2], c * x[3], c * x[4]))
                                            for i, a, b, d, e, g, x in self.frames], c * self.cK, self.transposed)

    def ff_product(self, xf):
        """This rank's f rows of the f × f block (of its transpose when ``transposed``:
        M, K symmetric, G antisymmetric) times xf (nf,) or (nf, k): cK K xf + Σ_k (cM_k M_k
        ± cG_k G_k) xf as one sparse product per nonzero coefficient.  Not by first
        combining the coefficients into one CSR: its data are ~2·10⁵ × 18 doubles at 10⁵
        elements, the combination several memory passes over them per operator (0.05 s,
        the adjoint step's largest non-solve term), and ∂r/∂v has only its G term."""
        Ml, Gl, Kl, _ = self.st.local_rows()
        sg = -1.0 if self.transposed else 1.0
        terms = [(self.cK, Kl)]
        for k, (_, _, _, _, cM, cG, _) in enumerate(self.frames):
            terms += [(cM, Ml[k]), (sg * cG, Gl[k])]
        y = np.zeros((Kl.shape[0],) + xf.shape[1:], np.result_type(xf, float))
        for c, A in terms:
            if c:
                y += c * self.st.product(A, xf)
        return y

    def __matmul__(self, X):
        """J X (Jᵀ X): the f rows by this rank's row block, the frame rows' border
        products (``row @ x_f``: 3 per frame) as this rank's partial sums, both made
        whole by one Allgatherv (``RowSplit.gather_sum``)."""
        X = np.asarray(X)
        if np.iscomplexobj(X):
            return self @ np.ascontiguousarray(X.real) + 1j * (self @ np.ascontiguousarray(X.imag))
        st = self.st
        f = st.fidx
        r0, r1 = st.rows.r0, st.rows.r1
        out = np.zeros(X.shape, np.result_type(X, float))
        xf = X[f]
        xl = xf[r0:r1]
        yf = self.ff_product(xf)
        part = []
        for idx, col, row, ff, *_ in self.frames:
            idx = list(idx)
            if self.transposed:
                yf += row.T @ X[idx]
                part.append(col.T @ xl)
            else:
                yf += col @ X[idx]
                part.append(row @ xl)
        yw, pw = st.rows.gather_sum(yf, np.array(part) if part else np.zeros((0,) + X.shape[1:]))
        out[f] += yw
        for (idx, col, row, ff, *_), pk in zip(self.frames, pw):
            idx = list(idx)
            out[idx] += pk + (ff.T if self.transposed else ff) @ X[idx]
        return out
