"""Spatial ANCF beam element: the seed's two-node gradient-deficient Euler–Bernoulli
element in 3-D (seed 000 §5.1, Eqs. 28–35, App. A).

Each node carries (r, ∂r/∂x) ∈ R⁶; an element has e = (r_i, r'_i, r_j, r'_j) ∈ R¹² and
r(x) = S(ξ) e with S = [s1 I₃, s2 I₃, s3 I₃, s4 I₃] [Eq. 29].  Every element matrix is
the planar one's 4×4 bracket ⊗ I₃ (``ancf.py`` writes them once for both dimensions,
with the seed's errata E1–E4 fixed there):

* mass (constant)  M = ρAl/420 [...] ⊗ I₃                                     [Eq. 30]
* gravity          Q_g = ρAl/12 (6g, l g, 6g, −l g),  g ∈ R³                  [Eq. 35]
* elastic          ``elastic = "seed"``: EA ε P e + EI K e (Eq. 34 with E1–E3);
                   ``"conservative"``: the gradient of ½EAlε² + ½EI eᵀKe,
                   ε = |r_j − r_i|/l − 1, κ = |r″| (simplified strains, Eq. 33).

What the element carries, and what it does not:

* Bending: U_b = ½∫EI|r″|² dx [Eq. 31, 33] is *isotropic* — one EI for every bending
  plane.  A gradient-deficient element has no cross-section orientation (no r_y, r_z,
  no twist coordinate), so a section whose two principal second moments differ (a
  w ≠ h rectangle) cannot be represented: only sections with I_y = I_z are offered —
  the square (I = s⁴/12 about every centroidal axis), the solid circle and the
  circular tube (the seed's §6.3 wishbones, r_o/r_i = 0.015/0.01 m).
* Torsion: none (no twist coordinate; the seed's element has no torsional term).
* Shear: none (Euler–Bernoulli).

Sections (``section`` constructor keyword; parameters (ρ, d₁, d₂, E, L, n_el)):

    square  d₁ = d₂ = side s      A = s²,            I = s⁴/12
    circle  d₁ = radius r         A = π r²,          I = π r⁴/4
    tube    d₁ = r_o, d₂ = r_i    A = π(r_o² − r_i²), I = π(r_o⁴ − r_i⁴)/4

Axial stress (``axial_stress``): σ_e = E ε_e with the element's constant axial strain
ε_e = |r_j − r_i|/l − 1 of Eq. 33 — the stress of the seed's §6.3 constraints
(Eq. 56, "maximum axial stress of beams", Fig. 17); the bending part E c κ of the
fibre stress is not included (κ = |r″| is not differentiable at a straight element,
and the extreme fibre of a square depends on the bending direction).
``ks_stress`` aggregates |σ_e| over elements (Kreisselmeier–Steinhauser).

Axial damping (``Ancf3AxialDamping``, ``[[spatial.beams]] axial_damping`` = β in s; not
in the seed): Kelvin–Voigt damping of the axial strain, N = EA(ε + β ε̇), the force the
Rayleigh dissipation function R = ½ β EA l ε̇² gives (r = ∂R/∂ė, on the node positions
only).  An axial mode of frequency ω decays with ζ = β ω / 2.  Why the double wishbone
carries it: benchmarks/README.md, "dt-convergence".

Bending damping (``Ancf3BendingDamping``, ``bending_damping`` = β_b in s; not in the seed):
Kelvin–Voigt damping of the bending strain, r = β_b EI K ė with the bending part's
constant K (Eq. 31), from R = ½ β_b EI ėᵀKė; a bending mode of frequency ω decays with
ζ = β_b ω / 2, and rigid motions of a straight element are not damped.  The double
wishbone's ≈ 600 Hz wishbone bending mode, rung by its step-loaded start, reaches the
tubes' chord stress and is not touched by the axial damping (benchmarks/README.md).
"""
import numpy as np

from ..model.component import ClosedFormJacobians, register
from ..model.kinematics import dot
from . import ancf
from .ffr_beams import ks  # noqa: F401  (the KS aggregate of |σ|, shared with the FFR beam)

SECTIONS = ("square", "circle", "tube")


def section3(kind, p):
    """(A, I) of a 3-D beam section from p = (ρ, d₁, d₂, ...) (module docstring)."""
    d1, d2 = p[..., 1], p[..., 2]
    if kind == "square":
        return d1 * d1 + 0.0 * d2, d1 ** 4 / 12.0 + 0.0 * d2       # d₂ = d₁ = s (one parameter)
    if kind == "circle":
        return np.pi * d1 * d1 + 0.0 * d2, 0.25 * np.pi * d1 ** 4 + 0.0 * d2
    if kind == "tube":
        return np.pi * (d1 * d1 - d2 * d2), 0.25 * np.pi * (d1 ** 4 - d2 ** 4)
    raise ValueError(f"unknown section {kind!r} (known: {', '.join(SECTIONS)})")


class _Spatial:
    """Mixin: 3-D element with a ``section`` keyword."""
    DIM = 3

    def __init__(self, names, qidx, pidx, section="circle"):
        if section not in SECTIONS:
            raise ValueError(f"unknown section {section!r} (known: {', '.join(SECTIONS)})")
        self.section_kind = section
        super().__init__(names, qidx, pidx)

    def section(self, p):
        return section3(self.section_kind, p)


@register
class Ancf3Inertia(_Spatial, ancf.AncfInertia):
    """r = M_e a, M_e = ρAl/420 [...] ⊗ I₃ [Eq. 30]; p = (ρ, d₁, d₂, E, L, n_el)."""
    nq, np_ = 12, 6


@register
class Ancf3Gravity(_Spatial, ancf.AncfGravity):
    """r = −ρAl/12 (6g, l g, 6g, −l g) [Eq. 35]; p = (ρ, d₁, d₂, E, L, n_el, g_x, g_y, g_z)."""
    nq, np_ = 12, 9


@register
class Ancf3Elastic(_Spatial, ancf.AncfElastic):
    """Seed elastic force (errata E1–E3 fixed), r = EA ε P e + EI K e, ⊗ I₃."""
    nq, np_ = 12, 6


@register
class Ancf3ElasticConservative(_Spatial, ancf.AncfElasticConservative):
    """Gradient of ½EAlε² + ½EI eᵀKe, ⊗ I₃ (symmetric tangent)."""
    nq, np_ = 12, 6


def axial_stress(q, p):
    """σ_e = E (|r_j − r_i|/l − 1) (..., ) of elements q (..., 12), p = (ρ, d₁, d₂, E, L, n_el)."""
    _, _, eps = ancf._stretch(q, p[..., 4] / p[..., 5], 3)
    return p[..., 3] * eps


def midpoint_axial_stress(qe, ve, p, h):
    """σ_e of the chord the variational integrator's midpoint force sees (``stress_point =
    "midpoint"``, spatial_beam_objectives.py), read at a node state: E(d_m/l − 1) with
    d_m = |D| − (h²/8)|Ḋ_⊥|²/|D|,  D = r_j − r_i,  Ḋ_⊥ = Ḋ − (D·Ḋ)D/|D|².
    Why: the scheme balances the element force at q_{n+½} = ½(q_n + q_{n+1}); a chord
    turning at ω has its midpoints at the balanced length d and its nodes on the circle
    of radius d / cos(ωh/2), so the node chord E(|D|/l − 1) carries a tensile bias
    E(ωh)²/8 (measured on the double wishbone: +6.4e4 Pa mean on the rear tubes at
    Δt 1e-3, ∝ h², 4 % of their stress; benchmarks/README.md "dt-convergence").  With
    |Ḋ_⊥| = ω|D| the correction is that bias to O(h⁴).  Complex-step safe."""
    D, Dd = qe[..., 6:9] - qe[..., 0:3], ve[..., 6:9] - ve[..., 0:3]
    dd = np.sum(D * D, -1)
    perp2 = np.sum(Dd * Dd, -1) - np.sum(D * Dd, -1) ** 2 / dd
    dm = np.sqrt(dd) - (0.125 * h * h) * perp2 / np.sqrt(dd)
    return p[..., 3] * (dm / (p[..., 4] / p[..., 5]) - 1.0)


def element_stress(q, v, p, h=0.0):
    """σ_e of elements q, v (..., 12): at the node state (``axial_stress``, h = 0) or, h > 0,
    of the chord the midpoint rule balances (``midpoint_axial_stress``) — the two
    ``stress_point`` choices of the stress objectives."""
    return midpoint_axial_stress(q, v, p, h) if h else axial_stress(q, p)


@register
class Ancf3BendingDamping(_Spatial, ClosedFormJacobians, ancf._AncfElement):
    """Kelvin–Voigt damping of the bending strain (module docstring): r = β_b EI K ė
    (K = ∫S″ᵀS″ dx ⊗ I₃ of the elastic force's bending part, Eq. 31), the force of the
    Rayleigh dissipation R = ½ β_b EI ėᵀKė ≥ 0; zero for rigid motions of a straight
    element (K annihilates them); p = (ρ, d₁, d₂, E, L, n_el, β_b).
    Jacobians in closed form: r_q = 0, r_v = β_b EI K ⊗ I₃ (was the complex step: with the
    axial damping's, 10 % of the double wishbone's numpy forward, issue 22)."""
    nq, np_ = 12, 7
    uses_v = True

    def r(self, t, q, v, a, p):
        _, I = self.section(p)
        return ((p[..., 6] * p[..., 3] * I)[..., None] * ancf.apply4(ancf.bend4(ancf._elem(p)), v, 3)
                + 0.0 * q[..., :1] + 0.0 * a[..., :1])

    def jacobians(self, t, q, v, a, p):
        _, I = self.section(p)
        rv = ancf.kron4((p[..., 6] * p[..., 3] * I)[..., None, None] * ancf.bend4(ancf._elem(p)), 3)
        shape = np.broadcast_shapes(q.shape[:-1], v.shape[:-1], rv.shape[:-2]) + (12, 12)
        return np.zeros(shape), np.broadcast_to(rv, shape), None


@register
class Ancf3AxialDamping(_Spatial, ClosedFormJacobians, ancf._AncfElement):
    """Kelvin–Voigt axial damping (module docstring): with D = r_j − r_i, d = |D|,
    ε̇ = D·Ḋ/(d l), the node forces r_i = −β EA ε̇ D/d, r_j = +β EA ε̇ D/d, slopes 0
    (dissipation ėᵀr = β EA l ε̇² ≥ 0); p = (ρ, d₁, d₂, E, L, n_el, β).
    Jacobians in closed form: f = c (D·Ḋ) D/d², c = β EA/l, r = Bᵀf with B = [−I, 0, I, 0];
    r_q = Bᵀ [c((D·Ḋ) I + D Ḋᵀ)/d² − 2c (D·Ḋ) D Dᵀ/d⁴] B, r_v = Bᵀ [c D Dᵀ/d²] B."""
    nq, np_ = 12, 7
    uses_v = True

    def jacobians(self, t, q, v, a, p):
        A, _ = self.section(p)
        D, dist, _ = ancf._stretch(q, ancf._elem(p), 3)
        Dv = v[..., 6:9] - v[..., 0:3]
        c = (p[..., 6] * p[..., 3] * A / ancf._elem(p))[..., None, None]
        d2 = (dist * dist)[..., None, None]
        s = dot(D, Dv)[..., None, None]
        DD = D[..., :, None] * D[..., None, :]
        Fq = c * (s * np.eye(3) + D[..., :, None] * Dv[..., None, :]) / d2 - 2.0 * c * s * DD / (d2 * d2)
        Fv = c * DD / d2
        shape = np.broadcast_shapes(Fq.shape[:-2], Fv.shape[:-2]) + (12, 12)
        rq, rv = np.zeros(shape, Fq.dtype), np.zeros(shape, Fv.dtype)    # complex at a complex state
        for out, F in ((rq, Fq), (rv, Fv)):
            out[..., 0:3, 0:3] = F
            out[..., 0:3, 6:9] = -F
            out[..., 6:9, 0:3] = -F
            out[..., 6:9, 6:9] = F
        return rq, rv, None

    def r(self, t, q, v, a, p):
        A, _ = self.section(p)
        D, dist, _ = ancf._stretch(q, ancf._elem(p), 3)
        Dv = v[..., 6:9] - v[..., 0:3]
        f = (p[..., 6] * p[..., 3] * A * dot(D, Dv) / (ancf._elem(p) * dist * dist))[..., None] * D
        z = 0.0 * f
        return np.concatenate(np.broadcast_arrays(-f, z, f, z), -1) + 0.0 * a[..., :1]
