"""Spatial rigid-body kinematics in Euler parameters (Nikravesh 1988, ch. 6; Haug 1989, ch. 9).

Each spatial body has 7 coordinates q_b = (x, y, z, e0, e1, e2, e3): the global position
r of its centre of mass and the Euler parameters p = (e0, e) of its orientation, with
the normalisation constraint pᵀp − 1 = 0 as an extra constraint row per body.  Euler
parameters are singularity-free (no gimbal lock, unlike Bryant/Euler angles), polynomial
(the rotation matrix is quadratic in p, so every derivative block is exact and cheap
under complex step), and they are what the Iltis model of seed 004 §5.2 uses
(20 bodies → 140 coordinates).

Conventions (used by every spatial component):

* body-local vectors carry a prime in the docstrings: s' ;  global s = A s'.
* A(p) = (e0² − eᵀe) I + 2 e eᵀ + 2 e0 ẽ                         (Nikravesh eq. 6.19)
* G(p) = [−e, −ẽ + e0 I],  E(p) = [−e, ẽ + e0 I]   (3×4),  A = E Gᵀ  (eqs. 6.32–6.37)
* angular velocity: ω = 2 E ṗ (global),  ω' = 2 G ṗ (body)          (eq. 6.40)
* A(p) = B(p, p) with the symmetric bilinear form B below, so
  Ȧ = 2 B(p, ṗ),  Ä = 2 B(ṗ, ṗ) + 2 B(p, p̈)  — used for point velocities and the γ terms.

Every function broadcasts over leading axes and is complex-step safe (no abs, no conj,
no branches on values): components differentiate through them with ``cs_jacobian``.
"""
import numpy as np

EYE3 = np.eye(3)


def skew(u):
    """ũ with ũ w = u × w: (..., 3) -> (..., 3, 3)."""
    u = np.asarray(u)
    out = np.zeros(u.shape[:-1] + (3, 3), u.dtype)
    out[..., 0, 1], out[..., 0, 2] = -u[..., 2], u[..., 1]
    out[..., 1, 0], out[..., 1, 2] = u[..., 2], -u[..., 0]
    out[..., 2, 0], out[..., 2, 1] = -u[..., 1], u[..., 0]
    return out


def bilinear(a, b):
    """Symmetric bilinear form with B(p, p) = A(p):
    B(a, b) = (a0 b0 − a·b) I + (a bᵀ + b aᵀ) + (a0 b̃ + b0 ã),  a, b (..., 4)
    (the last term written as one skew matrix of a0 b + b0 a: skew is linear)."""
    a, b = np.asarray(a), np.asarray(b)
    a0, av, b0, bv = a[..., 0], a[..., 1:], b[..., 0], b[..., 1:]
    s = a0 * b0 - np.einsum("...i,...i->...", av, bv)
    out = av[..., :, None] * bv[..., None, :]
    out = out + np.swapaxes(out, -1, -2) + skew(a0[..., None] * bv + b0[..., None] * av)
    for k in range(3):
        out[..., k, k] += s
    return out


def rotation(p):
    """A(p) (..., 3, 3): body-local -> global (eq. 6.19).  Orthogonal only on pᵀp = 1."""
    return bilinear(p, p)


def rotation_dot(p, pd):
    """Ȧ = 2 B(p, ṗ)."""
    return 2.0 * bilinear(p, pd)


def rotation_ddot(p, pd, pdd):
    """Ä = 2 B(ṗ, ṗ) + 2 B(p, p̈)."""
    return 2.0 * (bilinear(pd, pd) + bilinear(p, pdd))


def G_matrix(p):
    """G(p) = [−e, −ẽ + e0 I] (..., 3, 4): ω' = 2 G ṗ (body frame)."""
    p = np.asarray(p)
    e0, e = p[..., 0], p[..., 1:]
    return np.concatenate([-e[..., :, None], -skew(e) + e0[..., None, None] * EYE3], -1)


def E_matrix(p):
    """E(p) = [−e, ẽ + e0 I] (..., 3, 4): ω = 2 E ṗ (global frame)."""
    p = np.asarray(p)
    e0, e = p[..., 0], p[..., 1:]
    return np.concatenate([-e[..., :, None], skew(e) + e0[..., None, None] * EYE3], -1)


def omega_global(p, pd):
    """ω = 2 E(p) ṗ (..., 3)."""
    return 2.0 * np.einsum("...ij,...j->...i", E_matrix(p), pd)


def omega_body(p, pd):
    """ω' = 2 G(p) ṗ (..., 3)."""
    return 2.0 * np.einsum("...ij,...j->...i", G_matrix(p), pd)


def mv(M, x):
    """Batched matrix-vector product M x."""
    return np.einsum("...ij,...j->...i", M, x)


def dot(a, b):
    """Batched dot product over the last axis (no conjugation: complex-step safe)."""
    return np.einsum("...i,...i->...", a, b)


def cross(a, b):
    """a × b over the last axis (complex-step safe)."""
    a, b = np.asarray(a), np.asarray(b)
    out = np.empty(np.broadcast_shapes(a.shape, b.shape), np.result_type(a, b))
    out[..., 0] = a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1]
    out[..., 1] = a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2]
    out[..., 2] = a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    return out


def point_position(qb, s):
    """r + A(p) s' for body coordinates qb (..., 7) and a body-local point s' (..., 3)."""
    return qb[..., :3] + mv(rotation(qb[..., 3:7]), s)


def point_velocity(qb, vb, s):
    """ṙ + Ȧ s'."""
    return vb[..., :3] + mv(rotation_dot(qb[..., 3:7], vb[..., 3:7]), s)


def point_acceleration(qb, vb, ab, s):
    """r̈ + Ä s'."""
    return ab[..., :3] + mv(rotation_ddot(qb[..., 3:7], vb[..., 3:7], ab[..., 3:7]), s)


def vector_global(qb, u):
    """A(p) u' : a body-fixed direction in the global frame."""
    return mv(rotation(qb[..., 3:7]), u)


# -- initial conditions (real arithmetic only) -------------------------------------
def from_axis_angle(axis, angle):
    """Euler parameters of a rotation by ``angle`` about the unit ``axis``:
    p = (cos φ/2, sin φ/2 u)."""
    u = np.asarray(axis, float)
    u = u / np.linalg.norm(u)
    return np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * u])


def from_matrix(A):
    """Euler parameters of an orthogonal matrix (Shepperd's method, e0 ≥ 0)."""
    A = np.asarray(A, float)
    tr = np.trace(A)
    d = np.array([tr, A[0, 0], A[1, 1], A[2, 2]])
    k = int(np.argmax(d))
    if k == 0:
        e0 = 0.5 * np.sqrt(1 + tr)
        p = [e0, (A[2, 1] - A[1, 2]) / (4 * e0), (A[0, 2] - A[2, 0]) / (4 * e0),
             (A[1, 0] - A[0, 1]) / (4 * e0)]
    else:
        i, j, l = k - 1, k % 3, (k + 1) % 3
        ei = 0.5 * np.sqrt(1 + 2 * A[i, i] - tr)
        p = [0.0] * 4
        p[1 + i] = ei
        p[0] = (A[l, j] - A[j, l]) / (4 * ei)
        p[1 + j] = (A[j, i] + A[i, j]) / (4 * ei)
        p[1 + l] = (A[l, i] + A[i, l]) / (4 * ei)
    p = np.array(p)
    return p if p[0] >= 0 else -p


def from_bryant(angles):
    """Euler parameters of Bryant (Cardan x-y'-z'') angles (φ, θ, ψ): A = Rx(φ) Ry(θ) Rz(ψ)."""
    out = np.array([1.0, 0, 0, 0])
    for axis, ang in zip(EYE3, angles):
        out = quat_product(out, from_axis_angle(axis, ang))
    return out


def pose_euler_parameters(pose):
    """Euler parameters of a config pose (config/spatial_schema.SpatialPose): its unit
    ``orientation``, else its ``bryant`` angles, else the identity (1, 0, 0, 0)."""
    if pose.orientation is not None:
        p = np.array(pose.orientation, float)
        return p / np.linalg.norm(p)
    return from_bryant(pose.bryant) if pose.bryant is not None else np.array([1.0, 0.0, 0.0, 0.0])


def quat_product(a, b):
    """Euler-parameter product a ∘ b, so that A(a ∘ b) = A(a) A(b)."""
    a0, av, b0, bv = a[..., 0], a[..., 1:], b[..., 0], b[..., 1:]
    return np.concatenate([(a0 * b0 - dot(av, bv))[..., None],
                           a0[..., None] * bv + b0[..., None] * av + cross(av, bv)], -1)


def pdot_from_omega(p, omega):
    """ṗ = ½ E(p)ᵀ ω for a global angular velocity ω (satisfies pᵀṗ = 0 on pᵀp = 1)."""
    return 0.5 * np.einsum("...ji,...j->...i", E_matrix(p), omega)


# -- derivatives used by the components' analytic Φ_q ------------------------------
E0 = np.array([1.0, 0.0, 0.0, 0.0])


def rotation_jacobian(p, s):
    """∂(A(p) s')/∂p (..., 3, 4), differentiating A = B(p, p): column k is 2 B(p, e_k) s',
    in closed form 2 [e0 s' + ẽ s',  (eᵀs') I + e s'ᵀ − s' eᵀ − e0 s̃'].
    Valid for any p (not only |p| = 1); complex-step safe."""
    p, s = np.asarray(p), np.asarray(s)
    e0, e = p[..., 0], p[..., 1:]
    c0 = e0[..., None] * s + cross(e, s)
    es = dot(e, s)
    rest = (es[..., None, None] * EYE3 + e[..., :, None] * s[..., None, :]
            - s[..., :, None] * e[..., None, :] - e0[..., None, None] * skew(s))
    return 2.0 * np.concatenate([c0[..., :, None], rest], -1)
