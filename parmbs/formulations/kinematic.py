"""Kinematic analysis: every degree of freedom driven, the state at each time solved
from the constraints alone — no time integration (seed 004 Ch. 6, "kinematic analysis").

With as many constraint rows as coordinates (drivers on every DOF, m = n), the motion
is prescribed and each time t_k has its own exact state, independent of the others:

    position:      Φ(q_k, t_k; p) = 0                          (Newton)
    velocity:      Φ_q v_k = −Φ_t                               (linear)
    acceleration:  Φ_q a_k = −γ(q_k, v_k, t_k)
    reactions:     M a_k + Φ_qᵀλ_k = Q(q_k, v_k)  (the driving forces and joint loads)

— exactly what ``InitialState`` (integrators/initial.py) solves for a consistent start,
so each step is one InitialState solve at t_{k+1} (the last q as Newton's guess),
and its tangent and adjoint are InitialState's: dx_{k+1}/dρ does not depend on dx_k,
and the adjoint passes nothing back from x_{k+1} to x_k (μ_k receives only the
objective's own ∂g/∂x_k).  Velocities and accelerations are the exact derivatives of
the prescribed motion (a DOF-free index-3 run would give Newmark's approximations).
Objectives integrate as in every run (trapezoidal weights over the t_k).

``simulation.formulation = "kinematic"``; ``integrator`` is "trapezoidal" (it names
only the quadrature of the integrands).  A model with undriven degrees of freedom is
refused (one line naming them); fixed steps only.
"""
import numpy as np

from ..integrators.initial import InitialState
from ..integrators.newmark import saddle_point_pattern
from ..integrators.one_step import OneStep
from ..model.assembly import SparseOperator
from ..model.system import ModelError


class KinematicAnalysis(OneStep):
    name = "kinematic"

    def __init__(self, system, h, newton=None, petsc_options=None, design_map=None, ndesign=0, comm=None):
        n, m = system.n, system.m
        if m != n:
            raise ModelError("simulation.formulation",
                             f"kinematic analysis needs every degree of freedom driven: the model has {n} "
                             f"coordinates and {m} independent constraint rows ({n - m} undriven; add drivers)")
        self.sys, self.h, self.newton = system, h, newton
        self.design_map = design_map if design_map is not None else -np.ones(len(system.p), np.int64)
        self.nd = ndesign
        self.blocks, self.zero_diag = saddle_point_pattern(system)
        self.op = SparseOperator(n + m, self.blocks, comm=comm, options=petsc_options)
        # the initial state (Problem's sweeps read self.init at t_0) and, separately, the
        # state of the step being solved or differentiated
        self.init = InitialState(system, self.op, self.design_map, ndesign, newton, comm=comm)
        self.at = InitialState(system, self.op, self.design_map, ndesign, newton, comm=comm)

    def initial(self, t0, p):
        return self.init.solve(t0, p)

    def step(self, k, t, x, p):
        """x_{k+1} at t_{k+1} = t + h, from the constraints alone (x_k: Newton's guess)."""
        x1 = self.at.solve(t + self.h, p, guess=x[0])
        return x1, 1

    def _at(self, t, x1):
        self.at.x0, self.at.t0 = x1, t + self.h

    def tangent_step(self, t, x0, x1, dx0, p):
        """dx_{k+1}/dρ: InitialState's tangent at t_{k+1} (independent of dx_k)."""
        self._at(t, x1)
        return self.at.tangent(p)

    def adjoint_step(self, t, x0, x1, mu1, p):
        """(μ_k, ∇ψ increment): (dx_{k+1}/dρ)ᵀ μ_{k+1}; nothing flows back to x_k."""
        self._at(t, x1)
        grad = self.at.adjoint(p, *mu1)
        return tuple(np.zeros_like(m) for m in mu1), grad


def make_kinematic_stepper(system, sim, design_map=None, ndesign=0, comm=None):
    return KinematicAnalysis(system, sim.dt, newton=sim.newton, petsc_options=sim.petsc_options,
                             design_map=design_map, ndesign=ndesign, comm=comm)
