"""parmbs.optimize.mma (distributed, PETSc Vecs) against mmapy (serial reference):
the same iterates, asymptotes and multipliers to 1e-8 on Svanberg's toy problem, his
five-segment cantilever beam and a 60-variable convex quadratic with two constraints.
Also runs under ``mpirun -n 2`` (pytest --with-mpi): then x is split over both ranks."""
import numpy as np
import pytest

from parmbs._petsc import PETSc
from parmbs.optimize.mma import MMA, vec_from

mmapy = pytest.importorskip("mmapy", reason="mmapy (the serial MMA reference) is not installed: "
                            "pip install mmapy, or make setup (it is in the test extra)")


def toy(x):
    """Svanberg's toy problem (mmapy / MMA notes): min Σx² s.t. two balls of radius 3."""
    f0 = x @ x
    df0 = 2 * x
    c1, c2 = np.array([5.0, 2.0, 1.0]), np.array([3.0, 4.0, 3.0])
    f = np.array([(x - c1) @ (x - c1) - 9.0, (x - c2) @ (x - c2) - 9.0])
    df = np.array([2 * (x - c1), 2 * (x - c2)])
    return f0, df0, f, df


def beam(x):
    """The five-segment cantilever beam (Svanberg 1987's example, also in mmapy's): min weight
    s.t. the tip deflection bound  61/x₁³ + 37/x₂³ + 19/x₃³ + 7/x₄³ + 1/x₅³ ≤ 1."""
    k = np.array([61.0, 37.0, 19.0, 7.0, 1.0])
    return 0.0624 * x.sum(), np.full(5, 0.0624), np.array([k @ x**-3 - 1.0]), (-3 * k * x**-4)[None]


def quadratic(n=60, seed=1):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, n)) / np.sqrt(n)
    H = A.T @ A + 0.1 * np.eye(n)
    g = rng.normal(size=n)
    w = rng.uniform(0.5, 1.5, n)

    def fn(x):
        f0 = 0.5 * x @ H @ x + g @ x
        f = np.array([w @ x / n - 0.3, (x @ x) / n - 0.5])
        return f0, H @ x + g, f, np.array([w / n, 2 * x / n])
    return fn


PROBLEMS = {
    "toy": (toy, np.array([4.0, 3.0, 2.0]), 0.0, 5.0, 12),
    "beam": (beam, np.full(5, 5.0), 1.0, 10.0, 15),
    "quadratic": (quadratic(), np.full(60, 0.5), -1.0, 2.0, 15),
}


def reference(fn, x0, lo, hi, iters, move=0.5):
    """mmapy's outer loop as in its examples; the (x, low, upp) sequence."""
    n = len(x0)
    x = x0[:, None].copy()
    xold1, xold2 = x.copy(), x.copy()
    xmin, xmax = np.full((n, 1), lo), np.full((n, 1), hi)
    low, upp = xmin.copy(), xmax.copy()
    f0, df0, f, df = fn(x[:, 0])
    m = len(f)
    a0, a, c, d = 1.0, np.zeros((m, 1)), np.full((m, 1), 1000.0), np.ones((m, 1))
    seq = []
    for it in range(1, iters + 1):
        xmma, _, _, lam, *_, low, upp = mmapy.mmasub(m, n, it, x, xmin, xmax, xold1, xold2, f0, df0[:, None],
                                                     f[:, None], df, low, upp, a0, a, c, d, move)
        xold2, xold1, x = xold1, x, xmma.copy()
        seq.append((x[:, 0].copy(), low[:, 0].copy(), upp[:, 0].copy(), lam[:, 0].copy()))
        f0, df0, f, df = fn(x[:, 0])
    return seq


def ours(fn, x0, lo, hi, iters, move=0.5):
    comm = PETSc.COMM_WORLD
    n = len(x0)
    xv = vec_from(comm, x0)
    r0, r1 = xv.getOwnershipRange()
    mma = MMA(xv, vec_from(comm, np.full(n, lo)), vec_from(comm, np.full(n, hi)), m=len(fn(x0)[2]),
              move=move)
    gather = lambda v: np.concatenate(comm.tompi4py().allgather(v.getArray(readonly=True).copy()))
    seq = []
    x = x0.copy()
    for _ in range(iters):
        f0, df0, f, df = fn(x)
        mma.update(df0[r0:r1], f, df[:, r0:r1])
        x = gather(mma.x)
        seq.append((x, gather(mma.low), gather(mma.upp), mma.lam.copy()))
    mma.destroy()
    xv.destroy()
    return seq


def _compare(name):
    fn, x0, lo, hi, iters = PROBLEMS[name]
    ref, got = reference(fn, x0, lo, hi, iters), ours(fn, x0, lo, hi, iters)
    worst = 0.0
    for k, (r, g) in enumerate(zip(ref, got)):
        for what, a, b in zip(("x", "low", "upp", "lambda"), r, g):
            err = np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(a)))
            worst = max(worst, err)
            assert err <= 1e-8, (name, k, what, err)
    return ref, worst


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_same_iterates_as_mmapy(name):
    ref, worst = _compare(name)
    # the runs went somewhere: feasible and moving towards the optimum
    fn, x0 = PROBLEMS[name][:2]
    f0_start, f0_end = fn(x0)[0], fn(ref[-1][0])[0]
    assert np.max(fn(ref[-1][0])[2]) < 1e-5
    print(f"{name}: max relative difference {worst:.2e}; f0 {f0_start:.6g} -> {f0_end:.6g}")


def test_beam_optimum():
    """The beam's known optimum (Svanberg 1987): weight ≈ 1.340."""
    fn, x0, lo, hi, _ = PROBLEMS["beam"]
    x = ours(fn, x0, lo, hi, 30)[-1][0]
    assert abs(fn(x)[0] - 1.3399) < 1e-3 and abs(fn(x)[2][0]) < 1e-6


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("name", ["quadratic", "toy"])
def test_same_iterates_as_mmapy_mpi(name):
    _compare(name)
