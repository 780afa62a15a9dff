"""``[[spatial.solids]]``: hexahedral continua in a floating frame of reference
(parmbs/flexible/solid.py, solids.py).  Imported by ``spatial_schema.py``.

    [[spatial.solids]]
    name = "crank"
    size = [0.2, 0.04, 0.02]            # Lx, Ly, Lz of the box [m]
    nx = 10; ny = 2; nz = 1             # trilinear hexahedra per direction
    offset = [-0.02, -0.02, -0.01]      # the box's corner in the frame
    clamp_radius = 0.025                # reference condition: nodes within it have u = 0
    E = 2.1e11; nu = 0.3; rho0 = 7850.0
    stiffness_damping = 0.0             # Rayleigh β_K [s]: ζ = β_K ω/2 per elastic mode
    density = 1.0                       # x_e: one number or nx·ny·nz values, e = (k·ny + j)·nx + i
    points = { tip = [10, 1, 0] }       # named nodes [i, j, k]; origin, node_i_j_k predefined
    initial = { position = [0, 0, 0] }  # the frame's pose (not the centre of mass)
    independent = []                    # frame coordinates held by the initial assembly
"""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, Strict, model_validator

from .schema import ModalReduction, Name, NonNegReal, PosInt, PosReal, Real, _Model, _no_duplicates
from .spatial_schema import SpatialPose, SpatialVelocity   # defined before spatial_schema imports this module

_Index = Annotated[int, Strict(), Field(ge=0)]


class SpatialSolid(_Model):
    """A box of nx × ny × nz trilinear hexahedra in a floating frame (seed 003 §2.1):
    coordinates are the frame's origin and Euler parameters, then the small elastic
    displacements (u_x, u_y, u_z) of every free node, resolved in the frame.  The box's
    corner sits at ``offset`` in the frame.  Reference condition: every node within
    ``clamp_radius`` of the frame origin is clamped (u = 0; at least three nodes, not on
    one line).  Material E(x) = x^penalization E, ρ(x) by ``density_law`` (the two-branch
    law of the topology crank, or linear) per element density x.  Points: origin (the frame origin), node_i_j_k and
    ``points``.  Spherical joints may attach at any node; revolute, rigid (fully locked)
    and the other joints with an orientation attach at the origin or at clamped nodes
    (a hexahedron's node carries no rotation).  ``initial``: the frame's pose;
    ``initial_velocity``: its velocity and angular velocity (global frame);
    ``independent`` (required, possibly empty): frame coordinates x, y, z, rx, ry, rz the
    initial assembly holds.  The body is undeformed at t = 0.  ``reduction``: modal
    reduction as ``continua.NAME.reduction`` (flexible/modal_solid.py)."""

    name: Name               # solid name
    size: tuple[PosReal, PosReal, PosReal]   # box edges Lx, Ly, Lz along the frame axes [m]
    nx: PosInt               # hexahedra along x
    ny: PosInt               # hexahedra along y
    nz: PosInt               # hexahedra along z
    offset: tuple[Real, Real, Real] = (0.0, 0.0, 0.0)   # the box's lowest corner in the frame [m]
    clamp_radius: PosReal    # nodes within this distance of the frame origin are clamped (u = 0; at least three, not on one line) [m]
    E: PosReal               # Young's modulus of solid material (x = 1) [Pa]
    nu: Annotated[float, Strict(), Field(allow_inf_nan=False, ge=0, lt=0.5)] = 0.3   # Poisson's ratio
    rho0: PosReal            # mass density of solid material (x = 1) [kg/m³]
    density: PosReal | list[PosReal] = 1.0   # element density field x_e: one number (uniform) or nx·ny·nz numbers, e = (k·ny + j)·nx + i
    penalization: PosReal = 3.0   # SIMP exponent s: E(x) = x^s E
    stiffness_damping: NonNegReal = 0.0   # stiffness-proportional (Rayleigh) damping β_K: elastic force K_ff(x) (u + β_K u̇), damping ratio β_K ω/2 in a mode of angular frequency ω (parmbs/flexible/solid.py `SolidDamping`; reduced: `ReducedDamping`, β_K K̂ η̇); 0: none
    density_law: Literal["seed003", "linear"] = "seed003"   # ρ(x): "seed003" (1e5 x⁶ ρ0 below 0.1, x ρ0 above) or "linear" (x ρ0)
    points: dict[Name, tuple[_Index, _Index, _Index]] = {}   # named nodes { NAME = [i, j, k] } (origin, node_i_j_k predefined)
    initial: SpatialPose = Field(default_factory=SpatialPose)   # pose of the frame (origin position, orientation)
    initial_velocity: SpatialVelocity = Field(default_factory=SpatialVelocity)   # frame velocity and angular velocity, global frame
    independent: Annotated[list[Literal["x", "y", "z", "rx", "ry", "rz"]], AfterValidator(_no_duplicates)]   # frame coordinates the initial assembly holds (required, possibly empty)
    reduction: ModalReduction | None = None   # modal reduction { modes = K, attachment = true }: the nodal displacements become K modal coordinates (lowest eigenmodes of the solid clamped at its hub, + 3 static modes per free joint node; flexible/modal_solid.py); omit for the full-order solid (load: planar continua only)

    @model_validator(mode="after")
    def _mesh_checks(self):
        n = self.nx * self.ny * self.nz
        if isinstance(self.density, list) and len(self.density) != n:
            raise ValueError(f"density has {len(self.density)} values, the mesh has nx*ny*nz = {n} elements")
        for k, (i, j, l) in self.points.items():
            if k == "origin" or k.startswith("node_"):
                raise ValueError(f"point name {k!r} is reserved (origin and node_i_j_k are predefined)")
            if i > self.nx or j > self.ny or l > self.nz:
                raise ValueError(f"point {k!r} = [{i}, {j}, {l}] is outside the mesh "
                                 f"(nodes 0..{self.nx} × 0..{self.ny} × 0..{self.nz})")
        return self

