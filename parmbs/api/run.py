"""``simulate``, ``gradient``, ``verify``, ``optimize``: the CLI's commands as functions
with numpy results.

Thin wrappers over ``parmbs.sensitivity.problem.Problem`` (forward run, objective
values, adjoint / direct / finite-difference / complex-step gradients) and
``parmbs.sensitivity.verify`` (the bounds and verdicts of ``parmbs verify``), and the
optimization driver of ``parmbs optimize`` (parmbs/optimize/driver.py).  Each
takes a model as a ``Model`` (parmbs/api/model.py), a validated ``Config`` or a TOML
path, plus ``--set``-style ``overrides`` and optionally a ``design``: new design
values ρ, as an array (one per design column, ``problem.design.names``) or a dict
{design name: value} (the others keep the config's values).

The numbers are the CLI's: the same Config runs the same code (``gradient`` is what
``parmbs gradient`` computes in one process; tests/test_api.py compares bit for bit).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

from ..config import Config, load_config
from .model import Model

METHODS = ("adjoint", "direct", "fd", "cs")


def as_config(model: Model | Config | str | os.PathLike, overrides: Iterable[str] = ()) -> Config:
    """The validated Config of a Model, a Config (overrides applied by revalidating
    its TOML dict) or a TOML file path."""
    overrides = list(overrides)
    if isinstance(model, Model):
        return model.config(overrides)
    if isinstance(model, Config):
        if not overrides:
            return model
        return Model.from_dict(model.to_dict(), model.source or "<config>").config(overrides)
    return load_config(model, overrides)


def problem(model, overrides: Iterable[str] = (), comm=None):
    """``Problem(config)``: the model, stepper, design space and objectives (for loops of
    your own: ``objective_function``, examples/optimize_tao.py)."""
    from ..sensitivity.problem import Problem
    return Problem(as_config(model, overrides), comm=comm)


def design_parameters(pr, design=None) -> np.ndarray:
    """The model parameter vector p with ``design`` (array or {name: value}) written in."""
    if design is None:
        return pr.sys.p.copy()
    rho = np.array(pr.design.values(pr.sys.p), dtype=float)
    if isinstance(design, dict):
        names = list(pr.design.names)
        for name, value in design.items():
            if name not in names:
                raise KeyError(f"no design variable {name!r} (known: {', '.join(names)})")
            rho[names.index(name)] = value
    else:
        new = np.asarray(design, dtype=float)
        if new.shape != rho.shape:
            raise ValueError(f"design has shape {new.shape}, expected {rho.shape} ({len(rho)} design columns)")
        rho = new
    return pr.design.apply(pr.sys.p, rho)


@dataclass
class Run:
    """A forward run: time t (N+1,), states q, v, a (N+1, n) and multipliers lam
    (N+1, m); ``coordinates`` names q's columns; ``values`` {objective: ψ}; design
    names and values ρ; ``problem`` the Problem it ran in (its ``traj`` is this run)."""
    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    a: np.ndarray
    lam: np.ndarray
    coordinates: list
    values: dict
    design: list
    rho: np.ndarray
    problem: Any = field(repr=False)

    def coordinate(self, name: str) -> np.ndarray:
        """The history of one coordinate, e.g. ``run.coordinate("B12.angle")``."""
        return self.q[:, self.coordinates.index(name)]


@dataclass
class Gradient:
    """ψ and ∇ψ: ``values`` {objective: ψ}, ``gradients`` {objective: array over the
    design columns ``design``} at design values ``rho``, by ``method``."""
    values: dict
    gradients: dict
    design: list
    rho: np.ndarray
    method: str
    problem: Any = field(repr=False)

    def as_dict(self) -> dict:
        """{objective: {design name: dψ/dρ}} (the JSON's layout, docs/output.md)."""
        return {o: dict(zip(self.design, map(float, g))) for o, g in self.gradients.items()}


def _forward(pr, p):
    from ..io.hdf5 import coordinate_names
    traj = pr.forward(p)
    return Run(traj.t, traj.q, traj.v, traj.a, traj.lam, coordinate_names(pr.sys), pr.objective_values(),
               list(pr.design.names), np.asarray(pr.design.values(p), float), pr)


def simulate(model, design=None, overrides: Iterable[str] = ()) -> Run:
    """Run the model forward (``parmbs simulate``); returns a ``Run``."""
    pr = problem(model, overrides)
    return _forward(pr, design_parameters(pr, design))


def gradient(model, method: str = "adjoint", design=None, overrides: Iterable[str] = ()) -> Gradient:
    """ψ and ∇ψ of every objective (``parmbs gradient``): ``method`` adjoint (one
    backward sweep), direct (one tangent column per design variable), fd (central
    differences, ``sensitivity.fd_step``) or cs (complex step)."""
    if method not in METHODS:
        raise ValueError(f"method {method!r} not in {METHODS}")
    pr = problem(model, overrides)
    p = design_parameters(pr, design)
    run = _forward(pr, p)
    if method == "adjoint":
        grads = pr.adjoint()
    elif method == "direct":
        grads = pr.direct()
    elif method == "fd":
        if design is not None:
            pr.sys.p = p                   # finite_differences perturbs around sys.p
        grads = pr.finite_differences(pr.config.sensitivity.fd_step)
    else:
        from ..sensitivity.complex_step import complex_step_gradient
        grads = complex_step_gradient(pr, p)
    return Gradient(run.values, {o: np.asarray(g, float) for o, g in grads.items()}, run.design, run.rho,
                    method, pr)


def objective_function(pr, objective: str):
    """``f(rho) -> (ψ, dψ/dρ)`` of one objective: one forward run and one adjoint sweep
    per call (the pattern of scipy's ``jac=True`` and of TAO's objective-gradient
    callback).  ``f.evaluations`` counts the calls."""
    def f(rho):
        p = pr.design.apply(pr.sys.p, np.asarray(rho, dtype=float))
        pr.forward(p)
        f.evaluations += 1
        return pr.objective_values()[objective], pr.adjoint()[objective]
    f.evaluations = 0
    return f


@dataclass
class Optimized:
    """An optimization (``parmbs optimize``): ``code`` 0 done (converged or at
    ``optimize.max_it``), otherwise the CLI's exit code; final design ``rho`` over
    ``design``; ``history`` the record's per-iteration rows (docs/output.md,
    ``/optimize/history``); ``path`` the record file."""
    code: int
    objective: str
    design: list
    rho: np.ndarray
    history: np.ndarray
    path: str


def optimize(model, path, overrides: Iterable[str] = (), restart: bool = False, out=None) -> Optimized:
    """TAO or MMA on the adjoint gradient, every evaluation recorded in the HDF5 file
    ``path`` (written as ``path.partial`` and renamed when done; ``restart=True``
    continues a partial record) — parmbs/optimize/driver.py, as ``parmbs optimize``.
    ``out(line)`` receives the progress lines (default: none).  Method, objective,
    bounds and tolerances come from ``[optimize]`` and ``[[design]]``."""
    from ..optimize import Optimization
    overrides = list(overrides)
    cfg = as_config(model, overrides)
    opt = Optimization(cfg, path, restart=restart, out=out or (lambda line: None), sets=overrides)
    code, rho = opt.run()
    return Optimized(code, opt.objective, list(opt.problem.design.names),
                     None if rho is None else np.asarray(rho, float), np.asarray(opt.history), opt.path)


@dataclass
class Verification:
    """``parmbs verify`` as data: one ``verify.Check`` per (objective, design variable)
    (adjoint, direct, complex step, FD plateau, bounds, ``status``), the Taylor test's
    observed order per objective, and ``failures`` (empty: the gradients stand)."""
    values: dict
    checks: list
    taylor_order: dict
    failures: list

    @property
    def ok(self) -> bool:
        return not self.failures


def verify(model, overrides: Iterable[str] = ()) -> Verification:
    """Adjoint vs direct within the measured round-off bound, confirmed by complex step
    or an FD step sweep, and a Taylor test (sensitivity/verify.py holds the estimates
    behind every bound); what ``parmbs verify`` prints, returned instead."""
    from ..sensitivity import verify as V
    pr = problem(model, overrides)
    cfg = pr.config
    traj = pr.forward()
    values = pr.objective_values(traj)
    p0 = pr.sys.p.copy()
    adj, _, _, _, _, sweeps, checks = V.run_checks(pr, p0)
    failures = [f"{c.objective}/{c.name}: {c.reason}" for c in checks if c.status == "FAILED"]
    eps = list(V.TAYLOR_EPS)
    r = V.taylor_remainders(pr, p0, values, adj, eps)
    orders = {}
    for o in adj:
        orders[o] = V.taylor_orders(eps, r[o], values[o], noise=V.psi_noise(sweeps, o))[1]
        bad = V.taylor_failure(o, orders[o], values[o], sweeps)
        if bad:
            failures.append(bad)
    return Verification(values, checks, orders, failures)


__all__ = ["Run", "Gradient", "Optimized", "Verification", "as_config", "problem", "design_parameters",
           "simulate", "gradient", "objective_function", "optimize", "verify", "METHODS"]
