"""The passive dynamic walker (configs/passive-walker.toml, built by
configs/passive_walker_build.py; [Zhu 2014] §5.3.2 on Hsu's data): planar contact,
regularised friction, knee stops and stance locks in one model.

The gradient check runs the first 0.02 s after heel strike on the shipped model's
adaptive steps: the stance foot sinks in (normal law through its onset band, friction
in its slip regime), the trailing foot lifts off through the band and its knee lock
lets go — every branch of the three new force kinds, on the frozen accepted grid.
The gait itself (period, step length against Hsu's fixed point) is measured by
benchmarks/passive_walker.py over whole steps (too slow for the suite).
"""
import subprocess
import sys

import parmbs  # noqa: F401 — first (numpy SIMD determinism: parmbs/_determinism.py)
import numpy as np

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem

from conftest import CONFIGS
from gradient_checks import assert_gradients_agree, cli_one_line_error

BUILD = CONFIGS / "passive_walker_build.py"


def test_shipped_config_is_the_builders_output(tmp_path):
    """configs/passive-walker.toml is what the builder writes (edit the script, not the file)."""
    out = tmp_path / "pw.toml"
    subprocess.run([sys.executable, str(BUILD), str(out)], check=True, timeout=60)
    assert out.read_text() == (CONFIGS / "passive-walker.toml").read_text()


def test_gradients_through_contact_and_lift_off():
    """adjoint = direct ≤ 1e-9 (both solve the same linear recurrences: N κ ε, measured
    ≤ 1e-15); central FD at δ = 3e-5 ≤ 1e-6: the FD error is Newton noise (it grows as δ
    shrinks: max 1e-7 at δ = 3e-5, 3e-7 at 1e-5, 9e-7 at 3e-6 relative to max |∇ψ|, the
    noise 1e-12/2δ amplified by ψ's small gradients); truncation δ² ~ 1e-9."""
    pr = Problem(load_config(str(CONFIGS / "passive-walker.toml"),
                             ["simulation.t_end=0.02", "simulation.progress=false"]))
    tr = pr.forward()
    sysm = pr.sys
    # the run visits the regimes the docstring names: stance foot pressed in, swing foot out
    n = np.array(pr.config.forces[[f.name for f in pr.config.forces].index("foot1")].normal)
    n = n / np.linalg.norm(n)

    def foot_gap(shank):
        i = 3 * sysm.body_index[shank]
        th = tr.q[:, i + 2]
        P = tr.q[:, i:i + 2] + 0.375 * np.stack([np.sin(th), -np.cos(th)], 1)   # foot 0.375 below the com
        return P @ n

    assert foot_gap("shank2")[-1] < -1e-4          # stance foot in contact (≥ 0.1 mm)
    assert foot_gap("shank1")[-1] > 1e-3           # trailing foot lifted (≥ 1 mm)
    assert_gradients_agree(pr, adj_cs=None, fd_step=3e-5)


def test_bad_contact_key_is_one_line(tmp_path):
    """A bad contact key is one line naming file and key, exit 2."""
    text = (CONFIGS / "passive-walker.toml").read_text().replace("slip_velocity = 0.01", "slip_velocity = -0.01", 1)
    p = tmp_path / "bad.toml"
    p.write_text(text)
    cli_one_line_error(["info", p], tmp_path, "bad.toml", "forces.foot1.slip_velocity")


# ---- the latched knee lock (configs/passive_walker_latch.py, builder --latch) ----------

def _latched_lock_states():
    """A PythonForce of ``stance_latch`` with four elements in the regimes of its two
    switches (foot engaged / in its onset band; knee inside the latch, in its band, beyond
    it), and the same elements as StanceLock parameters."""
    sys.path.insert(0, str(CONFIGS))
    try:
        from passive_walker_latch import stance_latch
    finally:
        sys.path.remove(str(CONFIGS))
    from parmbs.model.python_force import PythonForce
    names = ("k", "c", "w", "a", "sx", "sy", "ox", "oy", "nx", "ny")
    ne = 4
    rng = np.random.default_rng(11)
    comp = PythonForce([f"e{i}" for i in range(ne)], np.zeros((ne, 6)), np.zeros((ne, len(names))),
                       fn=stance_latch, nbodies=2, parameters=names)
    q = rng.uniform(-1.0, 1.0, (ne, 6))
    v = rng.uniform(-1.0, 1.0, (ne, 6))
    a = np.zeros((ne, 6))
    pen = np.array([0.9, 0.9, 0.9, 0.25])          # w = 0.5: engaged ×3, onset band
    phi = np.array([0.1, 0.45, 0.8, -0.2])         # a = 0.6: inside a/2, in the band, beyond a, inside
    q[:, 5] = q[:, 2] + phi
    p = np.empty((ne, len(names)))
    p[:, 0:2] = rng.uniform(0.5, 1.5, (ne, 2))      # k, c
    p[:, 2], p[:, 3] = 0.5, 0.6                     # w, a
    p[:, 4:6] = rng.uniform(-1.0, 1.0, (ne, 2))
    p[:, 8:10] = rng.uniform(0.5, 1.5, (ne, 2))
    n = p[:, 8:10] / np.linalg.norm(p[:, 8:10], axis=1)[:, None]
    c, s = np.cos(q[:, 5]), np.sin(q[:, 5])
    P = q[:, 3:5] + np.c_[c * p[:, 4] - s * p[:, 5], s * p[:, 4] + c * p[:, 5]]
    p[:, 6:8] = P + pen[:, None] * n                # the line through P + x n: penetration x
    return comp, q, v, a, p, phi


def test_latched_lock_blocks_against_central_differences():
    """The generic block test's check (tests/test_components.py: relative 1e-7 at h = 1e-6,
    truncation h² |r'''| ~ 1e-12, round-off ε/h ~ 1e-10) on the latched lock's complex-step
    blocks, in every regime of its two C¹ switches (none at a switch point)."""
    from test_components import fd
    comp, q, v, a, p, _ = _latched_lock_states()
    t = 0.37
    for blk, f, x in ((comp.r_q(t, q, v, a, p), lambda y: comp.r(t, y, v, a, p), q),
                      (comp.r_v(t, q, v, a, p), lambda y: comp.r(t, q, y, a, p), v),
                      (comp.r_p(t, q, v, a, p), lambda y: comp.r(t, q, v, a, y), p)):
        ref = fd(f, x)
        assert np.max(np.abs(blk - ref)) / max(1.0, np.max(np.abs(ref))) < 1e-7


def test_latched_lock_is_the_stance_lock_inside_the_latch():
    """|φ| ≤ a/2: the latched lock is StanceLock (same k, c, w, foot and line) to
    round-off; beyond a it is exactly zero; in the band a/2 < |φ| < a it is smaller."""
    from parmbs.model.contact import StanceLock
    comp, q, v, a, p, phi = _latched_lock_states()
    ne = len(phi)
    lock = StanceLock([f"e{i}" for i in range(ne)], np.zeros((ne, 6)), np.zeros((ne, 13)))
    # StanceLock p = (P̄, c̄, ρ, O, n, θ₀, k, c, w): P̄ − c̄ = (sx, sy)
    pl = np.c_[p[:, 4:6], np.zeros((ne, 2)), np.zeros(ne), p[:, 6:8], p[:, 8:10], np.zeros(ne), p[:, 0:3]]
    r_latch, r_lock = comp.r(0.0, q, v, a, p), lock.r(0.0, q, v, a, pl)
    assert np.all(np.abs(r_lock[[0, 3], 2]) > 1e-2)               # engaged: a real torque
    np.testing.assert_allclose(r_latch[[0, 3]], r_lock[[0, 3]], rtol=1e-14, atol=1e-14)
    assert 0 < abs(r_latch[1, 2]) < abs(r_lock[1, 2])
    assert np.all(r_latch[2] == 0.0)


def test_latched_walker_is_the_shipped_walker_in_the_gait(tmp_path):
    """Built with --latch 0.05 (the module copied beside the file), the first 20 ms of the
    gait (stance foot landing, trailing knee unlocking through the foot's band) are the
    shipped model's: the stance knee stays within 1e-3 rad < a/2, where L ≡ 1.  Compared
    on the state's own step control (adapt.sensitivities off): the latched lock's ground
    line is a constant of its Python force, not the slope design variable the shipped
    lock reads through its contact, so the slope column's sensitivities differ and with
    them the mesh of a sensitivity-controlled run."""
    out = tmp_path / "pw.toml"
    subprocess.run([sys.executable, str(BUILD), str(out), "--latch", "0.05"], check=True, timeout=60)
    assert (tmp_path / "passive_walker_latch.py").exists()
    runs = [Problem(load_config(str(f), ["simulation.t_end=0.02", "simulation.progress=false",
                                         "simulation.adapt.sensitivities=false"])).forward()
            for f in (CONFIGS / "passive-walker.toml", out)]
    assert np.array_equal(runs[0].t, runs[1].t)
    assert np.max(np.abs(runs[0].q - runs[1].q)) <= 1e-12
