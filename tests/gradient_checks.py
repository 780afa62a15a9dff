"""Checks shared by the tests of new components and formulations: the gradient of a
Problem by its four methods compared within given bounds, and a bad-input run of the
CLI that must end in one ``parmbs: error:`` line with exit 2.

Bounds stay in the calling test, each with its estimate written beside it (the usual:
adjoint vs direct and complex step ≲ N κ(J) ε; central FD at δ = 1e-5, truncation δ²
and Newton noise 1e-12/2δ)."""
import subprocess
import sys

import numpy as np

from parmbs.sensitivity.complex_step import complex_step_gradient


def rel(a, b):
    """max |a − b| / max |b|."""
    return np.max(np.abs(a - b)) / np.max(np.abs(b))


def assert_gradients_agree(pr, adj_dir=1e-9, adj_cs=1e-9, adj_fd=1e-6, fd_step=1e-5, tag=""):
    """Forward run, then adjoint vs direct, complex step (``adj_cs=None``: not used) and
    central FD for every objective; prints the measured differences; returns the adjoint
    gradient."""
    if pr.checkpoint is None and pr.adapt is None and not pr.stepper.whole_runs:
        # FD first: its closing run at the nominal design (Problem.finite_differences leaves
        # the problem there) is the forward run the adjoint and direct sweeps go along —
        # one forward run fewer than forward, sweeps, FD (the same p: the same trajectory)
        fd = pr.finite_differences(fd_step)
        adj, dir_ = pr.adjoint(), pr.direct()
    else:       # checkpoint file, adaptive steps, PETSc TS whole runs: as the sweeps need it
        pr.forward()
        adj, dir_, fd = pr.adjoint(), pr.direct(), pr.finite_differences(fd_step)
    cs = complex_step_gradient(pr) if adj_cs is not None else None
    for o in adj:
        line = f"{tag}{o}: |adj-dir| {rel(dir_[o], adj[o]):.1e} |adj-fd| {rel(fd[o], adj[o]):.1e}"
        if cs is not None:
            line += f" |adj-cs| {rel(cs[o], adj[o]):.1e}"
        print(line + f"  grad {np.asarray(adj[o])}")
        assert rel(dir_[o], adj[o]) <= adj_dir, line
        assert rel(fd[o], adj[o]) <= adj_fd, line
        if cs is not None:
            assert rel(cs[o], adj[o]) <= adj_cs, line
    return adj


def min_fd_error(pr, adj, rel_steps, bound):
    """{objective: min over ``rel_steps`` of rel(FD at that step, adj)}, the steps tried in
    the given order and the next one run only while some objective is still above
    ``bound``: ``min ≤ bound`` is true exactly when it is with every step run (a step
    after the first within the bound cannot change it), at one sweep instead of
    len(rel_steps) where the first step suffices.  Put the step expected best first.
    Prints each step's errors."""
    best = {o: np.inf for o in adj}
    for h in rel_steps:
        fd = pr.finite_differences(h)
        for o in adj:
            best[o] = min(best[o], rel(fd[o], adj[o]))
        print(f"FD step {h:g}: " + ", ".join(f"{o} {rel(fd[o], adj[o]):.1e}" for o in adj))
        if all(e <= bound for e in best.values()):
            break
    return best


def central_difference(pr, p0, rho, j, h, objective):
    """(ψ(ρ + h e_j) − ψ(ρ − h e_j)) / 2h over the design values ρ at parameters p0."""
    vals = []
    for sign in (1, -1):
        r = rho.copy()
        r[j] += sign * h
        p = pr.design.apply(p0, r)
        vals.append(pr.objective_values(pr.forward(p), p)[objective])
    return (vals[0] - vals[1]) / (2 * h)


def taylor_orders(pr, objective, seed=2, eps=(4e-3, 2e-3, 1e-3, 5e-4)):
    """Observed orders log2(r(ε)/r(ε/2)) of the Taylor remainders
    r(ε) = |ψ(ρ + εd) − ψ(ρ) − ε ∇ψ·d| along a random relative direction d of the design
    values (the forward run at the nominal design is restored afterwards)."""
    p0 = pr.sys.p.copy()
    rho = pr.design.values(p0)
    g = pr.adjoint(p0)[objective]
    psi0 = pr.objective_values(pr.traj, p0)[objective]
    d = np.random.default_rng(seed).uniform(-1, 1, len(rho)) * rho
    res = []
    for e in eps:
        p = pr.design.apply(p0, rho + e * d)
        res.append(abs(pr.objective_values(pr.forward(p), p)[objective] - psi0 - e * g @ d))
    pr.forward(p0)
    orders = np.log2(np.array(res[:-1]) / np.array(res[1:]))
    print("Taylor remainders", ", ".join(f"{r:.3e}" for r in res), "observed orders", orders)
    return orders


def cli_one_line_error(args, cwd, *words):
    """``python -m parmbs ARGS`` exits 2 with exactly one stderr line containing every
    word, and no traceback; returns the line.  Run in this process (``cli.main``, the
    function ``python -m parmbs`` calls: tests/cli_helpers.py) unless ARGS has PETSc
    options (they need PetscInitialize: a real process); the real process's exit 2 is
    tests/test_cli.py's test_bad_usage and test_bad_input_exit_2["unknown key"]."""
    from cli_helpers import parmbs_in_process, petsc_options
    if petsc_options(args):
        r = subprocess.run([sys.executable, "-m", "parmbs", *map(str, args)], capture_output=True, text=True,
                           timeout=120, cwd=cwd)
    else:
        r = parmbs_in_process(*args, cwd=cwd)
    assert r.returncode == 2 and "Traceback" not in r.stderr, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]
