"""The compiled Newmark steps with the sparse LU (compiled/newton_lu.py, issue 19's
medium models) against the numpy path: one adjoint/tangent step with every parameter a
design column, and a hanging chain as shipped (sparse from ``compiled.SPARSE_FROM``
unknowns) — trajectory and gradients.

Bounds: those of tests/test_compiled.py (trajectories: δq ≤ N u ‖q‖∞ over N steps,
amplified by 1/(βh²) in a and λ) and tests/test_compiled_adjoint.py (one step:
2 (N + 100) κ₁(J) u).  On the chain one u per step is too few: the position update
q = (q_n + h v_n + (½−β)h² a_n) + βh² a_{n+1} rounds three sums of size ‖q‖∞ in each
path, so the two paths may part by 6 u ‖q‖∞ per step (``rounds = 6``) — measured on a
20-link chain after 30 steps, the numpy path against *itself* with MUMPS instead of
PETSc's LU: 1.1× the one-u bound (the compiled dense LU 1.4×, the sparse 2.0×; after
100 steps 0.74×, 0.53×, 0.59×: the differences grow slower than linearly).
They assume a backward-stable solve.  The sparse LU does not pivot (its static order
puts each multiplier after its constraint's coordinates: sparse_lu.py), so its growth
is not bounded a priori; the one step of iterative refinement of every solve
(sparse_lu._refine) restores a backward error of order u when the plain solve is
accurate to better than ~1/κ — which these tests check through the same bounds.
"""
import importlib.util

import numpy as np
import pytest

from parmbs import compiled
from test_compiled import ALL_KINDS, ROOT, TIME_KINDS, _bounds, _problem
from test_compiled_adjoint import one_step_compare

pytest.importorskip("numba", reason="numba not installed: the compiled path is optional")


def _chain_toml(links, steps, ndesign):
    spec = importlib.util.spec_from_file_location("bench_gradient", ROOT / "benchmarks" / "gradient.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.chain_toml(links, steps, ndesign)


@pytest.mark.parametrize("model", ["kinds", "time-kinds", "spatial-double-pendulum"])
@pytest.mark.parametrize("integrator", ["genalpha", "trapezoidal"])
def test_sparse_one_step_equals_numpy_for_every_parameter(monkeypatch, tmp_path, model, integrator):
    """The small models of test_compiled_adjoint.py (every planar kind) and
    test_compiled_spatial.py (the spatial kinds) with the sparse LU forced
    (SPARSE_FROM = 0): the compiled adjoint and tangent steps (J's factorization on the
    SparseOperator's pattern — a kernel entry off it would be dropped and show here —,
    the transposed refined solve, the products over J's pattern) equal the numpy ones
    within e = 2(N + 100) κ₁(J) u, with and without the old-state terms."""
    monkeypatch.setattr(compiled, "SPARSE_FROM", 0)
    if model.startswith("spatial"):
        from test_compiled_spatial import _problem as spatial_problem
        pr = spatial_problem(ROOT / "configs" / f"{model}.toml", f"simulation.integrator={integrator}")
    else:
        path = tmp_path / f"{model}.toml"
        path.write_text(ALL_KINDS if model == "kinds" else TIME_KINDS)
        pr = _problem(path, f"simulation.integrator={integrator}")
    assert pr.stepper.compiled.S is not None
    st, ref_grad = one_step_compare(pr, seed=11, nobj=2)
    # most parameters move R (a third on the spatial model: test_compiled_spatial.py)
    assert np.count_nonzero(ref_grad) > st.nd // (3 if model.startswith("spatial") else 2)


def test_dense_below_and_sparse_from_the_crossover(tmp_path):
    """The five-bar (22 unknowns) keeps the dense LU, a chain of SPARSE_FROM unknowns
    takes the sparse one (as shipped, ``auto``)."""
    five = _problem(ROOT / "configs" / "fivebar.toml")
    assert five.stepper.compiled is not None and five.stepper.compiled.S is None
    links = -(-compiled.SPARSE_FROM // 5)                  # N = 5·links ≥ SPARSE_FROM
    path = tmp_path / "chain.toml"
    path.write_text(_chain_toml(links, 2, 1))
    pr = _problem(path)
    assert pr.sys.n + pr.sys.m >= compiled.SPARSE_FROM and pr.stepper.compiled.S is not None


def test_chain_as_shipped_matches_numpy_path(tmp_path):
    """A hanging chain just past the crossover, generalized-α (ρ∞ 0.9), 100 steps, two
    objectives over 5 design variables: the compiled run (sparse LU) against the numpy
    one — every state within test_compiled.py's per-quantity bounds, the Newton
    iterations equal, each gradient (adjoint and direct) within the largest relative bound of the
    quantities.  Measured observed ÷ bound (12 links, N = 60; printed with -s): q 0.086,
    v 0.006, a 0.05, λ 0.006, gradients ≤ 2e-8."""
    links = -(-compiled.SPARSE_FROM // 5)
    path = tmp_path / "chain.toml"
    path.write_text(_chain_toml(links, 100, 5))
    sets = ("simulation.integrator=genalpha",)
    ref, cmp_ = _problem(path, *sets, "simulation.compiled=off"), _problem(path, *sets)
    assert ref.stepper.compiled is None and cmp_.stepper.compiled.S is not None
    tr, tc = ref.forward(), cmp_.forward()
    bound = _bounds(ref, tr, ref.nsteps, rounds=6)
    ratios = {}
    for k in ("q", "v", "a", "lam"):
        d = np.max(np.abs(getattr(tr, k) - getattr(tc, k)))
        ratios[k] = d / bound[k]
        assert d <= bound[k], (k, d, bound[k])
    assert np.array_equal(tr.newton_its, tc.newton_its)
    assert not np.array_equal(tr.a, tc.a)              # two paths indeed
    rel = max(bound[k] / np.max(np.abs(getattr(tr, k))) for k in ("q", "v", "a", "lam"))
    for how in ("adjoint", "direct"):
        gr, gc = getattr(ref, how)(), getattr(cmp_, how)()
        assert gr.keys() == gc.keys() and len(gr) == 2
        for k in gr:
            d = np.max(np.abs(gr[k] - gc[k])) / np.max(np.abs(gr[k]))
            ratios[f"{how} {k}"] = d / rel
            assert d <= rel, (how, k, d, rel)
    print("observed ÷ bound:", {k: f"{r:.2g}" for k, r in ratios.items()})
