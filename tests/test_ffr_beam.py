"""Euler–Bernoulli beams in a floating frame of reference (parmbs/flexible/ffr_beam.py,
ffr_beams.py, ffr_joints.py; seed 001 §3.2): static cantilever against beam theory,
the inertia residual against Lagrange's equations of T = ½ vᵀM(q)v, the rigid-body
limit of the flexible slider-crank against the rigid mechanism, exact gradients of the
slider-crank outputs w.r.t. h_C, w_C, h_R, w_R (adjoint = direct, central FD), and
bad input.  The derivative blocks are checked by tests/test_components.py."""
import tomllib

import numpy as np
import pytest

from parmbs.config import ConfigError, load_config
from parmbs.config.loader import validate
from parmbs.flexible.ffr_beam import FfrInertia
from parmbs.flexible.static import static_equilibrium
from parmbs.model.system import System
from parmbs.sensitivity.problem import Problem

from conftest import CONFIGS

E_ST, RHO, W, H, L = 210000.0, 7.85e-9, 20.0, 30.0, 120.0        # mm, t, s, N, MPa
EI, EA = E_ST * W * H ** 3 / 12, E_ST * W * H


def cantilever(nel, angle, load):
    return System(validate(tomllib.loads(cantilever_toml(nel, angle, load)), "<test>"))


def cantilever_toml(nel, angle, load, beam="", extra=""):
    """A beam welded to ground at its root under a tip force; ``beam``: more keys of the
    [[beams]] table, ``extra``: more tables."""
    return f"""
[model]
name = "cantilever"
gravity = [0.0, 0.0]
[ground]
points = {{ O = [0.0, 0.0] }}
[[beams]]
name = "B"
type = "ffr"
length = {L}
elements = {nel}
width = {W}
height = {H}
density = {RHO}
E = {E_ST}
initial = {{ angle = {angle} }}
{beam}
[[joints]]
type = "weld"
name = "clamp"
a = "ground.O"
b = "B.root"
[[forces]]
type = "force"
name = "P"
point = "B.tip"
value = [{load[0]}, {load[1]}]
{extra}"""


@pytest.mark.parametrize("nel", [1, 3])
def test_static_cantilever_tip_matches_euler_bernoulli(nel):
    """Tip load P on a cantilever at 0.3 rad: in the body frame the tip deflects
    P_⊥L³/3EI, rotates P_⊥L²/2EI and stretches P_∥L/EA (cubic Hermite elements are
    exact for end loads), whatever the frame angle."""
    th, P = 0.3, np.array([150.0, -1000.0])
    s = cantilever(nel, th, P)
    q, _ = static_equilibrium(s, s.q_guess)
    perp = -np.sin(th) * P[0] + np.cos(th) * P[1]
    par = np.cos(th) * P[0] + np.sin(th) * P[1]
    tip = {c: q[s.ffr.coord("B", nel, c)] for c in ("u", "v", "phi")}
    assert tip["v"] == pytest.approx(perp * L ** 3 / (3 * EI), rel=1e-10)
    assert tip["phi"] == pytest.approx(perp * L ** 2 / (2 * EI), rel=1e-10)
    assert tip["u"] == pytest.approx(par * L / EA, rel=1e-10)
    assert np.allclose(q[s.ffr.frame("B")], [0.0, 0.0, th], atol=1e-12)


def test_inertia_is_lagrange_of_kinetic_energy_and_rigid_mass():
    """r = d/dt(∂T/∂v) − ∂T/∂q with T = ½vᵀM(q)v (differenced along a path), and at
    q_f = 0 the mass matrix holds m, the static moment m L/2 and the rigid inertia
    m (L² + h²)/12 + m (L/2)² about the root (the section's rotary inertia included)."""
    rng = np.random.default_rng(5)
    nel = 3
    l = L / nel
    p = np.array([[RHO, W, H, E_ST, L, nel, k] for k in range(nel)])
    g = FfrInertia([f"e{k}" for k in range(nel)], np.zeros((nel, 9)), np.zeros((nel, 7)))
    q = np.c_[rng.uniform(-1, 1, (nel, 3)), rng.uniform(-0.5, 0.5, (nel, 6))]
    v, a = rng.uniform(-3, 3, (nel, 9)), rng.uniform(-3, 3, (nel, 9))
    T = lambda q_, v_: g.energy(0.0, q_, v_, p)
    h = 1e-5
    dTdv = lambda s: np.einsum("eij,ej->ei", g.mass(q + s * v, p), v + s * a)
    ddt = (dTdv(h) - dTdv(-h)) / (2 * h)
    dTdq = np.stack([(T(q + h * e, v) - T(q - h * e, v)) / (2 * h) for e in np.eye(9)], -1)
    r = g.r(0.0, q, v, a, p)
    assert np.max(np.abs(r - (ddt - dTdq))) <= 1e-7 * np.max(np.abs(r))
    q0 = np.zeros((nel, 9))
    M = g.mass(q0, p).sum(0)                          # frame rows/columns summed over elements
    m = RHO * W * H * L
    assert M[0, 0] == pytest.approx(m, rel=1e-13) and M[1, 1] == pytest.approx(m, rel=1e-13)
    assert M[1, 2] == pytest.approx(m * L / 2, rel=1e-13)
    assert M[2, 2] == pytest.approx(m * (L ** 2 + H ** 2) / 12 + m * L ** 2 / 4, rel=1e-13)
    assert l > 0


RIGID = """
[model]
name = "slider-crank-rigid"
gravity = [0.0, 0.0]
[ground]
points = {{ O = [0.0, 0.0] }}
[[bodies]]
name = "crank"
mass = {mc}
inertia = {ic}
com = [60.0, 0.0]
points = {{ O = [0.0, 0.0], A = [120.0, 0.0] }}
independent = ["angle"]
initial_velocity = {{ angle = 471.23889803846896 }}
[[bodies]]
name = "rod"
mass = {mr}
inertia = {ir}
com = [90.0, 0.0]
points = {{ A = [0.0, 0.0], B = [180.0, 0.0] }}
initial = {{ x = 120.0 }}
[[bodies]]
name = "slider"
mass = 2.826e-4
inertia = 5.8875e-2
initial = {{ x = 300.0 }}
[[joints]]
type = "revolute"
name = "O"
a = "ground.O"
b = "crank.O"
[[joints]]
type = "revolute"
name = "A"
a = "crank.A"
b = "rod.A"
[[joints]]
type = "revolute"
name = "B"
a = "rod.B"
b = "slider.com"
[[joints]]
type = "prismatic"
name = "S"
a = "ground.O"
b = "slider.com"
[simulation]
t_end = 0.003
dt = 1e-4
integrator = "genalpha"
rho_inf = 0.55
"""


def test_rigid_limit_matches_rigid_slider_crank():
    """With E × 10⁵ the flexible slider-crank follows the rigid one (bars of mass
    ρwhL and inertia m(L² + h²)/12).  The two models discretize differently (FFR frames
    at the bar roots give a configuration-dependent mass matrix, the rigid bodies'
    centre-of-mass coordinates a constant one), so their discrete trajectories differ by
    the integration error: with the trapezoidal rule the difference shrinks 4× when dt
    halves, and its Richardson extrapolation — the difference of the two continuous
    solutions — is ~1e-6 of what either differs at dt = 1e-4."""
    mc, mr = RHO * W * H * 120.0, RHO * W * H * 180.0
    rigid = tomllib.loads(RIGID.format(mc=mc, ic=mc * (120.0 ** 2 + H ** 2) / 12, mr=mr,
                                       ir=mr * (180.0 ** 2 + H ** 2) / 12))
    diffs = []
    for dt in (1e-4, 5e-5):
        rigid["simulation"].update(integrator="trapezoidal", dt=dt)
        tr = Problem(validate(rigid, "<rigid>")).forward()
        cfg = load_config(str(CONFIGS / "slider-crank-flex.toml"),
                          ["simulation.t_end=0.003", f"simulation.dt={dt}", "simulation.integrator=trapezoidal",
                           "beams.crank.stiffness_damping=0.0", "beams.rod.stiffness_damping=0.0",
                           f"beams.crank.E={E_ST * 1e5}", f"beams.rod.E={E_ST * 1e5}"])
        pr = Problem(cfg.model_copy(update={"design": [], "objectives": []}))
        tf = pr.forward()
        s = pr.sys
        k = slice(None, None, 1 if dt == 1e-4 else 2)          # the common instants
        diffs.append(np.c_[tf.q[k, s.ffr.frame("crank")[2]] - tr.q[k, 2],
                           tf.q[k, 3 * s.body_index["slider"]] - tr.q[k, 6]])
        assert np.max(np.abs(tf.q[:, s.ffr.coord("crank", 4, "v")])) < 1e-5      # nearly rigid (mm)
    d1, d2 = (np.max(np.abs(d), axis=0) for d in diffs)
    assert np.all(d2 < 0.3 * d1)                                # second-order convergence ...
    limit = np.max(np.abs((4 * diffs[1] - diffs[0]) / 3), axis=0)
    assert np.all(limit < 1e-2 * d1)                            # ... to the same solution
    assert tr.q[-1, 2] > 1.0                                    # and the crank turned (~1.3 rad)


def rel(a, b):
    return np.max(np.abs(a - b)) / np.max(np.abs(b))


def test_slider_crank_gradients_adjoint_direct_fd():
    """∫θ_C, ∫x_S, ∫ crank node A (u, v, φ) and ∫KS(σ) dt over 20 gen-α steps:
    adjoint = direct to 1e-9, central differences (step 1e-5 relative) to 1e-6, for the
    section heights and widths of crank and rod."""
    cfg = load_config(str(CONFIGS / "slider-crank-flex.toml"), ["simulation.t_end=0.002", "simulation.dt=1e-4"])
    pr = Problem(cfg)
    assert pr.design.names == ["h_C", "w_C", "h_R", "w_R"]
    pr.forward()
    adj, dr = pr.adjoint(), pr.direct()
    p0 = pr.sys.p.copy()
    rho = pr.design.values(p0)
    fd = {k: np.zeros(4) for k in adj}
    for j in range(4):
        hs = 1e-5 * rho[j]
        vals = []
        for sgn in (1, -1):
            r = rho.copy()
            r[j] += sgn * hs
            p = pr.design.apply(p0, r)
            vals.append(pr.objective_values(pr.forward(p), p))
        for k in fd:
            fd[k][j] = (vals[0][k] - vals[1][k]) / (2 * hs)
    for k in adj:
        print(f"{k}: adjoint {adj[k]}  |adj-dir| {rel(dr[k], adj[k]):.1e}  |adj-fd| {rel(fd[k], adj[k]):.1e}")
        assert rel(dr[k], adj[k]) <= 1e-9
        assert rel(fd[k], adj[k]) <= 1e-6
    assert set(adj) == {"theta_C", "x_S", "xA_f", "yA_f", "thA_f", "ks_stress", "ks_crank_upper", "ks_crank_lower",
                        "ks_rod_upper", "ks_rod_lower"}
    assert np.all(np.abs(adj["ks_stress"]) > 0)    # every section dimension moves the stress


def test_gradients_wrt_length_modulus_density():
    """The other beam parameters are design variables too: the crank length (which moves
    the assembled initial state and the joint points), the rod's E and the crank's ρ —
    adjoint = direct, central FD column by column, over 5 steps."""
    cfg = load_config(str(CONFIGS / "slider-crank-flex.toml"), ["simulation.t_end=0.0005", "simulation.dt=1e-4"])
    extra = [cfg.design[0].model_copy(update={"name": n, "path": p}) for n, p in
             (("L_C", "beams.crank.length"), ("E_R", "beams.rod.E"), ("rho_C", "beams.crank.density"))]
    pr = Problem(cfg.model_copy(update={"design": extra}))
    pr.forward()
    adj, dr = pr.adjoint(), pr.direct()
    p0 = pr.sys.p.copy()
    rho = pr.design.values(p0)
    for j in range(3):
        hs = 1e-5 * rho[j]
        vals = []
        for sgn in (1, -1):
            r = rho.copy()
            r[j] += sgn * hs
            p = pr.design.apply(p0, r)
            vals.append(pr.objective_values(pr.forward(p), p))
        for k in adj:
            fd = (vals[0][k] - vals[1][k]) / (2 * hs)
            assert abs(dr[k][j] - adj[k][j]) <= 1e-9 * abs(adj[k][j]), (k, j)
            assert abs(fd - adj[k][j]) <= 1e-6 * abs(adj[k][j]), (k, j, fd, adj[k][j])


def test_complex_step_of_the_whole_scheme_equals_adjoint():
    """The complex step of the whole discrete gen-α run (no truncation error) equals the
    adjoint to 1e-11 for all six outputs: every hand-written block, the analytic KS
    partials and the initial assembly are exact."""
    from parmbs.sensitivity.complex_step import complex_step_gradient
    pr = Problem(load_config(str(CONFIGS / "slider-crank-flex.toml"), ["simulation.t_end=0.0005", "simulation.dt=1e-4"]))
    pr.forward()
    adj = pr.adjoint()
    cs = complex_step_gradient(pr)
    for k in adj:
        assert rel(cs[k], adj[k]) <= 1e-11, k


@pytest.mark.parametrize("change,key", [
    (("[[joints]]\ntype = \"revolute\"\nname = \"A\"\na = \"crank.tip\"",
      "[[joints]]\ntype = \"revolute\"\nname = \"A\"\na = \"crank.mid\""), "joints.A.a"),
    (("elements = 4\nwidth = 20.0\nheight = 30.0\ndensity = 7.85e-9\nE = 210000.0\ninitial = { x = 0.0",
      "elements = 4\nwidth = 20.0\nheight = 30.0\ndensity = 7.85e-9\nE = 210000.0\npoints = { mid = 50.0 }\n"
      "initial = { x = 0.0"), None),
    (("a = \"ground.O\"\nb = \"slider.com\"\naxis", "a = \"ground.O\"\nb = \"rod.tip\"\naxis"), "joints.S.b"),
])
def test_config_errors(tmp_path, change, key):
    """A joint at an FFR point that is not a node, and a prismatic joint on an FFR beam,
    are config errors naming the key."""
    txt = (CONFIGS / "slider-crank-flex.toml").read_text()
    old, new = change
    assert old in txt
    txt = txt.replace(old, new)
    if key is None:                      # point 'mid' at 50 mm is not a node (30, 60, ...)
        txt = txt.replace('a = "crank.tip"', 'a = "crank.mid"')
        key = "joints.A.a"
    f = tmp_path / "c.toml"
    f.write_text(txt)
    (tmp_path / "slider_crank_flex_outputs.py").write_text((CONFIGS / "slider_crank_flex_outputs.py").read_text())
    with pytest.raises(ConfigError) as e:
        load_config(str(f))
    assert e.value.key == key


def test_cli_info_and_hdf5_names(tmp_path, capsys):
    """``parmbs info`` lists the FFR beams; the HDF5 trajectory names every coordinate
    (frame x, y, angle and nodal u, v, phi)."""
    import h5py
    from parmbs import cli
    cfg = str(CONFIGS / "slider-crank-flex.toml")
    assert cli.main(["info", cfg]) == 0
    assert "FFR beams     2: crank (4 elements, 15 coordinates" in capsys.readouterr().out
    out = tmp_path / "run.h5"
    assert cli.main(["simulate", cfg, "-o", str(out), "--set", "simulation.t_end=0.0003", "--set", "simulation.dt=1e-4",
                     "--set", "simulation.progress=false"]) == 0
    from parmbs.io.hdf5 import coordinate_names
    names = coordinate_names(System(load_config(cfg)))
    assert names[:6] == ["slider.x", "slider.y", "slider.angle", "crank.x", "crank.y", "crank.angle"]
    assert names[6:9] == ["crank.node1.u", "crank.node1.v", "crank.node1.phi"] and names[-1] == "rod.node4.phi"
    with h5py.File(out) as f:
        assert f["trajectory/q"].shape == (4, 33)


def test_driven_ffr_crank_follows_its_driver():
    """A driver on an FFR frame angle (θ = 0.3 + 5000 t³) with the root pinned: θ follows
    the polynomial exactly at every step, and the slowly ramped angular acceleration
    α = 30000 t bends the beam quasi-statically: tip v = −11 ρA α L⁵/(120 EI) (the
    inertial line load −ρA α x on a cantilever).  The initial assembly needs no
    independent coordinate."""
    txt = f"""
[model]
name = "driven"
gravity = [0.0, 0.0]
[ground]
points = {{ O = [0.0, 0.0] }}
[[beams]]
name = "C"
type = "ffr"
length = {L}
elements = 3
width = {W}
height = {H}
density = {RHO}
E = {E_ST}
initial = {{ angle = 0.3 }}
[[joints]]
type = "revolute"
name = "O"
a = "ground.O"
b = "C.root"
[[joints]]
type = "driver"
name = "motor"
coordinate = "C.angle"
function = {{ type = "polynomial", coefficients = [0.3, 0.0, 0.0, 5000.0] }}
[simulation]
t_end = 0.004
dt = 1e-4
integrator = "genalpha"
rho_inf = 0.55
"""
    pr = Problem(validate(tomllib.loads(txt), "<driven>"))
    tr = pr.forward()
    s = pr.sys
    th = tr.q[:, s.ffr.frame("C")[2]]
    assert np.max(np.abs(th - (0.3 + 5000.0 * tr.t ** 3))) < 1e-12
    v_tip = tr.q[-1, s.ffr.coord("C", 3, "v")]
    # clamped-free beam under the inertial line load −ρA α x: tip deflection 11 q₀ L⁴/(120 EI)
    expect = -11.0 * RHO * W * H * 30000.0 * tr.t[-1] * L ** 5 / (120.0 * EI)
    assert v_tip == pytest.approx(expect, rel=0.02)
