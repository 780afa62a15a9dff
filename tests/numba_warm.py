"""Fill numba's kernel cache on the otherwise idle second core while the serial suite runs.

Why: when the kernels' cache (parmbs/compiled/_cache.py: one directory per content of
compiled/*.py, shared by every clone) is cold — the first session after an edit of
compiled/ — each kernel family is compiled by the first test that needs it, on the serial
critical path (and inside subprocess time-outs: a 10-step pendulum gradient took 40 s CPU
cold against 1.1 s warm).  Measured cold on this machine (CPU, this script's per-model
lines; two runs side by side on the shared, loaded machine, one specialization per
argument type (compiled/_jit.py) against the former one per constant argument): planar
step + adjoint kernels 36 s (54), the Arnold–Brüls form on the five-bar 42 s (44), then
the vehicle kernels (buggy) 41 s (46), spatial 25 s (49), the sparse LU (chain) 13 s
(16), the own Dormand–Prince (index-1 ODE) 28 s: the whole script 163 s (214) without
it; every other model and integrator below then takes ≤ 3 s — one specialization set per
family serves every planar model and Newmark-family integrator.  On the AMD EPYC (AVX-512)
machine of session 17 the whole script took 316 s CPU for the host CPU (LLVM's "znver3")
and 172 s for the "generic" x86-64 that tests/conftest.py sets (NUMBA_CPU_NAME), the same
numbers bit for bit (benchmarks/numba_warm_hash.py; benchmarks/README.md, "Serial-suite
CPU, round 4").  tests/conftest.py starts
this script when a session collects most of the suite: niced in the background for a
serial session, and ``numba_warm.py i/n`` (the i-th of n shares of the families, split by
cold cost) in each of n pytest-xdist workers before it runs tests.  Each model runs a few
steps forward, adjoint and tangent; a family done once is stamped in the cache directory
and skipped by later sessions, in any clone of the same sources.  A test that needs a
kernel before it is cached compiles it itself, as without this script: the cache only saves work, it never changes a number (the same
machine code is loaded; numba replaces cache files by rename).  Nothing here asserts
anything: failures are printed (stderr, one line) and skipped, the tests report their own.
"""
import sys
from pathlib import Path

import parmbs  # noqa: F401  (first: thread and SIMD pinning)

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
        return False
    finally:
        print(f"{time.process_time() - c0:6.1f} s CPU  {Path(path).name} {' '.join(sets)}", file=sys.stderr, flush=True)
    return True


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
        return False
    return True


def groups(tmp):
    """The runs in kernel families (name, cold cost in CPU s as measured in the module
    docstring, runs), each family run in order in one process: its first run compiles
    it, the rest are ≤ 2 s."""
    from test_compiled import ALL_KINDS, TIME_KINDS
    from test_compiled_adjoint import OBJECTIVES
    from test_compiled_sparse import _chain_toml
    from parmbs import compiled
    kinds = tmp / "kinds.toml"
    kinds.write_text(ALL_KINDS + OBJECTIVES)
    time_kinds = tmp / "time-kinds.toml"
    time_kinds.write_text(TIME_KINDS + TIME_OBJECTIVE)
    chain = tmp / "chain.toml"
    chain.write_text(_chain_toml(-(-compiled.SPARSE_FROM // 5), 3, 2))
    short = "simulation.t_end=0.004"
    ab = 'simulation.genalpha_form="arnold-bruls"'
    dopri = ('simulation.formulation="index1"', 'simulation.integrator="dopri5"')
    planar = [(CONFIGS / "fivebar.toml", short), (CONFIGS / "pendulum.toml", short)]
    # error-controlled steps: the Newmark-family step with the estimate in its call
    # (newmark_step.newton_step_estimate)
    planar += [(CONFIGS / "fivebar.toml", "simulation.t_end=0.02", "simulation.adapt.rtol=1e-4",
                "simulation.adapt.atol=1e-4")]
    for integrator in ("genalpha", "trapezoidal", "newmark", "hht", "wbz"):
        planar += [(CONFIGS / "fivebar.toml", short, f"simulation.integrator={integrator}"),
                   (kinds, short, f"simulation.integrator={integrator}"),
                   (time_kinds, short, f"simulation.integrator={integrator}")]
    return [
        ("planar", 36, planar),
        # the Arnold–Brüls form on a planar model, fixed and error-controlled steps
        ("arnold-bruls", 42, [(CONFIGS / "fivebar.toml", short, ab),
              (CONFIGS / "fivebar.toml", "simulation.t_end=0.02", ab, "simulation.adapt.rtol=1e-4",
               "simulation.adapt.atol=1e-4")]),
        ("vehicle", 41, [(CONFIGS / "buggy-lane-change.toml", "simulation.t_end=0.01"),
              (CONFIGS / "buggy-step-descent.toml", short),
              (CONFIGS / "iltis.toml", "simulation.t_end=0.01", "simulation.adapt.rtol=1.0",
               "simulation.adapt.atol=1.0", "simulation.adapt.dt_max=5e-3"),
              # enough error-controlled steps for the step with the estimate in its call
              # (ab_step.ab_newton_step_estimate: a complete divided-difference table)
              (CONFIGS / "iltis.toml", "simulation.t_end=0.004", "spatial.road.x0=1.0", "simulation.rho_inf=0.9",
               "simulation.adapt.rtol=1e-6", "simulation.adapt.atol=1e-7")]),
        ("spatial", 25, [*((CONFIGS / "spatial-double-pendulum.toml", short, f"simulation.integrator={integrator}",
                 "simulation.genalpha_form=chung-hulbert", "simulation.stabilization=none")
                for integrator in ("genalpha", "trapezoidal")),
              (CONFIGS / "spatial-double-pendulum.toml", short),        # as shipped: Arnold–Brüls
              (CONFIGS / "heavy-top.toml", short)]),
        # a hanging chain past compiled.SPARSE_FROM unknowns: the sparse LU kernels
        ("sparse", 13, [(chain, "simulation.integrator=genalpha")]),
        # the variational integrator's compiled forward solves (compiled/saddle_lu.py:
        # factor_csr and solve_refined_csr called from Python, from compiled.SPARSE_FROM unknowns
        # on: a 15-element flexible pendulum, N = 66; cold 2.1 s CPU, load ~10)
        ("variational-lu", 3, [(CONFIGS / "flexible-pendulum.toml", short, "beams.beam.elements=15")]),
        # the variational forward's component kernels (compiled/variational_kinds.py) on
        # the double wishbone, every kind of it (variational_kinds.warm_up cold: 4.4 s CPU, load ~7),
        # and the one call per Newton iteration over them (compiled/variational_newton.py
        # ``fused``: +5.4 s; the compiled note's whole warm-up cold 11.8 s against 5.7 s
        # without it, load ~5), and the adjoint step's solves, products and second derivatives
        # (compiled/variational_adjoint.py; the whole warm-up cold 13.4 s, load ~8)
        ("variational-kinds", 14, [(CONFIGS / "double-wishbone-opt.toml", "simulation.t_end=0.002")]),
        # the own Dormand–Prince on the index-1 ODE (compiled/index1_rk.py): a family no
        # other model or integrator compiles; cold, the first test of tests/test_dopri.py
        # compiled it on the serial path: 26.9 s CPU, 0.36 s after these (26.5 + 1.3 s here;
        # helper slow19, one run each, loaded machine).  A callable run: its own entry points
        ("dopri", 28, [(CONFIGS / "fivebar.toml", short, *dopri),
                       lambda: _dopri_partials(short, *dopri)]),
    ]


def split(costs, n):
    """Families for each of ``n`` processes: the costliest first, each to the least
    loaded process (n = 2, the costs above: Arnold–Brüls + spatial + Dormand–Prince 95 s,
    and planar + vehicle + sparse 90 s)."""
    parts, load = [[] for _ in range(n)], [0.0] * n
    for i in sorted(range(len(costs)), key=lambda i: -costs[i]):
        k = load.index(min(load))
        parts[k].append(i)
        load[k] += costs[i]
    return [sorted(p) for p in parts]


def main(tmp, part=0, nparts=1):
    """Run this process's share of the families.  A family whose runs all passed leaves
    a stamp in numba's cache directory (keyed by the compiled sources, so an edit there
    empties it): the next session skips it instead of paying its cached loads again."""
    import os
    from parmbs.compiled import _cache
    # the stamp holds the code generation target (NUMBA_CPU_NAME: tests/conftest.py; a
    # kernel cached for another target is another cache entry); the directory is one per
    # content of compiled/*.py, shared by every clone (compiled/_cache.py).  With numba's
    # own per-clone cache (another numba version: _cache.SHARED false) numba also drops a
    # kernel whose source file's time stamp changed, so then the files' mtimes too
    src = Path(_cache.HERE)
    sig = repr(([] if _cache.SHARED else [(f.name, f.stat().st_mtime_ns, f.stat().st_size)
                                           for f in sorted(src.glob("*.py"))])
               + [os.environ.get("NUMBA_CPU_NAME"), os.environ.get("NUMBA_CPU_FEATURES")])
    where = _cache.directory()
    fams = groups(tmp)
    for i in split([c for _, c, _ in fams], nparts)[part]:
        name, _, runs = fams[i]
        stamp = Path(where or ".") / f"numba_warm-{name}.done"
        if where and stamp.exists() and stamp.read_text() == sig:
            continue
        if all([run() if callable(run) else _run(*run) for run in runs]) and where:
            stamp.parent.mkdir(parents=True, exist_ok=True)
            stamp.write_text(sig)


if __name__ == "__main__":
    import tempfile
    part, nparts = map(int, sys.argv[1].split("/")) if len(sys.argv) > 1 else (0, 1)   # "i/n": the i-th of n shares
    with tempfile.TemporaryDirectory(prefix="parmbs-warm-") as d:
        main(Path(d), part, nparts)
