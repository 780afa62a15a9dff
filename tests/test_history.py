"""gradient --history: sensitivity histories (sensitivity/history.py).

The direct history is checked at every recorded step against a complex step of the
whole discrete computation run step by step (Im x_k(ρ + ih e_j)/h and the partial sums
Σ_{j≤k} w_j g_j, h = 1e-30: no truncation, exact to Newton's tolerance); the adjoint
history against the file's own gradient and the direct one."""
import os

import h5py
import numpy as np
import pytest

from parmbs.config import load_config
from parmbs.sensitivity import history as H
from parmbs.sensitivity.problem import Problem

from cli_helpers import parmbs_in_process

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PENDULUM = os.path.join(ROOT, "configs", "pendulum.toml")
SHORT = ["simulation.t_end=0.2"]


def _parmbs(*args, cwd, code=0):
    # cli.main in this process (tests/cli_helpers.py); the subprocess's env only put ROOT on PYTHONPATH
    r = parmbs_in_process("-q", *args, cwd=cwd)
    assert r.returncode == code, r.stderr[-2000:]
    return r


def _complex_run(pr, j, h=1e-30):
    """(Im q_k / h per step (N+1, n), Im of the partial sums Σ_{i≤k} w_i g_i / h (N+1, K))."""
    p0 = pr.sys.p
    r = pr.design.values(p0).astype(complex)
    r[j] += 1j * h
    p = pr.design.apply(p0.astype(complex), r)
    st, sysm, w = pr.stepper, pr.sys, pr.w
    x = st.initial(pr.t0, p)
    refs = [ob.reference(sysm, x[0], p) for ob in pr.objectives]
    dq, acc, sums = [x[0].imag / h], np.zeros(len(refs), complex), []

    def add(k, t, x):
        for i, (ob, ref) in enumerate(zip(pr.objectives, refs)):
            if ob.integrand:
                acc[i] += ob.weight * w[k] * ob.integrand.raw(sysm, t, x, p, ref)
            if ob.terminal and k == pr.nsteps:
                acc[i] += ob.weight * ob.terminal.raw(sysm, t, x, p, ref)
        sums.append(acc.imag / h)
    add(0, pr.t0, x)
    for k in range(pr.nsteps):
        x, _ = st.step(k, pr.t0 + k * pr.h, x, p)
        dq.append(x[0].imag / h)
        add(k + 1, pr.t0 + (k + 1) * pr.h, x)
    return np.array(dq), np.array(sums)


def test_direct_history_is_the_complex_step_at_every_step(monkeypatch):
    """Pendulum, 200 steps, rows every 5th step (MAX_ROWS = 41): dq/dρ and the
    accumulated gradient of each row equal the complex step within 1e-9 of their
    largest value — the adjoint/direct/cs bound of tests/test_sensitivity.py (Newton's
    tolerance 1e-12 over βh² amplifies to ~1e-9 in a and its sums; q and the partial
    sums measured 3.6e-12)."""
    monkeypatch.setattr(H, "MAX_ROWS", 41)
    pr = Problem(load_config(PENDULUM, SHORT))
    pr.forward()
    hist = H.History(pr, "direct")
    grads = pr.direct(on_step=hist)
    hist.finish(grads)
    assert hist.stride == 5 and list(hist.steps) == list(range(0, 201, 5))
    assert np.array_equal(hist.t, pr.traj.t[hist.steps])
    for o, name in enumerate(hist.objectives):
        assert np.array_equal(hist.gradient[-1, o], grads[name])           # G(t_N) is ∇ψ itself
    worst = 0.0
    for j in range(len(hist.design)):
        dq, sums = _complex_run(pr, j)
        for got, ref in ((hist.states["dq"][:, :, j], dq[hist.steps][:, hist.cols]),
                         (hist.gradient[:, :, j], sums[hist.steps])):
            err = np.abs(got - ref).max() / np.abs(ref).max()
            worst = max(worst, err)
            assert np.abs(ref).max() > 0 and err <= 1e-9, (hist.design[j], err)
    print(f"direct history vs complex step: worst relative error {worst:.1e}")


def test_cli_history_files_plot_and_adjoint(tmp_path):
    """gradient --history -o: /sensitivity/history of both methods; the adjoint's curve
    plus its initial-state term is the gradient at t0, equal to the direct one within
    the adjoint/direct round-off bound 1e-9 (tests/test_sensitivity.py)."""
    hist = {}
    for method in ("direct", "adjoint"):
        _parmbs("gradient", PENDULUM, "--set", SHORT[0], "--method", method, "--history",
                "-o", f"{method}.h5", "--plot", f"{method}.png", cwd=tmp_path)
        h = H.read_history(tmp_path / f"{method}.h5")
        hist[method] = h
        assert h["method"] == method and h["design"] == ["m", "xG", "theta0"]
        assert h["objectives"] == ["tip_deviation", "final_angle"]
        assert h["gradient"].shape == (201, 2, 3) and not np.isnan(h["gradient"]).any()
        with h5py.File(tmp_path / f"{method}.h5") as f:
            assert np.array_equal(h["t"], f["trajectory/t"][:])
            final = np.array([[f[f"gradient/{o}/{d}"][()] for d in h["design"]] for o in h["objectives"]])
        assert np.array_equal(h["final"], final)
        from PIL import Image
        assert Image.open(tmp_path / f"{method}.png").size[0] > 500
    d, a = hist["direct"], hist["adjoint"]
    assert d["coordinates"] == ["bar.x", "bar.y", "bar.angle"] and d["dq"].shape == (201, 3, 3)
    assert "dq" not in a and np.array_equal(d["gradient"][-1], d["final"])
    assert np.array_equal(a["gradient"][0] + a["initial_term"], a["final"])
    assert np.abs(a["gradient"][0] - a["gradient"][-1]).max() > 1e-3        # it accumulates backwards
    assert np.abs(d["final"] - a["final"]).max() <= 1e-9 * np.abs(d["final"]).max()
    assert np.abs(a["initial_term"][1, 2]) > 0.5      # final_angle/theta0: mostly the initial state's


@pytest.mark.parametrize("args,key,words", [
    (("--history",), "--history", "give -o OUT.h5"),
    (("--history", "--method", "fd", "-o", "x.h5"), "--history", "adjoint or direct"),
    (("--plot", "x.png", "-o", "x.h5"), "--plot", "add --history"),
    (("--history", "-o", "x.h5", "--groups", "2"), "--history", "--groups 1"),
])
def test_bad_history_requests_are_one_line_exit_2(tmp_path, args, key, words):
    r = _parmbs("gradient", PENDULUM, "--set", SHORT[0], *args, cwd=tmp_path, code=2)
    assert key in r.stderr and words in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not os.listdir(tmp_path)
