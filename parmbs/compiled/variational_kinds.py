"""Compiled evaluations of the double wishbone's component kinds for the variational
forward step (issue 19, issue 22; benchmarks/README.md "Compiled variational kernels").

The variational step (integrators/variational.py) calls, per Newton iteration, ``r`` and
``jacobians`` of every force group and ``phi``, ``phi_q`` of every constraint group, and
once a step ``gamma``, ``phi_t``; on the double wishbone these numpy evaluations of 13
small groups (4–24 elements each) were ~55 % of the step, almost all numpy's per-call
overhead (benchmarks/variational_kinds.py).  ``fast_group(g)`` returns, for a group of a
kind listed in ``FAST``, a proxy with the same attributes whose methods run one numba
kernel each (or return a per-design constant), the same formulas as the kind's numpy
methods:

* for the adjoint step (compiled/variational_adjoint.py), ``hess_lam`` and ``phi_q_w_q`` of
  the bilinear orthonormality rows and the quadratic point-pair distance rows in closed
  form (``ortho_second``, ``pair_second``), zero for the linear spherical joints, and
  ``phi_t_q`` = 0 (numpy: complex steps of them); the beam–beam weld's by a complex step
  of its Φ_q inside a kernel (``weld_second``), the planar driver's in closed form
  (``driver_second``); and the design derivatives ∂r/∂ρ, ∂Φ/∂ρ, ∂(Φ_qᵀλ)/∂ρ, ∂(Φ_q w)/∂ρ
  of every designed group by the numpy methods' complex step of p applied to the per-design
  constants once per design (``_Fast.pconsts``), then in kernels: products with ∂M/∂ρ,
  ∂r_v/∂ρ, ∂Φ_q/∂ρ for the kinds linear in a, v or q (``lin_p``), the complex r or Φ_q for
  the others (``elastic_p``, ``pair_spring_p``, ``weld_p``), zero ∂Φ_t/∂ρ for the
  scleronomic kinds (adjw20; the kinds without them keep the numpy complex steps);
* constant in the state (cached per parameter vector p, the numpy method's own array):
  ``Ancf3Gravity``, ``SpatialGravity`` (r); the inertias' M (r = M a, kernel ``matvec``);
  ``Ancf3BendingDamping``'s r_v = β_b EI K ⊗ I₃ (r = r_v v); the Φ_q of a spherical joint
  between natural-coordinate and beam points (both linear in q: Φ = Φ_q q, γ = 0);
* ``Ancf3Elastic`` (r = EA ε P e + EI K e and its non-symmetric tangent, flexible/ancf.py
  erratum E3), ``Ancf3AxialDamping`` (flexible/ancf3d.py), ``NaturalOrthonormality``
  (spatial/natural.py), ``SpatialBeamBeamWeld``, the natural/beam point-pair distance
  rows and spring-dampers (flexible/ancf3d_joints.py): kernels below, each formula
  written where its numpy source states it.

A point of a natural-coordinate body or a beam is r = Σ_k w_k q[3k:3k+3] (natural:
w = (1, x̄, ȳ, z̄), spatial/natural.py Eq. 37; beam: the Hermite shape functions at ξ,
flexible/ancf.py Eq. 29), so a point pair has B = [w_a ⊗ I₃, −w_b ⊗ I₃]: entry j of the
24 local coordinates has coefficient β_j (``_pair_beta``) on component j mod 3.  The
weights come from the numpy code (``beam_point_matrices``, ``_natural_matrix``), once per p.

Complex arguments (complex-step runs) go to the numpy methods.  Numbers: the numpy
formulas in another summation order (round-off; tests/test_compiled_variational.py holds
each kernel against the numpy method), bitwise the same from run to run.  Used only by
the compiled forward step (``simulation.compiled`` auto/on); ``off`` never sees them.
"""
import numpy as np

from ._jit import njit
from ..model.component import CS_H


# -- kernels ------------------------------------------------------------------------------------

@njit(cache=True)
def matvec(M, x):
    """M_e x_e per element: (ne, a, b) × (ne, b) -> (ne, a)."""
    ne, a, b = M.shape
    out = np.zeros((ne, a))
    for e in range(ne):
        for i in range(a):
            s = 0.0
            for j in range(b):
                s += M[e, i, j] * x[e, j]
            out[e, i] = s
    return out


@njit(cache=True)
def _point(w, x, off, c):
    """Component c of Σ_k w_k x[off + 3k : off + 3k + 3]."""
    return w[0] * x[off + c] + w[1] * x[off + 3 + c] + w[2] * x[off + 6 + c] + w[3] * x[off + 9 + c]


@njit(cache=True)
def _pair_beta(wa, wb, j):
    """β_j of B = [w_a ⊗ I₃, −w_b ⊗ I₃] (module docstring)."""
    k = (j % 12) // 3
    return wa[k] if j < 12 else -wb[k]


@njit(cache=True)
def elastic(q, EA, EI, l, P, K, want_J):
    """Ancf3Elastic (flexible/ancf.py AncfElastic, errata E1–E3): r = EA ε (P⊗I₃) e +
    EI (K⊗I₃) e, ε = |r_j − r_i|/l − 1; with ``want_J`` the exact tangent
    ∂r/∂e = (EA ε P + EI K) ⊗ I₃ + EA (P⊗I₃)e ⊗ ∂ε/∂e, ∂ε/∂e = (−Δ, 0, Δ, 0)/(l d)."""
    ne = q.shape[0]
    r = np.zeros((ne, 12))
    J = np.zeros((ne, 12, 12)) if want_J else np.zeros((0, 12, 12))
    for e in range(ne):
        D0, D1, D2 = q[e, 6] - q[e, 0], q[e, 7] - q[e, 1], q[e, 8] - q[e, 2]
        dist = np.sqrt(D0 * D0 + D1 * D1 + D2 * D2)
        eps = dist / l[e] - 1.0
        ca, cb = EA[e] * eps, EI[e]
        Pq = np.zeros(12)
        for a_ in range(4):
            for c in range(3):
                sp, sk = 0.0, 0.0
                for b_ in range(4):
                    sp += P[e, a_, b_] * q[e, 3 * b_ + c]
                    sk += K[e, a_, b_] * q[e, 3 * b_ + c]
                Pq[3 * a_ + c] = sp
                r[e, 3 * a_ + c] = ca * sp + cb * sk
        if want_J:
            s = 1.0 / (l[e] * dist)
            dep = np.zeros(12)
            dep[0], dep[1], dep[2] = -D0 * s, -D1 * s, -D2 * s
            dep[6], dep[7], dep[8] = D0 * s, D1 * s, D2 * s
            for a_ in range(4):
                for b_ in range(4):
                    m = ca * P[e, a_, b_] + cb * K[e, a_, b_]
                    for c in range(3):
                        J[e, 3 * a_ + c, 3 * b_ + c] = m
            for i in range(12):
                f = EA[e] * Pq[i]
                for j in (0, 1, 2, 6, 7, 8):
                    J[e, i, j] += f * dep[j]
    return r, J


@njit(cache=True)
def axial_damping(q, v, c, want_J):
    """Ancf3AxialDamping (flexible/ancf3d.py): f = c (D·Ḋ) D/d², c = β EA/l, r = (−f, 0, f, 0);
    r_q = Bᵀ[c((D·Ḋ)I + DḊᵀ)/d² − 2c(D·Ḋ)DDᵀ/d⁴]B, r_v = Bᵀ[c DDᵀ/d²]B, B = [−I, 0, I, 0]."""
    ne = q.shape[0]
    r = np.zeros((ne, 12))
    n = ne if want_J else 0
    rq, rv = np.zeros((n, 12, 12)), np.zeros((n, 12, 12))
    D, Dv = np.zeros(3), np.zeros(3)
    for e in range(ne):
        for i in range(3):
            D[i] = q[e, 6 + i] - q[e, i]
            Dv[i] = v[e, 6 + i] - v[e, i]
        d2 = D[0] * D[0] + D[1] * D[1] + D[2] * D[2]
        s = D[0] * Dv[0] + D[1] * Dv[1] + D[2] * Dv[2]
        for i in range(3):
            f = c[e] * s / d2 * D[i]
            r[e, i] = -f
            r[e, 6 + i] = f
        if want_J:
            for i in range(3):
                for j in range(3):
                    fq = c[e] * ((s if i == j else 0.0) + D[i] * Dv[j]) / d2 - 2.0 * c[e] * s * D[i] * D[j] / (d2 * d2)
                    fv = c[e] * D[i] * D[j] / d2
                    rq[e, i, j], rq[e, i, 6 + j], rq[e, 6 + i, j], rq[e, 6 + i, 6 + j] = fq, -fq, -fq, fq
                    rv[e, i, j], rv[e, i, 6 + j], rv[e, 6 + i, j], rv[e, 6 + i, 6 + j] = fv, -fv, -fv, fv
    return r, rq, rv


@njit(cache=True)
def orthonormality(q, v, what):
    """NaturalOrthonormality (spatial/natural.py Eq. 38) on q = (e₁, e₂, e₃), rows (i, j) in
    _PAIRS order: what 0: Φ = e_i·e_j − δ_ij (ne, 6); 1: Φ_q (ne, 6, 9); 2: γ = 2ė_i·ė_j."""
    ne = q.shape[0]
    I = (0, 1, 2, 0, 0, 1)
    Jc = (0, 1, 2, 1, 2, 2)
    if what == 1:
        out = np.zeros((ne, 6, 9))
        for e in range(ne):
            for row in range(6):
                i, j = I[row], Jc[row]
                for c in range(3):
                    out[e, row, 3 * i + c] += q[e, 3 * j + c]
                    out[e, row, 3 * j + c] += q[e, 3 * i + c]
        return out
    out = np.zeros((ne, 6, 1))
    x = q if what == 0 else v
    for e in range(ne):
        for row in range(6):
            i, j = I[row], Jc[row]
            s = x[e, 3 * i] * x[e, 3 * j] + x[e, 3 * i + 1] * x[e, 3 * j + 1] + x[e, 3 * i + 2] * x[e, 3 * j + 2]
            out[e, row, 0] = s - (1.0 if i == j else 0.0) if what == 0 else 2.0 * s
    return out


@njit(cache=True)
def _unit_rates(a, ad):
    """â = a/|a|, |a|, â̇ = (ȧ − â(â·ȧ))/|a|, â̈ᵛ = −(2â̇(â·ȧ) + â(â̇·ȧ))/|a|
    (flexible/ancf3d_joints._unit_rates)."""
    n = np.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])
    u = a / n
    s = u[0] * ad[0] + u[1] * ad[1] + u[2] * ad[2]
    ud = (ad - u * s) / n
    t = ud[0] * ad[0] + ud[1] * ad[1] + ud[2] * ad[2]
    return u, n, ud, -(2.0 * ud * s + u * t) / n


@njit(cache=True)
def weld(q, v, wa, wpa, wb, wpb, cos0, what):
    """SpatialBeamBeamWeld (flexible/ancf3d_joints.py): Φ = (r_A − r_B, â·b̂ − cos θ₀);
    what 0: Φ (ne, 4); 1: Φ_q = ([S_A, −S_B]; [(P_a b̂/|r′_A|)ᵀS′_A, (P_b â/|r′_B|)ᵀS′_B]);
    2: γ = (0; â̈ᵛ·b̂ + 2â̇·b̂̇ + â·b̂̈ᵛ).  w, wp: the beam points' S and S′ weights."""
    ne = q.shape[0]
    out = np.zeros((ne, 4, 24)) if what == 1 else np.zeros((ne, 4, 1))
    da, db, dda, ddb = np.zeros(3), np.zeros(3), np.zeros(3), np.zeros(3)
    for e in range(ne):
        for c in range(3):
            da[c] = _point(wpa[e], q[e], 0, c)
            db[c] = _point(wpb[e], q[e], 12, c)
            if what == 2:
                dda[c] = _point(wpa[e], v[e], 0, c)
                ddb[c] = _point(wpb[e], v[e], 12, c)
        ua, na, uda, udda = _unit_rates(da, dda)
        ub, nb, udb, uddb = _unit_rates(db, ddb)
        ab = ua[0] * ub[0] + ua[1] * ub[1] + ua[2] * ub[2]
        if what == 0:
            for c in range(3):
                out[e, c, 0] = _point(wa[e], q[e], 0, c) - _point(wb[e], q[e], 12, c)
            out[e, 3, 0] = ab - cos0[e]
        elif what == 1:
            for j in range(24):
                out[e, j % 3, j] = _pair_beta(wa[e], wb[e], j)
            for k in range(4):
                for c in range(3):
                    out[e, 3, 3 * k + c] = (ub[c] - ua[c] * ab) / na * wpa[e, k]
                    out[e, 3, 12 + 3 * k + c] = (ua[c] - ub[c] * ab) / nb * wpb[e, k]
        else:
            g = 0.0
            for c in range(3):
                g += udda[c] * ub[c] + 2.0 * uda[c] * udb[c] + ua[c] * uddb[c]
            out[e, 3, 0] = g
    return out


@njit(cache=True)
def pair_distance(q, v, wa, wb, l0, what):
    """Distance row between natural/beam points (flexible/ancf3d_joints._PairDistance):
    what 0: Φ = ½(|d|² − ℓ₀²), d = B q (ne, 1); 1: Φ_q = dᵀB (ne, 1, 24); 2: γ = |B v|²."""
    ne = q.shape[0]
    out = np.zeros((ne, 1, 24)) if what == 1 else np.zeros((ne, 1, 1))
    d = np.zeros(3)
    for e in range(ne):
        x = v[e] if what == 2 else q[e]
        for c in range(3):
            d[c] = _point(wa[e], x, 0, c) - _point(wb[e], x, 12, c)
        dd = d[0] * d[0] + d[1] * d[1] + d[2] * d[2]
        if what == 0:
            out[e, 0, 0] = 0.5 * (dd - l0[e] * l0[e])
        elif what == 2:
            out[e, 0, 0] = dd
        else:
            for j in range(24):
                out[e, 0, j] = _pair_beta(wa[e], wb[e], j) * d[j % 3]
    return out


@njit(cache=True)
def pair_spring(q, v, wa, wb, law, linear, want_J):
    """Spring-damper between natural/beam points (flexible/ancf3d_joints._PairSpringDamper):
    d = B q, ḋ = B q̇, ℓ = |d|, u = d/ℓ; linear: f = −(k(ℓ − ℓ₀) + c u·ḋ) u, relative (seed
    000 Eq. 43/65): f = −k(ℓ − ℓ₀) u − c ḋ; r = −Bᵀf; r_q = −Bᵀ(∂f/∂d)B, r_v = −Bᵀ(∂f/∂ḋ)B
    with relative ∂f/∂d = −k[(1 − ℓ₀/ℓ)I + (ℓ₀/ℓ)uuᵀ], ∂f/∂ḋ = −cI; linear ∂f/∂d =
    −u(k u + c(ḋ − u ℓ̇)/ℓ)ᵀ − T(I − uuᵀ)/ℓ, ∂f/∂ḋ = −c uuᵀ.  law = (k, c, ℓ₀)."""
    ne = q.shape[0]
    r = np.zeros((ne, 24))
    n = ne if want_J else 0
    rq, rv = np.zeros((n, 24, 24)), np.zeros((n, 24, 24))
    d, dv, f = np.zeros(3), np.zeros(3), np.zeros(3)
    Fd, Fv, beta = np.zeros((3, 3)), np.zeros((3, 3)), np.zeros(24)
    for e in range(ne):
        k, c, l0 = law[e, 0], law[e, 1], law[e, 2]
        for i in range(3):
            d[i] = _point(wa[e], q[e], 0, i) - _point(wb[e], q[e], 12, i)
            dv[i] = _point(wa[e], v[e], 0, i) - _point(wb[e], v[e], 12, i)
        l = np.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
        u = d / l
        ld = u[0] * dv[0] + u[1] * dv[1] + u[2] * dv[2]
        T = k * (l - l0) + c * ld
        for i in range(3):
            f[i] = -T * u[i] if linear else -(k * (l - l0)) * u[i] - c * dv[i]
        for j in range(24):
            r[e, j] = -_pair_beta(wa[e], wb[e], j) * f[j % 3]
        if want_J:
            for i in range(3):
                for j in range(3):
                    uu = u[i] * u[j]
                    dl = 1.0 if i == j else 0.0
                    if linear:
                        dT = k * u[j] + c * (dv[j] - ld * u[j]) / l
                        Fd[i, j] = -u[i] * dT - T * (dl - uu) / l
                        Fv[i, j] = -c * uu
                    else:
                        Fd[i, j] = -k * ((1.0 - l0 / l) * dl + (l0 / l) * uu)
                        Fv[i, j] = -c * dl
            for i in range(24):
                beta[i] = _pair_beta(wa[e], wb[e], i)
            for i in range(24):
                for j in range(24):
                    bb = beta[i] * beta[j]
                    rq[e, i, j] = -bb * Fd[i % 3, j % 3]
                    rv[e, i, j] = -bb * Fv[i % 3, j % 3]
    return r, rq, rv


@njit(cache=True)
def driver(q, v, c, k, f, what):
    """Planar coordinate driver (model/joints._Driver) on q = (x, y, θ): value x or y of the
    frame origin, q_k + (A(θ)(−c̄))_k, or θ (k = 2); f the time function's value of the
    order the row needs.  what 0: Φ = value − f; 1: Φ_q (ne, 1, 3), ∂/∂θ = (dA/dθ (−c̄))_k;
    2: γ = −(A(θ)(−c̄))_k θ̇² − f″ (angle: −f″); 3: Φ_t = −f′."""
    ne = q.shape[0]
    out = np.zeros((ne, 1, 3)) if what == 1 else np.zeros((ne, 1, 1))
    for e in range(ne):
        th = q[e, 2]
        cs, sn = np.cos(th), np.sin(th)
        s0, s1 = -c[e, 0], -c[e, 1]
        rx, ry = cs * s0 - sn * s1, sn * s0 + cs * s1            # A(θ) s
        dx, dy = -sn * s0 - cs * s1, cs * s0 - sn * s1           # dA/dθ s
        rk, dk = (rx, dx) if k == 0 else (ry, dy)
        if what == 0:
            out[e, 0, 0] = (th if k == 2 else q[e, k] + rk) - f[e]
        elif what == 1:
            if k == 2:
                out[e, 0, 2] = 1.0
            else:
                out[e, 0, k] = 1.0
                out[e, 0, 2] = dk
        elif what == 2:
            out[e, 0, 0] = -f[e] if k == 2 else -rk * v[e, 2] * v[e, 2] - f[e]
        else:
            out[e, 0, 0] = -f[e]
    return out


@njit(cache=True)
def ortho_second(lam, w, what):
    """NaturalOrthonormality's second derivatives (Φ_(i,j) = e_i·e_j − δ_ij, bilinear):
    what 0: ∂(Φ_qᵀλ)/∂q (ne, 9, 9) = Σ_rows λ_(i,j) (E_ij + E_ji) ⊗ I₃ (2λ I₃ on a diagonal
    row); 1: ∂(Φ_q w)/∂q (ne, 6, 9): row (i, j) has w_j at e_i's columns and w_i at e_j's."""
    I = (0, 1, 2, 0, 0, 1)
    Jc = (0, 1, 2, 1, 2, 2)
    ne = lam.shape[0] if what == 0 else w.shape[0]
    out = np.zeros((ne, 9, 9)) if what == 0 else np.zeros((ne, 6, 9))
    for e in range(ne):
        for row in range(6):
            i, j = I[row], Jc[row]
            for c in range(3):
                if what == 0:
                    out[e, 3 * i + c, 3 * j + c] += lam[e, row]
                    out[e, 3 * j + c, 3 * i + c] += lam[e, row]
                else:
                    out[e, row, 3 * i + c] += w[e, 3 * j + c]
                    out[e, row, 3 * j + c] += w[e, 3 * i + c]
    return out


@njit(cache=True)
def pair_second(wa, wb, lam, w, what):
    """The point-pair distance row's second derivatives (Φ = ½(|Bq|² − ℓ₀²), B = [w_a ⊗ I₃,
    −w_b ⊗ I₃]): what 0: ∂(Φ_qᵀλ)/∂q = λ BᵀB (ne, 24, 24): β_i β_j λ where i ≡ j (mod 3);
    1: ∂(Φ_q w)/∂q = (Bw)ᵀB (ne, 1, 24)."""
    ne = wa.shape[0]
    out = np.zeros((ne, 24, 24)) if what == 0 else np.zeros((ne, 1, 24))
    bw = np.zeros(3)
    for e in range(ne):
        if what == 0:
            for i in range(24):
                bi = _pair_beta(wa[e], wb[e], i) * lam[e, 0]
                for j in range(i % 3, 24, 3):
                    out[e, i, j] = bi * _pair_beta(wa[e], wb[e], j)
        else:
            for c in range(3):
                bw[c] = _point(wa[e], w[e], 0, c) - _point(wb[e], w[e], 12, c)
            for j in range(24):
                out[e, 0, j] = _pair_beta(wa[e], wb[e], j) * bw[j % 3]
    return out


@njit(cache=True)
def driver_second(q, c, k, lam, w, what):
    """The planar driver's second derivatives (``driver``): its row's only q-nonlinear
    entry is ∂Φ/∂θ = (dA/dθ s)_k (k = 0, 1; s = −c̄), whose θ-derivative is
    (d²A/dθ² s)_k = −(A(θ) s)_k; the angle driver (k = 2) is linear.  what 0: ∂(Φ_qᵀλ)/∂q
    (ne, 3, 3), λ(−(A s)_k) at (θ, θ); 1: ∂(Φ_q w)/∂q (ne, 1, 3), −(A s)_k w_θ at θ."""
    ne = q.shape[0]
    out = np.zeros((ne, 3, 3)) if what == 0 else np.zeros((ne, 1, 3))
    if k == 2:
        return out
    for e in range(ne):
        th = q[e, 2]
        cs, sn = np.cos(th), np.sin(th)
        s0, s1 = -c[e, 0], -c[e, 1]
        rk = cs * s0 - sn * s1 if k == 0 else sn * s0 + cs * s1
        if what == 0:
            out[e, 2, 2] = -rk * lam[e, 0]
        else:
            out[e, 0, 2] = -rk * w[e, 2]
    return out


@njit(cache=True)
def _weld_c(qc, wa, wpa, wb, wpb, cos0, G, phi):
    """One weld element's Φ (4,) into ``phi`` and Φ_q (4, 24) into ``G`` in complex
    arithmetic (``weld``'s formulas: the unit tangents through the analytic √ of r′·r′,
    so a complex step of q or of the weights is exact), all arguments complex128."""
    da, db = np.zeros(3, np.complex128), np.zeros(3, np.complex128)
    for c in range(3):
        da[c] = wpa[0] * qc[c] + wpa[1] * qc[3 + c] + wpa[2] * qc[6 + c] + wpa[3] * qc[9 + c]
        db[c] = wpb[0] * qc[12 + c] + wpb[1] * qc[15 + c] + wpb[2] * qc[18 + c] + wpb[3] * qc[21 + c]
    na = np.sqrt(da[0] * da[0] + da[1] * da[1] + da[2] * da[2])
    nb = np.sqrt(db[0] * db[0] + db[1] * db[1] + db[2] * db[2])
    ua, ub = da / na, db / nb
    ab = ua[0] * ub[0] + ua[1] * ub[1] + ua[2] * ub[2]
    for c in range(3):
        phi[c] = (wa[0] * qc[c] + wa[1] * qc[3 + c] + wa[2] * qc[6 + c] + wa[3] * qc[9 + c]
                  - (wb[0] * qc[12 + c] + wb[1] * qc[15 + c] + wb[2] * qc[18 + c] + wb[3] * qc[21 + c]))
    phi[3] = ab - cos0
    for r in range(4):
        for j in range(24):
            G[r, j] = 0.0
    for k in range(4):
        for c in range(3):
            G[c, 3 * k + c] = wa[k]
            G[c, 12 + 3 * k + c] = -wb[k]
            G[3, 3 * k + c] = (ub[c] - ua[c] * ab) / na * wpa[k]
            G[3, 12 + 3 * k + c] = (ua[c] - ub[c] * ab) / nb * wpb[k]


@njit(cache=True)
def weld_second(q, wa, wpa, wb, wpb, lam, w, what):
    """SpatialBeamBeamWeld's second derivatives in q by a complex step of Φ_q (``_weld_c``)
    in each of the 24 local coordinates, q_j + i h: what 0: ∂(Φ_qᵀλ)/∂q (ne, 24, 24);
    1: ∂(Φ_q w)/∂q (ne, 4, 24) — the numpy methods' complex steps (model/component.py),
    exact to round-off (no difference quotient).  Rows 0–2 of Φ_q are constant in q."""
    ne = q.shape[0]
    out = np.zeros((ne, 24, 24)) if what == 0 else np.zeros((ne, 4, 24))
    qc = np.zeros(24, np.complex128)
    W = np.zeros((4, 4), np.complex128)
    G = np.zeros((4, 24), np.complex128)
    phi = np.zeros(4, np.complex128)
    for e in range(ne):
        for k in range(4):
            W[0, k], W[1, k], W[2, k], W[3, k] = wa[e, k], wpa[e, k], wb[e, k], wpb[e, k]
        for j in range(24):
            for i in range(24):
                qc[i] = q[e, i]
            qc[j] = complex(q[e, j], CS_H)
            _weld_c(qc, W[0], W[1], W[2], W[3], 0.0j, G, phi)
            if what == 0:
                for i in range(24):
                    out[e, i, j] = (G[3, i] * lam[e, 3]).imag / CS_H
            else:
                s = 0.0j
                for i in range(24):
                    s += G[3, i] * w[e, i]
                out[e, 3, j] = s.imag / CS_H
    return out


@njit(cache=True)
def weld_p(q, W, cosc, lam, w, what):
    """SpatialBeamBeamWeld's design derivatives by a complex step of its parameters: W (nc,
    ne, 4, 4) the weights (w_a, w′_a, w_b, w′_b) and cosc (nc, ne) cos θ₀ at p + i h e_c
    for each local design column c (``_Fast.pconsts``, numpy's own weight code); what 0:
    ∂Φ/∂p (ne, 4, nc); 1: ∂(Φ_qᵀλ)/∂p (ne, 24, nc); 2: ∂(Φ_q w)/∂p (ne, 4, nc) — the numpy
    methods' complex steps (model/component.py), the same perturbation."""
    nc, ne = W.shape[0], q.shape[0]
    out = np.zeros((ne, 24, nc)) if what == 1 else np.zeros((ne, 4, nc))
    qc = np.zeros(24, np.complex128)
    G = np.zeros((4, 24), np.complex128)
    phi = np.zeros(4, np.complex128)
    for e in range(ne):
        for i in range(24):
            qc[i] = q[e, i]
        for c in range(nc):
            _weld_c(qc, W[c, e, 0], W[c, e, 1], W[c, e, 2], W[c, e, 3], cosc[c, e], G, phi)
            if what == 0:
                for r in range(4):
                    out[e, r, c] = phi[r].imag / CS_H
            elif what == 1:
                for i in range(24):
                    s = 0.0j
                    for r in range(4):
                        s += G[r, i] * lam[e, r]
                    out[e, i, c] = s.imag / CS_H
            else:
                for r in range(4):
                    s = 0.0j
                    for i in range(24):
                        s += G[r, i] * w[e, i]
                    out[e, r, c] = s.imag / CS_H
    return out


@njit(cache=True)
def lin_p(dL, x, what):
    """Products with a per-design derivative dL (ne, a, b, nc) = ∂L/∂p of a block L(p)
    that is constant in the state: what 0: Σ_b dL[e, :, b, c] x[e, b] (ne, a, nc) — ∂(L x)/∂p
    for r = M a, r = r_v v, Φ = Φ_q q of the linear kinds, and ∂(Φ_q w)/∂p; 1: Σ_a dL[e, a,
    :, c] x[e, a] (ne, b, nc) — ∂(Φ_qᵀλ)/∂p."""
    ne, na, nb, nc = dL.shape
    out = np.zeros((ne, na, nc)) if what == 0 else np.zeros((ne, nb, nc))
    for e in range(ne):
        for i in range(na):
            for j in range(nb):
                xi = x[e, j] if what == 0 else x[e, i]
                if xi == 0.0:
                    continue
                for c in range(nc):
                    if what == 0:
                        out[e, i, c] += dL[e, i, j, c] * xi
                    else:
                        out[e, j, c] += dL[e, i, j, c] * xi
    return out


@njit(cache=True)
def elastic_p(q, EA, EI, l, P, K):
    """Ancf3Elastic's ∂r/∂p by a complex step of its per-design constants (``elastic``'s r
    in complex arithmetic): EA, EI, l (nc, ne) and P, K (nc, ne, 4, 4) at p + i h e_c for
    each local design column c (``_Fast.pconsts``); returns (ne, 12, nc)."""
    nc, ne = EA.shape
    out = np.zeros((ne, 12, nc))
    for c in range(nc):
        for e in range(ne):
            D0, D1, D2 = q[e, 6] - q[e, 0], q[e, 7] - q[e, 1], q[e, 8] - q[e, 2]
            dist = np.sqrt(D0 * D0 + D1 * D1 + D2 * D2)
            ca = EA[c, e] * (dist / l[c, e] - 1.0)
            cb = EI[c, e]
            for a_ in range(4):
                for k in range(3):
                    sp, sk = 0.0j, 0.0j
                    for b_ in range(4):
                        sp += P[c, e, a_, b_] * q[e, 3 * b_ + k]
                        sk += K[c, e, a_, b_] * q[e, 3 * b_ + k]
                    out[e, 3 * a_ + k, c] = (ca * sp + cb * sk).imag / CS_H
    return out


@njit(cache=True)
def pair_spring_p(q, v, WA, WB, LAW, linear):
    """The point-pair spring-damper's ∂r/∂p by a complex step of its per-design constants
    (``pair_spring``'s r in complex arithmetic): WA, WB (nc, ne, 4) the points' weights and
    LAW (nc, ne, 3) = (k, c, ℓ₀) at p + i h e_c (``_Fast.pconsts``); returns (ne, 24, nc)."""
    nc, ne = WA.shape[0], q.shape[0]
    out = np.zeros((ne, 24, nc))
    d, dv, f = np.zeros(3, np.complex128), np.zeros(3, np.complex128), np.zeros(3, np.complex128)
    for c in range(nc):
        for e in range(ne):
            wa, wb = WA[c, e], WB[c, e]
            k, cc, l0 = LAW[c, e, 0], LAW[c, e, 1], LAW[c, e, 2]
            for i in range(3):
                d[i] = (wa[0] * q[e, i] + wa[1] * q[e, 3 + i] + wa[2] * q[e, 6 + i] + wa[3] * q[e, 9 + i]
                        - (wb[0] * q[e, 12 + i] + wb[1] * q[e, 15 + i] + wb[2] * q[e, 18 + i] + wb[3] * q[e, 21 + i]))
                dv[i] = (wa[0] * v[e, i] + wa[1] * v[e, 3 + i] + wa[2] * v[e, 6 + i] + wa[3] * v[e, 9 + i]
                         - (wb[0] * v[e, 12 + i] + wb[1] * v[e, 15 + i] + wb[2] * v[e, 18 + i] + wb[3] * v[e, 21 + i]))
            ln = np.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
            ld = (d[0] * dv[0] + d[1] * dv[1] + d[2] * dv[2]) / ln
            T = k * (ln - l0) + cc * ld
            for i in range(3):
                f[i] = -T * (d[i] / ln) if linear else -(k * (ln - l0)) * (d[i] / ln) - cc * dv[i]
            for j in range(24):
                kk = (j % 12) // 3
                beta = wa[kk] if j < 12 else -wb[kk]
                out[e, j, c] = (-beta * f[j % 3]).imag / CS_H
    return out


# -- proxies ------------------------------------------------------------------------------------

def _real(*xs):
    """No complex argument (a complex-step run goes to the numpy methods); arrays or scalars."""
    for x in xs:
        if getattr(x, "dtype", None) is None or x.dtype.kind == "c":
            if np.iscomplexobj(x):
                return False
    return True


class _Fast:
    """A component group whose evaluation methods run the kernels above; every other
    attribute (index maps, flags, parameter derivatives, energy) is the group's own.
    Per-design constants are rebuilt when the group's local p changes."""

    def __init__(self, g):
        self.g = g
        self._key = None
        self._c = None
        self._pkey = None
        self._pc = None
        # what StateEval and EvalPlan read on every evaluation, as plain attributes
        for k in ("qidx", "pidx", "names", "nq", "np_", "inertial", "uses_q", "uses_v", "uses_a", "m", "rows"):
            if hasattr(g, k):
                setattr(self, k, getattr(g, k))

    def __getattr__(self, name):          # only what the proxy does not define itself
        return getattr(self.g, name)

    @property
    def ne(self):
        return self.g.ne

    def consts(self, p):
        """The per-design constants of ``setup``, rebuilt when p's bytes change."""
        key = (p.shape, p.tobytes())
        if key != self._key:
            self._c = self.setup(p)
            self._key = key
        return self._c

    def pconsts(self, p, cols):
        """``pstack`` of ``setup`` at p + i h e_c for each local design column c of ``cols``
        (the same perturbation as the numpy methods' complex steps, model/component.py,
        through the numpy code that builds the constants), rebuilt when p or cols change:
        the design derivatives of the adjoint step (compiled/variational_adjoint.py)."""
        key = (p.shape, p.tobytes(), np.asarray(cols).tobytes())
        if key != self._pkey:
            out = []
            for c in cols:
                pc = p.astype(complex)
                pc.imag[:, c] = CS_H
                out.append(self.setup(pc))
            self._pc = self.pstack(out)
            self._pkey = key
        return self._pc


def _dstack(blocks):
    """∂B/∂p (…, nc) from the complex-step blocks B(p + i h e_c) (complex, one per column)."""
    return np.ascontiguousarray(np.stack([np.asarray(B).imag / CS_H for B in blocks], -1))


def _cstack(arrays):
    """The complex constants of every column stacked on a leading axis (nc, …)."""
    return np.ascontiguousarray(np.stack([np.asarray(a, dtype=complex) for a in arrays]))


class _FastForce(_Fast):
    def r(self, t, q, v, a, p):
        if not _real(q, v, a, p):
            return self.g.r(t, q, v, a, p)
        return self.fr(self.consts(p), t, q, v, a, p)

    def jacobians(self, t, q, v, a, p):
        if not _real(q, v, a, p):
            return self.g.jacobians(t, q, v, a, p)
        return self.fj(self.consts(p), t, q, v, a, p)

    def r_p(self, t, q, v, a, p, cols=None):
        """∂r/∂p of the local columns ``cols`` (the adjoint step's): the kind's ``fr_p`` on
        ``pconsts``, or the numpy method (complex state, no kernel)."""
        if cols is None or not hasattr(self, "fr_p") or not _real(q, v, a, p):
            return self.g.r_p(t, q, v, a, p, cols)
        return self.fr_p(self.pconsts(p, cols), t, q, v, a, p)


class _FastConstraint(_Fast):
    def phi(self, t, q, p):
        return self.fphi(self.consts(p), t, q, p) if _real(q, p) else self.g.phi(t, q, p)

    def phi_q(self, t, q, p):
        return self.fphi_q(self.consts(p), t, q, p) if _real(q, p) else self.g.phi_q(t, q, p)

    def gamma(self, t, q, v, p):
        return self.fgamma(self.consts(p), t, q, v, p) if _real(q, v, p) else self.g.gamma(t, q, v, p)

    def phi_t(self, t, q, p):                 # scleronomic kinds only (numpy: zeros)
        if not _real(q, p):
            return self.g.phi_t(t, q, p)
        return np.zeros((q.shape[0], self.g.m))

    def phi_t_q(self, t, q, p):
        """∂Φ_t/∂q = 0: Φ_t of every kind here is zero or (the driver's −f′(t)) independent
        of q (the adjoint step's; numpy: the complex step of it, zeros)."""
        if not _real(q, p):
            return self.g.phi_t_q(t, q, p)
        return np.zeros((q.shape[0], self.g.m, self.g.nq))

    def hess_lam(self, t, q, p, lam):
        if not _real(q, p, lam) or not hasattr(self, "fhess"):
            return self.g.hess_lam(t, q, p, lam)
        return self.fhess(self.consts(p), t, q, p, lam)

    def phi_q_w_q(self, t, q, p, w):
        if not _real(q, p, w) or not hasattr(self, "fphi_q_w_q"):
            return self.g.phi_q_w_q(t, q, p, w)
        return self.fphi_q_w_q(self.consts(p), t, q, p, w)

    # the design derivatives of the adjoint step (the local columns ``cols``): the kind's
    # ``fdesign`` on ``pconsts`` (what 0: ∂Φ/∂p, 1: ∂(Φ_qᵀλ)/∂p, 2: ∂(Φ_q w)/∂p), or numpy
    def _design(self, t, q, p, cols, lam, w, what, name, *extra):
        if cols is None or not hasattr(self, "fdesign") or not _real(q, p, lam, w):
            return getattr(self.g, name)(t, q, p, *extra, cols)
        z = np.zeros((0, 1))
        return self.fdesign(self.pconsts(p, cols), q, z if lam is None else np.ascontiguousarray(lam, dtype=float),
                            z if w is None else np.ascontiguousarray(w, dtype=float), what)

    def phi_p(self, t, q, p, cols=None):
        return self._design(t, q, p, cols, None, None, 0, "phi_p")

    def phi_qT_lam_p(self, t, q, p, lam, cols=None):
        return self._design(t, q, p, cols, lam, None, 1, "phi_qT_lam_p", lam)

    def phi_q_w_p(self, t, q, p, w, cols=None):
        return self._design(t, q, p, cols, None, w, 2, "phi_q_w_p", w)

    def phi_t_p(self, t, q, p, cols=None):
        """∂Φ_t/∂p = 0: Φ_t of the scleronomic kinds is zero for every p (the driver's is not:
        it keeps the numpy method)."""
        if cols is None or not _real(q, p):
            return self.g.phi_t_p(t, q, p, cols)
        return np.zeros((q.shape[0], self.g.m, len(cols)))


class Gravity(_FastForce):
    """r independent of the state: the numpy r at q = 0, once per p."""
    def setup(self, p):
        z = np.zeros((p.shape[0], self.g.nq))
        return self.g.r(0.0, z, z, z, p)

    def fr(self, C, t, q, v, a, p):
        return C

    def fj(self, C, t, q, v, a, p):
        return None, None, None

    pstack = staticmethod(_dstack)

    def fr_p(self, dr, t, q, v, a, p):          # constant in the state
        return dr


class Inertia(_FastForce):
    """r = M a, M the numpy ``mass(p)`` (constant)."""
    def setup(self, p):
        return np.ascontiguousarray(self.g.mass(p))

    def fr(self, M, t, q, v, a, p):
        return matvec(M, a)

    def fj(self, M, t, q, v, a, p):
        return None, None, M

    pstack = staticmethod(_dstack)

    def fr_p(self, dM, t, q, v, a, p):          # ∂(M a)/∂p = (∂M/∂p) a
        return lin_p(dM, a, 0)


class BendingDamping(_FastForce):
    """r = r_v v with the numpy closed-form r_v = β_b EI K ⊗ I₃ (constant), r_q = 0."""
    def setup(self, p):
        z = np.zeros((p.shape[0], 12))
        rq, rv, _ = self.g.jacobians(0.0, z, z, z, p)
        return np.zeros(rq.shape), np.ascontiguousarray(rv)

    def fr(self, C, t, q, v, a, p):
        return matvec(C[1], v)

    def fj(self, C, t, q, v, a, p):
        return C[0], C[1], None

    @staticmethod
    def pstack(cs):
        return _dstack([C[1] for C in cs])

    def fr_p(self, dRv, t, q, v, a, p):         # ∂(r_v v)/∂p = (∂r_v/∂p) v
        return lin_p(dRv, v, 0)


class Elastic(_FastForce):
    def setup(self, p):
        from ..flexible import ancf
        A, I = self.g.section(p)
        l = ancf._elem(p)
        return (p[:, 3] * A, p[:, 3] * I, l, np.ascontiguousarray(ancf.axial4(l)), np.ascontiguousarray(ancf.bend4(l)))

    def fr(self, C, t, q, v, a, p):
        return elastic(q, *C, False)[0]

    def fj(self, C, t, q, v, a, p):
        return elastic(q, *C, True)[1], None, None

    @staticmethod
    def pstack(cs):
        return tuple(_cstack([C[i] for C in cs]) for i in range(5))

    def fr_p(self, PC, t, q, v, a, p):
        return elastic_p(q, *PC)


class AxialDamping(_FastForce):
    def setup(self, p):
        from ..flexible import ancf
        A, _ = self.g.section(p)
        return p[:, 6] * p[:, 3] * A / ancf._elem(p)

    def fr(self, c, t, q, v, a, p):
        return axial_damping(q, v, c, False)[0]

    def fj(self, c, t, q, v, a, p):
        _, rq, rv = axial_damping(q, v, c, True)
        return rq, rv, None

    pstack = staticmethod(_dstack)

    def fr_p(self, dc, t, q, v, a, p):          # r linear in c = β EA/l: ∂r/∂p = r(c = 1) ∂c/∂p
        return axial_damping(q, v, np.ones(q.shape[0]), False)[0][:, :, None] * dc[:, None, :]


def _weights(kind, p):
    """(w, w′) (ne, 4) of a side's point: natural (1, x̄, ȳ, z̄) and None; beam S, S′ weights."""
    from ..flexible.ancf import beam_point_matrices
    if kind == "natural":
        return np.ascontiguousarray(np.c_[np.ones(p.shape[0]), p[:, 0:3]]), None
    S, Sp = beam_point_matrices(p, dim=3), beam_point_matrices(p, deriv=True, dim=3)
    return np.ascontiguousarray(S[:, 0, 0::3]), np.ascontiguousarray(Sp[:, 0, 0::3])


def _side_weights(g, p):
    from ..flexible.ancf3d_joints import SIDE_NP
    ka, kb = g.kinds
    pa, pb = SIDE_NP[ka], SIDE_NP[kb]
    return _weights(ka, p[:, :pa])[0], _weights(kb, p[:, pa:pa + pb])[0], pa + pb


class Orthonormality(_FastConstraint):
    def setup(self, p):
        return None

    def fphi(self, C, t, q, p):
        return orthonormality(q, q, 0)[:, :, 0]

    def fphi_q(self, C, t, q, p):
        return orthonormality(q, q, 1)

    def fgamma(self, C, t, q, v, p):
        return orthonormality(q, v, 2)[:, :, 0]

    def fhess(self, C, t, q, p, lam):
        return ortho_second(np.ascontiguousarray(lam, dtype=np.float64), np.zeros((0, 9)), 0)

    def fphi_q_w_q(self, C, t, q, p, w):
        return ortho_second(np.zeros((0, 6)), np.ascontiguousarray(w, dtype=np.float64), 1)


class LinearSpherical(_FastConstraint):
    """Spherical joint of natural/beam points: Φ_q the numpy one (constant), Φ = Φ_q q, γ = 0."""
    def setup(self, p):
        return np.ascontiguousarray(self.g.phi_q(0.0, np.zeros((p.shape[0], self.g.nq)), p))

    def fphi(self, G, t, q, p):
        return matvec(G, q)

    def fphi_q(self, G, t, q, p):
        return G

    def fgamma(self, G, t, q, v, p):
        return np.zeros((q.shape[0], 3))

    def fhess(self, G, t, q, p, lam):                 # Φ linear in q: no second derivatives
        return np.zeros((q.shape[0], self.g.nq, self.g.nq))

    def fphi_q_w_q(self, G, t, q, p, w):
        return np.zeros(G.shape)

    pstack = staticmethod(_dstack)

    def fdesign(self, dG, q, lam, w, what):     # Φ = Φ_q(p) q: every design block a product with ∂Φ_q/∂p
        return lin_p(dG, (q, lam, w)[what], 1 if what == 1 else 0)


class BeamWeld(_FastConstraint):
    def setup(self, p):
        from ..flexible.ancf import BEAM_POINT_NP as n5
        wa, wpa = _weights("beam", p[:, :n5])
        wb, wpb = _weights("beam", p[:, n5:2 * n5])
        return wa, wpa, wb, wpb, np.cos(p[:, 2 * n5])

    def fphi(self, C, t, q, p):
        return weld(q, q, *C, 0)[:, :, 0]

    def fphi_q(self, C, t, q, p):
        return weld(q, q, *C, 1)

    def fgamma(self, C, t, q, v, p):
        return weld(q, v, *C, 2)[:, :, 0]

    def fhess(self, C, t, q, p, lam):
        return weld_second(q, *C[:4], np.ascontiguousarray(lam, dtype=np.float64), np.zeros((0, 24)), 0)

    def fphi_q_w_q(self, C, t, q, p, w):
        return weld_second(q, *C[:4], np.zeros((0, 4)), np.ascontiguousarray(w, dtype=np.float64), 1)

    @staticmethod
    def pstack(cs):
        return _cstack([np.stack(C[:4], axis=1) for C in cs]), _cstack([C[4] for C in cs])

    def fdesign(self, PC, q, lam, w, what):
        return weld_p(q, PC[0], PC[1], lam, w, what)


class PairDistance(_FastConstraint):
    def setup(self, p):
        wa, wb, o = _side_weights(self.g, p)
        return wa, wb, np.ascontiguousarray(p[:, o])

    def fphi(self, C, t, q, p):
        return pair_distance(q, q, *C, 0)[:, :, 0]

    def fphi_q(self, C, t, q, p):
        return pair_distance(q, q, *C, 1)

    def fgamma(self, C, t, q, v, p):
        return pair_distance(q, v, *C, 2)[:, :, 0]

    def fhess(self, C, t, q, p, lam):
        return pair_second(C[0], C[1], np.ascontiguousarray(lam, dtype=np.float64), np.zeros((0, 24)), 0)

    def fphi_q_w_q(self, C, t, q, p, w):
        return pair_second(C[0], C[1], np.zeros((0, 1)), np.ascontiguousarray(w, dtype=np.float64), 1)


class PairSpring(_FastForce):
    def setup(self, p):
        wa, wb, o = _side_weights(self.g, p)
        return wa, wb, np.ascontiguousarray(p[:, o:o + 3]), self.g.law == "linear"

    def fr(self, C, t, q, v, a, p):
        return pair_spring(q, v, *C, False)[0]

    def fj(self, C, t, q, v, a, p):
        _, rq, rv = pair_spring(q, v, *C, True)
        return rq, rv, None

    @staticmethod
    def pstack(cs):
        return _cstack([C[0] for C in cs]), _cstack([C[1] for C in cs]), _cstack([C[2] for C in cs]), cs[0][3]

    def fr_p(self, PC, t, q, v, a, p):
        return pair_spring_p(q, v, *PC)


class Driver(_FastConstraint):
    """The time function f(t) by its numpy code, once per (t, order) and design."""
    def setup(self, p):
        return np.ascontiguousarray(p[:, 0:2]), {"x": 0, "y": 1}.get(self.g.coordinate, 2), {}

    def _f(self, C, t, p, order):
        memo = C[2]
        if (t, order) not in memo:
            if len(memo) > 16:
                memo.clear()
            memo[(t, order)] = np.ascontiguousarray(self.g.function(t, p[:, 2:], order), dtype=float) \
                * np.ones(p.shape[0])
        return memo[(t, order)]

    def fphi(self, C, t, q, p):
        return driver(q, q, C[0], C[1], self._f(C, t, p, 0), 0)[:, :, 0]

    def fphi_q(self, C, t, q, p):
        return driver(q, q, C[0], C[1], self._f(C, t, p, 0), 1)

    def fgamma(self, C, t, q, v, p):
        return driver(q, v, C[0], C[1], self._f(C, t, p, 2), 2)[:, :, 0]

    def phi_t(self, t, q, p):
        if not _real(q, p):
            return self.g.phi_t(t, q, p)
        C = self.consts(p)
        return driver(q, q, C[0], C[1], self._f(C, t, p, 1), 3)[:, :, 0]

    def phi_t_p(self, t, q, p, cols=None):          # Φ_t = −f′(t; p): the numpy method
        return self.g.phi_t_p(t, q, p, cols)

    def fhess(self, C, t, q, p, lam):
        return driver_second(q, C[0], C[1], np.ascontiguousarray(lam, dtype=np.float64), np.zeros((0, 3)), 0)

    def fphi_q_w_q(self, C, t, q, p, w):
        return driver_second(q, C[0], C[1], np.zeros((0, 1)), np.ascontiguousarray(w, dtype=np.float64), 1)


def _proxy_class(g):
    """The proxy class of group g, or None (its numpy methods then run)."""
    from ..flexible import ancf3d as A3, ancf3d_joints as AJ
    from ..spatial import natural as N, bodies as SB
    from ..model import joints as J
    t = type(g)
    linear = lambda: set(getattr(g, "kinds", ("rigid",))) <= {"natural", "beam"}   # noqa: E731
    if t in (A3.Ancf3Gravity, SB.SpatialGravity):
        return Gravity
    if t in (A3.Ancf3Inertia, N.NaturalInertia):
        return Inertia
    if issubclass(t, J._Driver) and all(getattr(t, m) is getattr(J._Driver, m)
                                        for m in ("_value", "phi", "phi_q", "phi_t", "gamma")):
        return Driver
    if t is A3.Ancf3BendingDamping:
        return BendingDamping
    if t is A3.Ancf3Elastic:
        return Elastic
    if t is A3.Ancf3AxialDamping:
        return AxialDamping
    if t is N.NaturalOrthonormality:
        return Orthonormality
    if t is AJ.SpatialBeamBeamWeld:
        return BeamWeld
    if issubclass(t, AJ._BeamPair) and not t.weld and linear():
        return LinearSpherical
    if issubclass(t, AJ._PairDistance) and linear():
        return PairDistance
    if issubclass(t, AJ._PairSpringDamper) and linear():
        return PairSpring
    return None


def fast_group(g):
    """The compiled proxy of group g (module docstring), or g itself without a kernel."""
    cls = _proxy_class(g)
    return g if cls is None else cls(g)


def warm_up():
    """Compile (or load) every kernel above on a tiny input of the types the step passes."""
    q, v = np.ones((1, 24)), np.ones((1, 24))
    w = np.array([[1.0, 0.1, 0.2, 0.3]])
    one = np.ones(1)
    matvec(np.ones((1, 24, 24)), q)
    q12 = np.array([[0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.1, 0.0, 1.0, 0.0, 0.0]])
    for want in (False, True):
        elastic(q12, one, one, one, np.ones((1, 4, 4)), np.ones((1, 4, 4)), want)
        axial_damping(q12, q12, one, want)
        for lin in (False, True):
            pair_spring(q, v, w, 0.5 * w, np.ones((1, 3)), lin, want)
    for what in (0, 1, 2):
        orthonormality(q[:, :9], v[:, :9], what)
        weld(q, v, w, w, 0.5 * w, w, one, what)
        pair_distance(q, v, w, 0.5 * w, one, what)
    for what in (0, 1, 2, 3):
        driver(q[:, :3], v[:, :3], np.ones((1, 2)), 0, one, what)
    for what in (0, 1):
        ortho_second(np.ones((1, 6)), q[:, :9], what)
        pair_second(w, 0.5 * w, np.ones((1, 1)), q, what)
        weld_second(q, w, w, 0.5 * w, w, np.ones((1, 4)), q, what)
        driver_second(q[:, :3], np.ones((1, 2)), 0, np.ones((1, 1)), q[:, :3], what)
        lin_p(np.ones((1, 3, 24, 2)), q if what == 0 else np.ones((1, 3)), what)
    W, c1 = np.ones((2, 1, 4, 4), complex), np.ones((2, 1), complex)
    for what in (0, 1, 2):
        weld_p(q, W, c1, np.ones((1, 4)), q, what)
    elastic_p(q12, c1, c1, c1 + 1.0, np.ones((2, 1, 4, 4), complex), np.ones((2, 1, 4, 4), complex))
    for lin in (False, True):
        pair_spring_p(q, v, np.ones((2, 1, 4), complex), 0.5 * np.ones((2, 1, 4), complex), np.ones((2, 1, 3), complex),
                      lin)
