"""Results under `mpirun -n 2` equal serial results to round-off.

Run with `mpirun -n 2 python -m pytest --with-mpi -m mpi tests`: each rank solves the
model once with the matrices distributed over COMM_WORLD (MUMPS) and once alone on
COMM_SELF (PETSc LU), and the two must agree."""
import numpy as np
import pytest

from parmbs._petsc import PETSc
from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem

from conftest import CONFIGS


def _run(comm, name, overrides):
    pr = Problem(load_config(str(CONFIGS / f"{name}.toml"), overrides), comm=comm)
    traj = pr.forward()
    return traj, pr.objective_values(), pr.adjoint(), pr.direct()


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("name,integrator", [("fivebar", "trapezoidal"), ("fivebar", "genalpha"),
                                             ("double-pendulum", "newmark")])
def test_distributed_equals_serial(name, integrator):
    # Newmark with γ > ½ (γ = ½ is the trapezoidal rule, covered on the five-bar; on the
    # fast double pendulum its weakly unstable (−1)^n multiplier mode amplifies round-off)
    ov = ["simulation.t_end=0.1", f"simulation.integrator={integrator}",
          "simulation.beta=0.3025", "simulation.gamma=0.6"]
    tp, vp, ap, dp = _run(PETSc.COMM_WORLD, name, ov)
    ts, vs, as_, ds = _run(PETSc.COMM_SELF, name, ov)
    assert PETSc.COMM_WORLD.getSize() >= 2
    scale = np.max(np.abs(ts.q))
    assert np.max(np.abs(tp.q - ts.q)) <= 1e-12 * scale
    # a and λ are Newton unknowns converged on the *position* update βh²|Δa| ≤ atol + rtol|q|:
    # two solvers (MUMPS vs PETSc LU) may stop at iterates that differ by up to that / βh²
    pr = Problem(load_config(str(CONFIGS / f"{name}.toml"), ov), comm=PETSc.COMM_SELF)
    nt = pr.config.simulation.newton
    bound = (nt.atol + nt.rtol * scale) / (pr.stepper.beta * pr.h ** 2)
    print(f"{name}/{integrator}: |Δq| {np.max(np.abs(tp.q - ts.q)):.1e}, |Δλ| {np.max(np.abs(tp.lam - ts.lam)):.1e}"
          f" (Newton bound {bound:.1e})")
    assert np.max(np.abs(tp.lam - ts.lam)) <= bound
    assert np.max(np.abs(tp.v - ts.v)) <= bound * pr.stepper.gamma * pr.h
    assert np.max(np.abs(tp.a - ts.a)) <= bound
    for k in vs:
        assert abs(vp[k] - vs[k]) <= 1e-12 * abs(vs[k])
        g = np.max(np.abs(as_[k]))
        assert np.max(np.abs(ap[k] - as_[k])) <= 1e-10 * g, k
        assert np.max(np.abs(dp[k] - ap[k])) <= 1e-9 * g, k


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("name", ["fivebar", "double-pendulum"])
def test_penalty_distributed_equals_serial(name, alpha=1e5):
    """Penalty/TS path under mpirun: the TS runs replicated on each rank, the initial
    assembly over COMM_WORLD (MUMPS); gradients equal the all-serial run and agree
    between ranks (every rank must hold the same numbers).

    The trajectories differ by one ulp (MUMPS vs PETSc LU in the initial assembly);
    the gradient amplifies that ∝ α (double pendulum: 9e-12 at α = 1e5, 2.4e-10 at
    1e6), the conditioning of M + αΦ_qᵀΦ_q — so the check runs at α = 1e5."""
    ov = ["simulation.t_end=0.05", 'simulation.formulation="penalty"', 'simulation.integrator="ts-cn"',
          f"simulation.penalty.alpha={alpha}"]
    tp, vp, ap, dp = _run(PETSc.COMM_WORLD, name, ov)
    ts, vs, as_, ds = _run(PETSc.COMM_SELF, name, ov)
    comm = PETSc.COMM_WORLD.tompi4py()
    for k in vs:
        g = np.max(np.abs(as_[k]))
        print(f"penalty α={alpha:g} {name}/{k}: |Δq| {np.max(np.abs(tp.q - ts.q)):.1e} |adj(world) - adj(self)| {np.max(np.abs(ap[k] - as_[k])) / g:.1e}")
        assert abs(vp[k] - vs[k]) <= 1e-12 * abs(vs[k])
        assert np.max(np.abs(ap[k] - as_[k])) <= 1e-10 * g, k
        assert np.max(np.abs(dp[k] - ap[k])) <= 1e-9 * g, k
        other = comm.allgather(ap[k])
        assert all(np.array_equal(o, other[0]) for o in other), k
