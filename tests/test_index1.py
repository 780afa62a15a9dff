"""Index-1 formulation (seed 004 §2.2, §3.1.2, §3.2.2) with the trapezoidal rule:
exact discrete gradients, documented drift, convergence to the index-3 gradients."""
import pytest

from formulation_checks import check_convergence_to_index3, check_gradients, drift


@pytest.mark.parametrize("name", ["fivebar", "double-pendulum"])
def test_adjoint_direct_fd_agree(name):
    check_gradients(name, "index1", with_cs=name == "fivebar")


def test_drift_bound_and_order():
    """No projection (parmbs/formulations/index1.py docstring): the five-bar over 1 s
    drifts by at most 5e-5 in Φ and 2e-4 in Φ̇ at h = 1e-2, and the drift is second
    order in h (the trapezoidal rule's global error)."""
    p1, v1 = drift("index1", 1e-2)
    p2, v2 = drift("index1", 5e-3)
    print(f"index1 drift: |Φ| {p1:.2e} -> {p2:.2e}, |Φ̇| {v1:.2e} -> {v2:.2e}")
    assert p1 <= 5e-5 and v1 <= 2e-4
    assert p1 > 1e-9            # there is drift: the scheme does not project
    assert 3.5 < p1 / p2 < 4.5 and 3.5 < v1 / v2 < 4.5


@pytest.mark.parametrize("name", ["fivebar", "double-pendulum"])
def test_gradients_approach_index3(name):
    check_convergence_to_index3(name, "index1")
