"""Bookkeeping of a modally reduced hexahedral solid (``spatial.solids.S.reduction``),
called from solids.py.

Coordinates: the frame (x, y, z, e0..e3) then the K modal coordinates η
(K = modes + 3 per free joint node with ``attachment = true``), replacing the nodal
displacements of the full-order solid.  Elements: one ReducedSolidInertia, one
ReducedElastic (modal_components.py, shared with the planar body), with
``stiffness_damping`` one ReducedDamping (β_K K̂ η̇, modal_components.py) and, where
gravity acts, one ReducedSolidGravity; a spherical joint at a free node is a
ReducedSolidSpherical with that node's rows Φ_k of V.  The origin and clamped nodes
move with the frame exactly as in the full-order solid (solids.py ``side``).

Body data (modal_solid.py) are entries ``<spatial.solids.S.reduced.*>`` of p, driven by
the element densities when those are designed (sensitivity/design.py).  ``reduction.load``
(a stored body, modal_io.py) is planar-only for now and refused here.
"""
import numpy as np

from .modal_components import ReducedDamping, ReducedElastic
from .modal_solid import SolidReduction
from . import modal_solid_components as msc


def reduction(s, cfg, joint_refs):
    """The SolidReduction of solid ``s`` or None; ``joint_refs``: the point names of
    spatial joints on this solid (their free nodes get attachment modes)."""
    from ..model.system import ModelError
    from .plates import node_of
    red = getattr(cfg, "reduction", None)
    if red is None:
        return None
    if red.load is not None:
        raise ModelError(f"{s.base}.reduction.load", "a stored reduced body is supported for planar continua "
                                                    "only (continua.NAME.reduction.load); remove it")
    attach = []
    if red.attachment:
        for name in joint_refs:
            ijk = node_of(cfg, name, origin="origin")
            if ijk not in (None, "origin"):
                attach.append(s.node_number(ijk))
    g = s.geo                                                       # L (3), n (3), X0 (3)
    pidx = {"density": s.density, **{k: s.p[k] for k in ("E", "nu", "rho0", "penalization")},
            "Lx": g[0], "Ly": g[1], "Lz": g[2], "X0": g[6], "Y0": g[7], "Z0": g[8]}
    return SolidReduction(s, red.modes, attach, pidx)


def eta(s):
    """Coordinate indices of the modal coordinates η."""
    return list(range(s.offset + 7, s.offset + 7 + s.nelastic))


def coordinate_names(s):
    return [f"{s.name}.{c}" for c in ("x", "y", "z", "e0", "e1", "e2", "e3")] + \
        [f"{s.name}.eta_{k}" for k in range(s.nelastic)]


def add_forces(system, s, P, gravity, g_acts):
    """One ReducedSolidInertia, ReducedElastic (and ReducedDamping, ReducedSolidGravity)
    element."""
    s.inertia_p, s.stiffness_p = s.reduction.register_data(P)
    K = s.nelastic
    q = s.qidx() + eta(s)
    system._add_force(("ReducedSolidInertia", K), msc.ReducedSolidInertia, {"modes": K}, s.name, q,
                      list(s.inertia_p))
    system._add_force(("ReducedElastic", K), ReducedElastic, {"modes": K}, s.name, eta(s), list(s.stiffness_p))
    if "stiffness_damping" in s.p:              # Rayleigh β_K > 0: β_K K̂ η̇ (the full-order SolidDamping projected)
        system._add_force(("ReducedDamping", K), ReducedDamping, {"modes": K}, s.name, eta(s),
                          list(s.stiffness_p) + [s.p["stiffness_damping"]])
    if g_acts:
        lay, _ = msc.solid_layout(K)
        ip = s.inertia_p
        system._add_force(("ReducedSolidGravity", K), msc.ReducedSolidGravity, {"modes": K}, s.name, q,
                          [ip[0], *ip[lay["S0"]], *ip[lay["Sbar"]], *gravity])


def add_spherical(system, s, m, name, qo, po, P):
    """A spherical joint at free node m of the reduced solid s (u = Φ_m η)."""
    K = s.nelastic
    i, j, k = np.unravel_index(m, (s.n[2] + 1, s.n[1] + 1, s.n[0] + 1))[::-1]
    pc = list(s.geo[6:9]) + list(s.geo[0:3]) + [int(s.frac[0][i]), int(s.frac[1][j]), int(s.frac[2][k])]
    system._group(("ReducedSolidSpherical", K), msc.ReducedSolidSpherical, {"modes": K}, name,
                  s.qidx() + eta(s) + qo, pc + list(s.reduction.node_data(P, m)) + po, 3)
