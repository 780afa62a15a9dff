"""Formulations and the stepper each (formulation, integrator) pair runs.

index3 (Newmark family and the variational integrator, in parmbs/integrators),
penalty (augmented-Lagrangian ODE on PETSc TS), index1, maggi and matrix-r.  Every
stepper offers the protocol Problem uses: ``initial``, ``step``, ``tangent_step``,
``adjoint_step`` and ``init.tangent``/``init.adjoint`` (or whole-run ``forward``,
``direct``, ``adjoint`` for PETSc TS), on states x = (q, v, a, λ) of the model's
coordinates, so objectives, design variables and checkpoints are shared.
"""


def make_stepper(system, sim, **kw):
    """The stepper for ``simulation.formulation`` / ``simulation.integrator``, its
    per-step methods logged as PETSc events (parmbs/_log.py, ``-log_view``).

    Modules are imported lazily: a formulation's import error names it (cli.py turns
    it into a one-line message)."""
    from .._log import instrument
    return instrument(_make(system, sim, **kw))


def _make(system, sim, **kw):
    f = sim.formulation
    if f == "index3":
        if sim.integrator == "ts-alpha2":           # generalized-α on PETSc TSALPHA2
            from ..integrators.ts_alpha2 import make_alpha2_stepper
            return make_alpha2_stepper(system, sim, **kw)
        if sim.integrator == "variational":
            from ..integrators.variational import make_variational_stepper
            return make_variational_stepper(system, sim, **kw)
        if sim.stabilization == "ggl":              # stabilized index 2 (integrators/ggl.py)
            from ..integrators.ggl import make_ggl_stepper
            return make_ggl_stepper(system, sim, **kw)
        if sim.integrator == "genalpha" and sim.genalpha_form == "arnold-bruls":   # equations at t_{n+1}
            from ..integrators.genalpha_ab import make_ab_stepper
            return make_ab_stepper(system, sim, **kw)
        from ..integrators.newmark import make_stepper as make_newmark
        return make_newmark(system, sim, **kw)
    if f == "penalty":
        from .penalty import make_ts_stepper
        return make_ts_stepper(system, sim, **kw)
    if f == "index1":
        if sim.integrator == "dopri5":              # own compiled Dormand–Prince 5(4) (index1_dopri.py)
            from .index1_dopri import make_index1_dopri_stepper
            return make_index1_dopri_stepper(system, sim, **kw)
        if sim.integrator.startswith("ts-"):
            from .index1_ode import make_index1_ts_stepper
            return make_index1_ts_stepper(system, sim, **kw)
        from .index1 import make_index1_stepper
        return make_index1_stepper(system, sim, **kw)
    if f == "maggi":
        if sim.integrator.startswith("ts-"):        # Maggi's ODE in z on PETSc TS (maggi_ode.py)
            from .maggi_ode import make_maggi_ts_stepper
            return make_maggi_ts_stepper(system, sim, **kw)
        from .maggi import make_maggi_stepper
        return make_maggi_stepper(system, sim, **kw)
    if f == "matrix-r":
        if sim.matrix_r.coordinates == "independent":
            if sim.integrator.startswith("ts-"):    # the ODE in z^i on PETSc TS (matrix_r_ode.py)
                if sim.matrix_r.reselect is not None:
                    from ..model.system import ModelError
                    raise ModelError("simulation.matrix_r.reselect", "read by the trapezoidal stepper only; "
                                                                     f"not with integrator = {sim.integrator!r}")
                from .matrix_r_ode import make_matrix_r_ts_stepper
                return make_matrix_r_ts_stepper(system, sim, **kw)
            from .matrix_r_independent import make_matrix_r_independent_stepper
            return make_matrix_r_independent_stepper(system, sim, **kw)
        from .matrix_r import make_matrix_r_stepper
        return make_matrix_r_stepper(system, sim, **kw)
    if f == "kinematic":
        from .kinematic import make_kinematic_stepper
        return make_kinematic_stepper(system, sim, **kw)
    raise ValueError(f"no formulation {f!r}")
