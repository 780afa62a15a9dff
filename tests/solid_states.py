"""States for the generic block test (tests/test_components.py) of the hexahedral FFR
solids (parmbs/flexible/solid.py): unit Euler parameters (the frame's and side b's),
Poisson's ratio 0.3 (random parameters in [0.5, 1.5] would put ν at or past the
incompressible limit 0.5, where λ is singular), and one element on ground through the
ground mask of SolidSpherical."""
import numpy as np


def _unit(x):
    x /= np.linalg.norm(x, axis=1)[:, None]


def _frame(comp, rng, q, v, a, p):
    _unit(q[:, 3:7])


def _elastic(comp, rng, q, v, a, p):
    p[:, 2] = 0.3


def _spherical(comp, rng, q, v, a, p):
    _unit(q[:, 3:7])
    _unit(q[:, 13:17])
    p[:, 12] = [0.0, 0.0, 1.0]
    q[2, 10:17] = 0.0                      # ground reads zero slots; its pose is the mask's identity


STATES = {"SolidInertia": _frame, "SolidGravity": _frame, "SolidElastic": _elastic, "SolidDamping": _elastic,
          "SolidSpherical": _spherical}
VARIANTS = {"SolidInertia": [{"law": law} for law in ("seed003", "linear")],
            "SolidGravity": [{"law": law} for law in ("seed003", "linear")]}


def _reduced_spherical(comp, rng, q, v, a, p):
    K = comp.K
    _unit(q[:, 3:7])
    _unit(q[:, 7 + K:14 + K][:, 3:7])
    p[:, 12 + 3 * K] = [0.0, 0.0, 1.0]
    q[2, 7 + K:14 + K] = 0.0               # ground on side b (mask g_b = 1)


STATES.update(ReducedSolidInertia=_frame, ReducedSolidGravity=_frame, ReducedSolidSpherical=_reduced_spherical)
VARIANTS.update({n: [{"modes": k} for k in (1, 3)]
                 for n in ("ReducedSolidInertia", "ReducedSolidGravity", "ReducedSolidSpherical")})
