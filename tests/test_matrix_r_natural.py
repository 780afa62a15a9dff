"""Natural coordinates as the degrees of freedom of the independent-coordinate Matrix R
(parmbs/formulations/matrix_r_natural.py, natural_dof.py; seed 002 §2.2.3, eqs. 12–15):
exact discrete gradients, the constant-B limit, second-order agreement with relative
DOF, drift, on the planar five-bar and the spatial RSUR four-bar, and the one-line
refusals (bad names, singular choices, natural-coordinate bodies with spatial beams).
Natural-coordinate *bodies* (spatial/natural.py) in the 3-D tree (spatial/relative_tree.py):
exact gradients (dependent, independent and natural-point DOF), the same trajectory as
the Euler-parameter model, second order against index-3, Taylor order 2 (bounds in the
tests' docstrings).

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
from parmbs.io.hdf5 import coordinate_names
from parmbs.model.system import ModelError
from parmbs.sensitivity.problem import Problem

from conftest import CONFIGS
from gradient_checks import assert_gradients_agree, cli_one_line_error, taylor_orders
from matrix_r_spatial_models import FOURBAR as FOURBAR3D, NCHAIN, NFOURBAR, NFOURBAR_EULER
from test_matrix_r_independent import MRI, check_gradients, drift
from test_matrix_r_spatial import drift as spatial_drift
from test_natural_bodies import on_beam, pendulum

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


def test_natural_pendulum_runs_and_beam_model_refused_one_line(tmp_path):
    """Natural-coordinate bodies under matrix-r (spatial/relative_tree.py): the spatial
    pendulum of seed 000 §5.2 in natural coordinates runs and follows the same pendulum
    in Euler parameters under matrix-r to round-off (the same z-equations, bound as
    test_natural_coupler_equals_euler_coupler; measured 2.2e-16 m); a model that also
    has a spatial beam is still refused in one line naming the key and both kinds, exit 2
    (the message once said "the model has flexible bodies")."""
    com = {}
    for section in ("natural_bodies", "bodies"):
        f = tmp_path / f"{section}.toml"
        f.write_text(pendulum(section, "trapezoidal"))
        pr = Problem(load_config(str(f), ["simulation.formulation=matrix-r", "simulation.t_end=0.1"]))
        assert [J.kind for J in pr.stepper.tree.joints] == ["spherical"]
        com[section] = pr.forward().q[:, 0:3]
    assert np.max(np.abs(com["natural_bodies"][-1] - com["natural_bodies"][0])) > 0.01       # it moved
    assert np.max(np.abs(com["natural_bodies"] - com["bodies"])) <= 1e-12
    f = tmp_path / "on_beam.toml"
    f.write_text(on_beam("spherical"))
    line = cli_one_line_error(["simulate", f, "-o", tmp_path / "x.h5", "--set", "simulation.formulation=matrix-r",
                               "--set", "simulation.integrator=trapezoidal"], tmp_path, "simulation.formulation",
                              "spatial beams (1), natural-coordinate bodies (1)", "index3")
    assert "flexible" not in line
    with pytest.raises(ModelError):
        Problem(load_config(str(f), ["simulation.formulation=matrix-r", "simulation.integrator=trapezoidal"]))


# -- natural-coordinate bodies in the relative-coordinate tree ------------------------------
# configs/spatial-fourbar-natural.toml (NFOURBAR: an RSSR four-bar, natural coupler between
# two Euler-parameter bodies, closed by a cut revolute joint) and NCHAIN (natural bodies
# hung from ground and from each other, an Euler body hung from a natural one, a free
# natural root, a cut distance joint).
def nproblem(tmp_path, text, extra=()):
    f = tmp_path / "natural-model.toml"
    f.write_text(text)
    return Problem(load_config(str(f), ["simulation.t_end=0.1", "simulation.dt=1e-2", *extra]))


@pytest.mark.parametrize("text,extra", [
    (NFOURBAR, []),
    (NFOURBAR, ["simulation.matrix_r.coordinates=dependent"]),
    (NFOURBAR, ['simulation.matrix_r.independent=["pivot_c", "coupler.C.z"]']),
    (NCHAIN, ["simulation.matrix_r.coordinates=independent"])],
    ids=["fourbar-independent", "fourbar-dependent", "fourbar-natural-dof", "chain-independent"])
def test_natural_bodies_gradients(tmp_path, text, extra):
    """10 steps; design variables on the natural bodies' mass, inertia and points.  The
    steppers are matrix_r.py's with the natural bodies' q = (r, columns of A(e)) from the
    tree: their constant mass matrix and the orthonormality rows enter through the
    components (StateEval), the tree Jacobians by complex step, so no new derivative
    block (the tree's own kinematics: test_matrix_r_spatial.test_recursive_kinematics).
    Bounds as tests/test_matrix_r_spatial.py: adjoint = direct ≤ 1e-9 (measured ≤ 5e-13);
    central FD at relative step 1e-5, the minimum of a 1e-3…1e-7 sweep (truncation
    falls as h², 1.2e-4 → 1.2e-6 from 1e-3 to 1e-4; noise ~1/h below 1e-5), ≤ 1e-6
    (measured ≤ 5.3e-8).  Cut rows hold to the Newton tolerance, tree rows (spherical
    joints, orthonormality of the natural axes) by construction: drift ≤ 1e-10.  The
    cut distance joint's reaction in the dependent form is its index-3 multiplier, whose
    FD is noise-dominated at 1e-6 (as every index-3 trapezoidal λ): NCHAIN runs the
    projected (independent) form."""
    pr = nproblem(tmp_path, text, extra)
    tr = pr.forward()
    assert spatial_drift(pr, tr) <= 1e-10
    if "coupler.C.z" in str(extra):                 # a natural-body point as DOF (natural_dof.py)
        assert type(pr.stepper).__name__ == "MatrixRNatural"
    assert_gradients_agree(pr, adj_cs=None)


@pytest.mark.parametrize("coords", ["independent", "dependent"])
def test_natural_coupler_equals_euler_coupler(tmp_path, coords):
    """The four-bar with its coupler in natural coordinates and in Euler parameters,
    matrix-r, 0.3 s: the tree, z and hence the z-equations are the same (RᵀMR and RᵀQ
    are the rigid coupler's kinetic energy and virtual power in z whichever absolute
    coordinates describe it; the orthonormality and normalization rows hold
    identically), and the trapezoidal rule acts on z: the trajectories differ by Newton's
    tolerance and round-off only (1e-12 × |q| ~ 1e-12, bound 1e-10; measured 3.3e-16 m)
    and the objectives by the same relative amount (bound 1e-9)."""
    out = {}
    for name, text in (("natural", NFOURBAR), ("euler", NFOURBAR_EULER)):
        pr = nproblem(tmp_path, text, ["simulation.t_end=0.3", f"simulation.matrix_r.coordinates={coords}"])
        tr = pr.forward()
        names = coordinate_names(pr.sys)
        cols = [names.index(f"{b}.{c}") for b in ("crank", "coupler", "rocker") for c in "xyz"]
        out[name] = tr.q[:, cols], pr.objective_values(tr, pr.sys.p)
    assert np.max(np.abs(out["natural"][0] - out["euler"][0])) <= 1e-10
    for o, v in out["euler"][1].items():
        assert abs(out["natural"][1][o] - v) <= 1e-9 * abs(v), o


def test_natural_coupler_second_order_to_index3(tmp_path):
    """Matrix-r (independent, the shipped config's form) and index-3 with GGL on the
    Cartesian/natural coordinates solve the same DAE by second-order schemes: the final
    states' difference over 0.2 s at dt = 1e-2, 5e-3, 2.5e-3 falls with order 2 ± 0.2
    (the next term is O(h) smaller)."""
    errs = []
    for dt in (1e-2, 5e-3, 2.5e-3):
        ov = ["simulation.t_end=0.2", f"simulation.dt={dt}"]
        a = nproblem(tmp_path, NFOURBAR, ov).forward()
        b = nproblem(tmp_path, NFOURBAR, ov + ["simulation.formulation=index3", "simulation.stabilization=ggl"]).forward()
        errs.append(np.max(np.abs(a.q[-1] - b.q[-1])))
    orders = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
    print("differences", errs, "orders", orders)
    assert np.all((orders > 1.8) & (orders < 2.2)), orders


def test_natural_coupler_taylor_order_two(tmp_path):
    """|ψ(ρ + εd) − ψ(ρ) − ε ∇ψ·d| = O(ε²) along a random direction (ε = 4e-3 … 5e-4)."""
    pr = nproblem(tmp_path, NFOURBAR)
    pr.forward()
    for o in ("rocker_load", "coupler_acc"):
        orders = taylor_orders(pr, o)
        assert np.all(np.abs(orders - 2.0) < 0.15), (o, orders)


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
