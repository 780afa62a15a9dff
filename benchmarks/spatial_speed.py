"""Speed of the spatial models (issue 10): before/after the closed-form kernels, one run.

    python benchmarks/spatial_speed.py                        # all three models
    python benchmarks/spatial_speed.py --steps 200 --models iltis --set simulation.dt=1e-3

For each model, twice — "reference" (the per-primitive joint forms with the complex-step
constraint Hessian, and the 28-column complex-step Jacobians of the point-to-point
forces and of the Euler-parameter inertia: ``analytic = False`` on joints._SpatialJoint,
forces.PointToPoint, bodies.SpatialInertia and bodies.SpatialGyroscopic) and
"kernels" (joint_kernels.py, force_kernels.py, body_kernels.py, the default) — it prints

* forward CPU ÷ simulated time over ``--steps`` steps of the config's dt
  (``time.process_time``: CPU seconds of this serial process, so other jobs on the
  machine do not inflate it; the goal of issue 10 is < 1);
* per-step cost by group: CPU per Newton iteration of each group (force groups r and
  (r_q, r_v, r_a); constraint groups Φ_q, Φ and ∂(Φ_qᵀλ)/∂q; the matrix assembly and the
  KSP factor+solve), at the last state of the run, × the mean Newton iterations per
  step.  Cached geometry is dropped before each repetition, so each line is the cost of
  one iterate.

Both modes give the same trajectory to round-off (printed: max |Δq|).
"""
import argparse
import pathlib
import time

import parmbs  # noqa: F401  (before numpy: parmbs/_determinism.py pins numpy's CPU features for same-bytes results)
import numpy as np

from parmbs.config import load_config
from parmbs.sensitivity.problem import Problem
from parmbs.spatial import bodies as SB, forces as SF, joints as SJ

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODELS = {"double-pendulum": "spatial-double-pendulum.toml", "quarter-car": "spatial-quarter-car.toml",
          "iltis": "iltis.toml"}


def set_mode(analytic):
    SJ._SpatialJoint.analytic = analytic
    SF.PointToPoint.analytic = analytic
    SB.SpatialInertia.analytic = SB.SpatialGyroscopic.analytic = analytic


def cpu_per_call(f, reps):
    t0 = time.process_time()
    for _ in range(reps):
        f()
    return (time.process_time() - t0) / reps


def group_costs(pr, traj, reps):
    """{label: CPU seconds per Newton iteration} at the last state of ``traj``."""
    st = pr.stepper
    k = traj.steps
    ev = st._eval(traj.t[k], traj.x(k), pr.sys.p)
    out = {}

    def fresh(g):
        g.__dict__.pop("_gcache", None)

    for g, q, v, a, p in ev.F:
        def f(g=g, q=q, v=v, a=a, p=p):
            fresh(g)
            g.r(ev.t, q, v, a, p)
            g.jacobians(ev.t, q, v, a, p)
        out[f"force {type(g).__name__} ({g.ne})"] = cpu_per_call(f, reps)
    for g, q, v, a, lam, p in ev.C:
        def f(g=g, q=q, v=v, lam=lam, p=p):
            fresh(g)
            g.phi_q(ev.t, q, p)
            g.phi(ev.t, q, p)
            g.hess_lam(ev.t, q, p, lam)
        out[f"joint {type(g).__name__} ({g.ne})"] = cpu_per_call(f, reps)
    st._set_matrix(ev)
    F = ev.force_blocks(1.0, 1.0, 1.0)
    H = ev.hess_blocks()
    G = ev.phi_q_blocks()
    vals = F + H + G + [np.swapaxes(b, 1, 2) for b in G] + st.zero_diag
    out["assembly (set_values)"] = cpu_per_call(lambda: st.op.set_values(vals), reps)
    rhs = np.ones(st.op.N)

    def solve():
        st.op.set_values(vals)
        st.op.solve(rhs)
    out["KSP factor + solve"] = cpu_per_call(solve, reps) - out["assembly (set_values)"]
    return out


def run(name, path, steps, reps, sets=()):
    res = {}
    for mode, analytic in (("reference", False), ("kernels", True)):
        set_mode(analytic)
        dt = load_config(path, list(sets)).simulation.dt
        cfg = load_config(path, list(sets) + [f"simulation.t_end={steps * dt!r}"])
        pr = Problem(cfg)
        pr._follow_design = lambda p: None     # the design only changes force laws here
        pr.stepper.initial(0.0, pr.sys.p)      # warm-up (imports, PETSc set-up)
        t0 = time.process_time()
        traj = pr.forward()
        t_fwd = time.process_time() - t0
        its = float(np.mean(traj.newton_its))
        res[mode] = (t_fwd, steps * dt, its, group_costs(pr, traj, reps), traj.q[-1].copy(), pr)
    set_mode(True)
    (tr, sim, itr, cr, qr, pr), (tk, _, itk, ck, qk, _) = res["reference"], res["kernels"]
    print(f"\n== {name}: {path.name}: n = {pr.sys.n}, m = {pr.sys.m}, {pr.stepper.op.N} unknowns "
          f"({pr.stepper.op.ksp.getPC().getFactorSolverType()}), {pr.config.simulation.integrator}, "
          f"dt = {pr.h}, {steps} steps = {sim:.3g} s simulated")
    print(f"forward CPU / simulated time: reference {tr / sim:8.2f}   kernels {tk / sim:8.2f}   "
          f"(speed-up {tr / tk:.2f}x; {1e3 * tr / steps:.2f} -> {1e3 * tk / steps:.2f} ms per step; "
          f"Newton its/step {itr:.2f} / {itk:.2f}; max |dq| at the end {np.max(np.abs(qr - qk)):.1e})")
    print(f"{'per step (ms) = per iteration x its/step':44s} {'reference':>10s} {'kernels':>10s}")
    tot_r = tot_k = 0.0
    for key in cr:
        a, b = 1e3 * cr[key] * itr, 1e3 * ck[key] * itk
        tot_r, tot_k = tot_r + a, tot_k + b
        print(f"  {key:42s} {a:10.3f} {b:10.3f}")
    print(f"  {'sum':42s} {tot_r:10.3f} {tot_k:10.3f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--models", nargs="*", default=list(MODELS), choices=list(MODELS))
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="config override for every model, e.g. simulation.dt=1e-3")
    a = ap.parse_args()
    with open("/proc/loadavg") as f:
        print("load average:", f.read().strip())
    for m in a.models:
        run(m, ROOT / "configs" / MODELS[m], a.steps, a.reps, a.set)


if __name__ == "__main__":
    main()
