"""Natural coordinates as the degrees of freedom of the independent-coordinate Matrix R
(parmbs/formulations/matrix_r_natural.py, natural_dof.py; seed 002 §2.2.3, eqs. 12–15):
exact discrete gradients, the constant-B limit, second-order agreement with relative
DOF, drift, on the planar five-bar and the spatial RSUR four-bar, and the one-line
refusals (bad names, singular choices, natural-coordinate bodies).

Bounds.  Gradients as tests/test_matrix_r_independent.py: adjoint = direct ≤ 1e-9 (one
dense LU per step, condition ~1e6 × round-off 1e-16; measured ≤ 6e-16), central FD at
relative step 1e-5: truncation ~ (1e-5)² ψ''' /ψ' ~ 1e-10 plus noise 1e-12/1e-5 ~ 1e-7
(Newton to 1e-12), so ≤ 1e-6 (measured ≤ 3.2e-10).  The absolute angles of A1 and B12 are
linear in z, so the trapezoidal rule on them is the rule on (JA, J1): the trajectories
agree to Newton's tolerance (1e-12 × |q| ~ 1e-11; measured 2.2e-15), bound 1e-10.  The
point P2's coordinates are nonlinear in z: a different second-order scheme of the same
ODE, difference O(h²) — measured 1.72e-5, 4.32e-6, 1.08e-6 at h = 1e-2, 5e-3, 2.5e-3
over 0.2 s; the test checks the ratio at halved h is 4 ± 0.2 (second order; the next
term is O(h) smaller; measured 3.999)."""
import numpy as np
import pytest

from parmbs.config import load_config
from parmbs.model.system import ModelError
from parmbs.sensitivity.problem import Problem

from conftest import CONFIGS
from gradient_checks import cli_one_line_error
from matrix_r_spatial_models import FOURBAR as FOURBAR3D
from test_matrix_r_independent import MRI, check_gradients, drift
from test_natural_bodies import pendulum

FIVEBAR = str(CONFIGS / "fivebar.toml")
SHORT = ["simulation.t_end=0.1", "simulation.dt=1e-2"]


def problem(dof, extra=SHORT):
    return Problem(load_config(FIVEBAR, MRI + extra + [f"simulation.matrix_r.independent={dof}"]))


@pytest.mark.parametrize("dof", ['["B12.P2.x", "B12.P2.y"]', '["A1.P1.x", "B12.P2.y"]'])
def test_point_dof_gradients_and_drift(dof):
    """10 steps; A1.P1.x moves with the design variables L_A1 and xG_A1 (s = P̄ − c̄), so
    the DOF's own parameter derivatives are exercised."""
    pr = problem(dof)
    tr = pr.forward()
    assert type(pr.stepper).__name__ == "MatrixRNatural"
    pos, vel = drift(pr, tr)
    assert pos <= 1e-10 and vel <= 1e-9, (pos, vel)
    check_gradients(pr, dof)


def test_angles_reproduce_relative_dof():
    """Constant B (the absolute angles are linear in z): the same trajectory as the
    paper's (JA, J1) choice."""
    a = problem('["A1.angle", "B12.angle"]').forward().q
    b = problem('["JA", "J1"]').forward().q
    assert type(problem('["A1.angle", "B12.angle"]').stepper).__name__ == "MatrixRNatural"
    assert np.max(np.abs(a - b)) <= 1e-10 * np.max(np.abs(b))


def test_point_dof_second_order_to_relative_dof():
    diff = []
    for dt in (5e-3, 2.5e-3):
        ext = ["simulation.t_end=0.2", f"simulation.dt={dt}"]
        a = problem('["B12.P2.x", "B12.P2.y"]', ext).forward().q[-1]
        b = problem('["JA", "J1"]', ext).forward().q[-1]
        diff.append(np.max(np.abs(a - b)))
    print(diff)
    assert 3.8 <= diff[0] / diff[1] <= 4.2, diff


@pytest.mark.parametrize("dof,words", [
    ('["A1.P1.x", "A1.P1.y"]', ("simulation.matrix_r.independent", "A1.P1.x, A1.P1.y", "singular")),
    ('["A1.Q.x", "B12.P2.y"]', ("simulation.matrix_r.independent", "'A1.Q.x'", "BODY.POINT.x|y")),
    ('["B12.P2.x"]', ("simulation.matrix_r.independent", "2 degrees of freedom", "1 independent")),
    ('["B12.P2.x.y"]', ("simulation.matrix_r.independent", "invalid coordinate name")),
])
def test_bad_choices_one_line(tmp_path, dof, words):
    """Both points of the crank fix one angle only ([Φ_z; B] singular, eq. 16); an unknown
    point; too few DOF; a malformed name: one line naming the key, exit 2."""
    cli_one_line_error(["simulate", FIVEBAR, "-o", tmp_path / "x.h5", *sum((["--set", s] for s in MRI + SHORT), []),
                        "--set", f"simulation.matrix_r.independent={dof}"], tmp_path, *words)


def test_natural_bodies_refused_one_line(tmp_path):
    """A spatial pendulum in natural-coordinate bodies (seed 000 §5.2): refused naming
    the body kind (the message once said "the model has flexible bodies")."""
    f = tmp_path / "np.toml"
    f.write_text(pendulum("natural_bodies", "trapezoidal"))
    line = cli_one_line_error(["simulate", f, "-o", tmp_path / "x.h5", "--set", "simulation.formulation=matrix-r"],
                              tmp_path, "simulation.formulation", "natural-coordinate bodies (1)", "index3")
    assert "flexible" not in line
    with pytest.raises(ModelError):
        Problem(load_config(str(f), ["simulation.formulation=matrix-r"]))


def spatial_fourbar(tmp_path, dof, extra=()):
    f = tmp_path / "fourbar3d.toml"
    f.write_text(FOURBAR3D)
    return Problem(load_config(str(f), ["simulation.formulation=matrix-r", "simulation.matrix_r.coordinates=independent",
                                        f"simulation.matrix_r.independent={dof}", *extra]))


def test_spatial_point_dof_gradients(tmp_path):
    """The spatial RSUR four-bar (1 DOF) driven by the crank tip's y coordinate: the
    point of an Euler-parameter body (r + A(e) s', Ȧ s', Ä s'), moved by the design
    variable crank_A_z; 10 steps.  Bounds as the planar case (measured adjoint = direct
    ≤ 1.4e-15, FD ≤ 1.9e-9)."""
    pr = spatial_fourbar(tmp_path, '["crank.A.y"]')
    pr.forward()
    assert type(pr.stepper).__name__ == "MatrixRNatural"
    check_gradients(pr, "crank.A.y")


def test_spatial_point_dof_second_order(tmp_path):
    """Against the crank angle as DOF (pivot_c), 0.1 s: measured differences 1.57e-6,
    3.96e-7, 9.91e-8 at h = 1e-2, 5e-3, 2.5e-3 (ratios 3.974, 3.994 → 4: second order,
    an O(h) relative next term); bound 4 ± 5 % at the coarser pair."""
    diff = []
    for dt in (1e-2, 5e-3):
        ext = ["simulation.t_end=0.1", f"simulation.dt={dt}"]
        a = spatial_fourbar(tmp_path, '["crank.A.y"]', ext).forward().q[-1]
        b = spatial_fourbar(tmp_path, '["pivot_c"]', ext).forward().q[-1]
        diff.append(np.max(np.abs(a - b)))
    print(diff)
    assert 3.8 <= diff[0] / diff[1] <= 4.2, diff
