"""The Bombardier Iltis of seed 004 §5.2 (configs/iltis.toml, docs/iltis.md).

* Counts of §5.2.1 on the model parmbs builds: 140 coordinates, 132 constraint rows of
  rank 126 (6 redundant — the rear four-bars of revolutes), 14 DOF.
* The nominal configuration of tables 5.3–5.6 is close to static equilibrium (a sign
  or a lost factor in the leaf spring, eq. 5.3, would accelerate the 1260 kg chassis
  by ~17 m/s²), and the straight run stays symmetric.
* ψ4 = ∫ z̈⁴ (eq. 5.13) and ψ = ∫ z̈² are the quadratures of the chassis CG's z̈.
* Gradients of ψ = ∫ z̈²_chassis dt for the six suspension parameters of §5.2.3
  (k_L1, k_L2, c1, c2, k1, k2) on a short horizon with the front wheels rolling down
  the smoothed step: adjoint = direct to 1e-8 and = central differences to 1e-5,
  component by component.
"""
import numpy as np
import pytest

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem

from conftest import CONFIGS

SHIPPED = CONFIGS / "iltis.toml"


def _fixed_step_copy():
    """The shipped file without its ``simulation.adapt`` line: these tests check the
    model and its gradients over a few fixed 5 ms steps (with the file's error-controlled
    steps the run chooses its own and FD would have to replay them; adaptive
    gradients are tests/test_adaptive.py's).  A --set cannot remove a table."""
    import atexit
    import os
    import tempfile
    lines = SHIPPED.read_text().splitlines(keepends=True)
    kept = [ln for ln in lines if not ln.startswith("adapt = ")]
    assert len(kept) == len(lines) - 1, "configs/iltis.toml: expected one 'adapt = ' line"
    f = tempfile.NamedTemporaryFile("w", suffix="-iltis.toml", delete=False)
    f.write("".join(kept))
    f.close()
    atexit.register(os.unlink, f.name)
    return f.name


CFG = _fixed_step_copy()
# 8 steps of 5 ms with the step moved to x0 = 1.0 m: the front wheel centres (x = 0.97)
# are on the step's ramp from t = 6 ms on, so the tyres, the struts (in and beyond
# the breakpoints of eq. 5.5b) and the linked design parameters all act.
SHORT = ["simulation.t_end=0.04", "simulation.dt=5e-3", "spatial.road.x0=1.0"]
# Central-difference steps relative to each variable.  The strut stiffnesses k1, k2
# enter eq. 5.5a as k·s with s ≈ 0.44 m: ψ is strongly curved in them (1e-4·k moves the
# strut force by 1.2 kN), so they need a small step; ψ is nearly linear in the others,
# where a larger step keeps the rounding noise of the Newton solutions out.
FD_STEP = {"k_L1": 1e-4, "k_L2": 1e-4, "c1": 1e-4, "c2": 1e-4, "k1": 1e-7, "k2": 1e-7}


@pytest.fixture(scope="module")
def short():
    pr = Problem(load_config(CFG, SHORT))
    pr.forward()
    return pr


def test_counts_of_seed004():
    pr = Problem(load_config(CFG, ["simulation.t_end=0.005", "simulation.dt=5e-3"]))
    s = pr.sys
    red = s.redundancy
    assert s.n == 140
    assert red.m_full == 132 and red.rank == 126 and s.m == 126
    assert s.n - s.m == 14
    dropped = red.dropped_names
    assert len(dropped) == 6
    rear_loop = ("arm_pivot_r", "arm_hub_r", "leaf_pivot_r", "leaf_hub_r")
    assert all(name.startswith(rear_loop) for name in dropped), dropped
    assert sum("_rl[" in d for d in dropped) == 3 and sum("_rr[" in d for d in dropped) == 3


def test_nominal_state_near_equilibrium_and_symmetric(short):
    from parmbs.io.hdf5 import coordinate_names
    idx = {n: i for i, n in enumerate(coordinate_names(short.sys))}
    traj = short.traj
    a0 = np.asarray(traj.a)[0]
    assert abs(a0[idx["chassis.z"]]) < 2.0                      # m/s², vs g = 9.81
    q = np.asarray(traj.q)
    assert np.max(np.abs(q[:, idx["chassis.y"]])) < 1e-9        # left/right symmetric road
    assert np.max(np.abs(q[:, idx["chassis.e1"]])) < 1e-9       # no roll
    assert q[-1, idx["chassis.x"]] == pytest.approx(5.0 * 0.04, rel=2e-2)   # ~5 m/s (the ramp pulls)


def test_gradients_adjoint_direct_fd(short):
    pr = short
    adj = pr.adjoint()["psi"]
    dirc = pr.direct()["psi"]
    names = pr.design.names
    assert names == ["k_L1", "k_L2", "c1", "c2", "k1", "k2"]
    assert np.all(np.abs(adj) > 0)
    np.testing.assert_allclose(dirc, adj, rtol=1e-8, atol=0)
    p0 = pr.sys.p.copy()
    rho = pr.design.values(p0)
    fd = np.empty(len(rho))
    for j, name in enumerate(names):
        h = FD_STEP[name] * abs(rho[j])
        vals = []
        for s in (+1, -1):
            r = rho.copy()
            r[j] += s * h
            p = pr.design.apply(p0, r)
            vals.append(pr.objective_values(pr.forward(p), p)["psi"])
        fd[j] = (vals[0] - vals[1]) / (2 * h)
    print("adjoint", adj, "\nFD     ", fd, "\nrel    ", np.abs(fd - adj) / np.abs(adj))
    np.testing.assert_allclose(fd, adj, rtol=1e-5, atol=0)


def test_fourth_power_objective(short):
    """ψ4 = ∫ z̈⁴ (seed 004 eq. 5.13) uses the same quadrature as ψ = ∫ z̈² on the chassis
    CG's vertical acceleration, and its adjoint gradient equals the direct one."""
    from parmbs.io.hdf5 import coordinate_names
    from parmbs.integrators.trajectory import quadrature_weights
    pr = short
    iz = coordinate_names(pr.sys).index("chassis.z")
    az = np.asarray(pr.traj.a)[:, iz]
    w = quadrature_weights(len(az) - 1, pr.config.simulation.dt)
    vals = pr.objective_values(pr.traj)
    assert vals["psi"] == pytest.approx(np.dot(w, az ** 2), rel=1e-12)
    assert vals["psi4"] == pytest.approx(np.dot(w, az ** 4), rel=1e-12)
    np.testing.assert_allclose(pr.direct()["psi4"], pr.adjoint()["psi4"], rtol=1e-8, atol=0)
