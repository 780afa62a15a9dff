"""Semi-recursive Matrix R in 3-D (parmbs/spatial/relative_tree.py through
formulations/matrix_r.py): the recursive kinematics of every tree-joint kind checked
against independent derivatives, exact discrete gradients (adjoint = direct, vs central
differences), second-order agreement with the index-3 Cartesian solution on a closed
spatial loop, and the buggy's tree."""
import numpy as np
import pytest

from parmbs.config import load_config
from parmbs.formulations.matrix_r import dense
from parmbs.model.evaluation import StateEval
from parmbs.sensitivity.problem import Problem

from conftest import CONFIGS
from gradient_checks import assert_gradients_agree, rel
from matrix_r_spatial_models import CHAIN, FOURBAR, NCHAIN, NFOURBAR, WELD

MR = ["simulation.formulation=matrix-r", "simulation.integrator=trapezoidal"]


def problem(tmp_path, text, overrides=()):
    path = tmp_path / "model.toml"
    path.write_text(text)
    return Problem(load_config(str(path), list(overrides)))


@pytest.mark.parametrize("text", [CHAIN, FOURBAR, WELD, NFOURBAR, NCHAIN],
                         ids=["chain", "fourbar", "weld", "natural-coupler", "natural-chain"])
def test_recursive_kinematics(tmp_path, text):
    """At random relative coordinates (angles within ±(π/2 − 0.3) of the initial pose, so
    the spherical/free pitch stays off its ±90° singularity and the inverse map is single
    valued):
    * every tree row (joints and normalisation) holds: e_C is a product of unit
      quaternions and the joint points meet by construction (round-off, O(1) values);
    * v and a equal complex-step derivatives of q and of v along the motion (h = 1e-30:
      exact to round-off), so v = R ż, a = R z̈ + Ṙ ż;
    * Φ_t,q R = 0 (R spans the tree's null space) and rank Φ_t,q = n − nz;
    * ∂(Rᵀw)/∂z (complex step) equals the Hessian of wᵀq from the analytic second-order
      jets by polarization, H_jk = ¼ wᵀ[a(e_j + e_k) − a(e_j − e_k)] at z̈ = 0 (two
      independent computations; round-off only);
    * the closed-form inverse kinematics returns z.
    Natural-coordinate bodies (natural-coupler, natural-chain): their q = (r, columns of
    A(e)), the orthonormality rows are tree rows (round-off), and an Euler-parameter
    child of a natural body keeps its sign through the tree's e_P ∘ ρ (the far test)."""
    pr = problem(tmp_path, text, MR)
    s, T = pr.sys, pr.stepper.tree
    p = np.asarray(s.p, float)
    rng = np.random.default_rng(7)
    z0 = T.positions(s.q_guess, p)
    nz = T.nz
    for trial in range(3):
        z = z0 + rng.uniform(-1.2, 1.2, nz)
        zd, zdd = rng.standard_normal(nz), rng.standard_normal(nz)
        q, v, a = T.kin(z, zd, zdd, p)
        ev = StateEval(s, 0.0, q, v, a, np.zeros(s.m), p)
        assert np.max(np.abs(ev.phi()[T.rows_tree])) <= 1e-14
        h = 1e-30
        qc = T.kin(z + 1j * h * zd, None, None, p, order=0)
        assert rel(v, qc.imag / h) <= 1e-14
        _, vc = T.kin(z + 1j * h * zd, zd + 1j * h * zdd, None, p, order=1)
        assert rel(a, vc.imag / h) <= 1e-14
        R = T.jacobian(z, p)
        G = dense(ev.G())[T.rows_tree]
        assert np.max(np.abs(G @ R)) <= 1e-14 * np.max(np.abs(G)) * np.max(np.abs(R)) * 10
        assert np.linalg.matrix_rank(G) == len(T.rows_tree) == s.n - nz
        w = rng.standard_normal(s.n)
        H = T.rtw_z(z, p, w)
        E = np.eye(nz)
        plus = T.kin(z, E[:, None, :] + E[None, :, :], np.zeros(nz), p)[2] @ w
        minus = T.kin(z, E[:, None, :] - E[None, :, :], np.zeros(nz), p)[2] @ w
        assert rel(H, 0.25 * (plus - minus)) <= 1e-13
        assert np.max(np.abs(T.positions(q, p) - z)) <= 1e-12
        # angles beyond ±π (a spinning wheel): z comes back mod 4π with the Euler
        # parameters' sign, so f(positions(q)) = q, not −e on some bodies
        angles = np.isin(np.arange(nz), [f[2] for J in T.joints for f in J.factors if f[0] == "rot"])
        far = z + 2 * np.pi * rng.integers(-2, 3, nz) * angles
        qf = T.kin(far, None, None, p, order=0)
        assert np.max(np.abs(T.kin(T.positions(qf, p), None, None, p, order=0) - qf)) <= 1e-12


def drift(pr, traj):
    s = pr.sys
    return max(np.max(np.abs(StateEval(s, t, q, q * 0, q * 0, np.zeros(s.m), s.p).phi()))
               for t, q in zip(traj.t, traj.q))


@pytest.mark.parametrize("text,extra", [(CHAIN, []), (FOURBAR, []),
                                        (FOURBAR, ['simulation.matrix_r.coordinates="independent"']), (WELD, [])],
                         ids=["chain", "fourbar", "fourbar-independent", "weld"])
def test_gradients_and_presented_state(tmp_path, text, extra):
    """Adjoint = direct to round-off (the same discrete maps transposed: 1e-9 leaves
    conditioning × 1e-16 ample room), both = central differences (step 1e-5 relative:
    truncation ~1e-10, noise ~1e-16/1e-5 × ψ-conditioning ~1e-9; measured ≤ 5e-8, bound
    1e-6).  Tree joints hold by construction, cut rows to the Newton tolerance; the
    presented (q, v, a, λ) satisfies the full model's r + Φ_qᵀλ = 0 (tree reactions
    recovered).  "independent": the paper's second projection onto independent relative
    coordinates (matrix_r_independent.py) on the same 3-D tree.  "weld": a rigid joint
    inside the tree (zero coordinates, ρ = Q₀), its 6 rows tree rows."""
    pr = problem(tmp_path, text, MR + extra)
    tr = pr.forward()
    assert drift(pr, tr) <= 1e-10
    s = pr.sys
    res = max(np.max(np.abs(StateEval(s, t, *tr.x(k), s.p).residual())) for k, t in enumerate(tr.t))
    assert res <= 1e-10 * (1 + np.max(np.abs(tr.lam)))
    assert_gradients_agree(pr, adj_cs=None)            # matrix-r runs in real arithmetic: no complex step


def test_fourbar_tree_and_second_order_agreement(tmp_path):
    """The cut option picks the tree (revolute, spherical, universal; the rocker pivot's
    5 rows cut), and matrix-r 3-D and the index-3 trapezoidal rule on the Cartesian
    coordinates, both second order, differ by O(h²): the difference shrinks ≈4× per
    halving of dt."""
    pr = problem(tmp_path, FOURBAR, MR + ["simulation.t_end=0.2"])
    T = pr.stepper.tree
    assert T.cut_joints == ["pivot_r"] and pr.stepper.mc == 5 and T.nz == 6
    assert [J.kind for J in T.joints] == ["revolute", "spherical", "universal"]
    assert_second_order_to_index3(tmp_path, FOURBAR, 0.2)


def assert_second_order_to_index3(tmp_path, text, t_end):
    """matrix-r and index-3 trapezoidal at dt = 1e-2, 5e-3, 2.5e-3 over t_end: the final
    states' difference falls with order 2 ± 0.2."""
    errs = []
    for dt in (1e-2, 5e-3, 2.5e-3):
        ov = [f"simulation.t_end={t_end}", f"simulation.dt={dt}"]
        a = problem(tmp_path, text, ov + MR).forward()
        b = problem(tmp_path, text, ov).forward()
        errs.append(np.max(np.abs(a.q[-1] - b.q[-1])))
    orders = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
    print("differences", errs, "orders", orders)
    assert np.all((orders > 1.8) & (orders < 2.2)), orders


def test_buggy_tree():
    """The buggy (configs/buggy_build.py) in relative coordinates: the chassis is a free
    root (6), arms, knuckles and wheels hang from revolute joints (10), the two steering
    drivers are the only cut rows; a few steps agree with index-3 to O(h²)."""
    ov = ["simulation.t_end=0.01", "simulation.integrator=trapezoidal"]
    pr = Problem(load_config(str(CONFIGS / "buggy-step-descent.toml"), ov + ["simulation.formulation=matrix-r"]))
    T = pr.stepper.tree
    assert T.nz == 16 and T.tree_joints[:6] == ["chassis-" + c for c in ("x", "y", "z", "rz", "ry", "rx")]
    assert T.cut_joints == ["steer_fl", "steer_fr"] and pr.stepper.mc == 2
    a = pr.forward()
    b = Problem(load_config(str(CONFIGS / "buggy-step-descent.toml"), ov)).forward()
    assert np.max(np.abs(a.q - b.q)) <= 1e-5
    assert drift(pr, a) <= 1e-10


def test_buggy_gradients_past_half_turn():
    """The buggy driving onto the step at once (road x0 = −0.45 m) for 0.35 s: the wheels
    turn past π (3.7 rad), where the Euler parameters of ρ(θ) change sign against the
    rotation matrix — the adjoint sweep recovers z from the stored q, and before
    positions() kept that sign the gradient was wrong by O(1) (measured: 68 % normwise
    against FD over 1 s) while adjoint = direct still held.  Bounds as in
    test_gradients_and_presented_state (measured 1.4e-9 against FD at 0.4 s).  dt 1e-2
    (35 steps): what the test needs is the wheels past π at the end (the sign is a matter
    of the angle reached, not of the step; 3.84 rad here), and the adjoint = direct = FD
    bounds hold at any step (the FD error is the perturbed runs' truncation and round-off,
    not the step's): |adj − fd| 2.0e-10 and 6.2e-10 (two runs, the round-off's draw),
    wheels 3.83–3.84 rad, 11.5 s CPU of the test, against 9.5e-10, the same angles and
    17.0 s at dt 5e-3."""
    ov = ["spatial.road.x0=-0.45", "simulation.t_end=0.35", "simulation.dt=1e-2", "simulation.integrator=trapezoidal",
          "simulation.formulation=matrix-r"]
    pr = Problem(load_config(str(CONFIGS / "buggy-step-descent.toml"), ov))
    adj = assert_gradients_agree(pr, adj_cs=None)
    wheels = pr.stepper.tree.positions(pr.traj.q[-1], pr.sys.p)[12:]     # (the last FD run: p ± 1e-5)
    assert np.min(np.abs(wheels)) > np.pi and np.all(np.isfinite(adj["chassis_vertical_acc"]))


def test_weld_in_the_tree_agrees_with_index3(tmp_path):
    """The weld is a tree joint with no coordinate (15 relative coordinates as CHAIN,
    nothing cut), and matrix-r and the index-3 trapezoidal rule on the Cartesian
    coordinates (where the weld is 6 constraint rows) solve the same DAE by second-order
    schemes: the difference shrinks ≈ 4× per halving of dt (orders within 2 ± 0.2)."""
    pr = problem(tmp_path, WELD, MR)
    T = pr.stepper.tree
    assert T.nz == 15 and T.cut_joints == [] and "weld" not in T.tree_joints
    assert [J.kind for J in T.joints if J.name == "weld"] == ["rigid"]
    assert_second_order_to_index3(tmp_path, WELD, 0.1)
