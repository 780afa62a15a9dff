"""The Method of Moving Asymptotes (Svanberg) over distributed PETSc Vecs.

Which implementation is which
-----------------------------
* **this module** — the production MMA of ``parmbs optimize`` (``method = "mma"``):
  every n-vector (design x, its bounds, asymptotes, gradients) is the local part of a
  distributed PETSc Vec; the m constraint quantities (values, multipliers λ, slacks y,
  s, the (m+1)×(m+1) Newton system) are small numpy arrays replicated on every rank.
  Every sum or maximum over the n variables is one ``MPI_Allreduce`` that all ranks
  reach, so it runs unchanged under ``mpirun`` at 10⁵⁺ variables.
* **mmapy** (pip package, ``mmapy.mmasub``/``mmapy.subsolv``; Deetman's Python port of
  Svanberg's MATLAB ``mmasub.m``/``subsolv.m``) — the serial reference.  This module
  follows it line by line (same starting point, same Newton steps, same step-length
  rule and back-tracking) so the iterates agree to rounding; ``tests/test_mma.py``
  checks the same iterates to 1e-8 on small problems.

The problem (Svanberg 2007, "MMA and GCMMA – two methods for nonlinear optimization",
the standard form the notes start from; the section names below are the notes', the
formulas are written out here and follow mmapy's code line by line)::

    min  f₀(x) + a₀ z + Σᵢ (cᵢ yᵢ + ½ dᵢ yᵢ²)
    s.t. fᵢ(x) − aᵢ z − yᵢ ≤ 0,   xmin ≤ x ≤ xmax,   y ≥ 0, z ≥ 0            (i = 1…m)

With a₀ = 1, aᵢ = 0 and large cᵢ this is  min f₀  s.t.  fᵢ ≤ 0  (y > 0 only if the
constraints cannot be met).  At the iterate x⁽ᵏ⁾ each fᵢ is replaced by its convex
separable MMA approximation (Svanberg 1987, Int. J. Numer. Meth. Eng. 24:359–373; the
2007 notes' "MMA" section with the 1.001/0.001 split and the raa0 term)::

    f̃ᵢ(x) = Σⱼ [ pᵢⱼ/(uⱼ − xⱼ) + qᵢⱼ/(xⱼ − lⱼ) ] + rᵢ
    pᵢⱼ = (uⱼ − xⱼ⁽ᵏ⁾)² (1.001 (∂fᵢ/∂xⱼ)⁺ + 0.001 (∂fᵢ/∂xⱼ)⁻ + raa0/(xmaxⱼ − xminⱼ))
    qᵢⱼ = (xⱼ⁽ᵏ⁾ − lⱼ)² (0.001 (∂fᵢ/∂xⱼ)⁺ + 1.001 (∂fᵢ/∂xⱼ)⁻ + raa0/(xmaxⱼ − xminⱼ))

with the moving asymptotes l, u (the notes' asymptote update rules): l = x − asyinit·(xmax − xmin) in the first
two iterations, afterwards ``lⱼ = xⱼ − γⱼ (xⱼ^{k−1} − lⱼ^{k−1})`` with γⱼ = asyincr
(1.2) where the last two steps of xⱼ have the same sign, asydecr (0.7) where they
oscillate, 1 otherwise, clipped to asymin…asymax times the range (u alike).  Move
limits α ≤ x ≤ β: α = max(xmin, l + albefa (x − l), x − move (xmax − xmin)), β alike.

The raa0 term is not in the 1987 approximation (pᵢⱼ = (uⱼ − xⱼ)² (∂fᵢ/∂xⱼ)⁺ there); the
2007 notes add it (raa0 = 10⁻⁵) so that every f̃ᵢ is strictly convex, for problems scaled
as the notes ask (values and gradients of order one).  It is an absolute curvature:
at the expansion point f̃ᵢ'' = 2 (1.002 |∂fᵢ/∂xⱼ| + 2 raa0/(xmaxⱼ − xminⱼ)) / (uⱼ − xⱼ)
(symmetric asymptotes).  A function that is an integral or a mean over n elements, scaled
to O(1) (ψ/|ψ⁰|, the volume fraction), has |∂f/∂xⱼ| ~ 1/n; at n = 10⁵ that is 10⁻⁶…10⁻⁵,
so the raa0 term, not the gradient, sets the curvature and every step is shortened by
(Σᵢ λᵢ|∂fᵢ/∂xⱼ|) / (Σᵢ λᵢ|∂fᵢ/∂xⱼ| + 2 raa0 Σᵢ λᵢ) (λ₀ = 1) — a damping that grows with
the mesh (measured on the 10⁵-density crank: the step 0.022 with 10⁻⁵, 0.072 with 10⁻⁷,
0.074 with 0; benchmarks/README.md).  The subproblem's last barrier ε = epsimin (10⁻⁷)
is absolute too: a variable whose Lagrangian pushes it to a bound or move limit stops
where ξ = ε/(x − α) balances ∂L/∂x, i.e. ε/|∂L/∂xⱼ| short of it — 0.02 at 10⁵ densities
(the crank's void densities sat at 0.03, not 0.01).  Both are therefore parameters
(``optimize.raa0``, ``optimize.epsimin``): Svanberg's values by default, about the same
fraction of the typical gradient component otherwise (tests/test_mma.py: scaled with
the functions, the iterates are scale-invariant).

The convex subproblem is solved by the primal-dual interior-point (Newton) method of
the notes' "primal-dual method" section (``subsolv``): relaxed KKT conditions with barrier ε = 1 → 10⁻⁷ (×0.1),
Newton steps reduced to the (m+1)×(m+1) system in (Δλ, Δz) because m ≪ n::

    [ D_λ + G D_x⁻¹ Gᵀ    a      ] [Δλ]   [ δ_λ + δ_y/D_y − G D_x⁻¹ δ_x ]
    [ aᵀ                 −ζ/z    ] [Δz] = [ δ_z                          ]

    Δx = −D_x⁻¹ (δ_x + Gᵀ Δλ),    G = ∂g̃/∂x  (m × n, local columns)

Collectives per Newton step, whatever n: one Allreduce for G D_x⁻¹ Gᵀ, G D_x⁻¹ δ_x and
g̃(x); one for the step length (1.01 fraction-to-boundary); one per back-tracking trial
for the residual (g̃, Σr² and max|r| gathered together).
"""
from __future__ import annotations

import numpy as np

from .._petsc import PETSc

#: Svanberg's default parameters (mmasub.m / mmapy.mmasub)
DEFAULTS = dict(move=0.5, asyinit=0.5, asydecr=0.7, asyincr=1.2, asymin=0.01, asymax=10.0,
                raa0=1e-5, albefa=0.1, epsimin=1e-7)


class _Reduce:
    """Sums and maxima over the distributed n-vectors: one Allreduce each, all ranks."""

    def __init__(self, comm):
        self.comm = comm
        from mpi4py import MPI
        self.MPI = MPI

    def sum(self, a):
        a = np.ascontiguousarray(a, dtype=float)
        if self.comm.size == 1:
            return a
        out = np.empty_like(a)
        self.comm.Allreduce(a, out, op=self.MPI.SUM)
        return out

    def max(self, a):
        a = np.ascontiguousarray(np.atleast_1d(a), dtype=float)
        if self.comm.size == 1:
            return a
        out = np.empty_like(a)
        self.comm.Allreduce(a, out, op=self.MPI.MAX)
        return out

    def sum_max(self, s, m):
        """(Σ_ranks s, max_ranks m) in one collective (an Allgather of the few numbers,
        summed in rank order)."""
        s = np.atleast_1d(np.asarray(s, dtype=float))
        m = np.atleast_1d(np.asarray(m, dtype=float))
        if self.comm.size == 1:
            return s, m
        loc = np.concatenate([s, m])
        out = np.empty((self.comm.size, len(loc)))
        self.comm.Allgather(loc, out)
        return out[:, :len(s)].sum(axis=0), out[:, len(s):].max(axis=0)


def _lmax(a):
    """Local maximum (−∞ for an empty local part)."""
    return np.max(a, initial=-np.inf)


def asymptotes(it, x, xold1, xold2, low, upp, xmin, xmax, asyinit=0.5, asydecr=0.7, asyincr=1.2,
               asymin=0.01, asymax=10.0):
    """New moving asymptotes (l, u) at iteration ``it`` (1-based, as mmasub's ``iter``)."""
    rng = xmax - xmin
    if it <= 2:
        return x - asyinit * rng, x + asyinit * rng
    zzz = (x - xold1) * (xold1 - xold2)
    factor = np.ones_like(x)
    factor[zzz > 0] = asyincr
    factor[zzz < 0] = asydecr
    low = x - factor * (xold1 - low)
    upp = x + factor * (upp - xold1)
    low = np.minimum(np.maximum(low, x - asymax * rng), x - asymin * rng)
    upp = np.maximum(np.minimum(upp, x + asymax * rng), x + asymin * rng)
    return low, upp


def mmasub(red, it, x, xmin, xmax, xold1, xold2, df0dx, fval, dfdx, low, upp, a0, a, c, d, *,
           move=0.5, asyinit=0.5, asydecr=0.7, asyincr=1.2, asymin=0.01, asymax=10.0, raa0=1e-5,
           albefa=0.1, epsimin=1e-7):
    """One MMA step on local arrays: (x_new, low, upp, λ).  n-arrays are this rank's part
    (shape (n_loc,)); ``dfdx`` is (m, n_loc); ``fval``, a, c, d are (m,) replicated."""
    low, upp = asymptotes(it, x, xold1, xold2, low, upp, xmin, xmax, asyinit, asydecr, asyincr,
                          asymin, asymax)
    xnew, lam = subproblem(red, x, xmin, xmax, df0dx, fval, dfdx, low, upp, a0, a, c, d, move=move,
                           raa0=raa0, albefa=albefa, epsimin=epsimin)
    return xnew, low, upp, lam


def subproblem(red, x, xmin, xmax, df0dx, fval, dfdx, low, upp, a0, a, c, d, *, move=0.5, raa0=1e-5,
               albefa=0.1, epsimin=1e-7):
    """The MMA subproblem at x with the asymptotes (low, upp) given, solved: (x_new, λ).
    (``mmasub`` after its asymptote update; ``benchmarks/mma_replay.py`` re-solves a
    record's last update with other constants through it.)"""
    alfa = np.maximum(np.maximum(low + albefa * (x - low), x - move * (xmax - xmin)), xmin)
    beta = np.minimum(np.minimum(upp - albefa * (upp - x), x + move * (xmax - xmin)), xmax)
    xmami_inv = 1.0 / np.maximum(xmax - xmin, 1e-5)
    ux1, xl1 = upp - x, x - low
    ux2, xl2 = ux1 * ux1, xl1 * xl1
    p0, q0 = np.maximum(df0dx, 0), np.maximum(-df0dx, 0)
    pq0 = 0.001 * (p0 + q0) + raa0 * xmami_inv
    p0 = (p0 + pq0) * ux2
    q0 = (q0 + pq0) * xl2
    P, Q = np.maximum(dfdx, 0), np.maximum(-dfdx, 0)
    PQ = 0.001 * (P + Q) + raa0 * xmami_inv[None, :]
    P = (P + PQ) * ux2[None, :]
    Q = (Q + PQ) * xl2[None, :]
    b = red.sum(P @ (1.0 / ux1) + Q @ (1.0 / xl1)) - fval
    return subsolv(red, epsimin, low, upp, alfa, beta, p0, q0, P, Q, a0, a, b, c, d)


def subsolv(red, epsimin, low, upp, alfa, beta, p0, q0, P, Q, a0, a, b, c, d):
    """Primal-dual Newton method for the MMA subproblem (notes' primal-dual method;
    mmapy.subsolv, its m < n branch, used here for any m).  Returns (x, λ)."""
    m = len(b)
    epsi = 1.0
    x = 0.5 * (alfa + beta)
    y, z, lam, s = np.ones(m), 1.0, np.ones(m), np.ones(m)
    xsi = np.maximum(1.0 / (x - alfa), 1.0)
    eta = np.maximum(1.0 / (beta - x), 1.0)
    mu = np.maximum(1.0, 0.5 * c)
    zet = 1.0

    def residual(x, y, z, lam, xsi, eta, mu, zet, s, epsi):
        """(‖r‖₂, ‖r‖∞) of the relaxed KKT residual (one collective: g̃(x), Σr², max|r|)."""
        ux1, xl1 = upp - x, x - low
        plam = p0 + lam @ P
        qlam = q0 + lam @ Q
        rex = plam / (ux1 * ux1) - qlam / (xl1 * xl1) - xsi + eta
        rexsi = xsi * (x - alfa) - epsi
        reeta = eta * (beta - x) - epsi
        sums, mx = red.sum_max(np.concatenate([P @ (1.0 / ux1) + Q @ (1.0 / xl1),
                                               [rex @ rex + rexsi @ rexsi + reeta @ reeta]]),
                               max(_lmax(np.abs(rex)), _lmax(np.abs(rexsi)), _lmax(np.abs(reeta))))
        gvec, sq = sums[:m], sums[m]
        rm = np.concatenate([c + d * y - mu - lam, [a0 - zet - a @ lam], gvec - a * z - y + s - b,
                             mu * y - epsi, [zet * z - epsi], lam * s - epsi])
        return np.sqrt(sq + rm @ rm), max(mx[0], _lmax(np.abs(rm)))

    while epsi > epsimin:
        residunorm, residumax = residual(x, y, z, lam, xsi, eta, mu, zet, s, epsi)
        ittt = 0
        while residumax > 0.9 * epsi and ittt < 200:
            ittt += 1
            ux1, xl1 = upp - x, x - low
            ux2, xl2 = ux1 * ux1, xl1 * xl1
            plam = p0 + lam @ P
            qlam = q0 + lam @ Q
            GG = P / ux2[None, :] - Q / xl2[None, :]
            dpsidx = plam / ux2 - qlam / xl2
            delx = dpsidx - epsi / (x - alfa) + epsi / (beta - x)
            dely = c + d * y - lam - epsi / y
            delz = a0 - a @ lam - epsi / z
            diagx = 2 * (plam / (ux1 * ux2) + qlam / (xl1 * xl2)) + xsi / (x - alfa) + eta / (beta - x)
            diagxinv = 1.0 / diagx
            diagy = d + mu / y
            diaglamyi = s / lam + 1.0 / diagy
            # the n-sums of the Newton step in one Allreduce: G D_x⁻¹ Gᵀ, G D_x⁻¹ δ_x, g̃(x)
            GD = GG * diagxinv[None, :]
            packed = red.sum(np.concatenate([(GD @ GG.T).ravel(), GG @ (delx * diagxinv),
                                             P @ (1.0 / ux1) + Q @ (1.0 / xl1)]))
            GDG, GDdelx, gvec = packed[:m * m].reshape(m, m), packed[m * m:m * m + m], packed[m * m + m:]
            dellam = gvec - a * z - y - b + epsi / lam
            blam = dellam + dely / diagy - GDdelx
            AA = np.empty((m + 1, m + 1))
            AA[:m, :m] = np.diag(diaglamyi) + GDG
            AA[:m, m] = a
            AA[m, :m] = a
            AA[m, m] = -zet / z
            solut = np.linalg.solve(AA, np.concatenate([blam, [delz]]))
            dlam, dz = solut[:m], solut[m]
            dx = -delx / diagx - (dlam @ GG) / diagx
            dy = -dely / diagy + dlam / diagy
            dxsi = -xsi + epsi / (x - alfa) - (xsi * dx) / (x - alfa)
            deta = -eta + epsi / (beta - x) + (eta * dx) / (beta - x)
            dmu = -mu + epsi / y - (mu * dy) / y
            dzet = -zet + epsi / z - zet * dz / z
            ds = -s + epsi / lam - (s * dlam) / lam
            # fraction-to-boundary step (1.01), as subsolv
            stm_m = _lmax(-1.01 * np.concatenate([dy, [dz], dlam, dmu, [dzet], ds])
                          / np.concatenate([y, [z], lam, mu, [zet], s]))
            stm_n = max(_lmax(-1.01 * dxsi / xsi), _lmax(-1.01 * deta / eta),
                        _lmax(-1.01 * dx / (x - alfa)), _lmax(1.01 * dx / (beta - x)))
            steg = 1.0 / max(red.max(stm_n)[0], stm_m, 1.0)
            old = (x, y, z, lam, xsi, eta, mu, zet, s)
            itto = 0
            resinew = 2 * residunorm
            while resinew > residunorm and itto < 50:
                itto += 1
                x, y, z, lam, xsi, eta, mu, zet, s = (v + steg * dv for v, dv in zip(
                    old, (dx, dy, dz, dlam, dxsi, deta, dmu, dzet, ds)))
                resinew, resimax = residual(x, y, z, lam, xsi, eta, mu, zet, s, epsi)
                steg = steg / 2
            residunorm, residumax = resinew, resimax
            steg = 2 * steg
        epsi = 0.1 * epsi
    return x, lam


class MMA:
    """MMA state over PETSc Vecs: x, xold1, xold2, low, upp (distributed like ``xmin``)
    and the iteration counter ``it`` (the number of updates done).

    ``update(f0 gradient, constraint values, constraint gradients)`` moves ``x`` to the
    minimizer of the MMA subproblem at the current ``x``.  a₀ = 1, aᵢ = 0, cᵢ = ``c``
    (1000), dᵢ = ``d`` (1): the notes' choice for min f₀ s.t. fᵢ ≤ 0."""

    STATE = ("x", "xold1", "xold2", "low", "upp")

    def __init__(self, x0, xmin, xmax, m, c=1000.0, d=1.0, **params):
        self.comm = x0.getComm()
        self.red = _Reduce(self.comm.tompi4py())
        self.m = m
        self.params = dict(DEFAULTS, **params)
        self.xmin, self.xmax = xmin.copy(), xmax.copy()
        self.x = x0.copy()
        self.xold1, self.xold2 = x0.copy(), x0.copy()
        self.low, self.upp = xmin.copy(), xmax.copy()
        self.a0, self.a = 1.0, np.zeros(m)
        self.c, self.d = np.full(m, float(c)), np.full(m, float(d))
        self.it = 0
        self.lam = np.zeros(m)

    @staticmethod
    def _loc(v):
        return v.getArray(readonly=True).copy()

    def update(self, df0dx, fval, dfdx):
        """One MMA iteration.  ``df0dx``: Vec (or local array); ``fval``: (m,) replicated;
        ``dfdx``: (m, n_loc) local rows (or a list of m Vecs).  Returns max |Δx_j|/(xmax−xmin)_j
        over all ranks (the step)."""
        g0 = df0dx if isinstance(df0dx, np.ndarray) else self._loc(df0dx)
        if isinstance(dfdx, (list, tuple)):
            dfdx = np.array([self._loc(v) for v in dfdx]).reshape(self.m, len(g0))
        dfdx = np.asarray(dfdx, float).reshape(self.m, len(g0))
        L = {k: self._loc(getattr(self, k)) for k in self.STATE}
        xmin, xmax = self._loc(self.xmin), self._loc(self.xmax)
        p = {k: v for k, v in self.params.items()}
        xnew, low, upp, lam = mmasub(self.red, self.it + 1, L["x"], xmin, xmax, L["xold1"], L["xold2"], g0,
                                     np.asarray(fval, float), dfdx, L["low"], L["upp"], self.a0, self.a,
                                     self.c, self.d, **p)
        self.it += 1
        self.lam = lam
        self.xold2.setArray(L["xold1"])
        self.xold1.setArray(L["x"])
        self.x.setArray(xnew)
        self.low.setArray(low)
        self.upp.setArray(upp)
        return float(self.red.max(_lmax(np.abs(xnew - L["x"]) / np.maximum(xmax - xmin, 1e-300)))[0])

    def destroy(self):
        for k in self.STATE + ("xmin", "xmax"):
            getattr(self, k).destroy()


def vec_from(comm, full):
    """A distributed Vec holding this rank's slice of the replicated array ``full``."""
    v = PETSc.Vec().createMPI(len(full), comm=comm)
    lo, hi = v.getOwnershipRange()
    v.setArray(np.asarray(full, float)[lo:hi])
    return v
