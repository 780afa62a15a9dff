"""Index-3 steppers on fast-spinning bodies (measured in one run; README "Spatial").

A wheel (m = 10 kg, J = diag(0.4, 0.8, 0.4)) on a revolute axle about ground y spins
freely at ω (no gravity): the exact motion keeps ω and the energy ½ J_yy ω².  For each
ω this prints, at dt = 1e-3 over 3 s,

* trapezoidal: the time at which Newton fails (its alternating mode grows at a rate ∝ ω),
  or the largest relative energy error if it survives;
* genalpha (ρ∞ = 0.8, 0.9): the relative energy lost (first order in dt for
  Euler-parameter bodies: the α_m-interpolation of M(q) a);
* the planar pendulum of configs/pendulum.toml spinning at ω without gravity under
  the trapezoidal rule, for comparison (the same instability on a planar revolute).

    python benchmarks/spatial_spin.py [--quick]
"""
import sys
import tempfile

import parmbs  # noqa: F401  (before numpy: parmbs/_determinism.py pins numpy's CPU features for same-bytes results)
import numpy as np

from parmbs.config import load_config
from parmbs.model.evaluation import StateEval
from parmbs.sensitivity.problem import Problem

WHEEL = """
[model]
name = "wheel"
[spatial]
gravity = [0.0, 0.0, 0.0]
[spatial.ground]
points = {{ O = [0.0, 0.0, 0.0] }}
[[spatial.bodies]]
name = "w"
mass = 10.0
inertia = [0.4, 0.8, 0.4]
initial_velocity = {{ angular_velocity = [0.0, {w}, 0.0] }}
[[spatial.joints]]
type = "revolute"
name = "axle"
a = "ground.O"
b = "w.com"
axis_a = "ground.y"
axis_b = "w.y"
[simulation]
t_end = {T}
dt = 1e-3
progress = false
"""


def run(cfg):
    pr = Problem(cfg)
    try:
        tr = pr.forward()
    except Exception as e:                       # StepError: Newton failed
        msg = str(e)
        t = msg.split("t = ")[1].split(")")[0] if "t = " in msg else "?"
        return f"Newton fails at t = {t} s"
    E = np.array([StateEval(pr.sys, tr.t[k], *tr.x(k), pr.sys.p).energy() for k in range(0, tr.steps + 1, 10)])
    return f"energy change {(E[-1] - E[0]) / E[0]:+.2%} (max |ΔE|/E0 {np.max(np.abs(E - E[0])) / E[0]:.1e})"


def main():
    quick = "--quick" in sys.argv
    T = 1.0 if quick else 3.0
    with tempfile.TemporaryDirectory() as d:
        f = f"{d}/wheel.toml"
        for w in ((30.0,) if quick else (10.0, 30.0, 60.0)):
            with open(f, "w") as fh:
                fh.write(WHEEL.format(w=w, T=T))
            print(f"wheel ω = {w:g} rad/s, dt = 1e-3, {T:g} s:")
            print(f"  trapezoidal        {run(load_config(f))}")
            for rho in (0.8, 0.9):
                cfg = load_config(f, ["simulation.integrator=genalpha", f"simulation.rho_inf={rho}"])
                print(f"  genalpha ρ∞ = {rho}  {run(cfg)}")
            cfg = load_config("configs/pendulum.toml", ["model.gravity=[0.0, 0.0]", f"simulation.t_end={T}",
                                                        f"bodies.bar.initial_velocity={{angle = {w}}}",
                                                        "simulation.progress=false"])
            print(f"  planar pendulum, trapezoidal: {run(cfg)}")


if __name__ == "__main__":
    main()
