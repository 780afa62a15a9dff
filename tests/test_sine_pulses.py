"""The ``sine_pulses`` time function (model/timefunctions.py): the steering profile of the
buggy's double lane change (docs/buggy.md §3).

* f′, f″ equal central differences of f, inside and across the pulse ends (C²);
* each pulse has zero mean and a non-zero double integral (heading restored, offset left);
* end to end: a slider driven by x = f(t); the adjoint gradient of ψ = ∫ λ² dt (driver
  force) with respect to the pulse parameters equals the direct one and central
  differences, and obeys Euler's identity for a quadratic form in the amplitudes.
"""
import numpy as np
import pytest

from parmbs.model.timefunctions import SinePulses

C = np.array([0.3, 0.2, 0.5, -0.2, 0.8, 0.4])      # two pulses (A, t0, T)


def test_derivatives_and_smoothness():
    f = SinePulses(2)
    t = np.linspace(0.0, 1.5, 301) + 0.0013     # no sample within h of a pulse end (f‴ jumps there)
    h = 1e-5
    d1 = (f(t + h, C) - f(t - h, C)) / (2 * h)
    d2 = (f(t + h, C) - 2 * f(t, C) + f(t - h, C)) / (h * h)
    assert np.max(np.abs(f(t, C, 1) - d1)) <= 1e-7
    assert np.max(np.abs(f(t, C, 2) - d2)) <= 2e-4
    for t0, T in ((0.2, 0.5), (0.8, 0.4)):         # C² at both ends of both pulses
        for te in (t0, t0 + T):
            for order in (0, 1, 2):
                lo, hi = f(te - 1e-11, C, order), f(te + 1e-11, C, order)
                assert abs(lo - hi) <= 1e-6, (te, order)
    assert f(np.array([0.0, 1.3]), C).tolist() == [0.0, 0.0]


def test_pulse_restores_heading_and_leaves_offset():
    f = SinePulses(1)
    c = np.array([1.0, 0.0, 1.0])
    t = np.linspace(0.0, 1.0, 200001)
    dt = t[1] - t[0]
    s = f(t, c)
    first = np.cumsum(s) * dt
    assert abs(first[-1]) <= 1e-9
    assert np.sum(first) * dt == pytest.approx(3 / (16 * np.pi), rel=1e-4)   # ∫∫ s = 3/(16π)


SLIDER = """
[model]
name = "slider"
gravity = [0.0, 0.0]
[ground]
points = { O = [0.0, 0.0] }
[[bodies]]
name = "s"
mass = 2.0
inertia = 0.1
points = { O = [0.0, 0.0] }
[[joints]]
type = "prismatic"
name = "guide"
a = "ground.O"
b = "s.O"
[[joints]]
type = "driver"
name = "drive"
coordinate = "s.x"
function = { type = "sine_pulses", amplitudes = [0.3, -0.2], starts = [0.0103, 0.0617], durations = [0.04, 0.03] }
[simulation]
t_end = 0.1
dt = 1e-3
integrator = "genalpha"
rho_inf = 0.8
progress = false
[[design]]
name = "A0"
path = "joints.drive.function.amplitudes.0"
[[design]]
name = "A1"
path = "joints.drive.function.amplitudes.1"
[[design]]
name = "T1"
path = "joints.drive.function.durations.1"
[[design]]
name = "t1"
path = "joints.drive.function.starts.1"
[[objectives]]
name = "drive_force_sq"
integrand = "reaction_sq"
joint = "drive"
"""


def test_driven_slider_gradient(tmp_path):
    from parmbs.config import load_config
    from parmbs.sensitivity.problem import Problem
    path = tmp_path / "slider.toml"
    path.write_text(SLIDER)
    pr = Problem(load_config(str(path)))
    tr = pr.forward()
    f = SinePulses(2)
    c = np.array([0.3, 0.0103, 0.04, -0.2, 0.0617, 0.03])
    assert np.max(np.abs(tr.q[:, 0] - f(tr.t, c))) <= 1e-10     # x = f(t) at every step
    psi = pr.objective_values()["drive_force_sq"]
    adj, dir_, fd = pr.adjoint(), pr.direct(), pr.finite_differences(1e-6)
    g = adj["drive_force_sq"]
    assert np.max(np.abs(dir_["drive_force_sq"] - g)) <= 1e-9 * np.max(np.abs(g))
    # FD on the amplitudes only: ψ(t1, T1) of the discrete scheme varies on the scale of
    # the time step (where a pulse end — a jump of f‴ — falls between two steps), so a
    # central difference in t1, T1 needs steps far below h (measured: O(δ²) error with a
    # constant ~1e9); adjoint = direct above covers them
    assert np.max(np.abs(fd["drive_force_sq"][:2] - g[:2])) <= 1e-6 * np.max(np.abs(g[:2]))
    # the discrete driver force is linear in the amplitudes, so ψ is a quadratic form
    # in (A0, A1): Euler's identity A0 ∂ψ/∂A0 + A1 ∂ψ/∂A1 = 2ψ
    assert 0.3 * g[0] - 0.2 * g[1] == pytest.approx(2 * psi, rel=1e-9)
