"""HHT-α and WBZ-α, the two named special cases of generalized-α (α_m = 0 and α_f = 0;
Chung & Hulbert 1993, Table 1; integrators/newmark.py NewmarkParameterSets): their
parameters, the spectral radius they promise, exact discrete gradients on the index-3
and the GGL equations, and the rho_inf range of HHT as a one-line input error.

No new derivative block: the stepper is NewmarkFamily with other (α_m, α_f, β, γ),
whose blocks tests/test_components.py checks.
"""
import parmbs  # noqa: F401 — first (numpy SIMD determinism: parmbs/_determinism.py)
import numpy as np
import pytest

from parmbs.config import load_config
from parmbs.integrators.newmark import NewmarkFamily
from parmbs.sensitivity.problem import Problem

from conftest import CONFIGS
from gradient_checks import assert_gradients_agree, cli_one_line_error


class _Params(NewmarkFamily):
    """Only the parameters (no model): what the named constructors pass on."""
    def __init__(self, system, h, alpha_m, alpha_f, beta, gamma, **kw):
        self.am, self.af, self.beta, self.gamma = alpha_m, alpha_f, beta, gamma


def amplification(s, wh):
    """The one-step map of the scheme on q̈ = −ω²q (state q, v, a; ω h = wh; h = 1)."""
    am, af, b, g = s.am, s.af, s.beta, s.gamma
    w2 = wh * wh
    # (1−α_m) a₁ + α_m a₀ = −ω²[(1−α_f) q₁ + α_f q₀],  q₁ = q₀ + v₀ + (½−β) a₀ + β a₁,  v₁ = v₀ + (1−γ) a₀ + γ a₁
    lhs = (1 - am) + (1 - af) * w2 * b
    rows = []
    for x0 in np.eye(3):
        q0, v0, a0 = x0
        a1 = (-am * a0 - w2 * ((1 - af) * (q0 + v0 + (0.5 - b) * a0) + af * q0)) / lhs
        rows.append([q0 + v0 + (0.5 - b) * a0 + b * a1, v0 + (1 - g) * a0 + g * a1, a1])
    return np.array(rows).T


@pytest.mark.parametrize("name", ["hht", "wbz"])
@pytest.mark.parametrize("rho", [0.5, 0.8, 0.95])
def test_special_cases_of_generalized_alpha(name, rho):
    """α_m = 0 (HHT) or α_f = 0 (WBZ); γ = ½ − α_m + α_f (second order), β = ¼(γ + ½)²
    (unconditional stability with maximal high-frequency damping), and the spectral
    radius of the step as ωh → ∞ equals ρ∞ (computed from the amplification matrix at
    ωh = 1e6, where it is within ~1e-6 of its limit; tolerance 1e-4)."""
    s = getattr(_Params, name)(None, 1.0, rho)
    assert (s.am if name == "hht" else s.af) == 0.0
    assert s.gamma == pytest.approx(0.5 - s.am + s.af, abs=1e-15)
    assert s.beta == pytest.approx(0.25 * (s.gamma + 0.5) ** 2, abs=1e-15)
    radius = max(abs(np.linalg.eigvals(amplification(s, 1e6))))
    assert radius == pytest.approx(rho, abs=1e-4)
    # and no growth at the resolved end: |λ| ≤ 1 at ωh = 0.1
    assert max(abs(np.linalg.eigvals(amplification(s, 0.1)))) <= 1.0 + 1e-12


# Tolerances as tests/test_ggl.py (same model, steps and solver): adjoint vs direct and
# complex step ≤ N κ(J) ε ≈ 100 · 1e4 · 1.1e-16 = 1e-10 < 1e-9; central FD at δ = 1e-5:
# truncation δ² ~ 1e-10, Newton noise 1e-12 / 2δ ≈ 1e-7 < 1e-6.
@pytest.mark.parametrize("stab", ["none", "ggl"])
@pytest.mark.parametrize("name", ["hht", "wbz"])
def test_fivebar_gradients_agree(name, stab):
    pr = Problem(load_config(str(CONFIGS / "fivebar.toml"), [
        "simulation.t_end=0.1", "simulation.dt=1e-3", f"simulation.integrator={name}", "simulation.rho_inf=0.7",
        f"simulation.stabilization={stab}", "simulation.progress=false"]))
    assert (pr.stepper.am == 0.0) == (name == "hht") and (pr.stepper.af == 0.0) == (name == "wbz")
    assert_gradients_agree(pr, tag=f"{name}/{stab}/")


def test_hht_rho_inf_below_half_is_an_input_error(tmp_path):
    cli_one_line_error(["simulate", CONFIGS / "pendulum.toml", "--set", "simulation.integrator=hht",
                        "--set", "simulation.rho_inf=0.3", "--set", "simulation.t_end=0.01"],
                       tmp_path, "simulation.rho_inf", "pendulum.toml")
