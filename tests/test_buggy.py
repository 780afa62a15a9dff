"""The buggy of seed 002 §4.2 (configs/buggy-*.toml, built by configs/buggy_build.py;
data and choices in docs/buggy.md).

* topology: 11 bodies, 77 coordinates, 63 constraints, 14 DOF;
* statics: the design configuration is the static equilibrium parmbs computes — the
  tyre normal forces parmbs evaluates equal the builder's hand bookkeeping (N_f, N_r,
  summing to the total weight m g) and every body starts with zero acceleration;
* lane change: steering left first, the chassis yaws left and rolls to the right
  (outward), roll rate > 0, at a plausible size;
* gradients on a short horizon with the front wheels on the step's edge: adjoint =
  direct (1e-8 relative), central FD (1e-5), all five design variables of eq. (77).
The same gradient on 2 ranks: tests/test_buggy_mpi.py.
"""
import importlib.util

import numpy as np
import pytest

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem

from conftest import CONFIGS

STEP = str(CONFIGS / "buggy-step-descent.toml")
LANE = str(CONFIGS / "buggy-lane-change.toml")
QUIET = ["simulation.progress=false"]


def builder():
    spec = importlib.util.spec_from_file_location("buggy_build", CONFIGS / "buggy_build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def tyre_forces(pr, q, v):
    """Normal forces F_n of the four tyres (fl, fr, rl, rr) at one state."""
    sys_ = pr.sys
    g = next(g for g in sys_.forces if type(g).__name__ == "Tyre")
    qe, ve = sys_.extend(q), sys_.extend(v)
    Fn = g.forces(qe[g.qidx], ve[g.qidx], sys_.p[g.pidx])[2]
    return dict(zip(g.names, Fn))


def test_topology_and_static_equilibrium():
    pr = Problem(load_config(STEP, ["simulation.t_end=0.002"] + QUIET))
    d = pr.sys.describe()
    assert (d["spatial bodies"], d["coordinates"], d["constraints"], d["dof"]) == (11, 77, 63, 14)
    tr = pr.forward()
    b = builder()
    loads = b.static_loads()
    Fn = tyre_forces(pr, tr.q[0], tr.v[0])
    total = (b.M_C + 4 * b.M_ARM + 2 * b.M_KN + 4 * b.M_W) * b.G
    assert sum(Fn.values()) == pytest.approx(total, rel=1e-9)
    for c in ("fl", "fr"):
        assert Fn[f"tyre_{c}"] == pytest.approx(loads["Nf"], rel=1e-9)
    for c in ("rl", "rr"):
        assert Fn[f"tyre_{c}"] == pytest.approx(loads["Nr"], rel=1e-9)
    # every body's centre of mass starts unaccelerated (static equilibrium, rolling
    # without slip): ≤ 1e-7 g
    sp = pr.sys.spatial
    com = np.concatenate([tr.a[0, b_.offset:b_.offset + 3] for b_ in sp.bodies.values()])
    assert np.max(np.abs(com)) <= 1e-7 * 9.81


def _roll_angle(p):
    """Roll φ of a z-y'-x'' (yaw-pitch-roll) orientation: atan2(A₃₂, A₃₃)."""
    from parmbs.spatial.kinematics import rotation
    A = rotation(p)
    return np.arctan2(A[..., 2, 1], A[..., 2, 2])


def test_lane_change_rolls_outward():
    """First steer pulse started at t = 0, 0.6 s (its left-steering half): yaw rate > 0
    (turning left), the chassis rolls to the right: roll angle φ > 0 about the forward
    x axis, roll rate > 0 while the steer grows; |φ| below 3° (a 0.3 g manoeuvre)."""
    # the file's scheme (generalized-α, Arnold–Brüls form, ρ∞ 0.8, 5 ms: 120 steps)
    pr = Problem(load_config(LANE, ["simulation.t_end=0.6",
                                    "spatial.joints.steer_fl.function.starts=[0.0, 20.0]",
                                    "spatial.joints.steer_fr.function.starts=[0.0, 20.0]"] + QUIET))
    tr = pr.forward()
    from parmbs.spatial.kinematics import omega_global
    from parmbs.spatial.objectives import roll_rate, EX
    ch = pr.sys.spatial.bodies["chassis"]
    q, v = tr.q[:, ch.offset:ch.offset + 7], tr.v[:, ch.offset:ch.offset + 7]
    yaw_rate = omega_global(q[:, 3:7], v[:, 3:7])[:, 2]
    phi = _roll_angle(q[:, 3:7])
    rate = roll_rate(q, v, EX)
    k = len(tr.t) // 2
    print(f"t = {tr.t[k]:.2f}: yaw rate {yaw_rate[k]:.3f} rad/s, roll {np.degrees(phi[k]):.3f}°, "
          f"roll rate {rate[k]:.4f} rad/s, y = {q[k, 1]:.3f} m")
    assert yaw_rate[k] > 0 and q[-1, 1] > 0          # turning left, moving left
    assert phi[k] > 0 and phi[-1] > 0                # leaning outward (right side down)
    assert np.max(rate[: k]) > 0 and rate[k // 2] > 0
    assert np.max(np.abs(phi)) < np.radians(3.0)


# front axle at x = −0.5 m at t = 0: the step's 15-cm edge starts under the front wheels
EDGE = ["spatial.road.x0=-0.52", "simulation.t_end=0.012"] + QUIET


def test_step_gradient_adjoint_direct_fd():
    pr = Problem(load_config(STEP, EDGE))
    pr.forward()
    psi = pr.objective_values()["chassis_vertical_acc"]
    adj, dir_, fd = pr.adjoint(), pr.direct(), pr.finite_differences(1e-5)
    g = adj["chassis_vertical_acc"]
    rel_dir = np.max(np.abs(dir_["chassis_vertical_acc"] - g) / np.abs(g))      # every component
    # FD normwise (as tests/test_sensitivity.py): ∂ψ/∂c_r is 1e-4 of the largest entry on
    # this 12-ms horizon, below the FD noise; measured 1.7e-6 (step 1e-5), 1.3e-6 (1e-4);
    # a complex step of the whole run agrees with the adjoint to 2e-9 (normwise)
    rel_fd = np.max(np.abs(fd["chassis_vertical_acc"] - g)) / np.max(np.abs(g))
    print(f"ψ = {psi:.6e}; ∇ψ (k_f, c_f, k_r, c_r, m_c) = {g}; |dir−adj| {rel_dir:.1e}, |fd−adj| {rel_fd:.1e}")
    assert psi > 0 and np.all(g != 0)
    assert rel_dir <= 1e-8
    assert rel_fd <= 1e-5
