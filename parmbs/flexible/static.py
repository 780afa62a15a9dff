"""Static equilibrium of a model (verification and benchmarks; small dense models).

Solves r(q, v = 0, a = 0) + Φ_qᵀλ = 0, Φ(q) = 0 by Newton from the assembled
initial configuration, with the load applied in ``steps`` equal increments of the
non-inertial forces' parameters being unnecessary: the load factor multiplies the
whole residual of the applied forces (gravity, point forces), while elastic forces
stay whole.
"""
import numpy as np

from ..model.evaluation import StateEval


def static_equilibrium(system, q0, p=None, steps=1, tol=1e-12, max_it=50, loaded=None):
    """(q, λ) at static equilibrium.  ``loaded(g)`` says whether force group g is a
    load to ramp (default: everything but inertia and elastic elements)."""
    p = system.p if p is None else p
    n, m = system.n, system.m
    if loaded is None:
        def loaded(g):
            return not g.inertial and "Elastic" not in type(g).__name__
    q, lam = np.array(q0, float), np.zeros(m)
    z = np.zeros(n)
    for s in range(1, steps + 1):
        fac = s / steps
        for it in range(max_it):
            ev = StateEval(system, 0.0, q, z, z, lam, p)
            R = np.zeros(n)
            K = np.zeros((n, n))
            for (g, qg, vg, ag, pg), B in zip(ev.F, ev.force_blocks(1.0, 0.0, 0.0)):
                if g.inertial:
                    continue
                w = fac if loaded(g) else 1.0
                rows = ev._rows(g)
                vals = w * g.r(0.0, qg, vg, ag, pg)
                keep = rows >= 0
                np.add.at(R, rows[keep], vals[keep])
                rr = np.broadcast_to(rows[:, :, None], B.shape)
                cc = np.broadcast_to(rows[:, None, :], B.shape)
                k2 = (rr >= 0) & (cc >= 0)
                np.add.at(K, (rr[k2], cc[k2]), w * B[k2])
            G = ev.G().dense()
            K += ev.K(with_hessian=True).dense() - ev.K(with_hessian=False).dense()
            R += G.T @ lam
            F = np.r_[R, ev.phi()]
            J = np.block([[K, G.T], [G, np.zeros((m, m))]])
            dz = np.linalg.solve(J, -F)
            q += dz[:n]
            lam += dz[n:]
            if np.max(np.abs(dz[:n])) < tol * (1 + np.max(np.abs(q))):
                break
        else:
            raise RuntimeError(f"static equilibrium: Newton did not converge at load step {s}")
    return q, lam
