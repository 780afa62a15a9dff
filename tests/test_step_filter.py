"""Digital-filter step-size controllers (``simulation.adapt.controller``;
parmbs/integrators/step_filter.py): the filter's arithmetic, the default controller's bytes,
exact sensitivities of a filtered run, and a bad name."""
import hashlib
import math
import os
import typing

import numpy as np
import pytest

import parmbs  # noqa: F401  (before numpy users: parmbs/_determinism.py)
from parmbs.config.loader import load_config
from parmbs.config.schema import AdaptController
from parmbs.integrators.step_filter import FILTERS, DigitalFilter, limiter
from parmbs.sensitivity.problem import Problem

from cli_helpers import parmbs_in_process

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIVEBAR = os.path.join(ROOT, "configs", "fivebar.toml")
AB = ['simulation.integrator="genalpha"', 'simulation.genalpha_form="arnold-bruls"']
ADAPT = ["simulation.adapt.rtol=1e-5", "simulation.adapt.atol=1e-5"]
DSP = ["H211b", "H211PI", "H312b", "PI42"]


def test_config_names_are_petscs_filters():
    assert set(typing.get_args(AdaptController)) == {"pi"} | set(FILTERS)


def test_limiter():
    """1 + atan(ρ − 1): the identity to second order at 1, bounded by 1 ± π/2."""
    assert limiter(1.0) == 1.0
    assert abs(limiter(1.01) - 1.01) < 1e-6 / 3 + 1e-12
    assert limiter(0.0) == 1.0 - math.pi / 4 and 1.0 < limiter(1e9) < 1.0 + math.pi / 2


def test_h211b_by_hand():
    """H211b: ρ_n = L((θ/e_n)^(1/8) (θ/e_{n−1})^(1/8) ρ_{n−1}^(−1/4)), θ = ½, L the limiter,
    the history 1 before the first step.  Errors 2, 1/8, 1/2, 1 (θ/e = 1/4, 4, 1, 1/2):
      ρ_1 = L(4^(−1/8)) = L(0.840896) = 0.842219 …,
    computed here term by term from the powers of 2, independently of the filter table."""
    L = limiter
    r1 = L(2 ** (-2 / 8))
    r2 = L(2 ** (2 / 8) * 2 ** (-2 / 8) * r1 ** -0.25)
    r3 = L(1.0 * 2 ** (2 / 8) * r2 ** -0.25)
    r4 = L(2 ** (-1 / 8) * 1.0 * r3 ** -0.25)
    f = DigitalFilter("H211b")
    got = [f.ratio(e) for e in (2.0, 0.125, 0.5, 1.0)]
    assert got == pytest.approx([r1, r2, r3, r4], rel=1e-15, abs=0)
    # the numbers themselves (a second, fixed record: any change of the table shows here)
    assert got == pytest.approx([0.8422188996732943, 1.0438355021452528, 1.1747205613453753, 0.8813803932174925],
                                rel=1e-14, abs=0)
    assert f.mem == pytest.approx([2 ** -0.5, 1.0, r4, r3], rel=1e-15)


def test_h312b_and_pi42_by_hand():
    """H312b: (β1, β2, β3) = (1, 2, 1)/8, (α2, α3) = (3, 1)/8; PI42: β = (3, −1)/5, no α."""
    L = limiter
    c = [2 ** -1.0, 2.0, 1.0]                                    # (θ/e)^(1/2) for e = 2, 1/8, 1/2
    f = DigitalFilter("H312b")
    r1 = L(c[0] ** (1 / 8))
    r2 = L(c[1] ** (1 / 8) * c[0] ** (2 / 8) * r1 ** (-3 / 8))
    r3 = L(c[2] ** (1 / 8) * c[1] ** (2 / 8) * c[0] ** (1 / 8) * r2 ** (-3 / 8) * r1 ** (-1 / 8))
    assert [f.ratio(e) for e in (2.0, 0.125, 0.5)] == pytest.approx([r1, r2, r3], rel=1e-15, abs=0)
    f = DigitalFilter("PI42")
    p1 = L(c[0] ** 0.6)
    p2 = L(c[1] ** 0.6 * c[0] ** -0.2)
    p3 = L(c[2] ** 0.6 * c[1] ** -0.2)
    assert [f.ratio(e) for e in (2.0, 0.125, 0.5)] == pytest.approx([p1, p2, p3], rel=1e-15, abs=0)


def test_filter_at_its_target_keeps_the_step():
    """ε = θ on every step: every filter's ratio is 1 (Σβ > 0, the history 1)."""
    for name in FILTERS:
        f = DigitalFilter(name)
        assert all(f.ratio(0.5) == pytest.approx(1.0, abs=1e-15) for _ in range(5)), name


def _t_hash(extra):
    pr = Problem(load_config(FIVEBAR, extra))
    return pr, hashlib.sha256(pr.forward().grid.t.tobytes()).hexdigest()


@pytest.mark.parametrize("controller", [None, "pi"])
def test_default_controller_keeps_its_bytes(controller):
    """Absent ``controller`` (and "pi") is the PI controller of before the key: the five-bar's
    Arnold–Brüls 1 s run at rtol 1e-5 takes the same 435 steps, t_k bit for bit (sha256
    recorded on main 1be5bce, before the key existed)."""
    extra = AB + ADAPT + ["simulation.t_end=1"] + ([] if controller is None else [f'simulation.adapt.controller="{controller}"'])
    pr, h = _t_hash(extra)
    assert pr.nsteps == 435
    assert h == "07e22c80326ac860a0d8f17550883a141df7dab065dc9ec107bb9d0c1fc9ecf1"


def _gradients_on_the_frozen_steps(pr):
    """After ``pr.forward()``: adjoint = direct ≤ 1e-9 and = FD replaying the accepted steps
    ≤ 1e-6 on ψ1, ψ2 (relative to max |∇ψ|; test_adaptive.test_sensitivities_on_the_accepted_steps
    gives the estimates: round-off ≤ 1.1e-14 measured, FD truncation and noise ~1e-10)."""
    grid = pr.grid
    ad, di, fd = pr.adjoint(), pr.direct(), pr.finite_differences(1e-6)
    assert pr.grid == grid                            # the FD runs replayed it
    for o in ad:
        scale = np.max(np.abs(ad[o]))
        assert np.max(np.abs(ad[o] - di[o])) <= 1e-9 * scale, o
        if o != "psi3":
            assert np.max(np.abs(ad[o] - fd[o])) <= 1e-6 * scale, o


@pytest.mark.parametrize("name", DSP)
def test_filtered_run_gradients(name):
    """A filtered adaptive run differentiates its frozen accepted steps as any adaptive run
    (test_adaptive.test_sensitivities_on_the_accepted_steps, the same bounds and reasons:
    adjoint = direct ≤ 1e-9, FD on the frozen mesh ≤ 1e-6 on ψ1, ψ2).  Its grid is not the
    PI controller's, and it lands on t_end."""
    extra = AB + ADAPT + ["simulation.t_end=0.2", f'simulation.adapt.controller="{name}"']
    pr = Problem(load_config(FIVEBAR, extra))
    tr = pr.forward()
    assert tr.grid.t[-1] == 0.2 and tr.grid.h.max() > 3 * tr.grid.h.min()
    assert tr.grid != Problem(load_config(FIVEBAR, AB + ADAPT + ["simulation.t_end=0.2"])).forward().grid
    _gradients_on_the_frozen_steps(pr)


def test_filtered_trapezoidal_ggl_run_gradients():
    """The numpy Newmark path (trapezoidal + GGL: no compiled estimate) with H211b."""
    extra = ['simulation.integrator="trapezoidal"', 'simulation.stabilization="ggl"'] + ADAPT + \
        ["simulation.t_end=0.2", 'simulation.adapt.controller="H211b"']
    pr = Problem(load_config(FIVEBAR, extra))
    pr.forward()
    _gradients_on_the_frozen_steps(pr)


def test_bad_controller_is_exit_2_naming_file_and_key():
    r = parmbs_in_process("simulate", FIVEBAR, "--set", "simulation.t_end=0.01",
                          "--set", 'simulation.adapt.controller="H211"', cwd=ROOT)
    assert r.returncode == 2 and "Traceback" not in r.stderr, (r.returncode, r.stderr)
    assert "fivebar.toml" in r.stderr and "simulation.adapt.controller" in r.stderr, r.stderr


def test_controller_with_a_ts_integrator_is_refused():
    """A PETSc TS integrator chooses its steps with TSAdapt: the key would do nothing."""
    r = parmbs_in_process("simulate", FIVEBAR, "--set", "simulation.t_end=0.01", "--set",
                          'simulation.formulation="index1"', "--set", 'simulation.integrator="dopri5"',
                          "--set", 'simulation.adapt.controller="H211b"', cwd=ROOT)
    assert r.returncode == 2 and "Traceback" not in r.stderr, (r.returncode, r.stderr)
    assert "simulation.adapt.controller" in r.stderr and "dopri5" in r.stderr, r.stderr

