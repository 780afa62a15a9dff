"""Matrix R in independent relative coordinates (simulation.matrix_r.coordinates =
"independent", parmbs/formulations/matrix_r_independent.py): exact discrete gradients
(adjoint = direct, vs central differences), constraint drift at position and velocity
level, second-order convergence to the index-3 trapezoidal solution, the automatic
and the user's choice of independent coordinates, and the errors of bad choices."""
import numpy as np
import pytest

from parmbs.config import ConfigError, load_config
from parmbs.model.evaluation import StateEval
from parmbs.model.system import ModelError
from parmbs.sensitivity.problem import Problem

from conftest import CONFIGS

MRI = ["simulation.formulation=matrix-r", "simulation.integrator=trapezoidal",
       "simulation.matrix_r.coordinates=independent"]
SHORT = ["simulation.t_end=0.1", "simulation.dt=1e-2"]


def problem(name, overrides, path=None):
    return Problem(load_config(path or str(CONFIGS / f"{name}.toml"), overrides))


def rel(a, b):
    return np.max(np.abs(a - b)) / np.max(np.abs(b))


def drift(pr, traj):
    """max_k |Φ(q_k, t_k)| and max_k |Φ_q v_k + Φ_t| over every constraint row of the model."""
    s = pr.sys
    pos = vel = 0.0
    for k, t in enumerate(traj.t):
        q, v = traj.q[k], traj.v[k]
        ev = StateEval(s, t, q, v, q * 0, np.zeros(s.m), s.p)
        pos = max(pos, np.max(np.abs(ev.phi())))
        vel = max(vel, np.max(np.abs(ev.phi_q_dot(v) + ev.phi_t())))
    return pos, vel


def check_gradients(pr, label):
    adj, dir_, fd = pr.adjoint(), pr.direct(), pr.finite_differences(1e-5)
    for k in adj:
        print(f"{label}/{k}: |adj-dir|={rel(dir_[k], adj[k]):.1e} |adj-fd|={rel(fd[k], adj[k]):.1e}")
        assert rel(dir_[k], adj[k]) <= 1e-9, k
        assert rel(fd[k], adj[k]) <= 1e-6, k


@pytest.mark.parametrize("name,ov", [("fivebar", []),
                                     ("fivebar", ['simulation.matrix_r.independent=["JA", "J1"]']),
                                     ("fourbar", [])])
def test_adjoint_direct_fd_and_drift(name, ov):
    """10 steps of dt = 1e-2.  Five-bar: automatic choice and the paper's (the angle of
    A1 and the relative angle of B12, i.e. the absolute angles of A1 and B12).  Four-bar:
    the driver leaves no independent coordinate (nz = m_c = 3), every z is dependent."""
    pr = problem(name, SHORT + MRI + ov)
    tr = pr.forward()
    st = pr.stepper
    assert len(st.ind) == st.nz - st.mc == (2 if name == "fivebar" else 0)
    if ov:
        assert st.ind_names == ["JA", "J1"]
    pos, vel = drift(pr, tr)
    print(f"{name}: drift |Φ| = {pos:.1e}, |Φ̇| = {vel:.1e}")
    assert pos <= 1e-10 and vel <= 1e-9             # the tolerance documented in the module
    # the presented state satisfies the full model's r + Φ_qᵀλ = 0
    s = pr.sys
    res = max(np.max(np.abs(StateEval(s, t, *tr.x(k), s.p).residual())) for k, t in enumerate(tr.t))
    assert res <= 1e-10 * (1 + np.max(np.abs(tr.lam)))
    check_gradients(pr, name)


def test_prismatic_tree_and_tree_reaction(tmp_path):
    """tests/test_matrix_r.py's slider-crank (a prismatic guide in the tree, axis on the
    child), the guide's slide chosen independent; objectives include the guide's
    reaction (a tree joint's λ, recovered from the full residual)."""
    import test_matrix_r
    path = test_matrix_r.slider_crank(tmp_path, True)
    pr = problem(None, ["simulation.t_end=0.1"] + MRI + ['simulation.matrix_r.independent=["guide"]'], path)
    tr = pr.forward()
    assert pr.stepper.ind_names == ["guide"]
    pos, vel = drift(pr, tr)
    assert pos <= 1e-10 and vel <= 1e-9
    check_gradients(pr, "slider")


def test_explicit_choice_equals_automatic():
    """Naming the automatically chosen coordinates gives the same run."""
    a = problem("fivebar", SHORT + MRI)
    ta = a.forward()
    b = problem("fivebar", SHORT + MRI + [f"simulation.matrix_r.independent={a.stepper.ind_names!r}".replace("'", '"')])
    tb = b.forward()
    assert b.stepper.ind_names == a.stepper.ind_names
    assert np.array_equal(ta.q, tb.q)


def test_converges_to_index3_at_second_order():
    """Both schemes are second order: their difference shrinks 4× per halving of dt."""
    errs = []
    for dt in (1e-2, 5e-3, 2.5e-3):
        ov = ["simulation.t_end=0.2", f"simulation.dt={dt}"]
        a = problem("fivebar", ov + MRI).forward()
        b = problem("fivebar", ov).forward()
        errs.append(np.max(np.abs(a.q[-1] - b.q[-1])))
    orders = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
    print("differences", errs, "orders", orders)
    assert errs[0] < 1e-3
    assert np.all((orders > 1.8) & (orders < 2.2)), orders


DEAD_CENTRE = [("initial = { angle = 1.5707963267948966 }",
                "initial = { angle = 0.6435011087932844 }\nindependent = [\"angle\"]"),
               ("initial = { x = 0.0, y = 0.5, angle = 0.3 }", "initial = { x = 0.4, y = 0.3, angle = 0.6435011087932844 }"),
               ("initial = { x = 2.0, y = 0.0, angle = 1.8 }", "initial = { x = 2.0, y = 0.0, angle = 1.5707963267948966 }")]


def dead_centre_fourbar(tmp_path):
    """configs/fourbar.toml without its motor, started with O2, A, B in line (crank and
    coupler stretched out): the rocker's angle does not determine the crank and
    coupler angles there (Φ_z D singular); the crank's angle does (it is the bodies'
    ``independent`` coordinate of the initial assembly)."""
    text = (CONFIGS / "fourbar.toml").read_text()
    for old, new in DEAD_CENTRE:
        assert old in text
        text = text.replace(old, new)
    cut = text.index("[[joints]]\ntype = \"driver\"")
    end = text.index("[[forces]]")
    text = text[:cut] + text[end:]
    text = text.replace('[[design]]\nname = "omega"\npath = "joints.motor.function.coefficients.1"\n', "")
    text = text.replace('[[objectives]]\nname = "motor_torque_sq"\nintegrand = "reaction_sq"\njoint = "motor"\n', "")
    path = tmp_path / "deadcentre.toml"
    path.write_text(text)
    return str(path)


def test_singular_choice_and_automatic_choice(tmp_path):
    path = dead_centre_fourbar(tmp_path)
    with pytest.raises(ModelError) as e:
        problem(None, SHORT + MRI + ['simulation.matrix_r.independent=["J_O4"]'], path).forward()
    assert e.value.key == "simulation.matrix_r.independent" and "Φ_z D is singular" in e.value.message
    pr = problem(None, SHORT + MRI, path)               # automatic: pivoting avoids the singular set
    tr = pr.forward()
    assert pr.stepper.ind_names != ["J_O4"]
    assert drift(pr, tr)[0] <= 1e-10


@pytest.mark.parametrize("ind,msg", [('["nope"]', "'nope' is not a joint of the relative-coordinate tree"),
                                     ('["J2", "JA"]', "'J2' is not a joint of the relative-coordinate tree"),
                                     ('["JA"]', "the model has 2 degrees of freedom")])
def test_bad_choice_names_the_key(ind, msg):
    with pytest.raises(ModelError) as e:
        problem("fivebar", MRI + [f"simulation.matrix_r.independent={ind}"])
    assert e.value.key == "simulation.matrix_r.independent" and msg in e.value.message


def test_bad_coordinates_value_is_config_error():
    with pytest.raises(ConfigError) as e:
        load_config(str(CONFIGS / "fivebar.toml"), ["simulation.matrix_r.coordinates=both"])
    assert "simulation.matrix_r.coordinates" in str(e.value) and "fivebar.toml" in str(e.value)


def test_independent_list_without_independent_coordinates_is_config_error():
    with pytest.raises(ConfigError) as e:
        load_config(str(CONFIGS / "fivebar.toml"), ['simulation.matrix_r.independent=["JA", "J1"]'])
    assert "simulation.matrix_r" in str(e.value) and "coordinates = \"independent\"" in str(e.value)


def test_cli_bad_choice_exit_2(tmp_path, capsys):
    from parmbs.cli import main
    rc = main(["simulate", str(CONFIGS / "fivebar.toml"), "--set", "simulation.formulation=matrix-r",
               "--set", "simulation.integrator=trapezoidal", "--set", "simulation.matrix_r.coordinates=independent",
               "--set", 'simulation.matrix_r.independent=["nope"]', "-o", str(tmp_path / "x.h5")])
    err = capsys.readouterr().err
    assert rc == 2
    assert "simulation.matrix_r.independent" in err and "Traceback" not in err
