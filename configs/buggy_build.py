"""Build configs/buggy-step-descent.toml and configs/buggy-lane-change.toml: a buggy-like
four-wheel vehicle for the two manoeuvres of seed 002 §4.2 (data digest: docs/buggy.md);
and configs/buggy-lane-change-speeds.toml: the lane change as four load cases, the same
steering driven at 6, 8, 10 and 12 m/s ([[scenarios]], the README's `mpirun` example).

    python configs/buggy_build.py            # writes the three TOML files
    python configs/buggy_build.py --print    # the static-load bookkeeping only

Seed 002 names the manoeuvres, objectives (eqs. 76, 78) and design variables (eq. 77:
k_f, c_f, k_r, c_r, m_c) but leaves the vehicle data to the IFToMM benchmark library,
which is not available here.  Every number below is therefore a reconstruction — a
small recreational buggy — chosen and justified in docs/buggy.md; both manoeuvres use
the same vehicle, written once here so the two files cannot drift apart.

Topology (11 bodies, 77 coordinates, 63 constraints, 14 DOF):
  chassis — 4 trailing arms (revolute, lateral axis) — front: steering knuckle
  (revolute, vertical kingpin axis, rheonomic steering driver) — wheel (revolute, spin
  axis); rear: wheel directly on the arm.  One spring-damper per corner between the
  chassis and the arm's hub end (vertical at design: motion ratio 1), one tyre per wheel.

Static bookkeeping (``static_loads``): the spring free lengths and wheel-centre heights
are chosen so the design configuration is the static equilibrium at the nominal design
(tests/test_buggy.py checks parmbs' tyre forces against N_f, N_r and that every body
starts unaccelerated).
"""
import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
G = 9.81

# ---------------------------------------------------------------- vehicle data (docs/buggy.md §2)
M_C = 280.0                        # chassis incl. driver and engine [kg]        (design m_c)
I_C = [50.0, 120.0, 150.0]         # chassis principal inertia [kg m²], box 2.2 × 1.3 × 0.6 m
H_C = 0.50                         # chassis COM height at design [m]
A_F, B_R = 1.10, 0.90              # COM → front / rear axle [m] (wheelbase 2.0 m)
Y_W, Y_A = 0.65, 0.50              # wheel centre / arm plane half-track [m]
L_ARM = 0.35                       # trailing-arm length, pivot ahead of the hub [m]
M_ARM, I_ARM = 4.0, [0.004, 0.041, 0.041]
M_KN, I_KN = 2.0, [0.005, 0.005, 0.005]          # front steering knuckle
M_W, I_W = 12.0, [0.33, 0.56, 0.33]              # wheel + tyre, spin axis y
L_SPRING = 0.30                    # spring-damper length at design (vertical) [m]
K_F, C_F = 7000.0, 450.0           # front suspension stiffness [N/m], damping [N s/m] (design)
K_R, C_R = 8500.0, 550.0           # rear
TYRE = dict(radius=0.28, stiffness=1.5e5, damping=300.0, mu_x=0.9, mu_y=0.9,
            kappa_c=0.1, alpha_c=0.1, smoothing=1e-3)
P_FRONT = [A_F, 0.0, 0.0]          # objective point of eq. (76): chassis front, on the axle line
CORNERS = ("fl", "fr", "rl", "rr")

# ---------------------------------------------------------------- manoeuvres (docs/buggy.md §3)
STEP = dict(x=5.5, height=-0.01, width=0.15)     # 1 cm step down at 5.5 m, quintic edge over 15 cm (docs §3)
V_STEP = 3.0                                     # m/s; front axle at x = −0.5 → edge at t ≈ 2.0 s
X0_STEP = -0.5 - A_F                             # chassis COM x at t = 0
T_STEP, DT_STEP = 4.5, 1e-3
V_LANE = 10.0                                    # m/s (36 km/h)
LANE = dict(amplitude=0.12, starts=[2.0, 7.0], duration=3.0)   # steer pulses [rad, s, s]
T_LANE, DT_LANE = 12.0, 5e-3        # generalized-α, Arnold–Brüls form (dt-convergence, below); the seed's 15 ms: docs §3
SPEEDS = [6.0, 8.0, 10.0, 12.0]                  # m/s: load cases of buggy-lane-change-speeds.toml


def static_loads(m_c=M_C):
    """Spring forces F_s and tyre loads N per corner (front, rear) at static equilibrium
    of the design configuration (arms horizontal, springs vertical above the hub).

    Arm (moment about its pivot):   N − F_s − m_hub g − m_arm g / 2 = 0
    Chassis (vertical, pitch):      2 F_sf + 2 F_sr = (m_c + 2 m_arm) g
                                    F_sf a − F_sr b = (m_arm g / 2)(a − b + 2 l)
    (the pivots carry m_arm g / 2 each onto the chassis, at x = a + l and −b + l)."""
    W = (m_c + 2 * M_ARM) * G
    A = np.array([[1.0, 1.0], [A_F, -B_R]])
    Fsf, Fsr = np.linalg.solve(A, [W / 2, M_ARM * G / 2 * (A_F - B_R + 2 * L_ARM)])
    Nf = Fsf + (M_KN + M_W) * G + M_ARM * G / 2
    Nr = Fsr + M_W * G + M_ARM * G / 2
    return dict(Fsf=Fsf, Fsr=Fsr, Nf=Nf, Nr=Nr)


def geometry():
    """Wheel-centre heights (tyre statically deflected) and spring free lengths.

    The tyre's normal force is k_t g_δ(x) with the C² onset g_δ of spatial/smooth.py,
    g_δ(x) = x − δ/2 for x ≥ δ: the static deflection is x = N/k_t + δ/2."""
    s = static_loads()
    d = TYRE["smoothing"] / 2
    zf = TYRE["radius"] - (s["Nf"] / TYRE["stiffness"] + d)
    zr = TYRE["radius"] - (s["Nr"] / TYRE["stiffness"] + d)
    return dict(zf=zf, zr=zr, L0f=L_SPRING + s["Fsf"] / K_F, L0r=L_SPRING + s["Fsr"] / K_R, **s)


def report():
    g = geometry()
    tot = (M_C + 4 * M_ARM + 2 * M_KN + 4 * M_W) * G
    print(f"spring static force  front {g['Fsf']:.3f} N  rear {g['Fsr']:.3f} N")
    print(f"tyre static load     front {g['Nf']:.3f} N  rear {g['Nr']:.3f} N   "
          f"sum {2 * (g['Nf'] + g['Nr']):.3f} N = total weight {tot:.3f} N")
    print(f"wheel centre height  front {g['zf']:.6f} m  rear {g['zr']:.6f} m")
    print(f"spring free length   front {g['L0f']:.6f} m  rear {g['L0r']:.6f} m")
    for k, F in ((K_F, g["Fsf"]), (K_R, g["Fsr"])):
        m = F / G
        keq = 1 / (1 / k + 1 / TYRE["stiffness"])
        print(f"ride frequency {np.sqrt(keq / m) / 2 / np.pi:.2f} Hz (sprung corner mass {m:.1f} kg)")
    for c, k, F in ((C_F, K_F, g["Fsf"]), (C_R, K_R, g["Fsr"])):
        print(f"damping ratio {c / (2 * np.sqrt(k * F / G)):.2f}")


# ---------------------------------------------------------------- TOML
def _f(x):
    """A TOML float with 10 significant digits (no binary noise like 1.4500000000000002)."""
    t = f"{float(x):.10g}"
    return t if any(ch in t for ch in ".en") else t + ".0"


def _v(v):
    return "[" + ", ".join(_f(x) for x in v) + "]"


def _table(d):
    return "{ " + ", ".join(f"{k} = {v}" for k, v in d.items()) + " }"


def bodies(x0, v0):
    """[[spatial.bodies]] blocks: (name, mass, inertia, points, axes, position, velocity,
    angular velocity, independent, comment)."""
    g = geometry()
    out = [("chassis", M_C, I_C, {"front": P_FRONT}, {}, [x0, 0.0, H_C], [v0, 0, 0], [0, 0, 0],
            ["x", "y", "z", "rx", "ry", "rz"], "chassis with driver and engine; body x forward, y left, z up")]
    pts = out[0][3]
    for c in CORNERS:
        front, sy = c[0] == "f", (1.0 if c[1] == "l" else -1.0)
        xw, zw = (A_F, g["zf"]) if front else (-B_R, g["zr"])
        pts[f"O_{c}"] = [xw + L_ARM, sy * Y_A, zw - H_C]            # arm pivot
        pts[f"S_{c}"] = [xw, sy * Y_A, zw - H_C + L_SPRING]         # spring top, above the hub
        arm_pts = {"O": [L_ARM / 2, 0, 0], "H": [-L_ARM / 2, 0, 0]}
        if not front:
            arm_pts["W"] = [-L_ARM / 2, sy * (Y_W - Y_A), 0]         # rear spindle end = wheel centre
        out.append((f"arm_{c}", M_ARM, I_ARM, arm_pts, {}, [x0 + xw + L_ARM / 2, sy * Y_A, zw], [v0, 0, 0],
                    [0, 0, 0], ["ry"], f"trailing arm {c}: pivot O on the chassis, hub H {L_ARM} m behind it"))
        if front:
            out.append((f"knuckle_{c}", M_KN, I_KN, {"W": [0, sy * (Y_W - Y_A), 0]}, {}, [x0 + xw, sy * Y_A, zw],
                        [v0, 0, 0], [0, 0, 0], [], f"steering knuckle {c}: kingpin (vertical) through its COM = hub H"))
        out.append((f"wheel_{c}", M_W, I_W, {}, {}, [x0 + xw, sy * Y_W, zw], [v0, 0, 0], [0, v0 / zw, 0], ["ry"],
                    f"wheel {c}: rolling, ω_y = v / (centre height {zw:.6f} m)"))
    return out


def joints(steer):
    out = []
    for c in CORNERS:
        front = c[0] == "f"
        out.append(dict(type="revolute", name=f"pivot_{c}", a=f"chassis.O_{c}", b=f"arm_{c}.O",
                        axis_a="chassis.y", axis_b=f"arm_{c}.y"))
        if front:
            out.append(dict(type="revolute", name=f"kingpin_{c}", a=f"arm_{c}.H", b=f"knuckle_{c}.com",
                            axis_a=f"arm_{c}.z", axis_b=f"knuckle_{c}.z"))
            out.append(dict(type="revolute", name=f"spin_{c}", a=f"knuckle_{c}.W", b=f"wheel_{c}.com",
                            axis_a=f"knuckle_{c}.y", axis_b=f"wheel_{c}.y"))
            out.append(dict(type="driver", name=f"steer_{c}", joint=f"kingpin_{c}", function=steer))
        else:
            out.append(dict(type="revolute", name=f"spin_{c}", a=f"arm_{c}.W", b=f"wheel_{c}.com",
                            axis_a=f"arm_{c}.y", axis_b=f"wheel_{c}.y"))
    return out


def forces():
    g = geometry()
    out = []
    for c in CORNERS:
        front = c[0] == "f"
        k, cc, L0 = (K_F, C_F, g["L0f"]) if front else (K_R, C_R, g["L0r"])
        out.append(dict(type="spring_damper", name=f"susp_{c}", a=f"chassis.S_{c}", b=f"arm_{c}.H",
                        stiffness=k, damping=cc, length=L0))
    for c in CORNERS:
        out.append(dict(type="tyre", name=f"tyre_{c}", wheel=f"wheel_{c}", axis=f"wheel_{c}.y", **TYRE))
    return out


def _value(v):
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, dict):
        return _table({k: _value(x) for k, x in v.items()})
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return _f(v)


def design_section():
    return """
# ---- design variables of seed 002 eq. (77); left and right share one value (drives)
[[design]]
name = "k_f"
path = "spatial.forces.susp_fl.stiffness"
drives = [{ path = "spatial.forces.susp_fr.stiffness", expression = "k_f" }]

[[design]]
name = "c_f"
path = "spatial.forces.susp_fl.damping"
drives = [{ path = "spatial.forces.susp_fr.damping", expression = "c_f" }]

[[design]]
name = "k_r"
path = "spatial.forces.susp_rl.stiffness"
drives = [{ path = "spatial.forces.susp_rr.stiffness", expression = "k_r" }]

[[design]]
name = "c_r"
path = "spatial.forces.susp_rl.damping"
drives = [{ path = "spatial.forces.susp_rr.damping", expression = "c_r" }]

[[design]]
name = "m_c"
path = "spatial.bodies.chassis.mass"
"""


def speed_set(v):
    """A scenario's overrides for driving at ``v`` m/s: every body's initial velocity
    (v, 0, 0) and each wheel's rolling spin ω_y = v / (its centre height), as ``bodies``."""
    out = {}
    for name, *_, vel, om, _ind, _c in bodies(-A_F, v):
        out[f"spatial.bodies.{name}.initial_velocity.velocity"] = _v(vel)
        if om[1]:
            out[f"spatial.bodies.{name}.initial_velocity.angular_velocity"] = _v(om)
    return out


def scenarios_section():
    """[[scenarios]] of buggy-lane-change-speeds.toml: the lane change at each of SPEEDS."""
    L = ["# ---- load cases: the same steering δ(t) at each speed; every body moves at v, the wheels",
         "# roll (ω_y = v / centre height).  Weight 1 each: the summed ∫φ̇² is dominated by the",
         "# fastest cases, where the roll is largest.", ""]
    for v in SPEEDS:
        L += ["[[scenarios]]", f'name = "v{v:g}"                                # {v:g} m/s = {v * 3.6:.1f} km/h',
              "[scenarios.set]"]
        L += [f'"{k}" = {x}' for k, x in speed_set(v).items()] + [""]
    return L


def toml(manoeuvre):
    g = geometry()
    speeds = manoeuvre == "lane-change-speeds"
    manoeuvre = "lane-change" if speeds else manoeuvre
    step = manoeuvre == "step-descent"
    if step:
        x0, v0, steer = X0_STEP, V_STEP, {"type": "polynomial", "coefficients": [0.0]}
        t_end, dt = T_STEP, DT_STEP
    else:
        x0, v0, t_end, dt = -A_F, V_LANE, T_LANE, DT_LANE
        steer = {"type": "sine_pulses", "amplitudes": [LANE["amplitude"], -LANE["amplitude"]],
                 "starts": LANE["starts"], "durations": [LANE["duration"]] * 2}
    head = {
        "step-descent": f"""# Buggy step descent (seed 002 §4.2, eq. 76): a reconstructed buggy-like vehicle
# (docs/buggy.md — the IFToMM benchmark data are not available) coasts straight at
# {V_STEP} m/s, steering blocked, and drops down a {-STEP['height'] * 100:.0f} cm step at x = {STEP['x']} m
# (front axle at x = {X0_STEP + A_F} m at t = 0, so the step is reached at t ≈ 2.0 s).
# Objective: ∫ z̈_P² dt of the chassis point P = chassis.front ({P_FRONT} m from the COM).
# Design variables: k_f, c_f, k_r, c_r, m_c (seed 002 eq. 77).""",
        "lane-change": f"""# Buggy double lane change (seed 002 §4.2, eq. 78): the reconstructed buggy of
# docs/buggy.md coasts at {V_LANE} m/s while both front wheels are steered by a rheonomic
# driver δ(t) of two opposite smooth sine pulses (amplitude {LANE['amplitude']} rad, starts
# {LANE['starts']} s, {LANE['duration']} s each: out to the left lane and back).
# Objective: ∫ φ̇² dt, the chassis roll rate (ω'·x of the chassis, ω' = 2Gṗ).
# Design variables: k_f, c_f, k_r, c_r, m_c (seed 002 eq. 77).""",
    }[manoeuvre]
    if speeds:
        head = f"""# Buggy double lane change at four speeds — load cases for a robust suspension: the
# buggy and steering δ(t) of buggy-lane-change.toml (seed 002 §4.2, eq. 78; docs/buggy.md),
# driven at {', '.join(f'{v:g}' for v in SPEEDS)} m/s ([[scenarios]] below; the base config, what
# `parmbs simulate` runs, is the {V_LANE:g} m/s file).  Design question: how do the suspension
# stiffnesses and dampers k_f, c_f, k_r, c_r and the chassis mass m_c (seed 002 eq. 77) change
# the chassis roll rate ∫ φ̇² dt summed over the speeds?  `parmbs gradient` runs one forward +
# adjoint per speed; under `mpirun -n 2` the four go two to each rank (README, "Parallel
# groups and load cases")."""
        manoeuvre = "lane-change-speeds"
    L = [head, "# GENERATED by configs/buggy_build.py — edit the data there, not here.", "",
         "[model]", f'name = "buggy-{manoeuvre}"', "",
         "[spatial]", "gravity = [0.0, 0.0, -9.81]", ""]
    if step:
        L += [f"# {-STEP['height'] * 100:.0f} cm step down at x = {STEP['x']} m, quintic edge over {STEP['width']} m "
              "(road.py shape \"step\")",
              "[spatial.road]", 'type = "function"', 'shape = "step"', f"height = {_f(STEP['height'])}",
              f"length = {_f(STEP['width'])}", f"x0 = {_f(STEP['x'])}", ""]
    L += [f"# Design configuration = static equilibrium at the nominal design: wheel centres at",
          f"# R − (N/k_t + δ/2) = {g['zf']:.6f} m (front), {g['zr']:.6f} m (rear); springs {L_SPRING} m long,",
          f"# free lengths 0.30 + F_s/k; static spring forces {g['Fsf']:.3f} N / {g['Fsr']:.3f} N,",
          f"# tyre loads {g['Nf']:.3f} N / {g['Nr']:.3f} N (configs/buggy_build.py static_loads).", ""]
    L += ["# Bodies start with the identity orientation (body axes = global axes); points are",
          "# body-local offsets from the COM.  independent: chassis pose (6), arm swings and wheel",
          "# spins (4 + 4) = the 14 DOF; the knuckles follow the steering drivers.", ""]
    for name, m, I, pts, axes, pos, vel, om, ind, comment in bodies(x0, v0):
        L += [f"# {comment}", "[[spatial.bodies]]", f'name = "{name}"', f"mass = {_f(m)}", f"inertia = {_v(I)}"]
        if pts:
            L.append("points = " + _table({k: _v(v) for k, v in pts.items()}))
        L.append("initial = " + _table({"position": _v(pos)}))
        L.append("initial_velocity = " + _table({"velocity": _v(vel), "angular_velocity": _v(om)}))
        L.append("independent = [" + ", ".join(f'"{x}"' for x in ind) + "]")
        L.append("")
    L += ["# Joints: chassis–arm revolutes about the lateral y axis (trailing arms), front",
          "# arm–knuckle kingpins (vertical z, steered by the drivers), wheel spins (y).", ""]
    for j in joints(steer):
        L += ["[[spatial.joints]]"] + [f"{k} = {_value(v)}" for k, v in j.items()] + [""]
    L += [f"# Suspension: linear spring-damper chassis S → arm hub H, vertical at design (motion",
          f"# ratio 1): k_f = {K_F}, c_f = {C_F}, k_r = {K_R}, c_r = {C_R} (ride 1.6 Hz, damping ratio 0.33);",
          f"# tyres: seed 004 eqs. 5.6–5.10, R = {TYRE['radius']} m, k_t = {TYRE['stiffness']} N/m (docs/buggy.md §2).", ""]
    for fo in forces():
        L += ["[[spatial.forces]]"] + [f"{k} = {_value(v)}" for k, v in fo.items()] + [""]
    L += ["# generalized-α, index 3 (docs/buggy.md §3: the trapezoidal rule went unstable after ≈ 1.6 s;",
          "# at the lane change's 10 m/s a 15-ms step did too (wheel spin ωh/2 ≈ 0.27))"]
    if step:
        L += ["[simulation]", f"t_end = {_f(t_end)}", f"dt = {_f(dt)}", 'integrator = "genalpha"',
              "rho_inf = 0.8", ""]
    else:
        L += ["# dt-convergence (benchmarks/README.md): the default (Chung–Hulbert) generalized-α is",
              "# first order on these Euler-parameter bodies, error ∝ (1 − ρ∞)/(1 + ρ∞) h (ρ∞ = 0.8 at",
              "# 5 ms: ψ changed 3.8e-2 at dt/2).  The Arnold–Brüls form (equations at t_{n+1},",
              "# integrators/genalpha_ab.py) is second order for any M(q): ψ, ∇ψ change 7.5e-5, 7.2e-5",
              "# at dt/2 from 5 ms, ρ∞ = 0.8 (which also damps the wheels' spin mode); the former",
              "# trapezoidal + GGL needed 2.5 ms for 1.9e-4."]
        L += ["[simulation]", f"t_end = {_f(t_end)}", f"dt = {_f(dt)}", 'integrator = "genalpha"',
              "rho_inf = 0.8", 'genalpha_form = "arnold-bruls"', ""]
    L.append(design_section())
    if step:
        L += ["[[objectives]]", 'name = "chassis_vertical_acc"     # ψ = ∫ z̈_P² dt (seed 002 eq. 76)',
              'integrand = "vertical_acceleration_sq"', 'point = "chassis.front"', ""]
    else:
        L += ["[[objectives]]", 'name = "chassis_roll_rate"        # ψ = ∫ φ̇² dt (seed 002 eq. 78)',
              'integrand = "roll_rate_sq"', 'body = "chassis"', ""]
    if speeds:
        L += scenarios_section()
    return "\n".join(L)


def write():
    for m in ("step-descent", "lane-change", "lane-change-speeds"):
        path = HERE / f"buggy-{m}.toml"
        path.write_text(toml(m))
        print("wrote", path)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--print", action="store_true")
    a = ap.parse_args()
    report()
    if a.print:
        sys.exit(0)
    write()
