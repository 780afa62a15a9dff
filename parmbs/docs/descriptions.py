"""Words and units for the config keys that the schema source does not describe.

A field is documented by (first found): its pydantic ``description``, the ``# comment``
beside it in parmbs/config/schema*.py, ``CLASS`` below ("Class.field"), ``GENERIC``
below (by field name, for keys that mean the same everywhere).  tests/test_docs.py
fails for a field with none of these: add a comment beside the new field in the
schema (preferred) or an entry here.

Units: parmbs has no unit system of its own; every number is read in whatever
consistent set the model is written in.  The units below are those of SI models
(kg, m, s), the set of every shipped config; a model in mm, t, s reads them so.
"""
from __future__ import annotations

#: (unit, meaning) by field name, where the name means the same in every table
GENERIC = {
    "name": ("", "name of this entry, unique in its table; used in paths (`bodies.NAME.mass`), "
                 "point references and the HDF5 coordinate names"),
    "type": ("", "which kind of entry (selects the table's keys)"),
    "a": ("", "first point, `BODY.POINT` or `ground.POINT`"),
    "b": ("", "second point, `BODY.POINT` or `ground.POINT`"),
    "mass": ("kg", "mass"),
    "inertia": ("kg·m²", "moment of inertia about the centre of mass"),
    "points": ("m", "named points in the body frame"),
    "initial": ("", "initial pose (an estimate: the initial assembly solves the constraints, "
                    "keeping the `independent` coordinates)"),
    "initial_velocity": ("", "initial velocity (of the `independent` coordinates; the others follow "
                             "from the velocity constraints)"),
    "independent": ("", "coordinates kept at their `initial`/`initial_velocity` values by the "
                        "initial assembly (the others are solved from the constraints)"),
    "function": ("", "time function f(t) (a table with `type`); absent: constant 1"),
    "point": ("", "the point, `BODY.POINT`"),
    "body": ("", "the body (by name)"),
    "smoothing": ("m", "width δ of the C² onset of the contact force"),
    "lower": ("", "lower bound (absent: unbounded)"),
    "upper": ("", "upper bound (absent: unbounded)"),
    "axis_a": ("", "axis fixed in a's body, `BODY.AXIS` (`x`, `y`, `z` predefined)"),
    "axis_b": ("", "axis fixed in b's body, `BODY.AXIS`"),
    "gravity": ("m/s²", "gravitational acceleration, global frame"),
    "max_it": ("", "iteration limit"),
    "z0": ("m", "road height at the origin"),
    "slip_velocity": ("m/s", "slip speed below which friction is regularised (linear in the slip)"),
    "E": ("Pa", "Young's modulus"),
    "size": ("m", "[Lx, Ly] of the rectangle"),
    "nx": ("", "elements along x"),
    "ny": ("", "elements along y"),
    "thickness": ("m", "thickness (plane stress)"),
    "nu": ("", "Poisson's ratio"),
    "rho0": ("kg/m³", "density of the solid material (x_e = 1)"),
    "penalization": ("", "SIMP exponent p of E(x) = x^p E"),
    "density_law": ("", '`"seed003"`: ρ(x) = 1e5·x⁶·ρ0 below x = 0.1, x·ρ0 above (the law of [Held 2021]); '
                        '`"linear"`: ρ(x) = x·ρ0'),
}

#: (unit, meaning) by "Class.field"
CLASS = {
    # top level
    "Config.model": ("", "model name and gravity"),
    "Config.ground": ("", "the fixed frame and its points"),
    "Config.beams": ("", "planar beams (ANCF or floating frame)"),
    "Config.plates": ("", "plane-stress plates (absolute nodal coordinates)"),
    "Config.continua": ("", "plane-stress bodies in a floating frame of reference"),
    "Config.joints": ("", "joints and drivers (kinematic constraints)"),
    "Config.forces": ("", "springs, rotational springs, point forces and torques, contacts, rotational stops and stance locks"),
    "Config.simulation": ("", "time span, step, formulation, integrator and solver"),
    "Config.design": ("", "design variables: the config scalars the gradient is taken with respect to"),
    "Config.objectives": ("", "objective functions ψ = weight·(∫ integrand dt + terminal)"),
    "Config.sensitivity": ("", "default gradient method"),
    "Config.checkpoint": ("", "what the adjoint keeps of the forward run, and where"),
    "Config.optimize": ("", "`parmbs optimize`: method, objective, stopping, constraints"),
    "Config.parallel": ("", "parallel groups and state distribution under mpirun"),
    "Config.scenarios": ("", "load cases: the base config with overrides; gradients summed with weights"),
    "ModelSection.name": ("", "model name (used in messages and default output names)"),
    "Units.length": ("", "label of the length unit"),
    "Units.mass": ("", "label of the mass unit"),
    "Units.time": ("", "label of the time unit"),
    "Ground.points": ("m", "named points fixed in the global frame"),
    # rigid bodies
    "Body.name": ("", "body name (`ground` is reserved)"),
    "Body.mass": ("kg", "mass"),
    "Body.points": ("m", "named points, body frame, relative to the body origin (`com` is predefined)"),
    "Pose.x": ("m | m/s", "x of the centre of mass (`initial_velocity`: its velocity)"),
    "Pose.y": ("m | m/s", "y of the centre of mass (`initial_velocity`: its velocity)"),
    "Pose.angle": ("rad | rad/s", "angle of the body frame (`initial_velocity`: angular velocity)"),
    # beams
    "Beam.name": ("", "beam name"),
    "Beam.type": ("", '`"ancf"`: absolute nodal coordinates; `"ffr"`: Euler–Bernoulli elements in a '
                      "floating frame clamped at the root"),
    "Beam.length": ("m", "undeformed length"),
    "Beam.elements": ("", "number of elements"),
    "Beam.width": ("m", "section width (out of plane); with `height`"),
    "Beam.density": ("kg/m³", "material density"),
    "Beam.E": ("Pa", "Young's modulus"),
    "Beam.elastic": ("", 'ANCF elastic forces: `"seed"` (the form of [Ebrahimi 2019]) or '
                         '`"conservative"` (gradient of a strain energy)'),
    "Beam.stiffness_damping": ("s", "`type = \"ffr\"` only: stiffness-proportional (Rayleigh) damping β_K, "
                                    "elastic force K_e (q_f + β_K q̇_f), damping ratio β_K ω/2 in a mode of "
                                    "angular frequency ω (parmbs/flexible/ffr_beam.py `FfrDamping`); 0: none"),
    "Beam.points": ("m", "named points by arclength from the root"),
    "SpatialBeam.axial_damping": ("s", "Kelvin–Voigt damping β of the axial strain, axial force "
                                       "EA(ε + β ε̇), damping ratio β ω/2 in an axial mode of angular frequency ω "
                                       "(parmbs/flexible/ancf3d.py `Ancf3AxialDamping`; not in [Ebrahimi 2019]); "
                                       "0: none"),
    "SpatialBeam.bending_damping": ("s", "Kelvin–Voigt damping β_b of the bending strain, force "
                                         "β_b EI K ė, damping ratio β_b ω/2 in a bending mode of angular frequency ω "
                                         "(parmbs/flexible/ancf3d.py `Ancf3BendingDamping`; not in [Ebrahimi 2019]); "
                                         "0: none"),
    "SpatialSolid.stiffness_damping": ("s", "stiffness-proportional (Rayleigh) damping β_K: elastic force "
                                            "K_ff(x) (u + β_K u̇), damping ratio β_K ω/2 in a mode of angular "
                                            "frequency ω (parmbs/flexible/solid.py `SolidDamping`; with a "
                                            "`reduction`, β_K K̂ η̇: modal_components.py `ReducedDamping`); 0: none"),
    "Beam.initial": ("", "pose of the root frame (x along the beam)"),
    # plates and continua
    "Plate.name": ("", "plate name"),
    "Plate.density": ("", "element density field x_e: one number (uniform) or nx·ny numbers "
                          "(element e = j·nx + i)"),
    "Plate.points": ("", "named nodes `{ NAME = [i, j] }` (`origin`, `node_i_j` predefined)"),
    "Plate.initial": ("", "pose of the plate origin (node_0_0)"),
    "Continuum.name": ("", "continuum name"),
    "Continuum.density": ("", "element density field x_e: one number (uniform) or nx·ny numbers "
                              "(element e = j·nx + i)"),
    "Continuum.points": ("", "named nodes `{ NAME = [i, j] }` (`origin`, `node_i_j` predefined)"),
    "Continuum.initial": ("", "pose of the body frame"),
    "Continuum.offset": ("m", "lower-left corner of the mesh in the body frame"),
    "Continuum.clamp_radius": ("m", "nodes within this distance of the frame origin are clamped "
                                    "(reference condition; at least two nodes)"),
    "Continuum.reduction": ("", "modal reduction `{ modes = K }`: the nodal elastic coordinates become K "
                                "modal coordinates (lowest eigenmodes of the body clamped at its hub; "
                                "`flexible/modal.py`); omit for the full-order body"),
    "ModalReduction.modes": ("", "number K of eigenmodes kept (1 ≤ K ≤ elastic coordinates; equal "
                                 "eigenvalues among λ_1..λ_K+1 are refused)"),
    "ModalReduction.attachment": ("", "add two (planar) or three (solid) static (attachment) modes per free joint node — the response "
                                      "to unit forces there, M-orthogonal to the eigenmodes; strongly "
                                      "recommended when joint forces load the body"),
    "ModalReduction.load": ("", "HDF5 file of `parmbs reduce` (relative to the config): the body's "
                                "densities and basis are the file's, no eigensolve at them; mesh, "
                                "material, modes and attachment must match it, `density` must be omitted "
                                "(planar continua only)"),
    # joints
    "Revolute.a": ("", "point on the first body (`BODY.POINT` or `ground.POINT`)"),
    "Revolute.b": ("", "point on the second body; a and b coincide"),
    "Prismatic.a": ("", "point on the first body; b moves along `axis` through it"),
    "Prismatic.b": ("", "point on the second body"),
    "Weld.a": ("", "point on the first body"),
    "Weld.b": ("", "point on the second body; points coincide and the relative angle is kept"),
    "Driver.coordinate": ("", "driven coordinate `BODY.x`, `BODY.y` or `BODY.angle` (= f(t))"),
    "Driver.function": ("m | rad", "f(t): the prescribed value of the coordinate"),
    "DistanceDriver.a": ("", "first point `BODY.POINT` (rigid body or ground)"),
    "DistanceDriver.b": ("", "second point `BODY.POINT` (rigid body or ground)"),
    "DistanceDriver.function": ("m", "f(t): the prescribed distance |r_b − r_a| (> 0); λ is the axial force"),
    # time functions
    "Polynomial.coefficients": ("", "c_k of f(t) = Σ c_k t^k"),
    "Harmonic.amplitude": ("", "amplitude A of f(t) = offset + A sin(ω t + phase)"),
    "Harmonic.omega": ("rad/s", "angular frequency ω"),
    "Harmonic.phase": ("rad", "phase"),
    "Harmonic.offset": ("", "offset"),
    "SinePulses.amplitudes": ("", "pulse amplitudes"),
    "SinePulses.starts": ("s", "pulse start times"),
    "SinePulses.durations": ("s", "pulse durations"),
    "Table.type": ("", "`\"table\"`: clamped cubic spline through the samples (f′ = 0 at the ends, "
                       "constant outside), C² inside; the values are design variables (`function.values.K`)"),
    "Table.times": ("s", "sample times, strictly increasing (at least 2)"),
    "Table.values": ("", "sample values (unit of the driven coordinate or load factor)"),
    "Noise.type": ("", "`\"noise\"`: seeded noise samples interpolated like a table (white, or red = "
                       "first-order low-pass filtered); the samples are not design variables"),
    "Noise.seed": ("", "seed of numpy's PCG64 generator (the same signal on every machine)"),
    "Noise.sample_dt": ("s", "spacing of the samples"),
    "Noise.duration": ("s", "samples on [0, duration]; first and last set to 0 (start and end at rest)"),
    "Noise.rms": ("", "standard deviation of the samples (stationary, also for red noise)"),
    "Noise.color": ("", "`\"white\"`: independent samples; `\"red\"`: x_k = a x_{k−1} + √(1 − a²) w_k, "
                        "a = exp(−2π·corner·sample_dt)"),
    "Noise.corner": ("Hz", "corner frequency of the red noise's low-pass"),
    # forces
    "Spring.a": ("", "first end point"),
    "Spring.b": ("", "second end point"),
    "Spring.stiffness": ("N/m", "stiffness k: tension k (l − length) + c l̇"),
    "Spring.damping": ("N·s/m", "damping c"),
    "RotationalSpring.stiffness": ("N·m/rad", "stiffness k: torque k (θ_b − θ_a − angle) + c (ω_b − ω_a)"),
    "RotationalSpring.damping": ("N·m·s/rad", "damping c"),
    "Contact.radius": ("m", "circle radius ρ (0: a point foot)"),
    "Contact.stiffness": ("N/m", "normal stiffness k"),
    "Contact.damping": ("N·s/m", "normal damping c, faded in over `smoothing`"),
    "Contact.hunt_crossley": ("N·s/m²", "Hunt–Crossley damping λ (force λ g(x) ẋ: × penetration)"),
    "Contact.friction": ("", "Coulomb friction coefficient μ"),
    "Contact.origin": ("m", "a point of the ground line"),
    "Contact.normal": ("", "normal of the ground line, pointing out of the ground (normalised)"),
    "RotationalStop.angle": ("rad", "the stop's angle θ₀ of θ_b − θ_a"),
    "RotationalStop.side": ("", "`above`: engaged for θ_b − θ_a > angle; `below`: for θ_b − θ_a < angle"),
    "RotationalStop.stiffness": ("N·m/rad", "stop stiffness k"),
    "RotationalStop.damping": ("N·m·s/rad", "stop damping c, faded in over `smoothing`"),
    "RotationalStop.hunt_crossley": ("N·m·s/rad²", "Hunt–Crossley damping λ (× penetration angle)"),
    "RotationalStop.smoothing": ("rad", "width δ of the C² onset of the stop torque"),
    "StanceLock.angle": ("rad", "locked relative angle θ_b − θ_a"),
    "StanceLock.stiffness": ("N·m/rad", "lock stiffness k: torque σ(x) (k (θ_b − θ_a − angle) + c (ω_b − ω_a))"),
    "StanceLock.damping": ("N·m·s/rad", "lock damping c"),
    "StanceLock.engagement": ("m", "penetration of the contact point over which the lock engages (C¹ step)"),
    "PointForce.point": ("", "point of application, `BODY.POINT`"),
    "PointForce.value": ("N", "force, global frame (times `function` if given)"),
    "PointForce.function": ("", "time function multiplying `value`; absent: constant"),
    "Torque.body": ("", "body the torque acts on"),
    "Torque.value": ("N·m", "torque (times `function` if given)"),
    "Torque.function": ("", "time function multiplying `value`; absent: constant"),
    "PythonForce.type": ("", "`\"python\"`: a force element written in Python (`parmbs/model/python_force.py`: "
                             "vectorized, complex-step safe; its blocks by complex step)"),
    "PythonForce.name": ("", "element name (design paths `forces.NAME.parameters.KEY`)"),
    "PythonForce.bodies": ("", "rigid bodies it acts on; q, v passed as (x, y, θ) of each, in this order"),
    "PythonForce.callable": ("", "`\"module:function\"`, f(t, q, v, p) → generalized force Q on those "
                                 "coordinates (module next to the config file or on sys.path)"),
    "PythonForce.parameters": ("", "named numbers passed as p[KEY]; model parameters, so design variables"),
    # simulation
    "Simulation.t_end": ("s", "end time (the run starts at t = 0)"),
    "Simulation.dt": ("s", "time step"),
    "Index1.baumgarte": ("", "`{ alpha, beta }` (1/s): Baumgarte stabilisation Φ̈ + 2αΦ̇ + β²Φ = 0 of the "
                             "index-1 steppers (`trapezoidal`; `genalpha`, `hht`, `wbz`, `newmark`: [Wehrle 2024]'s "
                             "α-weighting, parmbs/formulations/index1_genalpha.py; the `ts-*` schemes: the constraint "
                             "row of the ODE, parmbs/formulations/index1_ode.py); absent: none"),
    "Simulation.formulation": ("", "equations of motion: index-3 DAE, penalty, index-1, Maggi, "
                                   "semi-recursive Matrix-R, or `kinematic` (every DOF driven: each time "
                                   "solved from the constraints, no integration) (each accepts the integrators listed in "
                                   "`FORMULATION_INTEGRATORS`: see the table below)"),
    "Simulation.integrator": ("", "time integrator (see the table below); `ts-alpha2`: generalized-α on PETSc "
                                  "TSALPHA2, the same discrete equations as `genalpha` (equal to round-off, "
                                  "forward and gradient); adaptive with `simulation.adapt` (TSAdapt on "
                                  "TSALPHA2's error estimate); `dopri5` (formulation `index1`): the index-1 ODE on "
                                  "an own Dormand–Prince 5(4), one compiled call per step, tangent and adjoint step "
                                  "for the planar rigid kinds (numpy otherwise; parmbs/formulations/index1_dopri.py), "
                                  "its exact discrete adjoint on the accepted steps; adaptive with `simulation.adapt` "
                                  "(TSAdapt basic's rule), with `quadrature = \"cubic\"` for fifth-order ψ"),
    "Simulation.rho_inf": ("", "spectral radius at infinite frequency ρ∞ of generalized-α (`genalpha`, "
                               "`ts-alpha2`) and of its special cases `hht` (HHT-α: α_m = 0, ρ∞ ∈ [½, 1]) "
                               "and `wbz` (WBZ-α: α_f = 0)"),
    "Simulation.beta": ("", "Newmark β (integrator `newmark`)"),
    "Simulation.gamma": ("", "Newmark γ (integrator `newmark`)"),
    "Simulation.theta": ("", "θ of `ts-theta`"),
    "Simulation.stabilization": ("", "`\"ggl\"`: the index3 `trapezoidal`, `newmark`, `genalpha`, `hht` or `wbz` stepper on the "
                                     "stabilized index-2 (Gear–Gupta–Leimkuhler) equations, velocity "
                                     "constraint enforced too (no growing (−1)ᵏ mode of a, λ); `\"none\"`: index 3"),
    "Simulation.genalpha_form": ("", "form of `genalpha` (read by it only, as `rho_inf`; `\"arnold-bruls\"` "
                                     "not with `stabilization = \"ggl\"`): `\"chung-hulbert\"` "
                                     "interpolates the forces between t_n and t_{n+1} (first order where the "
                                     "mass matrix depends on q: Euler-parameter and FFR bodies); "
                                     "`\"arnold-bruls\"` puts the equations of motion and constraints at "
                                     "t_{n+1} with the α-recursion on a pseudo-acceleration (Arnold & Brüls "
                                     "2007), second order for any M(q)"),
    "Simulation.quadrature": ("", "weights w_k of the integral objectives ψ = Σ_k w_k g(t_k, x_k) on the run's "
                                  "accepted times: `\"trapezoid\"` (second order); `\"cubic\"`: over each step the "
                                  "cubic through the four nearest accepted times (composite interpolatory rule, "
                                  "fourth order on any grid, exact for cubics; for high-order schemes such as "
                                  "`ts-rk`, whose ψ the trapezoid caps at second order). Exact derivatives either way "
                                  "(fixed weights of the frozen step sequence); `\"cubic\"` is refused with ride "
                                  "measures and with a checkpointed adaptive run (w_k needs t_{k+3}); "
                                  "`adapt.objective_atol` still estimates the trapezoid's error"),
    "Simulation.newton": ("", "Newton iteration of the implicit step"),
    "Simulation.penalty": ("", "options of the penalty formulation"),
    "Simulation.index1": ("", "options of the index-1 formulation"),
    "Simulation.maggi": ("", "options of Maggi's formulation"),
    "Simulation.matrix_r": ("", "options of the Matrix-R formulation"),
    "Simulation.petsc_options": ("", "PETSc options for the linear solver, names without `-` "
                                     "(prefix `parmbs_` added), added to the default direct LU; `preonly` with an inexact "
                                     "`pc_type` is refused; command-line PETSc options win"),
    "Simulation.progress": ("", "progress bar/lines on stderr"),
    "Simulation.output_every": ("", "keep every K-th step in outputs"),
    "Newton.rtol": ("", "relative tolerance of the Newton update"),
    "Newton.atol": ("", "absolute tolerance of the Newton residual"),
    "Newton.max_it": ("", "Newton iterations before the step fails"),
    "Adapt.rtol": ("", "relative tolerance of the local error of a step"),
    "Adapt.atol": ("", "absolute tolerance of the local error of a step (positions and velocities)"),
    "Adapt.dt_min": ("s", "smallest step (absent: 1e-10 t_end)"),
    "Adapt.dt_max": ("s", "largest step (absent: t_end / 10)"),
    "Adapt.objective_atol": ("", "absolute floor of the error test on the integral objectives' quadratures, in ψ's units (absent: quadratures not controlled)"),
    "Adapt.sensitivities": ("", "carry the design's direct sensitivities in the forward run and include them in the error test (CVODES errconS)"),
    "Adapt.grow_min": ("", "a proposed growth of the step below this factor keeps h (the controller's hysteresis, 1 … 5; "
                           "1.3 default; CVODE's 1.5 reaches a uniform grid's ∇ψ error per step on the five-bar)"),
    "Adapt.grow_after": ("", "PI controller: after this many accepted steps in a row each proposing a growth below "
                             "`grow_min`, grow h by the smallest of their factors (absent: the hysteresis always "
                             "keeps h; integrators/timeloop.py, \"ratchet\")"),
    "Adapt.keep_min": ("", "PI controller: after an accepted step a proposed shrink by a factor above this keeps h "
                           "(0 … 1; absent: every shrink taken; 0: h shrinks only on a rejection, as CVODE)"),
    "Adapt.controller": ("", "step-size controller: absent or \"pi\" the PI controller with `grow_min`; a PETSc "
                             "TSADAPTDSP filter name (\"H211b\", \"H211PI\", \"H312b\", \"PI42\", …) a digital "
                             "filter of Söderlind's (integrators/step_filter.py)"),
    "Penalty.alpha": ("", "penalty factor α"),
    "Penalty.xi": ("", "damping ratio ξ of the constraint stabilisation"),
    "Penalty.omega": ("rad/s", "natural frequency ω of the constraint stabilisation"),
    # design and objectives
    "Design.name": ("", "design variable name (JSON and HDF5 key of its gradient)"),
    "Design.path": ("", "the config scalar or field it designs, e.g. `bodies.A1.mass`, "
                        "`forces.S1.length`, `ground.points.D.x`, `plates.P.density`"),
    "Design.lower": ("", "lower bound for `optimize`"),
    "Design.upper": ("", "upper bound for `optimize`"),
    "Drive.path": ("", "the config scalar driven by the expression"),
    "Drive.expression": ("", "expression of the design variables and `[parameters]` "
                             "(+ − × / ^, sqrt, sin, cos, atan2, hypot, …)"),
    "Objective.name": ("", "objective name (JSON and HDF5 key)"),
    "Objective.integrand": ("", "g of ∫ g dt (trapezoidal sum on the steps): "
                                "`point_deviation_sq` |r_P − r_ref|², `point_velocity_sq` |ṙ_P|², "
                                "`point_acceleration_sq` |r̈_P|², `angle` θ, `angle_sq` θ², "
                                "`spring_elongation_sq` (l − l0)², `reaction_sq` |λ_joint|², "
                                "`python` (`callable`), `deflection*` (beam points), "
                                "`vertical_acceleration_*`, `roll_rate_sq` (spatial bodies), "
                                "`stress_ks` KS of the axial stresses |σ_e| of a spatial beam (`body`, `ks_rho`); "
                                "`stress_ks_time` Σ_e,± exp(ρ(±σ_e − σ_lim)) (also `stress_limit`): with `weight` "
                                "= 1/Δt, ψ ≤ 1 is the KS over time steps and elements ≤ σ_lim (the peak over time); "
                                "`vertical_acceleration_*`, `point_velocity_sq`, `point_acceleration_sq`, "
                                "`point_deviation_sq` also at spatial beam and natural-body points (there "
                                "r_ref = the point's configured initial position, no `reference`); "
                                "`iso2631_rms`, `iso2631_vdv`: not ∫ g dt but the ISO 2631-1 weighted r.m.s. "
                                "a_w = (1/T Σ c_k y_k²)^½ and vibration dose value (Σ c_k y_k⁴)^¼ of the point's "
                                "acceleration component y = W * r̈_P·e (`point`, `direction`, `weighting`; the "
                                "filter discretized exactly on the steps, parmbs/sensitivity/ride.py)"),
    "Objective.weighting": ("", "ISO 2631-1 Annex A frequency weighting of `iso2631_*`: `Wk` (vertical, "
                                "default) or `Wd` (horizontal)"),
    "Objective.direction": ("", "global component of the point acceleration that `iso2631_*` weights "
                                "(default `z`; planar bodies: `x` or `y`)"),
    "Optimize.gradient": ("", "`adjoint`: one adjoint sweep per evaluation; `fd`: forward differences, one "
                          "extra forward run per design variable, step h_j = fd_step·|ρ_j| (fd_step·(upper − "
                          "lower) at ρ_j = 0; backward at the upper bound) — the FD-driven optimisation "
                          "[Ebrahimi 2019] §6.2–6.3 compare with; not with `filter_radius`.  Under mpirun a model "
                          "too small to distribute (run replicated) splits these forward runs over the ranks, "
                          "rank r taking the variables j ≡ r (mod ranks): the serial gradient bit for bit"),
    "Objective.terminal": ("", "G(x_N) added at t_end (same kinds, except `reaction_sq` and `python`)"),
    "Objective.point": ("", "point of the point kinds, `BODY.POINT`"),
    "Objective.body": ("", "body of the angle kinds, `roll_rate_sq`; spatial beam of `stress_ks`, `stress_ks_time`"),
    "Objective.stress_point": ("", "`stress_ks`, `stress_ks_time`: where σ_e is read — `node` (default: "
                                   "E(|r_j − r_i|/l − 1) at the step's state) or `midpoint` (the chord the "
                                   "variational integrator's midpoint rule balances, without the node chord's "
                                   "rotation bias E(ωh)²/8; that integrator at fixed steps only; "
                                   "parmbs/flexible/spatial_beam_objectives.py)"),
    "Objective.force": ("", "spring of `spring_elongation_sq`"),
    "Objective.joint": ("", "joint of `reaction_sq`"),
    "Objective.reference": ("m", "r_ref of `point_deviation_sq`; absent: the point's initial position"),
    "Objective.weight": ("", "factor w of ψ"),
    "Sensitivity.method": ("", "gradient method of `parmbs gradient` without `--method`: adjoint, "
                               "direct (tangent), finite differences, complex step"),
    "Checkpoint.schedule": ("", "`all` keeps every state in memory; `every:K` stores every K-th "
                                "state in `file` and recomputes between; `revolve:C` binomial "
                                "checkpointing with C slots"),
    "Checkpoint.file": ("", "checkpoint HDF5 file of non-`all` schedules"),
    "Optimize.scaling": ("", "TAO's variables: `value` x = ρ/|ρ⁰| (1 where ρ⁰ = 0); `bounds` "
                         "x = (ρ − lower)/(upper − lower) ∈ [0, 1] (every bound finite): a box much "
                         "narrower than |ρ⁰| (the Iltis strut stiffness, 0.7 %) is not squeezed onto "
                         "its bound by the first quasi-Newton step; MMA ignores it (its asymptotes "
                         "scale with upper − lower already)"),
    "Optimize.method": ("", "TAO bound-constrained quasi-Newton (`tao-*`) or MMA (constraints)"),
    "Optimize.objective": ("", "the `[[objectives]]` name minimised; absent: the only objective"),
    "Optimize.max_it": ("", "iteration limit"),
    "Optimize.gatol": ("", "stop when |∇ψ| ≤ gatol (TAO)"),
    "Optimize.grtol": ("", "stop when |∇ψ|/|ψ| ≤ grtol (TAO)"),
    "Constraint.objective": ("", "an `[[objectives]]` name whose value is bounded"),
    "Constraint.kind": ("", "`volume_fraction` of a density field or a named `parameter`"),
    "Constraint.field": ("", "the density field of `volume_fraction`, e.g. `plates.P.density`"),
    "Constraint.lower": ("", "lower bound of c"),
    "Constraint.upper": ("", "upper bound of c"),
    "Maggi.independent": ("", "the independent coordinates z = B q, named like the HDF5 coordinates "
                              "(`BODY.x`, …); empty: the bodies' `independent` lists"),
    "Maggi.adjoint": ("", "`discrete` (exact transpose of the scheme) or a continuous adjoint ODE "
                          "of [Zhu 2014] §3.2.4 (O(h²) agreement only)"),
    "MatrixR.cut": ("", "joints opened to make a kinematic tree; absent: chosen automatically"),
    "MatrixR.coordinates": ("", "`dependent` (all relative coordinates, loop closure by multipliers) "
                                "or `independent` (the projection of [López Varela 2025] eqs. 24–29)"),
    "MatrixR.independent": ("", "the degrees of freedom: tree joints (their relative coordinates) or natural "
                                "coordinates `BODY.POINT.x|y|z`, `BODY.angle` (planar); absent: tree joints "
                                "chosen by column pivoting at the initial state"),
    "MatrixR.redundant": ("", "redundant cut-constraint rows: `least-squares` enforces every row, each step "
                              "solved by least squares ([López Varela 2025] eq. 17; stops if a design breaks "
                              "the redundancy) or `drop` (the rows dropped at set-up are not enforced); same "
                              "trajectory where the redundancy holds; `ts-*` integrators drop"),
    "MatrixR.reselect": ("", "τ in (0, 1]: with `independent` (trapezoidal, tree joints), a step whose "
                             "σ_min(Φ_z D) is below τ times that of the column-pivoted choice at its start "
                             "state uses that choice (a coordinate that turns back along the motion); "
                             "absent: one choice for the whole run"),
    "Parallel.distribute": ("", "several ranks, groups = 1: `auto` distributes the state only for "
                                "large models (small ones run replicated); `always` distributes"),
    "Parallel.groups": ("", "parallel groups G: gradients split into G batches of design "
                            "columns or objectives/scenarios, each on size/G ranks"),
    "Scenario.name": ("", "scenario name"),
    "Scenario.set": ("", "overrides `{ \"simulation.dt\" = 5e-4, ... }` in `--set` syntax"),
    # spatial
    "Spatial.gravity": ("m/s²", "gravitational acceleration, global frame"),
    "Spatial.ground": ("", "ground points and axes"),
    "Spatial.bodies": ("", "spatial rigid bodies"),
    "Spatial.joints": ("", "spatial joints and drivers"),
    "Spatial.forces": ("", "spatial force elements, contact and tyres"),
    "SpatialGround.points": ("m", "named points, global frame"),
    "SpatialGround.axes": ("", "named axes, global frame (normalised)"),
    "SpatialBody.mass": ("kg", "mass"),
    "SpatialBody.inertia": ("kg·m²", "about the centre of mass, body frame"),
    "SpatialBody.points": ("m", "named points, body frame, relative to the centre of mass"),
    "SpatialBody.axes": ("", "named axes, body frame (`x`, `y`, `z` predefined)"),
    "SpatialBody.initial": ("", "initial COM position and orientation"),
    "SpatialBody.initial_velocity": ("", "initial COM velocity and angular velocity"),
    "SpatialBody.independent": ("", "coordinates the initial assembly keeps; absent everywhere: "
                                    "chosen automatically"),
    "SpatialPose.position": ("m", "COM position, global frame"),
    "SpatialPose.orientation": ("", "Euler parameters [e0, e1, e2, e3] (unit within 1e-6)"),
    "SpatialPose.bryant": ("rad", "Bryant angles [φ, θ, ψ] (x-y'-z'')"),
    "SpatialVelocity.velocity": ("m/s", "COM velocity, global frame"),
    "SpatialVelocity.angular_velocity": ("rad/s", "angular velocity, global frame"),
    "SpatialDriver.joint": ("", "revolute or cylindrical joint whose relative angle is driven"),
    "SpatialDriver.coordinate": ("", "or `BODY.x|y|z`: the COM coordinate driven"),
    "SpatialDriver.function": ("rad | m", "f(t)"),
    "SpatialSpringDamper.law": ("", '`"linear"`, `"iltis"` (polynomial law of [Zhu 2014] eq. 5.5) or '
                                    '`"relative"` (damper on the whole relative velocity, [Ebrahimi 2019] '
                                    'Eq. 43; beam and natural-body points)'),
    "SpatialSpringDamper.stiffness": ("N/m", "k"),
    "SpatialSpringDamper.damping": ("N·s/m", "c"),
    "SpatialSpringDamper.length": ("m", "free length (law linear)"),
    "SpatialSpringDamper.spring": ("", "[a0, a2, a3] of the iltis spring polynomial (N, N/m², N/m³)"),
    "SpatialSpringDamper.damper": ("", "[d2, d3, d4] of the iltis damper polynomial"),
    "SpatialSpringDamper.breakpoints": ("m/s", "[v_lo, v_hi] of the iltis damper polynomial"),
    "SpatialBumpStop.stiffness": ("N/m", "contact stiffness k"),
    "SpatialBumpStop.length": ("m", "distance below which the stop is in contact"),
    "SpatialBumpStop.damping": ("N·s/m", "damping c"),
    "SpatialBushing.stiffness": ("N/m", "translational stiffness along a's body axes"),
    "SpatialBushing.rotational_stiffness": ("N·m/rad", "rotational stiffness about a's body axes"),
    "SpatialBushing.damping": ("N·s/m", "translational damping"),
    "SpatialBushing.rotational_damping": ("N·m·s/rad", "rotational damping"),
    "SpatialContact.radius": ("m", "sphere radius (0: a point)"),
    "SpatialContact.stiffness": ("N/m", "normal stiffness k"),
    "SpatialContact.damping": ("N·s/m", "normal damping"),
    "SpatialContact.hunt_crossley": ("N·s/m²", "Hunt–Crossley damping (× penetration)"),
    "SpatialContact.friction": ("", "friction coefficient μ"),
    "SpatialContact.surface": ("", "`road` ([spatial.road]) or `plane` (origin, normal)"),
    "SpatialContact.origin": ("m", "a point of the plane (surface plane)"),
    "SpatialContact.normal": ("", "the plane's normal (surface plane)"),
    "SpatialTyre.wheel": ("", "wheel body"),
    "SpatialTyre.centre": ("", "wheel centre point of that body"),
    "SpatialTyre.axis": ("", "spin axis `WHEEL.AXIS`"),
    "SpatialTyre.radius": ("m", "unloaded radius"),
    "SpatialTyre.stiffness": ("N/m", "radial stiffness"),
    "SpatialTyre.damping": ("N·s/m", "radial damping"),
    "SpatialTyre.mu_x": ("", "longitudinal friction coefficient"),
    "SpatialTyre.mu_y": ("", "lateral friction coefficient"),
    "SpatialTyre.kappa_c": ("", "critical longitudinal slip"),
    "SpatialTyre.alpha_c": ("rad", "critical slip angle"),
    "SpatialTyre.saturation_width": ("", "width of the smoothed saturation (fraction of the critical slip)"),
    "SpatialTyre.smoothing": ("m", "width of the C² onset of the radial force"),
    "SpatialPointForce.value": ("N", "force, global frame (times `function`)"),
    "SpatialTorque.value": ("N·m", "torque, global frame (times `function`)"),
    "PlaneRoadConfig.normal": ("", "upward normal of the plane"),
    "FunctionRoadConfig.shape": ("", "road shape"),
    "FunctionRoadConfig.height": ("m", "bump or step height"),
    "FunctionRoadConfig.length": ("m", "bump or step length"),
    "FunctionRoadConfig.x0": ("m", "where the bump or step starts"),
    "FunctionRoadConfig.amplitude": ("m", "sinusoid amplitude"),
    "FunctionRoadConfig.wavelength": ("m", "sinusoid wavelength"),
    "FunctionRoadConfig.phase": ("rad", "sinusoid phase"),
    "TableRoadConfig.x": ("m", "stations, strictly increasing"),
    "TableRoadConfig.z": ("m", "heights at the stations"),
}

#: units of fields whose words come from the schema's comments
UNITS = {
    "Body.inertia": "kg·m²",
    "Body.com": "m",
    "Beam.height": "m",
    "Beam.side": "m",
    "Spring.length": "m",
    "RotationalSpring.angle": "rad",
    "Optimize.filter_radius": "m",
    "SpatialContact.slip_velocity": "m/s",
}


def describe(cls_name: str, key: str, comment: str, info) -> tuple[str, str]:
    """(unit, words) of one field; words are empty when it is undocumented."""
    full = f"{cls_name}.{key}"
    unit_c, words_c = CLASS.get(full, ("", ""))
    unit_g, words_g = GENERIC.get(key, ("", ""))
    words = info.description or words_c or comment or words_g
    unit = UNITS.get(full) or unit_c or (unit_g if not words_c else "")
    return unit, words
