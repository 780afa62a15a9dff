"""States for the generic block test (tests/test_components.py) of the planar contact
elements (parmbs/model/contact.py): the three elements of a group sit in the three
regimes of the smooth normal law: in the onset band 0 < x < δ, fully engaged, open."""
import numpy as np

REGIMES = np.array([0.25, 0.9, -0.1])          # x for δ = 0.5: blend, engaged, open


def _contact(comp, rng, q, v, a, p):
    p[:, 8] = 0.5                                              # δ
    r = comp.state(q, v, p)[-1]
    p[:, 4] = r + REGIMES                                      # ρ = r + x


def _stop(comp, rng, q, v, a, p):
    p[:, 4] = 0.5                                              # δ
    p[:, 0] = q[:, 5] - q[:, 2] - comp.sign * REGIMES          # θ₀ = θ_b − θ_a − σ x


def _lock(comp, rng, q, v, a, p):
    from parmbs.model.kinematics import rot
    p[:, 12] = 0.5                                             # w
    n = p[:, 7:9] / np.linalg.norm(p[:, 7:9], axis=1)[:, None]
    P = q[:, 3:5] + rot(q[:, 5], p[:, 0:2] - p[:, 2:4])
    p[:, 4] = np.sum(n * (P - p[:, 5:7]), axis=1) + REGIMES    # ρ = r + x


STATES = {"PlanarContact": _contact, "RotationalStop": _stop, "StanceLock": _lock}
VARIANTS = {"RotationalStop": [{"sign": 1.0}, {"sign": -1.0}]}
