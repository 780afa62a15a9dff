"""Pydantic models of the TOML configuration (see DESIGN.md "Config (TOML)").

These models check everything that can be checked field by field: key names
(``extra="forbid"``), types (numbers are int or float, never str/bool; all floats
finite), bounds and formats.  Checks that need more than one field or the whole
config (dangling references, duplicate names, dt <= t_end, integrator vs
formulation, design paths) live in ``checks.py`` so they can name the offending
key precisely.
"""
from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal, Union

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, Strict, model_validator

# ----------------------------------------------------------------------------- types

#: A finite real number; ints are accepted (and converted), str/bool are not.
Real = Annotated[float, Strict(), Field(allow_inf_nan=False)]
PosReal = Annotated[float, Strict(), Field(allow_inf_nan=False, gt=0)]
NonNegReal = Annotated[float, Strict(), Field(allow_inf_nan=False, ge=0)]
PosInt = Annotated[int, Strict(), Field(ge=1)]
Str = Annotated[str, Strict()]
Bool = Annotated[bool, Strict()]
Vec2 = tuple[Real, Real]

_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")


def _check_name(v: str) -> str:
    # Names are used as path segments ("bodies.A1.mass"), so no dots or spaces.
    if not _NAME_RE.match(v):
        raise ValueError(f"invalid name {v!r} (use letters, digits, '_' or '-'; start with a letter or '_')")
    return v


def _check_point_ref(v: str) -> str:
    parts = v.split(".")
    if len(parts) != 2 or not all(_NAME_RE.match(p) for p in parts):
        raise ValueError(f"invalid point reference {v!r} (expected 'BODY.POINT' or 'ground.POINT')")
    return v


def _check_coordinate(v: str) -> str:
    parts = v.split(".")
    if len(parts) != 2 or not _NAME_RE.match(parts[0]) or parts[1] not in ("x", "y", "angle"):
        raise ValueError(f"invalid coordinate {v!r} (expected 'BODY.x', 'BODY.y' or 'BODY.angle')")
    return v


Name = Annotated[str, Strict(), AfterValidator(_check_name)]
PointRef = Annotated[str, Strict(), AfterValidator(_check_point_ref)]


def _check_dof_name(v: str) -> str:
    # a joint name, or a natural coordinate BODY.POINT.x|y|z / BODY.angle (matrix_r.independent)
    if not all(_NAME_RE.match(s) for s in v.split(".")) or v.count(".") > 2:
        raise ValueError(f"invalid coordinate name {v!r} (a joint name, BODY.POINT.x|y|z or BODY.angle)")
    return v


DofName = Annotated[str, Strict(), AfterValidator(_check_dof_name)]


class _Model(BaseModel):
    """Base for all config models: unknown keys are errors, defaults are validated."""

    model_config = ConfigDict(extra="forbid", validate_default=True)


# ----------------------------------------------------------------------------- time functions


def _nonempty(v: list) -> list:
    if not v:
        raise ValueError("must not be empty")
    return v


class Polynomial(_Model):
    """f(t) = sum_k coefficients[k] * t**k."""

    type: Literal["polynomial"]
    coefficients: Annotated[list[Real], AfterValidator(_nonempty)]


class Harmonic(_Model):
    """f(t) = offset + amplitude * sin(omega * t + phase)."""

    type: Literal["harmonic"]
    amplitude: Real
    omega: Real
    phase: Real = 0.0
    offset: Real = 0.0


class SinePulses(_Model):
    """f(t) = sum_k amplitudes[k] * s((t - starts[k]) / durations[k]), s(tau) =
    sin(2 pi tau) sin(pi tau)^2 on [0, 1], 0 elsewhere (C2 full-period pulses)."""

    type: Literal["sine_pulses"]
    amplitudes: Annotated[list[Real], AfterValidator(_nonempty)]
    starts: list[Real]
    durations: list[PosReal]

    @model_validator(mode="after")
    def _same_lengths(self) -> "SinePulses":
        if not len(self.amplitudes) == len(self.starts) == len(self.durations):
            raise ValueError("amplitudes, starts and durations must have the same length")
        return self


class Table(_Model):
    """f(t) = the clamped cubic spline (f' = 0 at the ends) through (times[k], values[k]);
    constant before the first and after the last time (model/timefunctions.py Table)."""

    type: Literal["table"]
    times: list[Real]
    values: list[Real]

    @model_validator(mode="after")
    def _knots(self) -> "Table":
        if len(self.times) < 2:
            raise ValueError("times needs at least 2 entries")
        if len(self.values) != len(self.times):
            raise ValueError(f"values has {len(self.values)} entries, times {len(self.times)}")
        if any(b <= a for a, b in zip(self.times, self.times[1:])):
            raise ValueError("times must increase strictly")
        return self


class Noise(_Model):
    """Seeded noise samples (white, or red = first-order low-pass filtered) every
    sample_dt on [0, duration], interpolated like a table (model/timefunctions.py)."""

    type: Literal["noise"]
    seed: Annotated[int, Strict(), Field(ge=0)]
    sample_dt: PosReal
    duration: PosReal
    rms: Annotated[float, Strict(), Field(allow_inf_nan=False, ge=0)]
    color: Literal["white", "red"] = "white"
    corner: PosReal = 1.0

    @model_validator(mode="after")
    def _samples(self) -> "Noise":
        n = self.duration / self.sample_dt
        if n < 2 or n > 1e6:
            raise ValueError(f"duration / sample_dt = {n:g} samples; need 2 … 1e6")
        return self


TimeFunction = Annotated[Union[Polynomial, Harmonic, SinePulses, Table, Noise], Field(discriminator="type")]

# ----------------------------------------------------------------------------- model, ground, bodies


_MODEL_NAME_RE = re.compile(r"^[A-Za-z0-9_\-][A-Za-z0-9_.\-]{0,99}$")


def _check_model_name(v: str) -> str:
    # model.name becomes a file name (``parmbs optimize``'s default output is
    # NAME-optimize.h5 in the working directory): an absolute or ``../`` name wrote and
    # replaced files anywhere (issue 17), so it must be a plain name, not a path
    if not _MODEL_NAME_RE.match(v):
        raise ValueError(f"invalid model name {v!r} (a plain name: letters, digits, '-', '_', '.'; "
                         "not starting with '.'; no '/' or spaces; at most 100 characters)")
    return v


class Units(_Model):
    """Labels of the model's units for plots and messages.  parmbs converts nothing:
    every number is read in one consistent set, these only name it (absent: SI)."""

    length: Str = "m"
    mass: Str = "kg"
    time: Str = "s"
    energy: Str = "J"   # mass·length²/time² (mm, t, s: mJ)


class ModelSection(_Model):
    name: Annotated[str, Strict(), AfterValidator(_check_model_name)]
    gravity: Vec2 = (0.0, -9.81)
    units: Units | None = None   # unit labels for plots (absent: m, kg, s, J)


class Ground(_Model):
    points: dict[Name, Vec2] = {}


class Pose(_Model):
    """Planar pose (or velocity): position of the centre of mass and angle."""

    x: Real = 0.0
    y: Real = 0.0
    angle: Real = 0.0


def _no_duplicates(v: list) -> list:
    dups = sorted({c for c in v if v.count(c) > 1})
    if dups:
        raise ValueError(f"duplicate entries: {', '.join(dups)}")
    return v


def _no_com_point(v: dict) -> dict:
    if "com" in v:
        raise ValueError("point name 'com' is reserved for the centre of mass")
    return v


class Body(_Model):
    name: Name
    mass: PosReal
    inertia: PosReal  # about the centre of mass
    com: Vec2 = (0.0, 0.0)  # body-local
    points: Annotated[dict[Name, Vec2], AfterValidator(_no_com_point)] = {}
    initial: Pose = Field(default_factory=Pose)
    independent: Annotated[list[Literal["x", "y", "angle"]], AfterValidator(_no_duplicates)] = []
    initial_velocity: Pose = Field(default_factory=Pose)


# ----------------------------------------------------------------------------- flexible bodies

_BEAM_RESERVED = re.compile(r"^(root|tip|com|node[0-9]+)$")


def _beam_points(v: dict) -> dict:
    for k in v:
        if _BEAM_RESERVED.match(k):
            raise ValueError(f"point name {k!r} is reserved (root, tip, com and nodeK are predefined)")
    return v


class Beam(_Model):
    """A planar beam, straight and unstretched at t = 0, root frame (node 0, x along
    the beam) at ``initial``.  Points: root, tip, nodeK and ``points`` (arclength from
    the root).  ``type``: "ancf" (absolute nodal coordinates, parmbs/flexible/ancf.py) or
    "ffr" (Euler–Bernoulli elements in a floating frame clamped at the root,
    parmbs/flexible/ffr_beam.py; joints and loads at nodes; ``elastic`` unused)."""

    name: Name
    type: Literal["ancf", "ffr"] = "ancf"
    length: PosReal
    elements: PosInt
    width: PosReal | None = None
    height: PosReal | None = None  # in the plane of motion (bending)
    side: PosReal | None = None    # square section: width = height = side (one parameter)
    density: PosReal
    E: PosReal
    elastic: Literal["seed", "conservative"] = "seed"
    # "ffr" only: stiffness-proportional (Rayleigh) damping β_K in s, elastic force
    # K_e (q_f + β_K q̇_f), mode i damped with ζ_i = β_K ω_i / 2 (ffr_beam.FfrDamping); 0: none
    stiffness_damping: NonNegReal = 0.0
    points: Annotated[dict[Name, NonNegReal], AfterValidator(_beam_points)] = {}
    initial: Pose = Field(default_factory=Pose)
    independent: Annotated[list[Literal["x", "y", "angle"]], AfterValidator(_no_duplicates)] = []
    initial_velocity: Pose = Field(default_factory=Pose)

    @model_validator(mode="after")
    def _points_on_beam(self) -> "Beam":
        if (self.side is None) == (self.width is None or self.height is None) or (
                self.side is not None and (self.width is not None or self.height is not None)):
            raise ValueError("give either 'side' (square section) or both 'width' and 'height'")
        for k, s in self.points.items():
            if s > self.length:
                raise ValueError(f"point {k!r} at arclength {s} is beyond the beam's length {self.length}")
        if self.stiffness_damping and self.type != "ffr":
            raise ValueError("stiffness_damping is implemented for type = \"ffr\" beams only")
        return self


class _MeshBody(_Model):
    """What plates and continua share: an Lx × Ly rectangle meshed with nx × ny bilinear
    quads, the material, the element density field x_e (a number for a uniform field or
    nx·ny numbers, element e = j·nx + i) with E(x) = x^penalization E and ρ(x) by
    ``density_law`` (seed003: 1e5 x⁶ ρ0 below 0.1, x ρ0 above; linear: x ρ0), named
    nodes ``points = { NAME = [i, j] }`` (origin and node_i_j are predefined), pose."""

    name: Name
    size: tuple[PosReal, PosReal]
    nx: PosInt
    ny: PosInt
    thickness: PosReal
    E: PosReal
    nu: Annotated[float, Strict(), Field(allow_inf_nan=False, ge=0, lt=0.5)] = 0.3
    rho0: PosReal
    density: PosReal | list[PosReal] = 1.0
    penalization: PosReal = 3.0
    density_law: Literal["seed003", "linear"] = "seed003"
    points: dict[Name, tuple[Annotated[int, Strict(), Field(ge=0)], Annotated[int, Strict(), Field(ge=0)]]] = {}
    initial: Pose = Field(default_factory=Pose)
    independent: Annotated[list[Literal["x", "y", "angle"]], AfterValidator(_no_duplicates)] = []
    initial_velocity: Pose = Field(default_factory=Pose)

    @model_validator(mode="after")
    def _mesh_checks(self):
        if isinstance(self.density, list) and len(self.density) != self.nx * self.ny:
            raise ValueError(f"density has {len(self.density)} values, the mesh has nx*ny = {self.nx * self.ny} elements")
        for k, (i, j) in self.points.items():
            if k == "origin" or k.startswith("node_"):
                raise ValueError(f"point name {k!r} is reserved (origin and node_i_j are predefined)")
            if i > self.nx or j > self.ny:
                raise ValueError(f"point {k!r} = [{i}, {j}] is outside the mesh (nodes 0..{self.nx} × 0..{self.ny})")
        return self


class Plate(_MeshBody):
    """A plane-stress continuum (parmbs/flexible/plate.py) with absolute nodal
    coordinates, St. Venant–Kirchhoff, undeformed at t = 0 with its origin (node_0_0,
    local x along ``size[0]``) at ``initial``.  Mesh, material and density field: see
    ``_MeshBody``."""


class ModalReduction(_Model):
    """``continua.NAME.reduction``: replace the body's nodal elastic coordinates by
    ``modes`` modal coordinates — the lowest eigenmodes of the body clamped at its hub
    (parmbs/flexible/modal.py), with exact design sensitivities through the eigenproblem;
    ``attachment``: add the static responses to unit forces at the body's joint nodes;
    ``load``: an HDF5 file written by ``parmbs reduce`` (parmbs/flexible/modal_io.py, path
    relative to the config file) — the body's basis and densities are the file's, so
    it is not reduced again (its mesh, material, modes and attachment must be the
    file's; ``density`` must not be given)."""

    modes: PosInt
    attachment: Bool = False
    load: Str | None = None


class Continuum(_MeshBody):
    """A plane-stress body in a floating frame of reference (parmbs/flexible/continuum.py,
    continua.py), its mesh's lower-left corner at ``offset`` in the body frame;
    coordinates: the frame pose (x, y, angle) and small elastic nodal displacements in
    the frame.  Reference condition: every node within ``clamp_radius`` of the frame
    origin is clamped (u = 0; at least two nodes).  Undeformed at t = 0 with its frame
    at ``initial``.  Points: origin (the frame origin), node_i_j, named nodes.  Mesh,
    material and density field: see ``_MeshBody``."""

    offset: Vec2 = (0.0, 0.0)
    clamp_radius: PosReal
    reduction: ModalReduction | None = None


# ----------------------------------------------------------------------------- joints


def _nonzero(v: tuple[float, float]) -> tuple[float, float]:
    if v[0] == 0.0 and v[1] == 0.0:
        raise ValueError("axis must be nonzero")
    return v


class Revolute(_Model):
    type: Literal["revolute"]
    name: Name
    a: PointRef
    b: PointRef


class Prismatic(_Model):
    type: Literal["prismatic"]
    name: Name
    a: PointRef
    b: PointRef
    axis: Annotated[Vec2, AfterValidator(_nonzero)] = (1.0, 0.0)  # body-local frame of a's body


class Weld(_Model):
    type: Literal["weld"]
    name: Name
    a: PointRef
    b: PointRef


class Driver(_Model):
    type: Literal["driver"]
    name: Name
    coordinate: Annotated[str, Strict(), AfterValidator(_check_coordinate)]
    function: TimeFunction


class DistanceDriver(_Model):
    """The distance between points a and b follows ``function`` (model/joints.py
    DistanceDriver): a prescribed-length actuator between two rigid bodies or ground."""
    type: Literal["distance_driver"]
    name: Name
    a: PointRef
    b: PointRef
    function: TimeFunction


Joint = Annotated[Union[Revolute, Prismatic, Weld, Driver, DistanceDriver], Field(discriminator="type")]

# ----------------------------------------------------------------------------- forces


class Spring(_Model):
    type: Literal["spring"]
    name: Name
    a: PointRef
    b: PointRef
    stiffness: NonNegReal
    damping: NonNegReal = 0.0
    length: PosReal  # natural length


class RotationalSpring(_Model):
    type: Literal["rotational_spring"]
    name: Name
    a: Name  # body name or "ground"
    b: Name  # body name
    stiffness: NonNegReal
    damping: NonNegReal = 0.0
    angle: Real = 0.0  # natural relative angle theta_b - theta_a


class PointForce(_Model):
    type: Literal["force"]
    name: Name
    point: PointRef
    value: Vec2  # global frame
    function: TimeFunction | None = None  # scalar multiplier; None = constant


class Torque(_Model):
    type: Literal["torque"]
    name: Name
    body: Name
    value: Real
    function: TimeFunction | None = None


class ContactLaw(_Model):
    """The normal and friction law shared by the planar and the spatial contact
    (model/contact.py, spatial/contact.py): normal force k g_δ(x) + hunt_crossley·g_δ(x) ẋ
    + damping·σ_δ(x) ẋ clamped at zero, friction μ F_n against the slip, regularised by
    ``slip_velocity``."""

    type: Literal["contact"]
    name: Name
    radius: NonNegReal = 0.0
    stiffness: PosReal
    damping: NonNegReal = 0.0
    hunt_crossley: NonNegReal = 0.0
    smoothing: PosReal = 1e-3
    friction: NonNegReal = 0.0
    slip_velocity: PosReal = 1e-2


class Contact(ContactLaw):
    """A circle of ``radius`` (0: a point) centred at ``point`` against the ground line
    through ``origin`` with normal ``normal`` (pointing out of the ground), with the law
    of ``ContactLaw`` (model/contact.py)."""

    point: PointRef
    origin: Vec2 = (0.0, 0.0)
    normal: Annotated[Vec2, AfterValidator(_nonzero)] = (0.0, 1.0)


class RotationalStop(_Model):
    """A one-sided bump stop on the relative angle θ_b − θ_a: engaged beyond ``angle``
    (``side = "above"``) or below it (``side = "below"``), with the normal law of
    ``contact`` on the angle (model/contact.py)."""

    type: Literal["rotational_stop"]
    name: Name
    a: Name  # body name or "ground"
    b: Name  # body name
    angle: Real = 0.0
    side: Literal["above", "below"] = "above"
    stiffness: PosReal
    damping: NonNegReal = 0.0
    hunt_crossley: NonNegReal = 0.0
    smoothing: PosReal = 1e-3


class StanceLock(_Model):
    """A rotational spring-damper on θ_b − θ_a − ``angle``, engaged while the point of the
    ``contact`` force (a point of body b) presses into its ground line: scaled by a C¹
    step of the penetration over ``engagement`` (model/contact.py).  The knee lock of a
    walker's stance leg."""

    type: Literal["stance_lock"]
    name: Name
    a: Name  # body name or "ground"
    b: Name  # body name: the body of the contact's point
    contact: Name  # a ``contact`` force
    angle: Real = 0.0
    stiffness: NonNegReal
    damping: NonNegReal = 0.0
    engagement: PosReal = 1e-4


class PythonForce(_Model):
    """A force element written in Python: callable(t, q, v, p) returns the generalized
    force on (x, y, theta) of each body in ``bodies`` (model/python_force.py)."""

    type: Literal["python"]
    name: Name
    bodies: Annotated[list[Name], AfterValidator(_nonempty)]
    callable: Str
    parameters: dict[str, Real] = {}

    @model_validator(mode="after")
    def _check(self) -> "PythonForce":
        if ":" not in self.callable:
            raise ValueError(f"callable must be 'module:function', got {self.callable!r}")
        if len(set(self.bodies)) != len(self.bodies):
            raise ValueError("bodies must be distinct")
        for k in self.parameters:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k):
                raise ValueError(f"parameter name {k!r} must be an identifier")
        return self


Force = Annotated[Union[Spring, RotationalSpring, PointForce, Torque, PythonForce, Contact, RotationalStop,
                        StanceLock],
                  Field(discriminator="type")]

# ----------------------------------------------------------------------------- simulation


class Newton(_Model):
    rtol: PosReal = 1e-12
    atol: PosReal = 1e-12
    max_it: PosInt = 25


#: simulation.adapt.controller: the PI controller or PETSc TSADAPTDSP's filters (integrators/step_filter.FILTERS)
AdaptController = Literal["pi", "basic", "PI30", "PI42", "PI33", "PI34", "PC11", "PC47", "PC36", "H0211", "H211b",
                          "H211PI", "H0312", "H312b", "H312PID", "H0321", "H321"]


class Adapt(_Model):
    """``simulation.adapt``: error-controlled variable steps (integrators/timeloop.py).
    The local error of each step, measured in positions (per unit step: each step gets
    its share h/T) and velocities (per step), is kept below ``atol + rtol |x|`` (weighted
    RMS norm, as PETSc's TSAdapt); Newton stops at a tenth of those weights (never looser
    than ``simulation.newton``); ``dt`` is the first
    step, ``dt_min`` ≤ h ≤ ``dt_max`` (defaults: dt_max = t_end / 10, dt_min = 1e-10 t_end).
    ``objective_atol`` (in the objectives' units): the integral objectives' quadratures
    ∫ f dt join the error test with ``rtol`` relative to their running scale and this
    absolute floor, as CVODES's errconQ (integrators/quad_error.py) — for objectives
    that read accelerations (∫ z̈² dt), which the position/velocity test does not
    control (parmbs's own steppers; refused with the PETSc TS ones, whose TSAdapt chooses the
    steps).  Absent: the quadratures are not error-controlled.  ``sensitivities = true``:
    the direct sensitivities dx/dρ of the design are carried along the forward run and
    each column's local error joins the test, as CVODES's errconS
    (integrators/sens_error.py) — for runs whose gradient does not converge with the
    state's mesh (a contact whose time moves with the design: the passive walker).
    ``grow_min``: a proposed growth of h below this factor keeps h (hysteresis against
    generalized-α's parasitic root; 1.3 default, CVODE's 1.5 measured at par with a uniform
    grid on the five-bar: benchmarks/README.md, "Adaptive vs fixed: the controller's
    hysteresis and cubic weights").  ``controller``: absent or ``"pi"``, that PI controller;
    else a digital filter of Söderlind's by its PETSc TSADAPTDSP name (``"H211b"``,
    ``"H211PI"``, ``"H312b"``, ``"PI42"``, …: integrators/step_filter.py), which smooths the
    step sequence (``grow_min`` then does not apply; benchmarks/README.md, "Adaptive vs
    fixed: digital-filter controllers").  ``grow_after`` = n (PI controller only; absent:
    the hysteresis always keeps h): after n accepted steps in a row that each proposed a
    growth below ``grow_min``, h grows by the smallest of those n factors — a growth each of
    them allowed — against the ratchet by which h only shrinks when every proposal is a
    small growth (RADAU5's hysteresis, Hairer & Wanner II §IV.8; Söderlind 2003: few, small
    changes of h; integrators/timeloop.py, benchmarks/README.md, "Adaptive vs fixed:
    releasing the hysteresis ratchet").  ``keep_min`` = s (PI controller only; absent: every
    shrink proposed after an accepted step is taken): a proposed factor in (s, 1) after an
    accepted step keeps h too, as CVODE keeps h for factors in (0, 1.5) after a successful
    step (s = 0: h shrinks only on a rejection; integrators/timeloop.py).  Absent ``adapt``:
    fixed steps of ``dt``."""

    rtol: PosReal = 1e-4
    atol: PosReal = 1e-6
    dt_min: PosReal | None = None
    dt_max: PosReal | None = None
    objective_atol: PosReal | None = None
    sensitivities: Bool = False
    # a proposed growth of h below this factor keeps h (the controller's hysteresis, timeloop.py)
    grow_min: Annotated[float, Strict(), Field(allow_inf_nan=False, ge=1, le=5)] = 1.3
    # None (absent) = "pi": absent from the resolved config, so its hash (record_match.py) is unchanged
    controller: AdaptController | None = None
    # None (absent): the hysteresis always keeps h (absent from the resolved config: its hash unchanged)
    grow_after: PosInt | None = None
    # None (absent): every proposed shrink taken (absent from the resolved config: its hash unchanged)
    keep_min: Annotated[float, Strict(), Field(allow_inf_nan=False, ge=0, le=1)] | None = None

    @model_validator(mode="after")
    def _ordered(self) -> "Adapt":
        if self.dt_min is not None and self.dt_max is not None and self.dt_min > self.dt_max:
            raise ValueError("dt_min must not exceed dt_max")
        for key in ("grow_after", "keep_min"):
            if getattr(self, key) is not None and self.controller not in (None, "pi"):
                raise ValueError(f"{key} sets the PI controller's hysteresis; a digital-filter "
                                 f"controller has none: remove {key} or controller")
        return self


class Penalty(_Model):
    alpha: PosReal = 1e7
    xi: NonNegReal = 1.0
    omega: PosReal = 10.0


_PETSC_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def _check_petsc_options(v: dict[str, Any]) -> dict[str, Any]:
    # names only here (a value is checked against PETSc itself: parmbs/petsc_options.py)
    for k, val in v.items():
        if not _PETSC_NAME_RE.match(k):
            raise ValueError(f"option name {k!r} must be a PETSc option without its '-' "
                             "(letters, digits, '_'), e.g. ksp_type")
        if not isinstance(val, (str, int, float, bool)):
            raise ValueError(f"option {k!r} must be a string, number or boolean, got {type(val).__name__}")
        if isinstance(val, float) and not math.isfinite(val):
            raise ValueError(f"option {k!r} must be finite")
    if str(v.get("ksp_type", "")).lower() == "preonly" and str(v.get("pc_type", "")).lower() in _INEXACT_PC:
        # Newton, the tangent and the adjoint all assume the linear solve is exact
        raise ValueError(f"pc_type {v['pc_type']!r} with ksp_type 'preonly' (the default) is one "
                         "preconditioner application, not a solve; set ksp_type (e.g. 'gmres' or "
                         "'cg') with a tolerance, or keep pc_type 'lu'")
    return v


DEFAULT_PETSC_OPTIONS = {"ksp_type": "preonly", "pc_type": "lu"}

# preconditioners that are not a direct solve: one application of them is no solve
_INEXACT_PC = {"none", "jacobi", "pbjacobi", "vpbjacobi", "bjacobi", "sor", "eisenstat", "ilu", "icc",
               "asm", "gasm", "gamg", "hypre", "ml", "mg", "spai", "kaczmarz", "lsc", "deflation",
               "bddc", "pfmg", "smg", "syspfmg", "hmg", "h2opus", "composite", "ksp", "galerkin"}


def _with_default_petsc_options(v: Any) -> Any:
    """A file's ``petsc_options`` table adds to the default ``{ksp_type = "preonly",
    pc_type = "lu"}`` instead of replacing it, as a ``--set`` does (config/loader.py
    ``_table_default``): a table holding only ``pc_factor_mat_solver_type = "mumps"`` used to
    drop the default and run PETSc's GMRES + ILU instead of MUMPS, silently."""
    return {**DEFAULT_PETSC_OPTIONS, **v} if isinstance(v, dict) else v


INDEX3_INTEGRATORS = ("trapezoidal", "genalpha", "hht", "wbz", "newmark", "variational", "ts-alpha2")
PENALTY_INTEGRATORS = ("ts-beuler", "ts-cn", "ts-theta", "ts-rk", "ts-arkimex")
#: Which integrators each formulation accepts (checked in checks.py, dispatched in
#: parmbs/formulations/__init__.py).
FORMULATION_INTEGRATORS = {
    "index3": INDEX3_INTEGRATORS,
    "penalty": PENALTY_INTEGRATORS,
    # genalpha/hht/wbz/newmark: seed 001's index-1 generalized-α (formulations/index1_genalpha.py);
    # ts-*: the index-1 ODE on PETSc TS (index1_ode.py); dopri5: the same ODE on an own compiled
    # Dormand–Prince 5(4) with its exact adjoint (index1_dopri.py)
    "index1": ("trapezoidal", "genalpha", "hht", "wbz", "newmark") + PENALTY_INTEGRATORS + ("dopri5",),
    "maggi": ("trapezoidal",) + PENALTY_INTEGRATORS,      # ts-*: Maggi's ODE in z on PETSc TS (maggi_ode.py)
    "matrix-r": ("trapezoidal",) + PENALTY_INTEGRATORS,   # ts-*: coordinates = "independent" only (matrix_r_ode.py)
    "kinematic": ("trapezoidal",),     # every DOF driven: no integration (formulations/kinematic.py)
}
#: The index3 integrators ``simulation.stabilization = "ggl"`` applies to (integrators/ggl.py).
GGL_INTEGRATORS = ("trapezoidal", "genalpha", "hht", "wbz", "newmark")


class Baumgarte(_Model):
    """Φ̈ + 2 alpha Φ̇ + beta² Φ = 0 in place of Φ̈ = 0 (seed 004 §2.3)."""
    alpha: NonNegReal   # 1/s: damping of the constraint drift
    beta: NonNegReal    # 1/s: stiffness of the constraint drift


class Index1(_Model):
    """Options of the index-1 formulation (seed 004 §2.3, §3.1.2)."""
    # Baumgarte stabilisation of the index-1 steppers (own: formulations/index1.py, index1_genalpha.py; PETSc TS: index1_ode.py); absent: none
    baumgarte: Baumgarte | None = None


class Maggi(_Model):
    """Options of Maggi's formulation (seed 004 §2.5, §3.1.4).

    ``independent``: the coordinates z = B q (the 0/1 selection B of eq. 2.26), named
    like the HDF5 output: "BODY.x", "BODY.y", "BODY.angle" (centre of mass), or a
    flexible body's coordinate names.  Exactly n − m of them (checked when the model is
    built).  Empty (default): the bodies' ``independent`` lists, each read as the same
    coordinate of the body's centre of mass.

    ``adjoint``: how ``--method adjoint`` differentiates.  "discrete" (default): the
    exact transpose of the trapezoidal scheme (equals the direct gradient to round-off).
    The thesis' continuous adjoint ODEs integrated backward (§3.2.4, agree with the
    direct gradient to O(h²) only; parmbs/formulations/maggi_avm.py):
    "first-order-explicit" (eq. 3.124), "first-order-implicit" (eq. 3.131),
    "second-order" (eq. 3.146)."""
    independent: Annotated[list[Str], AfterValidator(_no_duplicates)] = []
    adjoint: Literal["discrete", "first-order-explicit", "first-order-implicit", "second-order"] = "discrete"


class MatrixR(_Model):
    """Options of the semi-recursive Matrix-R formulation (seed 002 §2–3).

    ``cut``: the joints opened to turn the model into a kinematic tree of relative
    coordinates (their constraints and every driver are kept as loop-closure
    constraints with multipliers).  Default: automatic — a breadth-first spanning
    tree from ground over the revolute and prismatic joints, every other joint cut.
    Checked against the model in parmbs/formulations/relative.py.  Spatial rigid models
    (parmbs/spatial/relative_tree.py): the tree joints are revolute, cylindrical,
    translational, universal, spherical and rigid (weld: no coordinate) joints, and a
    body no tree joint connects to ground becomes a free root (6 coordinates: position
    and yaw-pitch-roll); drivers are always cut rows.  Natural-coordinate bodies
    ([[spatial.natural_bodies]]) are tree bodies too, joined by spherical joints (or
    free roots); their coordinates (r, e₁, e₂, e₃) follow from the tree's rotations, so
    their orthonormality rows hold identically (configs/spatial-fourbar-natural.toml).

    ``coordinates``: "dependent" (default) integrates all relative coordinates z with
    the cut constraints kept by multipliers (matrix_r.py); "independent" applies the
    paper's second projection ż = R^Φ ż^i (seed 002 eqs. 24–29) and integrates the
    independent relative coordinates z^i = B z, the dependent ones solved from the
    loop closure at every step (matrix_r_independent.py).
    ``independent``: with "independent", the tree joints whose relative coordinates
    form z^i (a joint names the coordinate of the body it attaches to its parent;
    spatial multi-coordinate joints JOINT-angle/-slide, JOINT-1/-2, JOINT-rz/-ry/-rx,
    free roots BODY-x/-y/-z/-rz/-ry/-rx).  Natural coordinates may be degrees of
    freedom too (seed 002 §2.2.3, eqs. 12–15): a point's global coordinate
    ``BODY.POINT.x|y`` (planar; ``POINT`` may be ``com``) or ``BODY.POINT.x|y|z``
    (spatial: Euler-parameter or natural-coordinate bodies), and ``BODY.angle`` (planar), mixed with tree joints; then z^i = h(z) with a non-constant B = h_z (matrix_r_natural.py).
    Default: chosen automatically at the initial state by column pivoting on the
    cut-constraint Jacobian Φ_z (the best-conditioned columns become dependent).
    ``reselect``: with "independent" (trapezoidal, tree-joint coordinates), re-choose
    the independent coordinates at the start of a step whose σ_min(Φ_z D) has fallen
    below ``reselect`` times that of the column-pivoted choice at that state (a fold:
    z^i has a turning point along the motion, R^Φ is unbounded there, and a run
    through it is not dt-converged; configs/spatial-rsur-natural.toml); the chosen or
    listed coordinates are used again once they are well conditioned.  A function of
    the state, so the direct and adjoint steps use the forward step's choice.
    Default: off (one choice for the whole run).

    ``redundant``: redundant cut-constraint rows (found at set-up, model/redundancy.py).
    "least-squares" (default, as seed 002 eq. 17): every row is enforced and each step's
    Newton system, tall with full column rank, is solved in the least-squares sense,
    whose normal matrix contains eq. 17's Φ_zᵀΦ_z + BᵀB; the multipliers stay on the kept
    rows, and a step whose redundant rows are violated (a design that breaks the
    redundancy) stops with an error.  "drop": the rows dropped at set-up are not
    enforced (the mechanism without them).  Both give the same trajectory where the
    redundancy holds (matrix_r.py).  Read by the trapezoidal steppers; ``ts-*``
    integrators drop the rows."""

    cut: Annotated[list[Name], AfterValidator(_no_duplicates)] | None = None
    coordinates: Literal["dependent", "independent"] = "dependent"
    independent: Annotated[list[DofName], AfterValidator(_no_duplicates)] | None = None
    redundant: Literal["least-squares", "drop"] = "least-squares"
    reselect: Annotated[float, Strict(), Field(allow_inf_nan=False, gt=0, le=1)] | None = None

    @model_validator(mode="after")
    def _independent_needs_coordinates(self) -> "MatrixR":
        if self.independent is not None and self.coordinates != "independent":
            raise ValueError("'independent' is read only with coordinates = \"independent\"")
        if self.reselect is not None and self.coordinates != "independent":
            raise ValueError("'reselect' is read only with coordinates = \"independent\"")
        return self


class Simulation(_Model):
    t_end: PosReal = 1.0
    dt: PosReal = 1e-3
    formulation: Literal["index3", "penalty", "index1", "maggi", "matrix-r", "kinematic"] = "index3"
    integrator: Literal["trapezoidal", "genalpha", "hht", "wbz", "newmark", "variational", "ts-alpha2",
                        "ts-beuler", "ts-cn", "ts-theta", "ts-rk", "ts-arkimex", "dopri5"] = "trapezoidal"
    rho_inf: Annotated[float, Strict(), Field(allow_inf_nan=False, ge=0, le=1)] = 0.9
    beta: PosReal = 0.25
    gamma: Annotated[float, Strict(), Field(allow_inf_nan=False, ge=0.5)] = 0.5
    theta: Annotated[float, Strict(), Field(allow_inf_nan=False, gt=0, le=1)] = 0.5
    # "ggl": the stabilized index-2 (Gear–Gupta–Leimkuhler) form of the index3 Newmark
    # family, velocity constraint enforced too (integrators/ggl.py; checks.py: which integrators)
    stabilization: Literal["none", "ggl"] = "none"
    # generalized-α: "chung-hulbert" interpolates the forces (integrators/newmark.py);
    # "arnold-bruls" puts the equations at t_{n+1}, second order also where M depends on q
    # (integrators/genalpha_ab.py; read by "genalpha" only; checks.py: not with "ggl")
    genalpha_form: Literal["chung-hulbert", "arnold-bruls"] = "chung-hulbert"
    newton: Newton = Field(default_factory=Newton)
    penalty: Penalty = Field(default_factory=Penalty)
    index1: Index1 = Field(default_factory=Index1)
    maggi: Maggi = Field(default_factory=Maggi)
    matrix_r: MatrixR = Field(default_factory=MatrixR)
    petsc_options: Annotated[dict[str, Any], BeforeValidator(_with_default_petsc_options),
                             AfterValidator(_check_petsc_options)] = Field(
        default_factory=lambda: dict(DEFAULT_PETSC_OPTIONS))
    progress: Bool = True
    output_every: PosInt = 1
    guard: Bool = True     # instability guard of fixed-step runs (integrators/guard.py)
    adapt: Adapt | None = None   # error-controlled variable steps; absent: fixed dt
    # weights of the integral objectives on the accepted times (integrators/quadrature.py)
    quadrature: Literal["trapezoid", "cubic"] = "trapezoid"
    compiled: Literal["auto", "on", "off"] = "auto"   # one numba call per step for small rigid models (planar kinds; spatial bodies, spherical and revolute joints: parmbs/compiled) and, in the Arnold-Bruls form, the vehicle models (tyres, spring-dampers, bump stops, universal/rigid joints, revolute drivers); the variational integrator: its forward step's linear solves only (compiled sparse LU, components on numpy, 60 to 1000 unknowns); "on": say why not; "off": numpy path


# ----------------------------------------------------------------------------- design, objectives


class Drive(_Model):
    """One ``drives`` entry of a ``[[design]]``: the config scalar at ``path`` follows
    ``expression`` of the design variables and ``[parameters]`` (links.py)."""

    path: Str
    expression: Str


class Design(_Model):
    name: Name
    path: Str  # checked against the config in checks.py / paths.py
    lower: Real | None = None
    upper: Real | None = None
    drives: list[Drive] = []    # linked parameters (config/links.py)


POINT_KINDS = ("point_deviation_sq", "point_velocity_sq", "point_acceleration_sq", "deflection", "deflection_sq")
ANGLE_KINDS = ("angle", "angle_sq")
SPATIAL_OBJECTIVE_KINDS = ("vertical_acceleration_sq", "vertical_acceleration_4", "roll_rate_sq")   # spatial bodies (spatial/objectives.py)
TerminalKind = Literal["point_deviation_sq", "point_velocity_sq", "point_acceleration_sq",
                       "angle", "angle_sq", "spring_elongation_sq", "deflection", "deflection_sq",
                       "vertical_acceleration_sq", "vertical_acceleration_4", "roll_rate_sq", "stress_ks",
                       "stress_ks_time"]
IntegrandKind = Literal["point_deviation_sq", "point_velocity_sq", "point_acceleration_sq",
                        "angle", "angle_sq", "spring_elongation_sq", "reaction_sq", "python",
                        "deflection", "deflection_sq",  # deflection*: beam points only
                        "vertical_acceleration_sq", "vertical_acceleration_4", "roll_rate_sq",  # spatial bodies only
                        "stress_ks", "stress_ks_time",  # spatial ANCF beams (flexible/spatial_beam_objectives.py)
                        "iso2631_rms", "iso2631_vdv"]  # ISO 2631-1 ride measures (sensitivity/ride.py)
RIDE_KINDS = ("iso2631_rms", "iso2631_vdv")


class Objective(_Model):
    name: Name
    integrand: IntegrandKind | None = None
    terminal: TerminalKind | None = None
    point: PointRef | None = None
    body: Name | None = None
    force: Name | None = None
    joint: Name | None = None
    axis: PointRef | None = None  # "BODY.AXIS": roll_rate_sq about this body axis (default BODY.x)
    reference: Vec2 | None = None
    weight: Real = 1.0
    callable: Str | None = None  # "module:function" for integrand = "python"
    weighting: Literal["Wk", "Wd"] | None = None   # iso2631_*: ISO 2631-1 weighting (default Wk)
    direction: Literal["x", "y", "z"] | None = None  # iso2631_*: global acceleration component (default z)
    ks_rho: PosReal | None = None  # stress_ks: KS parameter ρ [1/Pa]; KS exceeds max |σ| by at most ln(2 n_el)/ρ
    stress_limit: PosReal | None = None  # stress_ks_time: σ_lim [Pa] (flexible/spatial_stress_peak.py)
    stress_point: Literal["node", "midpoint"] | None = None  # stress_ks*: σ at the node state (default) or of the chord the variational midpoint rule balances (flexible/spatial_beam_objectives.py)


# ----------------------------------------------------------------------------- the rest


class Sensitivity(_Model):
    method: Literal["adjoint", "direct", "fd", "cs"] = "adjoint"
    fd_step: PosReal = 1e-6  # relative


_SCHEDULE_RE = re.compile(r"^(all|every:([0-9]+)|revolve:([0-9]+))$")


#: largest K or C of a schedule (beyond any run: 10^15 steps); bigger numbers are refused
#: here, not passed on (revolve:99999999999999999999 overflowed h5py's dataset shape)
MAX_SCHEDULE_COUNT = 10 ** 15


def _check_schedule(v: str) -> str:
    m = _SCHEDULE_RE.match(v)
    count = m and (m.group(2) or m.group(3))
    if count is not None and (len(count) > 16 or int(count) > MAX_SCHEDULE_COUNT):
        raise ValueError(f"invalid schedule {v[:40]!r}: {'K' if m.group(2) else 'C'} must be at most "
                         f"{MAX_SCHEDULE_COUNT:.0e} (revolve:C with C >= the number of steps keeps every state)")
    if not m or (count is not None and int(count) < 1):
        raise ValueError(f"invalid schedule {v[:40]!r} (expected 'all', 'every:K' or 'revolve:C' with K, C >= 1)")
    return v


class Checkpoint(_Model):
    schedule: Annotated[str, Strict(), AfterValidator(_check_schedule)] = "all"
    file: Str = "run.h5"


class Constraint(_Model):
    """One ``[[optimize.constraints]]`` entry: ``lower <= c(ρ) <= upper`` where c is an
    objective (``objective = "<[[objectives]] name>"``, gradient from the same adjoint
    sweep) or the volume fraction of a density design field (``kind =
    "volume_fraction"``, ``field = "plates.P.density"``: the mean of its element values)
    or a named scalar (``kind = "parameter"``, ``parameter = "l"``: a ``[parameters]`` or
    scalar ``[[design]]`` name, explicit in ρ: config/links.py).  Exactly one of
    ``objective``/``kind``; at least one bound (checked in checks.py)."""

    objective: Name | None = None
    kind: Literal["volume_fraction", "parameter"] | None = None
    field: Str | None = None
    parameter: Name | None = None   # kind = "parameter": a [parameters] or scalar [[design]] name
    lower: Real | None = None
    upper: Real | None = None


class Optimize(_Model):
    method: Literal["tao-blmvm", "tao-bqnls", "tao-lmvm", "mma"] = "tao-blmvm"
    objective: Str | None = None
    max_it: PosInt = 50
    gatol: NonNegReal = 1e-8
    grtol: NonNegReal = 1e-8
    constraints: list[Constraint] = []  # MMA only (TAO: bounds only)
    move: Annotated[float, Strict(), Field(allow_inf_nan=False, gt=0, le=1)] = 0.5  # MMA move limit
    asymax: Annotated[float, Strict(), Field(allow_inf_nan=False, gt=0.01, le=10)] | None = None  # MMA: asymptotes within asymax·(upper − lower) of x (Svanberg's 10 if not set; a restart may change it)
    raa0: Annotated[float, Strict(), Field(allow_inf_nan=False, gt=0, le=1)] | None = None  # MMA: the convexity term raa0/(upper − lower) added to every gradient part of the approximations (Svanberg's 1e-5 if not set; keep it ≪ the typical |∂f/∂ρ_j|: 1e-10 at 10^5 densities; a restart may change it)
    epsimin: Annotated[float, Strict(), Field(allow_inf_nan=False, gt=0, le=1e-3)] | None = None  # MMA: the last barrier ε of the subproblem solve; a variable stops ≈ ε/|∂L/∂ρ_j| short of its bound or move limit (Svanberg's 1e-7 if not set; 1e-12 at 10^5 densities; a restart may change it)
    descent: Bool = False     # MMA: reject an iterate whose objective rose while its violation did not fall, halve the step (a restart may change it)
    adaptive_move: Bool = False   # MMA, implies descent: the next update's move limit is the step accepted after halvings (back to move after a trial taken as proposed); a rising trial is never taken, the run stops converged in step when a trial step <= xtol still rises (a restart may change it)
    xtol: NonNegReal = 1e-6   # MMA stops when max |Δρ_j|/(upper_j − lower_j) <= xtol ...
    ctol: NonNegReal = 1e-6   # ... and the largest relative constraint violation <= ctol
    filter_radius: PosReal | None = None   # density filter radius [m] on plate/continuum density fields
    gradient: Literal["adjoint", "fd"] = "adjoint"
    fd_step: PosReal = 0.01   # relative step of gradient = "fd" (the seed's 1 %)
    scaling: Literal["value", "bounds"] = "value"   # TAO's variables: ρ/|ρ⁰| or (ρ − lower)/(upper − lower)


class Parallel(_Model):
    groups: PosInt = 1
    # state-parallel (groups = 1) on several ranks: "auto" distributes only models of at
    # least parallel.DISTRIBUTE_MIN_UNKNOWNS unknowns (smaller ones run replicated, serial
    # on every rank); "always" distributes whatever the size (parmbs/parallel.py)
    distribute: Literal["auto", "always"] = "auto"


#: Sections a scenario may override: the model and its simulation.  Design variables,
#: objectives and the run set-up must be the same in every scenario (they define what
#: is differentiated and how), so overriding them per scenario is an error.
SCENARIO_SECTIONS = ("model", "ground", "bodies", "beams", "plates", "continua", "joints", "forces", "simulation",
                     "spatial")


def _check_scenario_set(v: dict[str, Any]) -> dict[str, Any]:
    if not v:
        raise ValueError("must not be empty (a scenario is the base config plus these overrides)")
    for k in v:
        head = k.split(".")[0]
        if head not in SCENARIO_SECTIONS:
            raise ValueError(f"cannot override {k!r} per scenario "
                             f"(allowed sections: {', '.join(SCENARIO_SECTIONS)})")
    return v


class Scenario(_Model):
    """A load case: the base config with ``set`` overrides (``--set``-style keys, TOML values).

    Resolved and cross-checked in ``parmbs/sensitivity/scenarios.py``.
    """

    name: Name
    weight: Real = 1.0  # the summed gradient is Σ_s weight_s ∇ψ_s
    set: Annotated[dict[str, Any], AfterValidator(_check_scenario_set)]


from .spatial_schema import Spatial  # noqa: E402  (the [spatial] section; needs the types above)


class Config(_Model):
    """The whole validated configuration.

    ``source`` (the file path) and ``text_sha256`` (sha256 of the raw file bytes
    and the ``--set`` overrides) are bookkeeping set by the loader; they are
    excluded from ``to_dict``/``to_toml`` and cannot be set from TOML.
    """

    model: ModelSection
    ground: Ground = Field(default_factory=Ground)
    bodies: list[Body] = []  # at least one body or beam (checks.py)
    beams: list[Beam] = []
    plates: list[Plate] = []
    continua: list[Continuum] = []
    joints: list[Joint] = []
    forces: list[Force] = []
    simulation: Simulation = Field(default_factory=Simulation)
    parameters: dict[str, Real | Str] = {}   # named scalars/expressions for drives (links.py)
    design: list[Design] = []
    objectives: list[Objective] = []
    sensitivity: Sensitivity = Field(default_factory=Sensitivity)
    checkpoint: Checkpoint = Field(default_factory=Checkpoint)
    optimize: Optimize = Field(default_factory=Optimize)
    parallel: Parallel = Field(default_factory=Parallel)
    scenarios: list[Scenario] = []
    spatial: Spatial | None = None  # spatial (3D) rigid bodies, spatial_schema.py

    source: str = Field(default="", exclude=True)
    text_sha256: str = Field(default="", exclude=True)

    def to_dict(self) -> dict[str, Any]:
        """The resolved config (defaults included) as plain lists/dicts/scalars."""
        return self.model_dump(mode="json")

    def to_toml(self) -> str:
        """The resolved config as TOML text; loading it gives an equal config."""
        import tomli_w

        return tomli_w.dumps(_drop_none(self.to_dict()))

    def resolve_path(self, path: str) -> float:
        """Nominal value of the scalar at a design ``path`` (e.g. ``bodies.A1.mass``).

        Raises ``ConfigError`` (key = ``path``) if the path is invalid.
        """
        from .paths import resolve_path

        return resolve_path(self, path)

    def with_value(self, path: str, value: float) -> "Config":
        """A revalidated deep copy with the scalar at ``path`` replaced by ``value``."""
        from .paths import with_value

        return with_value(self, path, value)


def _drop_none(obj: Any) -> Any:
    """TOML has no null: drop None entries (they are the defaults anyway)."""
    if isinstance(obj, dict):
        return {k: _drop_none(v) for k, v in obj.items() if v is not None}
    if isinstance(obj, list):
        return [_drop_none(v) for v in obj]
    return obj
