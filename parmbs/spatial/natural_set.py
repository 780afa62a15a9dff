"""Bookkeeping of the natural-coordinate rigid bodies (``[[spatial.natural_bodies]]``,
``natural.py``) of a System: coordinates, parameters, element groups, the orthonormality
rows and the initial-assembly rows.

Coordinates: after the spatial beams; body i owns 12 consecutive coordinates
(x, y, z, e1x, e1y, e1z, e2x, …, e3z): centre of mass and body axes, named "B.x" …
"B.e3z".

Parameters (config paths, design variables): ``spatial.natural_bodies.B.mass``,
``….inertia.xx|yy|zz|xy|xz|yz``, ``….points.P.x|y|z`` (body frame, from the centre of
mass), ``….initial.position.x|y|z``, ``….axes.A.x|y|z`` (unit joint axes, body frame: the
columns' coefficients, A e = Σ A_k e_k; x, y, z predefined).  The initial orientation A₀ (from ``initial``'s
Euler parameters or Bryant angles) and the rates of the rotation rows are constant
entries.

Initial assembly: the six orthonormality rows are constraints, so the axes are
orthonormal at t₀ exactly.  ``independent`` (required) lists the rows that fix the body
besides its joints: x, y, z (centre of mass; velocity ``initial_velocity.velocity``) and
rx, ry, rz, which keep the axes at A₀ to first order — e₂·a₃ = 0, e₁·a₃ = 0, e₁·a₂ = 0
with a_k the columns of A₀ (rotations about a₁, a₂, a₃), velocity right-hand sides
ω·a₁, −ω·a₂, ω·a₃ for the global angular velocity ω of ``initial_velocity``.
"""
import numpy as np

from ..model.parameters import ZERO
from ..model.body_kinds import body_kind
from .bodies import SpatialGravity
from .kinematics import pose_euler_parameters, rotation
from .natural import Beam3Pose, NaturalInertia, NaturalOrthonormality
from .spatial_set import _axes, body_parameters

XYZ = ("x", "y", "z")
COORDS = ("x", "y", "z", "e1x", "e1y", "e1z", "e2x", "e2y", "e2z", "e3x", "e3y", "e3z")
#: rotation row: (axis index i of e_i, column j of A₀, sign of ω·a_k, k)
ROTATION_ROWS = {"rx": (1, 2, 1.0, 0), "ry": (0, 2, -1.0, 1), "rz": (0, 1, 1.0, 2)}


def _const(P, v):
    return P.add(f"<const {float(v)!r}>", float(v))


class _NaturalBody:
    def __init__(self, cfg, P, offset):
        self.cfg, self.name, self.offset = cfg, cfg.name, offset
        body_parameters(self, P, f"spatial.natural_bodies.{cfg.name}")
        self.A0 = rotation(pose_euler_parameters(cfg.initial))
        w = np.array(cfg.initial_velocity.angular_velocity, float)
        self.units = [[_const(P, v) for v in e] for e in np.eye(3)]          # position rows
        self.axes = _axes(P, f"spatial.natural_bodies.{cfg.name}", cfg.axes)  # joint axes (body frame)
        self.rows = {}                                                       # rotation rows
        for c, (i, j, sgn, k) in ROTATION_ROWS.items():
            self.rows[c] = (i, [_const(P, v) for v in self.A0[:, j]], _const(P, sgn * float(w @ self.A0[:, k])))

    def qidx(self):
        return list(range(self.offset, self.offset + 12))


@body_kind("natural", order=70)  # natural-coordinate bodies: after the spatial beams
class NaturalBodySet:
    """All natural-coordinate rigid bodies of a model."""

    def __init__(self, config, P, offset):
        self.P = P
        sp = getattr(config, "spatial", None)
        self.bodies = {}
        for b in (getattr(sp, "natural_bodies", None) or []):
            self.bodies[b.name] = _NaturalBody(b, P, offset)
            offset += 12
        self.ncoord = 12 * len(self.bodies)

    def __len__(self):
        return len(self.bodies)

    def coordinate_names(self):
        return [f"{b}.{c}" for b in self.bodies for c in COORDS]

    def is_natural_point(self, ref):
        return ref.split(".", 1)[0] in self.bodies

    def point(self, ref):
        """(12 coordinate indices, 3 parameter indices of s')."""
        body, name = ref.split(".", 1)
        b = self.bodies[body]
        return b.qidx(), list(b.points[name])

    def add_forces(self, system, gravity):
        for b in self.bodies.values():
            q = b.qidx()
            system._add_force(("NaturalInertia",), NaturalInertia, {}, b.name, q, [b.mass] + b.inertia)
            system._add_force(("SpatialGravity",), SpatialGravity, {}, b.name, q[:3], [b.mass] + list(gravity))

    def add_constraints(self, system):
        for b in self.bodies.values():
            system._group(("NaturalOrthonormality",), NaturalOrthonormality, {}, f"{b.name}.axes", b.qidx()[3:],
                          [ZERO], 6)

    def initial_setup(self, system, q0):
        for b in self.bodies.values():
            q0[b.offset:b.offset + 3] = b.cfg.initial.position
            q0[b.offset + 3:b.offset + 12] = b.A0.T.reshape(-1)        # e₁, e₂, e₃ = columns of A₀
            key = f"spatial.natural_bodies.{b.name}.independent"
            q = b.qidx()
            for c in b.cfg.independent or []:
                if c in XYZ:
                    k = XYZ.index(c)
                    g = Beam3Pose([f"{b.name}.{c}"], [q[0:6]], [[b.position[k]] + b.units[k]], [[0]],
                                  coordinate="position")
                    system.independent.append((key, g, b.velocity[k]))
                else:
                    i, a, rate = b.rows[c]
                    g = Beam3Pose([f"{b.name}.{c}"], [q[0:3] + q[3 + 3 * i:6 + 3 * i]], [[ZERO] + a], [[0]],
                                  coordinate="slope")
                    system.independent.append((key, g, rate))
