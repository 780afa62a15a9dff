"""Penalty formulation through PETSc TS: trajectory vs index-3, TSAdjoint vs central
finite differences, own tangent sweep vs TSAdjoint (five-bar)."""
from pathlib import Path

import numpy as np
import pytest

from parmbs.config.loader import load_config
from parmbs.sensitivity.problem import Problem

CFG = Path(__file__).resolve().parents[1] / "configs" / "fivebar.toml"
DESIGN = ["Ls1", "Ls2", "m_A1", "xG_A1", "L_A1"]


def problem(integrator, t_end, formulation="penalty", objectives=("psi1", "psi2"), alpha=None):
    cfg = load_config(CFG, [f"simulation.t_end={t_end}", "simulation.dt=1e-3",
                            f'simulation.formulation="{formulation}"',
                            f'simulation.integrator="{integrator}"']
                      + ([f"simulation.penalty.alpha={alpha}"] if alpha is not None else []))
    pr = Problem(cfg)
    pr.objectives = [o for o in pr.objectives if o.name in objectives]
    return pr


def points(pr, traj):
    """Positions of every body's points over the trajectory: (steps+1, k, 2)."""
    from parmbs.model.kinematics import point_position
    out = []
    for name, body in zip(pr.sys.body_names, pr.config.bodies):
        for pt in body.points:
            qidx, s, _ = pr.sys.point_offset(f"{name}.{pt}")
            Q = np.hstack([traj.q, np.zeros((len(traj.t), 3))])[:, qidx]
            out.append(point_position(Q, s))
    return np.stack(out, 1)


def fd(pr, rel=1e-4):
    """Central differences of every design variable at ``rel``·max(|ρ_j|, 1).  The problem
    is left at the last perturbed design (the callers run it last: no run at ρ₀ after it)."""
    p0 = pr.sys.p.copy()
    rho = pr.design.values(p0)
    g = {o.name: np.zeros(len(rho)) for o in pr.objectives}
    for j in range(len(rho)):
        h = rel * max(abs(rho[j]), 1.0)
        vals = []
        for s in (1, -1):
            r = rho.copy()
            r[j] += s * h
            p = pr.design.apply(p0, r)
            vals.append(pr.objective_values(pr.forward(p), p))
        for k in g:
            g[k][j] = (vals[0][k] - vals[1][k]) / (2 * h)
    return g


def test_trajectory_matches_index3():
    ref = problem("trapezoidal", 0.5, formulation="index3")
    pen = problem("ts-cn", 0.5)
    tr_ref, tr_pen = ref.forward(), pen.forward()
    assert np.allclose(tr_ref.t, tr_pen.t, atol=1e-12, rtol=0)
    err = np.max(np.abs(points(ref, tr_ref) - points(pen, tr_pen)))
    print(f"max point position gap penalty(ts-cn) vs index3(trapezoidal): {err:.2e}")
    assert err < 1e-4
    # stored accelerations solve the penalty equations; λ is the penalty force
    assert np.max(np.abs(tr_pen.a - tr_ref.a)) < 1e-2 * np.max(np.abs(tr_ref.a))


@pytest.mark.parametrize("integrator,t_end", [("ts-cn", 0.2), ("ts-beuler", 0.1)])
def test_tsadjoint_vs_fd_and_direct(integrator, t_end):
    """TSAdjoint vs central FD and the tangent sweep, at α = 1e5.

    At the default α = 1e7 the FD check sat on its noise floor: round-off in ψ grows
    with the conditioning of M + αΦ_qᵀΦ_q (η ≈ 5e-11 |ψ|), so the FD error η/h + C h²
    (ts-beuler ψ2, C ≈ 30 from D(4e-4)) is smallest, ~8e-7, at h ≈ 1e-4 — the step used —
    and measured 8.2e-7 here, 1.39e-6 on another machine, against 1e-6.  At α = 1e5, η is
    100× smaller: the FD error follows h² (5.1e-6, 1.3e-6, 3.5e-7, 4.6e-8 at h = 4e-4 …
    5e-5), so h = 5e-5 gives C h² + η/h ≈ 7.5e-8 + 1e-8, and adjoint vs direct
    (conditioning × ε ∝ α) is 1.3e-12 instead of 2.7e-10."""
    pr = problem(integrator, t_end, alpha=1e5)
    assert pr.design.names == DESIGN
    ga = pr.adjoint()
    val = pr.objective_values()          # the value whose gradient ga is
    gd = pr.direct()
    gf = fd(pr, rel=5e-5)
    for name in ("psi1", "psi2"):
        assert np.isfinite(val[name])
        e_fd = np.max(np.abs(ga[name] - gf[name]) / np.abs(gf[name]))
        scale = np.max(np.abs(gd[name]))
        e_dir = np.max(np.abs(ga[name] - gd[name])) / scale
        print(f"{integrator} {name}: adjoint vs FD max rel {e_fd:.1e}; adjoint vs direct "
              f"{e_dir:.1e} (of max |grad|)")
        assert e_fd <= 1e-6               # estimate ≤ 1e-7 (docstring)
        assert e_dir <= 1e-9              # conditioning × ε at α = 1e5: ~1e-12 measured


DP = Path(__file__).resolve().parents[1] / "configs" / "double-pendulum.toml"


@pytest.mark.parametrize("integrator", ["ts-beuler", "ts-cn", "ts-theta"])
def test_double_pendulum_tsadjoint_own_adjoint_direct_fd(integrator):
    """Every TS scheme, every objective (incl. the reaction λ): PETSc TSAdjoint, our own
    adjoint of the same scheme, the tangent sweep and central FD.

    α = 1e6: the gaps between the three exact methods are round-off amplified by the
    penalty matrix M + αΦ_qᵀΦ_q and grow ∝ α (measured on this model, ts-cn:
    1e-12 at α = 1e5, 7e-10 at 1e7, 1e-7 at 1e9) — conditioning, not a missing term."""
    cfg = load_config(DP, ["simulation.t_end=0.1", 'simulation.formulation="penalty"',
                           f'simulation.integrator="{integrator}"', "simulation.theta=0.7",
                           "simulation.penalty.alpha=1e6"])
    pr = Problem(cfg)
    ga = pr.adjoint()
    go = pr.stepper.own_adjoint(pr, pr.sys.p)
    gd = pr.direct()
    gf = fd(pr)
    for name in ga:
        scale = np.max(np.abs(ga[name]))
        e_own = np.max(np.abs(ga[name] - go[name])) / scale
        e_dir = np.max(np.abs(ga[name] - gd[name])) / scale
        e_fd = np.max(np.abs(ga[name] - gf[name])) / scale
        print(f"{integrator} {name}: TSAdjoint vs own adjoint {e_own:.1e}, vs direct {e_dir:.1e}, vs FD {e_fd:.1e}")
        assert e_own <= 1e-9
        assert e_dir <= 1e-9
        assert e_fd <= 1e-6


def test_fivebar_own_adjoint_matches_tsadjoint():
    pr = problem("ts-cn", 0.1, objectives=("psi1", "psi2", "psi3"))
    ga = pr.adjoint()
    go = pr.stepper.own_adjoint(pr, pr.sys.p)
    for name in ga:
        e = np.max(np.abs(ga[name] - go[name])) / np.max(np.abs(ga[name]))
        print(f"five-bar ts-cn {name}: TSAdjoint vs own adjoint {e:.1e}")
        assert e <= 1e-9
