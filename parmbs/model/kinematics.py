"""Planar rigid-body point kinematics, written once for every component.

A body's coordinates are its centre of mass and angle, q_b = (x, y, θ).  A point P
with body-local coordinates P̄ sits at

    r_P = x + A(θ) s,   s = P̄ − c̄   (c̄: body-local centre of mass)

with A(θ) the rotation matrix.  Its derivatives follow from dA/dθ = A R (R = rot 90°):

    ∂r_P/∂θ = A R s = ``drot``,   ∂²r_P/∂θ² = −A s = −``rot``.

All functions broadcast over leading axes and are complex-step safe (no abs, no
conjugation), which the generic derivative machinery in ``component.py`` relies on.
"""
import numpy as np


def rot(th, s):
    """A(θ) s for angles ``th`` (...) and vectors ``s`` (..., 2)."""
    c, sn = np.cos(th), np.sin(th)
    return np.stack([c * s[..., 0] - sn * s[..., 1], sn * s[..., 0] + c * s[..., 1]], -1)


def drot(th, s):
    """dA/dθ s = A(θ) R s."""
    c, sn = np.cos(th), np.sin(th)
    return np.stack([-sn * s[..., 0] - c * s[..., 1], c * s[..., 0] - sn * s[..., 1]], -1)


def point_position(qb, s):
    """r_P for body coordinates ``qb`` (..., 3) and COM-relative offset ``s``."""
    return qb[..., 0:2] + rot(qb[..., 2], s)


def point_velocity(qb, vb, s):
    """ṙ_P = ẋ + A R s θ̇."""
    return vb[..., 0:2] + drot(qb[..., 2], s) * vb[..., 2, None]


def point_acceleration(qb, vb, ab, s):
    """r̈_P = ẍ + A R s θ̈ − A s θ̇²."""
    th = qb[..., 2]
    return (ab[..., 0:2] + drot(th, s) * ab[..., 2, None]
            - rot(th, s) * (vb[..., 2] ** 2)[..., None])


def dot(a, b):
    """Complex-step safe dot product over the last axis (no conjugation)."""
    return np.sum(a * b, axis=-1)


def stack(arrays, axis=-1):
    """np.stack after broadcasting (the pieces may carry different leading axes)."""
    return np.stack(np.broadcast_arrays(*arrays), axis)


def concat(arrays, axis=-1):
    """np.concatenate after broadcasting all but the joined axis."""
    shapes = [a.shape[:-1] for a in arrays]
    lead = np.broadcast_shapes(*shapes)
    return np.concatenate([np.broadcast_to(a, lead + a.shape[-1:]) for a in arrays], axis)
