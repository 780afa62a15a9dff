"""Build configs/passive-walker.toml: the kneed passive dynamic walker with point feet of
[Zhu 2014] §5.3.2 (penalty contact, knee bump stops), on the slope, from Hsu's data.

    python configs/passive_walker_build.py            # writes configs/passive-walker.toml
    python configs/passive_walker_build.py OUT.toml --t-end 1.0 --dt 1e-3 --friction 0.2
    python configs/passive_walker_build.py OUT.toml --friction 0.2 --latch 0.05   # latched knee locks

[Zhu 2014] takes the model and initial conditions from Hsu Chen's thesis ("Passive
dynamic walking with knees: a point foot model", MIT 2007, its ref. [5]) and prints none
of them.  The values below are Hsu's kneed compass gait (point masses on massless legs):

    hip mass m_h = 0.5 kg, thigh m_t = 0.5 kg, shank m_s = 0.05 kg,
    thigh l_t = 0.5 m: mass a2 = 0.175 m above the knee, b2 = 0.325 m below the hip,
    shank l_s = 0.5 m: mass a1 = 0.375 m above the foot, b1 = 0.125 m below the knee,
    slope γ = asin(7.25/144) = 0.0504 rad, g = 9.8 m/s²,
    initial state (just after heel strike, stance leg 2, swing leg 1, angles from the
    vertical, positive backwards): q_st = 0.1877, q_sw,thigh = q_sw,shank = −0.2884 rad;
    rates −1.1014, −0.0399, −0.0399 rad/s.

They are quoted from the public MATLAB models of Hsu's walker (Tedrake's
kneedCompassGait.m gives γ, the masses and this initial state; the a/b split of the
legs, 0.375/0.125 and 0.175/0.325, is the one of Hsu's Table as reproduced in other
copies — Tedrake's file uses 0.35/0.15 and 0.2/0.3 instead).  They could not be checked
against Hsu's thesis here.

Gaps (not in [Zhu 2014] nor in Hsu's rigid-impact model), with the reason for each value:

* Moments of inertia: Hsu's links are point masses; parmbs bodies need I_G > 0, so
  I_G = m (0.01 m)², a radius of gyration of 2 % of a segment (the shank's point-mass
  inertia about the knee is m_s b1² = 7.8e-4 kg m², 16× larger).
* The hip mass is its own body, pinned to both thighs at its centre of mass (its spin
  is a free, uncoupled degree of freedom).
* Foot contact (Hsu: inelastic heel strike, no slip; Zhu: Kelvin–Voigt eq. 5.21 plus
  "static friction" or Ambrósio friction μ = 0.9, v₀ = 1e-8, v₁ = 1e-5 m/s, no K, D or
  c given): the smooth law of parmbs/model/contact.py with k = 5e4 N/m (the 16 N
  weight sinks a foot ≈ 1 mm: 0.3 mm of spring plus the onset band), onset width
  δ = 1e-3 m, Hunt–Crossley λ = 1.5e5 N s/m² (λ/k = 3 s/m, the Hunt–Crossley value
  3(1 − e)/(2 v) for e → 0 at the heel's ≈ 0.5 m/s: a near-plastic heel strike) and a
  linear damper c = 300 N s/m faded in over δ (ζ ≈ 0.5 on the 1.6 kg walker: without it
  the stance foot rings at ≈ 30 Hz and lifts off 0.3 mm 60 ms after heel strike);
  Coulomb μ = 0.9 (Zhu's stable case) regularised over ε = 1e-2 m/s (Ambrósio's
  v₁ = 1e-5 m/s would make the friction a 1e6 N s/m damper).
* Knee (Hsu: knee strike plastic, stance knee locked; Zhu: a knee "bump stop", and a
  spring-damper that locks the knee "after the heel-strike"): a one-sided rotational
  stop at the straight knee, k = 500 N m/rad, c = 2 N m s/rad faded in over 1e-3 rad
  (the swing knee's strike damped ≈ 1.6× critical on the shank's m_s b1²), and a stance
  lock k = 1e4 N m/rad, c = 10 N m s/rad engaged over the first 1e-3 m of the foot's
  penetration (Zhu's locking spring, switched by the foot's contact instead of by an
  event).  Without the lock the stance knee buckles at once (measured: it flexes 0.15
  rad in 0.15 s and the walker collapses); with a lock of 500 N m/rad the foot's
  tangential mobility (shank about the knee) is a few grams and the heel-strike
  friction makes Newton cycle.  ``--latch a`` builds the locks as the Python force of
  configs/passive_walker_latch.py instead: the same lock, engaged only for a knee within
  a of straight (fully within a/2), so a foot landing on a bent knee does not snap it
  straight (μ = 0.2: the shipped lock throws the walker up, the latched one lets it fall;
  benchmarks/README.md, "Passive dynamic walker").
* Steps: adaptive (`simulation.adapt`, rtol 5e-4, genalpha ρ∞ = 0.8).  At fixed dt =
  5e-4 and 2.5e-4 s Newton does not converge at the first heel strike (t = 0.567 s:
  the swing foot lands sliding back at 0.46 m/s and its friction saturates in either
  direction from one iterate to the next); the adaptive loop retries such a step at
  h/4 and resolves each impact down to h ≈ 4e-7–6e-7 s (rtol 1e-4, 1e-3).
  ``sensitivities = true`` (integrators/sens_error.py, CVODES' errconS): the design's
  direct sensitivities join the error test, so the mesh also resolves the heel strike's
  motion with the design; without it ∇ψ changed 0.15–0.36 between rtol 1e-3 and 1e-4 at
  t_end 1.2 s, with it ≤ 8.8e-4 (rtol 1e-3 vs 1e-4: too near the 1e-3 bound, so the
  file ships rtol 5e-4: ≤ 3.6e-4 against 5e-5; benchmarks/README.md, "Passive dynamic walker").
  ``--no-sensitivities`` for gait runs that need no gradient (fewer, cheaper steps).

Frames: x along the horizontal, y up; the slope y = −x tan γ goes down towards +x, the
walker walks towards +x.  Each leg segment's body frame has its origin at the upper
joint and the segment along its −y axis, so a body angle is Hsu's angle from the
vertical (positive backwards).  Legs: 1 = swing at t = 0, 2 = stance at t = 0.
"""
import argparse
import math
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

G = 9.8
GAMMA = math.asin(7.25 / 144.0)
M_HIP, M_THIGH, M_SHANK = 0.5, 0.5, 0.05
L_THIGH, L_SHANK = 0.5, 0.5
A1, B1, A2, B2 = 0.375, 0.125, 0.175, 0.325
Q0 = (0.1877, -0.2884, -0.2884)           # stance, swing thigh, swing shank [rad]
DQ0 = (-1.1014, -0.0399, -0.0399)         # [rad/s]
GYRATION = 0.01                           # [m], gap: see the module docstring
CONTACT = dict(stiffness=5e4, hunt_crossley=1.5e5, damping=300.0, smoothing=1e-3, friction=0.9, slip_velocity=1e-2)
KNEE = dict(stiffness=500.0, damping=2.0, smoothing=1e-3)
LOCK = dict(stiffness=1e4, damping=10.0, engagement=1e-3)


# [Zhu 2014] §5.3 runs the walker only ("the sensitivity analysis and optimization of the
# performance of the passive dynamic robot has not been studied", §7): these objectives
# are the measures it names as future work, walking distance and speed, and its plotted
# variable θ (leg 1's upper link); design variables are parameters a designer sets (the
# two legs linked: one thigh mass, one friction coefficient, one slope).
def _design(name, path, *linked, note=""):
    """A [[design]] entry; ``linked`` paths follow it (the other leg's copy)."""
    drives = ", ".join(f'{{ path = "{p}", expression = "{name}" }}' for p in linked)
    return (f'[[design]]\nname = "{name}"' + (f"     # {note}" if note else "") + f'\npath = "{path}"\n'
            + (f"drives = [{drives}]\n" if linked else ""))


def design_objectives(latch=0.0):
    """The [[design]] and [[objectives]] tables; with latched locks (``--latch``) the slope
    also moves the locks' copies of the ground normal."""
    locks = ("forces.kneelock1.parameters.nx", "forces.kneelock2.parameters.nx") if latch else ()
    return "\n".join([
        _design("m_hip", "bodies.hip.mass"),
        _design("m_thigh", "bodies.thigh1.mass", "bodies.thigh2.mass"),
        _design("mu", "forces.foot1.friction", "forces.foot2.friction"),
        _design("slope_normal_x", "forces.foot1.normal.x", "forces.foot2.normal.x", *locks,
                note="sin γ of the slope line's normal (sin γ, cos γ); cos γ held")]) + OBJECTIVES


OBJECTIVES = """
[[objectives]]
name = "distance_sq"        # |r_hip(T)|²: the hip's squared distance from the start foot
terminal = "point_deviation_sq"
point = "hip.H"
reference = [0.0, 0.0]

[[objectives]]
name = "hip_speed_sq"       # ∫ |v_hip|² dt: walking speed
integrand = "point_velocity_sq"
point = "hip.H"

[[objectives]]
name = "theta_sq"           # ∫ θ² dt, θ the angle of leg 1's upper link (the thesis' phase portrait)
integrand = "angle_sq"
body = "thigh1"
"""


def _dir(q):
    """Unit vector from the upper to the lower end of a segment at angle q."""
    return (math.sin(q), -math.cos(q))


def _ddir(q, dq):
    return (math.cos(q) * dq, math.sin(q) * dq)


def initial_state():
    """Frame poses and velocities (upper-joint positions and rates) of the five bodies."""
    q1, q2, q3 = Q0
    d1, d2, d3 = DQ0
    L = L_THIGH + L_SHANK
    u1, du1 = _dir(q1), _ddir(q1, d1)
    hip = (-L * u1[0], -L * u1[1])               # stance foot at the origin
    vhip = (-L * du1[0], -L * du1[1])
    knee2 = (hip[0] + L_THIGH * u1[0], hip[1] + L_THIGH * u1[1])
    vknee2 = (vhip[0] + L_THIGH * du1[0], vhip[1] + L_THIGH * du1[1])
    u2, du2 = _dir(q2), _ddir(q2, d2)
    knee1 = (hip[0] + L_THIGH * u2[0], hip[1] + L_THIGH * u2[1])
    vknee1 = (vhip[0] + L_THIGH * du2[0], vhip[1] + L_THIGH * du2[1])
    return {"hip": (hip, vhip, 0.0, 0.0),
            "thigh1": (hip, vhip, q2, d2), "shank1": (knee1, vknee1, q3, d3),
            "thigh2": (hip, vhip, q1, d1), "shank2": (knee2, vknee2, q1, d1)}


def _f(x):
    return repr(float(x))


def body(name, mass, com, points, frame, independent):
    (x, y), (vx, vy), th, w = frame
    # the config's initial x, y are the centre of mass: frame origin + A(θ) c̄
    cx = x + math.cos(th) * com[0] - math.sin(th) * com[1]
    cy = y + math.sin(th) * com[0] + math.cos(th) * com[1]
    vcx = vx - w * (math.sin(th) * com[0] + math.cos(th) * com[1])
    vcy = vy + w * (math.cos(th) * com[0] - math.sin(th) * com[1])
    pts = ", ".join(f"{k} = [{_f(a)}, {_f(b)}]" for k, (a, b) in points.items())
    ind = ", ".join(f'"{k}"' for k in independent)
    return (f'[[bodies]]\nname = "{name}"\nmass = {_f(mass)}\ninertia = {_f(mass * GYRATION ** 2)}\n'
            f"com = [{_f(com[0])}, {_f(com[1])}]\npoints = {{ {pts} }}\n"
            f"initial = {{ x = {_f(cx)}, y = {_f(cy)}, angle = {_f(th)} }}\n"
            f"initial_velocity = {{ x = {_f(vcx)}, y = {_f(vcy)}, angle = {_f(w)} }}\n"
            f"independent = [{ind}]\n")


def toml(t_end=1.2, dt=5e-4, friction=CONTACT["friction"], integrator="genalpha", rho_inf=0.8, rtol=5e-4,
         latch=0.0, sensitivities=True):
    s = initial_state()
    out = ["# Generated by configs/passive_walker_build.py: edit that script, not this file.",
           "# The kneed passive dynamic walker with point feet of [Zhu 2014] §5.3.2 on Hsu's",
           "# data (the thesis prints none): masses, lengths, slope and initial state from Hsu",
           "# Chen 2007; inertias, contact and knee-stop laws and their constants are gaps",
           "# filled in the builder's docstring, each with its reason.  docs/passive-walker.md.",
           "# t_end = 1.2 s (two steps).  rtol-converged (rtol 5e-4 vs 5e-5): ψ ≤ 2.0e-5, ∇ψ ≤ 3.6e-4,",
           "# with the sensitivities in the error test (adapt.sensitivities; without: ∇ψ 0.15–0.36,",
           "# the heel strikes: benchmarks/README.md, \"Passive dynamic walker\").  The 5 s gait",
           "# (--set simulation.t_end=5) was measured without them: ψ ≤ 7e-6, ∇ψ not converged.",
           "", "[model]", 'name = "passive-walker"', f"gravity = [0.0, {_f(-G)}]", "",
           "[ground]", "points = { O = [0.0, 0.0] }", ""]
    out.append(body("hip", M_HIP, (0.0, 0.0), {"H": (0.0, 0.0)}, s["hip"], ["x", "y", "angle"]))
    for leg in ("1", "2"):
        out.append(body(f"thigh{leg}", M_THIGH, (0.0, -B2), {"hip": (0.0, 0.0), "knee": (0.0, -L_THIGH)},
                        s[f"thigh{leg}"], ["angle"]))
        out.append(body(f"shank{leg}", M_SHANK, (0.0, -B1), {"knee": (0.0, 0.0), "foot": (0.0, -L_SHANK)},
                        s[f"shank{leg}"], ["angle"]))
    for leg in ("1", "2"):
        out.append(f'[[joints]]\ntype = "revolute"\nname = "hip{leg}"\na = "hip.H"\nb = "thigh{leg}.hip"\n')
        out.append(f'[[joints]]\ntype = "revolute"\nname = "knee{leg}"\na = "thigh{leg}.knee"\n'
                   f'b = "shank{leg}.knee"\n')
    c = dict(CONTACT, friction=friction)
    for leg in ("1", "2"):
        out.append(f'[[forces]]\ntype = "contact"\nname = "foot{leg}"\npoint = "shank{leg}.foot"\n'
                   + "".join(f"{k} = {_f(v)}\n" for k, v in c.items())
                   + f"origin = [0.0, 0.0]\nnormal = [{_f(math.sin(GAMMA))}, {_f(math.cos(GAMMA))}]\n")
        out.append(f'[[forces]]\ntype = "rotational_stop"\nname = "kneestop{leg}"\na = "thigh{leg}"\n'
                   f'b = "shank{leg}"\nangle = 0.0\nside = "above"\n'
                   + "".join(f"{k} = {_f(v)}\n" for k, v in KNEE.items()))
    for leg in ("1", "2"):
        if latch:
            out.append(_latched_lock(leg, latch))
            continue
        out.append(f'[[forces]]\ntype = "stance_lock"\nname = "kneelock{leg}"\na = "thigh{leg}"\n'
                   f'b = "shank{leg}"\ncontact = "foot{leg}"\nangle = 0.0\n'
                   + "".join(f"{k} = {_f(v)}\n" for k, v in LOCK.items()))
    out.append(f'[simulation]\nt_end = {_f(t_end)}\ndt = {_f(dt)}\nintegrator = "{integrator}"\n'
               f"rho_inf = {_f(rho_inf)}\n"
               + (f"adapt = {{ rtol = {_f(rtol)}, atol = 1e-06, dt_min = 1e-08, dt_max = 0.002"
                  + (", sensitivities = true" if sensitivities else "") + " }\n" if rtol else ""))
    out.append(design_objectives(latch))
    return "\n".join(out)


def _latched_lock(leg, latch):
    """Leg ``leg``'s knee lock as the latched Python force of configs/passive_walker_latch.py:
    the shipped lock's k, c and engagement, engaged only for |φ| < ``latch`` (fully below
    latch/2); the foot point and the ground line are the contact's."""
    par = dict(k=LOCK["stiffness"], c=LOCK["damping"], w=LOCK["engagement"], a=latch, sx=0.0, sy=-(L_SHANK - B1),
               ox=0.0, oy=0.0, nx=math.sin(GAMMA), ny=math.cos(GAMMA))
    return (f'[[forces]]\ntype = "python"\nname = "kneelock{leg}"     # latched stance lock (--latch)\n'
            f'bodies = ["thigh{leg}", "shank{leg}"]\ncallable = "passive_walker_latch:stance_latch"\n'
            "parameters = { " + ", ".join(f"{k} = {_f(v)}" for k, v in par.items()) + " }\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", nargs="?", default=str(HERE / "passive-walker.toml"))
    ap.add_argument("--t-end", type=float, default=1.2)
    ap.add_argument("--dt", type=float, default=5e-4)
    ap.add_argument("--friction", type=float, default=CONTACT["friction"])
    ap.add_argument("--rtol", type=float, default=5e-4, help="simulation.adapt.rtol (0: fixed steps of dt)")
    ap.add_argument("--latch", type=float, default=0.0, metavar="ANGLE",
                    help="knee locks engaged only for |φ| < ANGLE rad (configs/passive_walker_latch.py, "
                         "copied beside OUT); 0: the shipped stance_lock")
    ap.add_argument("--no-sensitivities", action="store_true",
                    help="leave simulation.adapt.sensitivities out (gait runs without gradients: fewer steps)")
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.write_text(toml(a.t_end, a.dt, a.friction, rtol=a.rtol, latch=a.latch, sensitivities=not a.no_sensitivities))
    if a.latch and out.resolve().parent != HERE:
        shutil.copyfile(HERE / "passive_walker_latch.py", out.resolve().parent / "passive_walker_latch.py")
    return 0


if __name__ == "__main__":
    sys.exit(main())
