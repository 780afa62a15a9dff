"""Frequency-weighted ride measures of ISO 2631-1 as objectives: weighted RMS and VDV.

``integrand = "iso2631_rms"`` or ``"iso2631_vdv"`` with ``point = "BODY.POINT"``,
``direction = "x" | "y" | "z"`` (a global component of the point's acceleration,
default ``"z"``) and ``weighting = "Wk" | "Wd"`` (default ``"Wk"``: vertical; ``"Wd"``:
horizontal, ISO 2631-1:1997 Table 1 for a seated person's health and comfort).

**The weighting** (ISO 2631-1:1997 Annex A, eqs. A.1–A.4; the parameters of Table A.1,
which ISO 8041:2005 repeats): with p = j2πf, ω_i = 2πf_i,

    band-limiting high-pass  H_h = 1 / (1 + √2 ω₁/p + (ω₁/p)²)
    band-limiting low-pass   H_l = 1 / (1 + √2 p/ω₂ + (p/ω₂)²)
    a–v transition           H_t = (1 + p/ω₃) / (1 + p/(Q₄ω₄) + (p/ω₄)²)
    upward step              H_s = (1 + p/(Q₅ω₅) + (p/ω₅)²) / (1 + p/(Q₆ω₆) + (p/ω₆)²) · (ω₅/ω₆)²
    W = H_h H_l H_t H_s

    W_k: f₁ 0.4, f₂ 100, f₃ 12.5, f₄ 12.5, Q₄ 0.63, f₅ 2.37, Q₅ 0.91, f₆ 3.35, Q₆ 0.91 (Hz)
    W_d: f₁ 0.4, f₂ 100, f₃ 2.0,  f₄ 2.0,  Q₄ 0.63, no upward step (f₅ = f₆ = ∞)

|W(j2πf)| reproduces ISO 2631-1 Table 3's weighting factors (tests/test_iso2631.py).
Each factor is a second-order section (b₂s² + b₁s + b₀)/(s² + a₁s + a₀) in
controllable form; the cascade is one linear system ż = A z + B s, y = C z (D = 0: the
low-pass makes W strictly proper) of order 8 (W_k) or 6 (W_d).

**Exact discretization on the integrator's steps.**  The acceleration history s(t) is
known at the step times t_k only; between them it is taken linear (first-order hold,
the same interpolation the trapezoidal quadrature below assumes).  For that input the
filter ODE is solved exactly over each step h_k (adaptive steps included):

    z_k = Φ_k z_{k−1} + Γ⁰_k s_{k−1} + Γ¹_k s_k,   y_k = C z_k,
    exp(h_k M) = [[Φ, Γa, Γb], [0, 1, h], [0, 0, 1]],  M = [[A, B, 0], [0, 0, 1], [0, 0, 0]],
    Γ⁰ = Γa − Γb/h_k,  Γ¹ = Γb/h_k,

with z₀ = 0 (the filter at rest at t₀: the record starts at t₀, as a measurement does).
Unlike the bilinear (Tustin) map this has no frequency warping; its only error is the
linear interpolation of s, O((ωh)²).

**The measures** (ISO 2631-1 eqs. 1 and 8), with the trapezoidal weights c_k of the run's
steps and T = t_N − t₀:

    a_w = ( (1/T) Σ_k c_k y_k² )^{1/2}    (weighted r.m.s., m/s²)
    VDV = ( Σ_k c_k y_k⁴ )^{1/4}           (vibration dose value, m/s^1.75)

**Derivatives.**  ψ = F(y(s)), s_k = s(x_k; p).  The filter does not depend on p and is
linear, y = L s with L lower triangular (causal), so ∂ψ/∂s = Lᵀ ∂F/∂y: the *adjoint*
filter runs backward after the forward run (``multipliers``: ζ_N = Cᵀ ∂F/∂y_N,
ζ_{k−1} = Φ_kᵀ ζ_k + Cᵀ ∂F/∂y_{k−1}; ∂ψ/∂s_k = Γ¹_kᵀ ζ_k + Γ⁰_{k+1}ᵀ ζ_{k+1}), and
m_k = ∂ψ/∂s_k times ∂s_k/∂x_k is the adjoint sweep's per-step source (in place of the
c_k ∂g/∂x_k of an additive integrand).  The *direct* method propagates the filter
forward on the state tangents instead (``direct``: ds_k/dρ = ∂s/∂x_k dx_k/dρ + ∂s/∂ρ,
dy/dρ = L ds/dρ, dψ/dρ = Σ_k ∂F/∂y_k dy_k/dρ), so adjoint = direct checks the reverse
recurrence against the forward one.

``parmbs gradient --history`` (sensitivity/history.py): the adjoint rows accumulate
m_k's sources as for any objective; the direct rows of a ride objective are zero before
t_N (its tangent filter runs once the whole history is known).

With a checkpoint file (schedule ``all``) the signal history s_0 … s_N is recomputed
from the stored states whenever it is needed (the forward's end, each adjoint start),
so a resumed run gives the same bits; the other schedules do not keep every state and
are refused (``checkpoint.schedule``).
"""
from __future__ import annotations

import numpy as np

from .objectives import Term

#: ISO 2631-1:1997 Table A.1 (f in Hz; None: no upward step)
WEIGHTINGS = {
    "Wk": dict(f1=0.4, f2=100.0, f3=12.5, f4=12.5, Q4=0.63, f5=2.37, Q5=0.91, f6=3.35, Q6=0.91),
    "Wd": dict(f1=0.4, f2=100.0, f3=2.0, f4=2.0, Q4=0.63, f5=None, Q5=None, f6=None, Q6=None),
}
MEASURES = ("iso2631_rms", "iso2631_vdv")
AXES = {"x": 0, "y": 1, "z": 2}


def sections(name):
    """The second-order sections (b₂, b₁, b₀, a₁, a₀) of W = H_h H_l H_t H_s (docstring)."""
    c = WEIGHTINGS[name]
    w = {k: 2 * np.pi * v for k, v in c.items() if k.startswith("f") and v is not None}
    out = [(1.0, 0.0, 0.0, np.sqrt(2) * w["f1"], w["f1"] ** 2),               # H_h = s²/(s² + √2ω₁s + ω₁²)
           (0.0, 0.0, w["f2"] ** 2, np.sqrt(2) * w["f2"], w["f2"] ** 2),      # H_l = ω₂²/(s² + √2ω₂s + ω₂²)
           (0.0, w["f4"] ** 2 / w["f3"], w["f4"] ** 2, w["f4"] / c["Q4"], w["f4"] ** 2)]   # H_t
    if c["f5"] is not None:                                                   # H_s: (ω₅/ω₆)²·(ω₆/ω₅)² = 1
        out.append((1.0, w["f5"] / c["Q5"], w["f5"] ** 2, w["f6"] / c["Q6"], w["f6"] ** 2))
    return out


def state_space(name):
    """(A, B, C, D) of the cascade of ``sections(name)`` (controllable form per section)."""
    A, B, C, D = np.zeros((0, 0)), np.zeros(0), np.zeros(0), 1.0
    for b2, b1, b0, a1, a0 in sections(name):
        As = np.array([[0.0, 1.0], [-a0, -a1]])
        Bs = np.array([0.0, 1.0])
        Cs = np.array([b0 - b2 * a0, b1 - b2 * a1])
        n = len(B)
        A2 = np.zeros((n + 2, n + 2))
        A2[:n, :n] = A
        A2[n:, :n] = np.outer(Bs, C)          # the section's input is the cascade's output so far
        A2[n:, n:] = As
        A, B, C, D = A2, np.concatenate([B, Bs * D]), np.concatenate([b2 * C, Cs]), b2 * D
    return A, B, C, D


def response(name, f):
    """W(j2πf) from the formulas of ISO 2631-1 Annex A (complex, array over f)."""
    p = 2j * np.pi * np.asarray(f, float)
    out = np.ones_like(p)
    for b2, b1, b0, a1, a0 in sections(name):
        out = out * (b2 * p ** 2 + b1 * p + b0) / (p ** 2 + a1 * p + a0)
    return out


class Filter:
    """The exactly discretized weighting filter (module docstring) on a step sequence."""

    def __init__(self, name):
        from scipy.linalg import expm
        self._expm = expm
        self.A, self.B, self.C, D = state_space(name)
        assert D == 0.0
        self.order = len(self.B)
        self._cache = {}

    def step(self, h):
        """(Φ, Γ⁰, Γ¹) of a step h (cached by h: fixed steps compute it once)."""
        got = self._cache.get(h)
        if got is None:
            n = self.order
            M = np.zeros((n + 2, n + 2))
            M[:n, :n], M[:n, n], M[n, n + 1] = self.A, self.B, 1.0
            E = self._expm(h * M)
            Phi, Ga, Gb = E[:n, :n], E[:n, n], E[:n, n + 1]
            got = self._cache[h] = (Phi, Ga - Gb / h, Gb / h)
        return got

    def apply(self, s, H):
        """y_0 … y_N of the signal s (N+1, ...) on the steps H (N,): the forward
        recurrence, on trailing columns alike (the direct method's tangents)."""
        s = np.asarray(s)
        z = np.zeros((self.order,) + s.shape[1:], dtype=np.result_type(s, float))
        y = np.zeros(s.shape, dtype=z.dtype)
        for k in range(1, len(s)):
            Phi, G0, G1 = self.step(float(H[k - 1]))
            z = Phi @ z + np.multiply.outer(G0, s[k - 1]) + np.multiply.outer(G1, s[k])
            y[k] = self.C @ z
        return y

    def adjoint(self, gy, H):
        """∂ψ/∂s = Lᵀ gy for gy = ∂F/∂y (N+1,): the backward recurrence (docstring)."""
        N = len(gy) - 1
        gs = np.zeros(N + 1)
        zeta = np.zeros(self.order)
        for k in range(N, 0, -1):
            zeta = zeta + self.C * gy[k]                 # ζ_k: y_k = C z_k
            Phi, G0, G1 = self.step(float(H[k - 1]))
            gs[k] += G1 @ zeta
            gs[k - 1] += G0 @ zeta
            zeta = Phi.T @ zeta                           # on to z_{k−1}
        return gs                                        # (y_0 = C z_0 = 0 does not depend on s)


def measure(kind, y, c, T):
    """a_w or VDV of the filtered history y with quadrature weights c (docstring)."""
    if kind == "iso2631_rms":
        return np.sqrt(np.sum(c * y ** 2) / T)
    return np.sum(c * y ** 4) ** 0.25


def measure_grad(kind, y, c, T, value):
    """∂F/∂y_k of ``measure`` at ``value`` = F(y) (zero when F = 0: the measure's
    derivative there is not defined; a still signal has ∂ψ/∂y = 0 by symmetry)."""
    if value == 0:
        return np.zeros(len(y))
    if kind == "iso2631_rms":
        return c * y / (T * value)                      # ∂/∂y √(Σ c y²/T)
    return c * y ** 3 / value ** 3                      # ∂/∂y (Σ c y⁴)^{1/4}


def _signal_spatial(t, q, v, a, lam, p, ref, axis):
    from ..spatial.kinematics import point_acceleration
    return point_acceleration(q, v, a, p[..., 0:3])[..., axis]


def _signal_planar(t, q, v, a, lam, p, ref, axis):
    from ..model.kinematics import point_acceleration
    return point_acceleration(q, v, a, p[..., 0:2] - p[..., 2:4])[..., axis]


ZREF = np.zeros(2)          # the signal reads no reference point


class _Signal(Term):
    """s(x; p) as a ``Term`` (its ``raw`` and complex-step ``grads``) with a given
    integrand function and index sets instead of a config kind."""

    def __init__(self, fn, qidx, pidx):
        self.fn, self.kind = fn, "iso2631_signal"
        self.qidx, self.pidx = np.asarray(qidx), np.asarray(pidx)
        self.lrows, self.ldrop, self.uses_ref = np.zeros(0, np.int64), False, False


class RideTerm:
    """The integrand slot of a ride objective: the signal s_k = e_dirᵀ r̈_P(x_k; p) (a
    point's global acceleration component) and the filter; ``history = True`` tells
    the sweeps that ψ is not a sum of per-step terms (problem.py)."""

    history = True

    def __init__(self, system, cfg):
        from functools import partial
        self.kind = cfg.integrand
        self.weighting = cfg.weighting or "Wk"
        axis = AXES[cfg.direction or "z"]
        sp = getattr(system, "spatial", None)
        if sp is not None and sp.is_spatial_body(cfg.point.split(".", 1)[0]):
            body = cfg.point.split(".", 1)[0]
            self.signal = _Signal(partial(_signal_spatial, axis=axis), sp.body_qidx(body), sp.point_pidx(cfg.point))
        else:
            qidx, _, pidx = system.point_offset(cfg.point)
            self.signal = _Signal(partial(_signal_planar, axis=axis), qidx, pidx)
        self.filter = Filter(self.weighting)
        self.m = None                   # ∂ψ/∂s_k of the trajectory being swept (``prepare``)

    def params(self, sys):
        """The entries of p the signal reads (design.py: the sweeps' column map)."""
        return self.signal.params(sys)

    # -- the signal at one state (complex-step safe: a Term of its own, objectives.py) ----
    def raw(self, sys, t, x, p, ref):
        return self.signal.raw(sys, t, x, p, ZREF)

    def value(self, sys, t, x, p, ref):
        return float(np.real(self.raw(sys, t, x, p, ref)))

    def signal_grads(self, sys, t, x, p, design_map, nd):
        """∂s/∂(q, v, a, λ) as global vectors and ∂s/∂ρ (nd,) (complex step, exact)."""
        out, dp, _ = self.signal.grads(sys, t, x, p, ZREF, design_map, nd)
        return out, dp

    def grads(self, sys, t, x, p, ref, design_map, nd):
        """∂s/∂x and ∂s/∂ρ in ``Term.grads``' layout (the sweep scales them by m_k)."""
        out, dp = self.signal_grads(sys, t, x, p, design_map, nd)
        return out, dp, np.zeros(2)

    # -- the whole history --------------------------------------------------------------------
    def evaluate(self, s, grid):
        """ψ (unweighted) of the signal history s on ``grid`` (a TimeGrid)."""
        y = self.filter.apply(s, grid.h)
        return measure(self.kind, y, grid.weights(), grid.t[-1] - grid.t[0])

    def prepare(self, s, grid):
        """Set m_k = ∂ψ/∂s_k (unweighted) for the history s: the adjoint filter."""
        c, T = grid.weights(), grid.t[-1] - grid.t[0]
        y = self.filter.apply(s, grid.h)
        val = measure(self.kind, y, c, T)
        self.m = self.filter.adjoint(measure_grad(self.kind, y, c, T, val), grid.h)
        return val

    def direct(self, s, ds, grid):
        """dψ/dρ (unweighted) from the signal history s and its tangents ds (N+1, nd):
        the forward filter on the tangents (docstring)."""
        c, T = grid.weights(), grid.t[-1] - grid.t[0]
        y = self.filter.apply(s, grid.h)
        dy = self.filter.apply(ds, grid.h)
        gy = measure_grad(self.kind, y, c, T, measure(self.kind, y, c, T))
        return gy @ dy


def signal_history(problem, term, traj, p):
    """s_0 … s_N of an in-memory trajectory (real or complex)."""
    from .problem import physical
    return np.array([term.raw(problem.sys, traj.t[k], physical(traj.x(k)), p, None) for k in range(traj.steps + 1)])


def check_usable(problem, ob):
    """Refuse (ModelError naming the key) what cannot differentiate a history measure:
    a stepper with its own whole-run sweeps (PETSc TS, the Maggi adjoint ODEs), whose
    objective sources are additive."""
    from ..model.system import ModelError
    st = problem.stepper
    if st.whole_runs:
        raise ModelError(f"objectives.{ob.name}.integrand",
                         f"{ob.integrand.kind!r} needs parmbs's own step-by-step sweeps; the integrator "
                         f"{problem.config.simulation.integrator!r} (formulation "
                         f"{problem.config.simulation.formulation!r}) runs its own whole-run sweeps")
