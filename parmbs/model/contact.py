"""Planar contact: a body circle on a ground line, and a one-sided rotational stop.

Both are the planar counterparts of the spatial sphere contact (``spatial/contact.py``)
and share its smooth normal law (``spatial.contact.normal_force``, C² switches of
``model/smooth.py``), so r, r_q and r_v are continuous at the onset and the direct
and adjoint sensitivities are defined through every touchdown and lift-off.

``PlanarContact``: a circle of radius ρ centred at the body point P (ρ = 0: a point
foot) against the ground line through O with unit normal n (normalised here).  With
r = n·(P − O) the distance of P from the line, the penetration is x = ρ − r and its
rate ẋ = −n·v_P (exact: the line does not move).

    F_n = P_{kδ}( k g_δ(x) + λ g_δ(x) ẋ + c σ_δ(x) ẋ )                 (normal, ≥ 0)
    F_t = −μ F_n v_t / √(v_t² + ε²),  v_t = t·v_C,  t = (n_y, −n_x)    (friction)

k g_δ(x) is the penalty spring, λ g_δ(x) ẋ the Hunt–Crossley damper (Hunt & Crossley
1975: damping proportional to the penetration, so no force jump at impact), c σ_δ(x) ẋ
a linear damper faded in over δ; P_w clamps the sum at zero (no pull on a fast
rebound).  This replaces the Kelvin–Voigt law of [Zhu 2014] eq. 5.21 (F = Kδⁿ + D δ̇
on loading, c D δ̇ on unloading), whose damper jumps at the onset and switches on the
sign of δ̇: neither is differentiable, and the sensitivity equations need r ∈ C¹.
The friction is Coulomb regularised by ε, the smooth counterpart of Ambrósio's
piecewise-linear correction c_d of eq. 5.22–5.23 (which has kinks at v₀ and v₁).
v_C is the velocity of the circle's material point at the contact C = P − ρ n:
v_C = v_P + ω k × (−ρ n).  The load F_n n + F_t t acts at C: on the body,
Q = (F, (C − x)×F) with C − x = A s − ρ n;  r = −Q.
p = (P̄, c̄, ρ, k, λ, c, δ, μ, ε, O, n).

``RotationalStop``: a bump stop between bodies a and b on their relative angle,
x = σ (θ_b − θ_a − θ₀) with σ = +1 (stop above θ₀) or −1 (below θ₀, the ``sign``
constructor keyword); the same normal law gives the stop torque M ≥ 0, acting to reduce
x: r_θb = σ M, r_θa = −σ M.  p = (θ₀, k, λ, c, δ).  The knee stop of the passive walker
([Zhu 2014] §5.3.2: "a bump stop is installed on the knee").

``StanceLock``: the knee lock of [Zhu 2014] §5.3.2 ("after the heel-strike, the knee is
locked by a spring-damper system ... prevent the knee from bending"), with the switch
made smooth: a rotational spring-damper on φ = θ_b − θ_a − θ₀ scaled by the engagement
σ_w(x) of a contact point P on body b (x its penetration of the contact's ground line,
as in ``PlanarContact``; σ_w the C¹ step of ``smooth.step`` over the width w):

    M = σ_w(x) (k φ + c φ̇),   r_θa = −M, r_θb = +M.

On the ground the knee is held straight; in the air it is free, as in the hybrid
models (stance knee locked, swing knee unlocked at toe-off).  p = (P̄, c̄, ρ, O, n, θ₀,
k, c, w), P̄, c̄, ρ, O, n shared with the contact element.

Energies (for the energy plots and balance): k G_δ(x), exact for the spring part
outside the clamp band 0 < x < 1.5 δ.
"""
import numpy as np

from .component import Force, register
from .kinematics import rot, drot, dot, stack
from . import smooth
from .smooth import normal_force


def _unit(nn):
    return nn / np.sqrt(dot(nn, nn))[..., None]


def _cross(a, b):
    """z-component of the planar cross product a × b."""
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


@register
class PlanarContact(Force):
    """Circle (radius ρ, centre P on the body) on a ground line; module docstring."""
    nq, np_ = 3, 15
    uses_v = True

    @staticmethod
    def state(q, v, p):
        """Offset s of P, its position and velocity, the line normal n and distance r."""
        s = p[..., 0:2] - p[..., 2:4]
        P = q[..., 0:2] + rot(q[..., 2], s)
        vP = v[..., 0:2] + drot(q[..., 2], s) * v[..., 2, None]
        n = _unit(p[..., 13:15])
        return s, P, vP, n, dot(n, P - p[..., 11:13])

    def r(self, t, q, v, a, p):
        s, P, vP, n, r = self.state(q, v, p)
        rho, k, lam, c, delta, mu, eps = (p[..., 4 + i] for i in range(7))
        Fn = normal_force(rho - r, -dot(n, vP), k, lam, c, delta)
        tang = stack([n[..., 1], -n[..., 0]], -1)
        d = rot(q[..., 2], s) - rho[..., None] * n            # C − x
        w = v[..., 2, None]
        vC = vP - rho[..., None] * w * stack([-n[..., 1], n[..., 0]], -1)   # ω k × (−ρ n)
        vt = dot(tang, vC)
        Ft = -mu * Fn * vt / np.sqrt(vt * vt + eps * eps)
        F = Fn[..., None] * n + Ft[..., None] * tang
        return -stack([F[..., 0], F[..., 1], _cross(d, F)], -1)

    def energy(self, t, q, v, p):
        r = self.state(q, 0.0 * q, p)[-1]
        return p[..., 5] * smooth.ramp_integral(p[..., 4] - r, p[..., 8])


@register
class RotationalStop(Force):
    """One-sided rotational bump stop on θ_b − θ_a; module docstring."""
    nq, np_ = 6, 5
    uses_v = True

    def __init__(self, names, qidx, pidx, sign=1.0):
        self.sign = float(sign)
        super().__init__(names, qidx, pidx)

    def r(self, t, q, v, a, p):
        sg = self.sign
        x = sg * (q[..., 5] - q[..., 2] - p[..., 0])
        xdot = sg * (v[..., 5] - v[..., 2])
        M = normal_force(x, xdot, p[..., 1], p[..., 2], p[..., 3], p[..., 4])
        z = 0.0 * M
        return stack([z, z, -sg * M, z, z, sg * M], -1)

    def energy(self, t, q, v, p):
        x = self.sign * (q[..., 5] - q[..., 2] - p[..., 0])
        return p[..., 1] * smooth.ramp_integral(x, p[..., 4])


@register
class StanceLock(Force):
    """Rotational spring-damper between a and b engaged by a contact of b; module docstring."""
    nq, np_ = 6, 13
    uses_v = True

    def r(self, t, q, v, a, p):
        s = p[..., 0:2] - p[..., 2:4]
        P = q[..., 3:5] + rot(q[..., 5], s)
        n = _unit(p[..., 7:9])
        x = p[..., 4] - dot(n, P - p[..., 5:7])
        phi = q[..., 5] - q[..., 2] - p[..., 9]
        M = smooth.step(x, p[..., 12]) * (p[..., 10] * phi + p[..., 11] * (v[..., 5] - v[..., 2]))
        z = 0.0 * M
        return stack([z, z, -M, z, z, M], -1)
