"""Natural-coordinate bodies on joints with axes (revolute, universal, cylindrical,
translational: flexible/ancf3d_joints.AXIS_PAIRS) in the 3-D relative-coordinate tree
(spatial/relative_tree.py) under matrix-r: the same trajectory as the Euler-parameter
model, exact discrete gradients, Taylor order 2, second order against index-3 on the
natural coordinates, and the refusals that remain (one line, exit 2).  The components'
derivative blocks: tests/test_components.py (generic block test).

Models (tests/matrix_r_spatial_models.py): NAXES — every new joint type in one tree
(ground–natural revolute, natural–natural universal and revolute, a cylindrical joint
with an Euler child under a natural parent, a translational joint with a natural child
under an Euler parent; 7 relative coordinates, no cut); NFOURBAR_U — the RSUR four-bar
with a natural coupler whose universal joint carries the Euler rocker, pivot_r cut.

Bounds (as tests/test_matrix_r_natural.py).  Natural = Euler: the tree, z and the
z-equations are the same (RᵀMR, RᵀQ are each body's kinetic energy and virtual power in
z whichever absolute coordinates describe it) and the trapezoidal rule acts on z, so the
trajectories differ by Newton's tolerance and round-off only: 1e-12 × |q| ~ 1e-12, bound
1e-10 (measured ≤ 3.6e-16 m over 0.1 s); objectives relative 1e-9 (measured ≤ 8.9e-13;
3.8e-10 in the dependent form, whose reactions are index-3 multipliers: Newton's
tolerance amplified by the step).
adjoint = direct ≤ 1e-9 (one dense LU per step, condition ~1e6 × 1e-16; measured ≤ 3.3e-11,
dependent form; ≤ 6e-15 independent).  Central FD: truncation falls as h² (measured
6.6e-3, 6.6e-5, 6.6e-7 at relative steps 1e-3, 1e-4, 1e-5 on NAXES), round-off ~1e-12/h,
so the minimum over the sweep 1e-4, 1e-5, 1e-6 is ≤ 1e-6 (measured ≤ 6.5e-9 independent,
2e-7 for the dependent form's index-3 accelerations, whose FD noise is the
multipliers')."""
import numpy as np
import pytest

from parmbs.config import load_config
from parmbs.io.hdf5 import coordinate_names
from parmbs.sensitivity.problem import Problem

from gradient_checks import cli_one_line_error, min_fd_error, rel, taylor_orders
from matrix_r_spatial_models import NAXES, NAXES_EULER, NFOURBAR_U, NFOURBAR_U_EULER
from test_matrix_r_spatial import drift as spatial_drift
from test_natural_bodies import on_beam

BODIES = {"naxes": ("n1", "n2", "n4", "box", "n3"), "fourbar": ("crank", "coupler", "rocker")}
MODELS = {"naxes": (NAXES, NAXES_EULER), "fourbar": (NFOURBAR_U, NFOURBAR_U_EULER)}
INDEPENDENT = "simulation.matrix_r.coordinates=independent"


def nproblem(tmp_path, text, extra=()):
    f = tmp_path / "natural-axes.toml"
    f.write_text(text)
    return Problem(load_config(str(f), ["simulation.formulation=matrix-r", "simulation.t_end=0.1",
                                        "simulation.dt=1e-2", *extra]))


@pytest.mark.parametrize("model,coords", [("naxes", "independent"), ("fourbar", "independent"),
                                          ("fourbar", "dependent")])
def test_natural_axis_joints_equal_euler(tmp_path, model, coords):
    """The model with natural bodies and with the same bodies in Euler parameters:
    trajectories and objectives to round-off (module doc); the tree holds the new joint
    kinds."""
    out = {}
    for kind, text in zip(("natural", "euler"), MODELS[model]):
        pr = nproblem(tmp_path, text, [f"simulation.matrix_r.coordinates={coords}"])
        kinds = [J.kind for J in pr.stepper.tree.joints]
        tr = pr.forward()
        names = coordinate_names(pr.sys)
        cols = [names.index(f"{b}.{c}") for b in BODIES[model] for c in "xyz"]
        out[kind] = tr.q[:, cols], pr.objective_values(tr, pr.sys.p)
    assert kinds == (["revolute", "universal", "revolute", "cylindrical", "translational"] if model == "naxes"
                     else ["revolute", "spherical", "universal"]), kinds
    print("trajectories", np.max(np.abs(out["natural"][0] - out["euler"][0])), "objectives",
          max(abs(out["natural"][1][o] / v - 1.0) for o, v in out["euler"][1].items()))
    assert np.max(np.ptp(out["natural"][0], 0)) > 0.02                   # it moved
    assert np.max(np.abs(out["natural"][0] - out["euler"][0])) <= 1e-10
    for o, v in out["euler"][1].items():
        assert abs(out["natural"][1][o] - v) <= 1e-9 * abs(v), o


@pytest.mark.parametrize("model,extra", [
    ("naxes", [INDEPENDENT]),
    ("fourbar", [INDEPENDENT]),
    ("fourbar", ["simulation.matrix_r.coordinates=dependent"]),
    ("fourbar", [INDEPENDENT, 'simulation.matrix_r.cut=["cross"]'])],
    ids=["naxes-independent", "fourbar-independent", "fourbar-dependent", "fourbar-universal-cut"])
def test_natural_axis_joints_gradients(tmp_path, model, extra):
    """10 steps; design variables on the natural bodies' mass, inertia and joint points, a
    ground point and a spring.  The last case cuts the rigid–natural universal joint
    instead of pivot_r: its rows are cut rows (the component's Φ, Φ_q, γ and complex-step
    Hessian in the stepper) and the gradient is that of the tree case.  Drift: cut rows
    to Newton's tolerance, tree rows by construction, ≤ 1e-10."""
    pr = nproblem(tmp_path, MODELS[model][0], extra)
    tr = pr.forward()
    assert spatial_drift(pr, tr) <= 1e-10
    adj, dir_ = pr.adjoint(), pr.direct()
    # the module doc's sweep, the form's best step first (measured: the independent form's
    # at 1e-6, truncation 6.6e-9 on NAXES; the dependent form's at 1e-4, 2.0e-7 — its index-3
    # accelerations' noise is 4.8e-5 at 1e-6)
    dependent = "simulation.matrix_r.coordinates=dependent" in extra
    fds = min_fd_error(pr, adj, (1e-4, 1e-5, 1e-6) if dependent else (1e-6, 1e-5, 1e-4), 1e-6)
    for o in adj:
        fd = fds[o]
        print(f"{o}: |adj-dir| {rel(dir_[o], adj[o]):.1e} min |adj-fd| {fd:.1e}  grad {adj[o]}")
        assert rel(dir_[o], adj[o]) <= 1e-9, o
        assert fd <= 1e-6, o
        assert np.any(np.abs(adj[o]) > 0), o


@pytest.mark.parametrize("model,objectives", [("naxes", ("hinge_load", "box_acc")), ("fourbar", ("rocker_load",))])
def test_natural_axis_joints_taylor_order_two(tmp_path, model, objectives):
    """|ψ(ρ + εd) − ψ(ρ) − ε ∇ψ·d| = O(ε²) along a random direction (ε = 4e-3 … 5e-4)."""
    pr = nproblem(tmp_path, MODELS[model][0], [INDEPENDENT])
    pr.forward()
    for o in objectives:
        orders = taylor_orders(pr, o)
        assert np.all(np.abs(orders - 2.0) < 0.15), (o, orders)


def test_natural_axis_joints_second_order_to_index3(tmp_path):
    """NAXES under matrix-r and under index-3 + GGL on the natural coordinates (the new
    components as constraint rows): two second-order schemes of the same DAE, the final
    states' difference over 0.2 s at dt = 1e-2, 5e-3, 2.5e-3 falls with order 2 ± 0.2
    (measured 5.1e-4, 1.3e-4, 3.2e-5: orders 1.985, 1.995).  GGL's Newton matrix here (206 unknowns, the
    serial MUMPS path) needs more MUMPS workspace than its default estimate (INFOG(1) =
    −9 at ICNTL(14) = 20 %): SparseOperator doubles ICNTL(14) and factors again
    (the next test)."""
    errs = []
    for dt in (1e-2, 5e-3, 2.5e-3):
        ov = ["simulation.t_end=0.2", f"simulation.dt={dt}"]
        a = nproblem(tmp_path, NAXES, ov).forward()
        b = nproblem(tmp_path, NAXES, ov + ["simulation.formulation=index3",
                                            "simulation.stabilization=ggl"]).forward()
        errs.append(np.max(np.abs(a.q[-1] - b.q[-1])))
    orders = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
    print("differences", errs, "orders", orders)
    assert np.all((orders > 1.8) & (orders < 2.2)), orders


def test_mumps_workspace_too_small_is_enlarged_not_reported_singular(tmp_path):
    """NAXES under index-3 + GGL: MUMPS stops at its default workspace (INFOG(1) = −9 at
    ICNTL(14) = 20 %, the 206-unknown serial MUMPS path); SparseOperator doubles ICNTL(14)
    and factors again instead of reporting a singular Newton matrix.  The run equals one
    given ``mat_mumps_icntl_14 = 100`` from the start: the workspace does not change
    MUMPS's pivots, so the two should agree to round-off (measured: bit for bit)."""
    from parmbs.model import assembly
    ov = ["simulation.t_end=0.02", "simulation.dt=5e-3", "simulation.formulation=index3",
          "simulation.stabilization=ggl"]
    before = assembly.MUMPS_RETRIES[0]
    a = nproblem(tmp_path, NAXES, ov).forward()
    assert assembly.MUMPS_RETRIES[0] > before
    b = nproblem(tmp_path, NAXES, ov + ["simulation.petsc_options.mat_mumps_icntl_14=100"]).forward()
    np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-14)


def test_remaining_refusals_one_line(tmp_path):
    """What stays refused, in one line naming the key, exit 2: a joint with axes on a beam
    point (a gradient-deficient beam has no cross-section frame), and a driver on a joint
    of a natural-coordinate body (RevoluteDriver / TranslationDriver read Euler
    parameters)."""
    text = on_beam("spherical").replace('type = "spherical"\nname = "tip"\na = "box.P"\nb = "beam.tip"',
                                        'type = "revolute"\nname = "tip"\na = "box.P"\nb = "beam.tip"\n'
                                        'axis_a = "box.x"\naxis_b = "beam.x"')
    assert 'type = "revolute"\nname = "tip"' in text
    f = tmp_path / "beam.toml"
    f.write_text(text)
    cli_one_line_error(["simulate", f, "-o", tmp_path / "x.h5"], tmp_path, "spatial.joints.tip.type",
                       "revolute", "natural side", "beam side")
    f = tmp_path / "driven.toml"
    f.write_text(NAXES.replace("[simulation]", '[[spatial.joints]]\ntype = "driver"\nname = "knee_drive"\n'
                               'joint = "knee"\nfunction = { type = "harmonic", amplitude = 0.1, omega = 1.2 }\n'
                               "[simulation]", 1))
    cli_one_line_error(["simulate", f, "-o", tmp_path / "x.h5"], tmp_path, "spatial.joints.knee_drive.joint",
                       "natural-coordinate body", "not available")


def test_reselect_through_a_fold_exact_gradients():
    """configs/spatial-rsur-natural.toml over 0.55 s at dt = 1e-2 with
    simulation.matrix_r.reselect = 0.25 and ball-rx as the base independent coordinate
    (column pivoting's choice at t0; the file lists cross-1): ball-rx has
    a turning point along the motion near 0.49 s (σ_min(Φ_z D) → 3.5e-4 at dt = 2.5e-3,
    benchmarks/rsur_singularity.py), so the steps from t = 0.39 s use cross-1 and
    from 0.54 s pivot_c (measured; matrix_r_independent.py "Re-selection").  The choice is
    a function of the step's start state, so the tangent and adjoint steps make the
    forward step's choice: adjoint = direct to round-off (bound 1e-9, as the module
    doc; measured ≤ 3.9e-14), central FD as the module doc (minimum over 1e-5, 1e-6 ≤
    1e-6; measured ≤ 6.9e-9 over 1e-4…1e-6); the chosen coordinate is the forward run's
    at every step of the direct sweep."""
    pr = Problem(load_config("configs/spatial-rsur-natural.toml",
                             ["simulation.t_end=0.55", "simulation.dt=1e-2", "simulation.matrix_r.reselect=0.25",
                              'simulation.matrix_r.independent=["ball-rx"]']))
    st = pr.stepper
    chosen, step = {}, st.step

    def logged(k, t, x, p):
        out = step(k, t, x, p)
        chosen[k] = tuple(st.ind_names)
        return out

    st.step = logged
    pr.forward()
    seq = [chosen[k] for k in sorted(chosen)]
    print([(k, c) for k, c in enumerate(seq) if k == 0 or c != seq[k - 1]])
    assert seq[0] == ("ball-rx",)
    assert any(c != ("ball-rx",) for c in seq), seq          # switched
    tangent, seen = st.tangent_step, {}

    def tangent_logged(t, x0, x1, dx0, p):
        out = tangent(t, x0, x1, dx0, p)
        seen[int(round(t / pr.h))] = tuple(st.ind_names)
        return out

    st.tangent_step = tangent_logged
    dir_ = pr.direct()
    assert [seen[k] for k in sorted(seen)] == seq
    adj = pr.adjoint()
    fds = min_fd_error(pr, adj, (1e-6, 1e-5), 1e-6)
    for o in adj:
        fd = fds[o]
        print(f"{o}: |adj-dir| {rel(dir_[o], adj[o]):.1e} min |adj-fd| {fd:.1e}")
        assert rel(dir_[o], adj[o]) <= 1e-9, o
        assert fd <= 1e-6, o


def test_reselect_refusals(tmp_path):
    """reselect is read by the trapezoidal tree-coordinate stepper only: with dependent
    coordinates (config error) and with a ts-* integrator (model error), refused naming
    the key."""
    f = tmp_path / "nfourbar-u.toml"
    f.write_text(NFOURBAR_U)
    with pytest.raises(Exception, match="'reselect' is read only with coordinates"):
        load_config(str(f), ["simulation.formulation=matrix-r", "simulation.matrix_r.coordinates=dependent",
                             "simulation.matrix_r.reselect=0.5"])
    with pytest.raises(Exception, match="simulation.matrix_r.reselect.*trapezoidal stepper only"):
        Problem(load_config(str(f), ["simulation.formulation=matrix-r", INDEPENDENT, "simulation.integrator=ts-cn",
                                     "simulation.matrix_r.reselect=0.5"]))


def test_fold_monitor_warns_once_naming_the_step():
    """The fold monitor (matrix_r_independent.FOLD_WARN): with ball-rx as z^i the run of
    the file over 0.5 s (dt = 1e-2) warns once, naming the step and the coordinate, when
    σ_min(Φ_z D) < 0.05 σ_min(Φ_z) (ball-rx's turning point near 0.49 s; the ratio is
    0.19 at 0.4 s); the file as shipped (cross-1, 0.6 s) and the re-selecting run do
    not warn."""
    import warnings
    base = ["simulation.t_end=0.5", "simulation.dt=1e-2", "simulation.progress=false"]
    ballrx = 'simulation.matrix_r.independent=["ball-rx"]'
    pr = Problem(load_config("configs/spatial-rsur-natural.toml", base + [ballrx]))
    with pytest.warns(RuntimeWarning, match=r"step \d+ \(t = 0\.4\d*\): the independent coordinate\(s\) ball-rx "
                                            r"are near a turning point") as rec:
        pr.forward()
        pr.forward()                                          # once per stepper
    assert sum("turning point" in str(w.message) for w in rec) == 1
    for extra in ([], [ballrx, "simulation.matrix_r.reselect=0.5"]):
        pr = Problem(load_config("configs/spatial-rsur-natural.toml",
                                 ["simulation.t_end=0.6", "simulation.dt=1e-2", "simulation.progress=false"] + extra))
        with warnings.catch_warnings():
            warnings.filterwarnings("error", message=".*turning point")
            pr.forward()


def test_rsur_horizon_study_observes_without_changing_the_run():
    """benchmarks/rsur_horizon.py (the 1 s study of the file, benchmarks/README.md "Why 1 s
    is not dt-converged") loaded as a module: its per-step record of the selection wraps
    the stepper's step without changing a number (ψ and the adjoint gradient equal a
    plain run's bit for bit), it sees the switch away from ball-rx (at 0.2925 s at dt =
    2.5e-3 with reselect = 0.5; near 0.3 s here), the crank's largest rate is its initial
    2 rad/s (it slows down and reverses before 0.4 s; ω = 2|ṗ| to Newton's tolerance), and
    the energy of the conservative model is kept to O(h²): 8.0e-5 J over 0.3 s at dt =
    2.5e-3 (measured), so ≈ 16 × that = 1.3e-3 J at dt = 1e-2; bound 1e-2 J."""
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "rsur_horizon.py"
    spec = importlib.util.spec_from_file_location("rsur_horizon", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sets = ["simulation.matrix_r.reselect=0.5", 'simulation.matrix_r.independent=["ball-rx"]']
    r = mod.one_run("configs/spatial-rsur-natural.toml", sets, 1e-2, 0.35)
    print(r["switches"], r["dE"], r["crank_rate"], r["min_ratio"])
    pr = Problem(load_config("configs/spatial-rsur-natural.toml",
                             sets + ["simulation.dt=1e-2", "simulation.t_end=0.35", "simulation.progress=false"]))
    pr.forward()
    vals, adj = pr.objective_values(), pr.adjoint()
    assert r["values"] == vals
    for o in adj:
        assert np.array_equal(np.asarray(r["grads"][o]), np.asarray(adj[o])), o
    assert r["start_sel"] == ["ball-rx"]
    assert r["switches"] and r["switches"][0][1] != ["ball-rx"] and 0.25 < r["switches"][0][0] < 0.35
    assert abs(r["crank_rate"] - 2.0) <= 1e-8
    assert r["dE"] <= 1e-2
