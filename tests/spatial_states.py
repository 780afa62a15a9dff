"""States for the generic block test (tests/test_components.py) of the spatial force
elements: every element group of NE = 3 gets one body–body element and elements on
ground through the ground mask (SPATIAL.md), and states that visit every regime of the
switched laws (contact open / in the smoothing band / fully engaged, damper tails,
tyre linear / saturated)."""
import numpy as np

from parmbs.spatial.road import ShapeRoad, TableRoad, PlaneRoad

#: constructor variants: each road kind for the road-bound elements
ROADS = [PlaneRoad(0.1, (0.2, -0.1, 1.0)), ShapeRoad("bump", height=0.3, length=1.5, x0=-0.7),
         ShapeRoad("step", height=-0.2, length=1.0, x0=-0.4),
         ShapeRoad("sinusoid", amplitude=0.2, wavelength=2.0, phase=0.3),
         TableRoad([-3.0, -1.0, -0.2, 0.5, 1.0, 3.0], [0.0, 0.1, -0.2, 0.15, 0.0, 0.3])]
VARIANTS = {"RoadContact": [{"road": r} for r in ROADS], "Tyre": [{"road": r} for r in ROADS]}


def _bodies(comp, q, v, a, p):
    """Unit Euler parameters, bodies apart, ground masks: element 0 body–body, element 1
    with body 0 on ground, element 2 with body 1 on ground (one-body elements: all on
    bodies).  Ground slots hold zeros, as in a model."""
    nb = comp.nb
    for k in range(nb):
        e = q[:, 7 * k + 3:7 * k + 7]
        e /= np.linalg.norm(e, axis=1)[:, None]
    if nb == 2:
        q[:, 7:10] += 2.0
        mask = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    else:
        mask = np.zeros((3, 1))
    p[:, list(comp.gidx)] = mask
    for i, k in zip(*np.nonzero(mask)):
        q[i, 7 * k:7 * k + 7] = v[i, 7 * k:7 * k + 7] = a[i, 7 * k:7 * k + 7] = 0.0


def _nonlinear_spring(comp, rng, q, v, a, p):
    _bodies(comp, q, v, a, p)
    ldot = comp.geometry(q, v, p)[5]
    # element 0 in the lower tail, 1 on the polynomial, 2 in the upper tail
    p[:, 16] = ldot + np.array([0.1, -0.1, -0.2])
    p[:, 17] = ldot + np.array([0.2, 0.1, -0.1])


def _bump_stop(comp, rng, q, v, a, p):
    _bodies(comp, q, v, a, p)
    l = comp.geometry(q, v, p)[4]
    p[:, 10] = 0.5                                       # δ
    p[:, 9] = l + np.array([0.25, 0.9, -0.1])            # s₀: blend, engaged, open


def _contact(comp, rng, q, v, a, p):
    _bodies(comp, q, v, a, p)
    r = comp.state(q, v, p)[-1]
    p[:, 8] = 0.5                                        # δ
    p[:, 4] = r + np.array([0.25, 0.9, -0.1])            # ρ: blend, engaged, open


def _tyre(comp, rng, q, v, a, p):
    _bodies(comp, q, v, a, p)
    r = comp.contact(q, v, p)[-1]
    p[:, 16] = 0.5                                       # δ
    p[:, 7] = r + np.array([0.9, 0.25, 0.8])             # R: engaged, blend, engaged
    p[:, 12] = [5.0, 1.0, 0.05]                          # κ_c: linear … saturated
    p[:, 13] = [5.0, 0.3, 0.05]                          # α_c
    p[:, 15] = 0.2                                       # w


STATES = {"SpatialSpring": lambda c, rng, *s: _bodies(c, *s),
          "SpatialNonlinearSpringDamper": _nonlinear_spring,
          "SpatialBumpStop": _bump_stop,
          "SpatialBushing": lambda c, rng, *s: _bodies(c, *s),
          "SpatialPointForce": lambda c, rng, *s: _bodies(c, *s),
          "SpatialTorque": lambda c, rng, *s: _bodies(c, *s),
          "PlaneContact": _contact, "RoadContact": _contact, "Tyre": _tyre}
