"""Objective integrands for floating-frame continua, used through ``integrand = "python"``:

    callable = "parmbs.flexible.continuum_objectives:strain_energy"

g = Σ_e U_e = Σ_e ½ x_e^s E0 u_eᵀ K̂ u_e, the strain energy of every continuum element
(and of every hexahedral solid element, solid.py)
(of a reduced continuum: ½ ηᵀ K̂ η, K̂ = Vᵀ K_ff V, modal_components.py)
(seed 003 Eq. 81 measures ∫ qᵀKq dt without the ½: ∫ g dt is half of it).
∂g/∂u = the elastic force K u (``ContinuumElastic.r`` is the gradient of its energy);
∂g/∂p is element-local (``ContinuumElastic.energy_partials``: analytic in x, E0, s, a
complex step of the shared K̂ for the geometry), so the density field gets one entry
per element and no dense block appears.  A complex state (``--method cs``) takes the
complex-step path through the element energies.
"""
import weakref

import numpy as np

from parmbs.model.assembly import scatter_add   # absolute: also loadable as a file by load_callable
from parmbs.model.component import cs_jacobian
from parmbs.flexible.continuum import ContinuumElastic
from parmbs.flexible.modal_components import ReducedElastic
from parmbs.flexible.solid import SolidElastic


def strain_energy(t, q, v, a, lam, p, model):
    reads, elastic, at = _reads(model)
    qe = model.extend(q)
    value, gq, gp = 0.0, np.zeros(model.n + 3, dtype=np.result_type(q, p)), np.zeros(len(reads))
    for g, pos in zip(elastic, at):
        ql, pl = qe[g.qidx], p[g.pidx]
        if np.iscomplexobj(ql) or np.iscomplexobj(pl):     # --method cs: complex state
            value = value + np.sum(g.energy(t, ql, None, pl))
            gq = gq + scatter_add(model.n + 3, g.qidx, g.r(t, ql, None, None, pl))
            gp = gp + scatter_add(len(reads), pos, np.real(cs_jacobian(g.energy, [t, ql.real, None, pl.real], 3)))
            continue
        U, dq, dp = g.energy_partials(ql, pl)
        value = value + np.sum(U)
        gq = gq + scatter_add(model.n + 3, g.qidx, dq)
        gp = gp + scatter_add(len(reads), pos, dp)
    return value, {"q": np.real(gq[:model.n]), "p": gp}


_READS = weakref.WeakKeyDictionary()


def _reads(model):
    """(the entries of p the elastic components read, sorted unique; those components;
    each one's ``pidx`` as positions in the former), once per model.  ∂g/∂p is returned
    over these entries only (the ``reads`` of sensitivity/objectives.py ``UserTerm``):
    a reduced body's energy reads its K̂ block, not its densities, so no per-step
    vector of len(p) — and the densities leave the sweeps (design.py ``read_by``).
    Summed by the same bincount per entry in the same order as a len(p) scatter."""
    hit = _READS.get(model)
    if hit is None:
        elastic = [g for g in model.forces if isinstance(g, (ContinuumElastic, ReducedElastic, SolidElastic))]
        reads = np.unique(np.concatenate([np.asarray(g.pidx, np.int64).ravel() for g in elastic])) \
            if elastic else np.zeros(0, np.int64)
        hit = _READS[model] = (reads, elastic, [np.searchsorted(reads, g.pidx) for g in elastic])
    return hit


strain_energy.reads = lambda model: _reads(model)[0]
