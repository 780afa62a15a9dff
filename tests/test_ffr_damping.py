"""Rayleigh stiffness damping of FFR beams (``beams.B.stiffness_damping`` = β_K,
parmbs/flexible/ffr_beam.FfrDamping): a welded cantilever under a suddenly applied tip
load vibrates about its static deflection in its first mode with the damping ratio
ζ₁ = β_K ω₁ / 2 (Clough & Penzien §12-5), and without β_K it does not decay.
The derivative blocks are checked by tests/test_components.py; gradients through the
damped slider-crank by tests/test_ffr_beam.py."""
import tomllib

import numpy as np

from parmbs.config.loader import validate
from parmbs.sensitivity.problem import Problem

from test_ffr_beam import E_ST, RHO, H, L, cantilever_toml
# first cantilever mode: ω₁ = 1.875² √(EI/(ρA L⁴)) ≈ 1.09e4 rad/s, T₁ ≈ 5.7e-4 s
OMEGA1 = 1.875104 ** 2 * np.sqrt(E_ST * H ** 2 / (12 * RHO)) / L ** 2
DT = 2 * np.pi / OMEGA1 / 100        # 100 steps per period
T_END = 12 * 2 * np.pi / OMEGA1


def tip_history(beta_k):
    txt = cantilever_toml(4, 0.0, (0.0, -1000.0), beam=f"stiffness_damping = {beta_k}",
                          extra=f"[simulation]\nt_end = {T_END}\ndt = {DT}\nintegrator = \"trapezoidal\"\n"
                                "progress = false\n")
    pr = Problem(validate(tomllib.loads(txt), "<test>"))
    tr = pr.forward()
    return tr.t, tr.q[:, pr.sys.ffr.coord("B", 4, "v")]


def damping_ratio(t, v, skip=2 * 2 * np.pi / OMEGA1):
    """ζ and ω_d from the extrema of v after ``skip`` (default: the first two periods):
    successive peak-to-peak differences fall as e^{−ζω T/2} (the static offset
    cancels), the extrema are T/2 apart.  Also used by tests/test_solid_damping.py."""
    d = np.diff(v)
    k = np.nonzero(d[:-1] * d[1:] < 0)[0] + 1
    k = k[t[k] > skip]
    amp = np.abs(np.diff(v[k]))
    sigma = -np.polyfit(t[k[1:]], np.log(amp), 1)[0]
    wd = np.pi / np.mean(np.diff(t[k]))
    return sigma / np.hypot(sigma, wd), wd


def test_first_mode_damping_ratio_is_beta_omega_over_two():
    """β_K = 2e-6 s: ζ₁ = β_K ω₁/2 ≈ 1.1 %, measured from 10 periods of the tip to 3 %
    (estimate: extrema sampled 100× per period, amplitude error ≤ 1 − cos(π/100) = 5e-4
    against a log-amplitude span of 0.7; the trapezoidal rule's period error
    (ωh)²/12 = 3e-3; the higher modes, damped 6× more, are gone after two periods).
    The undamped beam keeps its amplitude (|ζ| < 1e-3: the trapezoidal rule does not
    dissipate)."""
    beta_k = 2e-6
    t, v = tip_history(beta_k)
    zeta, wd = damping_ratio(t, v)
    expect = beta_k * wd / 2
    print(f"ω_d {wd:.1f} rad/s (cantilever formula {OMEGA1:.1f}), ζ {zeta:.4e} vs β_K ω/2 {expect:.4e}")
    assert abs(wd / OMEGA1 - 1) < 0.02                   # the first mode (rotary inertia, 4 elements)
    assert abs(zeta / expect - 1) < 0.03
    t0, v0 = tip_history(0.0)
    zeta0, _ = damping_ratio(t0, v0)
    print(f"undamped: ζ {zeta0:.1e}")
    assert abs(zeta0) < 1e-3
