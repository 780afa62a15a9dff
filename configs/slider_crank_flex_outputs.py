"""Outputs of the flexible slider-crank (configs/slider-crank-flex.toml; seed 001 §3.2)
as ``integrand = "python"`` objectives: each returns g(t, state) and its partials, and
the objective is ∫₀^T g dt (trapezoidal, part of the discrete scheme).

* theta_C: crank frame angle θ_C (the crank is clamped to its frame at O);
* x_S: slider x;
* xA_f, yA_f, thA_f: elastic coordinates (u, v, φ) of the crank's node A (its tip) in
  the crank frame — the paper's x̄_C,f, ȳ_C,f, θ̄_C,f;
* ks_stress: KS aggregate (ρ_KS = 2 1/MPa) of |σ| at the upper and lower fibres of
  both ends of every crank and rod element (``parmbs.flexible.ffr_beams.ks_stress``);
* ks_crank_upper, ks_crank_lower, ks_rod_upper, ks_rod_lower: the same aggregate over
  one beam's one fibre (the paper plots crank and rod, upper and lower fibre apart).
"""
import numpy as np

from parmbs.flexible.ffr_beams import ks_stress as _ks

RHO_KS = 2.0


def _coordinate(i, q):
    d = np.zeros(len(q))
    d[i] = 1.0
    return q[i], {"q": d}


def theta_C(t, q, v, a, lam, p, model):
    return _coordinate(model.ffr.frame("crank")[2], q)


def x_S(t, q, v, a, lam, p, model):
    return _coordinate(3 * model.body_index["slider"], q)


def _node_A(comp, q, model):
    return _coordinate(model.ffr.coord("crank", model.ffr.beams["crank"].nel, comp), q)


def xA_f(t, q, v, a, lam, p, model):
    return _node_A("u", q, model)


def yA_f(t, q, v, a, lam, p, model):
    return _node_A("v", q, model)


def thA_f(t, q, v, a, lam, p, model):
    return _node_A("phi", q, model)


def ks_stress(t, q, v, a, lam, p, model):
    return _ks(model, q, p, RHO_KS)


def _ks_part(beam, fibre):
    def g(t, q, v, a, lam, p, model):
        return _ks(model, q, p, RHO_KS, names=[beam], fibre=fibre)
    g.__name__ = f"ks_{beam}_{fibre}"
    return g


ks_crank_upper = _ks_part("crank", "upper")
ks_crank_lower = _ks_part("crank", "lower")
ks_rod_upper = _ks_part("rod", "upper")
ks_rod_lower = _ks_part("rod", "lower")
