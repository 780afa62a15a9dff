"""The five-bar built in Python: the model of configs/fivebar.toml, call by call.

IFToMM five-bar sensitivity benchmark (López Varela, Dopico, Luaces 2025,
doi:10.1016/j.compstruc.2024.107642; Zhu 2014): four bars hanging from the ground
points A and B, two springs to B, gravity along −y.  The geometry is computed here
from the joint positions instead of typed in; ``build()`` gives a config equal to
``load_config("configs/fivebar.toml")`` (tests/test_api.py checks the resolved dicts
and the numbers bit for bit).

Run:  python examples/fivebar_api.py [--t-end 1.0] [--toml fivebar.toml]
      (--toml writes the model as TOML: ``parmbs gradient fivebar.toml`` runs it)
"""
import argparse
import math

import parmbs  # noqa: F401  first, before numpy: it pins numpy's SIMD math (parmbs/_determinism.py)
import numpy as np

from parmbs.api import Model, gradient

#: the joints of the initial configuration (m): A — 1 — 2 — 3 — B, ground bar A–B
A, P1, P2, P3, B = (0.0, 0.0), (-1.0, -1.0), (0.5, -2.0), (2.0, -1.0), (1.0, 0.0)


def bar(m, name, start, end, mass, tip, independent=()):
    """A uniform slender bar from ``start`` to ``end``: frame at its first joint, local
    x along the bar, I_G = m L²/12 (configs/fivebar.toml's conventions)."""
    dx, dy = end[0] - start[0], end[1] - start[1]
    length = math.hypot(dx, dy)
    m.body(name, mass=mass, inertia=mass * (dx * dx + dy * dy) / 12,      # L² exact, not hypot()²
           com=(length / 2, 0.0),
           points={"O": (0.0, 0.0), tip: (length, 0.0)},
           initial={"x": start[0], "y": start[1], "angle": math.atan2(dy, dx)},
           **({"independent": list(independent)} if independent else {}))


def build(t_end=5.0):
    """The five-bar ``Model`` over [0, t_end]."""
    m = Model("fivebar", gravity=(0.0, -9.81))
    m.ground(A=A, B=B)
    bar(m, "A1", A, P1, 1.0, "P1", ["angle"])
    bar(m, "B12", P1, P2, 1.5, "P2", ["angle"])
    bar(m, "B23", P2, P3, 1.5, "P3")
    bar(m, "B3B", P3, B, 1.0, "PB")
    for name, a, b in (("JA", "ground.A", "A1.O"), ("J1", "A1.P1", "B12.O"), ("J2", "B12.P2", "B23.O"),
                       ("J3", "B23.P3", "B3B.O"), ("JB", "B3B.PB", "ground.B")):
        m.joint(name, "revolute", a=a, b=b)
    # springs unstretched at t = 0: natural length = the initial distance to B
    for name, a, p in (("S1", "A1.P1", P1), ("S2", "B12.P2", P2)):
        m.force(name, "spring", a=a, b="ground.B", stiffness=100.0, damping=0.0,
                length=math.hypot(p[0] - B[0], p[1] - B[1]))
    m.simulation(t_end=t_end, dt=1e-3, formulation="index3", integrator="genalpha", rho_inf=0.9,
                 newton={"rtol": 1e-12, "atol": 1e-12, "max_it": 25},
                 petsc_options={"ksp_type": "preonly", "pc_type": "lu"})
    for name, path in (("Ls1", "forces.S1.length"), ("Ls2", "forces.S2.length"), ("m_A1", "bodies.A1.mass"),
                       ("xG_A1", "bodies.A1.com.x"), ("L_A1", "bodies.A1.points.P1.x")):
        m.design(name, path)
    m.objective("psi1", integrand="point_deviation_sq", point="B12.P2", reference=P2)   # ∫ |r₂ − r₂₀|² dt
    m.objective("psi2", integrand="point_velocity_sq", point="B12.P2")                  # ∫ |ṙ₂|² dt
    m.objective("psi3", integrand="point_acceleration_sq", point="B12.P2")              # ∫ |r̈₂|² dt
    m.sensitivity(method="adjoint")
    m.checkpoint(schedule="all", file="fivebar.h5")
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--t-end", type=float, default=1.0)
    ap.add_argument("--toml", help="also write the model as TOML to this file")
    a = ap.parse_args()
    m = build(a.t_end)
    m.simulation(progress=False)
    if a.toml:
        print(f"wrote {m.to_toml(a.toml)}")
    g = gradient(m)                                  # forward run + one adjoint sweep
    print(f"{m!r}: {len(g.problem.traj.t) - 1} steps")
    print("design:", ", ".join(f"{n} = {v:g}" for n, v in zip(g.design, g.rho)))
    for o, psi in g.values.items():
        print(f"{o} = {psi:.10e}   |grad| = {np.linalg.norm(g.gradients[o]):.6e}")
        for n, d in zip(g.design, g.gradients[o]):
            print(f"  d{o}/d{n:<6} = {d: .10e}")


if __name__ == "__main__":
    main()
