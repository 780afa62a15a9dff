"""Spatial rigid bodies in natural coordinates (seed 000 §5.2, Eqs. 36–40, App. B).

Body coordinates q_b = (r, e₁, e₂, e₃) ∈ R¹²: the centre of mass r and the body axes
e_k (the columns of the rotation matrix A = [e₁ e₂ e₃]) [Eq. 36].  A body point with
body-frame offset s' = (x̄, ȳ, z̄) from the centre of mass is

    r_P = r + x̄ e₁ + ȳ e₂ + z̄ e₃ = C(s') q_b,   C = [I, x̄ I, ȳ I, z̄ I]     [Eq. 37]

— linear in q_b, so joints at body points add nothing to γ and the kinetic energy
T = ½∫ρ|ṙ_P|² dV = ½ q̇ᵀ M q̇ has the constant mass matrix [App. B, Eq. 61]

    M = [[m I, 0], [0, J̄ ⊗ I]],   J̄ = ∫ρ s' s'ᵀ dV = ½ tr(J) I − J,

J the inertia tensor about the centre of mass in the body frame (the first moments
vanish at the centre of mass); for principal axes J̄ = diag(½(J₂+J₃−J₁), ½(J₁+J₃−J₂),
½(J₁+J₂−J₃)) [Eq. 39].  Gravity: r = −m g on r only [Eq. 40] (``bodies.SpatialGravity``,
the same as for Euler-parameter bodies).  Six internal
constraints keep the axes orthonormal [Eq. 38]:

    Φ = (e₁·e₁ − 1, e₂·e₂ − 1, e₃·e₃ − 1, e₁·e₂, e₁·e₃, e₂·e₃),
    γ = (2ė₁·ė₁, 2ė₂·ė₂, 2ė₃·ė₃, 2ė₁·ė₂, 2ė₁·ė₃, 2ė₂·ė₃)

(handedness, det A = +1, is kept by continuity from the initial orientation).  With a
constant M the variational integrator (seed 000 §3) takes these bodies, unlike the
Euler-parameter bodies of ``bodies.py``.
"""
import numpy as np

from ..model.component import Constraint, Force, register
from .bodies import inertia_matrix
from .kinematics import dot

_PAIRS = ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))


def jbar(p):
    """J̄ = ½ tr(J) I − J (..., 3, 3) from (J_xx, J_yy, J_zz, J_xy, J_xz, J_yz) (..., 6)."""
    J = inertia_matrix(p)
    tr = J[..., 0, 0] + J[..., 1, 1] + J[..., 2, 2]
    return 0.5 * tr[..., None, None] * np.eye(3) - J


@register
class NaturalInertia(Force):
    """r = M q̈ with the constant mass matrix of the module docstring;
    q = (r, e₁, e₂, e₃) (12), p = (m, J_xx, J_yy, J_zz, J_xy, J_xz, J_yz)."""
    nq, np_ = 12, 7
    inertial = True
    uses_q = False
    uses_a = True

    def mass(self, p):
        B = np.zeros(p.shape[:-1] + (4, 4), dtype=p.dtype)
        B[..., 0, 0] = p[..., 0]
        B[..., 1:, 1:] = jbar(p[..., 1:7])
        out = np.zeros(p.shape[:-1] + (4, 3, 4, 3), dtype=p.dtype)
        for c in range(3):
            out[..., :, c, :, c] = B
        return out.reshape(p.shape[:-1] + (12, 12))

    def r(self, t, q, v, a, p):
        return np.einsum("...ij,...j->...i", self.mass(p), a) + 0.0 * q

    def r_a(self, t, q, v, a, p):
        return np.broadcast_to(self.mass(p), q.shape[:-1] + (12, 12))

    def energy(self, t, q, v, p):
        """T = ½ vᵀ M v."""
        return 0.5 * np.einsum("...i,...ij,...j->...", v, self.mass(p), v)


@register
class NaturalOrthonormality(Constraint):
    """The six internal constraints of the module docstring; q = (e₁, e₂, e₃) (9),
    p = (unused,)."""
    nq, np_, m = 9, 1, 6

    @staticmethod
    def _e(x):
        return x[..., 0:3], x[..., 3:6], x[..., 6:9]

    def phi(self, t, q, p):
        e = self._e(q)
        z = 0.0 * p[..., 0]
        return np.stack([dot(e[i], e[j]) - (1.0 if i == j else 0.0) + z for i, j in _PAIRS], -1)

    def phi_q(self, t, q, p):
        e = self._e(q)
        J = np.zeros(np.broadcast_shapes(q.shape[:-1], p.shape[:-1]) + (6, 9), dtype=np.result_type(q, p))
        for row, (i, j) in enumerate(_PAIRS):
            J[..., row, 3 * i:3 * i + 3] += e[j]
            J[..., row, 3 * j:3 * j + 3] += e[i]
        return J

    def gamma(self, t, q, v, p):
        ed = self._e(v)
        z = 0.0 * (q[..., 0] + p[..., 0])
        return np.stack([2.0 * dot(ed[i], ed[j]) + z for i, j in _PAIRS], -1)


@register
class Beam3Pose(Constraint):
    """One row on a point r and a direction d, q = (r, d) (6), p = (value, n (3)):
    ``position``: n·r − value;  ``slope``: n·d − value;  ``unit``: |d|² − 1 (p unused).
    The root node (r_0, r′_0) of a spatial beam (flexible/spatial_beams.py) and the
    centre and one axis (r, e_k) of a natural-coordinate body (natural_set.py)."""
    nq, np_, m = 6, 4, 1

    def __init__(self, names, qidx, pidx, rows, coordinate="position"):
        self.coordinate = coordinate
        super().__init__(names, qidx, pidx, rows)

    def phi(self, t, q, p):
        c = self.coordinate
        if c == "unit":
            val = dot(q[..., 3:6], q[..., 3:6]) - 1.0 + 0.0 * p[..., 0]
        else:
            o = 0 if c == "position" else 3
            val = dot(p[..., 1:4], q[..., o:o + 3]) - p[..., 0]
        return val[..., None]

    def phi_q(self, t, q, p):
        c = self.coordinate
        J = np.zeros(np.broadcast_shapes(q.shape[:-1], p.shape[:-1]) + (1, 6), dtype=np.result_type(q, p))
        if c == "unit":
            J[..., 0, 3:6] = 2.0 * q[..., 3:6]
        else:
            o = 0 if c == "position" else 3
            J[..., 0, o:o + 3] = p[..., 1:4]
        return J

    def gamma(self, t, q, v, p):
        z = 0.0 * (q[..., 0] + p[..., 0] + v[..., 0])
        if self.coordinate == "unit":
            z = z + 2.0 * dot(v[..., 3:6], v[..., 3:6])
        return z[..., None]
