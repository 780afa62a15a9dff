"""Views of spatial (3-D) models for the trajectory plot: orthographic projections of
the bodies and the road, and rotation angles that do not fold.

Rotation from t = 0: the relative Euler parameters r = p ∘ p₀⁻¹ = (w, v) of each row,
their sign made continuous in time (r and −r are the same rotation; choosing the one
nearer the previous row's keeps the curve continuous), then the signed angle about the
body's main axis n (the direction of the largest |v| over the run, its largest
component made positive, so wheels on a common axis count alike):
φ = 2 atan2(v·n, w), unwrapped.  A wheel spinning about a fixed axis gives a ramp —
not the sawtooth of the unsigned angle 2 atan2(|v|, |w|) ∈ [0, π].
"""
from __future__ import annotations

import numpy as np


def rotation_about_main_axis(system, q):
    """{"BODY": (rows,)} signed, unwrapped rotation angle from t = 0 (module docstring)."""
    from ..spatial.kinematics import E_matrix
    q = np.atleast_2d(q)
    out = {}
    for name, b in system.spatial.bodies.items():
        e = q[:, b.offset + 3:b.offset + 7]
        v = np.einsum("ij,rj->ri", E_matrix(b.p0), e)            # vec(p ∘ p₀⁻¹)
        w = e @ b.p0
        r = np.column_stack([w, v])
        if len(r) and r[0, 0] < 0:                                # start at +identity: φ(0) = 0
            r[0] = -r[0]
        for k in range(1, len(r)):                                # continuous sign
            if r[k] @ r[k - 1] < 0:
                r[k] = -r[k]
        v, w = r[:, 1:], r[:, 0]
        big = int(np.argmax(np.linalg.norm(v, axis=1)))
        nv = np.linalg.norm(v[big])
        if nv == 0.0:
            out[name] = np.zeros(len(q))
            continue
        n = v[big] / nv
        n = n if n[np.argmax(np.abs(n))] > 0 else -n     # the same sense for parallel axes (left/right wheels)
        out[name] = np.unwrap(2.0 * np.arctan2(v @ n, w), period=4 * np.pi) if len(q) else np.zeros(0)
    return out


def body_points(system, q):
    """{"BODY": (rows, k, 3)} the centre of mass and named points of every spatial body."""
    from ..spatial.outputs import point_paths
    paths = point_paths(system, q)
    out = {}
    for ref, xyz in paths.items():
        out.setdefault(ref.split(".", 1)[0], []).append(xyz)
    return {b: np.stack(v, 1) for b, v in out.items()}


def road_profile(config, x):
    """Road height z(x, y = 0) along x (the plane z = 0 without [spatial.road])."""
    from ..spatial.force_set import road_of
    road = road_of(config.spatial)
    return np.array([float(np.real(road.height(xi, 0.0)[0])) for xi in x])
