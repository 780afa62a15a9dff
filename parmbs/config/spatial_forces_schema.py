"""Pydantic models of ``[[spatial.forces]]`` and ``[spatial.road]`` (spatial force
elements, contact, tyres and the road; parmbs/spatial/{forces,contact,tyre,road}.py).
Imported by ``spatial_schema.py`` (the ``SpatialForce`` union and ``Spatial.road``).

    [[spatial.forces]]   # type = spring_damper | bump_stop | bushing | contact | tyre | force | torque
    type = "spring_damper"; name = "leaf"; a = "chassis.L1"; b = "arm.L2"
    stiffness = 35906.0; damping = 0.0; length = 1.076        # law = "linear" (default)
    # law = "iltis": seed 004 eq. 5.5, stiffness/damping default to k, c of the seed
    [[spatial.forces]]
    type = "bump_stop"; name = "stop"; a = "chassis.B1"; b = "arm.B2"
    stiffness = 1e7; length = 0.93; smoothing = 1e-3          # compression for l < length
    [[spatial.forces]]
    type = "bushing"; name = "mount"; a = "frame.M"; b = "engine.M"
    stiffness = [1e5, 1e5, 2e5]; rotational_stiffness = [1e3, 1e3, 1e3]
    [[spatial.forces]]
    type = "contact"; name = "ball"; point = "ball.com"; radius = 0.1
    stiffness = 1e5; damping = 100.0; friction = 0.5          # surface = "road" (default) | "plane"
    [[spatial.forces]]
    type = "tyre"; name = "FL"; wheel = "hub_FL"; axis = "hub_FL.y"; radius = 0.3   # centre = "com"
    stiffness = 2e5; damping = 500.0
    [[spatial.forces]]
    type = "force"; name = "push"; point = "body.A"; value = [0, 0, 10.0]   # global, × function(t)
    [[spatial.forces]]
    type = "torque"; name = "drive"; body = "wheel"; value = [0, 50.0, 0]  # global, × function(t)

    [spatial.road]       # type = plane | function | table; absent: the plane z = 0
    type = "function"; shape = "bump"; height = 0.08; length = 0.5; x0 = 3.0

Parameter names (design-variable paths): spatial.forces.NAME.KEY for every scalar key
below (vectors: KEY.x|y|z, e.g. spatial.forces.mount.stiffness.y).
"""
from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import AfterValidator, Field, Strict, model_validator

from .schema import ContactLaw, Name, NonNegReal, PointRef, PosReal, Real, TimeFunction, _Model, _check_point_ref

#: seed 004 eq. 5.5 at its nominal values: (k, c, a0, a2, a3, d2, d3, d4, v_lo, v_hi) —
#: the defaults of `law = "iltis"` (spatial/forces.py: SpatialNonlinearSpringDamper)
ILTIS_SPRING_DAMPER = (2.8397e7, 9945.627, -4.0092e6, -6.7061e7, 5.2796e7,
                       33955.72, -59832.25, -395651.0, -0.2, 0.21)

# (own copies of the spatial reference types, so spatial_schema.py can import this module)
Vec3 = tuple[Real, Real, Real]
PointRef3 = PointRef


def _axis_ref(v: str) -> str:
    try:
        return _check_point_ref(v)
    except ValueError:
        raise ValueError(f"invalid axis reference {v!r} (expected 'BODY.AXIS')") from None


def _nonzero3(v):
    if v[0] == 0.0 and v[1] == 0.0 and v[2] == 0.0:
        raise ValueError("vector must be nonzero")
    return v


AxisRef = Annotated[str, Strict(), AfterValidator(_axis_ref)]
Axis3 = Annotated[Vec3, AfterValidator(_nonzero3)]

NonNeg3 = tuple[NonNegReal, NonNegReal, NonNegReal]


class SpatialSpringDamper(_Model):
    """Point-to-point spring-damper.  ``law = "linear"``: tension k (l − length) + c l̇
    (also the Iltis leaf spring, seed 004 eq. 5.3, with length = L₀).  ``law = "iltis"``:
    seed 004 eq. 5.5, F_s = a0 + k s + a2 s² + a3 s³, F_d = c v + d2 v² + d3 v³ + d4 v⁴
    between the ``breakpoints`` [v_lo, v_hi] and its tangent lines beyond; ``stiffness``
    (k), ``damping`` (c), ``spring`` [a0, a2, a3], ``damper`` [d2, d3, d4] default to
    the seed's values."""

    type: Literal["spring_damper"]
    name: Name
    a: PointRef3
    b: PointRef3
    law: Literal["linear", "iltis", "relative"] = "linear"
    stiffness: NonNegReal | None = None
    damping: NonNegReal | None = None
    length: PosReal | None = None
    spring: tuple[Real, Real, Real] | None = None
    damper: tuple[Real, Real, Real] | None = None
    breakpoints: tuple[Real, Real] | None = None

    @model_validator(mode="after")
    def _law_keys(self) -> "SpatialSpringDamper":
        if self.law in ("linear", "relative"):
            if self.stiffness is None:
                raise ValueError(f"'stiffness' is required for law = \"{self.law}\"")
            if self.length is None:
                raise ValueError(f"'length' (free length) is required for law = \"{self.law}\"")
            for k in ("spring", "damper", "breakpoints"):
                if getattr(self, k) is not None:
                    raise ValueError(f"'{k}' is only used with law = \"iltis\"")
            if self.damping is None:
                self.damping = 0.0
        else:
            if self.length is not None:
                raise ValueError("'length' is not used with law = \"iltis\" (the polynomial has no free length)")
            k, c, a0, a2, a3, d2, d3, d4, vlo, vhi = ILTIS_SPRING_DAMPER
            self.stiffness = k if self.stiffness is None else self.stiffness
            self.damping = c if self.damping is None else self.damping
            self.spring = (a0, a2, a3) if self.spring is None else self.spring
            self.damper = (d2, d3, d4) if self.damper is None else self.damper
            self.breakpoints = (vlo, vhi) if self.breakpoints is None else self.breakpoints
            if not self.breakpoints[0] < 0.0 < self.breakpoints[1]:
                raise ValueError("breakpoints must be [v_lo, v_hi] with v_lo < 0 < v_hi")
        return self


class SpatialBumpStop(_Model):
    """Compression k g_δ(length − l) + c σ_δ(length − l)(−l̇) for l < length (seed 004
    eq. 5.4 with a C² onset of width ``smoothing``)."""

    type: Literal["bump_stop"]
    name: Name
    a: PointRef3
    b: PointRef3
    stiffness: NonNegReal
    length: PosReal
    smoothing: PosReal = 1e-3
    damping: NonNegReal = 0.0


class SpatialBushing(_Model):
    """Linear 6-DOF bushing between the points a and b, in the axes of a's body;
    unloaded when the points coincide at the initial relative orientation."""

    type: Literal["bushing"]
    name: Name
    a: PointRef3
    b: PointRef3
    stiffness: NonNeg3
    rotational_stiffness: NonNeg3 = (0.0, 0.0, 0.0)
    damping: NonNeg3 = (0.0, 0.0, 0.0)
    rotational_damping: NonNeg3 = (0.0, 0.0, 0.0)


class SpatialContact(ContactLaw):
    """A sphere of ``radius`` (0: a point) at ``point`` against the road (``surface =
    "road"``) or the plane through ``origin`` with ``normal``, with the law of
    ``ContactLaw`` (schema.py; contact.py)."""

    point: PointRef3
    surface: Literal["road", "plane"] = "road"
    origin: Vec3 | None = None
    normal: Axis3 | None = None

    @model_validator(mode="after")
    def _plane(self) -> "SpatialContact":
        if self.surface == "road" and (self.origin is not None or self.normal is not None):
            raise ValueError("'origin' and 'normal' are only used with surface = \"plane\"")
        if self.surface == "plane":
            self.origin = (0.0, 0.0, 0.0) if self.origin is None else self.origin
            self.normal = (0.0, 0.0, 1.0) if self.normal is None else self.normal
        return self


class SpatialTyre(_Model):
    """The seed 004 tyre (eqs. 5.6–5.10, tyre.py) on the road: body ``wheel``, its centre
    the point ``centre`` of that body (default its centre of mass), spin axis ``axis``
    ("WHEEL.AXIS", body-fixed), unloaded ``radius``."""

    type: Literal["tyre"]
    name: Name
    wheel: Name
    centre: Name = "com"
    axis: AxisRef
    radius: PosReal
    stiffness: PosReal
    damping: NonNegReal = 0.0
    mu_x: NonNegReal = 0.9
    mu_y: NonNegReal = 0.8
    kappa_c: PosReal = 0.1
    alpha_c: PosReal = 0.1
    slip_velocity: PosReal = 0.1
    saturation_width: Annotated[float, Field(gt=0, le=0.5, allow_inf_nan=False, strict=True)] = 0.05
    smoothing: PosReal = 1e-3


class SpatialPointForce(_Model):
    """Force value·f(t) (global components) at a point."""

    type: Literal["force"]
    name: Name
    point: PointRef3
    value: Vec3
    function: TimeFunction | None = None


class SpatialTorque(_Model):
    """Torque value·f(t) (global components) on a body."""

    type: Literal["torque"]
    name: Name
    body: Name
    value: Vec3
    function: TimeFunction | None = None


SPATIAL_FORCE_TYPES = (SpatialSpringDamper, SpatialBumpStop, SpatialBushing, SpatialContact,
                       SpatialTyre, SpatialPointForce, SpatialTorque)
SpatialForceUnion = Union[SpatialSpringDamper, SpatialBumpStop, SpatialBushing, SpatialContact,
                          SpatialTyre, SpatialPointForce, SpatialTorque]


# ============================================================================ [spatial.road]
class _Road(_Model):
    pass


class PlaneRoadConfig(_Road):
    """The plane through (0, 0, z0) with ``normal`` (n_z > 0)."""

    type: Literal["plane"]
    z0: Real = 0.0
    normal: Axis3 = (0.0, 0.0, 1.0)

    @model_validator(mode="after")
    def _upward(self) -> "PlaneRoadConfig":
        if not self.normal[2] > 0.0:
            raise ValueError("normal must point up (normal[2] > 0)")
        return self


class FunctionRoadConfig(_Road):
    """A documented shape (road.py): flat; bump (height, length, x0); step (height,
    length, x0); sinusoid (amplitude, wavelength, phase); all plus z0."""

    type: Literal["function"]
    shape: Literal["flat", "bump", "step", "sinusoid"]
    z0: Real = 0.0
    height: Real = 0.0
    length: PosReal = 1.0
    x0: Real = 0.0
    amplitude: Real = 0.0
    wavelength: PosReal = 1.0
    phase: Real = 0.0

    @model_validator(mode="after")
    def _keys_of_shape(self) -> "FunctionRoadConfig":
        used = {"flat": set(), "bump": {"height", "length", "x0"}, "step": {"height", "length", "x0"},
                "sinusoid": {"amplitude", "wavelength", "phase"}}[self.shape]
        # a key counts as given when it differs from its default: a config round-tripped
        # through to_dict() (with_value, scenarios, to_toml) has every key set
        extra = sorted(k for k in ("height", "length", "x0", "amplitude", "wavelength", "phase")
                       if k not in used and getattr(self, k) != type(self).model_fields[k].default)
        if extra:
            raise ValueError(f"{', '.join(repr(k) for k in extra)} not used by shape = {self.shape!r}")
        return self


class TableRoadConfig(_Road):
    """Heights z at strictly increasing x (≥ 3 points); natural cubic spline, linear beyond."""

    type: Literal["table"]
    x: list[Real]
    z: list[Real]

    @model_validator(mode="after")
    def _table(self) -> "TableRoadConfig":
        if len(self.x) != len(self.z):
            raise ValueError(f"x and z must have the same length ({len(self.x)} != {len(self.z)})")
        if len(self.x) < 3:
            raise ValueError("a road table needs at least 3 points")
        if any(b <= a for a, b in zip(self.x, self.x[1:])):
            raise ValueError("x must be strictly increasing")
        return self


SpatialRoad = Annotated[Union[PlaneRoadConfig, FunctionRoadConfig, TableRoadConfig], Field(discriminator="type")]
