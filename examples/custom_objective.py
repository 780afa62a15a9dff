"""A custom objective written in Python, with its exact gradient.

ψ = ∫ ½ I_B12 ω_B12² dt — the rotational kinetic energy of the five-bar's coupler
B12 integrated over time — is no built-in integrand.  ``rotational_energy`` below
computes it at one time step and returns its partial derivatives; parmbs then
takes the adjoint and direct gradients of the discrete ψ through the whole
simulation (sensitivity/objectives.py, UserTerm: partials by q, v, a, lam and the
model parameters p; missing keys are zero).  ``m.objective(..., integrand=fn)``
stores it as ``integrand = "python"``, ``callable = "custom_objective:rotational_energy"``:
with ``--toml`` the model is written as TOML that ``parmbs gradient`` runs, finding
this file beside the TOML or on ``sys.path`` (PYTHONPATH).

The design adds B12's inertia, so ∂g/∂p is exercised too.  ``--verify`` runs
``parmbs.api.verify`` (adjoint = direct within the measured round-off bound,
complex step / FD, Taylor test): a wrong partial derivative fails there.

Run:  python examples/custom_objective.py [--t-end 0.5] [--verify] [--toml m.toml]
"""
import argparse

import parmbs  # noqa: F401  first, before numpy: it pins numpy's SIMD math (parmbs/_determinism.py)
import numpy as np

from parmbs.api import gradient, verify
from fivebar_api import build


def rotational_energy(t, q, v, a, lam, p, model):
    """g = ½ I ω² of body B12 and its partials (value, {"v": ∂g/∂v, "p": ∂g/∂p}).

    ``model.body_index`` gives B12's block (x, y, θ) in q, v; ``model.params.index``
    p's entry of a config path.  Written with numpy on the arguments, so it also runs
    in complex arithmetic (complex-step verification)."""
    i = 3 * model.body_index["B12"] + 2                 # θ of B12
    k = model.params.index["bodies.B12.inertia"]
    inertia, omega = p[k], v[i]
    dv = np.zeros(len(v), dtype=np.result_type(v, p))
    dv[i] = inertia * omega
    dp = np.zeros(len(p), dtype=np.result_type(v, p))
    dp[k] = 0.5 * omega * omega
    return 0.5 * inertia * omega * omega, {"v": dv, "p": dp}


def model(t_end):
    """The five-bar with the custom objective and B12's inertia as a design variable."""
    m = build(t_end)
    m.simulation(progress=False)
    m.design("I_B12", "bodies.B12.inertia")
    m.objective("energy_B12", integrand=rotational_energy)
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--t-end", type=float, default=0.5)
    ap.add_argument("--verify", action="store_true")
    ap.add_argument("--toml", help="also write the model as TOML to this file")
    a = ap.parse_args()
    m = model(a.t_end)
    if a.toml:
        print(f"wrote {m.to_toml(a.toml)}")
    adj, dirg = gradient(m, "adjoint"), gradient(m, "direct")
    o = "energy_B12"
    print(f"callable = {m.data['objectives'][-1]['callable']!r}")
    print(f"{o} = {adj.values[o]!r}")
    for n, ga, gd in zip(adj.design, adj.gradients[o], dirg.gradients[o]):
        print(f"  d{o}/d{n:<6} adjoint {ga!r:<24} direct {gd!r}")
    if a.verify:
        res = verify(m)
        for c in res.checks:
            if c.objective == o:
                ref = f"cs {c.cs:.10e}" if c.cs is not None else f"fd {c.fd:.10e}"
                print(f"  verify {c.name:<6} {c.status:<14} {ref}  |adj-dir| {abs(c.adjoint - c.direct):.1e} "
                      f"<= {c.bound_ad:.1e}")
        print("taylor order:", ", ".join(f"{k} {v:.3f}" if v is not None else f"{k} n/a"
                                         for k, v in res.taylor_order.items()))
        print("verify:", "OK" if res.ok else "FAILED " + "; ".join(res.failures))


if __name__ == "__main__":
    main()
