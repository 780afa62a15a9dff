"""The compiled step of small planar models (parmbs/compiled, issue 19) against the numpy
path it replaces: kernel by kernel, trajectory by trajectory, gradient by gradient, and
run to run.

Why not bitwise: the compiled kernels sum in another order and factor the Newton matrix
with their own LU (the numpy path: PETSc's), so each step differs from the numpy one by
a few ulps.  Index-3 schemes then amplify: a and λ are fixed by q through Φ(q)/(βh²),
so a position difference δq moves them by δq/(βh²) (benchmarks/README.md, "Agreement").
The bounds below are that estimate, per quantity, over N steps of round-off u = 2⁻⁵³
at most accumulating linearly (short horizons: no dynamic growth):

    δq ≤ N u ‖q‖∞
    δa ≤ (κ(Φ_q) δq + ‖Φ_q⁺‖ 8u T) / (βh²)      T = 2 (‖q‖∞ + largest joint offset)
    δv ≤ γh δa,   δλ ≤ (w_i/w_f) ‖(Φ_qᵀ)⁺ M‖∞ δa

(a from the constraint rows Φ(q)/(βh²): the accumulated δq through Φ_q, plus each
path's rounding of Φ — ≤ 4 roundings of terms of size ≤ T, twice; λ from the dynamic
rows w_i M a + w_f Φ_qᵀλ = …; ∞-norms, Φ_q at the initial state).  Gradients of an
objective of q, v or a are perturbed at most by that quantity's relative difference.
"""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from parmbs import compiled
from parmbs.config import load_config
from parmbs.integrators.newmark import StepError
from parmbs.sensitivity.problem import Problem

pytest.importorskip("numba", reason="numba not installed: the compiled path is optional")

ROOT = pathlib.Path(__file__).resolve().parents[1]
U = np.finfo(float).eps / 2

#: every kind with a kernel in one model: pin, weld, damped spring, rotational spring
ALL_KINDS = """
[model]
name = "kinds"
gravity = [0.3, -9.81]
[ground]
points = { O = [0.0, 0.0], Q = [1.5, 0.4] }
[[bodies]]
name = "b1"
mass = 1.2
inertia = 0.1
com = [0.5, 0.05]
points = { O = [0.0, 0.0], E = [1.0, 0.0] }
initial = { angle = -0.7 }
independent = ["angle"]
[[bodies]]
name = "b2"
mass = 0.8
inertia = 0.07
com = [0.4, -0.02]
points = { O = [0.0, 0.0], E = [0.9, 0.1] }
initial = { x = 0.76, y = -0.64, angle = 0.3 }
independent = ["angle"]
[[bodies]]
name = "b3"
mass = 0.5
inertia = 0.02
com = [0.2, 0.0]
points = { O = [0.0, 0.0] }
initial = { x = 1.62, y = -0.32, angle = 0.3 }
[[joints]]
type = "revolute"
name = "J0"
a = "ground.O"
b = "b1.O"
[[joints]]
type = "revolute"
name = "J1"
a = "b1.E"
b = "b2.O"
[[joints]]
type = "weld"
name = "W"
a = "b2.E"
b = "b3.O"
[[forces]]
type = "spring"
name = "S"
a = "b3.O"
b = "ground.Q"
stiffness = 50.0
damping = 2.0
length = 0.5
[[forces]]
type = "rotational_spring"
name = "T"
a = "b1"
b = "b2"
stiffness = 3.0
damping = 0.4
angle = 0.2
[simulation]
t_end = 0.05
integrator = "genalpha"
"""

#: the time-dependent kinds and the prismatic joint (counts only matter: n − m = 1)
TIME_KINDS = """
[model]
name = "kinds2"
gravity = [0.0, -9.81]
[ground]
points = { O = [0.0, 0.0], S = [0.5, -1.0] }
[[bodies]]
name = "c"
mass = 1.0
inertia = 0.1
com = [0.3, 0.02]
points = { O = [0.0, 0.0], P = [0.6, 0.1] }
initial = { angle = 0.4 }
[[bodies]]
name = "s"
mass = 2.0
inertia = 0.2
com = [0.0, 0.0]
points = { O = [0.0, 0.0] }
initial = { x = 0.5, y = -1.0, angle = 0.1 }
[[bodies]]
name = "e"
mass = 0.7
inertia = 0.05
com = [0.25, -0.03]
points = { O = [0.0, 0.0] }
initial = { x = 0.5, y = -1.0, angle = -0.5 }
independent = ["angle"]
[[joints]]
type = "revolute"
name = "J0"
a = "ground.O"
b = "c.O"
[[joints]]
type = "driver"
name = "D0"
coordinate = "c.angle"
function = { type = "polynomial", coefficients = [0.4, 2.0, -0.3] }
[[joints]]
type = "prismatic"
name = "P"
a = "ground.S"
b = "s.O"
axis = [0.8, 0.6]
[[joints]]
type = "revolute"
name = "J1"
a = "s.O"
b = "e.O"
[[joints]]
type = "driver"
name = "D1"
coordinate = "e.x"
function = { type = "harmonic", amplitude = 0.2, omega = 3.0, phase = 0.1, offset = 0.5 }
[[forces]]
type = "force"
name = "F"
point = "c.P"
value = [3.0, -2.0]
function = { type = "harmonic", amplitude = 1.5, omega = 2.0, phase = 0.3, offset = 0.2 }
[[forces]]
type = "torque"
name = "T"
body = "e"
value = 0.7
function = { type = "polynomial", coefficients = [1.0, -0.5] }
[[forces]]
type = "torque"
name = "T2"
body = "c"
value = 0.3
[simulation]
t_end = 0.05
integrator = "genalpha"
"""


def _problem(path, *sets):
    return Problem(load_config(str(path), ["simulation.progress=false", *sets]))


def _numpy_RJ(st, t, x, p, wi, wf, bh2, gh):
    """R = (R₁, Φ/(βh²)) and the Newton matrix of the numpy components (evaluation.py)."""
    ev = st._eval(t, x, p)
    G = ev.G().dense()
    J11 = ev.Ma(wi, wf).dense() + gh * ev.Cv(wi, wf).dense() + bh2 * ev.K(wi, wf).dense()
    J = np.block([[J11, wf * G.T], [G, np.zeros((len(G), len(G)))]])
    return np.r_[ev.residual(wi, wf), ev.phi() / bh2], J


@pytest.mark.parametrize("model", ["kinds", "time-kinds", "parallelogram"])
def test_kernels_equal_numpy_components(tmp_path, model):
    """R and J of every kernel at a random state equal the numpy components' to a few ulps
    of the largest entry (each sums ≤ 10 contributions of ≤ 10 roundings: 100 u), at a
    time t = 0.37 of the time functions; the parallelogram has a redundant row dropped
    at set-up (rows −1)."""
    from parmbs.compiled.newmark_step import _evaluate
    path = tmp_path / "kinds.toml"
    path.write_text(ALL_KINDS if model == "kinds" else TIME_KINDS)
    pr = _problem(ROOT / "configs" / "parallelogram.toml" if model == "parallelogram" else path)
    st, s = pr.stepper, pr.sys
    assert st.compiled is not None and not compiled.unsupported(s)
    if model == "parallelogram":
        assert np.any(np.concatenate([g.rows.ravel() for g in s.constraints]) < 0)
    rng = np.random.default_rng(3)
    x = (s.q_guess + 0.1 * rng.standard_normal(s.n), rng.standard_normal(s.n), rng.standard_normal(s.n),
         rng.standard_normal(s.m))
    # coefficients of order one (a step has βh² ~ 1e-7): every block weighs in the bound
    wi, wf, bh2, gh = 0.6, 0.55, 0.7, 0.9
    t = 0.37
    R0, J0 = _numpy_RJ(st, t, x, s.p, wi, wf, bh2, gh)
    N = s.n + s.m
    R, J = np.zeros(N), np.zeros((N, N))
    _evaluate(*x, s.p, t, s.n, wi, wf, bh2, gh, wf * bh2, bh2, True, R, J, *st.compiled.sets(0), 1.0)
    assert np.max(np.abs(R - R0)) <= 100 * U * np.max(np.abs(R0))
    assert np.max(np.abs(J - J0)) <= 100 * U * np.max(np.abs(J0))
    assert np.count_nonzero(J0) > 2 * N and np.count_nonzero(R0) > N // 2     # not a trivial comparison


def _bounds(pr, traj, N, rounds=1):
    """The per-quantity bounds of the module docstring for N steps of ``pr``'s scheme;
    ``rounds``: roundings of size u ‖q‖∞ per step (δq ≤ rounds · N u ‖q‖∞)."""
    st, s = pr.stepper, pr.sys
    bh2, gh = st.beta * st.h ** 2, st.gamma * st.h
    ev = st._eval(0.0, traj.x(0), s.p)
    G = ev.G().dense()
    Gp = np.linalg.pinv(G)
    norm = lambda A: np.max(np.sum(np.abs(A), axis=1))          # ‖·‖∞
    dq = rounds * N * U * np.max(np.abs(traj.q))
    terms = 2 * (np.max(np.abs(traj.q)) + max(np.max(np.abs(s.p[g.pidx])) for g in s.constraints))
    da = (norm(Gp) * norm(G) * dq + norm(Gp) * 8 * U * terms) / bh2
    kappa = (1 - st.am) / (1 - st.af) * norm(np.linalg.pinv(G.T) @ ev.Ma().dense())
    return {"q": dq, "v": gh * da, "a": da, "lam": kappa * da}


def _ab_view(pr):
    """``pr`` with a stepper view whose (β, γ, α_m, α_f) are the Arnold–Brüls residual's
    (β', γ', 0, 0): what ``_bounds`` reads (integrators/genalpha_ab.py: β' = cβ, γ' = cγ)."""
    import types
    st = pr.stepper
    view = types.SimpleNamespace(beta=st.c * st.beta, gamma=st.c * st.gamma, h=st.h, am=0.0, af=0.0,
                                 _eval=st._eval)
    return types.SimpleNamespace(stepper=view, sys=pr.sys)


@pytest.mark.parametrize("integrator", ["genalpha", "trapezoidal"])
def test_fivebar_trajectory_and_gradient_match_numpy_path(integrator):
    """200 five-bar steps on both paths: every state within the bounds (module docstring),
    the three gradients (ψ1 of q, ψ2 of v, ψ3 of a) within their quantity's relative bound.
    Measured, observed ÷ bound, genalpha: q 0.008, v 0.001, a 0.004, λ 0.001, ∇ψ1 0.026,
    ∇ψ2 2e-6, ∇ψ3 1e-7 (the quadrature averages the oscillating a/λ differences);
    trapezoidal: q 0.04, v 0.03, ∇ψ1 0.15, ∇ψ2 2e-6, ∇ψ3 2e-5.  The trapezoidal rule's a
    and λ are not bounded here: its undamped (−1)^k mode grows from round-off (6.3× and
    1.2× the linear-accumulation bound after 200 steps; the numpy path differs from
    itself by as much, benchmarks/README.md) — why the five-bar ships generalized-α."""
    cfg = ROOT / "configs" / "fivebar.toml"
    sets = ("simulation.t_end=0.2", f"simulation.integrator={integrator}")
    ref, cmp_ = _problem(cfg, *sets, "simulation.compiled=off"), _problem(cfg, *sets)
    assert ref.stepper.compiled is None and cmp_.stepper.compiled is not None
    tr, tc = ref.forward(), cmp_.forward()
    gr, gc = ref.adjoint(), cmp_.adjoint()
    N = ref.nsteps
    bound = _bounds(ref, tr, N)
    rel = {}
    for k in ("q", "v", "a", "lam"):
        rel[k] = bound[k] / np.max(np.abs(getattr(tr, k)))
        if integrator == "trapezoidal" and k in ("a", "lam"):
            continue
        d = np.max(np.abs(getattr(tr, k) - getattr(tc, k)))
        assert d <= bound[k], (k, d, bound[k])
    assert np.array_equal(tr.newton_its, tc.newton_its)
    assert not np.array_equal(tr.a, tc.a)          # two paths indeed (not the numpy one twice)
    for name, qty in (("psi1", "q"), ("psi2", "v"), ("psi3", "a")):
        d = np.max(np.abs(gr[name] - gc[name])) / np.max(np.abs(gr[name]))
        assert d <= rel[qty], (name, d, rel[qty])


def test_compiled_runs_are_bitwise_reproducible():
    """Same input, same bytes: two processes (different hash seeds and heaps) running 500
    compiled five-bar steps give identical trajectories."""
    code = ("import parmbs, hashlib, numpy as np, sys\n"
            "from parmbs.config import load_config\n"
            "from parmbs.sensitivity.problem import Problem\n"
            "pr = Problem(load_config(sys.argv[1], ['simulation.t_end=0.5', 'simulation.progress=false']))\n"
            "assert pr.stepper.compiled is not None\n"
            "junk = [np.empty(int(sys.argv[2])) for _ in range(7)]\n"
            "t = pr.forward()\n"
            "print(hashlib.sha256(b''.join(x.tobytes() for x in (t.q, t.v, t.a, t.lam))).hexdigest())\n")
    out = []
    for seed, pad in (("1", "3"), ("2", "100003")):
        env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONHASHSEED=seed)
        r = subprocess.run([sys.executable, "-c", code, str(ROOT / "configs" / "fivebar.toml"), pad],
                           capture_output=True, text=True, env=env, timeout=120)
        assert r.returncode == 0, r.stderr
        out.append(r.stdout.split()[-1])
    assert out[0] == out[1]


def test_failed_compiled_step_reports_like_numpy_path():
    """A compiled step that does not converge is redone on the numpy path: the same
    StepError (step, time, last update) as with simulation.compiled = "off"."""
    cfg = ROOT / "configs" / "fivebar.toml"
    msgs = []
    for mode in ("off", "auto"):
        pr = _problem(cfg, "simulation.t_end=0.01", "simulation.newton.max_it=1", f"simulation.compiled={mode}")
        with pytest.raises(StepError) as e:
            pr.forward()
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1] and "step 1 " in msgs[0] and "did not converge in 1 iterations" in msgs[0]


def test_complex_states_take_the_numpy_path():
    """Complex-step verification runs numpy arithmetic: a complex step is bitwise the
    compiled-off stepper's."""
    cfg = ROOT / "configs" / "fivebar.toml"
    a, b = _problem(cfg, "simulation.compiled=off"), _problem(cfg)
    p = a.sys.p + 1e-30j * (np.arange(len(a.sys.p)) == 3)
    x = tuple(np.asarray(y, complex) for y in a.stepper.initial(0.0, a.sys.p))
    xa, _ = a.stepper.step(0, 0.0, x, p)
    xb, _ = b.stepper.step(0, 0.0, x, p)
    assert all(np.array_equal(u, w) and np.iscomplexobj(u) for u, w in zip(xa, xb))


def test_choice_and_the_one_line_reasons(monkeypatch, tmp_path):
    """auto: compiled for the five-bar, silently numpy for kinds without kernel (the
    flexible pendulum's ANCF beam); on: one line naming why not; off: never; no numba:
    numpy path."""
    five = _problem(ROOT / "configs" / "fivebar.toml").sys
    four = _problem(ROOT / "configs" / "flexible-pendulum.toml").sys
    assert compiled.make(five, "off") == (None, None)
    assert compiled.make(four, "auto") == (None, None)
    cs, _ = compiled.make(five, "auto")
    assert cs is not None
    none, note = compiled.make(four, "on")
    assert none is None and "no compiled kernel for AncfElastic" in note
    monkeypatch.setitem(sys.modules, "numba", None)          # import numba → ImportError
    none, note = compiled.make(five, "on")
    assert none is None and "numba is not installed" in note
    assert compiled.make(five, "auto") == (None, None)


@pytest.mark.parametrize("name,steps", [("pendulum", 200), ("double-pendulum", 200), ("parallelogram", 200),
                                        ("fourbar", 200), ("bathe-noh", 39)])
def test_shipped_configs_match_numpy_path(name, steps):
    """Every other shipped config the compiled path takes (auto): states within the
    per-quantity bounds, each gradient within the largest relative bound of the
    quantities (it may read any of them).  Measured observed ÷ bound: q ≤ 0.11, v ≤ 0.04,
    a ≤ 0.27 (pendulum), λ ≤ 0.17; gradients ≤ 0.1 (bathe-noh's q2_final), else ≤ 1e-5."""
    cfg = ROOT / "configs" / f"{name}.toml"
    probe = _problem(cfg, "simulation.compiled=off")
    sets = (f"simulation.t_end={steps * probe.h!r}",)
    ref, cmp_ = _problem(cfg, *sets, "simulation.compiled=off"), _problem(cfg, *sets)
    assert cmp_.stepper.compiled is not None and ref.nsteps == steps
    tr, tc = ref.forward(), cmp_.forward()
    bound = _bounds(ref, tr, steps)
    for k in ("q", "v", "a", "lam"):
        assert np.max(np.abs(getattr(tr, k) - getattr(tc, k))) <= bound[k], k
    rel = max(bound[k] / np.max(np.abs(getattr(tr, k))) for k in ("q", "v", "a", "lam") if np.any(getattr(tr, k)))
    gr, gc = ref.adjoint(), cmp_.adjoint()
    assert gr.keys() == gc.keys() and gr
    for k in gr:
        assert np.max(np.abs(gr[k] - gc[k])) <= rel * np.max(np.abs(gr[k])), k


def test_a_chosen_solver_keeps_the_numpy_path():
    """petsc_options asking for another Newton solver than direct LU are obeyed."""
    pr = _problem(ROOT / "configs" / "fivebar.toml", 'simulation.petsc_options.ksp_type="gmres"',
                  "simulation.compiled=off")
    assert pr.stepper.op.ksp.getType() == "gmres"
    cs, note = compiled.make(pr.sys, "on", pr.stepper.op)
    assert cs is None and "ksp_type gmres" in note
    assert compiled.make(pr.sys, "auto", pr.stepper.op) == (None, None)


def test_step_reads_h_at_every_call():
    """Variable steps set ``stepper.h`` before each call (the adaptive loop): the compiled
    step must follow it like the numpy one.  20 steps alternating h = 1e-3 / 4e-4 on both
    paths: within the per-quantity bounds of the smaller βh² (module docstring; measured
    ≤ 1e-7 of them — a step that kept a stale h would be off by ~1e-4 in q)."""
    cfg = ROOT / "configs" / "fivebar.toml"
    runs = []
    for mode in ("off", "auto"):
        pr = _problem(cfg, f"simulation.compiled={mode}")
        st, p = pr.stepper, pr.sys.p
        x, t, X = st.initial(0.0, p), 0.0, []
        for k in range(20):
            st.h = 1e-3 if k % 2 == 0 else 4e-4
            x, _ = st.step(k, t, x, p)
            t += st.h
            X.append(x)
        runs.append([np.array(z) for z in zip(*X)])       # q, v, a, λ (20, ·)
    assert pr.stepper.compiled is not None
    (q0, v0, a0, l0), (q1, v1, a1, l1) = runs
    assert not np.allclose(q0[1], q0[0], rtol=0, atol=1e-9)     # it moved
    st.h = 4e-4
    tr = type("T", (), {"q": q0, "x": lambda self, k: (q0[0], v0[0], a0[0], l0[0])})()
    bound = _bounds(pr, tr, 20)
    for k, (u, w) in zip(("q", "v", "a", "lam"), ((q0, q1), (v0, v1), (a0, a1), (l0, l1))):
        assert np.max(np.abs(u - w)) <= bound[k], k
