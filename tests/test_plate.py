"""Plane-stress plates (parmbs/flexible/plate*.py): static element checks, the element
density field as design variables, adjoint vs direct vs central differences, timing."""
import copy
import time
import tomllib

import numpy as np
import pytest

from parmbs.config.loader import validate
from parmbs.config.errors import ConfigError
from parmbs.flexible.plate import PlateElastic, PlateInertia, PlateGravity, density_factor
from parmbs.model.assembly import scatter_add
from parmbs.model.component import cs_jacobian
from parmbs.model.system import System, ModelError
from parmbs.sensitivity.problem import Problem
from gradient_checks import central_difference

CONFIG = "configs/plate-pendulum.toml"


def base(**plate):
    with open(CONFIG, "rb") as f:
        data = tomllib.load(f)
    data["plates"][0].update(plate)
    return data


def model(data):
    return System(validate(copy.deepcopy(data), CONFIG))


def group(sys, cls):
    return next(g for g in sys.forces if type(g) is cls)


def reference(sys):
    """Undeformed nodal positions X (n,) of the (single) plate at the origin, angle 0."""
    pl = next(iter(sys.plates.plates.values()))
    X = np.zeros(sys.n)
    for j in range(pl.ny + 1):
        for i in range(pl.nx + 1):
            X[pl.node(i, j)] = pl.reference(i, j)
    return pl, X


def elastic_force(sys, q, p=None):
    p = sys.p if p is None else p
    g = group(sys, PlateElastic)
    qe = sys.extend(q)
    return scatter_add(sys.n + 3, g.qidx, g.r(0.0, qe[g.qidx], None, None, p[g.pidx]))[:sys.n]


def test_patch_uniform_stretch():
    """F = diag(1+ε, 1): interior nodes carry no force, the right edge carries
    P_xx·Ly·t with P = F S (SVK, plane stress), and → E/(1−ν²)·ε·Ly·t for small ε."""
    sys = model(base(nx=3, ny=2, points={"tip": [3, 0]}))
    pl, X = reference(sys)
    c = pl.cfg
    for eps in (1e-6, 0.05):
        q = X.copy()
        q[0::2] *= 1.0 + eps
        f = elastic_force(sys, q)
        N = pl.node_array()
        interior = N[1:-1, 1:-1].reshape(-1)
        assert np.max(np.abs(f[interior])) < 1e-9 * np.max(np.abs(f))
        Exx = eps + 0.5 * eps ** 2
        Pxx = (1 + eps) * c.E / (1 - c.nu ** 2) * Exx
        right = f[N[:, -1, 0]].sum()
        assert right == pytest.approx(Pxx * c.size[1] * c.thickness, rel=1e-12)
        assert f[N[:, 0, 0]].sum() == pytest.approx(-right, rel=1e-12)
        if eps < 1e-3:      # linear limit: E ε of plane stress (ε_yy = 0)
            assert right == pytest.approx(c.E / (1 - c.nu ** 2) * eps * c.size[1] * c.thickness, rel=1e-5)
    print(f"\npatch test: right-edge force {right:.12e} vs P_xx Ly t {Pxx * c.size[1] * c.thickness:.12e}")


def test_rigid_rotation_has_no_elastic_force():
    sys = model(base(nx=4, ny=2, points={"tip": [4, 0]}))
    pl, X = reference(sys)
    th = 1.234
    R = np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]])
    q = (X.reshape(-1, 2) @ R.T + np.array([0.3, -2.0])).reshape(-1)
    scale = pl.cfg.E * pl.cfg.thickness * pl.cfg.size[1]
    assert np.max(np.abs(elastic_force(sys, q))) < 1e-12 * scale
    g = group(sys, PlateElastic)
    U = g.energy(0.0, sys.extend(q)[g.qidx], None, sys.p[g.pidx])
    assert np.max(np.abs(U)) < 1e-20 * scale
    # and a rotated *stretched* state has the stretched forces, rotated
    q2 = X.copy()
    q2[0::2] *= 1.01
    f2 = elastic_force(sys, q2).reshape(-1, 2)
    f2r = elastic_force(sys, (q2.reshape(-1, 2) @ R.T).reshape(-1)).reshape(-1, 2)
    assert np.allclose(f2r, f2 @ R.T, rtol=0, atol=1e-10 * np.max(np.abs(f2)))


@pytest.mark.parametrize("law", ["seed003", "linear"])
def test_total_mass_and_gravity(law):
    sys = model(base(density_law=law))
    c = sys.config.plates[0]
    V = c.size[0] * c.size[1] * c.thickness
    g = group(sys, PlateInertia)
    M = g.mass(sys.p[g.pidx])
    one = np.zeros(8)
    one[0::2] = 1.0
    assert np.einsum("i,eij,j->", one, M, one) == pytest.approx(c.rho0 * V, rel=1e-13)
    gg = group(sys, PlateGravity)
    Q = -gg.r(0.0, np.zeros((1, 8)), None, None, sys.p[gg.pidx])
    assert Q[:, 1::2].sum() == pytest.approx(-9.81 * c.rho0 * V, rel=1e-13)
    # x = 0.05 in every element: the law's lower branch (seed 003: 1e5 x⁶)
    p = sys.p.copy()
    p[sys.plates.plates["P"].density] = 0.05
    factor = 1e5 * 0.05 ** 6 if law == "seed003" else 0.05
    assert np.einsum("i,eij,j->", one, g.mass(p[g.pidx]), one) == pytest.approx(factor * c.rho0 * V, rel=1e-13)


def test_density_law_kink():
    x = np.array([0.01, 0.09, 0.1 - 1e-12, 0.1, 0.11, 1.0])
    f = density_factor(x, "seed003")
    assert f[0] == pytest.approx(1e-7) and f[-1] == 1.0
    assert f[2] == pytest.approx(f[3], rel=1e-9)                     # continuous at 0.1
    d = cs_jacobian(lambda y: density_factor(y, "seed003"), [x[:, None]], 0)[:, 0, 0]
    assert d[1] == pytest.approx(6e5 * 0.09 ** 5) and d[4] == 1.0     # slope 6ρ0 below, ρ0 above
    assert d[2] == pytest.approx(6.0, rel=1e-9) and d[3] == 1.0
    assert np.all(density_factor(x, "linear") == x)


def test_simp_scaling_of_stiffness():
    sys = model(base(nx=2, ny=2, points={"tip": [2, 0]}))
    pl, X = reference(sys)
    rng = np.random.default_rng(1)
    q = X + 1e-3 * rng.standard_normal(sys.n)
    g = group(sys, PlateElastic)
    qe, p = sys.extend(q)[g.qidx], sys.p.copy()
    K1, f1 = g.jacobians(0.0, qe, None, None, p[g.pidx])[0], g.r(0.0, qe, None, None, p[g.pidx])
    p[pl.density[1]] = 0.5
    K2, f2 = g.jacobians(0.0, qe, None, None, p[g.pidx])[0], g.r(0.0, qe, None, None, p[g.pidx])
    assert np.allclose(f2[1], 0.125 * f1[1], rtol=1e-13, atol=0) and np.array_equal(f2[0], f1[0])
    assert np.allclose(K2[1], 0.125 * K1[1], rtol=1e-13, atol=0)
    # and the linear-elastic limit: K at X is symmetric with 3 rigid modes
    K = g.jacobians(0.0, sys.extend(X)[g.qidx], None, None, sys.p[g.pidx])[0]
    assert np.allclose(K, np.swapaxes(K, -1, -2), atol=1e-9 * np.abs(K).max())
    assert np.sum(np.abs(np.linalg.eigvalsh(K[0])) < 1e-9 * np.abs(K).max()) == 3


def test_field_design_space_and_direct_limit():
    pr = Problem(validate(base(nx=32, ny=16, points={"tip": [32, 0]}), CONFIG))
    d = pr.design
    assert len(d) == 512 and d.names[17] == "P.density[17]" and d.fields["x"] == slice(0, 512)
    assert d.paths[17] == "plates.P.density[17]" and np.all(d.lower == 0.01)
    with pytest.raises(ModelError, match="direct method"):
        d.check_direct()
    # only the element-local column in ∂r/∂p: one nonzero design column per element
    g = group(pr.sys, PlateElastic)
    cols = np.nonzero(np.any(d.map[g.pidx] >= 0, axis=0))[0]
    assert list(cols) == [0]
    with pytest.raises(ConfigError, match="elements"):
        validate(base(density=[1.0, 0.5]), CONFIG)


def small_problem(**kw):
    data = base(nx=4, ny=2, points={"tip": [4, 0]}, **kw)
    data["simulation"].update(t_end=0.02, dt=2e-3)
    pr = Problem(validate(data, CONFIG))
    rng = np.random.default_rng(5)
    rho = rng.uniform(0.3, 0.95, len(pr.design))
    rho[3] = 0.05                                    # one element on the seed-003 lower branch
    pr.sys.p = pr.design.apply(pr.sys.p, rho)
    return pr


def test_adjoint_direct_fd():
    pr = small_problem()
    pr.forward()
    ga, gd = pr.adjoint(), pr.direct()
    pr.design.check_direct()                          # 8 columns: allowed
    p0 = pr.sys.p.copy()
    rho = pr.design.values(p0)
    for name in ga:
        scale = np.max(np.abs(gd[name]))
        err = np.max(np.abs(ga[name] - gd[name])) / scale
        assert err < 1e-9, (name, err)
        for j in (0, 3, 6):                           # central differences of the whole run
            h = 1e-5 * max(abs(rho[j]), 1.0)
            fd = central_difference(pr, p0, rho, j, h, name)
            assert abs(fd - ga[name][j]) < 1e-6 * scale, (name, j, fd, ga[name][j])
        print(f"\n{name}: |adjoint − direct|/max = {err:.2e}")


def test_timing_adjoint_small_vs_large():
    out = []
    for nx, ny in ((8, 4), (32, 16)):
        data = base(nx=nx, ny=ny, points={"tip": [nx, 0]})
        data["simulation"].update(t_end=0.02, dt=2e-3)
        data["objectives"] = data["objectives"][:1]
        pr = Problem(validate(data, CONFIG))
        t0 = time.perf_counter()
        pr.forward()
        t1 = time.perf_counter()
        g = pr.adjoint()["tip"]
        t2 = time.perf_counter()
        assert g.shape == (nx * ny,) and np.all(np.isfinite(g))
        out.append((nx * ny, pr.sys.n, t1 - t0, t2 - t1))
    print()
    for N, n, tf, ta in out:
        print(f"plate timing: N = {N:4d} design, n = {n:4d} coords, 10 steps: forward {tf:.3f} s, "
              f"adjoint {ta:.3f} s, gradient/forward = {ta / tf:.2f}")
