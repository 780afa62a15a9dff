"""The closed-form joint and point-to-point kernels (spatial/joint_kernels.py,
force_kernels.py) give the same blocks as the reference forms they replace (the
per-primitive Φ, Φ_q and the complex-step Hessian / Jacobians) to round-off, with
ground masks on either side, and the geometry cache never serves a stale state."""
import numpy as np
import pytest

from parmbs.spatial import bodies as SB, forces as SF, joints as SJ
from test_components import make

TOL = 1e-12


def rel(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / max(1.0, np.max(np.abs(b))))


def _ref(comp, fn):
    comp.analytic = False
    try:
        return fn()
    finally:
        comp.analytic = True


@pytest.mark.parametrize("kind", sorted(SJ.CLASSES))
def test_joint_kernels_match_reference(kind):
    rng = np.random.default_rng(11)
    cls = SJ.CLASSES[kind]
    comp, q, v, a, p = make(cls, rng)
    p[0, 3], p[1, 7] = 1.0, 1.0                     # element 0: a on ground, element 1: b on ground
    p[2, 3] = p[2, 7] = 0.0
    lam = rng.uniform(-1, 1, (len(q), comp.m))
    t = 0.3
    got = (comp.phi(t, q, p), comp.phi_q(t, q, p), comp.hess_lam(t, q, p, lam), comp.phi_p(t, q, p))
    want = _ref(comp, lambda: (comp.phi(t, q, p), comp.phi_q(t, q, p), comp.hess_lam(t, q, p, lam),
                               comp.phi_p(t, q, p)))
    for g, w, what in zip(got, want, ("phi", "phi_q", "hess_lam", "phi_p")):
        assert g.shape == w.shape and rel(g, w) < TOL, (kind, what, rel(g, w))
    q2 = q + 0.1                                   # a new iterate: the cache must not answer
    assert rel(comp.phi_q(t, q2, p), _ref(comp, lambda: comp.phi_q(t, q2, p))) < TOL


@pytest.mark.parametrize("cls", [SF.SpatialSpring, SF.SpatialNonlinearSpringDamper, SF.SpatialBumpStop],
                         ids=lambda c: c.__name__)
def test_point_to_point_kernels_match_reference(cls):
    rng = np.random.default_rng(5)
    for trial in range(3):
        comp, q, v, a, p = make(cls, rng)
        t = 0.3
        got = (comp.r(t, q, v, a, p),) + comp.jacobians(t, q, v, a, p)[:2] + (comp.r_p(t, q, v, a, p),)
        want = _ref(comp, lambda: (comp.r(t, q, v, a, p),) + comp.jacobians(t, q, v, a, p)[:2]
                    + (comp.r_p(t, q, v, a, p),))
        for g, w, what in zip(got, want, ("r", "r_q", "r_v", "r_p")):
            assert g.shape == w.shape and rel(g, w) < TOL, (cls.__name__, what, rel(g, w))
        v2 = v * 1.5                                # same q, new velocity: no stale geometry
        assert rel(comp.r(t, q, v2, a, p), _ref(comp, lambda: comp.r(t, q, v2, a, p))) < TOL


@pytest.mark.parametrize("cls", [SB.SpatialInertia, SB.SpatialGyroscopic], ids=lambda c: c.__name__)
def test_inertia_jacobians_match_complex_step(cls):
    """body_kernels.py: the closed-form (r_q, r_v, r_a) = the complex-step blocks."""
    rng = np.random.default_rng(9)
    comp, q, v, a, p = make(cls, rng)
    got = comp.jacobians(0.1, q, v, a, p)
    want = (comp.r_q(0.1, q, v, a, p), comp.r_v(0.1, q, v, a, p) if comp.uses_v else None,
            comp.r_a(0.1, q, v, a, p) if comp.uses_a else None)
    for g, w in zip(got, want):
        assert (g is None) == (w is None)
        if g is not None:
            assert g.shape == w.shape and rel(g, w) < TOL, (cls.__name__, rel(g, w))
