"""Semi-recursive (relative-coordinate) formulation, parmbs/formulations/matrix_r.py:
exact discrete gradients (adjoint = direct, vs central differences), convergence to
the index-3 trapezoidal solution, loop-closure drift, prismatic trees in both joint
orientations, and the cut option's errors."""
import numpy as np
import pytest

from parmbs.config import load_config
from parmbs.model.evaluation import StateEval
from parmbs.model.system import ModelError
from parmbs.sensitivity.problem import Problem

from conftest import CONFIGS

MR = ["simulation.formulation=matrix-r", "simulation.integrator=trapezoidal"]


def problem(name, overrides, path=None):
    return Problem(load_config(path or str(CONFIGS / f"{name}.toml"), overrides))


def rel(a, b):
    return np.max(np.abs(a - b)) / np.max(np.abs(b))


def drift(pr, traj):
    """max_k |Φ(q_k, t_k)| over every constraint row of the model."""
    s = pr.sys
    return max(np.max(np.abs(StateEval(s, t, q, q * 0, q * 0, np.zeros(s.m), s.p).phi()))
               for t, q in zip(traj.t, traj.q))


SLIDER = """
# rigid slider-crank: revolute crank, rod, slider on an inclined prismatic guide,
# a damped spring pulling the slider (a loop closed through the guide)
[model]
name = "slider-crank"
gravity = [0.0, -9.81]
[ground]
points = { O = [0.0, 0.0], S = [0.0, -0.2], K = [3.0, 0.5] }
[[bodies]]
name = "crank"
mass = 0.5
inertia = 0.01
com = [0.25, 0.0]
points = { O = [0.0, 0.0], A = [0.5, 0.0] }
initial = { angle = 0.8 }
independent = ["angle"]
[[bodies]]
name = "rod"
mass = 1.0
inertia = 0.19
com = [0.75, 0.0]
points = { A = [0.0, 0.0], B = [1.5, 0.0] }
initial = { x = 0.348, y = 0.359, angle = -0.255 }
[[bodies]]
name = "slider"
mass = 2.0
inertia = 0.05
com = [0.05, 0.02]
points = { P = [0.0, 0.0] }
initial = { x = 1.8, y = -0.02, angle = 0.0 }
[[joints]]
type = "revolute"
name = "JO"
a = "ground.O"
b = "crank.O"
[[joints]]
type = "revolute"
name = "JA"
a = "crank.A"
b = "rod.A"
[[joints]]
type = "revolute"
name = "JB"
a = "rod.B"
b = "slider.P"
[[joints]]
type = "prismatic"
name = "guide"
a = "{GA}"
b = "{GB}"
axis = [1.0, 0.1]
[[forces]]
type = "spring"
name = "Sp"
a = "slider.P"
b = "ground.K"
stiffness = 50.0
damping = 1.0
length = 1.0
[simulation]
t_end = 0.2
dt = 1e-2
[[design]]
name = "k"
path = "forces.Sp.stiffness"
[[design]]
name = "L_crank"
path = "bodies.crank.points.A.x"
[[design]]
name = "guide_y"
path = "ground.points.S.y"
[[design]]
name = "m_slider"
path = "bodies.slider.mass"
[[objectives]]
name = "speed"
integrand = "point_velocity_sq"
point = "slider.P"
[[objectives]]
name = "guide_load"
integrand = "reaction_sq"
joint = "guide"
[[objectives]]
name = "accel"
integrand = "point_acceleration_sq"
point = "rod.B"
"""


def slider_crank(tmp_path, swapped):
    text = SLIDER.replace("{GA}", "slider.P" if swapped else "ground.S").replace(
        "{GB}", "ground.S" if swapped else "slider.P")
    path = tmp_path / f"slider{int(swapped)}.toml"
    path.write_text(text)
    return str(path)


CASES = [("fivebar", ["simulation.t_end=0.1", "simulation.dt=1e-2"]),
         ("double-pendulum", ["simulation.t_end=0.1", "simulation.dt=1e-2"]),
         ("fourbar", ["simulation.t_end=0.1", "simulation.dt=1e-2"])]


@pytest.mark.parametrize("name,ov", CASES)
def test_adjoint_direct_fd_agree(name, ov):
    pr = problem(name, ov + MR)
    tr = pr.forward()
    adj, dir_, fd = pr.adjoint(), pr.direct(), pr.finite_differences(1e-5)
    for k in adj:
        print(f"{name}/{k}: |adj-dir|={rel(dir_[k], adj[k]):.1e} |adj-fd|={rel(fd[k], adj[k]):.1e}")
        assert rel(dir_[k], adj[k]) <= 1e-9, k
        assert rel(fd[k], adj[k]) <= 1e-6, k
    # documented tolerance: tree joints hold by construction (round-off), cut joints and
    # drivers to the Newton tolerance (1e-12 on the z update)
    assert drift(pr, tr) <= 1e-10
    # the presented state (q, v, a, λ with the recovered tree reactions) satisfies the full
    # model's equations of motion r + Φ_qᵀλ = 0
    s = pr.sys
    res = max(np.max(np.abs(StateEval(s, t, *tr.x(k), s.p).residual())) for k, t in enumerate(tr.t))
    assert res <= 1e-10 * (1 + np.max(np.abs(tr.lam)))


@pytest.mark.parametrize("swapped", [False, True])
def test_prismatic_tree(tmp_path, swapped):
    """A prismatic guide in the tree (both a/b orders: axis on the parent or the child),
    its reaction (a tree joint's λ, recovered from the full residual) as objective."""
    path = slider_crank(tmp_path, swapped)
    pr = problem(None, MR + ["simulation.t_end=0.1"], path)
    assert "guide" in pr.stepper.tree.tree_joints and pr.stepper.tree.cut_joints == ["JB"]
    tr = pr.forward()
    ref = problem(None, ["simulation.t_end=0.1"], path)
    tr3 = ref.forward()
    assert np.max(np.abs(tr.q - tr3.q)) < 1e-3          # same dynamics, O(h²) apart
    assert drift(pr, tr) <= 1e-10
    adj, dir_, fd = pr.adjoint(), pr.direct(), pr.finite_differences(1e-5)
    for k in adj:
        print(f"slider{int(swapped)}/{k}: |adj-dir|={rel(dir_[k], adj[k]):.1e} |adj-fd|={rel(fd[k], adj[k]):.1e}")
        assert rel(dir_[k], adj[k]) <= 1e-9, k
        assert rel(fd[k], adj[k]) <= 1e-6, k


def test_converges_to_index3_at_second_order():
    """Both schemes are second order: their difference shrinks 4× per halving of dt."""
    errs = []
    for dt in (1e-2, 5e-3, 2.5e-3):
        ov = ["simulation.t_end=0.2", f"simulation.dt={dt}"]
        a = problem("fivebar", ov + MR).forward()
        b = problem("fivebar", ov).forward()
        errs.append(np.max(np.abs(a.q[-1] - b.q[-1])))
    orders = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
    print("differences", errs, "orders", orders)
    assert np.all((orders > 1.8) & (orders < 2.2)), orders


def test_open_chain_has_no_multipliers_and_explicit_cut():
    dp = problem("double-pendulum", ["simulation.t_end=0.05", "simulation.dt=1e-2"] + MR)
    assert dp.stepper.mc == 0 and dp.stepper.tree.cut_joints == []
    fb = problem("fivebar", ["simulation.t_end=0.1", "simulation.dt=1e-2", 'simulation.matrix_r.cut=["JB"]'] + MR)
    assert fb.stepper.tree.cut_joints == ["JB"]
    assert drift(fb, fb.forward()) <= 1e-10


@pytest.mark.parametrize("cut,msg", [('["nope"]', "no joint 'nope'"),
                                     ('[]', "close loops"),
                                     ('["JA", "JB"]', "not connected to ground")])
def test_bad_cut_names_the_key(cut, msg):
    with pytest.raises(ModelError) as e:
        problem("fivebar", [f"simulation.matrix_r.cut={cut}"] + MR)
    assert e.value.key in ("simulation.matrix_r.cut",) and msg in e.value.message


def test_cli_bad_cut_exit_2(tmp_path):
    from parmbs.cli import main
    rc = main(["simulate", str(CONFIGS / "fivebar.toml"), "--set", "simulation.formulation=matrix-r",
               "--set", "simulation.integrator=trapezoidal", "--set", 'simulation.matrix_r.cut=["nope"]', "-o", str(tmp_path / "x.h5")])
    assert rc == 2


def test_cli_complex_step_refused(tmp_path, capsys):
    """matrix-r differentiates its kinematics by complex step itself: no nested cs run."""
    from parmbs.cli import main
    rc = main(["gradient", str(CONFIGS / "fivebar.toml"), "--method", "cs", "--set", "simulation.formulation=matrix-r",
               "--set", "simulation.integrator=trapezoidal", "--set", "simulation.t_end=0.02", "--set", "simulation.dt=1e-2"])
    assert rc == 2
    assert "formulation 'matrix-r' takes its own derivatives by complex step" in capsys.readouterr().err


@pytest.mark.parametrize("swapped", [False, True, None])
def test_rtw_z_matches_complex_step(tmp_path, swapped):
    """Tree.rtw_z, the closed-form ∂(R(z)ᵀw)/∂z, against the complex step of R(z)ᵀw."""
    from parmbs.model.component import CS_H
    pr = (problem("fivebar", MR + ["simulation.t_end=0.03"]) if swapped is None
          else problem(None, MR + ["simulation.t_end=0.03"], slider_crank(tmp_path, swapped)))
    tr = pr.forward()
    st, p = pr.stepper, pr.sys.p
    z = st._xi(tr.x(3), p)[0]
    w = np.random.default_rng(1).standard_normal(pr.sys.n)
    I = np.eye(st.nz)
    _, v = st.tree.kin((z + 1j * CS_H * I)[:, None, :], I, None, p, order=1)    # [j, k] = R_k(z + ih e_j)
    H_cs = (v @ w).imag.T / CS_H
    assert np.max(np.abs(st.tree.rtw_z(z, p, w) - H_cs)) <= 1e-13 * np.max(np.abs(H_cs))


@pytest.mark.parametrize("config,what", [("spatial-flexible-pendulum",
                                          "this model has spatial beams (1), natural-coordinate bodies (1):"),
                                         ("flexible-pendulum", "this model has planar beams (1):")])
def test_refusal_names_what_the_model_has(config, what):
    """matrix-r takes planar or spatial rigid bodies (spatial: spatial/relative_tree.py):
    the refusal names the model's body kinds (it said "flexible bodies" for any spatial
    model, then "spatial beams or natural-coordinate bodies" for either)."""
    with pytest.raises(ModelError) as e:
        Problem(load_config(str(CONFIGS / f"{config}.toml"),
                            ["simulation.formulation=matrix-r", "simulation.integrator=trapezoidal",
                             "simulation.stabilization=none",     # whatever the file ships
                             "simulation.t_end=0.001", "simulation.dt=0.001"]))
    assert what in str(e.value) and "simulation.formulation" in str(e.value)
