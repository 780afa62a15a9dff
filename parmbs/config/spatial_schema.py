"""Pydantic models of the ``[spatial]`` section (spatial rigid multibody, issue 10;
/work/helpers/SPATIAL.md).  Imported by ``schema.py`` (import that module, not this one).

    [spatial]
    gravity = [0.0, 0.0, -9.81]
    [spatial.ground]
    points = { O = [0, 0, 0] }          # global
    axes = { z = [0, 0, 1] }            # normalised when the model is built
    [[spatial.bodies]]
    name = "arm"; mass = 1.0
    inertia = [0.1, 0.1, 0.02]          # principal [J_xx, J_yy, J_zz] or a full symmetric 3×3, about the COM
    points = { A = [0, 0, 0.5] }        # body frame, relative to the centre of mass
    axes = { u = [0, 1, 0] }            # body frame (x, y, z are predefined)
    initial = { position = [0, 0, 0], orientation = [1, 0, 0, 0] }   # or bryant = [φ, θ, ψ]
    initial_velocity = { velocity = [0, 0, 0], angular_velocity = [0, 0, 0] }   # global frame
    independent = ["rx", "ry", "rz"]    # optional; see SpatialBody
    [[spatial.joints]]
    type = "revolute"; name = "hinge"; a = "ground.O"; b = "arm.A"; axis_a = "ground.z"; axis_b = "arm.u"

Cross-references (points, axes, joints named by drivers) are checked in
``spatial_checks.py``.
"""
from __future__ import annotations

import math
from typing import Annotated, Any, Literal, Union

import numpy as np
from pydantic import AfterValidator, Field, PlainValidator, Strict, model_validator

from .schema import Name, NonNegReal, PosInt, PosReal, Real, Str, TimeFunction, _Model, _no_duplicates, _no_com_point

Vec3 = tuple[Real, Real, Real]
Mat3 = tuple[Vec3, Vec3, Vec3]

#: predefined body-fixed axes of every spatial body (and ground)
PREDEFINED_AXES = {"x": (1.0, 0.0, 0.0), "y": (0.0, 1.0, 0.0), "z": (0.0, 0.0, 1.0)}
#: coordinates a body may list as ``independent``: the COM position components and the
#: three rotation components of the orientation (spatial_set.py, initial_setup)
INDEPENDENT = ("x", "y", "z", "rx", "ry", "rz")


def _nonzero3(v):
    if v[0] == 0.0 and v[1] == 0.0 and v[2] == 0.0:
        raise ValueError("axis must be nonzero")
    return v


Axis3 = Annotated[Vec3, AfterValidator(_nonzero3)]


def _num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _inertia(v):
    """A principal inertia [J_xx, J_yy, J_zz] (positive) or a full symmetric positive
    definite 3×3 array, about the centre of mass in the body frame."""
    if isinstance(v, (list, tuple)) and len(v) == 3 and all(_num(x) for x in v):
        bad = [x for x in v if x <= 0]
        if bad:
            raise ValueError(f"principal moments of inertia must be > 0, got {list(v)}")
        return tuple(float(x) for x in v)
    if (isinstance(v, (list, tuple)) and len(v) == 3
            and all(isinstance(r, (list, tuple)) and len(r) == 3 and all(_num(x) for x in r) for r in v)):
        J = np.array(v, float)
        if not np.allclose(J, J.T, rtol=0, atol=1e-12 * max(1.0, np.abs(J).max())):
            raise ValueError("full inertia must be symmetric")
        ev = np.linalg.eigvalsh(J)
        if np.min(ev) <= 0.0:
            raise ValueError(f"inertia must be positive definite (eigenvalues {[float(f'{x:.6g}') for x in ev]})")
        return tuple(tuple(float(x) for x in r) for r in v)
    raise ValueError("expected [J_xx, J_yy, J_zz] (principal moments) or a full 3×3 array of finite numbers, "
                     f"got {v!r}"[:160])


Inertia = Annotated[Any, PlainValidator(_inertia)]


class SpatialGround(_Model):
    points: dict[Name, Vec3] = {}
    axes: dict[Name, Axis3] = {}


class SpatialPose(_Model):
    """Initial pose: COM position and orientation, as Euler parameters (unit within
    1e-6; normalised when the model is built) or Bryant angles [φ, θ, ψ] (x-y'-z'')."""

    position: Vec3 = (0.0, 0.0, 0.0)
    orientation: tuple[Real, Real, Real, Real] | None = None
    bryant: Vec3 | None = None

    @model_validator(mode="after")
    def _one_orientation(self) -> "SpatialPose":
        if self.orientation is not None and self.bryant is not None:
            raise ValueError("give either 'orientation' (Euler parameters) or 'bryant' angles, not both")
        if self.orientation is not None:
            n = math.sqrt(sum(x * x for x in self.orientation))
            if abs(n - 1.0) > 1e-6:
                raise ValueError(f"orientation must be unit Euler parameters (|p| = {n:.9g})")
        return self


class SpatialVelocity(_Model):
    """Initial COM velocity and angular velocity, both in the global frame."""

    velocity: Vec3 = (0.0, 0.0, 0.0)
    angular_velocity: Vec3 = (0.0, 0.0, 0.0)


class SpatialBody(_Model):
    """A rigid body: 7 coordinates (COM position, Euler parameters).

    ``independent`` (optional): the coordinates the initial assembly keeps at their
    given values (x, y, z of the COM; rx, ry, rz: the global rotation components, so the
    given orientation) and whose velocities are taken from ``initial_velocity``.  If no
    spatial body lists any, parmbs chooses them (spatial_set.py)."""

    name: Name
    mass: PosReal
    inertia: Inertia
    points: Annotated[dict[Name, Vec3], AfterValidator(_no_com_point)] = {}
    axes: dict[Name, Axis3] = {}
    initial: SpatialPose = Field(default_factory=SpatialPose)
    initial_velocity: SpatialVelocity = Field(default_factory=SpatialVelocity)
    independent: Annotated[list[Literal["x", "y", "z", "rx", "ry", "rz"]], AfterValidator(_no_duplicates)] | None = None


def _check_axis_ref(v: str) -> str:
    from .schema import _check_point_ref
    try:
        return _check_point_ref(v)
    except ValueError:
        raise ValueError(f"invalid axis reference {v!r} (expected 'BODY.AXIS' or 'ground.AXIS')") from None


def _point_ref(v: str) -> str:
    from .schema import _check_point_ref
    return _check_point_ref(v)


PointRef3 = Annotated[str, Strict(), AfterValidator(_point_ref)]
AxisRef = Annotated[str, Strict(), AfterValidator(_check_axis_ref)]


class _TwoPoint(_Model):
    name: Name
    a: PointRef3
    b: PointRef3


class SpatialSpherical(_TwoPoint):
    """Points a and b coincide (3 rows)."""
    type: Literal["spherical"]


class SpatialRevolute(_TwoPoint):
    """Spherical + axis_a ∥ axis_b (5 rows)."""
    type: Literal["revolute"]
    axis_a: AxisRef
    axis_b: AxisRef


class SpatialCylindrical(_TwoPoint):
    """b slides along and turns about the line through a along axis_a; axis_b ∥ axis_a (4 rows)."""
    type: Literal["cylindrical"]
    axis_a: AxisRef
    axis_b: AxisRef


class SpatialTranslational(_TwoPoint):
    """Cylindrical with the rotation about the axis locked at its initial value (5 rows)."""
    type: Literal["translational"]
    axis_a: AxisRef
    axis_b: AxisRef


class SpatialUniversal(_TwoPoint):
    """Spherical + axis_a ⊥ axis_b (4 rows; the axes must be perpendicular initially)."""
    type: Literal["universal"]
    axis_a: AxisRef
    axis_b: AxisRef


class SpatialRigid(_TwoPoint):
    """Spherical + relative orientation locked at its initial value (6 rows; to a spatial
    beam point: 5 rows, the tangent's direction; between two beam points: 4 rows, the
    angle between the two tangents — flexible/ancf3d_joints.py)."""
    type: Literal["rigid"]
    angle: Real | None = None   # beam–beam weld only: the held angle between the two tangents [rad]; absent: the beams' initial directions


class SpatialDistance(_TwoPoint):
    """The distance between points a and b keeps its initial value (1 row): a rigid link
    with ball ends, e.g. a tie rod.  At least one side must be a natural-coordinate body
    or a spatial beam point (flexible/ancf3d_joints.py ``_PairDistance``)."""
    type: Literal["distance"]


class SpatialDriver(_Model):
    """A rheonomic constraint.  ``joint`` (a revolute or cylindrical joint): the relative
    rotation angle about its axis, measured from the initial configuration, equals
    f(t) (steering); with ``motion = "translation"`` (a translational or cylindrical
    joint): the relative displacement along its axis; or ``coordinate = "BODY.x|y|z"``:
    that COM coordinate (of a spatial or natural-coordinate body) equals f(t)."""
    type: Literal["driver"]
    name: Name
    joint: Name | None = None
    coordinate: Str | None = None
    motion: Literal["rotation", "translation"] = "rotation"   # what a joint driver prescribes
    function: TimeFunction

    @model_validator(mode="after")
    def _one_target(self) -> "SpatialDriver":
        if (self.joint is None) == (self.coordinate is None):
            raise ValueError("give exactly one of 'joint' (a revolute or cylindrical joint) or "
                             "'coordinate' (\"BODY.x|y|z\")")
        if self.coordinate is not None and self.motion != "rotation":
            raise ValueError("'motion' applies to a joint driver (give 'joint', not 'coordinate')")
        if self.coordinate is not None:
            parts = self.coordinate.split(".")
            if len(parts) != 2 or parts[1] not in ("x", "y", "z"):
                raise ValueError(f"invalid coordinate {self.coordinate!r} (expected 'BODY.x', 'BODY.y' or 'BODY.z')")
        return self


SpatialJoint = Annotated[Union[SpatialSpherical, SpatialRevolute, SpatialCylindrical, SpatialTranslational,
                               SpatialUniversal, SpatialRigid, SpatialDistance, SpatialDriver],
                        Field(discriminator="type")]


# ============================================================================ [[spatial.forces]]
# OWNER: spatial-forces: the force types and the road are in spatial_forces_schema.py.
from .spatial_forces_schema import SpatialForceUnion, SpatialRoad  # noqa: E402

SpatialForce = Annotated[SpatialForceUnion, Field(discriminator="type")]
# ============================================================================ end [[spatial.forces]]


class SquareSection(_Model):
    """Solid square, A = s², I = s⁴/12 (about every centroidal axis)."""
    shape: Literal["square"]   # section kind: "square" | "circle" | "tube"
    side: PosReal            # side length s [m]


class CircleSection(_Model):
    """Solid circle, A = πr², I = πr⁴/4."""
    shape: Literal["circle"]   # section kind: "square" | "circle" | "tube"
    radius: PosReal          # radius r [m]


class TubeSection(_Model):
    """Circular tube, A = π(r_o² − r_i²), I = π(r_o⁴ − r_i⁴)/4."""
    shape: Literal["tube"]     # section kind: "square" | "circle" | "tube"
    outer_radius: PosReal    # r_o [m]
    inner_radius: PosReal    # r_i [m], below r_o

    @model_validator(mode="after")
    def _wall(self) -> "TubeSection":
        if self.inner_radius >= self.outer_radius:
            raise ValueError(f"inner_radius {self.inner_radius} must be below outer_radius {self.outer_radius}")
        return self


BeamSection = Annotated[Union[SquareSection, CircleSection, TubeSection], Field(discriminator="shape")]


class SpatialBeamPose(_Model):
    """Initial root position and unit tangent (normalised when the model is built)."""
    position: Vec3 = (0.0, 0.0, 0.0)       # root (node 0) position [m], global frame
    direction: Axis3 = (1.0, 0.0, 0.0)     # root tangent, global frame (normalised; not a design variable)


def _beam_point_names(v: dict) -> dict:
    from .schema import _beam_points
    return _beam_points(v)


class SpatialBeam(_Model):
    """A spatial ANCF beam (seed 000 §5.1: two-node gradient-deficient Euler–Bernoulli
    elements, parmbs/flexible/ancf3d.py), straight and unstretched at t = 0 from
    ``initial.position`` along ``initial.direction``.  Bending is isotropic (one EI: the
    element has no cross-section orientation), no torsion.  Points: root, tip, nodeK and
    ``points`` (arclength from the root).  ``independent``: rows of the initial assembly
    besides the straight shape — x, y, z fix the root position (velocity:
    ``initial_velocity.velocity``), direction fixes the root tangent (its rate:
    ``angular_velocity`` × direction); the velocity field is rigid."""

    name: Name
    length: PosReal          # undeformed length L [m]
    elements: PosInt         # number of equal two-node elements
    section: BeamSection     # cross-section table: {shape = "square", side}, {shape = "circle", radius} or {shape = "tube", outer_radius, inner_radius}
    density: PosReal         # mass density ρ [kg/m³]
    elastic: Literal["seed", "conservative"] = "seed"   # "seed": EAεPe + EIKe (seed Eq. 34, errata fixed); "conservative": gradient of ½EAlε² + ½EI eᵀKe
    E: PosReal
    axial_damping: NonNegReal = 0.0   # Kelvin–Voigt β [s] of the axial strain, N = EA(ε + β ε̇): an axial mode ω gets ζ = β ω/2 (ancf3d.Ancf3AxialDamping); 0: none (the seed's beam)
    bending_damping: NonNegReal = 0.0   # Kelvin–Voigt β_b [s] of the bending strain, r = β_b EI K ė: a bending mode ω gets ζ = β_b ω/2 (ancf3d.Ancf3BendingDamping); 0: none (the seed's beam)
    points: Annotated[dict[Name, NonNegReal], AfterValidator(_beam_point_names)] = {}   # named points: arclength from the root [m]
    initial: SpatialBeamPose = Field(default_factory=SpatialBeamPose)
    initial_velocity: SpatialVelocity = Field(default_factory=SpatialVelocity)
    independent: Annotated[list[Literal["x", "y", "z", "direction"]], AfterValidator(_no_duplicates)] = []

    @model_validator(mode="after")
    def _points_on_beam(self) -> "SpatialBeam":
        for k, s in self.points.items():
            if s > self.length:
                raise ValueError(f"point {k!r} at arclength {s} is beyond the beam's length {self.length}")
        return self


from .solid_schema import SpatialSolid  # noqa: E402  (needs SpatialPose, SpatialVelocity above)


class Spatial(_Model):
    gravity: Vec3 = (0.0, 0.0, -9.81)
    ground: SpatialGround = Field(default_factory=SpatialGround)
    bodies: list[SpatialBody] = []
    beams: list[SpatialBeam] = []    # spatial ANCF beams (seed 000 §5.1)
    natural_bodies: list[SpatialBody] = []   # rigid bodies in natural coordinates (seed 000 §5.2; constant mass matrix): the keys of [[spatial.bodies]], `independent` required; `axes` for its revolute, universal, cylindrical and translational joints
    solids: list[SpatialSolid] = []      # hexahedral floating-frame continua (seed 003 §2; solid_schema.py)
    joints: list[SpatialJoint] = []
    forces: list[SpatialForce] = []
    road: SpatialRoad | None = None      # [spatial.road]; absent: the plane z = 0
