"""Kinematic analysis (``simulation.formulation = "kinematic"``,
parmbs/formulations/kinematic.py) on configs/slider-crank-kinematic.toml: the motion
equals the closed form of the slider-crank with its exact derivatives, the driver's
reaction is the torque whose power balances the mechanism's energy rate, the
sensitivities agree (adjoint, direct, complex step, FD), and a model with undriven
degrees of freedom is refused in one line.
"""
import parmbs  # noqa: F401 — first (numpy SIMD determinism: parmbs/_determinism.py)
import numpy as np

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem

from conftest import CONFIGS
from gradient_checks import assert_gradients_agree, cli_one_line_error

CFG = CONFIGS / "slider-crank-kinematic.toml"
R, L, OMEGA = 0.5, 1.5, 2 * np.pi


def problem(extra=()):
    return Problem(load_config(str(CFG), ["simulation.progress=false", *extra]))


def test_motion_is_the_closed_form_with_exact_derivatives():
    """x_B = r cos θ + √(L² − r² sin²θ), θ = ωt, and its first and second time
    derivatives (differentiated by hand below), at every step to 1e-12 (Newton on Φ
    stops at 1e-14 relative updates; v and a are linear solves).  A time-integrating
    run would carry O(h²) errors in v and a (here h²ω² ≈ 1e-3)."""
    pr = problem()
    tr = pr.forward()
    i = 3 * pr.sys.body_index["slider"]
    th = OMEGA * tr.t
    s, c = np.sin(th), np.cos(th)
    w = np.sqrt(L * L - R * R * s * s)
    x = R * c + w
    dw = -R * R * s * c * OMEGA / w                      # d/dt √(L² − r² sin²θ)
    xd = -R * s * OMEGA + dw
    ddw = (-R * R * OMEGA ** 2 * (c * c - s * s) - dw * dw) / w
    xdd = -R * c * OMEGA ** 2 + ddw
    assert np.max(np.abs(tr.q[:, i] - x)) <= 1e-12
    assert np.max(np.abs(tr.v[:, i] - xd)) <= 1e-12 * OMEGA
    assert np.max(np.abs(tr.a[:, i] - xdd)) <= 1e-11 * OMEGA ** 2


def test_motor_reaction_balances_the_power():
    """The motor's torque τ = −λ_motor (M a + Φ_qᵀλ = Q; the driver row Φ = θ − f(t)
    puts +λ on θ_crank) does the work the bodies take: τ ω = Σ m v·a + I θ̇ θ̈ − m g·v,
    to round-off of the terms (~1e-12 of their size)."""
    pr = problem()
    tr = pr.forward()
    row = pr.sys.constraint_names.index("motor[0]")
    tau = -tr.lam[:, row]
    g = np.array([0.0, -9.81])
    power = np.zeros_like(tr.t)
    scale = 0.0
    for b in pr.sys.body_names:
        i = 3 * pr.sys.body_index[b]
        body = next(x for x in pr.config.bodies if x.name == b)
        m, I = body.mass, body.inertia
        terms = (m * np.einsum("ij,ij->i", tr.v[:, i:i + 2], tr.a[:, i:i + 2]), I * tr.v[:, i + 2] * tr.a[:, i + 2],
                 -m * tr.v[:, i:i + 2] @ g)
        power += sum(terms)
        scale = max(scale, max(np.max(np.abs(t)) for t in terms))
    assert np.max(np.abs(tau * OMEGA - power)) <= 1e-11 * scale
    assert np.max(np.abs(tau)) > 1.0                     # a real load, not a zero identity


def test_kinematic_sensitivities_agree():
    """adjoint = direct = complex step ≤ 1e-9 (each step: three solves of κ ≲ 1e3, no
    accumulation over steps; round-off ~ N κ ε < 1e-10); central FD ≤ 1e-6 (δ = 1e-5:
    truncation δ² ≈ 1e-10, Newton noise 1e-14/2δ)."""
    pr = problem(["simulation.t_end=0.5"])
    adj = assert_gradients_agree(pr)
    # the slider's motion is kinematic: its mass moves only the torque
    j = pr.design.names.index("m_slider")
    assert adj["slider_x_sq"][j] == 0.0 and adj["motor_torque_sq"][j] != 0.0


def test_undriven_model_is_refused(tmp_path):
    cli_one_line_error(["simulate", CONFIGS / "pendulum.toml", "--set", "simulation.formulation=kinematic",
                        "--set", "simulation.integrator=trapezoidal", "--set", "simulation.t_end=0.01"],
                       tmp_path, "simulation.formulation", "undriven")
