"""Linked design parameters (parmbs/config/expressions.py, links.py; design.py's chain):
the safe expression grammar, bad input (ConfigError naming file and key, exit 2 from
the CLI), the linked model equals the model with the parameters set by hand, and the
chained gradients (adjoint = direct ≤ 1e-9, = complex step ≤ 1e-9, central FD ≤ 1e-6)
on seed 000 §6.2 (configs/rigid-spring-beam-opt.toml: D drives l = |C − D|, θ, …)."""
import math

import numpy as np
import pytest

from parmbs.config import ConfigError, load_config
from parmbs.config.expressions import Expression, ExpressionError
from parmbs.sensitivity.complex_step import complex_step_gradient
from parmbs.sensitivity.problem import Problem

from cli_helpers import parmbs_in_process
from conftest import CONFIGS

RSB = CONFIGS / "rigid-spring-beam-opt.toml"
HAND = CONFIGS / "rigid-spring-beam.toml"
C = np.array([1.5, 0.0])
SHORT = "simulation.t_end=0.01"


def rel(a, b):
    return np.max(np.abs(np.asarray(a) - b)) / np.max(np.abs(b))


# ----------------------------------------------------------------------------- the grammar


def test_expression_values_and_complex_step_derivatives():
    env = {"x": 0.3, "y": -1.2}
    cases = {"hypot(x, y)": (math.hypot(0.3, -1.2), (0.3 / math.hypot(0.3, -1.2), -1.2 / math.hypot(0.3, -1.2))),
             "atan2(y, x)": (math.atan2(-1.2, 0.3), (1.2 / 1.53, 0.3 / 1.53)),
             "sqrt(x) * sin(y) + cos(x) ** 2 - 2 / y": (
                 math.sqrt(0.3) * math.sin(-1.2) + math.cos(0.3) ** 2 - 2 / -1.2,
                 (0.5 / math.sqrt(0.3) * math.sin(-1.2) - 2 * math.cos(0.3) * math.sin(0.3),
                  math.sqrt(0.3) * math.cos(-1.2) + 2 / 1.44)),
             "-x + pi": (math.pi - 0.3, (-1.0, 0.0))}
    h = 1e-30
    for text, (val, grad) in cases.items():
        e = Expression(text)
        assert e.value(env) == pytest.approx(val, rel=1e-15), text
        for name, g in zip(("x", "y"), grad):
            zenv = {**env, name: env[name] + 1j * h}
            assert e.value(zenv).imag / h == pytest.approx(g, rel=1e-13, abs=1e-15), (text, name)


@pytest.mark.parametrize("text,match", [
    ("__import__('os').system('true')", "unknown function|not allowed"),
    ("x.real", "attribute"),
    ("x if x else 1", "ifexp"),
    ("lambda: 1", "lambda"),
    ("x < 1", "compare"),
    ("'a'", "only numbers"),
    ("hypot(x)", "takes 2 arguments"),
    ("sqrt(x=1)", "positional"),
    ("exp", "is a function"),
    ("x // 2", "FloorDiv"),
    ("x +", "syntax error"),
])
def test_expression_rejects(text, match):
    with pytest.raises(ExpressionError, match=match):
        Expression(text)


def test_expression_arithmetic_errors():
    with pytest.raises(ArithmeticError, match="division by zero"):
        Expression("1 / x").value({"x": 0.0})
    with pytest.raises(ArithmeticError, match="complex at real inputs"):
        Expression("x ** 0.5").value({"x": -1.0})
    with pytest.raises(ArithmeticError, match="sqrt of negative"):
        Expression("sqrt(x)").value({"x": -1.0})


# ----------------------------------------------------------------------------- bad input


def _write(tmp_path, text):
    src = RSB.read_text()
    f = tmp_path / "bad.toml"
    f.write_text(text(src))
    return f


BAD = [
    ("unknown name", lambda s: s.replace('l = "hypot(X_C - D_x, Y_C - D_y)"', 'l = "hypot(X_Q - D_x, Y_C - D_y)"'),
     "parameters.l", "unknown name 'X_Q'"),
    ("dangling path", lambda s: s.replace('path = "beams.beam.initial.x"', 'path = "beams.rod.initial.x"'),
     "design.D_x.drives[0].path", "no beam named 'rod'"),
    ("cycle", lambda s: s.replace("X_C = 1.5", 'X_C = "theta + 1"'),
     "parameters.", "cycle:"),
    ("non-finite", lambda s: s.replace("Y_C = 0.0", 'Y_C = "1e308 * 10"'),
     "parameters.Y_C", "must be finite"),
    ("log of zero", lambda s: s.replace('expression = "D_y" }', 'expression = "log(D_y)" }'),
     "design.D_y.drives[0].expression", "log of non-positive"),
    ("schema rejects the driven value", lambda s: s.replace('expression = "l" }', 'expression = "-l" }'),
     "design.D_x.drives[1].expression", "gives beams.beam.length"),
    ("driven twice", lambda s: s.replace('{ path = "beams.beam.initial.y", expression = "D_y" }',
                                         '{ path = "beams.beam.length", expression = "D_y" }'),
     "design.D_y.drives[0].path", "driven twice"),
    ("designed and driven", lambda s: s.replace('path = "beams.beam.initial.x"', 'path = "ground.points.D.y"'),
     "design.D_x.drives[0].path", "either designed or driven"),
    ("bad grammar", lambda s: s.replace('expression = "D_y" }', 'expression = "D_y.__class__" }'),
     "design.D_y.drives[0].expression", "attribute"),
    ("parameter shadows a design name", lambda s: s.replace("X_C = 1.5", "X_C = 1.5\nD_x = 2.0"),
     "parameters.D_x", "also a [[design]] name"),
]


@pytest.mark.parametrize("what,edit,key,match", BAD, ids=[b[0] for b in BAD])
def test_bad_links_name_file_and_key(tmp_path, what, edit, key, match):
    f = _write(tmp_path, edit)
    with pytest.raises(ConfigError) as e:
        load_config(f)
    assert e.value.key.startswith(key), (e.value.key, str(e.value))
    assert match in str(e.value)
    assert str(f) in str(e.value)


def test_bad_link_exits_2_without_traceback(tmp_path):
    f = _write(tmp_path, BAD[0][1])
    r = parmbs_in_process("info", str(f))          # (cli.main in this process: tests/cli_helpers.py)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert str(f) in r.stderr and "parameters.l" in r.stderr


# ----------------------------------------------------------------------------- same model as by hand


def _by_hand(xd):
    """The same model with every parameter D moves written out (no links).  The
    optimization file uses the conservative elastic force (its header: the seed's force
    blows up on the shorter beams the optimum reaches), the hand-written file the seed's."""
    d = C - np.asarray(xd)
    th = math.atan2(-d[1], -d[0]) + math.pi
    return load_config(HAND, [SHORT, "beams.beam.elastic=conservative", f"ground.points.D=[{xd[0]!r}, {xd[1]!r}]",
                              f"beams.beam.initial.x={xd[0]!r}", f"beams.beam.initial.y={xd[1]!r}",
                              f"beams.beam.length={math.hypot(*d)!r}", f"beams.beam.initial.angle={th!r}",
                              f"bodies.cap.initial.angle={th!r}"])


@pytest.mark.parametrize("xd", [(2.2, 0.35), (1.5, 0.45)], ids=["off-axis", "turned-90deg"])
def test_links_drive_the_same_model_as_by_hand(xd):
    """Same parameters, same trajectory.  At (1.5, 0.45) the beam is turned by 90°: the
    assembly must start from the design's geometry (Problem._follow_design), from the
    nominal guess Newton lands on a garbage configuration."""
    xd = np.array(xd)
    hand = Problem(_by_hand(xd))
    # (1) the loader resolves the drives of an overridden design value
    linked = Problem(load_config(RSB, [SHORT, f"ground.points.D.x={xd[0]!r}", f"ground.points.D.y={xd[1]!r}"]))
    # (2) the design space sets them from the nominal model's p (what optimize does)
    nominal = Problem(load_config(RSB, [SHORT]))
    p_applied = nominal.design.apply(nominal.sys.p, xd)
    # (3) paths.with_values (several design values at once: D_x = 1.5 alone gives l = 0)
    from parmbs.config.paths import with_values
    cfg_wv = with_values(load_config(RSB, [SHORT]), {"ground.points.D.x": xd[0], "ground.points.D.y": xd[1]})
    by_path = {k: hand.sys.p[i] for k, i in hand.sys.params.index.items()}
    for pr_p, pr in ((linked.sys.p, linked), (p_applied, nominal), (Problem(cfg_wv).sys.p, nominal)):
        vals = {k: pr_p[i] for k, i in pr.sys.params.index.items()}
        assert vals.keys() == by_path.keys()
        bad = {k: (vals[k], by_path[k]) for k in vals if abs(vals[k] - by_path[k]) > 1e-14 * max(1, abs(by_path[k]))}
        assert not bad
    th, tl = hand.forward(), nominal.forward(p_applied)
    assert np.max(np.abs(th.q - tl.q)) <= 1e-13
    assert hand.objective_values()["dB"] == pytest.approx(nominal.objective_values(p=p_applied)["dB"], rel=1e-12)


def test_linked_parameters_nominal_config_unchanged():
    """At the nominal design the drives reproduce the file's hand-written values."""
    a, b = load_config(RSB), load_config(HAND)
    for path in ("beams.beam.length", "beams.beam.initial.angle", "beams.beam.initial.x",
                 "bodies.cap.initial.angle"):
        assert a.resolve_path(path) == pytest.approx(b.resolve_path(path), abs=1e-15)


# ----------------------------------------------------------------------------- chained gradients


def test_linked_gradients_adjoint_direct_cs_fd():
    """Off the axis (D = (2.2, 0.35): every ∂f/∂D entry nonzero), T = 0.01 s."""
    pr = Problem(load_config(RSB, [SHORT, "ground.points.D.x=2.2", "ground.points.D.y=0.35"]))
    J = pr.design.jacobian(pr.sys.p)
    d = np.array([2.2, 0.35]) - C
    l = np.hypot(*d)
    assert J.shape == (7, 2)
    assert np.allclose(J[pr.design.map[pr.sys.params.index["beams.beam.length"]]], d / l, rtol=1e-14)
    assert np.allclose(J[pr.design.map[pr.sys.params.index["beams.beam.initial.angle"]]],
                       np.array([-d[1], d[0]]) / l ** 2, rtol=1e-14)
    pr.forward()
    adj, dir_ = pr.adjoint()["dB"], pr.direct()["dB"]
    cs = complex_step_gradient(pr)["dB"]
    fd = pr.finite_differences(1e-6)["dB"]
    print(f"adjoint {adj}, |adj-dir| {rel(dir_, adj):.1e}, |adj-cs| {rel(cs, adj):.1e}, |adj-fd| {rel(fd, adj):.1e}")
    assert adj.shape == (2,)
    assert rel(dir_, adj) <= 1e-9
    assert rel(cs, adj) <= 1e-9
    assert rel(fd, adj) <= 1e-6


# ----------------------------------------------------------------------------- constraints on parameters


def test_parameter_constraint_value_and_gradient():
    """kind = "parameter" rows (seed Eq. 55: l ≥ l_min) are explicit in ρ: value and
    complex-step gradient equal the closed form l = |C − D|, ∂l/∂D = (D − C)/l."""
    from parmbs.optimize.constraints import Constraints
    cfg = load_config(RSB, [SHORT, "optimize.method=mma",
                            "optimize.constraints=[{kind='parameter',parameter='l',lower=0.3,upper=5.0}]"])
    pr = Problem(cfg)
    cons = Constraints(cfg, pr.design)
    rho = np.array([2.2, 0.35])
    f, df = cons.evaluate(rho, {}, {})
    d = rho - C
    l = np.hypot(*d)
    assert cons.labels == ["l <= 5", "l >= 0.3"]
    assert f == pytest.approx([(l - 5.0) / 5.0, (0.3 - l) / 0.3], rel=1e-15)
    assert np.allclose(df, [d / l / 5.0, -d / l / 0.3], rtol=1e-14, atol=0)
    assert cons.values(rho, {})[1][1] == pytest.approx(l, rel=1e-15)


@pytest.mark.parametrize("entry,key,match", [
    ("{kind='parameter',parameter='lx',lower=0.3}", "optimize.constraints[0].parameter", "unknown parameter 'lx'"),
    ("{kind='parameter',lower=0.3}", "optimize.constraints[0].parameter", "required"),
    ("{kind='parameter',parameter='l',field='x',lower=0.3}", "optimize.constraints[0].field", "only for"),
])
def test_parameter_constraint_errors(entry, key, match):
    with pytest.raises(ConfigError, match=match) as e:
        load_config(RSB, ["optimize.method=mma", f"optimize.constraints=[{entry}]"])
    assert e.value.key == key


def test_optimize_linked_design_end_to_end(tmp_path):
    """``parmbs optimize`` on the linked design with the l constraint (MMA, 1 update,
    T = 0.01 s): it runs, records the two design variables, and the recorded gradient
    of the first evaluation is the chained adjoint gradient."""
    out = tmp_path / "o.h5"
    r = parmbs_in_process("optimize", str(RSB), "-o", str(out), "--set", SHORT,
                          "--set", "optimize.max_it=1", "--set", "simulation.progress=false")
    assert r.returncode == 0, r.stderr
    import h5py
    with h5py.File(out, "r") as f:
        x, g = f["optimize/x"][0], f["optimize/g"][0]
        assert [n.decode() for n in f["optimize/design"].attrs["names"]] == ["D_x", "D_y"]
    pr = Problem(load_config(RSB, [SHORT]))
    pr.forward()
    assert np.allclose(x, [2.5, 0.0])
    assert rel(g, pr.adjoint()["dB"]) <= 1e-12
