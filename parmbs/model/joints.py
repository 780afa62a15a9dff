"""Joints and drivers: holonomic constraints between two bodies (or a body and ground).

Local coordinates of a two-body joint: q = (x_a, y_a, θ_a, x_b, y_b, θ_b).  Point
offsets come from the parameter vector, s = P̄ − c̄, so point coordinates and centres
of mass are differentiable design variables.
"""
import numpy as np

from .component import Constraint, register
from .kinematics import rot, drot, dot, stack, concat


def _offsets(p, k0):
    """COM-relative offset s = P̄ − c̄ from parameters [P̄x, P̄y, c̄x, c̄y] at column k0."""
    return p[..., k0:k0 + 2] - p[..., k0 + 2:k0 + 4]


@register
class Revolute(Constraint):
    """Φ = r_Pa − r_Pb = x_a + A(θ_a)s_a − x_b − A(θ_b)s_b  (2 rows).

    p = (P̄a, c̄a, P̄b, c̄b).  γ = −A(θ_a)s_a θ̇_a² + A(θ_b)s_b θ̇_b².
    """
    nq, np_, m = 6, 8, 2

    def phi(self, t, q, p):
        sa, sb = _offsets(p, 0), _offsets(p, 4)
        return q[..., 0:2] + rot(q[..., 2], sa) - q[..., 3:5] - rot(q[..., 5], sb)

    def phi_q(self, t, q, p):
        sa, sb = _offsets(p, 0), _offsets(p, 4)
        da, db = drot(q[..., 2], sa), drot(q[..., 5], sb)
        J = np.zeros(da.shape[:-1] + (2, 6), dtype=da.dtype)
        J[..., 0, 0] = J[..., 1, 1] = 1.0
        J[..., 0, 3] = J[..., 1, 4] = -1.0
        J[..., :, 2] = da
        J[..., :, 5] = -db
        return J

    def hess_lam(self, t, q, p, lam):
        """Only θθ entries: ∂²(λ·r_P)/∂θ² = −λ·A s."""
        sa, sb = _offsets(p, 0), _offsets(p, 4)
        H = np.zeros(lam.shape[:-1] + (6, 6), dtype=np.result_type(q, p, lam))
        H[..., 2, 2] = -dot(lam, rot(q[..., 2], sa))
        H[..., 5, 5] = dot(lam, rot(q[..., 5], sb))
        return H

    def gamma(self, t, q, v, p):
        sa, sb = _offsets(p, 0), _offsets(p, 4)
        return (-rot(q[..., 2], sa) * (v[..., 2] ** 2)[..., None]
                + rot(q[..., 5], sb) * (v[..., 5] ** 2)[..., None])


@register
class Prismatic(Constraint):
    """Translation of Pb along the body-a axis u, relative rotation locked (2 rows).

    Φ₁ = θ_b − θ_a − θ₀,   Φ₂ = n·d,  n = A(θ_a) R ū,  d = r_Pb − r_Pa.
    p = (P̄a, c̄a, P̄b, c̄b, ū, θ₀).
    """
    nq, np_, m = 6, 11, 2

    def _parts(self, q, p):
        sa, sb = _offsets(p, 0), _offsets(p, 4)
        u = p[..., 8:10]
        n = drot(q[..., 2], u)                    # A(θa) R u
        d = q[..., 3:5] + rot(q[..., 5], sb) - q[..., 0:2] - rot(q[..., 2], sa)
        return sa, sb, u, n, d

    def phi(self, t, q, p):
        sa, sb, u, n, d = self._parts(q, p)
        return stack([q[..., 5] - q[..., 2] - p[..., 10], dot(n, d)], -1)

    def phi_q(self, t, q, p):
        sa, sb, u, n, d = self._parts(q, p)
        J = np.zeros(n.shape[:-1] + (2, 6), dtype=n.dtype)
        J[..., 0, 2], J[..., 0, 5] = -1.0, 1.0
        J[..., 1, 0:2] = -n
        J[..., 1, 3:5] = n
        J[..., 1, 2] = -dot(rot(q[..., 2], u), d) - dot(n, drot(q[..., 2], sa))
        J[..., 1, 5] = dot(n, drot(q[..., 5], sb))
        return J

    def gamma(self, t, q, v, p):
        sa, sb, u, n, d = self._parts(q, p)
        tha, thb = q[..., 2], q[..., 5]
        wa, wb = v[..., 2], v[..., 5]
        dd = v[..., 3:5] + drot(thb, sb) * wb[..., None] - v[..., 0:2] - drot(tha, sa) * wa[..., None]
        d2 = -rot(thb, sb) * (wb ** 2)[..., None] + rot(tha, sa) * (wa ** 2)[..., None]
        ndot_dir = -rot(tha, u)                    # d n/dθa = A R R u = −A u
        g2 = (dot(-drot(tha, u), d) * wa ** 2      # n̈ (velocity part) · d: d²n/dθ² = −A R u
              + 2.0 * wa * dot(ndot_dir, dd) + dot(n, d2))
        return stack([0.0 * g2, g2], -1)


@register
class Weld(Constraint):
    """Revolute rows plus a locked relative angle: θ_b − θ_a − θ₀ = 0 (3 rows).

    p = (P̄a, c̄a, P̄b, c̄b, θ₀).
    """
    nq, np_, m = 6, 9, 3

    def phi(self, t, q, p):
        sa, sb = _offsets(p, 0), _offsets(p, 4)
        r = q[..., 0:2] + rot(q[..., 2], sa) - q[..., 3:5] - rot(q[..., 5], sb)
        return concat([r, (q[..., 5] - q[..., 2] - p[..., 8])[..., None]], -1)

    def phi_q(self, t, q, p):
        Jr = Revolute.phi_q(self, t, q, p[..., :8])
        row = np.zeros(Jr.shape[:-2] + (1, 6), dtype=Jr.dtype)
        row[..., 0, 2], row[..., 0, 5] = -1.0, 1.0
        return np.concatenate([Jr, row], -2)

    def gamma(self, t, q, v, p):
        sa, sb = _offsets(p, 0), _offsets(p, 4)
        g = (-rot(q[..., 2], sa) * (v[..., 2] ** 2)[..., None]
             + rot(q[..., 5], sb) * (v[..., 5] ** 2)[..., None])
        return concat([g, 0.0 * g[..., :1]], -1)


class _Driver(Constraint):
    """Rheonomic constraint c(q) − f(t) = 0 on one body (1 row).

    ``coordinate`` is x, y (of the body frame origin, i.e. the point at P̄ = 0) or
    angle.  p = (c̄x, c̄y, function coefficients...).
    """
    nq, m = 3, 1
    function = None       # set by ``driver_class``
    coordinate = "angle"

    def _value(self, q, p):
        if self.coordinate == "angle":
            return q[..., 2]
        k = 0 if self.coordinate == "x" else 1
        return q[..., k] + rot(q[..., 2], -p[..., 0:2])[..., k]

    def phi(self, t, q, p):
        return (self._value(q, p) - self.function(t, p[..., 2:], 0))[..., None]

    def phi_q(self, t, q, p):
        J = np.zeros(np.broadcast_shapes(q.shape[:-1], p.shape[:-1]) + (1, 3),
                     dtype=np.result_type(q, p))
        if self.coordinate == "angle":
            J[..., 0, 2] = 1.0
        else:
            k = 0 if self.coordinate == "x" else 1
            J[..., 0, k] = 1.0
            J[..., 0, 2] = drot(q[..., 2], -p[..., 0:2])[..., k]
        return J

    def phi_t(self, t, q, p):
        return (-self.function(t, p[..., 2:], 1) + 0.0 * q[..., 2])[..., None]

    def gamma(self, t, q, v, p):
        f2 = self.function(t, p[..., 2:], 2)
        if self.coordinate == "angle":
            g = -f2 + 0.0 * q[..., 2]
        else:
            k = 0 if self.coordinate == "x" else 1
            g = -rot(q[..., 2], -p[..., 0:2])[..., k] * v[..., 2] ** 2 - f2
        return g[..., None]


@register
class Driver(_Driver):
    """Driver with a polynomial f(t) (registered with 3 coefficients for the block test)."""
    np_ = 5

    def __init__(self, names, qidx, pidx, rows, coordinate="angle", function=None):
        from .timefunctions import Polynomial
        self.np_ = 2 + (function.ncoef if function is not None else 3)
        self.function = function if function is not None else Polynomial(3)
        self.coordinate = coordinate
        super().__init__(names, qidx, pidx, rows)


@register
class DistanceDriver(Constraint):
    """The distance between two points follows a time function (1 row):

        Φ = l − f(t),  l = |d|,  d = r_Pb − r_Pa = x_b + A(θ_b)s_b − x_a − A(θ_a)s_a

    (seed 004 Ch. 6's distance driver: an actuator of prescribed length).  With e = d/l:
    Φ_q = e·∂d/∂q, ∂d/∂q = [−I, −A R s_a, I, A R s_b]; Φ_t = −f′;
    Φ̈ = e·d̈ + (|ḋ|² − (e·ḋ)²)/l − f″ and d̈ = (terms in a) − A s_b θ̇_b² + A s_a θ̇_a², so

        γ = e·(A(θ_a)s_a θ̇_a² − A(θ_b)s_b θ̇_b²) + (|ḋ|² − (e·ḋ)²)/l − f″(t).

    λ is the axial force (tension > 0 pulls the points together).  Valid while l > 0.
    p = (P̄a, c̄a, P̄b, c̄b, function coefficients...); registered with a 3-coefficient
    polynomial for the block test.
    """
    nq, m = 6, 1
    np_ = 11

    def __init__(self, names, qidx, pidx, rows, function=None):
        from .timefunctions import Polynomial
        self.function = function if function is not None else Polynomial(3)
        self.np_ = 8 + self.function.ncoef
        super().__init__(names, qidx, pidx, rows)

    @staticmethod
    def _d(q, p):
        sa, sb = _offsets(p, 0), _offsets(p, 4)
        return q[..., 3:5] + rot(q[..., 5], sb) - q[..., 0:2] - rot(q[..., 2], sa), sa, sb

    def phi(self, t, q, p):
        d = self._d(q, p)[0]
        return (np.sqrt(dot(d, d)) - self.function(t, p[..., 8:], 0))[..., None]

    def phi_q(self, t, q, p):
        d, sa, sb = self._d(q, p)
        e = d / np.sqrt(dot(d, d))[..., None]
        J = np.zeros(e.shape[:-1] + (1, 6), dtype=e.dtype)
        J[..., 0, 0:2] = -e
        J[..., 0, 3:5] = e
        J[..., 0, 2] = -dot(e, drot(q[..., 2], sa))
        J[..., 0, 5] = dot(e, drot(q[..., 5], sb))
        return J

    def phi_t(self, t, q, p):
        return (-self.function(t, p[..., 8:], 1) + 0.0 * q[..., 2])[..., None]

    def gamma(self, t, q, v, p):
        d, sa, sb = self._d(q, p)
        l = np.sqrt(dot(d, d))
        e = d / l[..., None]
        dd = (v[..., 3:5] + drot(q[..., 5], sb) * v[..., 5, None]
              - v[..., 0:2] - drot(q[..., 2], sa) * v[..., 2, None])
        ed = dot(e, dd)
        cent = rot(q[..., 2], sa) * (v[..., 2] ** 2)[..., None] - rot(q[..., 5], sb) * (v[..., 5] ** 2)[..., None]
        return (dot(e, cent) + (dot(dd, dd) - ed * ed) / l - self.function(t, p[..., 8:], 2))[..., None]
