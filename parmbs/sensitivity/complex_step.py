"""Complex-step gradient of the whole discrete computation (verification method ``cs``).

    dψ/dρ_j = Im ψ(ρ + i h e_j) / h,   h = 1e-30,

with ψ the same discrete objective the adjoint differentiates: the same initial
assembly, the same steps, the same trapezoidal quadrature.  Unlike central
differences there is no subtractive cancellation, so the result is exact to the
Newton tolerance — a sharper check of the adjoint than finite differences.

How the discrete scheme runs in complex arithmetic: residuals (Φ, Φ_q, γ, force
residuals and the objective integrands are complex-safe numpy) are evaluated at the
complex state; Newton matrices are built at the real part of the state
(``StateEval.real``) and each complex right-hand side is solved as two real ones.
Newton with that real Jacobian converges to the complex solution of the complex
residual, so the imaginary parts carry the derivative.  One complex forward run per
design variable: verification, not production (use ``direct`` or ``adjoint``).
"""
import numpy as np

CS_STEP = 1e-30


from ..model.system import ModelError
from ..integrators.timeloop import set_step


def objective_values_complex(problem, p):
    """ψ(p) for every objective from one forward run at a complex parameter vector."""
    stepper, sysm = problem.stepper, problem.sys
    if "forward" in stepper.whole_runs:
        raise ModelError("simulation.integrator",
                         f"'{problem.config.simulation.integrator}' runs its forward run whole (PETSc TS, or the "
                         "compiled Dormand–Prince loop), in real arithmetic only; use --method fd (or an index3 "
                         "integrator) for complex step")
    # the step sequence of the last real run (adaptive runs: the accepted steps, frozen)
    grid = problem.grid
    N, w = grid.steps, grid.weights(problem.quadrature)
    t = problem.t0
    x = stepper.initial(t, p)
    refs = [ob.reference(sysm, x[0], p) for ob in problem.objectives]
    acc = np.zeros(len(problem.objectives), complex)
    signals = {j: [] for j, ob in enumerate(problem.objectives) if getattr(ob.integrand, "history", False)}

    def add(k, t, x):
        x = x[:4]                         # (q, v, a, λ): a stepper's trailing blocks are its own
        for j, (ob, ref) in enumerate(zip(problem.objectives, refs)):
            if j in signals:              # ride measure: the signal now, the filter at the end (ride.py)
                signals[j].append(ob.integrand.raw(sysm, t, x, p, ref))
            elif ob.integrand:
                acc[j] += w[k] * ob.integrand.raw(sysm, t, x, p, ref)
            if ob.terminal and k == N:
                acc[j] += ob.terminal.raw(sysm, t, x, p, ref)

    add(0, t, x)
    for k in range(N):
        set_step(stepper, grid.h[k])
        x, _ = stepper.step(k, grid.t[k], x, p)
        t = grid.t[k + 1]
        add(k + 1, t, x)
    for j, sig in signals.items():
        acc[j] += problem.objectives[j].integrand.evaluate(np.array(sig), grid)
    return {ob.name: ob.weight * acc[j] for j, ob in enumerate(problem.objectives)}


def _exact_newton_twin(problem):
    """The problem itself, or — when its stepper solves Newton with the continuum Schur
    operator (flexible/continuum_schur.py) — a twin of the same config on the plain LU
    path.  The Schur Newton iterates with a lagged elastic factor J̃ ≠ J and stops on
    the real part's estimated error; the imaginary part then converges only linearly
    and is left unconverged: topopt-crank (10 × 2 elements, 2 steps) gave complex-step
    gradients 1.5e-5 (of ‖∇ψ‖∞) off the adjoint, 2.6e-11 on the LU path."""
    if getattr(problem.stepper, "schur", None) is None:
        return problem
    from .._petsc import PETSc
    from .problem import Problem
    opts, key = PETSc.Options(), "parmbs_continuum_schur"
    old = opts.getString(key) if opts.hasName(key) else None
    opts[key] = False
    try:
        return Problem(problem.config, comm=problem._comm)
    finally:
        if old is None:
            opts.delValue(key)
        else:
            opts[key] = old


def complex_step_gradient(problem, p=None, step=CS_STEP, progress=None):
    """∇ψ for every objective, one complex forward run per design variable."""
    p0 = problem.sys.p if p is None else p
    design = problem.design
    if problem.adapt is not None and (problem.traj is None or not np.array_equal(problem.traj.p, p0)):
        problem.forward(p0)               # adaptive: the accepted steps the complex runs replay
    grid = problem.grid
    problem = _exact_newton_twin(problem)
    problem._set_grid(grid)
    rho = design.values(p0)
    grads = {ob.name: np.zeros(len(rho)) for ob in problem.objectives}
    for j in range(len(rho)):
        r = rho.astype(complex)
        r[j] += 1j * step
        vals = objective_values_complex(problem, design.apply(p0.astype(complex), r))
        for name in grads:
            grads[name][j] = vals[name].imag / step
        if progress:
            progress(j + 1, len(rho))
    return grads
