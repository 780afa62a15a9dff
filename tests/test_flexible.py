"""Planar ANCF beams (parmbs/flexible): element matrices and the seed-000 errata,
static limits against Euler–Bernoulli, joints between beams and rigid bodies, energy of
free motion, exact gradients on the flexible pendulum, and mesh/dt convergence."""
import tomllib

import numpy as np
import pytest

from parmbs.config import ConfigError, load_config
from parmbs.config.loader import validate
from parmbs.flexible import ancf
from parmbs.flexible.static import static_equilibrium
from parmbs.model.evaluation import StateEval
from parmbs.model.system import System
from parmbs.sensitivity.problem import Problem

from conftest import CONFIGS

E_ST, RHO, W, H = 2.1e11, 7800.0, 0.02, 0.05
EI, EA = E_ST * W * H ** 3 / 12, E_ST * W * H


def config(body, gravity=(0.0, 0.0), sim=""):
    txt = f"""
[model]
name = "t"
gravity = [{gravity[0]}, {gravity[1]}]
[ground]
points = {{ O = [0.0, 0.0] }}
{body}
{sim}
"""
    return validate(tomllib.loads(txt), "<test>")


def beam(name, nel, length=2.0, elastic="seed", extra=""):
    return f"""
[[beams]]
name = "{name}"
length = {length}
elements = {nel}
width = {W}
height = {H}
density = {RHO}
E = {E_ST}
elastic = "{elastic}"
{extra}
"""


def joint(kind, name, a, b):
    return f'[[joints]]\ntype = "{kind}"\nname = "{name}"\na = "{a}"\nb = "{b}"\n'


def tip_force(point, fx, fy):
    return f'[[forces]]\ntype = "force"\nname = "F"\npoint = "{point}"\nvalue = [{fx}, {fy}]\n'


def x0(system):
    from parmbs.integrators.newmark import make_stepper
    return make_stepper(system, system.config.simulation).initial(0.0, system.p)


# -- element level ---------------------------------------------------------------------------


def test_element_matrices_and_errata():
    l = np.array([0.7])
    P = ancf.axial4(l)[0] * l[0]
    assert P[3, 3] == pytest.approx(2 * l[0] ** 2 / 15) and P[1, 1] == pytest.approx(P[3, 3])   # E1
    # P and K are ∫S′ᵀS′ and ∫S″ᵀS″ (Gauss quadrature of the shape functions)
    xg, wg = np.polynomial.legendre.leggauss(6)
    xi = 0.5 * (xg + 1)
    d1 = np.stack(ancf.dshape(xi, l[0]), -1)
    dd = np.stack([(-6 + 12 * xi) / l[0] ** 2, (-4 + 6 * xi) / l[0], (6 - 12 * xi) / l[0] ** 2, (6 * xi - 2) / l[0]], -1)
    jac = 0.5 * l[0] * wg
    assert np.allclose(ancf.axial4(l)[0], (d1 * jac[:, None]).T @ d1)
    assert np.allclose(ancf.bend4(l)[0], (dd * jac[:, None]).T @ dd)
    # bending stiffness EI/l³ without ε (E2): an unstretched bent element resists bending
    p = np.array([[RHO, W, H, E_ST, 0.7, 1.0]])
    q = np.array([[0, 0, 1, 0, 0.7, 0, 1, 0.0]])
    q[0, 7] = 0.1                                    # rotate the end slope: ε = 0, r ≠ 0
    r = ancf.AncfElastic(["e"], [range(8)], [range(6)]).r(0, q, q, q, p)
    assert np.allclose(r, EI * ancf.apply4(ancf.bend4(l), q))
    # tangent of the seed's force: exact and non-symmetric when bent (E3); conservative: symmetric
    rng = np.random.default_rng(0)
    qb = q + 0.05 * rng.standard_normal(q.shape)
    Js = ancf.AncfElastic(["e"], [range(8)], [range(6)]).r_q(0, qb, qb, qb, p)[0]
    Jc = ancf.AncfElasticConservative(["e"], [range(8)], [range(6)]).r_q(0, qb, qb, qb, p)[0]
    assert np.max(np.abs(Js - Js.T)) > 1e-3 * np.max(np.abs(Js))
    assert np.max(np.abs(Jc - Jc.T)) < 1e-12 * np.max(np.abs(Jc))


def test_mass_matrix_integrates_to_total_mass_and_inertia():
    """Rigid translation: vᵀMv = m|u|²; rigid rotation about the root: vᵀMv = ω²ρAL³/3
    (the cubic interpolation carries rigid motion exactly)."""
    L, nel = 1.3, 3
    s = System(config(beam("B", nel, L, extra="independent = [\"x\", \"y\", \"angle\"]")))
    M = StateEval(s, 0.0, s.q_guess, 0 * s.q_guess, 0 * s.q_guess, np.zeros(s.m), s.p).Ma().dense()
    m = RHO * W * H * L
    u = np.zeros(s.n)
    u[0::4] = 1.0
    assert u @ M @ u == pytest.approx(m, rel=1e-13)
    w = np.zeros(s.n)                                  # ω = 1 about the root of the beam along x
    xk = np.linspace(0, L, nel + 1)
    w[1::4] = xk
    w[3::4] = 1.0
    assert w @ M @ w == pytest.approx(m * L ** 2 / 3, rel=1e-13)


# -- static limits ---------------------------------------------------------------------------------


@pytest.mark.parametrize("elastic", ["seed", "conservative"])
@pytest.mark.parametrize("nel", [1, 3])
def test_cantilever_tip_load_matches_euler_bernoulli(nel, elastic):
    """Tip load P: δ = PL³/(3EI) (Hermite cubics are exact for it; geometric
    nonlinearity is O((δ/L)²)); axial load: PL/(EA)."""
    L, P = 2.0, 0.5
    c = config(beam("B", nel, L, elastic) + joint("weld", "clamp", "ground.O", "B.root") + tip_force("B.tip", 0.0, -P))
    s = System(c)
    q, lam = static_equilibrium(s, x0(s)[0])
    delta = -q[-3]
    print(f"nel={nel} {elastic}: tip deflection {delta:.10e}, PL^3/3EI {P * L ** 3 / (3 * EI):.10e}")
    assert delta == pytest.approx(P * L ** 3 / (3 * EI), rel=1e-6)
    assert lam[1] == pytest.approx(-P, rel=1e-9) or lam[1] == pytest.approx(P, rel=1e-9)   # reaction
    c = config(beam("B", nel, L, elastic) + joint("weld", "clamp", "ground.O", "B.root") + tip_force("B.tip", 1e4, 0.0))
    s = System(c)
    q, _ = static_equilibrium(s, x0(s)[0])
    assert q[-4] - L == pytest.approx(1e4 * L / EA, rel=1e-3)


def test_welds_beam_beam_and_rigid_beam_equal_one_beam():
    """A beam split in two welded halves, or clamped through a rigid body welded to
    ground, deflects exactly like the one-piece beam."""
    L, P = 2.0, 200.0
    load = tip_force("B2.tip", 0.0, -P)
    one = config(beam("B2", 4, L) + joint("weld", "clamp", "ground.O", "B2.root") + load)
    two = config(beam("B1", 2, L / 2) + beam("B2", 2, L / 2, extra="initial = { x = 1.0 }")
                 + joint("weld", "clamp", "ground.O", "B1.root") + joint("weld", "mid", "B1.tip", "B2.root") + load)
    rigid = config("""
[[bodies]]
name = "R"
mass = 1.0
inertia = 1.0
points = { P = [0.5, 0.0] }
initial = { x = -0.5 }
""" + beam("B2", 4, L) + joint("weld", "fix", "ground.O", "R.P") + joint("weld", "clamp", "R.P", "B2.root") + load)
    tips = []
    for c in (one, two, rigid):
        s = System(c)
        q, _ = static_equilibrium(s, x0(s)[0], steps=2)
        tips.append(q[-4:-2])
    print("tip positions (one piece, two welded halves, clamped via a rigid body):", tips)
    assert abs(tips[0][1]) > 0.1 * P * L ** 3 / (3 * EI)
    assert np.allclose(tips[1], tips[0], atol=1e-12) and np.allclose(tips[2], tips[0], atol=1e-12)


# -- dynamics ----------------------------------------------------------------------------------------


def free_beam(omega, dt, t_end, elastic="conservative"):
    c = config(beam("B", 4, 1.0, elastic, extra=f"""
initial = {{ x = 0.1, y = 0.2, angle = 0.3 }}
independent = ["x", "y", "angle"]
initial_velocity = {{ x = 1.0, y = -0.5, angle = {omega} }}
"""), sim=f"[simulation]\nt_end = {t_end}\ndt = {dt}\n")
    pr = Problem(c)
    tr = pr.forward()
    E = np.array([StateEval(pr.sys, t, *tr.x(k), pr.sys.p).energy() for k, t in enumerate(tr.t)])
    return tr, E


def test_free_motion_conserves_energy():
    tr, E = free_beam(0.0, 1e-3, 0.1)                 # translation: exact, the beam stays straight
    assert np.max(np.abs(E - E[0])) <= 1e-8 * E[0]   # stiff axial mode: solve accuracy
    assert np.allclose(tr.q[-1][:2], [0.1 + 0.1, 0.2 - 0.05], atol=1e-10)
    drift = []
    for dt in (2e-3, 1e-3):                           # spinning: centrifugal stretch, O(h²) energy error
        tr, E = free_beam(20.0, dt, 0.1)
        drift.append(np.max(np.abs(E - E[0])) / E[0])
    print(f"spinning free beam, relative energy error dt=2e-3, 1e-3: {drift}")
    assert drift[1] < 2e-4 and drift[0] / drift[1] > 3.0


def test_beam_double_pendulum_revolute_between_beams():
    c = config(beam("B1", 2, 1.0, "conservative", extra='independent = ["angle"]')
               + beam("B2", 2, 1.0, "conservative", extra='initial = { x = 1.0 }\nindependent = ["angle"]')
               + joint("revolute", "pin", "ground.O", "B1.root") + joint("revolute", "knee", "B1.tip", "B2.root"),
               gravity=(0.0, -9.81), sim="[simulation]\nt_end = 0.1\ndt = 1e-3\n")
    pr = Problem(c)
    tr = pr.forward()
    ev = StateEval(pr.sys, tr.t[-1], *tr.x(tr.steps), pr.sys.p)
    assert np.max(np.abs(ev.phi())) < 1e-12
    assert tr.q[-1][pr.sys.beams.beams["B2"].node(2)[1]] < -0.01     # it falls
    ev0 = StateEval(pr.sys, 0.0, *tr.x(0), pr.sys.p)
    kinetic = sum(np.sum(g.energy(0, q, v, p)) for g, q, v, a, p in ev.F if g.inertial)
    print(f"energy change {ev.energy() - ev0.energy():.2e}, kinetic energy {kinetic:.2e}")
    assert kinetic > 0.1 and abs(ev.energy() - ev0.energy()) < 1e-4 * kinetic


# -- gradients on the flexible pendulum ----------------------------------------------------------------


def rel(a, b):
    return np.max(np.abs(a - b)) / np.max(np.abs(b))


def with_tip_deflection(cfg):
    """The config plus the seed's pointwise tip deflection δ(t_end) (``terminal =
    "deflection"``), which the shipped file leaves out (its gradient is not dt-converged
    over the file's 4 s: configs/flexible-pendulum.toml)."""
    o = cfg.objectives[0].model_copy(update={"name": "tip_deflection", "terminal": "deflection",
                                             "integrand": None})
    return cfg.model_copy(update={"objectives": [o] + list(cfg.objectives)})


def central_fd(pr, step=1e-6):
    """Central differences with steps relative to each design value."""
    p0 = pr.sys.p.copy()
    rho = pr.design.values(p0)
    out = {ob.name: np.zeros(len(rho)) for ob in pr.objectives}
    for j in range(len(rho)):
        hs = step * abs(rho[j])
        vals = []
        for sgn in (1, -1):
            r = rho.copy()
            r[j] += sgn * hs
            p = pr.design.apply(p0, r)
            vals.append(pr.objective_values(pr.forward(p), p))
        for k in out:
            out[k][j] = (vals[0][k] - vals[1][k]) / (2 * hs)
    pr.forward(p0)
    return out


@pytest.mark.parametrize("integrator", ["trapezoidal", "genalpha"])
def test_flexible_pendulum_adjoint_direct_fd(integrator):
    cfg = load_config(str(CONFIGS / "flexible-pendulum.toml"),
                      ["simulation.t_end=0.05", f"simulation.integrator={integrator}", "simulation.rho_inf=0.8"])
    extra = cfg.design[0].model_copy(update={"name": "L", "path": "beams.beam.length"})
    pr = Problem(with_tip_deflection(cfg).model_copy(update={"design": cfg.design + [extra]}))
    assert pr.design.names == ["h", "rho", "E", "L"]
    pr.forward()
    adj, dir_ = pr.adjoint(), pr.direct()
    fd = central_fd(pr, 1e-5) if integrator == "trapezoidal" else None
    for k in adj:
        print(f"{integrator}/{k}: adjoint {adj[k]}  |adj-dir| {rel(dir_[k], adj[k]):.1e}"
              + (f"  |adj-fd| {rel(fd[k], adj[k]):.1e}" if fd else ""))
        assert rel(dir_[k], adj[k]) <= 1e-9
        if fd:
            assert rel(fd[k], adj[k]) <= 1e-6
    assert abs(adj["tip_deflection"][0]) > 0.1            # the section matters


def test_mesh_and_dt_convergence_of_tip_deflection():
    """Tip deflection at t = 0.3 s: second order in dt (2 elements), and converging under
    mesh refinement (the longer study: benchmarks/flexible_pendulum.py)."""
    def tip(nel, dt):
        pr = Problem(with_tip_deflection(load_config(str(CONFIGS / "flexible-pendulum.toml"),
                                 ["simulation.t_end=0.3", f"simulation.dt={dt}", f"beams.beam.elements={nel}"])))
        pr.forward()
        return pr.objective_values()["tip_deflection"]
    dts = [tip(2, dt) for dt in (4e-3, 2e-3, 1e-3)]
    mesh = [tip(n, 2e-3) for n in (2, 4, 8)]
    dd, dm = np.abs(np.diff(dts)), np.abs(np.diff(mesh))
    print(f"dt 4e-3, 2e-3, 1e-3 (2 elements): {dts}, differences {dd}, ratio {dd[0] / dd[1]:.2f}")
    print(f"elements 2, 4, 8 (dt 2e-3): {mesh}, differences {dm}, ratio {dm[0] / dm[1]:.2f}")
    assert dd[0] / dd[1] > 3.0 and dm[0] / dm[1] > 3.0


# -- config ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("change,key", [
    (('b = "beam.root"', 'b = "beam.node9"'), "joints.pin.b"),
    (('type = "revolute"', 'type = "prismatic"'), "joints.pin.b"),
    (("side = 0.05", "side = 0.05\nwidth = 0.1"), "beams.beam"),
    (('point = "beam.tip"', 'point = "ground.A"'), "objectives.tip_deflection_sq.point"),
    (('name = "beam"', 'name = "beam"\npoints = { tip = 0.5 }'), "beams.beam.points"),
    (('name = "beam"', 'name = "beam"\npoints = { P = 1.5 }'), "beams.beam"),
    (('path = "beams.beam.density"', 'path = "beams.beam.colour"'), "design.rho.path"),
])
def test_config_errors(tmp_path, change, key):
    text = (CONFIGS / "flexible-pendulum.toml").read_text()
    assert change[0] in text
    f = tmp_path / "bad.toml"
    f.write_text(text.replace(change[0], change[1], 1))
    with pytest.raises(ConfigError) as e:
        load_config(str(f))
    assert e.value.key == key, str(e.value)


def test_design_paths_and_point_at_arclength(tmp_path):
    cfg = load_config(str(CONFIGS / "flexible-pendulum.toml"), ["beams.beam.E=2e7"])
    assert cfg.resolve_path("beams.beam.E") == 2e7 and cfg.resolve_path("beams.beam.side") == 0.05
    text = (CONFIGS / "flexible-pendulum.toml").read_text().replace('name = "beam"', 'name = "beam"\npoints = { P = 0.5 }')
    f = tmp_path / "p.toml"
    f.write_text(text)
    s = System(load_config(str(f)))
    qe, pp = s.beams.point("beam.P")
    assert qe == s.beams.beams["beam"].element(2)
    r = np.einsum("ij,j->i", ancf.beam_point_matrices(s.p[pp]), s.q_guess[qe])
    assert np.allclose(r, [0.5, 0.0], atol=1e-15)
