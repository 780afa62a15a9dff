"""Spatial rigid bodies in Euler parameters: inertia, gravity and the normalisation row.

Body coordinates q_b = (r, p): centre of mass r and Euler parameters p (kinematics.py).
Kinetic energy (Nikravesh 1988, ch. 6; ω' = 2 G ṗ):

    T = ½ m ṙᵀṙ + ½ ω'ᵀ J' ω' = ½ m ṙᵀṙ + 2 ṗᵀ Gᵀ J' G ṗ,

and Lagrange's equations give the Euler-parameter equations of motion (Nikravesh
ch. 6; with Ġ = G(ṗ), Ġ ṗ = 0 and G(p) ṗ = −G(ṗ) p, so ∂T/∂p = −4 ĠᵀJ'G ṗ):

    m r̈ = f,      4 Gᵀ J' G p̈ + 8 Ġᵀ J' G ṗ = n_p + 2 p λ_n,

with the normalisation constraint Φ_n = pᵀp − 1 = 0 (one row per body, multiplier λ_n).
Written here in the equivalent Newton–Euler form (2Gᵀ times J'ω̇' + ω̃'J'ω' = n', with
ω̇' = 2Gp̈ because Ġṗ = 0), split into three force groups:

    SpatialInertia      (m r̈, 4 Gᵀ J' G p̈)                 inertial (α_m in generalized-α)
    SpatialGyroscopic   (0, 2 Gᵀ (ω' × J'ω')), ω' = 2 G ṗ    velocity force (α_f)
    EulerRegularization (0, c p pᵀp̈)                          inertial, absorbed by λ_n, below

Why not 8ĠᵀJ'Gṗ: both agree on pᵀṗ = 0, but index-3 steppers enforce pᵀp = 1 only, so
the discrete ṗ carries a component s = pᵀṗ ≠ 0, and 8ĠᵀJ'Gṗ adds an s-proportional
term to Euler's equations (G(p)G(ṗ)ᵀ = s I + a skew part); its p-component (−2ω'ᵀJ'ω')
also makes λ_n large, which generalized-α's old-state term α_f Φ_q(q_n)ᵀλ_n (along p_n,
not p_{n+1}) feeds into the dynamics.  A free body spinning at 200 rad/s (h = 2e-3,
ρ∞ = 0.5) blew up with it and stays bounded with this form.

Known limits of the index-3 steppers on fast-spinning bodies (measured, not fixed here):
the trapezoidal rule is second order but its alternating (−1)ⁿ mode grows at a rate
≈ |ω|/2 (heavy top at 100 rad/s: ×3 every 0.023 s; Newton fails near t = 0.39 s at
h = 1e-3); generalized-α stays bounded but is first order for anisotropic Euler-parameter
bodies (cause not isolated: a constant α_m-mass did not remove it; free body
J = diag(0.012, 0.013, 0.02) at 200 rad/s, ρ∞ = 0.8: energy loss 28, 15 J of 387 J over
0.1 s at h = 2, 1 ms; 114, 68 J before the inertial EulerRegularization below).

**Singular mass block.**  G p = 0, so 4 GᵀJ'G has the null vector p: the rotational mass
block alone is singular, and only the normalisation row 2pᵀ of Φ_q makes the saddle-point
matrix regular.  PETSc's LU in natural order (model/assembly.py, below 200 unknowns)
does not pivot: it eliminates the 4×4 block first and meets a (round-off) zero pivot —
checked: without the term below, configs/spatial-double-pendulum.toml fails in its first
step with "singular matrix (KSP reason −11)" under trapezoidal and genalpha alike.
Remedy, exact and solver-independent: ``EulerRegularization`` adds

    c p pᵀp̈,    c = 4 (J'_xx + J'_yy + J'_zz)/3,

to the rotational residual.  The term lies along p = ½ (Φ_n)_pᵀ, the normalisation
row's own constraint direction, so the DAE's solution q(t) is unchanged (λ_n absorbs it:
λ_n shifts by −c pᵀp̈/2 = c ṗᵀṗ/2), and so is the discrete solution of every scheme that
evaluates the residual at one state (trapezoidal, Newmark, the initial state).  The mass
block becomes 4GᵀJ'G + c ppᵀ, positive definite (eigenvalues 4J'_i on p's complement, c
along p).  It is ``inertial``: generalized-α then treats the Euler parameters like a
particle on the unit sphere, its centripetal force carried by λ_n — which made that
scheme far more accurate on spinning bodies (measured, ρ∞ = 0.8, dt = 1e-3, energy
lost in 1 s by a wheel J = diag(0.4, 0.8, 0.4) spinning at 30 rad/s: 17.1 J → 5.9 J of
360 J; free body J = 0.02 I at 200 rad/s over 0.1 s: 72 J → 0.06 J of 400 J), though
still first order for an anisotropic body (the wheel: 11.6, 5.9, 3.0 J at dt = 2, 1,
0.5 ms).  An earlier form c p (pᵀp̈ + ṗᵀṗ), weighted like Φ_qᵀλ, was exactly absorbed
at both states and left generalized-α's projected inertia as it was.
MUMPS with pivoting would also work, but would make every spatial model pay for its
analysis and change the solver that the rest of parmbs relies on for small models.
"""
import numpy as np

from ..model.component import ClosedFormJacobians, Constraint, Force, register
from . import body_kernels
from .kinematics import G_matrix, cross, dot, mv


_JIDX = np.array([0, 3, 4, 3, 1, 5, 4, 5, 2])     # (xx, xy, xz; xy, yy, yz; xz, yz, zz)


def inertia_matrix(j):
    """Symmetric J' (..., 3, 3) from (J_xx, J_yy, J_zz, J_xy, J_xz, J_yz) (..., 6)."""
    j = np.asarray(j)
    return np.take(j, _JIDX, -1).reshape(j.shape[:-1] + (3, 3))


@register
class SpatialInertia(Force):
    """r = (m r̈,  4 GᵀJ'G p̈) — the part proportional to the acceleration (module
    docstring); the velocity-quadratic part is ``SpatialGyroscopic``.
    p = (m, J'_xx, J'_yy, J'_zz, J'_xy, J'_xz, J'_yz) about the centre of mass, body frame."""
    nq, np_ = 7, 7
    inertial = True
    uses_q = uses_a = True

    def r(self, t, q, v, a, p):
        m, J = p[..., 0], inertia_matrix(p[..., 1:7])
        G = G_matrix(q[..., 3:7])
        rot = 4.0 * mv(np.swapaxes(G, -1, -2), mv(J, mv(G, a[..., 3:7])))
        tr = m[..., None] * a[..., 0:3] + 0.0 * q[..., 0:3]
        shape = np.broadcast_shapes(tr.shape[:-1], rot.shape[:-1])
        return np.concatenate([np.broadcast_to(tr, shape + (3,)), np.broadcast_to(rot, shape + (4,))], -1)

    #: False: the complex-step Jacobians (reference, benchmarks/spatial_speed.py)
    analytic = True

    def jacobians(self, t, q, v, a, p):
        """(r_q, None, r_a) in closed form (body_kernels.py) at a real state."""
        if not self.analytic or any(np.iscomplexobj(x) for x in (q, a, p)):
            return super().jacobians(t, q, v, a, p)
        rq, ra = body_kernels.inertia_jacobians(q, a, p[..., 0], inertia_matrix(p[..., 1:7]))
        return rq, None, ra

    def energy(self, t, q, v, p):
        """T = ½ m ṙᵀṙ + 2 ṗᵀGᵀJ'Gṗ (= ½ ω'ᵀJ'ω')."""
        w = 2.0 * mv(G_matrix(q[..., 3:7]), v[..., 3:7])
        J = inertia_matrix(p[..., 1:7])
        return 0.5 * p[..., 0] * dot(v[..., 0:3], v[..., 0:3]) + 0.5 * dot(w, mv(J, w))


@register
class SpatialGyroscopic(Force):
    """r = 2 Gᵀ (ω' × J'ω'), ω' = 2 G ṗ: the velocity-quadratic part of the Euler-parameter
    inertia forces (module docstring).  Not ``inertial``: generalized-α weights it with
    α_f like the other velocity-dependent forces (C v in its linear analysis); only the
    acceleration term M(q) a is weighted with α_m.
    q = p (4), p = (J'_xx, J'_yy, J'_zz, J'_xy, J'_xz, J'_yz)."""
    nq, np_ = 4, 6
    uses_q = uses_v = True

    def r(self, t, q, v, a, p):
        J = inertia_matrix(p)
        G = G_matrix(q)
        w = 2.0 * mv(G, v)
        return 2.0 * mv(np.swapaxes(G, -1, -2), cross(w, mv(J, w)))

    analytic = True

    def jacobians(self, t, q, v, a, p):
        """(r_q, r_v, None) in closed form (body_kernels.py) at a real state."""
        if not self.analytic or any(np.iscomplexobj(x) for x in (q, v, p)):
            return super().jacobians(t, q, v, a, p)
        rq, rv = body_kernels.gyroscopic_jacobians(q, v, inertia_matrix(p))
        return rq, rv, None


@register
class EulerRegularization(ClosedFormJacobians, Force):
    """r = c p pᵀp̈, c = 4 (J'_xx + J'_yy + J'_zz)/3 (module docstring): regularises the
    singular Euler-parameter mass block (4GᵀJ'G + c ppᵀ is positive definite); along p, so
    absorbed by the normalisation multiplier at the same state.  ``inertial``: the
    rotational inertia is then that of a particle on the unit sphere whose centripetal
    force 2pλ_n (α_f) balances c p pᵀp̈ (α_m), instead of a projected inertia 4GᵀJ'Gp̈ whose
    projector rotates between the two states generalized-α interpolates.
    q = p (4), p = (J'_xx, J'_yy, J'_zz)."""
    nq, np_ = 4, 3
    inertial = True
    uses_q = uses_a = True

    def r(self, t, q, v, a, p):
        c = 4.0 / 3.0 * (p[..., 0] + p[..., 1] + p[..., 2])
        return (c * dot(q, a))[..., None] * q

    def jacobians(self, t, q, v, a, p):
        c = (4.0 / 3.0 * (p[..., 0] + p[..., 1] + p[..., 2]))[..., None, None]
        qq = q[..., :, None]
        return c * (dot(q, a)[..., None, None] * np.eye(4) + qq * a[..., None, :]), None, c * qq * q[..., None, :]


@register
class SpatialGravity(Force):
    """r = −m g at the centre of mass;  q = r (3), p = (m, g_x, g_y, g_z)."""
    nq, np_ = 3, 4
    uses_q = False

    def r(self, t, q, v, a, p):
        return -p[..., 0:1] * p[..., 1:4] + 0.0 * q

    def energy(self, t, q, v, p):
        """V = −m g·r."""
        return -p[..., 0] * dot(p[..., 1:4], q)


@register
class Normalization(Constraint):
    """Φ = pᵀp − 1 (1 row per body), Φ_q = 2pᵀ, γ = 2ṗᵀṗ;  q = p (4).  p = (unused zero)."""
    nq, np_, m = 4, 1, 1

    def phi(self, t, q, p):
        return (dot(q, q) - 1.0 + 0.0 * p[..., 0])[..., None]

    def phi_q(self, t, q, p):
        return (2.0 * q + 0.0 * p[..., 0:1])[..., None, :]

    def gamma(self, t, q, v, p):
        return (2.0 * dot(v, v) + 0.0 * q[..., 0] + 0.0 * p[..., 0])[..., None]

    def hess_lam(self, t, q, p, lam):
        H = 2.0 * lam[..., 0, None, None] * np.eye(4)
        return H + 0.0 * q[..., None, :] + 0.0 * p[..., 0, None, None]
