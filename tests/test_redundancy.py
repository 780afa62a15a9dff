"""Redundant constraints (parmbs/model/redundancy.py) on configs/parallelogram.toml: a
parallelogram linkage with a redundant third crank, Φ_q of rank 11 < 12 rows at every
configuration.

* the redundant row is found at set-up (KC3[1], the last row that adds nothing);
* the forward run equals the same mechanism modelled without it: the parallelogram
  C1-C2-K with C1 carrying crank C3's mass and inertia (C3 moves as C1 translated by
  O3 − O1, so its kinetic and potential energy are C1's);
* adjoint = direct ≤ 1e-9, central FD ≤ 1e-6 (a λ-objective of the joint whose row is
  dropped included), under every formulation the mechanism covers;
* a singular configuration reached mid-run (the linkage driven through θ = 0, where
  every link is collinear) exits 2 naming step, time and joints; a redundant model
  given n − m independent coordinates gets a message naming the redundant row;
* a model without redundancy is untouched (no detection, and the dropped-row code path
  forced on gives bitwise the same run).
"""
import tomllib

import numpy as np
import pytest

from parmbs.config import load_config
from parmbs.config.loader import validate
from parmbs.model import evaluation
from parmbs.model.system import ModelError
from parmbs.sensitivity.complex_step import complex_step_gradient
from parmbs.sensitivity.problem import Problem

from cli_helpers import parmbs_in_process
from conftest import CONFIGS

CONFIG = CONFIGS / "parallelogram.toml"
SHORT = {"t_end": 0.2, "dt": 0.01}


def _data(sim=None, reduced=False):
    """The parallelogram config as a dict; ``reduced``: without crank C3 and its joints,
    C1 carrying C3's mass and inertia (the same mechanism without redundancy)."""
    d = tomllib.loads(CONFIG.read_text())
    d["simulation"].update(SHORT, **(sim or {}))
    d["objectives"].append({"name": "kc3_load", "integrand": "reaction_sq", "joint": "KC3"})
    if reduced:
        d["bodies"] = [b for b in d["bodies"] if b["name"] != "C3"]
        c1 = d["bodies"][0]
        c1["mass"], c1["inertia"] = 2 * c1["mass"], 2 * c1["inertia"]
        d["joints"] = [j for j in d["joints"] if j["name"] not in ("OC3", "KC3")]
        d["design"] = [x for x in d["design"] if x["name"] != "m_C3"]
        d["objectives"] = [o for o in d["objectives"] if o["name"] in ("coupler_track",)]
    return d


def _problem(sim=None, reduced=False, **kw):
    return Problem(validate(_data(sim, reduced), str(CONFIG)), **kw)


def rel(a, b):
    return np.max(np.abs(a - b)) / np.max(np.abs(b))


def test_redundant_row_found_and_dropped():
    pr = _problem()
    red = pr.sys.redundancy
    assert red.dropped_names == ["KC3[1]"]
    assert (red.rank, red.m_full, pr.sys.m) == (11, 12, 11)
    assert "KC3[1]" not in pr.sys.constraint_names and len(pr.sys.constraint_names) == 11
    assert red.ratios[red.dropped].max() < 1e-12 < 1e-6 < np.delete(red.ratios, red.dropped).min()
    x0 = pr.stepper.initial(0.0, pr.sys.p)
    assert x0[3].shape == (11,)


@pytest.mark.parametrize("integrator", ["trapezoidal", "genalpha"])
def test_forward_equals_the_model_without_the_redundant_crank(integrator):
    ta = _problem({"integrator": integrator}).forward()
    tb = _problem({"integrator": integrator}, reduced=True).forward()
    keep = np.r_[0:6, 9:12]                          # C1, C2, K (C3 is 6:9)
    assert np.max(np.abs(ta.q[:, keep] - tb.q)) <= 1e-13
    assert np.max(np.abs(ta.v[:, keep] - tb.v)) <= 1e-10
    assert np.max(np.abs(ta.a[:, keep] - tb.a)) <= 1e-7 * np.max(np.abs(tb.a))
    assert np.max(np.abs(ta.q[:, 6:9] - ta.q[:, 0:3] - [2.0, 0.0, 0.0])) <= 1e-13
    assert np.max(np.abs(ta.q[-1] - ta.q[0])) > 0.05                     # it moved


CASES = [{"integrator": "trapezoidal"}, {"integrator": "genalpha"},
         {"integrator": "newmark", "beta": 0.3, "gamma": 0.6}, {"integrator": "variational"},
         {"formulation": "index1", "integrator": "trapezoidal"},
         {"formulation": "maggi", "integrator": "trapezoidal"},
         {"formulation": "matrix-r", "integrator": "trapezoidal"},
         {"formulation": "matrix-r", "integrator": "trapezoidal", "matrix_r": {"coordinates": "independent"}},
         # α = 1e5: adjoint vs direct differ by the round-off of M + αΦ_qᵀΦ_q, ∝ α
         # (α = 1e7, the default: 2.7e-10 here and 1.02e-9 measured on an AVX-512 machine
         # against the 1e-9 below; α = 1e5: ≤ 3.9e-12)
         {"formulation": "penalty", "integrator": "ts-cn", "penalty": {"alpha": 1e5}}]


@pytest.mark.parametrize("sim", CASES, ids=lambda s: "-".join(str(v) if not isinstance(v, dict) else "independent"
                                                                 for k, v in s.items() if k != "penalty"))
def test_gradients_adjoint_direct_fd(sim):
    pr = _problem(sim)
    tr = pr.forward()
    if sim.get("formulation") != "penalty":           # penalty: Φ = 0 only approximately
        ref = _problem(sim, reduced=True).forward()
        assert np.max(np.abs(tr.q[:, np.r_[0:6, 9:12]] - ref.q)) <= 1e-12
    adj, dir_ = pr.adjoint(), pr.direct()
    # central differences (≈ ε^(1/3) step) for the index-3 integrators; the others share
    # their mechanism, and their own tests check them against FD on other models
    fd = pr.finite_differences(1e-5) if "formulation" not in sim else adj
    for k in adj:
        print(f"{sim}/{k}: |adj-dir| = {rel(dir_[k], adj[k]):.1e}  |adj-fd| = {rel(fd[k], adj[k]):.1e}")
        assert rel(dir_[k], adj[k]) <= 1e-9, k
        assert rel(fd[k], adj[k]) <= 1e-6, k


def test_complex_step_and_lambda_of_the_dropped_row():
    pr = _problem({"integrator": "genalpha"})
    tr = pr.forward()
    adj, cs = pr.adjoint(), complex_step_gradient(pr)
    for k in adj:
        assert rel(cs[k], adj[k]) <= 1e-9, k
    # KC3's dropped row carries no load: its reaction objective sees only the kept row
    i = pr.sys.constraint_names.index("KC3[0]")
    w = pr.w
    assert pr.objective_values(tr)["kc3_load"] == pytest.approx(np.sum(w * tr.lam[:, i] ** 2), rel=1e-12)


def _singular_config(tmp_path, c0=-1.0):
    """The linkage driven at 2 rad/s from θ = c0: with c0 = −1 step 50 lands exactly
    on θ = 0 (t = 0.5), where cranks, coupler and ground line are collinear."""
    text = CONFIG.read_text().split("[simulation]")[0]
    text = text.replace('independent = ["angle"]\n', "").replace("initial_velocity = { angle = 0.5 }\n", "")
    text += (f'[[joints]]\ntype = "driver"\nname = "motor"\ncoordinate = "C1.angle"\n'
             f'function = {{ type = "polynomial", coefficients = [{c0}, 2.0] }}\n\n'
             '[simulation]\nt_end = 0.6\ndt = 0.01\nintegrator = "trapezoidal"\n')
    path = tmp_path / "driven.toml"
    path.write_text(text)
    return path


def _parmbs(*args):
    return parmbs_in_process(*args)          # cli.main in this process (tests/cli_helpers.py)


def test_singular_configuration_mid_run_exits_2_naming_step_time_and_joints(tmp_path):
    path = _singular_config(tmp_path)
    with pytest.raises(ModelError, match=r"step 50 \(t = 0.5\)"):     # the variational integrator too
        Problem(load_config(path, ["simulation.integrator=variational"])).forward()
    r = _parmbs("simulate", path)
    assert r.returncode == 2, r.stderr
    assert r.stdout.startswith("redundant constraints: 1 of 13 rows dropped")
    err = r.stderr.strip()
    assert "\n" not in err and "Traceback" not in err
    assert "joints: singular configuration at step 50 (t = 0.5)" in err
    for j in ("OC1", "OC2", "KC1", "KC2"):
        assert j in err
    # the same linkage driven past θ = 0 between steps is not stopped
    pr = Problem(load_config(_singular_config(tmp_path, c0=-1.003)))
    assert pr.forward().q[-1, 2] > 0.1


def test_redundant_model_with_n_minus_m_independent_coordinates(tmp_path):
    path = tmp_path / "naive.toml"
    path.write_text(CONFIG.read_text().replace('independent = ["angle"]\n', ""))
    r = _parmbs("simulate", path, "--set", "simulation.t_end=0.01")
    assert r.returncode == 2
    assert "KC3[1] depend on the rows before them" in r.stderr and "give 1 independent" in r.stderr


def test_inconsistent_redundant_geometry_is_a_model_error():
    d = _data()
    d["ground"]["points"]["O3"] = [2.1, 0.0]          # crank 3 no longer parallel: the linkage locks
    with pytest.raises(ModelError) as e:
        Problem(validate(d, str(CONFIG)))
    assert e.value.key == "bodies.C1.independent" and "rank 12" in e.value.message


def test_matrix_r_refuses_a_dropped_row_in_a_tree_joint():
    d = _data({"formulation": "matrix-r", "integrator": "trapezoidal"})
    d["joints"] = [j for j in d["joints"] if j["name"] != "KC1"] + [j for j in d["joints"] if j["name"] == "KC1"]
    d["objectives"] = d["objectives"][:1]
    with pytest.raises(ModelError) as e:
        Problem(validate(d, str(CONFIG)))
    assert e.value.key == "simulation.matrix_r.cut" and "KC1" in e.value.message


def test_models_without_redundancy_are_untouched(monkeypatch):
    """No detection for a model with n − m independent coordinates, and the dropped-row
    paths of StateEval (λ padded with a 0, spare Φ entry) forced on change no bit."""
    ov = ["simulation.t_end=0.05"]
    runs = []
    for force in (False, True):
        if force:
            init = evaluation.EvalPlan.__init__

            def forced(self, *a, **kw):
                init(self, *a, **kw)
                self.drop = True
            monkeypatch.setattr(evaluation.EvalPlan, "__init__", forced)
        pr = Problem(load_config(str(CONFIGS / "fourbar.toml"), ov))
        assert pr.sys.redundancy is None
        assert all(np.all(g.rows >= 0) for g in pr.sys.constraints)
        tr = pr.forward()
        runs.append((tr.q, tr.v, tr.a, tr.lam, *pr.adjoint().values()))
    for a, b in zip(*runs):
        assert np.array_equal(a, b)


# -- matrix-r: seed 002 eq. 17's least-squares R^Φ against the dropped rows -------------------------
MR_LS = {"dependent": {}, "independent": {"coordinates": "independent"},
         "natural": {"coordinates": "independent", "independent": ["K.P.x"]}}


def _mr(mr, redundant):
    return {"formulation": "matrix-r", "integrator": "trapezoidal", "matrix_r": dict(mr, redundant=redundant)}


def _cut_drift(pr, tr):
    """max_k |Φ_c| over every cut row, the row dropped at set-up (KC3[1]) included."""
    st, p = pr.stepper, pr.sys.p
    z = np.zeros(pr.sys.n)
    out = 0.0
    for k, t in enumerate(tr.t):
        q = st.tree.kin(st._xi(tr.x(k), p)[0], None, None, p, order=0)
        out = max(out, np.max(np.abs(evaluation.StateEval(st.view, t, q, z, z, np.zeros(st.mc), p).phi())))
    return out


@pytest.mark.parametrize("mr", MR_LS.values(), ids=MR_LS.keys())
def test_matrix_r_least_squares_equals_drop_and_gradients(mr):
    from test_matrix_r_independent import check_gradients
    """Seed 002 eq. 17 (formulations/matrix_r.py, "Redundant constraints"): all 4 cut rows
    enforced, the tall Newton system solved by least squares.  Where the redundancy holds
    eq. 17's R^Φ is the kept rows' one, so the trajectory is "drop"'s to Newton's
    tolerance: 1e-12 on βh²Δz̈, i.e. on z, and 1e-12/(βh²) = 4e-8 on z̈ (and λ) at
    h = 1e-2 (measured |Δq| ≤ 3.1e-15, |Δa|, |Δλ| ≤ 1.7e-9 against |a|, |λ| ~ 1–10:
    bounds 1e-12 on q, 1e-8 relative on a and λ).  Gradients: adjoint = direct ≤ 1e-9 (measured ≤ 1e-13),
    central FD at relative step 1e-5 ≤ 1e-6 (the sweep 1e-3..1e-7: truncation 1e-7 at
    1e-3 falling as h², noise ~1e-12/h from 1e-6 down; minimum at 1e-5, measured ≤ 7.4e-9)."""
    ls, drop = _problem(_mr(mr, "least-squares")), _problem(_mr(mr, "drop"))
    assert (ls.stepper.ls, ls.stepper.mc, ls.stepper.ml) == (True, 4, 3)
    assert (drop.stepper.ls, drop.stepper.mc) == (False, 3)
    ta, tb = ls.forward(), drop.forward()
    assert np.max(np.abs(ta.q - tb.q)) <= 1e-12
    assert rel(ta.v, tb.v) <= 1e-10 and rel(ta.a, tb.a) <= 1e-8 and rel(ta.lam, tb.lam) <= 1e-8
    assert _cut_drift(ls, ta) <= 1e-12                          # KC3[1] enforced (measured 8.9e-16)
    check_gradients(ls, str(mr))                    # adjoint = direct ≤ 1e-9, FD(1e-5) ≤ 1e-6


def test_matrix_r_least_squares_stops_when_a_design_breaks_the_redundancy():
    """Crank C3 lengthened by 1e-6: KC3[1] no longer repeats the parallelogram.  "drop"
    integrates the mechanism without that row; "least-squares" enforces it, finds it
    violated at the first step and says so (a contradiction, not a least-squares
    compromise whose derivatives would not be exact)."""
    from parmbs.integrators.newmark import StepError
    runs = {}
    for mode in ("least-squares", "drop"):
        d = _data(_mr({}, mode))
        d["design"] = [{"name": "L_C3", "path": "bodies.C3.points.A.x"}]
        pr = Problem(validate(d, str(CONFIG)))
        runs[mode] = (pr, pr.design.apply(pr.sys.p, pr.design.values(pr.sys.p) + 1e-6))
    pr, p = runs["drop"]
    assert np.isfinite(pr.forward(p).q).all()
    pr, p = runs["least-squares"]
    with pytest.raises(StepError, match=r"step 1 .*KC3\[1\].*violated"):
        pr.forward(p)
