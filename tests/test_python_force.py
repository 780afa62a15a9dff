"""Force elements written in Python (``[[forces]] type = "python"``,
model/python_force.py): a user torsion spring-damper reproduces the built-in
``rotational_spring`` trajectory, its parameters are design variables with exact
gradients, and the user's failures are one-line input errors.

Its derivative blocks are the complex-step defaults, checked for the class (with
``example_bushing``) by the generic block test, tests/test_components.py.
"""
import parmbs  # noqa: F401 — first (numpy SIMD determinism: parmbs/_determinism.py)
import numpy as np
import pytest

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem

from conftest import CONFIGS
from gradient_checks import assert_gradients_agree, cli_one_line_error, rel

USER = '''
import numpy as np

def torsion(t, q, v, p):
    """Torsion spring-damper between body a (q[..., 0:3]) and b (q[..., 3:6]):
    M = k (θb − θa − θ0) + c (ωb − ωa); torque +M on a, −M on b."""
    M = p["k"] * (q[..., 5] - q[..., 2] - p["theta0"]) + p["c"] * (v[..., 5] - v[..., 2])
    z = 0.0 * M
    return np.stack([z, z, M, z, z, -M], -1)

def fails(t, q, v, p):
    raise ValueError("no such law")

def wrong_shape(t, q, v, p):
    return q[..., :2]
'''

BUILTIN = '''
[[forces]]
type = "rotational_spring"
name = "s"
a = "upper"
b = "lower"
stiffness = 40.0
damping = 0.3
angle = 0.2
'''

PYTHON = '''
[[forces]]
type = "python"
name = "s"
bodies = ["upper", "lower"]
callable = "userforce:{fn}"
parameters = {{ k = 40.0, c = 0.3, theta0 = 0.2 }}
'''

DESIGN = '''
[[design]]
name = "k_s"
path = "{path}"
'''


def _config(tmp_path, block, design_path):
    (tmp_path / "userforce.py").write_text(USER)
    text = (CONFIGS / "double-pendulum.toml").read_text()
    head, sep, tail = text.partition("[simulation]")
    p = tmp_path / "dp.toml"
    p.write_text(head + block + "\n" + sep + tail + (DESIGN.format(path=design_path) if design_path else ""))
    return p


def problem(path, t_end=0.2, extra=()):
    return Problem(load_config(str(path), [f"simulation.t_end={t_end}", "simulation.progress=false", *extra]))


def test_python_torsion_spring_equals_the_builtin_one(tmp_path):
    """Same equations, different arithmetic order: trajectories equal to Newton's
    tolerance (its updates stop at ~1e-12 relative: bound 1e-10 on q over 400 steps)."""
    a = tmp_path / "a"
    b = tmp_path / "b"
    a.mkdir(), b.mkdir()
    ta = problem(_config(a, BUILTIN, "forces.s.stiffness")).forward()
    tb = problem(_config(b, PYTHON.format(fn="torsion"), "forces.s.parameters.k")).forward()
    err = np.max(np.abs(ta.q - tb.q)) / np.max(np.abs(ta.q))
    print(f"max |q_builtin - q_python| / max|q| = {err:.1e}")
    assert err <= 1e-10
    # and the spring acts: without it the elbow moves differently
    assert np.max(np.abs(ta.q[-1] - problem(_config(a, "", None)).forward().q[-1])) > 1e-3



def test_python_force_parameters_have_exact_gradients(tmp_path):
    """adjoint = direct ≤ 1e-9 and central FD ≤ 1e-6 (estimates as in tests/test_ggl.py:
    400 steps · κ 1e4 · ε ≈ 4e-10; FD truncation δ² = 1e-10, Newton noise 1e-12 / 2δ ≈
    1e-7), and equal to the built-in rotational spring's adjoint gradient in its
    stiffness (same equations, different arithmetic: the round-off of two sweeps, the
    same estimate as adjoint vs direct, bound 1e-9; measured 4e-15 … 7e-13).  Complex step is not used as the reference here: on this model it differs
    from the adjoint by 1e-10 … 2e-9 with or without the spring (its error is the
    model's, not the force's)."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    pr = problem(_config(a, PYTHON.format(fn="torsion"), "forces.s.parameters.k"))
    adj = assert_gradients_agree(pr, adj_cs=None)
    ref = problem(_config(b, BUILTIN, "forces.s.stiffness"))
    ref.forward()
    adj_ref = ref.adjoint()
    assert ref.design.names == pr.design.names
    j = pr.design.names.index("k_s")
    for o in adj:
        print(f"{o}: |adj-builtin| {rel(adj_ref[o], adj[o]):.1e}")
        assert rel(adj_ref[o], adj[o]) <= 1e-9
        assert adj[o][j] != 0.0


@pytest.mark.parametrize("fn,words", [("fails", "ValueError: no such law"), ("wrong_shape", "returned shape"),
                                      ("missing", "has no function")])
def test_user_force_failures_are_one_line_errors(tmp_path, fn, words):
    p = _config(tmp_path, PYTHON.format(fn=fn), "forces.s.parameters.k")
    cli_one_line_error(["simulate", p, "--set", "simulation.t_end=0.01"], tmp_path, "forces.s.callable", words)


def test_unknown_body_is_a_one_line_error(tmp_path):
    p = _config(tmp_path, PYTHON.format(fn="torsion").replace('"lower"]', '"lowr"]'), "forces.s.parameters.k")
    cli_one_line_error(["simulate", p], tmp_path, "forces.s.bodies", "lowr")
