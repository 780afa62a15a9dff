"""Quadrature weights of the integral objectives ψ = ∫ g dt ≈ Σ_k w_k g(t_k, x_k) on a
run's accepted times t_0 < … < t_N (``simulation.quadrature``).

``"trapezoid"`` (default): w_0 = h_0/2, w_k = (h_{k−1} + h_k)/2, w_N = h_{N−1}/2
(TimeGrid.weights), second order whatever the integrator's order.

``"cubic"``: the composite rule that integrates, over each interval [t_k, t_{k+1}], the
cubic interpolating g at the four nearest accepted nodes t_{j0} … t_{j0+3},
j0 = min(max(k − 1, 0), N − 3) (centred, shifted inward at the two ends); fourth order
on any grid (error O(h⁴) for g ∈ C⁴; exact for cubics), the trapezoid below 3 steps.
With u = (t − t_k)/h_k and u_j = (t_j − t_k)/h_k the nodes' local abscissae,

    ∫_{t_k}^{t_{k+1}} p₃(t) dt = h_k Σ_j c_{kj} g_j,   c_k = V_k⁻ᵀ m,
    (V_k)_{jp} = u_j^p,  m = (1, ½, ⅓, ¼)        (∫₀¹ u^p du = 1/(p+1)),

and w_j = Σ_k h_k c_{kj}: the composite interpolatory (Newton–Cotes-type) rule on a
nonuniform grid, P. J. Davis, P. Rabinowitz, *Methods of Numerical Integration*, 2nd ed.,
Academic Press 1984, §2.2 (interpolatory rules) and §2.4 (compound rules); on a uniform
grid its interior weights are h(−1, 13, 13, −1)/24 per interval.  Why: a fifth-order
TSRK run takes steps of ~10 ms on the five-bar, where the trapezoid's O(h²) error in ψ
dominated ∇ψ (benchmarks/README.md, "the high-order route").

Either rule is a fixed linear combination of the g_k once the step sequence is fixed
(the sweeps freeze it): the adjoint/direct sources stay w_k ∂g/∂x_k, exact.  The cubic
w_k needs t_{k−2} … t_{k+3}, so a checkpointed adaptive run, which adds w_k g_k as soon
as h_k is known (checkpoint/restart.py), refuses it (``checkpoint_refusal``).
"""
import numpy as np

RULES = ("trapezoid", "cubic")
_MOMENTS = 1.0 / np.arange(1, 5)


def cubic_weights(t, h):
    """w_0 … w_N of the composite cubic rule (module docstring) on the times ``t`` with
    the step sizes ``h`` (h_k as the run stored them: the interval length and the scale
    of the local abscissae)."""
    t, h = np.asarray(t, dtype=float), np.asarray(h, dtype=float)
    n = len(h)
    w = np.zeros(n + 1)
    if n < 3:
        w[:-1] += 0.5 * h
        w[1:] += 0.5 * h
        return w
    k = np.arange(n)
    idx = np.clip(k - 1, 0, n - 3)[:, None] + np.arange(4)
    u = (t[idx] - t[k, None]) / h[:, None]                 # (n, 4): u_j of interval k
    Vt = u[:, None, :] ** np.arange(4)[None, :, None]       # Vᵀ: (Vt)_{pj} = u_j^p
    c = np.linalg.solve(Vt, np.broadcast_to(_MOMENTS, (n, 4))[..., None])[..., 0]
    np.add.at(w, idx, h[:, None] * c)
    return w


def checkpoint_refusal(rule):
    """Why a checkpointed adaptive run cannot use ``rule`` (None: it can)."""
    if rule == "cubic":
        return ('"cubic" needs t_{k+3} for w_k, a checkpointed adaptive run adds w_k g_k once h_k is '
                'known; use "trapezoid", fixed steps or no [checkpoint]')
    return None
