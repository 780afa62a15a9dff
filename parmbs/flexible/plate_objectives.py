"""Objective integrands for plates, used through ``integrand = "python"``:

    callable = "parmbs.flexible.plate_objectives:strain_energy"

g = Σ_e U_e(q, p), the SVK strain energy of every plate element (the nonlinear
counterpart of seed 003's compliance qᵀKq, Eq. 81, without its missing ½ — here
U = ½∫E:C:E dV, so ∫ g dt is half the seed's measure in the linear limit).
∂g/∂q = the elastic force (r of ``PlateElastic`` is the gradient of its energy);
∂g/∂p is the complex-step derivative of the element energies, element-local, so the
density field gets one entry per element.
"""
import numpy as np

from parmbs.model.assembly import scatter_add   # absolute: also loadable as a file by load_callable
from parmbs.model.component import cs_jacobian
from parmbs.flexible.plate import PlateElastic


def strain_energy(t, q, v, a, lam, p, model):
    qe = model.extend(q)
    value, gq, gp = 0.0, np.zeros(model.n + 3, dtype=np.result_type(q, p)), np.zeros(len(p))
    for g in model.forces:
        if not isinstance(g, PlateElastic):
            continue
        ql, pl = qe[g.qidx], p[g.pidx]
        value = value + np.sum(g.energy(t, ql, None, pl))
        gq = gq + scatter_add(model.n + 3, g.qidx, g.r(t, ql, None, None, pl))
        gp = gp + scatter_add(len(p), g.pidx, np.real(cs_jacobian(g.energy, [t, ql.real, None, pl.real], 3)))
    return value, {"q": np.real(gq[:model.n]), "p": gp}
