"""Planar Euler–Bernoulli beam element in a floating frame of reference (FFR).

Seed 001 §3.2 (Wehrle & Gufler 2024, example 2; Shabana's FFR): a flexible body has
q_body = (R, θ, q_f) — the origin R and angle θ of its body frame and the nodal elastic
coordinates q_f = (u_k, v_k, φ_k) of every node k, measured in the body frame (axial
displacement, transverse displacement, cross-section rotation).  A material point of the
centre line at undeformed body-frame position (x̄, 0) sits at

    r = R + A(θ) ū,   ū = (x̄, 0) + S(x̄) q_f                                    (FFR position)

with S the element shape functions: linear in u, cubic Hermite in (v, φ).  A two-node
element of length l, ξ = (x̄ − x̄_i)/l, local elastic coordinates
e = (u_i, v_i, φ_i, u_j, v_j, φ_j):

    S = [[1−ξ, 0, 0, ξ, 0, 0], [0, s1, s2, 0, s3, s4]]     (s_k: ``ancf.shape``)

Element component coordinates: (R_x, R_y, θ, e) — 9 entries.  Reference conditions
are imposed by pointing removed nodal coordinates at ground's zero slots (the body
set does this; ``ffr_beams.py``): every FFR beam is *clamped at its root*
(u₀ = v₀ = φ₀ = 0), so the body frame is the root's tangent frame and every other node
keeps all three elastic coordinates (as seed 001 lists x̄, ȳ, θ̄ for the crank's node A;
the paper does not state its reference conditions).

Inertia.  With the body-frame absolute acceleration

    b̄ = Aᵀ R̈ + θ̈ J̃ū − θ̇² ū + 2 θ̇ J̃ ū̇ + ṻ    (J̃ = rot 90°;  b̄ = Aᵀ r̈, the body-frame acceleration)

the virtual work of the inertia forces, δW = −∫ρA δrᵀ r̈ dx̄ with δr = L δq,
L = [I, A J̃ ū, A S], gives the element residual

    r = ∫ρA [A b̄;  (J̃ū)·b̄;  Sᵀ b̄] dx̄  +  ∫ρI [0; θ̈ + v̈′; S′ᵀ(θ̈ + v̈′)] dx̄

which is M(q) a + Q_v(q, v) of seed 001 Eq. 33 (the mass blocks m_RR, m_Rθ, m_Rf,
m_θθ, m_θf, m_ff and the quadratic velocity vector in one expression).  The second
integral is the rotary inertia of the cross-section (section angle θ + v′), so a stiff
beam has the rigid-body inertia m(L² + h²)/12 about its centre.  Both integrands are
polynomials of degree ≤ 6 in ξ; 4-point Gauss quadrature integrates them exactly, so
the shape integrals ∫ρA SᵀS dx̄, ∫ρA S dx̄, … are never formed separately: one
vectorized evaluation over (elements × 4 points) gives r (the l-dependence of the
shape functions at the Gauss points is tabulated once, ``gauss_shapes``).  ∂r/∂a = M(q),
∂r/∂q and ∂r/∂v (the derivatives of the configuration-dependent mass and of Q_v) are
analytic (``FfrInertia.jacobians``); ∂r/∂p of the section columns (ρ, w, h, E) uses that r
is linear in ρA and ρI (``_SectionLinear``); only L, n_el complex-step the residual.

Elastic forces (linear FFR, small deformation in the body frame; k = blockdiag(0, 0, k_ff)
of seed 001 §3.2): r = K_e e with

    K_e = EA/l [[1, −1], [−1, 1]] on (u_i, u_j)
        + EI/l³ [[12, 6l, −12, 6l], [6l, 4l², −6l, 2l²], [−12, −6l, 12, −6l], [6l, 2l², −6l, 4l²]]
          on (v_i, φ_i, v_j, φ_j).

Cross-section: width w (out of plane) × height h (in the plane of motion, the bending
direction): A = w h, I = w h³/12.  Element parameters, in this order:
(ρ, w, h, E, L, n_el, k) with l = L/n_el and x̄_i = k l (k the element index).

Fibre stress (``fibre_stress``): σ = E (u′ ∓ (h/2) v″) at the upper (+h/2) and lower
(−h/2) fibres, evaluated at both ends of every element.
"""
import numpy as np

from ..model.component import ClosedFormJacobians, Force, register, cs_jacobian
from ..model.kinematics import rot, stack, concat
from .ancf import shape, dshape

ELEM_NP = 7

# 4-point Gauss–Legendre on [0, 1]: exact for the degree-6 inertia integrands
_GX, _GW = np.polynomial.legendre.leggauss(4)
GAUSS_XI = 0.5 * (_GX + 1.0)
GAUSS_W = 0.5 * _GW


def section(p):
    """(A, I) = (w h, w h³/12) from element parameters (ρ, w, h, ...)."""
    w, h = p[..., 1], p[..., 2]
    return w * h, w * h ** 3 / 12.0


def elem_length(p):
    return p[..., 4] / p[..., 5]


def ddshape(xi, l):
    """d² s_k / dx² at ξ (Hermite curvature shape functions)."""
    return ((-6 + 12 * xi) / l ** 2, (-4 + 6 * xi) / l, (6 - 12 * xi) / l ** 2, (6 * xi - 2) / l)


def shape_rows(xi, l):
    """S (…, G, 2, 6) and the slope row S′_v (…, G, 6) at the points ξ (G,) for lengths l (…)."""
    xi = np.asarray(xi)
    ll = l[..., None]
    s1, s2, s3, s4 = shape(xi, ll)
    d1, d2, d3, d4 = dshape(xi, ll)
    z = 0.0 * s2 + 0.0 * d1
    S = np.stack([stack([1.0 - xi + z, z, z, xi + z, z, z], -1),
                  stack([z, s1, s2, z, s3, s4], -1)], -2)
    Sp = stack([z, d1, d2, z, d3, d4], -1)
    return S, Sp


# S and S′ at the Gauss points split by powers of l (S = S₀ + l S₁, S′ = S′₋₁/l + S′₀), so the
# hot path builds them with two multiply-adds instead of re-evaluating the polynomials
_S_1, _SP_1 = shape_rows(GAUSS_XI, np.array(1.0))
_S_2, _SP_2 = shape_rows(GAUSS_XI, np.array(2.0))
_S1 = _S_2 - _S_1
_S0 = _S_1 - _S1
_SPM1 = 2.0 * (_SP_1 - _SP_2)
_SP0 = _SP_1 - _SPM1


def gauss_shapes(l):
    """(S, S′) at the Gauss points for element lengths l: (…, G, 2, 6), (…, G, 6)."""
    return _S0 + l[..., None, None, None] * _S1, _SPM1 / l[..., None, None] + _SP0


def _jt(x):
    """J̃ x (rotation by +90°) on the last axis."""
    return stack([-x[..., 1], x[..., 0]], -1)


def _kinematics(q, v, a, p):
    """Body-frame quantities at the Gauss points: ū, ū̇, ṻ (…, G, 2), v̇′, v̈′ (…, G), S, S′."""
    l = elem_length(p)
    S, Sp = gauss_shapes(l)
    xbar = (p[..., 6, None] + GAUSS_XI) * l[..., None]                   # (…, G)
    e, ed, edd = q[..., 3:9], v[..., 3:9], a[..., 3:9]
    ub = np.einsum("...gij,...j->...gi", S, e)
    ub = ub + stack([xbar, 0.0 * xbar], -1)
    ubd = np.einsum("...gij,...j->...gi", S, ed)
    ubdd = np.einsum("...gij,...j->...gi", S, edd)
    vpd = np.einsum("...gj,...j->...g", Sp, ed)
    vpdd = np.einsum("...gj,...j->...g", Sp, edd)
    return l, S, Sp, ub, ubd, ubdd, vpd, vpdd


class _SectionLinear(Force):
    """A force linear in section coefficients: r = Σ_k c_k(ρ, w, h, E) r_k(t, q, v, a, p)
    with r_k independent of p's section columns 0–3.  ∂r/∂p of those columns is then
    Σ_k r_k ∂c_k/∂p (the scalar c_k complex-stepped, no extra residual evaluation);
    other columns (L, n_el, g) fall back to the complex step of r."""
    SECTION_COLS = (0, 1, 2, 3)

    def coefs(self, p):
        raise NotImplementedError

    def parts(self, t, q, v, a, p):
        raise NotImplementedError

    def r(self, t, q, v, a, p):
        c = self.coefs(p)
        return sum(c[..., k, None] * rk for k, rk in enumerate(self.parts(t, q, v, a, p)))

    def r_p(self, t, q, v, a, p, cols=None):
        cols = np.arange(self.np_) if cols is None else np.asarray(cols)
        sec = np.isin(cols, self.SECTION_COLS)
        rk = self.parts(t, q, v, a, p)
        lead = np.broadcast_shapes(q.shape[:-1], p.shape[:-1], *(x.shape[:-1] for x in rk))
        out = np.zeros(lead + (self.nq, len(cols)), dtype=np.result_type(q, v, a, p))
        if np.any(sec):
            dc = cs_jacobian(self.coefs, [p], 0, cols[sec])                   # (…, K, k)
            out[..., sec] = sum(x[..., :, None] * dc[..., k, None, :] for k, x in enumerate(rk))
        if not np.all(sec):
            out[..., ~sec] = cs_jacobian(self.r, [t, q, v, a, p], 4, cols[~sec])
        return out


@register
class FfrInertia(ClosedFormJacobians, _SectionLinear):
    """M(q) a + Q_v(q, v) of one FFR beam element (module docstring; seed 001 Eq. 33).
    Section coefficients (ρA, ρI)."""
    nq, np_ = 9, ELEM_NP
    inertial = True
    uses_q = uses_v = uses_a = True

    def coefs(self, p):
        A, I = section(p)
        return stack([p[..., 0] * A, p[..., 0] * I], -1)

    def parts(self, t, q, v, a, p):
        l, S, Sp, ub, ubd, ubdd, vpd, vpdd = _kinematics(q, v, a, p)
        th, thd, thdd = q[..., 2], v[..., 2], a[..., 2]
        RddB = rot(-th, a[..., 0:2])[..., None, :]                        # Aᵀ R̈ (…, 1, 2)
        b = (RddB + thdd[..., None, None] * _jt(ub) - (thd ** 2)[..., None, None] * ub
             + 2.0 * thd[..., None, None] * _jt(ubd) + ubdd)              # (…, G, 2)
        W = l[..., None] * GAUSS_W                                        # (…, G), per unit ρA and ρI
        Wr = W
        rot_acc = thdd[..., None] + vpdd                                  # θ̈ + v̈′ (…, G)
        fR = rot(th, np.einsum("...g,...gi->...i", W, b))
        fth = np.einsum("...g,...g->...", W, np.sum(_jt(ub) * b, -1))
        ff = np.einsum("...g,...gij,...gi->...j", W, S, b)
        rA = concat([fR, fth[..., None], ff], -1)
        fth_r = np.einsum("...g,...g->...", Wr, rot_acc)
        ff_r = np.einsum("...g,...gj,...g->...j", Wr, Sp, rot_acc)
        rI = concat([0.0 * fR, fth_r[..., None], ff_r], -1)
        return rA, rI

    def jacobians(self, t, q, v, a, p):
        """(∂r/∂q, ∂r/∂v, ∂r/∂a = M(q)) from one kinematics evaluation.

        With the body-frame L̄ = AᵀL = [Aᵀ, J̃ū, S] (2 × 9 per point), r = ∫ρA L̄ᵀ b̄ + rotary,
        ∂r/∂x = ∫ρA [(∂L̄/∂x)ᵀ b̄ + L̄ᵀ ∂b̄/∂x]; the rotary part is linear in a only.
            ∂b̄/∂θ = −J̃AᵀR̈,   ∂b̄/∂e = (θ̈J̃ − θ̇²I) S,
            ∂b̄/∂θ̇ = −2θ̇ū + 2J̃ū̇,   ∂b̄/∂ė = 2θ̇ J̃S,
            (∂L̄/∂θ)ᵀb̄ → A J̃ b̄ in the R rows,  (∂L̄/∂e)ᵀb̄ → (J̃S)ᵀb̄ in the θ row."""
        A, I = section(p)
        rho = p[..., 0]
        l, S, Sp, ub, ubd, ubdd, vpd, vpdd = _kinematics(q, v, a, p)
        th, thd, thdd = q[..., 2], v[..., 2], a[..., 2]
        c, s = np.cos(th), np.sin(th)
        RddB = rot(-th, a[..., 0:2])[..., None, :]
        b = (RddB + thdd[..., None, None] * _jt(ub) - (thd ** 2)[..., None, None] * ub
             + 2.0 * thd[..., None, None] * _jt(ubd) + ubdd)               # (…, G, 2)
        lead = np.broadcast_shapes(b.shape[:-2], th.shape, S.shape[:-3])
        G = len(GAUSS_XI)
        dt = np.result_type(q, v, a, p)
        Lb = np.zeros(lead + (G, 2, 9), dtype=dt)
        Lb[..., 0, 0] = c[..., None]
        Lb[..., 0, 1] = s[..., None]
        Lb[..., 1, 0] = -s[..., None]
        Lb[..., 1, 1] = c[..., None]
        Lb[..., :, 2] = _jt(ub)
        Lb[..., :, 3:] = S
        JS = np.stack([-S[..., 1, :], S[..., 0, :]], -2)                  # J̃S (…, G, 2, 6)
        W = (rho * A * l)[..., None] * GAUSS_W
        Wr = (rho * I * l)[..., None] * GAUSS_W
        # ∂b̄/∂q and ∂b̄/∂v  (…, G, 2, 9)
        Bq = np.zeros(lead + (G, 2, 9), dtype=dt)
        Bq[..., :, 2] = -_jt(RddB) + 0.0 * ub
        Bq[..., :, 3:] = thdd[..., None, None, None] * JS - (thd ** 2)[..., None, None, None] * S
        Bv = np.zeros(lead + (G, 2, 9), dtype=dt)
        Bv[..., :, 2] = -2.0 * thd[..., None, None] * ub + 2.0 * _jt(ubd)
        Bv[..., :, 3:] = 2.0 * thd[..., None, None, None] * JS
        Jq = np.einsum("...g,...gki,...gkj->...ij", W, Lb, Bq)
        Jv = np.einsum("...g,...gki,...gkj->...ij", W, Lb, Bv)
        Ab = rot(th[..., None], _jt(b))                                    # A J̃ b̄ (…, G, 2)
        Jq[..., 0:2, 2] += np.einsum("...g,...gk->...k", W, Ab)
        Jq[..., 2, 3:] += np.einsum("...g,...gkj,...gk->...j", W, JS, b)
        Ma = np.einsum("...g,...gki,...gkj->...ij", W, Lb, Lb)
        Nr = np.zeros(lead + (G, 9), dtype=dt)
        Nr[..., 2] = 1.0
        Nr[..., 3:] = Sp
        Ma = Ma + np.einsum("...g,...gi,...gj->...ij", Wr, Nr, Nr)
        return Jq, Jv, Ma

    def mass(self, q, p):
        """M(q) (…, 9, 9) = ∫ρA LᵀL dx̄ + ∫ρI (rotary) — the analytic ∂r/∂a."""
        A, I = section(p)
        rho = p[..., 0]
        zero = np.zeros_like(q)
        l, S, Sp, ub, *_ = _kinematics(q, zero, zero, p)
        th = q[..., 2]
        c, s = np.cos(th), np.sin(th)
        # body-frame columns of L: Aᵀ L = [Aᵀ, J̃ū, S]  (…, G, 2, 9)
        lead = np.broadcast_shapes(ub.shape[:-2], th.shape)
        Lb = np.zeros(lead + (len(GAUSS_XI), 2, 9), dtype=np.result_type(q, p))
        Lb[..., 0, 0] = c[..., None]
        Lb[..., 0, 1] = s[..., None]
        Lb[..., 1, 0] = -s[..., None]
        Lb[..., 1, 1] = c[..., None]
        Lb[..., :, 2] = _jt(ub)
        Lb[..., :, 3:] = S
        W = (rho * A * l)[..., None] * GAUSS_W
        Wr = (rho * I * l)[..., None] * GAUSS_W
        M = np.einsum("...g,...gki,...gkj->...ij", W, Lb, Lb)
        Nr = np.zeros(lead + (len(GAUSS_XI), 9), dtype=Lb.dtype)          # ∂(θ + v′)/∂q
        Nr[..., 2] = 1.0
        Nr[..., 3:] = Sp
        return M + np.einsum("...g,...gi,...gj->...ij", Wr, Nr, Nr)

    def r_a(self, t, q, v, a, p):
        return self.mass(q, p)

    def energy(self, t, q, v, p):
        """T = ½ vᵀ M(q) v."""
        return 0.5 * np.einsum("...i,...ij,...j->...", v, self.mass(q, p), v)


@register
class FfrGravity(ClosedFormJacobians, _SectionLinear):
    """r = −∫ρA Lᵀ g dx̄ = −ρA [g l; ∫(J̃ū)·Aᵀg; ∫Sᵀ Aᵀg];  p = (element params, g_x, g_y).
    Section coefficient ρA."""
    nq, np_ = 9, ELEM_NP + 2

    def coefs(self, p):
        A, _ = section(p)
        return (p[..., 0] * A)[..., None]

    def parts(self, t, q, v, a, p):
        zero = 0.0 * q
        l, S, Sp, ub, *_ = _kinematics(q, zero, zero, p)
        g = p[..., ELEM_NP:ELEM_NP + 2]
        gb = rot(-q[..., 2], g)[..., None, :]                              # Aᵀ g
        W = l[..., None] * GAUSS_W                                        # per unit ρA
        fR = l[..., None] * g + 0.0 * q[..., 0:2]
        fth = np.einsum("...g,...g->...", W, np.sum(_jt(ub) * gb, -1))
        ff = np.einsum("...g,...gij,...gi->...j", W, S, gb + 0.0 * ub)
        return (-concat([fR, fth[..., None], ff], -1),)

    def jacobians(self, t, q, v, a, p):
        """∂r/∂q (symmetric: r is the gradient of V), with gb = Aᵀg, ∂gb/∂θ = −J̃ gb:
        ∂r_θ/∂θ = ∫ρA ū·gb,  ∂r_θ/∂e = ∂r_e/∂θ = ∫ρA SᵀJ̃ gb,  the rest zero."""
        A, _ = section(p)
        zero = 0.0 * q
        l, S, Sp, ub, *_ = _kinematics(q, zero, zero, p)
        g = p[..., ELEM_NP:ELEM_NP + 2]
        gb = rot(-q[..., 2, None], g[..., None, :]) + 0.0 * ub                 # (…, G, 2)
        W = (p[..., 0] * A * l)[..., None] * GAUSS_W
        J = np.zeros(gb.shape[:-2] + (9, 9), dtype=np.result_type(q, p))
        J[..., 2, 2] = np.einsum("...g,...g->...", W, np.sum(ub * gb, -1))
        c = np.einsum("...g,...gkj,...gk->...j", W, S, _jt(gb))
        J[..., 2, 3:] = c
        J[..., 3:, 2] = c
        return J, None, None

    def energy(self, t, q, v, p):
        """V = −∫ρA g·r dx̄ (exact: r is cubic in ξ)."""
        A, _ = section(p)
        zero = 0.0 * q
        l, S, Sp, ub, *_ = _kinematics(q, zero, zero, p)
        r = q[..., None, 0:2] + rot(q[..., 2, None], ub)
        W = (p[..., 0] * A * l)[..., None] * GAUSS_W
        g = p[..., None, ELEM_NP:ELEM_NP + 2]
        return -np.einsum("...g,...g->...", W, np.sum(g * r, -1))


def stiffness_parts(p):
    """(K_a, K_b) (…, 6, 6) with K_e = EA K_a + EI K_b: K_a = [[1, −1], [−1, 1]]/l on
    (u_i, u_j), K_b the Hermite bending matrix / l³ on (v_i, φ_i, v_j, φ_j)."""
    l = elem_length(p)
    Ka = np.zeros(l.shape + (6, 6), dtype=l.dtype)
    Ka[..., 0, 0] = Ka[..., 3, 3] = 1.0 / l
    Ka[..., 0, 3] = Ka[..., 3, 0] = -1.0 / l
    B = np.array([[12, 6, -12, 6], [6, 4, -6, 2], [-12, -6, 12, -6], [6, 2, -6, 4]], float)
    P = np.array([[0, 1, 0, 1], [1, 2, 1, 2], [0, 1, 0, 1], [1, 2, 1, 2]])      # powers of l
    idx = [1, 2, 4, 5]
    Kb = np.zeros_like(Ka)
    Kb[..., np.ix_(idx, idx)[0], np.ix_(idx, idx)[1]] = B * l[..., None, None] ** (P - 3)
    return Ka, Kb


def stiffness(p):
    """K_e (…, 6, 6) on (u_i, v_i, φ_i, u_j, v_j, φ_j) (module docstring)."""
    A, I = section(p)
    E = p[..., 3]
    Ka, Kb = stiffness_parts(p)
    return (E * A)[..., None, None] * Ka + (E * I)[..., None, None] * Kb


@register
class FfrElastic(_SectionLinear):
    """r = k_ff e = K_e q_f (linear elastic forces in the body frame; seed 001 §3.2).
    Section coefficients (EA, EI)."""
    nq, np_ = 9, ELEM_NP

    def coefs(self, p):
        A, I = section(p)
        return stack([p[..., 3] * A, p[..., 3] * I], -1)

    def parts(self, t, q, v, a, p):
        z = 0.0 * q[..., 0:3]
        return tuple(concat([z, np.einsum("...ij,...j->...i", K, q[..., 3:9])], -1) for K in stiffness_parts(p))

    def r_q(self, t, q, v, a, p):
        K = stiffness(p)
        lead = np.broadcast_shapes(q.shape[:-1], K.shape[:-2])
        J = np.zeros(lead + (9, 9), dtype=np.result_type(q, p))
        J[..., 3:, 3:] = K
        return J

    def jacobians(self, t, q, v, a, p):
        return self.r_q(t, q, v, a, p), None, None

    def energy(self, t, q, v, p):
        e = q[..., 3:9]
        return 0.5 * np.einsum("...i,...ij,...j->...", e, stiffness(p), e)



@register
class FfrDamping(_SectionLinear):
    """r = β_K k_ff ė = β_K K_e q̇_f: stiffness-proportional (Rayleigh) structural damping
    of the elastic coordinates, the d q̇ term of seed 001 Eq. 33 with d = β_K k
    (``beams.B.stiffness_damping`` = β_K in s; the paper's example has d = 0).  Mode i of
    the beam then has the damping ratio ζ_i = β_K ω_i / 2 (Clough & Penzien, Dynamics of
    Structures, §12-5), so the high elastic modes that a time step cannot resolve decay
    physically instead of only by the integrator's ρ∞.  Element parameters: those of
    FfrElastic, then β_K (column 7).  Section coefficients (β_K EA, β_K EI): r is linear
    in them, so ∂r/∂p is exact for ρ, w, h, E and β_K alike."""
    nq, np_ = 9, ELEM_NP + 1
    SECTION_COLS = (0, 1, 2, 3, ELEM_NP)
    uses_q, uses_v = False, True

    def coefs(self, p):
        A, I = section(p)
        bk = p[..., ELEM_NP]
        return stack([bk * p[..., 3] * A, bk * p[..., 3] * I], -1)

    def parts(self, t, q, v, a, p):
        z = 0.0 * v[..., 0:3]
        return tuple(concat([z, np.einsum("...ij,...j->...i", K, v[..., 3:9])], -1) for K in stiffness_parts(p))

    def r_v(self, t, q, v, a, p):
        c = self.coefs(p)
        Ka, Kb = stiffness_parts(p)
        K = c[..., 0, None, None] * Ka + c[..., 1, None, None] * Kb
        lead = np.broadcast_shapes(v.shape[:-1], K.shape[:-2])
        J = np.zeros(lead + (9, 9), dtype=np.result_type(v, p))
        J[..., 3:, 3:] = K
        return J

    def r_q(self, t, q, v, a, p):
        return np.zeros(np.broadcast_shapes(q.shape[:-1], p.shape[:-1]) + (9, 9), dtype=np.result_type(q, p))

    def jacobians(self, t, q, v, a, p):
        return None, self.r_v(t, q, v, a, p), None


def fibre_stress(q, p):
    """Upper/lower fibre stresses σ = E(u′ ∓ (h/2) v″) at ξ = 0 and 1 of each element:
    (…, 4) ordered (upper ξ=0, lower ξ=0, upper ξ=1, lower ξ=1).  q: (…, 9) element
    coordinates (only e = q[3:9] is used), p: element parameters."""
    E, h, l = p[..., 3], p[..., 2], elem_length(p)
    e = q[..., 3:9]
    eps = (e[..., 3] - e[..., 0]) / l
    out = []
    for xi in (0.0, 1.0):
        d1, d2, d3, d4 = ddshape(xi, l)
        kappa = d1 * e[..., 1] + d2 * e[..., 2] + d3 * e[..., 4] + d4 * e[..., 5]
        out += [E * (eps - 0.5 * h * kappa), E * (eps + 0.5 * h * kappa)]
    return stack(out, -1)
