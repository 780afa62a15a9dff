"""Build configs/iltis.toml: the Bombardier Iltis of seed 004 §5.2.1 (tables 5.2–5.6,
eqs. 5.3–5.10) over the speed-bump road of §5.2.3.  Data digest: docs/iltis.md.

    python configs/iltis_build.py            # writes configs/iltis.toml
    python configs/iltis_build.py --check    # topology check only (no parmbs needed)

The model is written out as plain data (bodies, joints, forces in the [spatial] schema
of ../shared/SPATIAL.md) so the TOML stays readable; this script only does the
mirroring (left/right: y → −y; front/rear: x − 2.017 m) and the bookkeeping of
body-local points (table 5.4 gives global points of the nominal configuration, every
body starts with the identity orientation, so s' = P − r_COM).

``--check`` evaluates the 132 constraint equations of the model with its own small
Euler-parameter constraint functions (independent of parmbs' joints) and prints the
rank of Φ_q by SVD: seed 004 §5.2.1 says 140 coordinates, 132 constraints, 6 of them
redundant, 14 DOF — the topology of docs/iltis.md reproduces those counts.
"""
import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent

# ---------------------------------------------------------------- seed 004 data
# Table 5.2: mass [kg], principal moments [kg m²] (Ixx, Iyy, Izz) in the CG frame.
CHASSIS = dict(mass=1260.0, inertia=[130.0, 1620.0, 1670.0])
WHEEL = dict(mass=57.35, inertia=[1.2402, 1.908, 1.2402])
ARM = dict(mass=6.0, inertia=[0.052099, 0.023235, 0.068864])
# Table 5.3: chassis CG.  (Wheel CG = wheel centre, A-arm CG = midpoint of its two
# joints: both reproduce table 5.3's entries for the right-front and left-rear corners.)
CHASSIS_CG = (0.0, 0.0, 0.57)
# Table 5.4: key points of the LEFT FRONT suspension, frame C (x forward, y left, z up).
P_LF = {
    "W":  (0.97, 0.615, 0.356),    # wheel centre
    "AH": (0.97, 0.572, 0.229),    # A-arm to hub carrier
    "AC": (0.97, 0.259, 0.302),    # A-arm to chassis
    "LH": (0.97, 0.488, 0.531),    # leaf spring connection to hub carrier
    "LC": (0.97, 0.1585, 0.600),   # leaf spring connection to chassis
    "DA": (1.045, 0.500, 0.241),   # damper connection to A-arm
    "DC": (1.045, 0.297, 0.632),   # damper connection to chassis
    "TH": (0.83, 0.448, 0.531),    # tie rod connection to hub carrier
    "TC": (0.83, 0.07, 0.600),     # tie rod connection to "chassis" = to the steering rack
    "RC": (0.83, 0.00, 0.600),     # steering rack connection to chassis
}
REAR_DX = -1.047 - 0.97            # table 5.3: rear wheel x = −1.047
# Massless bodies (§5.2.1: "the masses of bodies not included in the table are
# neglected"): hub carriers, leaf-spring links, tie rods, steering rack.  The schema
# wants mass > 0: 0.1 kg, 1e-4 kg m² stand-ins (1.3 kg in all, docs/iltis.md §3).
MASSLESS = dict(mass=0.1, inertia=[1e-4, 1e-4, 1e-4])

# Eq. (5.3) leaf spring: F_L = −k_L (L − L0), L0 = 1 + 2728.9/35906 m, nominal L = 1 m.
K_LEAF = 35906.0
L0_LEAF = 1.0 + 2728.9 / 35906.0
LEAF_VIRTUAL = 1.0                 # nominal L: chassis point 1 m above LH (docs/iltis.md §3)
# Eq. (5.4) bump stop on the same element: F_B = −1e7 (s − 0.93), s < 0.93 m.
K_BUMP, S_BUMP = 1.0e7, 0.93
# Eq. (5.5) nonlinear spring-damper between DA and DC.
SD = dict(a0=-4.0092e6, k=2.8397e7, a2=-6.7061e7, a3=5.2796e7,
          c=9945.627, d2=33955.72, d3=-59832.25, d4=-395651.0,
          v_low=-0.2, low=[-416.4200, 1844.3], v_high=0.21, high=[1919.1638, 1634.727])
# Tyre (eqs. 5.6–5.10): the seed gives the form, not the numbers (docs/iltis.md §4).
TYRE = dict(radius=0.375, stiffness=2.0e5, damping=1.0e3, mu_x=0.8, mu_y=0.8,
            kappa_c=0.1, alpha_c=0.1)
# Speed-bump test (§5.2.3): 5 m/s, a 10 cm step down at x = 6 m (smoothed over 0.25 m,
# the arc a rigid R = 0.375 m wheel rounds the edge on; docs/iltis.md §7).
SPEED = 5.0
STEP = dict(x0=6.0, height=-0.1, length=0.25)
BUMP_DELTA = 0.005                 # bump-stop onset smoothing δ [m]
STEER_DRIVER = False               # rack: translational + driver (True) or rigid (False)
# Independent coordinates of the initial assembly: the 14 DOF (chassis 6, wheel spin 4,
# suspension travel 4 = A-arm rotation about x).  Giving 14 > n − m = 8 tells parmbs
# the model is redundantly constrained (parmbs/model/redundancy.py drops 6 rows).
INDEPENDENT = {"chassis": ["x", "y", "z", "rx", "ry", "rz"], "wheel": ["ry"], "arm": ["rx"]}


def corner_points(corner):
    """Global nominal points of one corner: 'fl', 'fr', 'rl', 'rr'."""
    sy = 1.0 if corner[1] == "l" else -1.0
    dx = 0.0 if corner[0] == "f" else REAR_DX
    return {k: np.array([x + dx, sy * y, z]) for k, (x, y, z) in P_LF.items()}


def unit(v):
    v = np.asarray(v, float)
    return v / np.linalg.norm(v)


# ---------------------------------------------------------------- the model as data
def model():
    """bodies: name -> dict(mass, inertia, com, points{name: global}, axes{name: global});
    joints: list of dict(type, name, a, b, axis_a, axis_b); forces: list of dicts."""
    X, Y, Z = np.eye(3)
    bodies = {"chassis": dict(CHASSIS, com=np.array(CHASSIS_CG), points={}, axes={"x": X, "y": Y, "z": Z})}
    joints, forces = [], []
    ch = bodies["chassis"]
    for c in ("fl", "fr", "rl", "rr"):
        P = corner_points(c)
        front = c[0] == "f"
        bodies[f"wheel_{c}"] = dict(WHEEL, com=P["W"], points={"W": P["W"]}, axes={"y": Y, "x": X})
        bodies[f"arm_{c}"] = dict(ARM, com=0.5 * (P["AH"] + P["AC"]),
                                  points={"AH": P["AH"], "AC": P["AC"], "DA": P["DA"]}, axes={"x": X})
        hub_pts = {"W": P["W"], "AH": P["AH"], "LH": P["LH"]}
        if front:
            hub_pts["TH"] = P["TH"]
        bodies[f"hub_{c}"] = dict(MASSLESS, com=P["W"], points=hub_pts,
                                  axes={"y": Y, "x": X})
        bodies[f"leaf_{c}"] = dict(MASSLESS, com=0.5 * (P["LH"] + P["LC"]),
                                   points={"LH": P["LH"], "LC": P["LC"]}, axes={"x": X})
        ch["points"].update({f"AC_{c}": P["AC"], f"LC_{c}": P["LC"], f"DC_{c}": P["DC"],
                             f"LS_{c}": P["LH"] + LEAF_VIRTUAL * Z})
        # wheel spin: revolute hub–wheel at the wheel centre, axis y
        joints.append(dict(type="revolute", name=f"spin_{c}", a=f"hub_{c}.W", b=f"wheel_{c}.W",
                           axis_a=f"hub_{c}.y", axis_b=f"wheel_{c}.y"))
        # lower arm: revolute chassis–A-arm, axis x
        joints.append(dict(type="revolute", name=f"arm_pivot_{c}", a=f"chassis.AC_{c}", b=f"arm_{c}.AC",
                           axis_a="chassis.x", axis_b=f"arm_{c}.x"))
        # upright: front — ball joints A-arm–hub and leaf–hub (their line AH–LH is the
        # kingpin, the hub steers about it, the tie rod holds it); rear — revolutes with
        # axis x, a planar four-bar chassis–arm–hub–leaf built from 4 revolutes: the
        # 3 redundant constraints per rear corner of seed 004 §5.2.1 (6 in total)
        joints.append(dict(type="revolute", name=f"leaf_pivot_{c}", a=f"chassis.LC_{c}", b=f"leaf_{c}.LC",
                           axis_a="chassis.x", axis_b=f"leaf_{c}.x"))
        if front:
            joints.append(dict(type="spherical", name=f"ball_{c}", a=f"arm_{c}.AH", b=f"hub_{c}.AH"))
            joints.append(dict(type="spherical", name=f"leaf_hub_{c}", a=f"leaf_{c}.LH", b=f"hub_{c}.LH"))
        else:
            joints.append(dict(type="revolute", name=f"arm_hub_{c}", a=f"arm_{c}.AH", b=f"hub_{c}.AH",
                               axis_a=f"arm_{c}.x", axis_b=f"hub_{c}.x"))
            joints.append(dict(type="revolute", name=f"leaf_hub_{c}", a=f"leaf_{c}.LH", b=f"hub_{c}.LH",
                               axis_a=f"leaf_{c}.x", axis_b=f"hub_{c}.x"))
        if front:
            bodies[f"tierod_{c}"] = dict(MASSLESS, com=0.5 * (P["TH"] + P["TC"]),
                                         points={"TH": P["TH"], "TC": P["TC"]}, axes={"z": Z})
            joints.append(dict(type="spherical", name=f"tierod_outer_{c}", a=f"hub_{c}.TH", b=f"tierod_{c}.TH"))
            # inner tie-rod end: spherical + "no rotation of the tie rod" (one dot-1
            # primitive, §5.2.1) = a universal joint: rack x ⟂ tie-rod z
            joints.append(dict(type="universal", name=f"tierod_inner_{c}", a=f"rack.TC_{c}", b=f"tierod_{c}.TC",
                               axis_a="rack.x", axis_b=f"tierod_{c}.z"))
        # forces of the corner (eqs. 5.3–5.6)
        forces.append(dict(type="spring_damper", name=f"leaf_{c}", a=f"chassis.LS_{c}", b=f"hub_{c}.LH",
                           stiffness=K_LEAF, length=L0_LEAF))
        forces.append(dict(type="bump_stop", name=f"bump_{c}", a=f"chassis.LS_{c}", b=f"hub_{c}.LH",
                           stiffness=K_BUMP, length=S_BUMP))
        forces.append(dict(type="nonlinear_spring_damper", name=f"strut_{c}", a=f"chassis.DC_{c}", b=f"arm_{c}.DA"))
        forces.append(dict(type="tyre", name=f"tyre_{c}", wheel=f"wheel_{c}", axis=f"wheel_{c}.y"))
    # steering rack: translational along y + rheonomic driver (straight: s(t) = 0)
    P = corner_points("fl")
    bodies["rack"] = dict(MASSLESS, com=P["RC"],
                          points={"RC": P["RC"], "TC_fl": P["TC"], "TC_fr": corner_points("fr")["TC"]},
                          axes={"x": X, "y": Y, "z": Z})
    ch["points"]["RC"] = P["RC"]
    if STEER_DRIVER:
        joints.append(dict(type="translational", name="rack_slide", a="chassis.RC", b="rack.RC",
                           axis_a="chassis.y", axis_b="rack.y", normal_a="chassis.z", normal_b="rack.z"))
        joints.append(dict(type="driver", name="steer", a="chassis.RC", b="rack.RC", axis_a="chassis.y"))
    else:
        # steering not actuated (§5.2.3): translational (5 rows) + driver s(t) = 0 (1 row)
        # is the same constraint manifold as a rigid mount (6 rows); parmbs' drivers
        # act on revolute/cylindrical angles and COM coordinates, not on a translational
        # joint's slide, so the rack is mounted rigidly (docs/iltis.md §2)
        joints.append(dict(type="rigid", name="rack_mount", a="chassis.RC", b="rack.RC"))
    return bodies, joints, forces


# ---------------------------------------------------------------- independent topology check
def _A(p):
    e0, e1, e2, e3 = p
    return np.array([[e0*e0+e1*e1-e2*e2-e3*e3, 2*(e1*e2-e0*e3), 2*(e1*e3+e0*e2)],
                     [2*(e1*e2+e0*e3), e0*e0-e1*e1+e2*e2-e3*e3, 2*(e2*e3-e0*e1)],
                     [2*(e1*e3-e0*e2), 2*(e2*e3+e0*e1), e0*e0-e1*e1-e2*e2+e3*e3]])


def _perp(u):
    """Two unit vectors spanning the plane ⟂ u."""
    u = unit(u)
    t = np.eye(3)[np.argmin(abs(u))]
    f = unit(np.cross(u, t))
    return f, np.cross(u, f)


def constraints(bodies, joints):
    """Φ(q) of the model (normalisation + joints) as a function, and q0."""
    names = list(bodies)
    idx = {n: 7 * i for i, n in enumerate(names)}
    q0 = np.concatenate([np.r_[bodies[n]["com"], 1.0, 0, 0, 0] for n in names])

    def ref(r):
        b, k = r.split(".")
        B = bodies[b]
        return b, (B["points"][k] - B["com"]) if k in B["points"] else B["axes"][k]

    def phi(q):
        out = []
        pose = {n: (q[idx[n]:idx[n] + 3], q[idx[n] + 3:idx[n] + 7]) for n in names}
        for n in names:
            p = pose[n][1]
            out.append(p @ p - 1.0)
        for j in joints:
            ba, sa = ref(j["a"]); bb, sb = ref(j["b"])
            ra, pa = pose[ba]; rb, pb = pose[bb]
            Aa, Ab = _A(pa), _A(pb)
            d = rb + Ab @ sb - ra - Aa @ sa
            t = j["type"]
            if t in ("spherical", "revolute", "universal"):
                out += list(d)
            if t == "revolute":
                _, ua = ref(j["axis_a"]); _, ub = ref(j["axis_b"])
                f, g = _perp(ub)
                out += [(Aa @ ua) @ (Ab @ f), (Aa @ ua) @ (Ab @ g)]
            if t == "universal":
                _, ua = ref(j["axis_a"]); _, ub = ref(j["axis_b"])
                out.append((Aa @ ua) @ (Ab @ ub))
            if t == "translational":
                _, ua = ref(j["axis_a"]); _, ub = ref(j["axis_b"])
                _, na = ref(j["normal_a"]); _, nb = ref(j["normal_b"])
                f, g = _perp(ua)
                out += [(Aa @ f) @ (Ab @ ub), (Aa @ g) @ (Ab @ ub),     # axes parallel
                        (Aa @ f) @ d, (Aa @ g) @ d,                     # point on the line
                        (Aa @ na) @ (Ab @ np.cross(ub, nb))]            # no relative twist
            if t == "rigid":
                out += list(d)
                X, Y, Z = np.eye(3)
                out += [(Aa @ X) @ (Ab @ Y), (Aa @ X) @ (Ab @ Z), (Aa @ Y) @ (Ab @ Z)]
            if t == "driver":
                _, ua = ref(j["axis_a"])
                out.append((Aa @ ua) @ d - 0.0)
        return np.array(out)
    return phi, q0


def check():
    bodies, joints, forces = model()
    phi, q0 = constraints(bodies, joints)
    n, m = q0.size, phi(q0).size
    J = np.empty((m, n))
    for k in range(n):                               # complex step: exact Φ_q
        dq = np.zeros(n, complex); dq[k] = 1e-30j
        J[:, k] = phi(q0 + dq).imag / 1e-30
    s = np.linalg.svd(J, compute_uv=False)
    rank = int((s > 1e-10 * s[0]).sum())
    print(f"bodies {len(bodies)}  coordinates {n}  constraints {m}  |Φ(q0)|∞ {abs(phi(q0)).max():.1e}")
    print(f"rank Φ_q {rank}  redundant {m - rank}  DOF {n - rank}"
          f"   (seed 004 §5.2.1: 20, 140, 132, 6 redundant, 14 DOF)")
    kinds = {}
    for j in joints:
        kinds[j["type"]] = kinds.get(j["type"], 0) + 1
    print("joints:", kinds, " forces:", len(forces))
    # where the redundancy sits: drop one corner's loop and watch the count
    return len(bodies), n, m, rank


# ---------------------------------------------------------------- TOML writer
def _f(x):
    x = round(float(x), 10) + 0.0          # table 5.4 data have ≤ 4 decimals; no −0.0
    return repr(x) if abs(x) >= 1e-3 or x == 0 else f"{x:.6e}"


def _v(v):
    return "[" + ", ".join(_f(x) for x in v) + "]"


def _table(d):
    return "{ " + ", ".join(f"{k} = {_v(x)}" for k, x in d.items()) + " }"


HEADER = """\
# Bombardier Iltis (seed 004 §5.2.1; IAVSD benchmark, Frik et al. 1993) over the
# speed-bump road of §5.2.3.  GENERATED by configs/iltis_build.py — edit the data
# there and rerun `python configs/iltis_build.py`.  Data digest, sources of every number
# and the gaps filled: docs/iltis.md.
#
# 20 bodies (chassis; per corner wheel, A-arm, hub carrier, leaf link; 2 tie rods;
# steering rack), 140 coordinates (Euler parameters), 132 constraints (6 redundant:
# the rear four-bars of revolutes), 14 DOF.  Frame C: x forward, y left, z up, road
# at z = 0.  Bodies start in the nominal configuration of tables 5.3/5.4 (identity
# orientations, so body-local points are table 5.4's points minus the body's CG),
# moving at {speed} m/s, wheels rolling (omega_y = v / 0.356 m).
# Corners: fl, fr (front, "2" in the design names), rl, rr (rear, "1").
"""


def force_entry(f):
    """One [[spatial.forces]] entry in the spatial-forces schema."""
    t = f["type"]
    head = f'type = "{t}"\nname = "{f["name"]}"\n'
    if t == "spring_damper":       # eq. 5.3 leaf spring, T = k (l − l0) (tension positive)
        return head + f'a = "{f["a"]}"\nb = "{f["b"]}"\nstiffness = {_f(f["stiffness"])}\ndamping = 0.0\nlength = {_f(f["length"])}\n'
    if t == "bump_stop":           # eq. 5.4, engages for l < length
        return head + f'a = "{f["a"]}"\nb = "{f["b"]}"\nstiffness = {_f(f["stiffness"])}\nlength = {_f(f["length"])}\nsmoothing = {_f(BUMP_DELTA)}\n'
    if t == "nonlinear_spring_damper":   # eq. 5.5; the polynomial coefficients default to the seed's
        return (f'type = "spring_damper"\nname = "{f["name"]}"\nlaw = "iltis"\n'
                f'a = "{f["a"]}"\nb = "{f["b"]}"\nstiffness = {_f(SD["k"])}\ndamping = {_f(SD["c"])}\n')
    if t == "tyre":                # eqs. 5.6–5.10
        T = TYRE
        return head + (f'wheel = "{f["wheel"]}"\naxis = "{f["axis"]}"\nradius = {_f(T["radius"])}\n'
                       f'stiffness = {_f(T["stiffness"])}\ndamping = {_f(T["damping"])}\n'
                       f'mu_x = {_f(T["mu_x"])}\nmu_y = {_f(T["mu_y"])}\n'
                       f'kappa_c = {_f(T["kappa_c"])}\nalpha_c = {_f(T["alpha_c"])}\n')
    raise ValueError(t)


def joint_entry(j):
    if j["type"] == "driver":
        return (f'type = "driver"\nname = "{j["name"]}"\njoint = "rack_slide"\n'
                f'function = {{ type = "constant", value = 0.0 }}   # steering not actuated (§5.2.3)\n')
    out = f'type = "{j["type"]}"\nname = "{j["name"]}"\na = "{j["a"]}"\nb = "{j["b"]}"\n'
    for k in ("axis_a", "axis_b"):
        if k in j:
            out += f'{k} = "{j[k]}"\n'
    return out


COMMENTS = {
    "chassis": "table 5.2 mass/inertia, table 5.3 CG; chassis points: suspension mounts (table 5.4), LS_c = leaf-spring top (virtual, 1 m above LH)",
    "wheel": "wheel/hub/brake assembly (table 5.2), CG = wheel centre",
    "arm": "A-arm (table 5.2), CG = midpoint of AH-AC (table 5.3)",
    "hub": "hub carrier: massless in the seed (stand-in mass, docs §3)",
    "leaf": "leaf-spring link LC-LH: massless in the seed",
    "tierod": "tie rod TC-TH: massless in the seed",
    "rack": "steering rack: massless in the seed",
}


def road_block():
    """The [spatial.road] text of the speed-bump run (other manoeuvres' builders replace it)."""
    return ("# speed-bump road: smooth 10 cm step down at x = 6 m (docs/iltis.md §7)\n"
            f'[spatial.road]\ntype = "function"\nshape = "step"\nx0 = {_f(STEP["x0"])}\n'
            f'height = {_f(STEP["height"])}\nlength = {_f(STEP["length"])}\n')


def replace_road(path, text):
    """Rewrite the file ``path`` written by ``write`` with ``text`` for its road block."""
    old = Path(path).read_text()
    assert old.count(road_block()) == 1, "write()'s road block not found"
    Path(path).write_text(old.replace(road_block(), text))


def write(path, t_end=3.0, dt=5e-4):
    bodies, joints, forces = model()
    out = [HEADER.format(speed=SPEED)]
    out.append('[model]\nname = "iltis"\n\n[spatial]\ngravity = [0.0, 0.0, -9.81]\n')
    out.append(road_block())
    omega = SPEED / P_LF["W"][2]
    for name, B in bodies.items():
        out.append(f"# {COMMENTS[name.split('_')[0]]}\n[[spatial.bodies]]\nname = \"{name}\"\n"
                   f"mass = {_f(B['mass'])}\ninertia = {_v(B['inertia'])}\n")
        w = [0.0, omega, 0.0] if name.startswith("wheel") else [0.0, 0.0, 0.0]
        out.append(f"initial = {{ position = {_v(B['com'])}, orientation = [1.0, 0.0, 0.0, 0.0] }}\n"
                   f"initial_velocity = {{ velocity = {_v([SPEED, 0, 0])}, angular_velocity = {_v(w)} }}\n")
        ind = INDEPENDENT.get(name.split("_")[0], [])
        if True:
            out.append("independent = [" + ", ".join(f'"{c}"' for c in ind) + "]\n")
        out.append("[spatial.bodies.points]      # body-local: table 5.4 point − CG\n")
        out.append("".join(f"{k} = {_v(P - B['com'])}\n" for k, P in B["points"].items()))
        extra = {k: u for k, u in B["axes"].items() if k not in ("x", "y", "z")}
        if extra:
            out.append("[spatial.bodies.axes]\n" + "".join(f"{k} = {_v(u)}\n" for k, u in extra.items()))
    out.append("\n# ---- joints (topology: docs/iltis.md §2)\n")
    for j in joints:
        out.append("[[spatial.joints]]\n" + joint_entry(j))
    out.append("\n# ---- forces: leaf spring (5.3), bump stop (5.4), nonlinear strut (5.5), tyre (5.6-5.10)\n")
    for f in forces:
        out.append("[[spatial.forces]]\n" + force_entry(f))
    out.append(SIM.format(t_end=t_end, dt=dt, design=design_toml(*DESIGN).rstrip("\n") + "\n"))
    Path(path).write_text("".join(out))


#: the six design variables of §5.2.3 (one value per axle: "1" rear, "2" front):
#: name, force, parameter
DESIGN_VARS = (("k_L1", "leaf_r", "stiffness"), ("k_L2", "leaf_f", "stiffness"),
               ("c1", "strut_r", "damping"), ("c2", "strut_f", "damping"),
               ("k1", "strut_r", "stiffness"), ("k2", "strut_f", "stiffness"))
#: eq. 5.14a: k_L, c ≥ 0, 2.83e7 ≤ k ≤ 2.85e7 (as written into the TOML)
BOUNDS_514A = {"k_L1": ("0.0", None), "k_L2": ("0.0", None), "c1": ("0.0", None), "c2": ("0.0", None),
               "k1": ("2.83e7", "2.85e7"), "k2": ("2.83e7", "2.85e7")}

#: what write() puts in SIM's {design} slot (the manoeuvre builders patch it)
DESIGN = (BOUNDS_514A, "eq. 5.14a bounds")


def design_toml(bounds, title):
    """The [[design]] entries of DESIGN_VARS with ``bounds`` {name: (lower, upper or None)},
    the bounds as TOML number strings."""
    out = [f'# ---- design variables ({title}): "1" rear, "2" front; one value per axle\n']
    for name, force, key in DESIGN_VARS:
        lo, hi = bounds[name]
        out.append(f'[[design]]\nname = "{name}"\npath = "spatial.forces.{force}l.{key}"\n'
                   f'drives = [{{ path = "spatial.forces.{force}r.{key}", expression = "{name}" }}]\n'
                   f"lower = {lo}\n" + (f"upper = {hi}\n" if hi is not None else "") + "\n")
    return "".join(out)

#: the start of every Iltis file's [simulation] table (the manoeuvre builders share it)
SIM_HEAD = """
[simulation]
t_end = {t_end}
dt = {dt}
formulation = "index3"      # the 6 redundant rows are dropped at set-up (model/redundancy.py)
"""
#: the thesis' ride objective ψ4 = ∫ z̈⁴ of the chassis CG (eq. 5.13)
PSI4 = """[[objectives]]
name = "psi4"
integrand = "vertical_acceleration_4"
point = "chassis.com"
"""

SIM = SIM_HEAD + """integrator = "genalpha"     # numerically damped: the trapezoidal rule's (−1)^k oscillation of
rho_inf = 0.99              # the index-3 accelerations grows on this model (fails at t ≈ 2.4 s)
genalpha_form = "arnold-bruls"              # second order with variable steps (no α_m − α_f lag of q̈)
adapt = {{ rtol = 1e-5, atol = 1e-6 }}      # dt above is the first step
# dt-convergence (benchmarks/README.md, Iltis bullet): with fixed steps ψ converges but ∇ψ
# does not (6.5e-3 from dt 5e-4 to 2.5e-4, first order): at the 10 cm step the wheels leave
# the road for 0.1 s and land at 0.7–0.9 m/s on the 1 mm tyre contact band (with a 2 cm
# step, no lift-off, fixed steps converge at second order).  Error-controlled steps: rtol
# 1e-5 against 1e-6 changes ψ, ψ4 by 7.6e-7, 5.4e-6 and their gradients by 1.1e-4, 2.3e-4
# (noise-aware error norm, integrators/newton_tol.py: 18 374 steps, 2–3× denser over the
# bump; 56 s CPU for ψ and ∇ψ, loaded machine).  ρ∞ = 0.99 (was 0.8): the wheels' (−1)^k spin mode grows ≈ ω/2 = 7/s, the
# damping is −ln ρ∞ / dt.
progress = false

{design}
# ---- objectives: psi = ∫ z̈² of the chassis CG (issue 10); psi4 = ∫ z̈⁴, the thesis'
# ride objective (seed 004 eq. 5.13, "same cost function" for the speed bumps)
[[objectives]]
name = "psi"
integrand = "vertical_acceleration_sq"
point = "chassis.com"

""" + PSI4 + """
[sensitivity]
method = "adjoint"

# ---- ride optimisation of §5.2.3 (speed bumps, bounds of eq. 5.14a), min psi4.  The four
# experiments of tables 5.11-5.12 at fixed 1 ms steps: benchmarks/iltis_bump_opt.py, results
# in benchmarks/README.md ("Speed-bump ride optimisations").  With k1 or k2 free, BLMVM's
# projected trials sit on k's lower bound (the scaled gradient in k is 10^3 x the others),
# where this file's fixed start leaves 43 kN per strut out of balance (psi4 3.5e5).
[optimize]
method = "tao-blmvm"
objective = "psi4"
max_it = 15
"""


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    if a.check:
        check()
        sys.exit(0)
    write(HERE / "iltis.toml")
    print(f"wrote {HERE / 'iltis.toml'}")
