"""Cross-field and cross-reference checks on a field-validated ``Config``.

Each failure raises ``ConfigError`` naming the *referencing* key, e.g.
``joints.J1.b: unknown point 'X' on body 'A2' (known: com, O, B)``.
"""
from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Iterable

from .errors import ConfigError
from .points import beam_point_names, ffr_node, mesh_node, mesh_point_names
from .schema import (ANGLE_KINDS, RIDE_KINDS, FORMULATION_INTEGRATORS, GGL_INTEGRATORS, POINT_KINDS, SPATIAL_OBJECTIVE_KINDS,
                     Driver, Spring)

if TYPE_CHECKING:
    from .schema import Config

_CALLABLE_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


class _Checker:
    def __init__(self, cfg: "Config", file: str):
        self.cfg, self.file = cfg, file
        self.bodies = {b.name: b for b in cfg.bodies}
        self.beams = {b.name: b for b in cfg.beams}
        self.plates = {p.name: p for p in cfg.plates}
        self.continua = {c.name: c for c in cfg.continua}

    def ffr(self, name: str) -> bool:
        """True if ``name`` is a floating-frame beam (``[[beams]] type = "ffr"``)."""
        return name in self.beams and self.beams[name].type == "ffr"

    def fail(self, key: str, message: str) -> ConfigError:
        return ConfigError(self.file, key, message)

    # -- references ---------------------------------------------------------------

    def body(self, name: str, key: str, allow_ground: bool = False) -> str:
        """Check a body name reference; return it."""
        if name == "ground":
            if allow_ground:
                return name
            raise self.fail(key, "must be a body, not ground")
        if name in self.beams:
            raise self.fail(key, f"{name!r} is a beam; this needs a rigid body")
        if name in self.plates:
            raise self.fail(key, f"{name!r} is a plate; this needs a rigid body")
        if name in self.continua:
            raise self.fail(key, f"{name!r} is a continuum; this needs a rigid body")
        if name not in self.bodies:
            known = (["ground"] if allow_ground else []) + list(self.bodies)
            raise self.fail(key, f"unknown body {name!r} (known: {', '.join(known)})")
        return name

    def point(self, ref: str, key: str, allow_ground: bool = True) -> str:
        """Check a 'BODY.POINT' reference; return the body name."""
        body, point = ref.split(".")
        if body == "ground":
            if not allow_ground:
                raise self.fail(key, f"point {ref!r} is on ground; it must be on a body")
            known = list(self.cfg.ground.points)
        elif body in self.beams:
            known = beam_point_names(self.beams[body])
            if self.beams[body].type == "ffr" and point in known:
                if ffr_node(self.beams[body], point) is None:
                    raise self.fail(key, f"point {point!r} of FFR beam {body!r} is not at a node "
                                    "(joints, loads and outputs of FFR beams act at nodes)")
        elif body in self.plates or body in self.continua:
            # one rule for both structured meshes: node_I_J, origin and named nodes
            what, mesh = ("plate", self.plates[body]) if body in self.plates else ("continuum", self.continua[body])
            if mesh_node(mesh, point) is None:
                raise self.fail(key, f"unknown point {point!r} on {what} {body!r} (known: node_I_J with "
                                f"I <= {mesh.nx}, J <= {mesh.ny}, {', '.join(mesh_point_names(mesh))})")
            return body
        else:
            self.body(body, key, allow_ground=True)
            known = ["com", *self.bodies[body].points]
        if point not in known:
            listing = ", ".join(known) if known else "none"
            raise self.fail(key, f"unknown point {point!r} on body {body!r} (known: {listing})")
        return body

    def two_bodies(self, a: str, b: str, prefix: str, what: str) -> None:
        """Check point refs a and b lie on two different bodies (at most one ground)."""
        body_a = self.point(a, f"{prefix}.a")
        body_b = self.point(b, f"{prefix}.b")
        if body_a == body_b == "ground":
            raise self.fail(f"{prefix}.b", f"{what} connects ground to ground")
        if body_a == body_b:
            raise self.fail(f"{prefix}.b", f"{what} has both ends on body {body_a!r}")

    def unique(self, items: Iterable, section: str) -> None:
        seen: set[str] = set()
        for item in items:
            if item.name in seen:
                raise self.fail(f"{section}.{item.name}.name", f"duplicate name {item.name!r} in {section}")
            seen.add(item.name)

    # -- sections -----------------------------------------------------------------

    def run(self) -> None:
        cfg = self.cfg
        from .resources import check_model_size
        check_model_size(cfg, self.file)          # before anything enumerates nodes
        for section in ("bodies", "beams", "plates", "continua", "joints", "forces", "design", "objectives"):
            self.unique(getattr(cfg, section), section)
        if not cfg.bodies and not cfg.beams and not cfg.plates and not cfg.continua and not (
                cfg.spatial is not None and (cfg.spatial.bodies or cfg.spatial.beams or cfg.spatial.natural_bodies
                                             or cfg.spatial.solids)):
            raise self.fail("bodies", "needs at least one body (or beam, or plate, or [[spatial.bodies]], "
                            "or [[spatial.beams]], or [[spatial.solids]])")
        for p in cfg.plates:
            if p.name in self.bodies or p.name in self.beams or p.name == "ground":
                raise self.fail(f"plates.{p.name}.name", f"name {p.name!r} is already a body or beam")
        for c in cfg.continua:
            if c.name in self.bodies or c.name in self.beams or c.name in self.plates or c.name == "ground":
                raise self.fail(f"continua.{c.name}.name", f"name {c.name!r} is already a body, beam or plate")
        for b in cfg.beams:
            if b.name in self.bodies or b.name == "ground":
                raise self.fail(f"beams.{b.name}.name", f"name {b.name!r} is already a body")
        for b in cfg.bodies:
            if b.name == "ground":
                raise self.fail("bodies.ground.name", "'ground' is reserved for the fixed frame")
        self.joints()
        self.forces()
        from .spatial_checks import check_spatial
        check_spatial(self)                      # [spatial] (spatial_checks.py)
        self.simulation()
        self.design()
        self.objectives()
        if cfg.optimize.objective is not None:
            names = [o.name for o in cfg.objectives]
            if cfg.optimize.objective not in names:
                raise self.fail("optimize.objective",
                                f"unknown objective {cfg.optimize.objective!r} (known: {', '.join(names) or 'none'})")
        self.constraints()

    def constraints(self) -> None:
        """``[[optimize.constraints]]``: what is constrained, its bounds, the method."""
        opt = self.cfg.optimize
        names = [o.name for o in self.cfg.objectives]
        for i, c in enumerate(opt.constraints):
            key = f"optimize.constraints[{i}]"
            if (c.objective is None) == (c.kind is None):
                raise self.fail(key, "give exactly one of 'objective' (an [[objectives]] name) or "
                                "kind = \"volume_fraction\" or \"parameter\"")
            if c.objective is not None:
                if c.objective not in names:
                    raise self.fail(f"{key}.objective", f"unknown objective {c.objective!r} "
                                    f"(known: {', '.join(names) or 'none'})")
                if c.field is not None:
                    raise self.fail(f"{key}.field", "only for kind = \"volume_fraction\"")
                if c.parameter is not None:
                    raise self.fail(f"{key}.parameter", "only for kind = \"parameter\"")
            elif c.kind == "parameter":
                from .links import Links
                links = Links(self.cfg, self.file)
                known = list(links.design) + list(links.constants) + list(links.exprs)
                if c.parameter is None:
                    raise self.fail(f"{key}.parameter", f"required for kind \"parameter\" (a [parameters] or "
                                    f"scalar [[design]] name: {', '.join(known) or 'none'})")
                if c.parameter not in known:
                    raise self.fail(f"{key}.parameter", f"unknown parameter {c.parameter!r} "
                                    f"(known: {', '.join(known) or 'none'})")
                if c.field is not None:
                    raise self.fail(f"{key}.field", "only for kind = \"volume_fraction\"")
            else:
                from .paths import field_path
                fields = [d.path for d in self.cfg.design if field_path(self.cfg, d.path)]
                if c.field is None:
                    raise self.fail(f"{key}.field", f"required for kind {c.kind!r} "
                                    f"(a [[design]] density field: {', '.join(fields) or 'none'})")
                if c.field not in fields:
                    raise self.fail(f"{key}.field", f"{c.field!r} is not a [[design]] density field "
                                    f"(known: {', '.join(fields) or 'none'})")
                if c.parameter is not None:
                    raise self.fail(f"{key}.parameter", "only for kind = \"parameter\"")
            if c.lower is None and c.upper is None:
                raise self.fail(f"{key}.upper", "need 'upper' and/or 'lower'")
            if c.lower is not None and c.upper is not None and not c.lower < c.upper:
                raise self.fail(f"{key}.upper", f"upper = {c.upper} must be greater than lower = {c.lower}")
        if opt.constraints and opt.method != "mma":
            raise self.fail("optimize.constraints", f"method {opt.method!r} takes bound constraints only "
                            "([[design]] lower/upper); use method = \"mma\" for [[optimize.constraints]]")
        if opt.method == "mma":
            for d in self.cfg.design:
                if d.lower is None or d.upper is None:
                    raise self.fail(f"design.{d.name}.{'lower' if d.lower is None else 'upper'}",
                                    "method \"mma\" needs finite lower and upper bounds on every design variable")

    def joints(self) -> None:
        for j in self.cfg.joints:
            prefix = f"joints.{j.name}"
            if isinstance(j, Driver):
                body, _ = j.coordinate.split(".")
                if body not in self.continua and not self.ffr(body):  # continuum/FFR frames may be driven
                    self.body(body, f"{prefix}.coordinate")
            elif j.type == "distance_driver":
                self.two_bodies(j.a, j.b, prefix, "distance driver")
                for end, ref in (("a", j.a), ("b", j.b)):
                    if ref.split(".")[0] != "ground":
                        self.body(ref.split(".")[0], f"{prefix}.{end}")     # rigid bodies only
            else:
                self.two_bodies(j.a, j.b, prefix, f"{j.type} joint")
                ends = [ref.split(".")[0] for ref in (j.a, j.b)]
                for end, ref in (("a", j.a), ("b", j.b)):
                    if ref.split(".")[0] in self.continua:
                        other = j.b if end == "a" else j.a
                        if j.type != "revolute":
                            raise self.fail(f"{prefix}.type", f"a {j.type} joint cannot attach to a continuum "
                                            "(revolute can)")
                        if other.split(".")[0] not in self.bodies and other.split(".")[0] != "ground":
                            raise self.fail(f"{prefix}.{'b' if end == 'a' else 'a'}",
                                            "a continuum joins rigid bodies or ground only")
                if any(self.ffr(e) for e in ends) and any(e in self.beams and not self.ffr(e) for e in ends):
                    raise self.fail(f"{prefix}.b", "joints between ANCF and FFR beams are not supported")
                if any(e in self.plates for e in ends) and any(e in self.beams for e in ends):
                    raise self.fail(f"{prefix}.b", "joints between plates and beams are not supported")
                if j.type == "prismatic":
                    for end, ref in (("a", j.a), ("b", j.b)):
                        if ref.split(".")[0] in self.plates:
                            raise self.fail(f"{prefix}.{end}", "a prismatic joint cannot attach to a plate "
                                            "(revolute and weld can)")
                        if ref.split(".")[0] in self.beams:
                            raise self.fail(f"{prefix}.{end}", "a prismatic joint cannot attach to a beam "
                                            "(revolute and weld can)")

    def forces(self) -> None:
        for f in self.cfg.forces:
            prefix = f"forces.{f.name}"
            if f.type == "spring":
                self.two_bodies(f.a, f.b, prefix, "spring")
                for end, ref in (("a", f.a), ("b", f.b)):
                    if ref.split(".")[0] in self.beams:
                        raise self.fail(f"{prefix}.{end}", "springs at beam points are not supported "
                                        "(point forces are)")
                    if ref.split(".")[0] in self.plates:
                        raise self.fail(f"{prefix}.{end}", "springs at plate points are not supported")
                    if ref.split(".")[0] in self.continua:
                        raise self.fail(f"{prefix}.{end}", "springs at continuum points are not supported")
            elif f.type in ("rotational_spring", "rotational_stop", "stance_lock"):
                self.body(f.a, f"{prefix}.a", allow_ground=True)
                self.body(f.b, f"{prefix}.b")
                if f.a == f.b:
                    raise self.fail(f"{prefix}.b", f"both ends on body {f.b!r}")
                if f.type == "stance_lock":
                    self.stance_lock_contact(f, prefix)
            elif f.type == "force":
                self.point(f.point, f"{prefix}.point", allow_ground=False)
                if f.point.split(".")[0] in self.plates:
                    raise self.fail(f"{prefix}.point", "point forces at plate nodes are not supported yet")
                if f.point.split(".")[0] in self.continua:
                    raise self.fail(f"{prefix}.point", "point forces at continuum points are not supported yet")
            elif f.type == "torque":
                self.body(f.body, f"{prefix}.body")
            elif f.type == "contact":
                self.body(self.point(f.point, f"{prefix}.point", allow_ground=False), f"{prefix}.point")
            elif f.type == "python":
                for b in f.bodies:
                    self.body(b, f"{prefix}.bodies")

    def stance_lock_contact(self, f, prefix) -> None:
        """The ``contact`` of a stance lock exists and its point is on body b."""
        contacts = {c.name: c for c in self.cfg.forces if c.type == "contact"}
        if f.contact not in contacts:
            raise self.fail(f"{prefix}.contact", f"unknown contact force {f.contact!r} "
                            f"(known: {', '.join(contacts) or 'none'})")
        if contacts[f.contact].point.split(".")[0] != f.b:
            raise self.fail(f"{prefix}.contact", f"the point of contact {f.contact!r} "
                            f"({contacts[f.contact].point}) is not on body b = {f.b!r}")

    def simulation(self) -> None:
        sim = self.cfg.simulation
        if sim.dt > sim.t_end:
            raise self.fail("simulation.dt", f"dt = {sim.dt} exceeds t_end = {sim.t_end}")
        steps(sim.t_end, sim.dt, self.file)
        allowed = FORMULATION_INTEGRATORS[sim.formulation]
        if sim.integrator not in allowed:
            choices = "; ".join(f"{f}: {', '.join(i)}" for f, i in FORMULATION_INTEGRATORS.items())
            raise self.fail(
                "simulation.integrator",
                f"integrator {sim.integrator!r} does not go with formulation {sim.formulation!r} ({choices})")
        if sim.formulation == "matrix-r" and sim.integrator.startswith("ts-") \
                and sim.matrix_r.coordinates != "independent":
            raise self.fail("simulation.integrator", f"{sim.integrator} runs matrix-r as an ODE in independent "
                            "relative coordinates (formulations/matrix_r_ode.py): set simulation.matrix_r."
                            "coordinates = \"independent\", or use the trapezoidal rule")
        if sim.index1.baumgarte is not None and sim.formulation != "index1":
            raise self.fail("simulation.index1.baumgarte", "Baumgarte stabilisation belongs to the index1 "
                            "formulation (formulations/index1.py, index1_genalpha.py, index1_ode.py); not to "
                            f"{sim.formulation!r}")
        if sim.formulation == "kinematic" and sim.adapt is not None:
            raise self.fail("simulation.adapt", "a kinematic analysis has no integration error to control (each "
                            "time is solved from the constraints alone); remove [simulation.adapt]")
        if sim.adapt is not None and (sim.integrator.startswith("ts-") or sim.integrator == "dopri5"):
            # the adapt keys only parmbs's own time loop reads: (set?, why not here), in the order checked
            a, it = sim.adapt, repr(sim.integrator)
            own_loop = {
                "objective_atol": (a.objective_atol is not None, f"the quadratures' error control is part of "
                                   f"parmbs's own time loop (integrators/quad_error.py); {it} steps with "
                                   "its embedded RK estimate (PETSc's TSAdapt; dopri5: the same rule, "
                                   "formulations/index1_dopri.py): remove objective_atol or use a parmbs integrator"),
                "controller": (a.controller not in (None, "pi"), f"the digital-filter controllers are part of "
                               f"parmbs's own time loop (integrators/step_filter.py); {it} chooses its steps "
                               "with PETSc's TSAdapt (dopri5: its rule, formulations/index1_dopri.py; PETSc's own "
                               "filters: -ts_adapt_type dsp): remove controller or use a parmbs integrator"),
                **{key: (getattr(a, key) is not None, f"the PI controller's hysteresis is part of parmbs's "
                         f"own time loop (integrators/timeloop.py); {it} chooses its steps "
                         "with PETSc's TSAdapt (dopri5: its rule, formulations/index1_dopri.py): remove "
                         f"{key} or use a parmbs integrator") for key in ("grow_after", "keep_min")},
                "sensitivities": (bool(a.sensitivities), f"the sensitivities' error control is part of "
                                  f"parmbs's own time loop (integrators/sens_error.py); {it} steps with "
                                  "its own adaptivity: remove sensitivities or use a parmbs integrator"),
            }
            for key, (given, why) in own_loop.items():
                if given:
                    raise self.fail(f"simulation.adapt.{key}", why)
        if sim.integrator == "hht" and sim.rho_inf < 0.5:
            raise self.fail("simulation.rho_inf", f"HHT-α needs rho_inf in [0.5, 1] (α_f ≤ 1/3), got "
                            f"{sim.rho_inf:g}; use integrator = \"genalpha\" or \"wbz\" for stronger damping")
        if sim.stabilization == "ggl" and not (sim.formulation == "index3" and sim.integrator in GGL_INTEGRATORS):
            raise self.fail("simulation.stabilization",
                            f"\"ggl\" stabilizes the index3 integrators {', '.join(GGL_INTEGRATORS)}, not "
                            f"{sim.formulation!r} / {sim.integrator!r} (set stabilization = \"none\")")
        # genalpha_form is read by "genalpha" only (as rho_inf: ignored by the other integrators,
        # so a file's form survives --set simulation.integrator=…); the GGL stepper has no
        # Arnold–Brüls form
        if sim.genalpha_form == "arnold-bruls" and sim.integrator == "genalpha" and sim.stabilization == "ggl":
            raise self.fail("simulation.genalpha_form",
                            "\"arnold-bruls\" is not available with stabilization = \"ggl\" (the GGL stepper "
                            "uses the Chung–Hulbert form): set genalpha_form = \"chung-hulbert\" or "
                            "stabilization = \"none\"")
        if sim.genalpha_form == "arnold-bruls" and sim.integrator == "genalpha" and sim.formulation == "index1":
            raise self.fail("simulation.genalpha_form",
                            "\"arnold-bruls\" is an index3 form; the index1 generalized-α is seed 001's "
                            "(formulations/index1_genalpha.py): set genalpha_form = \"chung-hulbert\"")
        for name in sim.maggi.independent:       # Maggi's B (seed 004 eq. 2.26): "BODY.x|y|angle"
            body, _, comp = name.partition(".")
            if body in self.beams or body in self.plates:
                continue                         # flexible coordinate names: checked by the model
            if body not in self.bodies or comp not in ("x", "y", "angle"):
                known = ", ".join(f"{b}.angle" for b in self.bodies) or "none"
                raise self.fail("simulation.maggi.independent",
                                f"{name!r} is not a coordinate: expected BODY.x, BODY.y or BODY.angle "
                                f"of a body (e.g. {known})")

    def design(self) -> None:
        from .paths import PathError, field_path, nominal_value

        for d in self.cfg.design:
            if field_path(self.cfg, d.path):        # a whole element field (design.py expands it)
                continue
            try:
                nominal_value(self.cfg, d.path)
            except PathError as exc:
                raise self.fail(f"design.{d.name}.path", str(exc)) from None
            if d.lower is not None and d.upper is not None and not d.lower < d.upper:
                raise self.fail(f"design.{d.name}.upper", f"upper = {d.upper} must be greater than lower = {d.lower}")
        from .links import check_links
        check_links(self.cfg, self.file)          # [parameters] and [[design]] drives

    def objectives(self) -> None:
        forces = {f.name: f for f in self.cfg.forces}
        joints = [j.name for j in self.cfg.joints] + [j.name for j in getattr(self.cfg.spatial, "joints", [])]
        for o in self.cfg.objectives:
            prefix = f"objectives.{o.name}"
            if o.integrand is None and o.terminal is None:
                raise self.fail(f"{prefix}.integrand", "need at least one of 'integrand' or 'terminal'")
            if o.callable is not None and o.integrand != "python":
                raise self.fail(f"{prefix}.callable", "is read only with integrand = \"python\" (integrand is "
                                + (f"{o.integrand!r}" if o.integrand else "not set") + "); remove it or set "
                                "integrand = \"python\"")
            for slot, kind in (("integrand", o.integrand), ("terminal", o.terminal)):
                if kind is None:
                    continue
                needs = f"required for {slot} {kind!r}"
                sp = self.cfg.spatial
                on_beam3 = o.point is not None and o.point.split(".")[0] in {
                    b.name for b in [*(getattr(sp, "beams", None) or []), *(getattr(sp, "natural_bodies", None) or [])]}
                if kind in RIDE_KINDS or o.weighting is not None or o.direction is not None:
                    from .ride_checks import check_ride_objective
                    check_ride_objective(self, o, kind)
                    if kind in RIDE_KINDS:
                        continue
                if kind in SPATIAL_OBJECTIVE_KINDS or kind in ("stress_ks", "stress_ks_time") or on_beam3:
                    from .spatial_objective_checks import check_spatial_objective
                    check_spatial_objective(self, o, kind)
                elif kind in POINT_KINDS:
                    if o.point is None:
                        raise self.fail(f"{prefix}.point", needs)
                    self.point(o.point, f"{prefix}.point", allow_ground=False)
                    if self.ffr(o.point.split(".")[0]):
                        raise self.fail(f"{prefix}.point", f"{kind!r} at FFR beam points is not supported "
                                        "(use integrand = \"python\"; see configs/slider_crank_flex_outputs.py)")
                    if o.point.split(".")[0] in self.continua:
                        raise self.fail(f"{prefix}.point", f"{kind!r} at continuum points is not supported "
                                        "(use integrand = \"python\" with parmbs.flexible.continuum_objectives)")
                    if kind.startswith("deflection") and o.point.split(".")[0] not in self.beams:
                        raise self.fail(f"{prefix}.point", f"{kind!r} needs a point on a beam")
                elif kind in ANGLE_KINDS:
                    if o.body is None:
                        raise self.fail(f"{prefix}.body", needs)
                    self.body(o.body, f"{prefix}.body")
                elif kind == "spring_elongation_sq":
                    if o.force is None:
                        raise self.fail(f"{prefix}.force", needs)
                    if not isinstance(forces.get(o.force), Spring):
                        springs = [n for n, f in forces.items() if isinstance(f, Spring)]
                        raise self.fail(f"{prefix}.force",
                                        f"unknown spring {o.force!r} (known springs: {', '.join(springs) or 'none'})")
                elif kind == "reaction_sq":
                    if o.joint is None:
                        raise self.fail(f"{prefix}.joint", needs)
                    if o.joint not in joints:
                        raise self.fail(f"{prefix}.joint",
                                        f"unknown joint {o.joint!r} (known: {', '.join(joints) or 'none'})")
                elif kind == "python":
                    if o.callable is None:
                        raise self.fail(f"{prefix}.callable", needs)
                    if not _CALLABLE_RE.match(o.callable):
                        raise self.fail(f"{prefix}.callable",
                                        f"expected 'module:function', got {o.callable!r}")


#: unit round-off of IEEE double precision
_U = 2.0 ** -53
#: most steps a run may have: t_end / dt must be an integer exactly representable in a
#: double (far beyond any memory: resources.py refuses long before)
MAX_STEPS = 2 ** 53


def steps(t_end: float, dt: float, file: str) -> int:
    """The number of steps N = t_end / dt, which must be a whole number.

    The steppers advance t_k = k·dt for k = 0..N (parmbs/sensitivity/problem.py), so a
    t_end between two multiples of dt was silently moved to the nearer one (t_end =
    0.0105 with dt = 0.001 ran to 0.010).  Now that is refused, naming both numbers.
    Round-off is tolerated: t_end and dt are decimal literals rounded to doubles
    (relative error ≤ u = 2⁻⁵³ each) and the division rounds once more, so for a true
    N the computed ratio r satisfies |r − N| ≤ 3uN to first order; we accept
    |r − N| ≤ 4uN (0.3 / 0.1 = 2.9999999999999996 is 3 steps; over exact decimal
    multiples t_end = N·dt, N < 10⁵, of eleven dt from 1e-5 to 2.5 the largest
    |r − N| / (uN) measured was 2.26).  Raises ConfigError.
    """
    r = t_end / dt
    if not (r <= MAX_STEPS):          # also catches inf (t_end = 1e300, dt = 1e-300)
        raise ConfigError(file, "simulation.dt", f"t_end / dt = {t_end:g} / {dt:g} = {r:.3g} steps, more "
                          f"than any run can hold (at most 2^53); increase dt or reduce t_end")
    n = round(r)
    if n < 1 or abs(r - n) > 4 * _U * n:
        lo, hi = math.floor(r) * dt, math.ceil(r) * dt
        raise ConfigError(file, "simulation.t_end", f"t_end = {t_end!r} is not a whole number of steps of "
                          f"dt = {dt!r} (t_end / dt = {r:.12g}); use t_end = {lo:.12g} or {hi:.12g}, "
                          "or a dt that divides t_end")
    return int(n)


def require_objectives(cfg: "Config", file: str, command: str) -> None:
    """``gradient`` and ``verify`` differentiate the ``[[objectives]]``: without any
    there is nothing to do (it was a traceback from the adjoint sweep).  A config
    without objectives is valid for ``simulate`` and ``info``, so this is checked by
    the commands that need them, not by ``check_config``."""
    if not cfg.objectives:
        raise ConfigError(file, "objectives", f"nothing to differentiate: no [[objectives]] "
                          f"('parmbs {command}' needs at least one; 'parmbs simulate' runs without)")


def check_config(cfg: "Config", file: str) -> None:
    """Raise ``ConfigError`` for the first cross-field/cross-reference problem in ``cfg``."""
    _Checker(cfg, file).run()
