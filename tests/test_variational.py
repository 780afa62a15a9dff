"""The variational integrator (parmbs/integrators/variational.py, seed 000 §3–4):
exact discrete gradients (adjoint = direct = complex step, vs central FD), the
positions solve the seed's constrained discrete Euler–Lagrange equations, bounded
energy of the undamped double pendulum, and second order in dt."""
import numpy as np
import pytest

from parmbs.config import load_config
from parmbs.model.evaluation import StateEval
from parmbs.sensitivity.complex_step import complex_step_gradient
from parmbs.sensitivity.problem import Problem

from conftest import CONFIGS


def problem(name, overrides=()):
    return Problem(load_config(str(CONFIGS / f"{name}.toml"),
                               ["simulation.integrator=variational", *overrides]))


def rel(a, b):
    return np.max(np.abs(a - b)) / np.max(np.abs(b))


# FD steps: rel_step·max(|ρ|, 1), ≈ ε^(1/3) for O(1) variables; the beam side h = 0.05 m
# needs a smaller one (1e-5 absolute would be a 2e-4 relative step)
CASES = [("double-pendulum", ["simulation.t_end=0.2", "simulation.dt=0.005"], 1e-5),
         ("fivebar", ["simulation.t_end=0.2", "simulation.dt=0.01"], 1e-5),
         ("flexible-pendulum", ["simulation.t_end=0.1", "simulation.dt=0.002"], 1e-6),
         # rheonomic driver (Φ_t in the velocity projection), damper (midpoint forcing)
         ("fourbar", ["simulation.t_end=0.1", "simulation.dt=0.005"], 1e-5)]


@pytest.mark.parametrize("name,overrides,fd_step", CASES, ids=[c[0] for c in CASES])
def test_adjoint_direct_fd_agree(name, overrides, fd_step):
    pr = problem(name, overrides)
    pr.forward()
    adj, dir_, fd = pr.adjoint(), pr.direct(), pr.finite_differences(fd_step)
    for k in adj:
        print(f"{name}/{k}: |adj-dir|={rel(dir_[k], adj[k]):.1e} |adj-fd|={rel(fd[k], adj[k]):.1e}")
        assert rel(dir_[k], adj[k]) <= 1e-9, k
        assert rel(fd[k], adj[k]) <= 1e-6, k


def test_complex_step_matches_adjoint():
    """Complex step has no truncation error: a sharper check than FD."""
    pr = problem("double-pendulum", CASES[0][1])
    pr.forward()
    adj, cs = pr.adjoint(), complex_step_gradient(pr)
    for k in adj:
        assert rel(cs[k], adj[k]) <= 1e-9, k


def _forces(st, t, q0, q1, p):
    """M (q1 − q0)/h and F at the midpoint of [t, t + h] (the stepper's own views)."""
    h, n = st.h, len(q0)
    vm, qm = (q1 - q0) / h, 0.5 * (q0 + q1)
    Mv = st._ev(st.mass, t, qm, vm, vm, np.zeros(0), p).residual()
    F = st._ev(st.dyn, t + 0.5 * h, qm, vm, np.zeros(n), np.zeros(0), p).residual()
    return Mv, F


def test_positions_solve_the_constrained_DEL():
    """The stored q_n satisfy seed 000 Eq. 13/47 (with erratum E5) and the start step
    Eq. 17: c_n = M(q_{n+1} − 2q_n + q_{n−1})/h + (h/2)(F_{n−½} + F_{n+½}) lies in the
    range of G_nᵀ (c_n + h G_nᵀλ_n = 0 for some λ_n), and Φ(q_n) = 0; the DEL node
    multiplier λ_n is the reported λ_n to O(h²)."""
    pr = problem("fivebar", ["simulation.t_end=0.2", "simulation.dt=0.01"])
    tr = pr.forward()
    st, p, h = pr.stepper, pr.sys.p, pr.h
    worst, lam_dev = 0.0, 0.0
    for k in range(tr.steps):
        ev = StateEval(pr.sys, tr.t[k], *tr.x(k), p)
        G = ev.G().dense()
        assert np.max(np.abs(ev.phi())) < 1e-10
        Mv1, F1 = _forces(st, tr.t[k], tr.q[k], tr.q[k + 1], p)
        if k == 0:       # start step: M(q₁ − q₀)/h + (h/2)F_½ − M q̇₀ = −(h/2)G₀ᵀλ₀
            Mv0 = st._ev(st.mass, 0.0, tr.q[0], tr.v[0], tr.v[0], np.zeros(0), p).residual()
            c, w = Mv1 + 0.5 * h * F1 - Mv0, 0.5 * h
        else:
            Mv0, F0 = _forces(st, tr.t[k - 1], tr.q[k - 1], tr.q[k], p)
            c, w = Mv1 - Mv0 + 0.5 * h * (F0 + F1), h
        lam, *_ = np.linalg.lstsq(-w * G.T, c, rcond=None)
        worst = max(worst, np.max(np.abs(c + w * G.T @ lam)) / np.max(np.abs(c)))
        if k > 0:
            lam_dev = max(lam_dev, np.max(np.abs(lam - tr.lam[k])) / np.max(np.abs(tr.lam[k])))
    print(f"DEL residual outside range(Gᵀ): {worst:.1e}; |λ_DEL − λ| / |λ| ≤ {lam_dev:.1e}")
    assert worst < 1e-9
    assert lam_dev < 30 * h * h            # O(h²): 1.9e-3 measured at h = 0.01


def test_energy_bounded_double_pendulum():
    """Undamped double pendulum, 2000 steps of 10 ms: the energy error stays bounded
    (symplectic scheme), no drift from the first to the last quarter."""
    pr = problem("double-pendulum", ["simulation.t_end=20.0", "simulation.dt=0.01"])
    tr = pr.forward()
    E = np.array([StateEval(pr.sys, tr.t[k], *tr.x(k), pr.sys.p).energy() for k in range(tr.steps + 1)])
    dE = np.abs(E - E[0])
    q = len(dE) // 4
    print(f"max |E − E0| = {dE.max():.3e} (first quarter {dE[:q].max():.3e}, last {dE[-q:].max():.3e})")
    assert dE.max() < 2e-2          # 1e-3 of m g L ≈ 10 J (E0 = −10.4 J); 1.07e-2 measured
    assert dE[-q:].max() < 3 * dE[:q].max()


def test_second_order_in_dt():
    """Tip position, velocity, acceleration and multipliers at t = 0.5 s converge at
    order 2 (the state's v, a, λ are the consistent ones of (q, v), not first order)."""
    def final(dt):
        tr = problem("double-pendulum", ["simulation.t_end=0.5", f"simulation.dt={dt}"]).forward()
        return [tr.q[-1], tr.v[-1], tr.a[-1], tr.lam[-1]]
    ref = final(0.00125)
    errs = [[np.max(np.abs(x - r)) for x, r in zip(final(dt), ref)] for dt in (0.02, 0.01)]
    orders = np.log2(np.array(errs[0]) / np.array(errs[1]))
    print("observed orders (q, v, a, λ):", orders)
    assert np.all(orders > 1.8)


def test_rigid_spring_beam_joint_position_gradient():
    """Seed 000 §6.2: ∂/∂(X_D, Y_D) of ∫|d_B|² dt — D moves the ground point, the beam
    length and its initial angle (q₀ follows, erratum E9) — adjoint vs central FD."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("rigid_spring_beam",
                                                  CONFIGS.parent / "benchmarks" / "rigid_spring_beam.py")
    rsb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rsb)
    pr = Problem(load_config(str(CONFIGS / "rigid-spring-beam.toml"), ["simulation.t_end=0.02"]))
    xd = np.array([2.5, 0.0])
    p0 = pr.sys.p.copy()
    assert np.allclose(rsb.xd_apply(pr, p0, xd), p0)       # the config is the (X_D, Y_D) design
    psi, g = rsb.adjoint_gradient(pr, p0, xd)
    g4_dir = pr.direct()["dB"]
    gfd = rsb.fd_gradient(pr, xd)
    print(f"psi = {psi:.3e}, adjoint {g}, FD {gfd}")
    assert rel(rsb.xd_gradient(g4_dir, xd), g) <= 1e-9
    assert rel(gfd, g) <= 1e-6


def test_state_dependent_mass_is_refused():
    """The scheme needs L = ½ q̇ᵀMq̇ − U with constant M: a floating-frame beam's
    inertia depends on q and v, so the stepper refuses it, naming the key."""
    from parmbs.model.system import ModelError
    with pytest.raises(ModelError, match="constant mass matrix") as e:
        problem("slider-crank-flex", ["simulation.t_end=0.001"])
    assert e.value.key == "simulation.integrator"
