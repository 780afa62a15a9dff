"""One generic test over every registered component: each derivative block against
central finite differences at random states.  A component whose blocks are wrong (or
not complex-step safe) fails here."""
import numpy as np
import pytest

from parmbs.model import joints, forces, python_force, contact as planar_contact  # noqa: F401  (registers the components)
from parmbs.flexible import ancf, joints as beam_joints  # noqa: F401  (ANCF beams)
from parmbs.flexible import ancf3d, ancf3d_joints  # noqa: F401  (spatial ANCF beams)
from parmbs.flexible import plate, plate_joints  # noqa: F401  (plane-stress plates)
from parmbs.flexible import continuum  # noqa: F401  (floating-frame plane-stress continua)
from parmbs.flexible import solid  # noqa: F401  (floating-frame hexahedral solids)
from parmbs.flexible import modal_components  # noqa: F401  (modally reduced continua)
from parmbs.flexible import modal_solid_components  # noqa: F401  (modally reduced solids)
from parmbs.flexible import ffr_beam, ffr_joints  # noqa: F401  (floating-frame beams)
from parmbs.spatial import bodies as spatial_bodies, joints as spatial_joints, drivers  # noqa: F401  (spatial rigid)
from parmbs.spatial import forces as spatial_forces, contact, tyre  # noqa: F401  (spatial force elements)
from parmbs.spatial import natural  # noqa: F401  (natural-coordinate rigid bodies)
from parmbs.model.component import REGISTRY, ClosedFormJacobians, Constraint, cs_jacobian
from parmbs.flexible.simp import SimpElastic
from spatial_states import STATES as SPATIAL_STATES, VARIANTS as SPATIAL_VARIANTS
from planar_states import STATES as PLANAR_STATES, VARIANTS as PLANAR_VARIANTS
from solid_states import STATES as SOLID_STATES, VARIANTS as SOLID_VARIANTS

STATES = {**SPATIAL_STATES, **PLANAR_STATES, **SOLID_STATES}

NE = 3
H = 1e-6


#: components whose formulas depend on a constructor keyword: every variant is visited
VARIANTS = {"BeamShape": [{"component": c} for c in range(4)],
            "BeamPose": [{"coordinate": c} for c in ("x", "y", "angle", "unit")],
            "Beam3Shape": [{"component": c} for c in range(6)],
            "Beam3Pose": [{"coordinate": c} for c in ("position", "slope", "unit")],
            **{f"Spatial{a}{b}SpringDamper": [{"law": law} for law in ("linear", "relative")]
               for a, b in (("Rigid", "Natural"), ("Rigid", "Beam"), ("Natural", "Natural"), ("Natural", "Beam"),
                            ("Beam", "Beam"))},
            **{n: [{"section": s} for s in ancf3d.SECTIONS] for n in ("Ancf3Inertia", "Ancf3Gravity", "Ancf3Elastic",
                                                                     "Ancf3ElasticConservative", "Ancf3AxialDamping",
                                                                     "Ancf3BendingDamping")},
            "PlateShape": [{"component": c} for c in range(2)],
            "PlatePose": [{"coordinate": c} for c in ("x", "y", "angle", "unit")],
            "PlateInertia": [{"law": law} for law in ("seed003", "linear")],
            "PlateGravity": [{"law": law} for law in ("seed003", "linear")],
            "ContinuumInertia": [{"law": law} for law in ("seed003", "linear")],
            "OrientationRow": [{"component": k} for k in range(3)],
            "ContinuumGravity": [{"law": law} for law in ("seed003", "linear")],
            **{n: [{"modes": k} for k in (1, 3)] for n in ("ReducedInertia", "ReducedGravity", "ReducedElastic",
                                                           "ReducedDamping", "ReducedRevolute")},
            **SPATIAL_VARIANTS, **PLANAR_VARIANTS, **SOLID_VARIANTS}
CASES = [(name, kw) for name in sorted(REGISTRY) for kw in VARIANTS.get(name, [{}])]


def make(cls, rng, **kw):
    nq, np_ = cls.sizes(kw.get("modes", 1)) if hasattr(cls, "sizes") else (cls.nq, getattr(cls, "np_", 0))
    args = dict(names=[f"e{i}" for i in range(NE)], qidx=np.zeros((NE, nq)), pidx=np.zeros((NE, np_)))
    if issubclass(cls, Constraint):
        args["rows"] = np.zeros((NE, cls.m))
    comp = cls(**args, **kw)
    q = rng.uniform(-1.0, 1.0, (NE, comp.nq))
    if comp.nq == 6:
        q[:, 3:5] += 2.0                        # keep the two bodies apart (spring length > 0)
    p = rng.uniform(0.5, 1.5, (NE, comp.np_))
    v = rng.uniform(-1.0, 1.0, q.shape)
    a = rng.uniform(-1.0, 1.0, q.shape)
    if cls.__name__ in STATES:                  # spatial elements: ground masks, regimes of the switched laws
        STATES[cls.__name__](comp, rng, q, v, a, p)
    return comp, q, v, a, p


def fd(f, x, h=H):
    """Central differences of f w.r.t. the last axis of x: (ne, out..., k)."""
    cols = []
    for j in range(x.shape[-1]):
        e = np.zeros_like(x)
        e[..., j] = h
        cols.append((f(x + e) - f(x - e)) / (2 * h))
    return np.stack(cols, -1)


def close(a, b, what):
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert a.shape == b.shape, (what, a.shape, b.shape)
    err = np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b)))
    assert err < 1e-7, f"{what}: relative error {err:.2e}"


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}{''.join(f'-{v}' for v in kw.values())}" for n, kw in CASES])
def test_blocks_against_finite_differences(name, kw):
    rng = np.random.default_rng(7)
    cls = REGISTRY[name]
    comp, q, v, a, p = make(cls, rng, **kw)
    t = 0.37
    if isinstance(comp, Constraint):
        lam = rng.uniform(-1, 1, (NE, comp.m))
        w = rng.uniform(-1, 1, q.shape)
        close(comp.phi_q(t, q, p), fd(lambda x: comp.phi(t, x, p), q), f"{name}.phi_q")
        close(comp.hess_lam(t, q, p, lam), fd(lambda x: comp.phi_qT_lam(t, x, p, lam), q), f"{name}.hess_lam")
        close(comp.phi_q_w_q(t, q, p, w),
              fd(lambda x: np.einsum("emk,ek->em", comp.phi_q(t, x, p), w), q), f"{name}.phi_q_w_q")
        close(comp.phi_t(t, q, p)[..., None],
              fd(lambda s: comp.phi(s[..., 0], q, p), np.array([t]), 1e-5), f"{name}.phi_t")
        # γ is defined by Φ̈ = Φ_q a + γ along q(s) = q + v s + a s²/2 at time t + s
        h2 = 1e-4
        path = lambda s: comp.phi(t + s, q + v * s + 0.5 * a * s * s, p)
        phidd = (path(h2) - 2 * path(0.0) + path(-h2)) / h2 ** 2
        expect = np.einsum("emk,ek->em", comp.phi_q(t, q, p), a) + comp.gamma(t, q, v, p)
        err = np.max(np.abs(phidd - expect)) / max(1.0, np.max(np.abs(phidd)))
        assert err < 1e-5, f"{name}.gamma: {err:.2e}"
        close(comp.gamma_q(t, q, v, p), fd(lambda x: comp.gamma(t, x, v, p), q), f"{name}.gamma_q")
        close(comp.gamma_v(t, q, v, p), fd(lambda x: comp.gamma(t, q, x, p), v), f"{name}.gamma_v")
        close(comp.phi_t_q(t, q, p), fd(lambda x: comp.phi_t(t, x, p), q), f"{name}.phi_t_q")
        close(comp.phi_p(t, q, p), fd(lambda x: comp.phi(t, q, x), p), f"{name}.phi_p")
        close(comp.phi_t_p(t, q, p), fd(lambda x: comp.phi_t(t, q, x), p), f"{name}.phi_t_p")
        close(comp.phi_qT_lam_p(t, q, p, lam), fd(lambda x: comp.phi_qT_lam(t, q, x, lam), p),
              f"{name}.phi_qT_lam_p")
        close(comp.phi_q_w_p(t, q, p, w),
              fd(lambda x: np.einsum("emk,ek->em", comp.phi_q(t, q, x), w), p), f"{name}.phi_q_w_p")
        close(comp.gamma_p(t, q, v, p), fd(lambda x: comp.gamma(t, q, v, x), p), f"{name}.gamma_p")
        cols = [0, comp.np_ - 1]
        close(comp.phi_p(t, q, p, cols), comp.phi_p(t, q, p)[..., cols], f"{name}.phi_p[cols]")
    else:
        close(comp.r_q(t, q, v, a, p), fd(lambda x: comp.r(t, x, v, a, p), q), f"{name}.r_q")
        close(comp.r_v(t, q, v, a, p), fd(lambda x: comp.r(t, q, x, a, p), v), f"{name}.r_v")
        close(comp.r_a(t, q, v, a, p), fd(lambda x: comp.r(t, q, v, x, p), a), f"{name}.r_a")
        close(comp.r_p(t, q, v, a, p), fd(lambda x: comp.r(t, q, v, a, x), p), f"{name}.r_p")
        if not comp.uses_q:
            assert np.all(comp.r_q(t, q, v, a, p) == 0), f"{name} declares uses_q=False but depends on q"
        if not comp.uses_v:
            assert np.all(comp.r_v(t, q, v, a, p) == 0), f"{name} declares uses_v=False but depends on v"
        if not comp.uses_a:
            assert np.all(comp.r_a(t, q, v, a, p) == 0), f"{name} declares uses_a=False but depends on a"


CLOSED = [(n, kw) for n, kw in CASES if issubclass(REGISTRY[n], ClosedFormJacobians)]


@pytest.mark.parametrize("name,kw", CLOSED, ids=[f"{n}{''.join(f'-{v}' for v in kw.values())}" for n, kw in CLOSED])
def test_closed_form_jacobians_at_a_complex_state(name, kw):
    """At a complex state (imaginary part zero) ``jacobians`` of a ClosedFormJacobians
    force returns the real-state blocks without calling itself again (SolidInertia,
    SolidGravity and PointToPoint went jacobians → Force.jacobians → r_q → jacobians
    without end).  Where it falls back to the complex step, closed form and complex step
    are both exact and differ by round-off, ~ nq ε |J| ≤ 31 · 2.2e-16 ≈ 7e-15 relative;
    bound 1e-12."""
    comp, q, v, a, p = make(REGISTRY[name], np.random.default_rng(1), **kw)
    real, cplx = comp.jacobians(0.0, q, v, a, p), comp.jacobians(0.0, q + 0j, v, a, p)
    for k, (x, y) in enumerate(zip(cplx, real)):
        assert (x is None) == (y is None), (name, k)
        if y is not None:
            err = np.max(np.abs(x - y)) / max(1.0, np.max(np.abs(y)))
            assert err < 1e-12, f"{name} block {k}: {err:.1e}"


@pytest.mark.parametrize("name", [n for n in sorted(REGISTRY) if issubclass(REGISTRY[n], SimpElastic)])
def test_simp_energy_partials_equal_complex_step(name):
    """energy_partials of a SIMP elastic element (simp.py; the strain-energy objective's
    ∂U/∂p and ∂U/∂u) equals U, r and the complex-step derivative of the element energies,
    with a shared and a per-element K̂ (p = (x, E0, ν, geometry…, s); round-off of sums of
    O(10²) terms: 1e-12)."""
    cls = REGISTRY[name]
    rng = np.random.default_rng(9)
    g = cls([f"e{k}" for k in range(5)], np.zeros((5, cls.nq)), np.zeros((5, cls.np_)))
    q = rng.uniform(-1, 1, (5, cls.nq))
    for shared in (True, False):
        p = rng.uniform(0.5, 1.5, (5, cls.np_))
        p[:, 2] = 0.3
        if shared:
            p[:, 2:-1] = p[0, 2:-1]
        U, dq, dp = g.energy_partials(q, p)
        np.testing.assert_allclose(U, g.energy(0.0, q, None, p), rtol=1e-13)
        np.testing.assert_allclose(dq, g.r(0.0, q, None, None, p), rtol=1e-13)
        np.testing.assert_allclose(dp, cs_jacobian(g.energy, [0.0, q, None, p], 3), rtol=1e-12, atol=1e-14)


def test_registry_is_complete():
    assert {"Revolute", "Prismatic", "Weld", "Driver", "Inertia", "Gravity", "Spring",
            "RotationalSpring", "PointForce", "Torque", "AncfInertia", "AncfGravity", "AncfElastic",
            "AncfElasticConservative", "RigidBeamRevolute", "BeamRigidRevolute", "BeamBeamRevolute",
            "RigidBeamWeld", "BeamRigidWeld", "BeamBeamWeld", "BeamPointForce", "BeamShape",
            "BeamPose", "PlateInertia", "PlateGravity", "PlateElastic", "PlateShape", "PlatePose",
            "RigidPlateRevolute", "PlateRigidRevolute", "PlatePlateRevolute", "RigidPlateWeld",
            "PlateRigidWeld", "PlatePlateWeld",
            "ContinuumInertia", "ContinuumGravity", "ContinuumElastic", "ContinuumRevolute", "ContinuumClamp",
            "ReducedInertia", "ReducedGravity", "ReducedElastic", "ReducedDamping", "ReducedRevolute",
            "FfrInertia", "FfrGravity", "FfrElastic", "FfrDamping", "FfrRevolute", "FfrWeld", "FfrPointForce",
            "SpatialInertia", "SpatialGyroscopic", "EulerRegularization", "SpatialGravity", "Normalization",
            "SpatialSpherical", "SpatialRevolute",
            "SpatialUniversal", "SpatialCylindrical", "SpatialTranslational", "SpatialRigid", "RevoluteDriver",
            "OrientationRow", "SpatialSpring", "SpatialNonlinearSpringDamper", "SpatialBumpStop", "SpatialBushing",
            "SpatialPointForce", "SpatialTorque", "PlaneContact", "RoadContact", "Tyre", "PythonForce",
            "DistanceDriver", "Ancf3Inertia", "Ancf3Gravity", "Ancf3Elastic", "Ancf3ElasticConservative",
            "Ancf3AxialDamping", "Ancf3BendingDamping", "SpatialRigidBeamSpherical", "SpatialBeamBeamSpherical",
            "SpatialRigidBeamWeld", "Beam3Shape",
            "Beam3Pose", "SpatialRigidNaturalSpherical", "SpatialNaturalNaturalSpherical",
            "SpatialNaturalBeamSpherical", "SpatialNaturalBeamWeld", "NaturalInertia",
            "SpatialRigidBeamSpringDamper", "SpatialNaturalBeamSpringDamper", "SpatialBeamBeamSpringDamper",
            "SpatialRigidNaturalSpringDamper", "SpatialNaturalNaturalSpringDamper", "NaturalOrthonormality",
            "SpatialBeamBeamWeld", "SpatialRigidNaturalDistance",
            *(f"Spatial{a}Natural{t}" for a in ("Rigid", "Natural")
              for t in ("Revolute", "Universal", "Cylindrical", "Translational")), "SpatialRigidBeamDistance",
            "SpatialNaturalNaturalDistance", "SpatialNaturalBeamDistance", "SpatialBeamBeamDistance",
            "PlanarContact", "RotationalStop", "StanceLock",
            "SolidInertia", "SolidGravity", "SolidElastic", "SolidDamping", "SolidSpherical",
            "ReducedSolidInertia", "ReducedSolidGravity", "ReducedSolidSpherical"} <= set(REGISTRY)


def test_potential_energies_match_forces():
    """For conservative elements r = ∂V/∂q (at zero velocity): energy and force agree."""
    rng = np.random.default_rng(3)
    for name in ("Gravity", "Spring", "RotationalSpring", "AncfGravity", "AncfElasticConservative",
                 "Ancf3Gravity", "Ancf3ElasticConservative", "SpatialNaturalBeamSpringDamper",
                 "PlateGravity", "PlateElastic", "FfrGravity", "FfrElastic", "ContinuumGravity",
                 "ContinuumElastic", "SpatialGravity", "ReducedGravity", "SolidElastic"):
        comp, q, v, a, p = make(REGISTRY[name], rng)
        if name == "Spring":
            p[:, 9] = 0.0                       # no damping
        zero = np.zeros_like(v)
        close(comp.r(0.0, q, zero, a, p), fd(lambda x: comp.energy(0.0, x, zero, p), q), f"{name}.energy")


def test_contact_energies_match_forces():
    """Planar contact and rotational stop: k G_δ(x) is the potential of the spring part
    wherever the clamp P_{kδ} is the identity (x ≥ 1.5 δ: k g_δ(x) ≥ k δ), at zero
    velocity (no damping, no friction)."""
    rng = np.random.default_rng(5)
    for name in ("PlanarContact", "RotationalStop"):
        comp, q, v, a, p = make(REGISTRY[name], rng)
        x = np.array([0.8, 1.2, 2.0])                      # δ = 0.5: all beyond 1.5 δ
        if name == "PlanarContact":
            p[:, 4] = comp.state(q, v, p)[-1] + x
        else:
            p[:, 0] = q[:, 5] - q[:, 2] - x
        zero = np.zeros_like(v)
        r = comp.r(0.0, q, zero, a, p)
        assert np.all(np.linalg.norm(r, axis=1) > 0.1), f"{name}: engaged state carries no force"
        close(r, fd(lambda y: comp.energy(0.0, y, zero, p), q), f"{name}.energy")
