"""Modal reduction of a floating-frame continuum and its exact design sensitivities.

Reference condition and basis.  The body is the full-order FFR continuum of
``continuum.py``/``continua.py``: the nodes within ``clamp_radius`` of the frame
origin are clamped (the frame is attached to the hub).  The reduction basis is the
first K eigenmodes of the body clamped at the hub (fixed-interface normal modes):

    K_ff(ρ) φ_i = λ_i M_ff(ρ) φ_i,   φ_iᵀ M_ff φ_i = 1,   λ_1 < … < λ_K < λ_{K+1},

K_ff = Σ_e x_e^s E0 K̂_e, M_ff = Σ_e m_e(x_e) C_M (the consistent mass of the Gauss
masses, continuum.py).  The sign of φ_i is chosen by a fixed probe vector
(``_sign_probe``; locally constant, so it does not enter the derivative), and ``vjp``
refuses data in p that are not those of its basis.  Dense ``scipy.linalg.eigh`` for
n_f ≤ ``DENSE_MAX``, else ARPACK shift-invert about 0 (``eigsh`` with a fixed start
vector on one SuperLU factorization of K_ff, shared with the attachment modes and the
mode solves below; SLEPc was not needed for K ≤ a few dozen modes).

Attachment modes (``reduction.attachment = true``, Craig–Bampton-type static modes):
the static responses Ψ = K_ff⁻¹ E to unit forces at the free joint nodes (E: unit
columns at their two dofs), made M-orthogonal to the kept eigenmodes (residual
attachment modes Ψ_r = Ψ − Φ ΦᵀMΨ, so M̂ stays well conditioned: cond 1.4 instead of
1e8 on the 8 × 3 crank) and scaled by constants fixed at the nominal design.
V = [Φ, Ψ_r s]: K + 2·(joint nodes) modal coordinates.  Their sensitivities: δΨ =
−K⁻¹ δK Ψ (one solve with the factorization of K_ff) and the product rule through
Ψ_r; the adjoint pulls Ψ̄ back with one K_ff solve per column.

Body data D(ρ) (modal_components.py): m, S0, I0, S̄, b, a, M̂, Ĝ, K̂ and the node rows
Φ_k of the joint nodes — every one an element sum of m_e or x_e^s E0 times a
polynomial in V (degree ≤ 2), written once in ``_data`` (complex-safe).

Sensitivities.  Per mode (simple eigenvalue) the derivative of the eigenpair along
δρ solves the bordered system (small bodies: a dense LU of B_i, reused by both
directions; large ones: the deflated CG of ``_deflated_solve`` on the one K_ff LU):

    B_i = [K − λ_i M, Mφ_i; (Mφ_i)ᵀ, 0],
    forward (Nelson's method in bordered form):
        B_i [v; μ] = [−(δK − λ_i δM) φ_i; 0],  δλ_i = −μ,  δφ_i = v − ½(φ_iᵀ δM φ_i) φ_i
    adjoint (one solve per mode for a cotangent φ̄_i):
        B_i [w; μ] = [φ̄_i; 0],  φ̄_iᵀ δφ_i = −wᵀ(δK − λ_i δM)φ_i − ½(φ̄_iᵀφ_i) φ_iᵀδMφ_i,

both element-local in δK, δM (δK = Σ δ(x_e^s E0) K̂_e ...).  ``jvp`` pushes δρ through
(δφ, δm_e, δk_e) into D by a complex step of ``_data`` (polynomial: exact); ``vjp``
pulls D̄ back by hand (explicit terms + V̄, then the eigen-adjoint).  ``jvp`` = ``vjp``ᵀ
is checked to round-off in tests/test_modal_reduction.py.

Repeated or crossing eigenvalues: B_i is singular when λ_i is repeated, and the
truncated basis is not differentiable when λ_K = λ_{K+1}.  Any relative gap
|λ_{i+1} − λ_i|/λ_{i+1} < ``GAP_MIN`` among λ_1..λ_{K+1} is refused (ModelError naming
the modes): the derivative would be amplified by 1/gap (symmetric structures need a
symmetry-adapted choice of K).
"""
import contextlib

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ..model.system import ModelError
from .continuum import _NG, _CM, _CJ, _GPOS, unit_stiffness
from .plate import density_factor
from .modal_components import inertia_layout
from .modal_factor import factor

ELEMENT_CHUNK = 131072    # elements per block of the element loops (_chunks): one block up to 1.3·10⁵

DENSE_MAX = 1500          # free dofs up to which the dense eigensolver is used
GAP_MIN = 1e-6            # refused relative eigenvalue gap (module docstring)
_PARAMS = ("E", "nu", "thickness", "rho0", "penalization", "Lx", "Ly", "X0", "Y0")
_J = np.array([[0.0, -1.0], [1.0, 0.0]])


class ModalBasis:
    """Basis, body data and their sensitivities of one floating-frame mesh body, whatever
    its element: the eigenproblem, the attachment modes, Nelson's method and its adjoint
    (module docstring).  A subclass supplies the element: ``dof`` (displacement
    components per node), ``CM`` (Σ_g N_gᵀN_g of one element), ``PARAMS`` (the scalar
    parameters read, in ``pidx``), ``_body(p)`` -> (g, X_g, K̂, w) (material/geometry
    numbers, Gauss positions, unit stiffness, Gauss mass per unit density), and the body
    data ``_data``/``_data_bar``/``_ninertia`` (its reduced equations' "standard input
    data" and their pull-back).  ``key`` is the config path of the body (messages)."""
    dof, CM, PARAMS = 2, None, ()

    def _setup(self, key, name, modes, law, nel, clamped, enodes, attach, pidx):
        self.key, self.name, self.K, self.law = key, name, int(modes), law
        d = self.dof
        nfree = int((~clamped).sum())
        self.nf = d * nfree
        if self.K > self.nf:
            raise ModelError(f"{key}.reduction.modes",
                             f"{self.K} modes exceed the body's {self.nf} elastic coordinates")
        self.nel = nel
        fidx = -np.ones(len(clamped), np.int64)
        fidx[~clamped] = np.arange(nfree)
        f = fidx[enodes]                                                    # (nel, nodes)
        edof = (d * f[..., None] + np.arange(d)).reshape(nel, -1)
        self.edof = np.where(np.repeat(f, d, -1) >= 0, edof, self.nf)       # clamped -> dummy row nf
        self.fidx = fidx
        # attachment modes: static responses to unit forces at the free joint nodes
        self.attach = [int(k) for k in dict.fromkeys(attach) if fidx[k] >= 0]
        self.adofs = np.array([d * fidx[k] + i for k in self.attach for i in range(d)], np.int64)
        self.nb = self.K + len(self.adofs)                       # basis size = modal coordinates
        self._ascale = None
        if self.nb > self.nf:
            raise ModelError(f"{key}.reduction.modes",
                             f"{self.K} modes and {len(self.adofs)} attachment modes exceed the body's "
                             f"{self.nf} elastic coordinates")
        self.pidx = pidx
        self.points = []                                           # node numbers k with Φ_k data
        self._cache = None
        self._seed = None                                          # a stored body (modal_io.py, ``seed``)

    # -- material and matrices ------------------------------------------------------------------
    def _factors(self, x, g, w):
        """(m_e, k_e) = (ρ(x) w, x^s E0) and their x-derivatives (complex-safe in x);
        w the Gauss mass of a full element."""
        s = g["penalization"]
        xr = np.real(x)
        dfac = density_factor(xr + 1j * 1e-30, self.law).imag / 1e-30
        return (density_factor(x, self.law) * w, x ** s * g["E"], dfac * w, s * xr ** (s - 1.0) * g["E"])

    def _assemble(self, me, ke, Ku):
        """(K_ff, M_ff) as CSC, by blocks of ``ELEMENT_CHUNK`` elements (one block, the
        whole COO at once, up to that size; above it the blocks' matrices are summed, so
        the COO temporaries stay O(block) — 10⁶ elements: 4 GB otherwise)."""
        n, ne = self.nf, self.edof.shape[1]
        Kf = Mf = None
        for a, b in _chunks(self.nel):
            edof = self.edof[a:b]
            rows = np.repeat(edof, ne, 1).ravel()
            cols = np.tile(edof, (1, ne)).ravel()
            keep = (rows < n) & (cols < n)

            def mat(fac, E):
                vals = (fac[a:b, None, None] * E).reshape(-1)
                return sp.csc_matrix((vals[keep], (rows[keep], cols[keep])), shape=(n, n))
            k, m = mat(ke, Ku), mat(me, self.CM)
            Kf, Mf = (k, m) if Kf is None else (Kf + k, Mf + m)
        return Kf, Mf

    def _sign_probe(self):
        """w with sign(wᵀφ_i) fixing the sign of φ_i: fixed pseudo-random entries, so
        wᵀφ_i = 0 (a sign tie) is not met in practice, unlike a largest-entry rule, which
        ties on symmetric modes and flipped a mode between two solves of one design."""
        if getattr(self, "_w", None) is None:
            self._w = np.random.default_rng(2).standard_normal(self.nf)
        return self._w

    # -- eigenpairs ---------------------------------------------------------------------------------
    def state(self, p):
        """Eigenpairs and factors at the (real) densities of p, cached on the last one."""
        x = np.real(np.asarray(p)[self.pidx["density"]]).astype(float)
        key = (x.tobytes(), np.real(np.asarray(p)[[self.pidx[k] for k in self.PARAMS]]).tobytes())
        if self._cache is not None and self._cache["key"] == key:
            return self._cache
        self._cache = None           # the old design's matrices and factor go before the new ones come
        g, Xg, Ku, w = self._body(p)
        me, ke, dme, dke = self._factors(x, g, w)
        Kf, Mf = self._assemble(me, ke, Ku)
        seed = self._seed
        seeded = seed is not None and seed["density"].tobytes() == x.tobytes() and all(
            seed["parameters"][i] == g[k] for i, k in enumerate(self.PARAMS))
        if seeded:           # the body loaded from a file at exactly these numbers (modal_io.py)
            lam, Phi, lam_next, Kfac = seed["lambda"], seed["Phi"], float(seed["lambda_next"]), None
        else:
            lam, Phi, lam_next, Kfac = self._eigenpairs(Kf, Mf)
        st = dict(key=key, x=x, g=g, Xg=Xg, me=me, ke=ke, dme=dme, dke=dke, Ku=Ku, Kf=Kf, Mf=Mf,
                  lam=lam, Phi=Phi, lam_next=lam_next, lu={})
        st["V"] = st["Phi"]
        if Kfac is not None:
            st["Kfac"] = Kfac
        if len(self.adofs):
            # Ψ = K_ff⁻¹ E (E: unit loads at the joint nodes' dofs), scaled by constants
            # s_j = 1/√(ψ_jᵀMψ_j) fixed at the first (nominal) design: design-independent
            if seeded:
                Psi = seed["Psi"]
            else:
                E = np.zeros((self.nf, len(self.adofs)))
                E[self.adofs, np.arange(len(self.adofs))] = 1.0
                Psi = np.ascontiguousarray(_kfac(st).solve(E))
            st["Psi"] = Psi
            Pr = _residual(st["Phi"], Mf, Psi)
            if self._ascale is None:
                self._ascale = 1.0 / np.sqrt(np.einsum("ij,ij->j", Pr, Mf @ Pr))
            st["V"] = np.hstack([st["Phi"], Pr * self._ascale])
        self._cache = st
        return st

    def _eigenpairs(self, Kf, Mf):
        """(λ_1..λ_K+1, Φ M-normalized and sign-fixed, λ_K+1, the K_ff LU or None); refuses
        coinciding eigenvalues (module docstring)."""
        K = self.K
        nk = min(K + 1, self.nf)                 # λ_{K+1} for the gap check (all modes: none)
        Kfac = None
        if self.nf <= DENSE_MAX:
            lam, Phi = sla.eigh(Kf.toarray(), Mf.toarray(), subset_by_index=[0, nk - 1])
        else:
            v0 = np.random.default_rng(1).uniform(0.5, 1.5, self.nf)        # fixed: same input, same bytes
            Kfac = factor(Kf)                          # shared: shift-invert, attachment modes, mode solves
            OPinv = spla.LinearOperator(Kf.shape, matvec=Kfac.solve, dtype=float)
            lam, Phi = spla.eigsh(Kf, k=nk, M=Mf, sigma=0.0, which="LM", v0=v0, OPinv=OPinv)
            o = np.argsort(lam)
            lam, Phi = lam[o], Phi[:, o]
        Phi = Phi / np.sqrt(np.einsum("ik,ik->k", Phi, Mf @ Phi))
        Phi = Phi * np.sign(self._sign_probe() @ Phi)
        gap = np.diff(lam) / lam[1:]
        bad = np.nonzero(gap < GAP_MIN)[0]
        if len(bad):
            i = int(bad[0])
            raise ModelError(f"{self.key}.reduction.modes",
                             f"eigenvalues {i + 1} and {i + 2} of the clamped body coincide (relative gap "
                             f"{gap[i]:.1e} < {GAP_MIN:g}): the modal basis is not differentiable there — "
                             "choose K so that λ_K and λ_K+1 are distinct (repeated modes are refused)")
        # C-ordered, as a loaded basis is (modal_io.py): the same bytes in the same layout
        return (np.ascontiguousarray(lam[:K]), np.ascontiguousarray(Phi[:, :K]), (lam[K] if nk > K else np.inf),
                Kfac)

    def seed(self, sid):
        """Use the basis of a stored body (modal_io.py) at its densities and material,
        and its attachment scale everywhere (a constant of its nominal design)."""
        self._seed = sid
        if len(self.adofs):
            self._ascale = np.asarray(sid["attachment_scale"], float)
        self._cache = None

    def _mode_solve(self, st, i, r):
        """w of the bordered system B_i [w; μ] = [r; 0] (module docstring):
        (K − λ_i M) w = r − (φ_iᵀr) M φ_i,  φ_iᵀ M w = 0.  Small bodies: a dense LU of B_i;
        large ones (or ``force_deflated``, for the test that compares the two):
        ``_deflated_solve`` with the one factorization of K_ff."""
        if self.nf > DENSE_MAX or getattr(self, "force_deflated", False):
            return _deflated_solve(st, r[:, None], np.array([i]))[:, 0]
        if i not in st["lu"]:
            Mphi = st["Mf"] @ st["Phi"][:, i]
            A = st["Kf"] - st["lam"][i] * st["Mf"]
            B = sp.bmat([[A, sp.csc_matrix(Mphi[:, None])], [sp.csr_matrix(Mphi[None, :]), None]], format="csc")
            st["lu"][i] = sla.lu_factor(B.toarray())
        return sla.lu_solve(st["lu"][i], np.append(r, 0.0))[:-1]

    def _mode_solves(self, st, R):
        """``_mode_solve`` for every mode i with right-hand side R[:, i]: the deflated CGs
        run in lockstep, so each iteration is one multi-RHS K_ff solve (3× cheaper per
        column than single solves at 10⁵ elements)."""
        if self.nf > DENSE_MAX or getattr(self, "force_deflated", False):
            return _deflated_solve(st, R, np.arange(R.shape[1]))
        return np.stack([self._mode_solve(st, i, R[:, i]) for i in range(R.shape[1])], 1)

    # -- data -------------------------------------------------------------------------------------------
    def _elem(self, V):
        """V (nf, K) -> per-element rows (nel, dofs per element, K) (clamped rows zero); of
        the elements of the current block only inside ``_block``."""
        Vz = np.concatenate([V, np.zeros((1, V.shape[1]), V.dtype)], 0)
        blk = getattr(self, "_blk", None)
        return Vz[self.edof if blk is None else self.edof[blk]]

    @contextlib.contextmanager
    def _block(self, a, b):
        """Element-loop block [a, b): ``_elem`` gives its elements' rows only."""
        self._blk = slice(a, b)
        try:
            yield
        finally:
            self._blk = None

    def _data_all(self, st, me, ke, V):
        """``_data`` by blocks of ``ELEMENT_CHUNK`` elements: one call (the same bits) up to
        that size, else the element sums of every block added (inertia and stiffness
        blocks of D are element sums, the point rows are not) — the per-element
        temporaries (nel × dofs × K each, 0.8 GB at 10⁶ elements, K = 12) stay O(block)."""
        if self.nel <= ELEMENT_CHUNK:
            return self._data(st, me, ke, V)
        ni, nk, _ = self.layout()
        D = None
        for a, b in _chunks(self.nel):
            with self._block(a, b):
                Dc = self._data(_st_block(st, a, b), me[a:b], ke[a:b], V)
            if D is None:
                D = Dc
            else:
                D[:ni + nk] = D[:ni + nk] + Dc[:ni + nk]
        return D

    def _node_rows(self, V, k):
        """Φ_k (dof, K): the node's rows of V (zero for a clamped node)."""
        f, d = self.fidx[k], self.dof
        if f < 0:
            return np.zeros((d, V.shape[1]), V.dtype)
        return V[d * f:d * f + d]

    def _with_points(self, V, inertia, Kh):
        """The flat D: inertia block, K̂ = Vᵀ K_ff V (flattened), then Φ_k of every data point."""
        pts = [self._node_rows(V, k).ravel() for k in self.points]
        return np.concatenate([inertia, Kh.ravel(), *pts])

    def layout(self):
        """(inertia block size, stiffness block size, point block size) of the flat D."""
        return self._ninertia(), self.nb ** 2, self.dof * self.nb

    def register_data(self, P):
        """Enter the body data (inertia, stiffness blocks) into p at the nominal parameters:
        entries ``<KEY.reduced.*[k]>`` (not config paths: they are driven by the densities,
        sensitivity/design.py).  Returns their indices (inertia, stiffness)."""
        D = self.data(np.array(P.values))
        ni, nk, _ = self.layout()
        base = f"<{self.key}.reduced"
        ip = np.array([P.add(f"{base}.inertia[{k}]>", D[k]) for k in range(ni)], np.int64)
        kp = np.array([P.add(f"{base}.stiffness[{k}]>", D[ni + k]) for k in range(nk)], np.int64)
        self.data_index = np.concatenate([ip, kp])
        self.point_p = {}
        return ip, kp

    def node_data(self, P, k):
        """Parameter indices of Φ_k (dof·K) of node k (entered on first use)."""
        if k not in self.point_p:
            self.points.append(k)
            rows = self._node_rows(self.state(np.array(P.values))["V"], k).ravel()
            self.point_p[k] = np.array([P.add(f"<{self.key}.reduced.node[{k}][{m}]>", v) for m, v in enumerate(rows)],
                                       np.int64)
            self.data_index = np.concatenate([self.data_index, self.point_p[k]])
        return self.point_p[k]

    def data(self, p):
        """D at p; a complex p (complex step in the densities) gives D(Re) + i·δD[Im ρ]/h·h,
        exact to first order in the imaginary part (which is what the complex step reads)."""
        st = self.state(p)
        D = self._data_all(st, st["me"], st["ke"], st["V"])
        x = np.asarray(p)[self.pidx["density"]]
        if np.iscomplexobj(x) and np.any(x.imag != 0):
            h = np.max(np.abs(x.imag))
            D = D + 1j * h * self.jvp(p, x.imag / h)
        return D

    # -- forward sensitivities ---------------------------------------------------------------------
    def eig_jvp(self, st, dx):
        """(δλ (K,), δΦ (nf, K), δm_e, δk_e) along δρ = dx."""
        dme, dke = st["dme"] * dx, st["dke"] * dx
        dK, dM = self._assemble(dme, dke, st["Ku"])
        Phi, lam = st["Phi"], st["lam"]
        dMP = dM @ Phi
        F = -(dK @ Phi - dMP * lam)
        dlam = -np.einsum("ij,ij->j", Phi, F)                               # = −μ
        dPhi = self._mode_solves(st, F) - 0.5 * np.einsum("ij,ij->j", Phi, dMP) * Phi
        return dlam, dPhi, dme, dke

    def jvp(self, p, dx):
        """δD along δρ = dx (nel,): the eigen-derivatives, then a complex step of ``_data``."""
        st = self.state(p)
        _, dPhi, dme, dke = self.eig_jvp(st, np.asarray(dx, float))
        dV = dPhi
        h = 1e-30
        if len(self.adofs):                                     # δΨ = −K⁻¹ δK Ψ, then δ(residual)
            dK, dM = self._assemble(dme, dke, st["Ku"])
            dPsi = -_kfac(st).solve(dK @ st["Psi"])
            Prc = _residual(st["Phi"] + 1j * h * dPhi, st["Mf"] + 1j * h * dM, st["Psi"] + 1j * h * dPsi)
            dV = np.hstack([dPhi, Prc.imag / h * self._ascale])
        Dc = self._data_all(st, st["me"] + 1j * h * dme, st["ke"] + 1j * h * dke, st["V"] + 1j * h * dV)
        return Dc.imag / h

    def jacobian(self, p, cols=None):
        """dD/dρ (nD, ncols) by ``jvp`` per density column (small models: direct method, history)."""
        cols = np.arange(self.nel) if cols is None else np.asarray(cols)
        out = []
        for e in cols:
            dx = np.zeros(self.nel)
            dx[e] = 1.0
            out.append(self.jvp(p, dx))
        return np.array(out).T

    # -- adjoint -----------------------------------------------------------------------------------------
    def vjp(self, p, Dbar):
        """ρ̄ = (dD/dρ)ᵀ D̄ (nel,): explicit terms in (m_e, k_e) and V̄ from every
        V-dependent datum (``_data_bar``), then one bordered solve per mode (module docstring)."""
        st = self.state(p)
        D = self._data_all(st, st["me"], st["ke"], st["V"])
        Dp = np.real(np.asarray(p)[self.data_index])
        ni, nk, npt = self.layout()
        cuts = np.cumsum([0, ni, nk] + [npt] * len(self.points))
        if any(np.max(np.abs(D[a:b] - Dp[a:b]), initial=0.0) > 1e-8 * np.max(np.abs(D[a:b]), initial=0.0)
               for a, b in zip(cuts[:-1], cuts[1:])):            # per block: a flipped mode shows in S̄, Φ_k
            raise RuntimeError(f"{self.key}: the reduced body data in p are not those of the basis at "
                               "its densities (p was not made by DesignSpace.apply)")
        K, V, d = self.nb, st["V"], self.dof
        Db = np.asarray(Dbar, float)
        # by blocks of elements (one block up to ELEMENT_CHUNK: the same operations per
        # element in the same order, so the same bits); pass 1: explicit terms and V̄
        meb, keb = np.empty(self.nel), np.empty(self.nel)
        Vb = np.zeros((self.nf + 1, K))
        for a, b in _chunks(self.nel):
            with self._block(a, b):
                meb[a:b], keb[a:b], Veb = self._data_bar(_st_block(st, a, b), self._elem(V), Db[:ni],
                                                         Db[ni:ni + nk].reshape(K, K))
            np.add.at(Vb, self.edof[a:b], Veb)
            del Veb
        Vb = Vb[:self.nf]
        off = ni + nk
        for k in self.points:
            f = self.fidx[k]
            if f >= 0:
                Vb[d * f:d * f + d] += Db[off:off + npt].reshape(d, K)
            off += npt
        # attachment modes: Ψ_r = Ψ − Φ C, C = ΦᵀMΨ (R̄ the cotangent of Ψ_r): Ψ̄ = R̄ + MΦC̄,
        # Φ̄ −= R̄Cᵀ − MΨC̄ᵀ, C̄ = −ΦᵀR̄, m̄_e += ⟨C̄, Φ_eᵀC_MΨ_e⟩; then Ψ = K⁻¹E: Z = K⁻¹Ψ̄
        # (K symmetric), k̄_e −= Σ_j z_jᵀ K̂_e ψ_j
        if len(self.adofs):
            Phi, Psi, Mf = st["Phi"], st["Psi"], st["Mf"]
            Rb = Vb[:, self.K:] * self._ascale
            C = Phi.T @ (Mf @ Psi)
            Cb = -Phi.T @ Rb
            Pb = Rb + Mf @ (Phi @ Cb)
            Vb[:, :self.K] += -Rb @ C.T + (Mf @ Psi) @ Cb.T
            z1 = np.zeros((1, Psi.shape[1]))
            Psz = np.vstack([Psi, z1])
            Zz = np.vstack([_kfac(st).solve(Pb), z1])
        # eigen-adjoint: one bordered solve per mode
        Wall = np.vstack([self._mode_solves(st, Vb[:, :self.K]), np.zeros((1, self.K))])
        pbphi = [Vb[:, i] @ V[:, i] for i in range(self.K)]          # (the first K columns of V: Φ)
        for a, b in _chunks(self.nel):                              # pass 2: per-element terms
            edof = self.edof[a:b]
            with self._block(a, b):
                Ve = self._elem(V)
            if len(self.adofs):
                Pe = Psz[edof]                                                        # (nel, ne, na)
                if _paired(self.nel):                                             # (_paired)
                    meb[a:b] += np.einsum("eki,eki->e", Ve[:, :, :self.K], (self.CM @ Pe) @ Cb.T)
                else:
                    meb[a:b] += np.einsum("ij,eki,kl,elj->e", Cb, Ve[:, :, :self.K], self.CM, Pe)
                keb[a:b] -= np.einsum("ekj,kl,elj->e", Zz[edof], st["Ku"], Pe)
            for i in range(self.K):
                w = Wall[edof, i]                                           # (nel, ne)
                ph = Ve[:, :, i]
                keb[a:b] -= np.einsum("ek,kl,el->e", w, st["Ku"], ph)
                meb[a:b] += st["lam"][i] * np.einsum("ek,kl,el->e", w, self.CM, ph)
                meb[a:b] -= 0.5 * pbphi[i] * np.einsum("ek,kl,el->e", ph, self.CM, ph)
        return meb * st["dme"] + keb * st["dke"]


class Reduction(ModalBasis):
    """The planar continuum ``c`` (continua._Continuum) reduced to ``modes`` = K
    eigenmodes (+ attachment modes): its body data are those of modal_components.py.
    ``pidx`` holds the parameter indices it reads (densities, material, geometry);
    ``points`` the node numbers whose rows Φ_k are data."""
    dof, CM, PARAMS = 2, _CM, _PARAMS

    def __init__(self, c, modes, attach=()):
        self.nx, self.ny = c.nx, c.ny
        pidx = {"density": c.density, **{k: c.p[k] for k in _PARAMS}}
        self._setup(f"continua.{c.name}", c.name, modes, c.cfg.density_law, c.nel, c.clamped, c.element_nodes(),
                    attach, pidx)

    def _body(self, p):
        """(g, X_g (nel, 4, 2), K̂ (8, 8), Gauss mass per unit density ρ0 t hx hy/4)."""
        g = {k: float(np.real(p[self.pidx[k]])) for k in _PARAMS}
        hx, hy = g["Lx"] / self.nx, g["Ly"] / self.ny
        j, i = np.divmod(np.arange(self.nel), self.nx)
        cx, cy = g["X0"] + i * hx, g["Y0"] + j * hy
        Xg = np.stack([cx[:, None] + _GPOS[:, 0] * hx, cy[:, None] + _GPOS[:, 1] * hy], -1)   # (nel, 4, 2)
        Ku = unit_stiffness(np.float64(g["nu"]), np.float64(g["thickness"]), np.float64(hx), np.float64(hy))
        return g, Xg, Ku, g["rho0"] * g["thickness"] * hx * hy / 4.0

    def _ninertia(self):
        return inertia_layout(self.nb)[1]

    def _data(self, st, me, ke, V):
        """D as one flat vector in the order of ``layout`` (complex-safe in me, ke, V)."""
        Xg = st["Xg"]
        Ve = self._elem(V)
        NV = np.einsum("gik,ekl->egil", _NG, Ve)                         # N_g V_e (nel, 4, 2, K)
        m = 4.0 * np.sum(me)
        S0 = np.einsum("e,egi->i", me, Xg)
        I0 = np.einsum("e,egi,egi->", me, Xg, Xg)
        Sb = np.einsum("e,egil->il", me, NV)
        b = np.einsum("e,egil,egi->l", me, NV, Xg)
        a = np.einsum("e,egil,egi->l", me, NV, Xg @ _J.T)
        CMV = np.einsum("kj,ejl->ekl", _CM, Ve)
        CJV = np.einsum("kj,ejl->ekl", _CJ, Ve)
        KV = np.einsum("kj,ejl->ekl", st["Ku"], Ve)
        Mh = np.einsum("e,ekm,ekl->ml", me, Ve, CMV)
        Gh = np.einsum("e,ekm,ekl->ml", me, Ve, CJV)
        Kh = np.einsum("e,ekm,ekl->ml", ke, Ve, KV)
        inertia = np.concatenate([[m], S0, [I0], Sb.ravel(), b, a, Mh.ravel(), Gh.ravel()])
        return self._with_points(V, inertia, Kh)

    def _data_bar(self, st, Ve, di, Kb):
        """(m̄_e, k̄_e, V̄_e) of ⟨D̄, D⟩ for the inertia cotangent ``di`` and K̂̄ = ``Kb``."""
        K, Xg, me, ke = self.nb, st["Xg"], st["me"], st["ke"]
        lay, _ = inertia_layout(K)
        mb, S0b, I0b = di[lay["m"]][0], di[lay["S0"]], di[lay["I0"]][0]
        Sbb = di[lay["Sbar"]].reshape(2, K)
        bb, ab = di[lay["b"]], di[lay["a"]]
        Mb, Gb = di[lay["M"]].reshape(K, K), di[lay["G"]].reshape(K, K)
        NV = np.einsum("gik,ekl->egil", _NG, Ve)
        XJ = Xg @ _J.T
        CMV = np.einsum("kj,ejl->ekl", _CM, Ve)
        CJV = np.einsum("kj,ejl->ekl", _CJ, Ve)
        KV = np.einsum("kj,ejl->ekl", st["Ku"], Ve)
        meb = (4.0 * mb + np.einsum("i,egi->e", S0b, Xg) + I0b * np.einsum("egi,egi->e", Xg, Xg)
               + np.einsum("il,egil->e", Sbb, NV) + np.einsum("l,egil,egi->e", bb, NV, Xg)
               + np.einsum("l,egil,egi->e", ab, NV, XJ)
               + np.einsum("ml,ekm,ekl->e", Mb, Ve, CMV) + np.einsum("ml,ekm,ekl->e", Gb, Ve, CJV))
        keb = np.einsum("ml,ekm,ekl->e", Kb, Ve, KV)
        # d/dV_e ⟨B, V_eᵀ C V_e⟩ = C V_e Bᵀ + Cᵀ V_e B (_quad_bar)
        pr = _paired(self.nel)
        if pr:                                   # (_paired: Σ_g N_gᵀ X_g per element first)
            def xb(X, c):
                return (me[:, None] * np.einsum("gik,egi->ek", _NG, X))[:, :, None] * c
        else:
            def xb(X, c):
                return np.einsum("e,gik,egi,l->ekl", me, _NG, X, c)
        Veb = (np.einsum("e,gik,il->ekl", me, _NG, Sbb)
               + xb(Xg, bb)
               + xb(XJ, ab)
               + me[:, None, None] * (_quad_bar(_CM, Ve, Mb, pr) + _quad_bar(_CJ, Ve, Gb, pr))
               + ke[:, None, None] * _quad_bar(st["Ku"], Ve, Kb, pr))
        return meb, keb, Veb


def _chunks(n):
    """[a, b) blocks of ``ELEMENT_CHUNK`` over n elements (one block when n ≤ it)."""
    return [(a, min(a + ELEMENT_CHUNK, n)) for a in range(0, max(n, 1), ELEMENT_CHUNK)]


def _paired(n):
    """Whether a body of n elements spans more than one block: then the element
    contractions of the pull-back run as pairs of two-operand products (``_quad_bar``,
    ``vjp``) instead of the multi-operand einsums, whose one loop nest over every index
    costs 5–7× more per element (10⁶ elements: ~70 s of the chain per rank, measured);
    up to one block the einsums stay, and with them the bits of the 10⁵ crank."""
    return len(_chunks(n)) > 1


_PER_ELEMENT = ("Xg", "me", "ke", "dme", "dke", "x")


def _st_block(st, a, b):
    """The state dict with its per-element arrays cut to elements [a, b) (the whole dict
    when that is all of them)."""
    if a == 0 and b == len(st["me"]):
        return st
    return {k: (v[a:b] if k in _PER_ELEMENT else v) for k, v in st.items()}


PCG_RTOL = 1e-13          # deflated CG: preconditioned residual, relative (module docstring)
PCG_MAXIT = 1000


def _deflated_solve(st, R, modes):
    """Column c: (K − λ_i M) w = r̃ = r − (φ_iᵀr)Mφ_i with φ_iᵀMw = 0, i = modes[c],
    r = R[:, c], by one K_ff factorization: w = Σ_{j≠i} φ_j (φ_jᵀr̃)/(λ_j − λ_i) over the
    kept modes, plus w⊥ in the M-orthogonal complement of span Φ, where K − λ_i M is
    positive definite (its Rayleigh quotients are ≥ λ_{K+1} > λ_i).  w⊥ by CG
    preconditioned with Q K⁻¹ Qᵀ (Q = I − ΦΦᵀM): the preconditioned spectrum lies in
    [1 − λ_i/λ_{K+1}, 1], so it converges in tens of iterations even for i = K
    (measured at 10⁵ elements, K = 10: 5 to 24 iterations).  The columns iterate in
    lockstep (one multi-RHS solve per iteration) and stop one by one at a relative
    preconditioned residual ``PCG_RTOL``; a true residual above 1e-9 is an error."""
    Phi, lam, Mf, Kf, fac = st["Phi"], st["lam"], st["Mf"], st["Kf"], _kfac(st)
    if "MPhi" not in st:
        st["MPhi"] = Mf @ Phi
    MPhi = st["MPhi"]
    m = len(modes)
    cols = np.arange(m)
    li = lam[modes]
    Rt = R - MPhi[:, modes] * np.einsum("ij,ij->j", Phi[:, modes], R)
    A = Phi.T @ Rt
    D = lam[:, None] - li[None, :]
    D[modes, cols] = np.inf
    W0 = Phi @ (A / D)
    Res = Rt - MPhi @ A                                     # Φᵀ Res = 0

    def prec(V):
        Z = fac.solve(np.ascontiguousarray(V))
        return Z - Phi @ (MPhi.T @ Z)
    X = np.zeros_like(R)
    Z = prec(Res)
    P = Z.copy()
    rz = np.einsum("ij,ij->j", Res, Z)
    rz0 = rz.copy()
    active = rz0 > 0.0
    for _ in range(PCG_MAXIT):
        act = np.nonzero(active)[0]
        if not len(act):
            break
        Pa = P[:, act]
        AP = Kf @ Pa - (Mf @ Pa) * li[act]
        alpha = rz[act] / np.einsum("ij,ij->j", Pa, AP)
        X[:, act] += alpha * Pa
        Res[:, act] -= alpha * AP
        Za = prec(Res[:, act])
        rzn = np.einsum("ij,ij->j", Res[:, act], Za)
        P[:, act] = Za + (rzn / rz[act]) * Pa
        rz[act] = rzn
        active[act[np.sqrt(np.abs(rzn)) <= PCG_RTOL * np.sqrt(rz0[act])]] = False
    W = W0 + X
    true = np.linalg.norm(Kf @ W - (Mf @ W) * li - Rt, axis=0)
    ref = np.maximum(np.linalg.norm(Rt, axis=0), 1e-300)
    if not np.all(np.isfinite(true)) or np.any(true > 1e-9 * ref):
        c = int(np.argmax(true / ref))
        raise RuntimeError(f"modal reduction: the deflated CG solve of mode {modes[c] + 1} did not converge "
                           f"(relative residual {true[c] / ref[c]:.1e})")
    return W


def _kfac(st):
    """The sparse LU of K_ff, made on first use (a loaded body's forward run needs none)."""
    if "Kfac" not in st:
        st["Kfac"] = factor(st["Kf"])
    return st["Kfac"]


def _residual(Phi, M, Psi):
    """Ψ_r = Ψ − Φ ΦᵀMΨ: the attachment modes made M-orthogonal to the kept eigenmodes
    (residual-flexibility modes; M̂ and K̂ stay well conditioned, block diagonal at the
    design they are computed at).  Complex-safe (the forward derivative)."""
    return Psi - Phi @ (Phi.T @ (M @ Psi))


def _quad_bar(C, Ve, B, paired=False):
    """∂⟨B, V_eᵀ C V_e⟩/∂V_e = C V_e Bᵀ + Cᵀ V_e B per element: (nel, 8, K).  ``paired``
    (bodies of more than one element block, ``_paired``): as two products, (C V_e) Bᵀ, 5×
    fewer operations than the three-operand einsum (it sums j and m in one nest: 8·K·8·K
    per element) — the same sums in another order, so not the same bits."""
    if paired:
        return np.einsum("kj,ejm->ekm", C, Ve) @ B.T + np.einsum("jk,ejm->ekm", C, Ve) @ B
    return np.einsum("kj,ejm,lm->ekl", C, Ve, B) + np.einsum("jk,ejm,ml->ekl", C, Ve, B)
