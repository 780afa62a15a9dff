"""Exudyn peer of the five-bar (issue 19): forward speed and gradient time of Exudyn 1.13
(C++ core, ``pip install exudyn``) against parmbs's compiled path, same model, same
scheme, same step, measured in one run (CPU time, time.process_time).

Model.  Built by this script from configs/fivebar.toml itself (bodies, revolute joints,
springs, gravity, objectives, design paths; anything else in the file is refused):
``NodeRigidBody2D`` + ``ObjectRigidBody2D`` per bar with the node at the centre of mass
(mass, I_G), ``MarkerBodyPosition`` at each named point (its offset from the centre of
mass), ``ObjectJointRevolute2D`` per joint, ``ObjectConnectorSpringDamper`` per spring,
``LoadMassProportional`` for gravity.  The node sits at the centre of mass because that
is where parmbs puts a planar body's coordinates (q = (x_G, y_G, θ), parmbs/model/
bodies): an Exudyn node at the bar's joint with ``centerOfMass`` set integrates other
coordinates, and the fixed-step schemes are not invariant under that nonlinear change
of variables (ψ then differs by O(h²), 2e-8 here).  The initial state: the config's
independent coordinates (the angles of A-1 and 1-2) held and the others solved from the
joint equations by Newton (parmbs's assembly), at rest; Exudyn computes the initial
accelerations from the equations of motion (``computeInitialAccelerations``), as
parmbs's index-3 initial state does.

Scheme, matched exactly.  The config ships index-3 generalized-α, ρ∞ = 0.9, dt 1e-3,
in the Chung–Hulbert form (integrators/newmark.py).  Exudyn's ``GeneralizedAlpha``
solver with ``spectralRadius`` 0.9, index-3 constraints (``useIndex2Constraints``
false) is the Arnold–Brüls form (the same α_m, α_f, γ, β of ρ∞; equations of motion at
t_{n+1}, a pseudo-acceleration recursion; parmbs's ``genalpha_form = "arnold-bruls"``):
its positions agree with parmbs's Arnold–Brüls run to 4e-14 over the 5000 steps.  On
this model the two forms give the *same* q and v: the mass matrix in centre-of-mass
coordinates is constant and the constraint forces linear in λ, so M times the
Arnold–Brüls recursion is the Chung–Hulbert equation for the pseudo-acceleration; only
the acceleration slot differs (Chung–Hulbert stores the pseudo-acceleration, Arnold–
Brüls and Exudyn q̈), so ψ1, ψ2 agree to round-off with the shipped parmbs run and ψ3
(∫|r̈₂|²) by O(h).  ``--scheme trapezoidal``: Exudyn's ``useNewmark`` with β = ¼,
γ = ½ against parmbs's ``integrator = "trapezoidal"`` (the same index-3 equations).
Newton: Exudyn's defaults (modified Newton, dense LU) with its relative and absolute
tolerances set to the config's rtol, atol (1e-12; the criteria are defined differently
— Exudyn's on the residual, parmbs's on the position update); fixed steps
(``adaptiveStep`` false).  ψ from ``SensorBody`` position/velocity/acceleration of the
objective's point, stored internally every step, summed with parmbs's trapezoidal
weights (h/2 at both ends).

Measured (CPU s, min of --repeat):
* Exudyn forward: ``SolveDynamic`` of the assembled model (5000 steps), in steps/s;
  also model building + ``Assemble``;
* Exudyn gradient by central finite differences: 2 runs per design variable (build,
  assemble, solve, ψ: 10 runs for 5 variables), all 3 objectives from each run,
  relative step --fd-step (≈ ε^(1/3): truncation ~ δ² |ψ'''| vs Newton noise ~ tol/δ);
* parmbs compiled: ``Problem.forward`` (the whole loop: guard, trajectory arrays) in
  steps/s and the bare step loop; the gradient = forward + ``Problem.adjoint`` (all 3
  objectives, one sweep); adjoint ÷ forward;
* ψ agreement Exudyn vs parmbs (the shipped run; and parmbs's Arnold–Brüls numpy run,
  same discrete equations as Exudyn — ``--no-ab`` skips it), and the FD gradient vs
  parmbs's adjoint gradient.

Usage (Exudyn is an optional peer, never a test dependency: ``.venv/bin/pip install
exudyn``; without it the script prints one line and exits 2):
    PYTHONPATH=$PWD .venv/bin/python benchmarks/peers/exudyn_fivebar.py [--scheme genalpha|trapezoidal]
"""
import parmbs  # noqa: F401  (first: parmbs/_determinism.py pins threads and numpy's SIMD)

import argparse
import pathlib
import sys
import tomllib

try:
    import exudyn as exu
    import exudyn.itemInterface as ii
except ImportError:
    print("exudyn_fivebar: exudyn is not installed (.venv/bin/pip install exudyn; benchmarks/peers/README.md)")
    sys.exit(2)
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
CONFIG = ROOT / "configs" / "fivebar.toml"
XY = {"x": 0, "y": 1}
sys.path.insert(0, str(ROOT / "benchmarks"))
from compiled import cpu_min  # noqa: E402  (benchmarks/compiled.py: CPU time, min of repeat)


def rot(th):
    return np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]])


def _slot(c, path):
    """(container, key) of a design path (``forces.S1.length``, ``bodies.A1.points.P1.x``)."""
    head, name, *rest = path.split(".")
    node = next(x for x in c[head] if x["name"] == name)
    for key in rest[:-1]:
        node = node[key]
    return node, XY[rest[-1]] if isinstance(node, list) else rest[-1]


def get_path(c, path):
    node, key = _slot(c, path)
    return node[key]


def set_path(c, path, value):
    node, key = _slot(c, path)
    node[key] = value


def check(c):
    """Refuse a model this builder does not reproduce exactly."""
    s = c["simulation"]
    assert s.get("formulation", "index3") == "index3" and s.get("stabilization", "none") == "none", s
    assert all(j["type"] == "revolute" for j in c["joints"]), "revolute joints only"
    assert all(f["type"] == "spring" for f in c["forces"]), "springs only"
    assert not any(b.get("initial_velocity") for b in c["bodies"]), "starts from rest"
    for o in c["objectives"]:
        assert o["integrand"] in ("point_deviation_sq", "point_velocity_sq", "point_acceleration_sq"), o
        assert not o.get("terminal") and o.get("weight", 1.0) == 1.0, o


def assemble(c):
    """Body-frame poses {name: (x, y, θ)} satisfying the revolute joints, the
    ``independent`` coordinates held (Newton, analytic Jacobian; parmbs's assembly)."""
    bodies = c["bodies"]
    idx = {b["name"]: i for i, b in enumerate(bodies)}
    q = np.array([[b["initial"]["x"], b["initial"]["y"], b["initial"]["angle"]] for b in bodies], float).ravel()
    held = {3 * idx[b["name"]] + "xya".index(k[0]) for b in bodies for k in b.get("independent", [])}
    free = [i for i in range(len(q)) if i not in held]
    ground = c["ground"]["points"]

    def point(ref, q):
        """(position, ∂position/∂q) of 'body.P' or 'ground.P'."""
        body, name = ref.split(".")
        D = np.zeros((2, len(q)))
        if body == "ground":
            return np.array(ground[name], float), D
        i = idx[body]
        th = q[3 * i + 2]
        s = np.array(bodies[i]["points"][name], float)
        D[:, 3 * i:3 * i + 2] = np.eye(2)
        D[:, 3 * i + 2] = rot(th + np.pi / 2) @ s
        return q[3 * i:3 * i + 2] + rot(th) @ s, D

    for _ in range(50):
        rows = [(point(j["a"], q), point(j["b"], q)) for j in c["joints"]]
        r = np.concatenate([a[0] - b[0] for a, b in rows])
        if np.max(np.abs(r)) < 1e-15:
            break
        Jac = np.vstack([a[1] - b[1] for a, b in rows])[:, free]
        q[free] -= np.linalg.solve(Jac, r)
    else:
        raise SystemExit(f"{CONFIG}: initial assembly did not converge")
    return {b["name"]: q[3 * i:3 * i + 3] for i, b in enumerate(bodies)}


def build(c, scheme):
    """(mbs, simulation settings, sensors per objective) of the config's model."""
    sim = c["simulation"]
    SC = exu.SystemContainer()
    mbs = SC.AddSystem()
    ground = mbs.AddObject(ii.ObjectGround())
    markers, bodies = {}, {}
    for name, xy in c["ground"]["points"].items():
        markers[f"ground.{name}"] = mbs.AddMarker(ii.MarkerBodyPosition(bodyNumber=ground, localPosition=[*xy, 0.0]))
    g = c["model"]["gravity"]
    pose = assemble(c)
    com = {}
    for b in c["bodies"]:
        x, y, th = pose[b["name"]]
        cg = np.array(b["com"], float)
        com[b["name"]] = cg
        xg = np.array([x, y]) + rot(th) @ cg            # the node at the centre of mass (module docstring)
        node = mbs.AddNode(ii.NodeRigidBody2D(referenceCoordinates=[0.0, 0.0, 0.0], initialCoordinates=[*xg, th]))
        body = bodies[b["name"]] = mbs.AddObject(ii.ObjectRigidBody2D(mass=b["mass"], inertia=b["inertia"],
                                                                      nodeNumber=node))
        for pn, s in b["points"].items():
            markers[f"{b['name']}.{pn}"] = mbs.AddMarker(ii.MarkerBodyPosition(
                bodyNumber=body, localPosition=[*(np.array(s, float) - cg), 0.0]))
        mbs.AddLoad(ii.LoadMassProportional(markerNumber=mbs.AddMarker(ii.MarkerBodyMass(bodyNumber=body)),
                                            loadVector=[*g, 0.0]))
    for j in c["joints"]:
        mbs.AddObject(ii.ObjectJointRevolute2D(markerNumbers=[markers[j["a"]], markers[j["b"]]]))
    for f in c["forces"]:
        mbs.AddObject(ii.ObjectConnectorSpringDamper(markerNumbers=[markers[f["a"]], markers[f["b"]]],
                                                     referenceLength=f["length"], stiffness=f["stiffness"],
                                                     damping=f.get("damping", 0.0)))
    OV = exu.OutputVariableType
    kind = {"point_deviation_sq": OV.Position, "point_velocity_sq": OV.Velocity,
            "point_acceleration_sq": OV.Acceleration}
    sensors = []
    for o in c["objectives"]:
        bname, pn = o["point"].split(".")
        local = np.array(next(b for b in c["bodies"] if b["name"] == bname)["points"][pn], float) - com[bname]
        sensors.append(mbs.AddSensor(ii.SensorBody(bodyNumber=bodies[bname], localPosition=[*local, 0.0],
                                                   storeInternal=True, writeToFile=False,
                                                   outputVariableType=kind[o["integrand"]])))
    mbs.Assemble()

    s = exu.SimulationSettings()
    h, T = sim["dt"], sim["t_end"]
    ti = s.timeIntegration
    ti.numberOfSteps, ti.endTime, ti.verboseMode = int(round(T / h)), T, 0
    ti.adaptiveStep = False
    ti.newton.relativeTolerance = sim["newton"]["rtol"]
    ti.newton.absoluteTolerance = sim["newton"]["atol"]
    ga = ti.generalizedAlpha
    ga.useIndex2Constraints = False
    ga.computeInitialAccelerations = True
    if scheme == "trapezoidal":
        ga.useNewmark, ga.newmarkBeta, ga.newmarkGamma = True, 0.25, 0.5
    else:
        ga.useNewmark, ga.spectralRadius = False, sim["rho_inf"]
    s.show.statistics = s.show.computationTime = False
    s.solution.file.write = False
    s.solution.sensors.writePeriod = h
    return mbs, s, sensors


def psi(c, mbs, sensors):
    """ψ of every objective from the stored sensor data: trapezoidal sum over the steps."""
    h, out = c["simulation"]["dt"], []
    for o, sn in zip(c["objectives"], sensors):
        d = mbs.GetSensorStoredData(sn)
        n = int(round(c["simulation"]["t_end"] / h))
        assert d.shape[0] == n + 1 and abs(d[-1, 0] - c["simulation"]["t_end"]) < 1e-9, d.shape
        x = d[:, 1:3] - (np.array(o["reference"], float) if "reference" in o else 0.0)
        w = np.full(n + 1, h)
        w[0] = w[-1] = h / 2
        out.append(float(w @ np.sum(x * x, axis=1)))
    return np.array(out)


def run_exudyn(c, scheme):
    mbs, s, sensors = build(c, scheme)
    mbs.SolveDynamic(s)
    return psi(c, mbs, sensors)


def exudyn_side(c, scheme, repeat, fd_step):
    import copy
    tb, (mbs, s, sensors) = cpu_min(lambda: build(c, scheme), repeat)
    ts, _ = cpu_min(lambda: mbs.SolveDynamic(s), repeat)
    psi0 = psi(c, mbs, sensors)
    paths = [d["path"] for d in c["design"]]

    def fd():
        G = np.zeros((len(c["objectives"]), len(paths)))
        for j, path in enumerate(paths):
            p = get_path(c, path)
            d = fd_step * max(abs(p), 1.0)
            vals = []
            for sign in (1, -1):
                cc = copy.deepcopy(c)
                set_path(cc, path, p + sign * d)
                vals.append(run_exudyn(cc, scheme))
            G[:, j] = (vals[0] - vals[1]) / (2 * d)
        return G

    tg, G = cpu_min(fd, repeat)
    return dict(build=tb, solve=ts, psi=psi0, fd=tg, grad=G)


def parmbs_side(scheme, repeat, ab):
    from parmbs.config import load_config
    from parmbs.sensitivity.problem import Problem
    sets = ["simulation.progress=false"] + (["simulation.integrator=trapezoidal"] if scheme == "trapezoidal" else [])
    out = {}
    for key, extra in (("compiled", []), ("ab", ["simulation.genalpha_form=arnold-bruls"])):
        if key == "ab" and (scheme != "genalpha" or not ab):
            continue
        pr = Problem(load_config(str(CONFIG), sets + extra))
        note = pr.stepper.compiled_note
        if key == "compiled" and pr.stepper.compiled is None:
            raise SystemExit(f"{CONFIG}: parmbs's compiled path is not used for this model")
        x0 = pr.stepper.initial(pr.t0, pr.sys.p)

        def bare():
            x = x0
            for k in range(pr.nsteps):
                x, _ = pr.stepper.step(k, pr.t0 + k * pr.h, x, pr.sys.p)

        rep = repeat if key == "compiled" else 1
        tb = cpu_min(bare, rep)[0] if key == "compiled" else np.nan
        tf, _ = cpu_min(pr.forward, rep)
        ta, g = cpu_min(pr.adjoint, rep)
        v = pr.objective_values()
        names = [o.name for o in pr.objectives]
        out[key] = dict(bare=tb, fwd=tf, adj=ta, psi=np.array([v[k] for k in names]),
                        grad=np.array([g[k] for k in names]), N=pr.nsteps, note=note)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scheme", choices=("genalpha", "trapezoidal"), default="genalpha",
                    help="genalpha: as shipped (ρ∞ from the config); trapezoidal: both sides β = ¼, γ = ½")
    ap.add_argument("--repeat", type=int, default=2, help="CPU times: min of this many")
    ap.add_argument("--fd-step", type=float, default=1e-5, help="central FD relative step")
    ap.add_argument("--no-ab", action="store_true", help="skip parmbs's Arnold–Brüls (numpy) run")
    args = ap.parse_args()
    c = tomllib.loads(CONFIG.read_text())
    check(c)
    c["simulation"].setdefault("rho_inf", 0.9)
    ex = exudyn_side(c, args.scheme, args.repeat, args.fd_step)
    pm = parmbs_side(args.scheme, args.repeat, not args.no_ab)
    pc = pm["compiled"]
    N = pc["N"]
    print(f"five-bar ({CONFIG.name}), scheme {args.scheme}, dt {c['simulation']['dt']:g}, {N} steps; "
          f"Exudyn {exu.__version__}; CPU s, min of {args.repeat}")
    if pc["note"]:
        print(pc["note"])
    ex_sps, pm_sps = N / ex["solve"], N / pc["fwd"]
    grad = pc["fwd"] + pc["adj"]
    print("| | forward steps/s | forward s | gradient s (3 objectives × 5 variables) | adjoint ÷ forward |")
    print("|---|---|---|---|---|")
    print(f"| Exudyn (SolveDynamic; build + Assemble {1e3 * ex['build']:.1f} ms) | {ex_sps:.0f} | {ex['solve']:.3f} "
          f"| {ex['fd']:.3f} (central FD, 10 runs) | — |")
    print(f"| parmbs compiled (Problem.forward; bare step loop {N / pc['bare']:.0f} steps/s) | {pm_sps:.0f} "
          f"| {pc['fwd']:.3f} | {grad:.3f} (forward + adjoint) | {pc['adj'] / pc['fwd']:.2f} |")
    print(f"ratios: parmbs ÷ Exudyn forward steps/s {pm_sps / ex_sps:.2f} (goal ≥ 0.5); "
          f"parmbs gradient ÷ Exudyn FD gradient {grad / ex['fd']:.2f} (goal ≤ 0.5)")
    rel = lambda a, b: np.abs(a - b) / np.abs(b)
    fmt = lambda v: ", ".join(f"{x:.1e}" for x in v)
    print(f"ψ Exudyn {fmt(ex['psi'])} ... relative to parmbs (shipped form): {fmt(rel(ex['psi'], pc['psi']))}")
    if "ab" in pm:
        print(f"ψ relative to parmbs Arnold–Brüls (numpy, Exudyn's form): {fmt(rel(ex['psi'], pm['ab']['psi']))}")
    gmax = lambda G, R: fmt(np.max(np.abs(G - R), axis=1) / np.max(np.abs(R), axis=1))
    print(f"Exudyn FD gradient vs parmbs adjoint (max per objective, rel. to its largest entry): "
          f"shipped form {gmax(ex['grad'], pc['grad'])}"
          + (f"; Arnold–Brüls {gmax(ex['grad'], pm['ab']['grad'])}" if "ab" in pm else ""))


if __name__ == "__main__":
    main()
