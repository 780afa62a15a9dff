"""Penalty contact of a body sphere with a plane or the road, with smooth friction.

A sphere of radius ρ centred at the body point P (ρ = 0: a point) touches a surface with
unit normal n; r is the distance of P from the surface (``PlaneContact``: r = n·(P − O);
``RoadContact``: ``road.normal_and_gap``), the penetration is x = ρ − r and its rate
ẋ = −n·v_P (exact on a plane; on a curved road it leaves out the turning of n).

Normal force (compression ≥ 0), C² at the onset x = 0 (``model/smooth.py``):

    F_n = P_{kδ}( k g_δ(x) + λ g_δ(x) ẋ + c σ_δ(x) ẋ )

k g_δ(x) is the penalty spring (g_δ → max(0, x) as δ → 0), λ g_δ(x) ẋ a Hunt–Crossley
damping of exponent 1 (Hunt & Crossley 1975: damping proportional to penetration, so no
force jump at impact), c σ_δ(x) ẋ a linear damper faded in over δ.  Both dampers vanish
at the onset, so r, r_q, r_v are finite and continuous there.  P_w = ``smooth.positive``
clamps the sum at zero (C²; identity above w = kδ, the spring force one smoothing width
deep), so a fast rebound does not make the surface pull (without it, the damper pulls
whenever ẋ < −k g/(c σ + λ g)).

Friction (Coulomb, regularised):  F_t = −μ F_n v_t / √(|v_t|² + ε²), with v_t the
tangential velocity of the sphere's material point at the contact C = P − ρ n,
v_C = v_P + ω × (−ρ n).  At v_t = 0 the direction is 0/ε = 0 (finite, no NaN); for
|v_t| ≫ ε it is μ F_n against the slip.

The load F = F_n n + F_t acts at C: point_load at the material point P (``forces.py``)
plus the torque (−ρ n) × F_t.  Energy (for plots): k G_δ(x), the exact potential of the
spring part on a plane outside the onset band 0 < x < 1.5δ (where P clamps); on a
curved road the force follows n, which is not the exact gradient of G_δ(x(q)), so the
energy there is indicative.
"""
import numpy as np

from ..model.component import register
from .forces import (SpatialElement, point_load, torque_load, point_position, point_velocity, omega_global,
                     cross)
from .kinematics import dot
from .road import normal_and_gap, PlaneRoad
from ..model import smooth
from ..model.smooth import normal_force


class _SphereContact(SpatialElement):
    """Shared residual; subclasses give (n, r) for the sphere centre P.
    p = (s', g, ρ, k, λ, c, δ, μ, ε, [surface parameters])."""
    nb, nq = 1, 7
    uses_v = True
    surface_np = 0

    def surface(self, P, p):
        raise NotImplementedError

    def state(self, q, v, p):
        qb = self.body(q, p, 0)
        vb = v[..., 0:7]
        s = p[..., 0:3]
        P = point_position(qb, s)
        vP = point_velocity(qb, vb, s)
        n, r = self.surface(P, p)
        return qb, vb, s, vP, n, r

    def r(self, t, q, v, a, p):
        qb, vb, s, vP, n, r = self.state(q, v, p)
        rho, k, lam, c, delta, mu, eps = (p[..., 4 + i] for i in range(7))
        x = rho - r
        Fn = normal_force(x, -dot(n, vP), k, lam, c, delta)
        d = -rho[..., None] * n
        vC = vP + cross(omega_global(qb[..., 3:7], vb[..., 3:7]), d)
        vt = vC - dot(n, vC)[..., None] * n
        Ft = -(mu * Fn)[..., None] * smooth.regularized_unit(vt, eps)
        F = Fn[..., None] * n + Ft
        return -(point_load(qb, s, F) + torque_load(qb, cross(d, Ft)))

    def energy(self, t, q, v, p):
        _, _, _, _, _, r = self.state(q, 0.0 * q, p)
        return p[..., 5] * smooth.ramp_integral(p[..., 4] - r, p[..., 8])


@register
class PlaneContact(_SphereContact):
    """Sphere–plane contact; the plane passes through O with normal n (any direction,
    normalised here): p = (s', g, ρ, k, λ, c, δ, μ, ε, O(3), n(3))."""
    np_ = 17

    def surface(self, P, p):
        O, nn = p[..., 11:14], p[..., 14:17]
        n = nn / np.sqrt(dot(nn, nn))[..., None]
        return n, dot(n, P - O)


@register
class RoadContact(_SphereContact):
    """Sphere–road contact on a ``road.Road`` (constructor keyword ``road``):
    p = (s', g, ρ, k, λ, c, δ, μ, ε)."""
    np_ = 11

    def __init__(self, names, qidx, pidx, road=None):
        self.road = road if road is not None else PlaneRoad()
        super().__init__(names, qidx, pidx)

    def surface(self, P, p):
        return normal_and_gap(self.road, P)
