"""Drivers on joints inside the 3-D relative-coordinate tree under matrix-r (issue 24,
seed 002): a driven tree coordinate is kept with its rheonomic row Φ(q(z), t) = 0 among
the cut constraints (eqs. 5, 18–25; formulations/matrix_r.py, "Drivers"), so

* its relative coordinate follows f(t) at every step — positions in every matrix-r form,
  velocities and accelerations too where the scheme imposes Φ̇ = Φ_z ż + Φ_t = 0 and
  Φ̈ = 0 (eqs. 18, 20–21: the independent-coordinate steppers), ḟ and f̈ entering through
  Φ_t and the acceleration term;
* the trajectory agrees with the index-3 formulation on Cartesian coordinates to the
  schemes' O(h²);
* the discrete adjoint equals the direct sensitivities, and both equal central
  differences, with design variables inside f(t) itself.

The model: tests/matrix_r_spatial_models.CHAIN (every tree-joint kind, a free root) with
its base–b1 revolute driven in rotation (harmonic) and its b3–b2 translational joint
driven in translation (polynomial)."""
import numpy as np
import pytest

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem

from gradient_checks import assert_gradients_agree, cli_one_line_error
from matrix_r_spatial_models import CHAIN

_DRIVERS = """[[spatial.joints]]
type = "driver"
name = "drive_rev"
joint = "rev"
function = { type = "harmonic", amplitude = 0.4, omega = 9.0, phase = 0.3, offset = 0.0 }
[[spatial.joints]]
type = "driver"
name = "drive_slide"
joint = "slide"
motion = "translation"
function = { type = "polynomial", coefficients = [0.0, 0.3, -2.0] }
"""
#: the 13 degrees of freedom whose initial velocities are imposed (given, not chosen by
#: spatial_set.py's pivoting, whose candidates tie here — base.rx against b2.rx, say —
#: so round-off picked them: measured, numpy's SIMD mode flipped the choice and the
#: initial velocities); b1 and b3 follow their drivers, so b1's given spin goes
_INDEPENDENT = {"base": '["x", "y", "z", "rx", "ry", "rz"]', "b1": "[]", "b2": '["x", "rx"]', "b3": "[]",
                "b4": '["ry", "rz"]', "b5": '["rx", "ry", "rz"]'}


def _driven():
    text = CHAIN.replace("initial_velocity = { angular_velocity = [0.0, 1.5, 0.0] }\n", "")
    for body, ind in _INDEPENDENT.items():
        head = f'name = "{body}"\n'
        assert text.count(head) == 1
        text = text.replace(head, head + f"independent = {ind}\n")
    return text.replace("[[spatial.forces]]", _DRIVERS + "[[spatial.forces]]", 1)


DRIVEN = _driven() + """[[design]]
name = "amp"
path = "spatial.joints.drive_rev.function.amplitude"
[[design]]
name = "c2"
path = "spatial.joints.drive_slide.function.coefficients.2"
[[objectives]]
name = "drive_torque"
integrand = "reaction_sq"
joint = "drive_rev"
"""


def f_rev(t, k):
    """k-th derivative of drive_rev's f(t) = 0.4 sin(9t + 0.3)."""
    return 0.4 * 9.0 ** k * np.sin(9.0 * t + 0.3 + 0.5 * np.pi * k)


def f_slide(t, k):
    """k-th derivative of drive_slide's f(t) = 0.3 t − 2 t²."""
    return [0.3 * t - 2 * t * t, 0.3 - 4 * t, -4.0 + 0 * t][k]


MR = ["simulation.formulation=matrix-r", "simulation.integrator=trapezoidal"]
IND = ['simulation.matrix_r.coordinates="independent"']
FORMS = {"dependent": MR, "independent": MR + IND,
         "ode": ["simulation.formulation=matrix-r", "simulation.integrator=ts-rk"] + IND}


def problem(tmp_path, overrides=()):
    path = tmp_path / "driven.toml"
    path.write_text(DRIVEN)
    return Problem(load_config(str(path), list(overrides)))


@pytest.mark.parametrize("form", list(FORMS))
def test_driven_tree_coordinates_follow_f(tmp_path, form):
    """The drivers are cut rows of the tree (15 relative coordinates as CHAIN: no
    coordinate is added or removed), and the driven coordinates follow f(t):
    z_rev − z_rev,0 = f − f(0) and −(z_slide − z_slide,0) = f − f(0) (the translational
    joint's side a is the child b3, so its driver measures the parent's slide along the
    child's axis: opposite sign).  With independent coordinates the driven ones are
    dependent (the column pivoting cannot pick them: their rows of Φ_z are theirs alone).

    Positions: the driver rows sin(θ − f) resp. d − f hold to Newton's tolerance, and
    with quadratic convergence the last update (≤ 1e-12) leaves an error of round-off
    size on O(1) coordinates: bound 1e-13 (measured ≤ 2.3e-16).  Velocities and
    accelerations, where the scheme imposes them (independent form: E₄, E₂ of
    matrix_r_independent.py; the ts-rk ODE: ż from eq. 24 at every stage), relative to
    max |ḟ|, |f̈|: bound 1e-12, Newton's rtol (measured ≤ 3.3e-14, ≤ 2.6e-14; ODE
    velocities ≤ 6.3e-14).  The dependent (index-3) trapezoidal form imposes positions
    only: its ż, z̈ carry the scheme's velocity error and the (−1)^k acceleration
    oscillation of the index-3 trapezoidal rule (rev: measured 4.6e-3 and 9.3 against
    max |ḟ| = 3.4, max |f̈| = 30), not checked."""
    pr = problem(tmp_path, FORMS[form])
    tr = pr.forward()
    T = problem(tmp_path, MR).stepper.tree            # the same tree for every form
    assert T.nz == 15 and T.cut_joints == ["drive_rev", "drive_slide"]
    ir, isl = T.tree_joints.index("rev"), T.tree_joints.index("slide")
    if form != "ode":
        st = pr.stepper
        assert st.mc == 2
    if form != "dependent":
        ind = pr.stepper.ind_names if form == "independent" else None
        assert ind is None or ("rev" not in ind and "slide" not in ind and len(ind) == 13)
    p = pr.sys.p
    t = np.asarray(tr.t)
    Z = np.array([T.positions(q, p) for q in tr.q])
    sig = {ir: 1.0, isl: -1.0}
    fs = {ir: f_rev, isl: f_slide}
    for i in (ir, isl):
        err = np.max(np.abs(sig[i] * (Z[:, i] - Z[0, i]) - (fs[i](t, 0) - fs[i](t[0], 0))))
        print(form, T.tree_joints[i], "positions", err)
        assert err <= 1e-13
    if form == "dependent":
        return
    if form == "independent":
        X = [pr.stepper._xi(tr.x(k), p) for k in range(tr.steps + 1)]
        levels = (1, 2)
    else:                                               # ż = R⁺ v (R has full column rank)
        X = [(None, np.linalg.lstsq(T.jacobian(z, p), v, rcond=None)[0]) for z, v in zip(Z, tr.v)]
        levels = (1,)
    for lev in levels:
        D = np.array([x[lev] for x in X])
        for i in (ir, isl):
            ref = fs[i](t, lev)
            err = np.max(np.abs(sig[i] * D[:, i] - ref)) / np.max(np.abs(ref))
            print(form, T.tree_joints[i], "derivative", lev, err)
            assert err <= 1e-12


@pytest.mark.parametrize("form", ["dependent", "independent"])
def test_second_order_agreement_with_index3(tmp_path, form):
    """matrix-r (trapezoidal rule on z, with or without the second projection) and the
    index-3 trapezoidal rule on the Cartesian coordinates solve the same driven DAE by
    second-order schemes: the final states' difference falls ≈ 4× per halving of dt
    (orders within 2 ± 0.2, as tests/test_matrix_r_spatial.py for the undriven chain;
    measured 1.996, 1.999 both forms, differences 1.9e-3 → 1.2e-4 over dt = 1e-2 →
    2.5e-3)."""
    errs = []
    for dt in (1e-2, 5e-3, 2.5e-3):
        ov = ["simulation.t_end=0.1", f"simulation.dt={dt}"]
        a = problem(tmp_path, ov + FORMS[form]).forward()
        b = problem(tmp_path, ov + ["simulation.integrator=trapezoidal"]).forward()
        errs.append(np.max(np.abs(a.q[-1] - b.q[-1])))
    orders = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
    print(form, "differences", errs, "orders", orders)
    assert np.all((orders > 1.8) & (orders < 2.2)), orders


@pytest.mark.parametrize("form", ["dependent", "independent"])
def test_gradients_with_driven_tree_joints(tmp_path, form):
    """Adjoint = direct to round-off (the same discrete maps transposed; 1e-9 leaves
    conditioning × 1e-16 ample room; measured ≤ 4.3e-13), both = central differences
    with design variables in the bodies, a force, a joint point and both drivers'
    f(t) (amplitude; the t² coefficient).  FD step 1e-5 from a sweep 1e-3 … 1e-7 (max
    over the three objectives, dependent / independent): 1e-3 1.4e-6 / 1.4e-6, 1e-4
    1.4e-8 / 1.4e-8, 1e-5 3.8e-9 / 2.4e-10, 1e-6 5.0e-8 / 1.8e-9, 1e-7 1.1e-6 / 1.4e-8 —
    truncation ∝ δ² above, Newton noise ∝ 1/δ below; bound 1e-6 (measured at 1e-5:
    ≤ 3.8e-9)."""
    pr = problem(tmp_path, FORMS[form])
    assert_gradients_agree(pr, adj_cs=None, fd_step=1e-5, tag=f"{form} ")


@pytest.mark.parametrize("integrator", ["trapezoidal", "ts-rk"])
def test_driven_coordinate_listed_as_independent_refused(tmp_path, integrator):
    """A driven tree coordinate is not a degree of freedom: listing it in
    simulation.matrix_r.independent is refused before the first step (one line naming
    the config file, the key, the driver and the coordinate; exit 2), by the trapezoidal
    stepper and by the ts-* ODE alike."""
    path = tmp_path / "driven.toml"
    path.write_text(DRIVEN)
    ind = ["base-x", "base-y", "base-z", "base-rz", "base-ry", "base-rx", "rev", "cyl-slide", "univ-1", "univ-2",
           "ball-rz", "ball-ry", "ball-rx"]
    cli_one_line_error(["simulate", path, "--set", "simulation.formulation=matrix-r",
                        "--set", f"simulation.integrator={integrator}",
                        "--set", 'simulation.matrix_r.coordinates="independent"',
                        "--set", "simulation.matrix_r.independent=[" + ",".join(f'"{n}"' for n in ind) + "]",
                        "-o", tmp_path / "out.h5"],
                       tmp_path, str(path), "simulation.matrix_r.independent", "drive_rev prescribes rev alone")
