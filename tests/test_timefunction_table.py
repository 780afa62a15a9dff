"""Tabulated and seeded-noise time functions (model/timefunctions.py Table,
noise_samples): the clamped cubic spline's defining properties, reproducible noise with
the stated statistics, and exact gradients through a driver whose table values are
design variables (seed 004's four-post rig needs signals like these).

Table adds no component derivative block: drivers and loads take f, f′, f″ from any
time function, and tests/test_components.py checks their blocks.
"""
import parmbs  # noqa: F401 — first (numpy SIMD determinism: parmbs/_determinism.py)
import numpy as np
import pytest

from parmbs.config import load_config
from parmbs.model.timefunctions import Table, noise_samples
from parmbs.sensitivity.problem import Problem

from conftest import CONFIGS
from gradient_checks import assert_gradients_agree, cli_one_line_error

T = np.array([0.0, 0.3, 0.5, 1.2, 1.6, 2.0])
Y = np.array([0.0, 0.4, -0.2, 0.7, 0.1, 0.0])


def test_spline_interpolates_is_c2_and_clamped():
    """f(t_k) = y_k; f′(t_0) = f′(t_K) = 0; f′, f″ equal central differences of f, f′
    (step 1e-6: truncation ~h²|f‴|, f‴ ≤ ~140 here → 1.4e-10, round-off ε|f|/h ~ 1e-10;
    bound 1e-7), and are continuous across the inner knots: f, f′, f″ change over
    [t_k − 1e-8, t_k + 1e-8] by at most 2e-8 times the largest slope of the next
    derivative (f‴ = Δm/h on each interval) plus round-off 1e-12, where a jump would be
    O(1)."""
    f = Table(T)
    assert np.allclose([f(t, Y) for t in T], Y, atol=1e-15)
    assert abs(f(T[0], Y, 1)) <= 1e-14 and abs(f(T[-1], Y, 1)) <= 1e-14
    h = 1e-6
    for t in np.linspace(0.01, 1.99, 37):
        assert abs((f(t + h, Y) - f(t - h, Y)) / (2 * h) - f(t, Y, 1)) <= 1e-7
        assert abs((f(t + h, Y, 1) - f(t - h, Y, 1)) / (2 * h) - f(t, Y, 2)) <= 1e-7
    m = f._m(Y)
    slope = {0: max(abs(f(t, Y, 1)) for t in np.linspace(0, 2, 2001)),
             1: np.max(np.abs(m)), 2: np.max(np.abs(np.diff(m) / np.diff(T)))}
    for tk in T[1:-1]:
        for order in (0, 1, 2):
            assert abs(f(tk + 1e-8, Y, order) - f(tk - 1e-8, Y, order)) <= 1.5 * 2e-8 * slope[order] + 1e-12
    # outside: the end values, at rest
    assert f(-1.0, Y) == Y[0] and f(3.0, Y) == Y[-1] and f(3.0, Y, 1) == 0.0 and f(3.0, Y, 2) == 0.0


def test_spline_is_linear_in_the_values_and_broadcasts():
    f = Table(T)
    Y2 = np.cos(T)
    C = np.stack([Y, Y2, 2 * Y - 3 * Y2])        # three groups of coefficients
    for t in (0.1, 0.77, 1.5):
        for order in (0, 1, 2):
            v = f(t, C, order)
            assert v.shape == (3,)
            assert v[2] == pytest.approx(2 * v[0] - 3 * v[1], abs=1e-13)
            assert v[0] == pytest.approx(f(t, Y, order), abs=1e-15)


def test_noise_is_seeded_and_has_its_statistics():
    """Same seed, same samples (bitwise); white: sample RMS within 4σ of rms (σ of the
    RMS estimate of K normal samples ≈ rms/√(2K)); red: lag-1 correlation within 4σ of
    a = exp(−2π f_c Δ) (σ ≈ √((1 − a²)/K)) and the same stationary RMS (4σ, with the
    effective sample count K(1 − a)/(1 + a))."""
    K = 200_000
    t1, w1 = noise_samples(7, 1e-3, (K - 1) * 1e-3, 0.02)
    t2, w2 = noise_samples(7, 1e-3, (K - 1) * 1e-3, 0.02)
    assert np.array_equal(w1, w2) and len(w1) == K and w1[0] == w1[-1] == 0.0
    assert not np.array_equal(w1, noise_samples(8, 1e-3, (K - 1) * 1e-3, 0.02)[1])
    rms = np.sqrt(np.mean(w1 ** 2))
    assert abs(rms - 0.02) <= 4 * 0.02 / np.sqrt(2 * K)
    _, r = noise_samples(7, 1e-3, (K - 1) * 1e-3, 0.02, color="red", corner=5.0)
    a = np.exp(-2 * np.pi * 5.0 * 1e-3)
    lag1 = np.dot(r[1:], r[:-1]) / np.dot(r, r)
    assert abs(lag1 - a) <= 4 * np.sqrt((1 - a * a) / K)
    keff = K * (1 - a) / (1 + a)
    assert abs(np.sqrt(np.mean(r ** 2)) - 0.02) <= 4 * 0.02 / np.sqrt(2 * keff)


def _fourbar_with_table(tmp_path, function):
    text = (CONFIGS / "fourbar.toml").read_text()
    old = 'function = { type = "polynomial", coefficients = [1.5707963267948966, 2.0] }'
    assert old in text
    text = text.replace(old, f"function = {function}")
    text = text.replace('path = "joints.motor.function.coefficients.1"', 'path = "joints.motor.function.values.2"')
    p = tmp_path / "fourbar-table.toml"
    p.write_text(text)
    return p


def test_driver_on_a_table_gradients_agree(tmp_path):
    """A crank angle driven through a table (design variable: the third sample):
    adjoint = direct = complex step ≤ 1e-9, central FD ≤ 1e-6 (estimates as
    tests/test_ggl.py: N κ ε ≈ 300 · 1e4 · 1e-16 = 3e-10; FD δ = 1e-5 truncation 1e-10,
    Newton noise 1e-12/2δ = 1e-7)."""
    times = [0.0, 0.1, 0.2, 0.3, 0.4]
    vals = [1.5707963267948966 + 2.0 * t + 0.3 * t * t for t in times]
    fn = "{ type = \"table\", times = " + repr(times) + ", values = " + repr(vals) + " }"
    pr = Problem(load_config(str(_fourbar_with_table(tmp_path, fn)),
                             ["simulation.t_end=0.3", "simulation.progress=false"]))
    adj = assert_gradients_agree(pr)
    j = pr.design.names.index("omega")
    assert all(adj[k][j] != 0.0 for k in adj)


@pytest.mark.parametrize("bad,words", [
    ('{ type = "table", times = [0.0, 0.2, 0.1], values = [0.0, 1.0, 2.0] }', "increase"),
    ('{ type = "table", times = [0.0, 0.2], values = [0.0] }', "values has 1"),
    ('{ type = "noise", seed = 1, sample_dt = 0.5, duration = 0.5, rms = 0.1 }', "samples"),
])
def test_bad_tables_are_one_line_errors(tmp_path, bad, words):
    p = _fourbar_with_table(tmp_path, bad)
    cli_one_line_error(["simulate", p, "--set", "simulation.t_end=0.01"], tmp_path, "joints", words)
