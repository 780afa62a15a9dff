"""The tyre of the Iltis model (seed 004 §5.2.1, eqs. 5.6–5.10) on a ``road.Road``.

Wheel body with centre s'_c (body-local), spin axis u' (body-local, normalised here; u =
A u'), radius R.  At the road point below the centre c (``road.normal_and_gap``):
n the road normal, r the distance of c from the road (the "effective radius" of 5.8a).

Normal force (eq. 5.6, F_n = −k_n (r − R) n for r < R, a linear spring-damper):
    F_n = P_{k_n δ}( k_n g_δ(x) + c_n σ_δ(x) ẋ ),   x = R − r,  ẋ = −n·v_c
with the C² onset of ``model/smooth.py`` (δ → 0 recovers 5.6 for x > δ up to the offset
k_n δ/2) and the C² clamp P at zero (a tyre does not pull the wheel down in a fast
rebound; contact.py).  Gap filled: the seed gives no tyre damping value; c_n is a
parameter.

Slip (eq. 5.8), b = (u × n)/|u × n| (longitudinal), n × b (lateral), ω = 2 E ṗ:
    v_slip = v_c − ω × (r n)   (the velocity of the wheel's material point at c − r n)
    κ = −bᵀ v_slip / √((bᵀv_c)² + v_ε²)                                        (5.8a)
    α = −arcsin( nᵀ (b × v_t) / √(|v_t|² + v_ε²) ),  v_t = v_c − (nᵀv_c) n     (5.8b)
Gaps filled: 5.8a divides by bᵀv_c and 5.8b by |v_t|, both zero at standstill; the
regularising velocity v_ε makes them finite (κ, α → 0 at zero slip, no NaN) and equal
to the seed's for speeds ≫ v_ε.  √((bᵀv_c)²) = |bᵀv_c| also keeps F_x against the slip
when the wheel rolls backwards (5.8a's signed denominator would reverse it).

Forces (eqs. 5.7, 5.9, 5.10), with s_x = κ/κ_c and s_y = α/α_c:
    linear with saturation  F_x = μ_x |F_n| clip(s_x),  F_y = μ_y |F_n| clip(s_y)  (5.7b, c)
    friction ellipse        (F_x, F_y) ← (F_x, F_y) / max(1, f_roz/|F_n|),
                            f_roz = √((F_x/μ_x)² + (F_y/μ_y)²)                    (5.9, 5.10)
    F_t = F_x b + F_y (n × b)                                                     (5.7a)
|F_n| factors out of every term, F_t = F_n (μ_x C_x b + μ_y C_y n × b) with
(C_x, C_y) = (clip s_x, clip s_y)/√max(1, clip² s_x + clip² s_y); so nothing divides by
F_n and the tyre force vanishes smoothly at lift-off.  Gap filled: clip and max are the
C² blends ``smooth.clip_unit`` / ``smooth.max_one`` of width w (exact outside
|s| ∈ [1 − w, 1 + w]; a pure-slip force saturates at exactly μ F_n; a combined-slip
force may exceed the ellipse by at most the factor √(1 + w), since the blended max is
≥ max(1, ρ² − w)).  F_n ≥ 0
multiplies.  Not in the seed: no rolling
resistance, no camber effect; b is undefined for u ∥ n (wheel flat on the road).

The load F = F_n n + F_t acts at the contact point c − r n: point_load at the wheel
centre plus the torque (−r n) × F_t.  p = (s'_c, g, u', R, k_n, c_n, μ_x, μ_y, κ_c,
α_c, v_ε, w, δ).  Energy (plots): k_n G_δ(x) (exact outside the band 0 < x < 1.5δ).
"""
import numpy as np

from ..model.component import register
from .forces import SpatialElement, point_load, torque_load, omega_global, cross
from .joint_kernels import c_tensor, j_of
from .kinematics import dot
from .road import normal_and_gap, PlaneRoad
from ..model import smooth

#: parameter names after (s'_c, u'), in order (config keys of [[spatial.forces]] type = "tyre")
TYRE_PARAMS = ("radius", "stiffness", "damping", "mu_x", "mu_y", "kappa_c", "alpha_c",
               "slip_velocity", "saturation_width", "smoothing")


@register
class Tyre(SpatialElement):
    """Seed 004 tyre (module docstring)."""
    nb, nq, np_ = 1, 7, 17
    uses_v = True

    def __init__(self, names, qidx, pidx, road=None):
        self.road = road if road is not None else PlaneRoad()
        super().__init__(names, qidx, pidx)

    def contact(self, q, v, p):
        """Centre, velocity, ω, n, u, r and penetration of every wheel."""
        qw = self.body(q, p, 0)
        vw = v[..., 0:7]
        sc, up = p[..., 0:3], p[..., 4:7]
        # c = r + A s'_c, v_c = ṙ + J(p, s'_c) ṗ, u = A u'/|u'| through J(p, ·) = ∂(A ·)/∂p
        # (A x' = ½ J(p, x') p, joint_kernels.py): one tensor product for both vectors
        pe = qw[..., 3:7]
        S = np.stack(np.broadcast_arrays(sc, up / np.sqrt(dot(up, up))[..., None]), -2)
        Jp = j_of(pe[..., None, :], c_tensor(S))                      # (..., 2, 3, 4)
        Ap = 0.5 * (Jp @ pe[..., None, :, None])[..., 0]               # (A s'_c, u)
        c = qw[..., 0:3] + Ap[..., 0, :]
        vc = vw[..., 0:3] + (Jp[..., 0, :, :] @ vw[..., 3:7, None])[..., 0]
        w = omega_global(pe, vw[..., 3:7])
        u = Ap[..., 1, :]
        n, r = normal_and_gap(self.road, c)
        return qw, sc, c, vc, w, u, n, r

    def forces(self, q, v, p):
        """(F_n, F_x, F_y, n, b, r) of eqs. 5.6–5.10 (module docstring)."""
        qw, sc, c, vc, w, u, n, r = self.contact(q, v, p)
        R, kn, cn, mux, muy, kc, ac, veps, wsat, delta = (p[..., 7 + i] for i in range(10))
        x = R - r
        Fn = smooth.positive(kn * smooth.ramp(x, delta) + cn * smooth.step(x, delta) * (-dot(n, vc)), kn * delta)
        un = cross(u, n)
        b = un / np.sqrt(dot(un, un))[..., None]
        vslip = vc - cross(w, r[..., None] * n)
        Vx = dot(b, vc)
        kappa = -dot(b, vslip) / np.sqrt(Vx * Vx + veps * veps)
        vt = vc - dot(n, vc)[..., None] * n
        sin_a = dot(n, cross(b, vt)) / np.sqrt(dot(vt, vt) + veps * veps)
        alpha = -np.arcsin(sin_a)
        cx = smooth.clip_unit(kappa / kc, wsat)
        cy = smooth.clip_unit(alpha / ac, wsat)
        scale = 1.0 / np.sqrt(smooth.max_one(cx * cx + cy * cy, wsat))
        return qw, sc, Fn, mux * Fn * cx * scale, muy * Fn * cy * scale, n, b, r

    def r(self, t, q, v, a, p):
        qw, sc, Fn, Fx, Fy, n, b, r = self.forces(q, v, p)
        Ft = Fx[..., None] * b + Fy[..., None] * cross(n, b)
        F = Fn[..., None] * n + Ft
        return -(point_load(qw, sc, F) + torque_load(qw, cross(-r[..., None] * n, Ft)))

    def energy(self, t, q, v, p):
        r = self.contact(q, 0.0 * q, p)[-1]
        return p[..., 8] * smooth.ramp_integral(p[..., 7] - r, p[..., 16])
