"""Spatial force elements: contact onset and zero slip (finite blocks, FD across the
onset), potentials, the seed 004 laws (eqs. 5.3–5.10) at their nominal values, roads."""
import numpy as np
import pytest

from parmbs.model.component import cs_jacobian
from parmbs.model import smooth
from parmbs.spatial.contact import PlaneContact, RoadContact
from parmbs.spatial.forces import (SpatialSpring, SpatialNonlinearSpringDamper, SpatialBumpStop,
                                   ILTIS_SPRING_DAMPER)
from parmbs.spatial.road import PlaneRoad, ShapeRoad, TableRoad
from parmbs.spatial.tyre import Tyre

ID = [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]


def fd(f, x, h=1e-6):
    """Central differences w.r.t. the last axis of x, all columns in one batched call
    (the components broadcast over a leading axis)."""
    k = x.shape[-1]
    E = h * np.eye(k).reshape((k,) + (1,) * (x.ndim - 1) + (k,))
    d = (f(x + E) - f(x - E)) / (2 * h)
    return np.moveaxis(d, 0, -1)


def rel(a, b):
    return np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b)))


def one(cls, p, **kw):
    p = np.atleast_2d(np.asarray(p, float))
    return cls(["e"], np.zeros((1, cls.nq)), np.zeros((1, p.shape[1])), **kw), p


# -- contact onset and zero slip ---------------------------------------------------------
# (sphere at the body centre s' = 0, radius ρ = 0.5, exactly touching the plane z = 0)
def plane_contact():
    #            s'          g    ρ    k     λ    c    δ     μ    ε     O          n
    return one(PlaneContact, [0, 0, 0, 0, 0.5, 1e4, 1e3, 50, 1e-2, 0.8, 1e-2, 0, 0, 0, 0, 0, 1])


def road_contact():
    return one(RoadContact, [0, 0, 0, 0, 0.5, 1e4, 1e3, 50, 1e-2, 0.8, 1e-2], road=PlaneRoad())


def tyre():
    #          s'c      g  u'        R    k_n  c_n  μx   μy   κc   αc   vε   w    δ
    return one(Tyre, [0, 0, 0, 0, 0, 1, 0, 0.5, 2e5, 3e3, 0.9, 0.8, 0.1, 0.1, 0.1, 0.05, 1e-2],
               road=PlaneRoad())


ONSET = {"PlaneContact": plane_contact, "RoadContact": road_contact, "Tyre": tyre}


@pytest.mark.parametrize("name", sorted(ONSET))
@pytest.mark.parametrize("motion", ["rest", "rolling", "sliding"])
def test_onset_and_zero_slip_blocks_are_finite_and_match_fd(name, motion):
    """Gap exactly 0 (centre at height ρ = R = 0.5) and slip exactly 0 (rest: v = ω = 0;
    rolling: v = 2 m/s along x, ω = 4 rad/s about y, so v_C = v − ω × (0.5 n) = 0): r, r_q,
    r_v, r_p are finite and r = 0; sliding (slip ≠ 0, approaching at 0.3 m/s): finite.
    r_q, r_v equal central differences at the onset and through the smoothing band."""
    comp, p = ONSET[name]()
    q = np.array([[0.0, 0.0, 0.5, 1.0, 0.0, 0.0, 0.0]])
    v = np.zeros((1, 7))
    if motion in ("rolling", "sliding"):
        v[0, 0] = 2.0
        if motion == "rolling":
            v[0, 3:7] = 0.5 * np.array([0.0, 0.0, 4.0, 0.0])      # ṗ = ½ Eᵀω at p = (1, 0, 0, 0)
        else:
            v[0, 2] = -0.3                                        # approaching too
    a = np.zeros((1, 7))
    r = comp.r(0.0, q, v, a, p)
    rq, rv, rp = comp.r_q(0.0, q, v, a, p), comp.r_v(0.0, q, v, a, p), comp.r_p(0.0, q, v, a, p)
    for blk in (r, rq, rv, rp):
        assert np.all(np.isfinite(blk))
    if motion != "sliding":
        assert np.all(r == 0.0)                                   # no force exactly at the onset at zero slip
    _fd_across_onset(comp, q, v, a, p, 2)


def _fd_across_onset(comp, q, v, a, p, iz, delta=1e-2):
    """r_q, r_v against central differences exactly at the onset (step 1e-10 ≪ δ: the
    force is C² in the gap, its damping part C¹, so the FD error is O(h) there) and at
    heights stepping through the band [−2δ, 2δ] (step 1e-7); errors relative to the
    engaged stiffness (r_q one smoothing width inside contact)."""
    qin = q.copy()
    qin[0, iz] -= delta
    scale = max(1.0, np.abs(comp.r_q(0.0, qin, v, a, p)).max())
    assert scale > 10.0                                            # engaged: a real stiffness
    for dz, h in [(0.0, 1e-10)] + [(s, 1e-7) for s in np.linspace(-2 * delta, 2 * delta, 11) + 1.3e-4]:
        qz = q.copy()
        qz[0, iz] += dz
        rq, rv = comp.r_q(0.0, qz, v, a, p), comp.r_v(0.0, qz, v, a, p)
        assert np.all(np.isfinite(rq)) and np.all(np.isfinite(rv))
        err_q = np.abs(rq - fd(lambda x: comp.r(0.0, x, v, a, p), qz, h)).max() / scale
        err_v = np.abs(rv - fd(lambda x: comp.r(0.0, qz, x, a, p), v, h)).max() / scale
        assert err_q < 1e-6 and err_v < 1e-6, (dz, err_q, err_v)


def test_bump_stop_onset():
    """Bump stop exactly at s = s₀ (approaching): zero force, finite blocks equal to FD
    at and across the onset."""
    comp, p = one(SpatialBumpStop, [0, 0, 0, 0, 0, 0, 0, 0, 1e6, 0.93, 1e-2, 1e3])
    q = np.array([ID[:3] + [1, 0, 0, 0] + [0, 0, 0.93, 1, 0, 0, 0]])
    v = np.zeros((1, 14))
    v[0, 9] = -0.1
    a = np.zeros((1, 14))
    assert np.all(comp.r(0.0, q, v, a, p) == 0.0)
    _fd_across_onset(comp, q, v, a, p, 9)


# -- potentials ------------------------------------------------------------------------
def _random_pair(rng, ne=3):
    q = rng.uniform(-1, 1, (ne, 14))
    q[:, 7:10] += 2.0
    for k in (3, 10):
        q[:, k:k + 4] /= np.linalg.norm(q[:, k:k + 4], axis=1)[:, None]
    return q


@pytest.mark.parametrize("case", ["spring", "nonlinear", "bump", "plane", "road", "tyre"])
def test_conservative_forces_are_gradients_of_their_energy(case):
    """r(q, v = 0) = ∂V/∂q (complex-step gradient of ``energy``) for the conservative
    parts (dampers off; states outside the clamp band 0 < x < 1.5δ); exact also off
    pᵀp = 1 (random, unnormalised Euler parameters)."""
    rng = np.random.default_rng(11)
    ne = 3
    if case in ("spring", "nonlinear", "bump"):
        q = _random_pair(rng, ne)
        base = np.c_[rng.uniform(-0.5, 0.5, (ne, 3)), np.zeros(ne), rng.uniform(-0.5, 0.5, (ne, 3)), np.zeros(ne)]
        if case == "spring":
            comp, p = one(SpatialSpring, np.c_[base, np.tile([3.0, 0.0, 1.5], (ne, 1))])
        elif case == "nonlinear":
            law = np.array(ILTIS_SPRING_DAMPER) * [1e-6, 0, 1e-6, 1e-6, 1e-6, 1, 1, 1, 1, 1]
            comp, p = one(SpatialNonlinearSpringDamper, np.c_[base, np.tile(law, (ne, 1))])
        else:
            l = SpatialSpring(["e"] * ne, np.zeros((ne, 14)), np.zeros((ne, 11))).length(
                q, np.c_[base, np.ones((ne, 3))])
            comp, p = one(SpatialBumpStop, np.c_[base, np.full(ne, 50.0), l + [0.2, 0.3, -0.1],
                                                 np.full(ne, 0.1), np.zeros(ne)])
    else:
        q = rng.uniform(-1, 1, (ne, 7))
        q[:, 3:7] /= np.linalg.norm(q[:, 3:7], axis=1)[:, None]
        q[:, 3:7] *= 1.1                                   # off the unit sphere on purpose
        road = PlaneRoad(0.2, (0.1, -0.2, 1.0))
        if case == "plane":
            comp, p = one(PlaneContact, np.c_[rng.uniform(-0.3, 0.3, (ne, 3)), np.zeros(ne),
                                              np.full(ne, 1.0), np.full(ne, 40.0), np.zeros((ne, 2)),
                                              np.full(ne, 0.01), np.full(ne, 0.5), np.full(ne, 0.1),
                                              rng.uniform(-0.3, 0.3, (ne, 3)), rng.uniform(0.5, 1, (ne, 3))])
        elif case == "road":
            comp, p = one(RoadContact, np.c_[rng.uniform(-0.3, 0.3, (ne, 3)), np.zeros(ne),
                                             np.full(ne, 1.0), np.full(ne, 40.0), np.zeros((ne, 2)),
                                             np.full(ne, 0.01), np.full(ne, 0.5), np.full(ne, 0.1)], road=road)
        else:
            comp, p = one(Tyre, np.c_[rng.uniform(-0.3, 0.3, (ne, 3)), np.zeros(ne), np.tile([0, 1, 0], (ne, 1)),
                                      np.full(ne, 1.0), np.full(ne, 40.0), np.zeros(ne),
                                      np.tile([0.9, 0.8, 0.1, 0.1, 0.1, 0.05, 0.01], (ne, 1))], road=road)
    zero = np.zeros_like(q)
    r = comp.r(0.0, q, zero, zero, p)
    assert np.max(np.abs(r)) > 1e-3                          # the elements are loaded
    dV = cs_jacobian(lambda x: comp.energy(0.0, x, 0.0 * x, p), [q], 0)
    assert rel(r, dV) < 1e-12


# -- the seed 004 laws at their nominal values -----------------------------------------
def test_iltis_spring_damper_nominal_values():
    """Seed 004 eq. 5.5 at the Iltis table 5.4 points: the spring carries the 128 N
    compression of table 5.5 (tension −128 N); the damper's tangent-line tails equal the
    seed's (5.5c, d) coefficients to their printed digits."""
    s = np.hypot(0.500 - 0.297, 0.632 - 0.241)
    comp = SpatialNonlinearSpringDamper(["e"], np.zeros((1, 14)), np.zeros((1, 18)))
    p = np.r_[np.zeros(8), ILTIS_SPRING_DAMPER][None]
    assert abs(comp.tension(np.array([s]), np.array([0.0]), p)[0] - (-128.0)) < 0.05
    Fd = lambda v: comp.tension(np.array([s]), np.array([v]), p)[0] - comp.tension(np.array([s]), np.array([0.0]), p)[0]
    for v in (-0.5, -0.3):
        assert abs(Fd(v) - (-416.4200 + 1844.3 * v)) < 1e-3 * max(1.0, abs(Fd(v)))
    for v in (0.3, 0.8):
        assert abs(Fd(v) - (1919.1638 + 1634.727 * v)) < 1e-3 * max(1.0, abs(Fd(v)))
    # C¹ at the breakpoints: one-sided slopes agree
    for vb in (-0.2, 0.21):
        h = 1e-7
        left, right = (Fd(vb) - Fd(vb - h)) / h, (Fd(vb + h) - Fd(vb)) / h
        assert abs(left - right) < 1e-3 * abs(left)


def test_bump_stop_matches_eq_5_4_beyond_the_smoothing_band():
    """F_B = −10⁷ (s − 0.93) for s < 0.93 − δ, shifted by k δ/2; exactly 0 for s ≥ 0.93."""
    comp = SpatialBumpStop(["e"], np.zeros((1, 14)), np.zeros((1, 12)))
    delta = 1e-4
    p = np.r_[np.zeros(8), 1e7, 0.93, delta, 0.0][None]
    for s in (0.95, 0.93):
        assert comp.tension(np.array([s]), np.array([0.0]), p)[0] == 0.0
    s = 0.92
    assert abs(-comp.tension(np.array([s]), np.array([0.0]), p)[0] - (-1e7 * (s - 0.93) - 1e7 * delta / 2)) < 1e-6


def _tyre_forces(kappa=None, vy=0.0, V=10.0, mux=0.9, muy=0.8, kc=0.1, ac=0.1, w=0.05):
    """Tyre on the flat road at 1 mm penetration, rolling along x at V with longitudinal
    slip κ (ω chosen) and lateral velocity vy; returns (F_n, F_x, F_y)."""
    R = 0.5
    comp, p = one(Tyre, [0, 0, 0, 0, 0, 1, 0, R, 2e5, 0.0, mux, muy, kc, ac, 1e-3, w, 1e-4], road=PlaneRoad())
    q = np.array([[0.0, 0.0, R - 1e-3, 1, 0, 0, 0]])
    r = R - 1e-3
    omega = (V + (kappa or 0.0) * V) / r                      # κ = −b·v_slip / |b·v_c| = (ω r − V)/V
    v = np.array([[V, vy, 0.0, 0.0, 0.0, 0.5 * omega, 0.0]])
    out = comp.forces(q, v, p)
    return out[2][0], out[3][0], out[4][0]


def test_tyre_linear_regime_and_saturation():
    """Eqs. 5.7–5.10: F_x = μ_x F_n κ/κ_c in the linear range, saturation at μ_x F_n
    (exactly, pure slip), F_y = μ_y F_n α/α_c with α = −arcsin(v_y/|v|); the combined
    force stays within the friction ellipse up to the documented blend factor."""
    Fn, Fx, Fy = _tyre_forces(kappa=0.02)
    assert abs(Fn - 2e5 * (1e-3 - 0.5e-4)) < 1e-6 * Fn
    assert abs(Fx - 0.9 * Fn * 0.02 / 0.1) < 1e-8 * Fn and abs(Fy) < 1e-9 * Fn
    Fn, Fx, Fy = _tyre_forces(kappa=-0.5)
    assert abs(Fx - (-0.9 * Fn)) < 1e-12 * Fn                # braking beyond κ_c: −μ_x F_n
    V, vy = 10.0, 0.3
    Fn, Fx, Fy = _tyre_forces(kappa=0.0, vy=vy, V=V)
    alpha = -np.arcsin(vy / np.sqrt(V * V + vy * vy + 1e-6))
    assert abs(Fy - 0.8 * Fn * alpha / 0.1) < 1e-6 * Fn and Fy < 0   # lateral force opposes the drift
    w = 0.05
    for kappa, vy in ((0.5, 3.0), (-0.08, -0.9), (0.09, 0.9)):
        Fn, Fx, Fy = _tyre_forces(kappa=kappa, vy=vy, w=w)
        ell = np.hypot(Fx / 0.9, Fy / 0.8) / Fn
        assert ell <= np.sqrt(1 + w) + 1e-12
    Fn, Fx, Fy = _tyre_forces(kappa=0.5, vy=3.0, w=w)
    assert np.hypot(Fx / 0.9, Fy / 0.8) / Fn > 0.97           # saturated on (near) the ellipse


# -- roads ------------------------------------------------------------------------------
ROADS = [PlaneRoad(0.1, (0.2, -0.1, 1.0)), ShapeRoad("bump", height=0.1, length=0.8, x0=1.0),
         ShapeRoad("step", height=-0.1, length=0.5, x0=0.2), ShapeRoad("sinusoid", amplitude=0.05, wavelength=3.0),
         TableRoad([0.0, 0.5, 1.0, 2.0, 4.0], [0.0, 0.02, -0.03, 0.05, 0.0])]


@pytest.mark.parametrize("road", ROADS, ids=repr)
def test_road_slopes_and_smoothness(road):
    """h_x, h_y equal the complex-step derivatives of h, and h_x is continuous (C²
    roads: its FD derivative is continuous across the shape's ends and the table knots)."""
    x = np.linspace(-1.0, 5.0, 301)
    y = np.linspace(-0.5, 0.5, 301)
    h, hx, hy = road.height(x, y)
    hc = road.height(x + 1e-30j, y)[0].imag / 1e-30
    hyc = road.height(x, y + 1e-30j)[0].imag / 1e-30
    assert np.allclose(hx, hc, atol=1e-14) and np.allclose(hy, hyc, atol=1e-14)
    knots = {"bump": [1.0, 1.8], "step": [0.2, 0.7], "table": [0.0, 0.5, 1.0, 2.0, 4.0]}.get(road.kind, [0.3])
    for xk in knots:
        eps = 1e-7
        hxl, hxr = road.height(np.array([xk - eps]), 0.0)[1], road.height(np.array([xk + eps]), 0.0)[1]
        assert abs(hxl - hxr)[0] < 1e-5
        h2 = lambda s: (road.height(np.array([s + 1e-6]), 0.0)[1] - road.height(np.array([s - 1e-6]), 0.0)[1]) / 2e-6
        assert abs(h2(xk - 1e-4) - h2(xk + 1e-4)) < 1e-2          # h'' continuous (C²)
    if road.kind == "table":
        assert np.allclose(road.height(road.x, 0.0 * road.x)[0], road.z, atol=1e-14)


def test_smooth_switches():
    """g, σ, G of smooth.py: values and continuity at 0 and δ; σ = g′, g = G′."""
    d = 0.3
    x = np.array([-0.1, 0.0, 0.1, 0.3, 0.7])
    assert np.allclose(smooth.ramp(x, d), [0, 0, 0.1 ** 3 / d ** 2 - 0.1 ** 4 / (2 * d ** 3), d / 2, 0.7 - d / 2])
    for f, fp in ((smooth.ramp, smooth.step), (smooth.ramp_integral, smooth.ramp)):
        xs = np.linspace(-0.2, 0.8, 57)
        assert np.allclose(f(xs + 1e-30j, d).imag / 1e-30, fp(xs, d), atol=1e-14)
    for xk in (0.0, d):
        assert abs(smooth.ramp(xk + 1e-9, d) - smooth.ramp(xk - 1e-9, d)) < 1e-8
    assert np.allclose(smooth.clip_unit(np.array([0.5, 1.5, -2.0]), 0.1), [0.5, 1.0, -1.0])
    # the force clamp P_w: 0 below 0, identity above w, monotone and ≤ F between, C²
    w = 2.0
    F = np.linspace(-1.0, 3.0, 4001)
    P = smooth.positive(F, w)
    assert np.all(P[F <= 0] == 0) and np.allclose(P[F >= w], F[F >= w], rtol=0, atol=1e-15)
    assert np.all(np.diff(P) >= 0) and np.all(P <= np.maximum(F, 0) + 1e-15)
    d1 = smooth.positive(F + 1e-30j, w).imag / 1e-30
    for Fk, slope in ((0.0, 0.0), (w, 1.0)):
        for side in (-1e-7, 1e-7):
            assert abs(smooth.positive(np.array(Fk + side + 1e-30j), w).imag / 1e-30 - slope) < 1e-6
    d2 = np.diff(d1) / np.diff(F)
    assert np.max(np.abs(np.diff(d2))) < 0.01                    # no jump in P'' (C²)


@pytest.mark.parametrize("name", ["PlaneContact", "Tyre"])
def test_fast_rebound_does_not_pull(name):
    """Separating at 5 m/s from 1 mm penetration: the damper term alone would pull
    (c σ ẋ < −k g); the clamped normal force is zero instead, and smooth."""
    comp, p = ONSET[name]()
    q = np.array([[0.0, 0.0, 0.5 - 1e-3, 1.0, 0.0, 0.0, 0.0]])
    v = np.zeros((1, 7))
    v[0, 2] = 5.0
    r = comp.r(0.0, q, v, 0 * v, p)
    assert np.all(r == 0.0)
    v[0, 2] = -5.0                                                # approaching: pushes up
    assert comp.r(0.0, q, v, 0 * v, p)[0, 2] < 0.0


def test_batched_jacobians_equal_the_separate_blocks():
    """SpatialElement.jacobians (one complex-step pass over q and v columns, used by the
    steppers) returns r_q and r_v of the generic complex-step blocks (to round-off)."""
    import sys
    import os
    sys.path.insert(0, os.path.dirname(__file__))
    import test_components as T
    from parmbs.model.component import REGISTRY
    from parmbs.spatial.forces import SpatialElement
    from spatial_states import ROADS
    rng = np.random.default_rng(5)
    names = sorted(n for n, c in REGISTRY.items() if issubclass(c, SpatialElement))
    assert len(names) >= 9
    for name in names:
        kw = {"road": ROADS[1]} if name in ("RoadContact", "Tyre") else {}
        comp, q, v, a, p = T.make(REGISTRY[name], rng, **kw)
        Jq, Jv, Ja = comp.jacobians(0.2, q, v, a, p)
        assert rel(Jq, comp.r_q(0.2, q, v, a, p)) < 1e-13, name
        assert Ja is None
        if comp.uses_v:
            assert rel(Jv, comp.r_v(0.2, q, v, a, p)) < 1e-13, name
        else:
            assert Jv is None


def test_bushing_restoring_force_and_moment():
    """Bushing between ground (a, identity pose) and a body b, unloaded at the identity:
    b displaced by d and turned by a small angle φ about a unit axis u gets the force
    −K_t d (+ C_t ḋ) and, about its COM, the moment −K_r φ u (to O(φ³)), as generalized
    forces (Q_r = F, Q_p = 2 Eᵀ M on the unit sphere)."""
    from parmbs.spatial.forces import SpatialBushing
    from parmbs.spatial.kinematics import from_axis_angle, E_matrix
    kt, kr, ct = np.array([1e4, 2e4, 3e4]), np.array([100.0, 200.0, 300.0]), np.array([10.0, 20.0, 30.0])
    p = np.r_[0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, kt, kr, ct, 0, 0, 0][None]
    comp = SpatialBushing(["e"], np.zeros((1, 14)), np.zeros((1, 24)))
    d, u, phi = np.array([1e-3, -2e-3, 5e-4]), np.array([1.0, 2.0, 2.0]) / 3.0, 1e-3
    pb = from_axis_angle(u, phi)
    q = np.r_[np.zeros(7), d, pb][None]
    v = np.zeros((1, 14))
    v[0, 7:10] = [0.1, 0.0, -0.2]
    r = comp.r(0.0, q, v, 0 * v, p)[0]
    assert np.allclose(-r[7:10], -(kt * d + ct * v[0, 7:10]), rtol=1e-12)
    M = -kr * phi * u
    assert np.allclose(-r[10:14], 2.0 * E_matrix(pb).T @ M, rtol=1e-6, atol=1e-12)
    assert np.allclose(r[0:3], -r[7:10])                         # equal and opposite on ground
