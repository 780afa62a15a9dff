"""Rayleigh stiffness damping of hexahedral FFR solids (``spatial.solids.S.stiffness_damping``
= β_K, parmbs/flexible/solid.SolidDamping: r = β_K K_ff(x) u̇).

* A cantilever box locked to ground at its root under suddenly applied weight rings in
  its first bending mode about the static sag with the damping ratio ζ₁ = β_K ω₁ / 2
  (Clough & Penzien, Dynamics of Structures, §12-5); without β_K it does not decay
  (the trapezoidal rule does not dissipate).
* Gradients through the damping: on the coarse spatial-crank with a density field,
  adjoint = direct and = central differences.

The derivative blocks are checked by tests/test_components.py (SolidDamping)."""
import tomllib

import numpy as np

from parmbs.config.loader import validate
from parmbs.sensitivity.problem import Problem
from test_ffr_damping import damping_ratio
from test_continuum import coarse_density_run
from test_solid_model import CANTILEVER, crank_data, problem, _central

#: ω₁ of the locked CANTILEVER box (6 × 1 × 1 hexahedra; the locking single element
#: through the thickness makes it ~1.5× the Euler–Bernoulli 239 rad/s), measured by
#: the undamped run below; only the step and horizon are derived from it
OMEGA_EST = 360.0
PERIOD = 2 * np.pi / OMEGA_EST
BETA_K = 5e-5                      # ζ₁ ≈ 0.9 %
STEPS_PER_PERIOD = 50              # the estimate in the test's docstring


def tip_history(beta_k):
    txt = CANTILEVER.format(kind="rigid", ground="O", point="origin", axes="", independent="[]")
    txt = txt.replace('density_law = "linear"\n', f'density_law = "linear"\nstiffness_damping = {beta_k!r}\n')
    data = tomllib.loads(txt)
    dt = PERIOD / STEPS_PER_PERIOD
    data["simulation"] = {"t_end": 12 * PERIOD, "dt": dt, "integrator": "trapezoidal", "progress": False}
    pr = Problem(validate(data, "cantilever.toml"))
    tr = pr.forward()
    names = pr.sys.solids.coordinate_names()
    tip = [names.index(f"beam.u_6_{j}_{k}.z") for j in (0, 1) for k in (0, 1)]
    return tr.t, np.asarray(tr.q)[:, tip].mean(1)


def test_first_mode_damping_ratio_is_beta_omega_over_two():
    """ζ₁ measured from 10 periods of the tip sag against β_K ω_d / 2 to 3 % (estimate:
    extrema sampled 50× per period, amplitude error ≤ 1 − cos(π/50) = 2e-3 against a
    log-amplitude span of 2π·10·ζ₁ ≈ 0.6, ≤ 0.4 % of ζ₁; the trapezoidal rule's period
    error (ωh)²/12 = 1.3e-3; the second bending mode (≈ 6 ω₁, 8 steps per period) is
    damped 6× more and gone after the two skipped periods).  Undamped: |ζ| < 1e-3.
    Measured: ζ/(β_K ω_d/2) − 1 = −0.10 %, undamped ζ 3.2e-5, ω_d 355 rad/s (100 steps per
    period: +0.09 %, 1.8e-5, at twice the CPU: 20.0 against 9.4 s)."""
    t0, v0 = tip_history(0.0)
    zeta0, wd0 = damping_ratio(t0, v0, skip=2 * PERIOD)
    t, v = tip_history(BETA_K)
    zeta, wd = damping_ratio(t, v, skip=2 * PERIOD)
    expect = BETA_K * wd / 2
    print(f"ω_d {wd:.1f} rad/s (undamped {wd0:.1f}), ζ {zeta:.4e} vs β_K ω/2 {expect:.4e}; undamped ζ {zeta0:.1e}")
    assert abs(wd0 / OMEGA_EST - 1) < 0.2                # the step and horizon fit the mode
    assert v.min() < 0.0                                  # it sags under its weight
    assert abs(zeta0) < 1e-3
    assert abs(zeta / expect - 1) < 0.03


def test_gradient_with_damping_adjoint_direct_fd():
    """∫U dt of test_solid_model's coarse density crank (E = 2e9) with β_K = 1e-4, the
    density field designed (SolidDamping's x column): adjoint = direct to 1e-9 (the same
    linear recursions: steps × κ × ε ≈ 10 × 1e4 × 1e-16) and = central differences
    (h = 1e-4 x: truncation h² ψ‴ ~ 1e-8 relative, Newton noise 1e-13 ψ / h ~ 1e-9) to
    1e-6; the damping moves the gradient (measured 1.0e-2: it is not a no-op)."""
    pr = coarse_density_run(lambda **kw: crank_data(stiffness_damping=1e-4, **kw), problem)
    g, gd = pr.adjoint()["compliance"], pr.direct()["compliance"]
    assert np.max(np.abs(g - gd)) / np.max(np.abs(g)) < 1e-9
    g0 = coarse_density_run(crank_data, problem).adjoint()["compliance"]
    moved = np.linalg.norm(g - g0) / np.linalg.norm(g0)
    print(f"density gradient moved by the damping: {moved:.2e}")
    assert moved > 1e-3
    p0, rho = pr.sys.p.copy(), pr.design.values(pr.sys.p)
    for j in (3, 11):
        fd = _central(pr, p0, rho, j, 1e-4 * rho[j])
        assert abs(fd - g[j]) < 1e-6 * abs(g[j]), (j, fd, g[j])
