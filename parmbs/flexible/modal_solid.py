"""Modal reduction of a hexahedral floating-frame solid (``spatial.solids.S.reduction``).

The basis, the attachment modes and the exact design sensitivities through the
eigenproblem are those of the planar continuum — modal.ModalBasis, whose docstring
states the method (Nelson's bordered system and its adjoint, one solve per mode;
attachment modes Ψ = K_ff⁻¹E made M-orthogonal to the kept modes; repeated
eigenvalues refused).  This module supplies the trilinear element (3 displacement
components per node, solid.py/hexa.py) and the body data of the reduced spatial
equations (modal_solid_components.py):

    D = (m, S0, J0, S̄, C1, C2 | K̂ | Φ_k of every data node),

m_g = ρ(x_e) ρ0 hx hy hz/8 the Gauss masses (the solid's consistent mass:
M_ff = Σ_e m_e Σ_g N_gᵀN_g, exact by the 2×2×2 rule), K_ff = Σ_e x_e^s E0 K̂_e.  Every
datum is an element sum of m_e or k_e times a polynomial of degree ≤ 2 in V, written
once in ``_data`` (complex-safe: the forward derivative is its complex step) and pulled
back by hand in ``_data_bar`` (adjoint).
"""
import numpy as np

from .hexa import unit_stiffness3
from .modal import ModalBasis
from .modal_solid_components import solid_layout
from .solid import _GPOS, _NG

_CM3 = np.einsum("gik,gil->kl", _NG, _NG)            # Σ_g N_gᵀ N_g (24 × 24)
PARAMS = ("E", "nu", "rho0", "penalization", "Lx", "Ly", "Lz", "X0", "Y0", "Z0")


class SolidReduction(ModalBasis):
    """The solid ``s`` (solids._Solid) reduced to ``modes`` = K eigenmodes (+ 3 attachment
    modes per free joint node in ``attach``).  ``pidx``: its densities and the scalar
    parameters in PARAMS (size and offset are constants of p)."""
    dof, CM, PARAMS = 3, _CM3, PARAMS

    def __init__(self, s, modes, attach=(), pidx=None):
        self.n = s.n
        self._setup(s.base, s.name, modes, s.cfg.density_law, s.nel, s.clamped, s.element_nodes(), attach, pidx)

    def _body(self, p):
        """(g, X_g (nel, 8, 3), K̂ (24, 24), Gauss mass per unit density ρ0 hx hy hz/8)."""
        g = {k: float(np.real(p[self.pidx[k]])) for k in PARAMS}
        L, X0 = np.array([g["Lx"], g["Ly"], g["Lz"]]), np.array([g["X0"], g["Y0"], g["Z0"]])
        h = L / np.array(self.n)
        kj, i = np.divmod(np.arange(self.nel), self.n[0])
        k, j = np.divmod(kj, self.n[1])
        corner = X0 + np.stack([i, j, k], -1) * h
        Xg = corner[:, None, :] + _GPOS * h
        Ku = unit_stiffness3(np.float64(g["nu"]), np.float64(h[0]), np.float64(h[1]), np.float64(h[2]))
        return g, Xg, Ku, g["rho0"] * np.prod(h) / 8.0

    def _ninertia(self):
        return solid_layout(self.nb)[1]

    def _data(self, st, me, ke, V):
        """D as one flat vector in the order of ``layout`` (complex-safe in me, ke, V)."""
        Xg = st["Xg"]
        Ve = self._elem(V)
        NV = np.einsum("gik,ekl->egil", _NG, Ve)                        # Φ_g = N_g V_e (nel, 8, 3, K)
        m = 8.0 * np.sum(me)
        S0 = np.einsum("e,egi->i", me, Xg)
        J0 = np.einsum("e,egi,egj->ij", me, Xg, Xg)
        Sb = np.einsum("e,egil->il", me, NV)
        C1 = np.einsum("e,egi,egjk->ijk", me, Xg, NV)
        C2 = np.einsum("e,egik,egjl->ikjl", me, NV, NV, optimize=True)
        KV = np.einsum("kj,ejl->ekl", st["Ku"], Ve)
        Kh = np.einsum("e,ekm,ekl->ml", ke, Ve, KV)
        inertia = np.concatenate([[m], S0, J0.ravel(), Sb.ravel(), C1.ravel(), C2.ravel()])
        return self._with_points(V, inertia, Kh)

    def _data_bar(self, st, Ve, di, Kb):
        """(m̄_e, k̄_e, V̄_e) of ⟨D̄, D⟩ for the inertia cotangent ``di`` and K̂̄ = ``Kb``."""
        from .modal import _quad_bar, _paired
        K, Xg, me, ke = self.nb, st["Xg"], st["me"], st["ke"]
        lay, _ = solid_layout(K)
        mb, S0b, J0b = di[lay["m"]][0], di[lay["S0"]], di[lay["J0"]].reshape(3, 3)
        Sbb, C1b, C2b = di[lay["Sbar"]].reshape(3, K), di[lay["C1"]].reshape(3, 3, K), di[lay["C2"]].reshape(3, K, 3, K)
        NV = np.einsum("gik,ekl->egil", _NG, Ve)
        C2s = C2b + C2b.transpose(2, 3, 0, 1)
        meb = (8.0 * mb + np.einsum("i,egi->e", S0b, Xg) + np.einsum("ij,egi,egj->e", J0b, Xg, Xg)
               + np.einsum("il,egil->e", Sbb, NV) + np.einsum("ijk,egi,egjk->e", C1b, Xg, NV)
               + np.einsum("ikjl,egik,egjl->e", C2b, NV, NV, optimize=True))
        KV = np.einsum("kj,ejl->ekl", st["Ku"], Ve)
        keb = np.einsum("ml,ekm,ekl->e", Kb, Ve, KV)
        # Φ̄_g = m_e (S̄̄ + X_g·C̄1 + (C̄2 + C̄2ᵀ):Φ_g), then V̄_e = Σ_g N_gᵀ Φ̄_g
        NVb = me[:, None, None, None] * (Sbb[None, None] + np.einsum("egi,ijk->egjk", Xg, C1b)
                                         + np.einsum("ikjl,egjl->egik", C2s, NV, optimize=True))
        Veb = np.einsum("gin,egik->enk", _NG, NVb) + ke[:, None, None] * _quad_bar(st["Ku"], Ve, Kb, _paired(self.nel))
        return meb, keb, Veb
