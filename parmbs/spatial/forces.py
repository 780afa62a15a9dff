"""Spatial force elements between Euler-parameter bodies: point-to-point spring-dampers
(linear; the nonlinear Iltis forms of seed 004 eqs. 5.3–5.5; smooth bump stops), a linear
6-DOF bushing, and applied forces and torques.

Every element reads ``nb`` bodies of 7 coordinates (x, y, z, e0, e1, e2, e3) each
(``kinematics.py``).  Ground mask (SPATIAL.md): an element attached to ground reads
ground's zero slots and carries a constant 0/1 mask g per body, p_body = q[3:7] +
g·(1, 0, 0, 0), so one vectorized group serves body–body and body–ground elements (a
ground point is then its global position s').  Parameter layout as in the joints
(joints.py): each side is (s', g) — p = (s'_a, g_a, s'_b, g_b, law...) for two-point
elements, (s', g, law...) for one-point elements.

Generalized forces (r = −Q, the residual convention of ``model/component.py``):

* a global force F at the material point s' of body b (P = r + A(p) s'):
  Q_r = F,  Q_p = (∂(A(p)s')/∂p)ᵀ F,  ∂(A(p)s')/∂p_k = 2 B(p, e_k) s'  (A = B(p, p)).
  This is the exact virtual work of the point's motion, also off pᵀp = 1, so a
  conservative element has r = ∂V/∂q exactly (tests/test_spatial_forces.py checks it).
* a global torque T on body b: Q_p = 2 E(p)ᵀ T (power T·ω with ω = 2 E ṗ, Nikravesh
  eq. 6.40); on pᵀp = 1 this is the same virtual work as above, off it they differ by
  a multiple of p, which only shifts the normalisation multiplier.

Force laws act along e = d/l, d = P_b − P_a, l = |d|, l̇ = e·(v_Pb − v_Pa); the scalar
"tension" T > 0 pulls the points together: Q_a = +T e, Q_b = −T e.  The seed writes the
leaf-spring and bump-stop forces as compressions (F_L = −k_L(L − L₀) > 0 at the nominal
L, eq. 5.3), so those become T = −F here.
"""
import numpy as np

from ..config.spatial_forces_schema import ILTIS_SPRING_DAMPER  # seed 004 eq. 5.5, the config's defaults
from ..model.component import CS_H, ClosedFormJacobians, Force, register
from ..model.timefunctions import Constant
from .kinematics import rotation, quat_product, dot, mv
from ..model import smooth
from . import force_kernels


_C1, _C2 = np.array([1, 2, 0]), np.array([2, 0, 1])


def cross(a, b):
    """a × b over the last axis (complex-step safe): (a₁b₂ − a₂b₁, a₂b₀ − a₀b₂, a₀b₁ − a₁b₀)
    as four gathers, two products and one difference over whole arrays (the same
    floating-point operations as the component-wise form, ~1.5× fewer numpy calls)."""
    a, b = np.asarray(a), np.asarray(b)
    return np.take(a, _C1, -1) * np.take(b, _C2, -1) - np.take(a, _C2, -1) * np.take(b, _C1, -1)


IDENTITY = np.array([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0])


# -- closed forms of kinematics.py's products (no 3×3 matrices: these sit inside every
#    complex-step Jacobian of every force element) ------------------------------------
def bilinear_apply(a, b, s):
    """B(a, b) s' = (a0 b0 − a·b) s' + a (b·s') + b (a·s') + a0 (b × s') + b0 (a × s')."""
    a0, av, b0, bv = a[..., 0:1], a[..., 1:], b[..., 0:1], b[..., 1:]
    return ((a0 * b0 - dot(av, bv)[..., None]) * s + av * dot(bv, s)[..., None] + bv * dot(av, s)[..., None]
            + a0 * cross(bv, s) + b0 * cross(av, s))


def point_position(qb, s):
    """r + A(p) s' (kinematics.point_position)."""
    return qb[..., :3] + bilinear_apply(qb[..., 3:7], qb[..., 3:7], s)


def point_velocity(qb, vb, s):
    """ṙ + 2 B(p, ṗ) s' (kinematics.point_velocity)."""
    return vb[..., :3] + 2.0 * bilinear_apply(qb[..., 3:7], vb[..., 3:7], s)


def omega_global(pq, pd):
    """ω = 2 E(p) ṗ = 2 (−ṗ0 e + e0 ė + e × ė)."""
    e0, e, d0, d = pq[..., 0:1], pq[..., 1:], pd[..., 0:1], pd[..., 1:]
    return 2.0 * (e0 * d - d0 * e + cross(e, d))


def point_load(qb, s, F):
    """Generalized force (..., 7) of a global force F at the material point s' of a body:
    (F, (∂(A s')/∂p)ᵀ F), the columns 2 B(p, e_k) s' in closed form (kinematics.
    rotation_jacobian): 2 (F·(e0 s' + e × s'),  (e·s') F + s' (e·F) − e (s'·F) + e0 s' × F)."""
    pq = qb[..., 3:7]
    e0, e = pq[..., 0:1], pq[..., 1:]
    q0 = dot(F, e0 * s + cross(e, s))[..., None]
    qe = dot(e, s)[..., None] * F + s * dot(e, F)[..., None] - e * dot(s, F)[..., None] + e0 * cross(s, F)
    return np.concatenate([F, 2.0 * q0, 2.0 * qe], -1)


def torque_load(qb, T):
    """Generalized force (..., 7) of a global torque T: (0, 2 Eᵀ T) = (0, −2 e·T, 2 (e0 T − e × T))."""
    pq = qb[..., 3:7]
    e0, e = pq[..., 0:1], pq[..., 1:]
    return np.concatenate([0.0 * T, -2.0 * dot(e, T)[..., None], 2.0 * (e0 * T - cross(e, T))], -1)


def conj(pq):
    """Conjugate Euler parameters (e0, −e): the inverse rotation on pᵀp = 1."""
    return pq * np.array([1.0, -1.0, -1.0, -1.0])


class SpatialElement(Force):
    """Base of the spatial force elements: ``nb`` bodies whose ground masks are the
    parameters ``gidx``.  ``body(q, p, k)`` returns body k's 7 coordinates, mask applied."""
    nb = 1
    gidx = (3,)

    def body(self, q, p, k):
        g = p[..., self.gidx[k]]
        return q[..., 7 * k:7 * k + 7] + g[..., None] * IDENTITY

    def bodies(self, q, v, p):
        """[(q_b, v_b)] of every body (velocities of ground slots are zero in a model)."""
        return [(self.body(q, p, k), v[..., 7 * k:7 * k + 7]) for k in range(self.nb)]

    def jacobians(self, t, q, v, a, p):
        """(r_q, r_v, None) by ONE complex-step evaluation of r over 2·nq perturbations
        (q-columns then v-columns stacked on a leading axis): the same numbers as
        ``r_q``/``r_v`` (tests/test_spatial_forces.py), half the numpy calls."""
        nq = self.nq
        k = 2 * nq if self.uses_v else nq
        j = np.arange(nq)
        qc = np.zeros((k,) + q.shape, dtype=complex)
        vc = np.zeros((k,) + v.shape, dtype=complex)
        # at a complex state (the complex-step path's Newton matrix) only the real part is
        # taken: the columns' own imaginary parts carry this complex step
        qc.real[...] = np.real(q)
        vc.real[...] = np.real(v)
        qc.imag[j, ..., j] = CS_H
        if self.uses_v:
            vc.imag[nq + j, ..., j] = CS_H
        out = self.r(t, qc, vc, a, p).imag / CS_H
        out = np.moveaxis(out, 0, -1)
        return out[..., :nq], (out[..., nq:] if self.uses_v else None), None


class PointToPoint(ClosedFormJacobians, SpatialElement):
    """A force along the line between P_a (body a, p[0:3]) and P_b (body b, p[3:6]).
    Subclasses give the tension T(l, l̇, p) and the potential V(l, p); the law's
    parameters start at p[8]."""
    nb, nq = 2, 14
    gidx = (3, 7)
    uses_v = True

    def geometry(self, q, v, p):
        (qa, va), (qb, vb) = self.bodies(q, v, p)
        sa, sb = p[..., 0:3], p[..., 4:7]
        d = point_position(qb, sb) - point_position(qa, sa)
        l = np.sqrt(dot(d, d))
        e = d / l[..., None]
        ldot = dot(e, point_velocity(qb, vb, sb) - point_velocity(qa, va, sa))
        return qa, qb, sa, sb, l, ldot, e

    #: r, r_q, r_v in the closed forms of force_kernels.py (one cached geometry per
    #: iterate, only T(l, l̇) complex-stepped); False: the forms below and the 28-column
    #: complex step (kept as the reference: tests and benchmarks/spatial_speed.py)
    analytic = True

    def _kgeometry(self, q, v, p):
        c = getattr(self, "_gcache", None)
        if (c is not None and c[0].shape == q.shape and c[1].shape == v.shape and c[2].shape == p.shape
                and np.array_equal(c[0], q) and np.array_equal(c[1], v) and np.array_equal(c[2], p)):
            return c[3]
        G = force_kernels.P2PGeometry(q, v, p)
        if not any(np.iscomplexobj(x) for x in (q, v, p)):
            self._gcache = (q.copy(), v.copy(), p.copy(), G)
        return G

    def r(self, t, q, v, a, p):
        if self.analytic:
            G = self._kgeometry(q, v, p)
            return force_kernels.residual(G, self.tension(G.l, G.ldot, p))
        qa, qb, sa, sb, l, ldot, e = self.geometry(q, v, p)
        Te = self.tension(l, ldot, p)[..., None] * e
        return np.concatenate([-point_load(qa, sa, Te), point_load(qb, sb, Te)], -1)

    def closed_form(self, q, v, a, p):
        """``analytic`` and a real state (ClosedFormJacobians)."""
        return self.analytic and super().closed_form(q, v, a, p)

    def jacobians(self, t, q, v, a, p):
        if not self.analytic or any(np.iscomplexobj(x) for x in (q, v, p)):
            return super().jacobians(t, q, v, a, p)
        G = self._kgeometry(q, v, p)
        rq, rv = force_kernels.jacobians(G, *force_kernels.law_derivatives(self.tension, G, p))
        return rq, rv, None

    def length(self, q, p):
        return self.geometry(q, 0.0 * q, p)[4]

    def energy(self, t, q, v, p):
        return self.potential(self.length(q, p), p)

    def tension(self, l, ldot, p):
        raise NotImplementedError

    def potential(self, l, p):
        return 0.0 * l


@register
class SpatialSpring(PointToPoint):
    """Linear spring-damper: T = k (l − l₀) + c l̇;  p = (s'_a, g_a, s'_b, g_b, k, c, l₀).
    Also the leaf spring of seed 004 eq. 5.3, F_L = −k_L (L − L₀) = −T with l₀ = L₀."""
    np_ = 11

    def tension(self, l, ldot, p):
        return p[..., 8] * (l - p[..., 10]) + p[..., 9] * ldot

    def potential(self, l, p):
        """V = ½ k (l − l₀)²."""
        return 0.5 * p[..., 8] * (l - p[..., 10]) ** 2


@register
class SpatialNonlinearSpringDamper(PointToPoint):
    """The nonlinear suspension spring-damper of the Iltis (seed 004 eqs. 5.5a–d):

        F_s(s) = a0 + k s + a2 s² + a3 s³,                       (5.5a)
        F_d(v) = c v + d2 v² + d3 v³ + d4 v⁴,   v_lo < v < v_hi    (5.5b)
        F_d(v) = F_d(v_b) + F_d'(v_b)(v − v_b) beyond v_b ∈ {v_lo, v_hi}  (5.5c, d)

    with s = l the distance of the end points and v = l̇; T = F_s + F_d (both are
    tensions: F_s(0.44056 m) = −128 N, the 128 N compression of table 5.5; F_d grows
    with extension rate).  Gap filled: the seed's tails (−416.42 + 1844.3 v and
    1919.1638 + 1634.727 v) are the tangent lines of the polynomial at v_lo = −0.2 and
    v_hi = 0.21 to 4–5 digits; writing them as those tangent lines keeps F_d C¹ for
    every c (c is a design variable; fixed tails would make F_d jump once c moves).
    p = (s'_a, g_a, s'_b, g_b, k, c, a0, a2, a3, d2, d3, d4, v_lo, v_hi); defaults
    ``ILTIS_SPRING_DAMPER``.
    """
    np_ = 18

    @staticmethod
    def damper(v, c, d2, d3, d4):
        return v * (c + v * (d2 + v * (d3 + v * d4)))

    @staticmethod
    def damper_slope(v, c, d2, d3, d4):
        return c + v * (2 * d2 + v * (3 * d3 + v * 4 * d4))

    def tension(self, l, ldot, p):
        k, c, a0, a2, a3, d2, d3, d4, vlo, vhi = (p[..., 8 + i] for i in range(10))
        Fs = a0 + l * (k + l * (a2 + l * a3))
        mid = self.damper(ldot, c, d2, d3, d4)
        lo = self.damper(vlo, c, d2, d3, d4) + self.damper_slope(vlo, c, d2, d3, d4) * (ldot - vlo)
        hi = self.damper(vhi, c, d2, d3, d4) + self.damper_slope(vhi, c, d2, d3, d4) * (ldot - vhi)
        vr = np.real(ldot)
        Fd = np.where(vr <= np.real(vlo), lo, np.where(vr >= np.real(vhi), hi, mid))
        return Fs + Fd

    def potential(self, l, p):
        """V = ∫ F_s dl = a0 l + k l²/2 + a2 l³/3 + a3 l⁴/4 (the elastic part)."""
        k, a0, a2, a3 = p[..., 8], p[..., 10], p[..., 11], p[..., 12]
        return l * (a0 + l * (k / 2 + l * (a2 / 3 + l * a3 / 4)))


@register
class SpatialBumpStop(PointToPoint):
    """Bump stop (seed 004 eq. 5.4: F_B = −k_B (s − s₀) for s < s₀, 0 beyond) with a
    C² engagement: compression F_B = P_{k_B δ}(k_B g_δ(x) + c_B σ_δ(x) ẋ), x = s₀ − l
    (``model/smooth.py``; P the C² clamp at zero, so the damper never pulls), T = −F_B.  δ → 0 recovers eq. 5.4 (the force is offset by at most k_B δ/2); at the
    onset x = 0 the force and its derivatives are exactly zero.  Gap filled: the seed's
    stop has no damping; c_B (default 0) is there for stops that need it.
    p = (s'_a, g_a, s'_b, g_b, k_B, s₀, δ, c_B)."""
    np_ = 12

    def tension(self, l, ldot, p):
        k, s0, delta, c = p[..., 8], p[..., 9], p[..., 10], p[..., 11]
        x = s0 - l
        return -smooth.positive(k * smooth.ramp(x, delta) - c * smooth.step(x, delta) * ldot, k * delta)

    def potential(self, l, p):
        """V = k_B G_δ(s₀ − l) (exact potential outside the band 0 < s₀ − l < 1.5δ)."""
        return p[..., 8] * smooth.ramp_integral(p[..., 9] - l, p[..., 10])


@register
class SpatialBushing(SpatialElement):
    """Linear 6-DOF bushing between the frames of bodies a and b (axes of body a).

    Translation: δ = A_aᵀ (P_b − P_a), δ̇ = A_aᵀ (v_Pb − v_Pa)   (body-a components)
    Rotation:    p_err = p₀* ∘ p_a* ∘ p_b, θ = A(p₀) 2 e_err ≈ the small rotation of b
                 relative to its reference orientation p₀ (relative to a), body-a
                 components (2 e_err = 2 sin(φ/2) u: exact direction, φ to 3rd order);
                 ω_rel = A_aᵀ (ω_b − ω_a).
    f = K_t δ + C_t δ̇,  m = K_r θ + C_r ω_rel (diagonal K, C);  F = A_a f, M = A_a m
    act on a (+F at P_a, +M) and b (−F at P_b, −M).
    p = (s'_a, g_a, s'_b, g_b, p₀(4), k_t(3), k_r(3), c_t(3), c_r(3)).
    Not exactly conservative (the frame of a turns); ``energy`` is ½δᵀK_tδ + ½θᵀK_rθ.
    """
    nb, nq, np_ = 2, 14, 24
    gidx = (3, 7)
    uses_v = True

    def kinematics(self, q, v, p):
        (qa, va), (qb, vb) = self.bodies(q, v, p)
        sa, sb, p0 = p[..., 0:3], p[..., 4:7], p[..., 8:12]
        Aa = rotation(qa[..., 3:7])
        dg = point_position(qb, sb) - point_position(qa, sa)
        dvg = point_velocity(qb, vb, sb) - point_velocity(qa, va, sa)
        delta = np.einsum("...ji,...j->...i", Aa, dg)
        ddot = np.einsum("...ji,...j->...i", Aa, dvg)
        perr = quat_product(conj(p0), quat_product(conj(qa[..., 3:7]), qb[..., 3:7]))
        theta = mv(rotation(p0), 2.0 * perr[..., 1:])
        wrel = np.einsum("...ji,...j->...i", Aa, omega_global(qb[..., 3:7], vb[..., 3:7])
                         - omega_global(qa[..., 3:7], va[..., 3:7]))
        return qa, qb, sa, sb, Aa, delta, ddot, theta, wrel

    def r(self, t, q, v, a, p):
        qa, qb, sa, sb, Aa, delta, ddot, theta, wrel = self.kinematics(q, v, p)
        kt, kr, ct, cr = p[..., 12:15], p[..., 15:18], p[..., 18:21], p[..., 21:24]
        F = mv(Aa, kt * delta + ct * ddot)
        M = mv(Aa, kr * theta + cr * wrel)
        Qa = point_load(qa, sa, F) + torque_load(qa, M)
        Qb = point_load(qb, sb, -F) + torque_load(qb, -M)
        return -np.concatenate([Qa, Qb], -1)

    def energy(self, t, q, v, p):
        _, _, _, _, _, delta, _, theta, _ = self.kinematics(q, 0.0 * q, p)
        return 0.5 * (dot(p[..., 12:15] * delta, delta) + dot(p[..., 15:18] * theta, theta))


class _TimeLoad(SpatialElement):
    def __init__(self, names, qidx, pidx, function=None):
        self.function = function if function is not None else Constant()
        self.np_ = self.base_np + self.function.ncoef
        super().__init__(names, qidx, pidx)


@register
class SpatialPointForce(_TimeLoad):
    """Force F f(t) (global components) at the body point s': p = (s', g, F, coeffs)."""
    nq, nb, base_np, np_ = 7, 1, 7, 7

    def r(self, t, q, v, a, p):
        qb = self.body(q, p, 0)
        F = p[..., 4:7] * self.function(t, p[..., 7:], 0)[..., None]
        return -point_load(qb, p[..., 0:3] + 0.0 * qb[..., 0:3], F + 0.0 * qb[..., 0:3])


@register
class SpatialTorque(_TimeLoad):
    """Torque T f(t) (global components) on a body: p = (g, T, coeffs)."""
    nq, nb, base_np, np_ = 7, 1, 4, 4
    gidx = (0,)

    def r(self, t, q, v, a, p):
        qb = self.body(q, p, 0)
        T = p[..., 1:4] * self.function(t, p[..., 4:], 0)[..., None]
        return -torque_load(qb, T + 0.0 * qb[..., 0:3])
