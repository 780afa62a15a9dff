"""Trajectory outputs of spatial bodies for ``parmbs plot`` (io/plot.py).

* ``point_paths``: global positions r + A(p) s' of every named body point (rows, 3);
* ``rotation_angles``: the angle of each body's rotation from its initial orientation,
  φ = 2 atan2(|vec(p ∘ p₀⁻¹)|, |p₀ᵀp|) ∈ [0, π] (rows,) — one scalar per body that stays
  readable where Euler/Bryant angles jump.
The mechanical energy needs nothing here: SpatialInertia and SpatialGravity implement
``energy`` and io/plot.energy sums every force component's energy.
"""
import numpy as np

from .kinematics import E_matrix, point_position


def point_paths(system, q, p=None):
    """{"BODY.POINT": (rows, 3)} for every named point (and the COM) of every spatial body."""
    sp = system.spatial
    p = system.p if p is None else p
    qe = system.extend(np.atleast_2d(q))
    out = {}
    for name, b in sp.bodies.items():
        qb = qe[:, b.qidx()]
        for point in ["com", *b.cfg.points]:
            s = p[sp.point_pidx(f"{name}.{point}")]
            out[f"{name}.{point}"] = point_position(qb, s)
    return out


def rotation_angles(system, q):
    """{"BODY": (rows,)} rotation angle from the initial orientation (module docstring)."""
    q = np.atleast_2d(q)
    out = {}
    for name, b in system.spatial.bodies.items():
        e = q[:, b.offset + 3:b.offset + 7]
        rel = np.einsum("ij,rj->ri", E_matrix(b.p0), e)          # vec(p ∘ p₀⁻¹)
        out[name] = 2.0 * np.arctan2(np.linalg.norm(rel, axis=1), np.abs(e @ b.p0))
    return out
