"""Fill numba's kernel cache on the otherwise idle second core while the serial suite runs.

Why: in a fresh clone the cache (parmbs/compiled/__init__.py ``_source_keyed_cache``) is
cold, and each kernel family is compiled by the first test that needs it, on the serial
critical path (and inside subprocess time-outs: a 10-step pendulum gradient took 40 s CPU
cold against 1.1 s warm).  Measured cold on this machine (CPU, this script's per-model
lines; two runs side by side on the shared, loaded machine, one specialization per
argument type (compiled/_jit.py) against the former one per constant argument): planar
step + adjoint kernels 36 s (54), the Arnold–Brüls form on the five-bar 42 s (44), then
the vehicle kernels (buggy) 41 s (46), spatial 25 s (49), the sparse LU (chain) 13 s
(16): the whole script 163 s (214) before the Dormand–Prince family (+28 s, in main) was
added; every other model and integrator below then takes ≤ 3 s — one specialization set per
family serves every planar model and Newmark-family integrator.  tests/conftest.py starts this script niced in the background
when a session collects most of the suite; each model runs a few steps forward, adjoint
and tangent.  A test that needs a kernel before it is cached compiles it itself, as
without this script: the cache only saves work, it never changes a number (the same
machine code is loaded; numba replaces cache files by rename).  Nothing here asserts
anything: failures are printed (stderr, one line) and skipped, the tests report their own.
"""
import sys
from pathlib import Path

import parmbs  # noqa: F401  (first: thread and SIMD pinning, the source-keyed cache directory)

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
CONFIGS = HERE.parent / "configs"
QUIET = ["simulation.progress=false", "simulation.compiled=on"]
#: a design variable and an objective on tests/test_compiled.py's TIME_KINDS (it has none)
TIME_OBJECTIVE = """
[[design]]
name = "m_c"
path = "bodies.c.mass"
[[objectives]]
name = "ang"
integrand = "angle_sq"
body = "c"
"""


def _run(path, *sets):
    import time
    from parmbs.config import load_config
    from parmbs.sensitivity.problem import Problem
    c0 = time.process_time()
    try:
        pr = Problem(load_config(str(path), [*QUIET, *sets]))
        pr.forward()
        pr.adjoint()
        pr.direct()
    except Exception as e:   # noqa: BLE001 — only a cache filler: the tests report errors
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
    print(f"{time.process_time() - c0:6.1f} s CPU  {Path(path).name} {' '.join(sets)}", file=sys.stderr, flush=True)


def _dopri_partials(*sets):
    """Compile the two entry points that only tests/test_dopri.py's first test calls from
    Python (compiled/index1_rk.py: analytic_partials, cs_partials; 1.3 s CPU once the
    family is cached), with that test's argument types."""
    import numpy as np
    from parmbs.compiled import index1_rk as K
    from parmbs.config import load_config
    from parmbs.sensitivity.problem import Problem
    try:
        pr = Problem(load_config(str(CONFIGS / "fivebar.toml"), [*QUIET, *sets]))
        s, r = pr.sys, pr.stepper.rhs
        q, v, z = s.q_guess + 0.0, np.zeros(s.n), np.zeros(s.n + s.m)
        for f in (K.analytic_partials, K.cs_partials):
            f(q, v, z, s.p, s.n, s.m, r.flat, r.offs)
    except Exception as e:   # noqa: BLE001 — only a cache filler: the tests report errors
        print(f"{type(e).__name__}: {e}", file=sys.stderr)


def main(tmp):
    from test_compiled import ALL_KINDS, TIME_KINDS
    from test_compiled_adjoint import OBJECTIVES
    kinds = tmp / "kinds.toml"
    kinds.write_text(ALL_KINDS + OBJECTIVES)
    time_kinds = tmp / "time-kinds.toml"
    time_kinds.write_text(TIME_KINDS + TIME_OBJECTIVE)
    short = "simulation.t_end=0.004"
    # roughly in the order the suite first needs them (test files run alphabetically)
    _run(CONFIGS / "fivebar.toml", short)
    _run(CONFIGS / "pendulum.toml", short)
    # the Arnold–Brüls form on a planar model, fixed and error-controlled steps
    ab = 'simulation.genalpha_form="arnold-bruls"'
    _run(CONFIGS / "fivebar.toml", short, ab)
    _run(CONFIGS / "fivebar.toml", "simulation.t_end=0.02", ab, "simulation.adapt.rtol=1e-4", "simulation.adapt.atol=1e-4")
    _run(CONFIGS / "buggy-lane-change.toml", "simulation.t_end=0.01")
    _run(CONFIGS / "buggy-step-descent.toml", short)
    for integrator in ("genalpha", "trapezoidal", "newmark", "hht", "wbz"):
        _run(CONFIGS / "fivebar.toml", short, f"simulation.integrator={integrator}")
        _run(kinds, short, f"simulation.integrator={integrator}")
        _run(time_kinds, short, f"simulation.integrator={integrator}")
    for integrator in ("genalpha", "trapezoidal"):
        _run(CONFIGS / "spatial-double-pendulum.toml", short, f"simulation.integrator={integrator}",
             "simulation.stabilization=none")
    # a hanging chain past compiled.SPARSE_FROM unknowns: the sparse LU kernels
    from test_compiled_sparse import _chain_toml
    from parmbs import compiled
    chain = tmp / "chain.toml"
    chain.write_text(_chain_toml(-(-compiled.SPARSE_FROM // 5), 3, 2))
    _run(chain, "simulation.integrator=genalpha")
    # the own Dormand–Prince on the index-1 ODE (compiled/index1_rk.py): its own kernel
    # family, which no other model or integrator above compiles; without it the first
    # test of tests/test_dopri.py compiled it on the serial path: 26.9 s CPU cold, 0.36 s
    # after these two lines (26.5 + 1.3 s CPU here; one run each, loaded machine)
    dopri = ('simulation.formulation="index1"', 'simulation.integrator="dopri5"')
    _run(CONFIGS / "fivebar.toml", short, *dopri)
    _dopri_partials(short, *dopri)
    _run(CONFIGS / "heavy-top.toml", short)
    _run(CONFIGS / "iltis.toml", "simulation.t_end=0.01", "simulation.adapt.rtol=1.0", "simulation.adapt.atol=1.0",
         "simulation.adapt.dt_max=5e-3")


if __name__ == "__main__":
    import tempfile
    with tempfile.TemporaryDirectory(prefix="parmbs-warm-") as d:
        main(Path(d))
