"""Compiled element kernels of the vehicle kinds: the Iltis and the buggy (issue 19).

The kinds of configs/iltis.toml and configs/buggy-*.toml that compiled/spatial.py has
no kernel for — the point-to-point force elements (spatial/forces.py: SpatialSpring,
SpatialNonlinearSpringDamper, SpatialBumpStop), the tyre (spatial/tyre.py, on the roads
of spatial/road.py), the universal and rigid joints (spatial/joints.py) and the
revolute driver (spatial/drivers.py) — with the conventions of compiled/planar.py:

    R₁ += w r,   J₁₁ += w (c_v r_v + c_q r_q)                                  forces
    R₁ += w_f Φ_qᵀλ,  R₂ += Φ/(βh²),  J₁₂ += w_f Φ_qᵀ,  J₂₁ += Φ_q,  J₁₁ += h_w ∂(Φ_qᵀλ)/∂q

How the blocks are computed, and why they equal the numpy path's to round-off:

* force elements: r is the numpy formula written as scalar loops (``_p2p_r``,
  ``_tyre_r``); r_q and r_v by complex step over the 2·nq perturbations of (q, v),
  h = CS_H = 1e-30 — the numpy ``SpatialElement.jacobians`` (the tyre's path, and the
  reference path of the point-to-point kinds, whose closed forms force_kernels.py
  checks against it).  Complex step has no subtractive cancellation: each entry is the
  derivative to round-off, so both sides agree to round-off whichever they use.
* joints: the closed forms of joint_kernels.py (spherical and dot-1 primitives) as
  compiled/spatial.joint, for any list of dot-1 vector pairs (universal: (u_a, u_b);
  rigid: (x_a, h2_b), (x_a, h3_b), (y_a, h3_b));
* the revolute driver: Φ = c₂ cos f − c₁ sin f, c_k = (A_a n_k')ᵀ(A_b m_b'), so Φ_q and
  ∂(Φ_qᵀλ)/∂q are the dot-1 blocks weighted by cos f and −sin f (the numpy kind takes
  the Hessian by complex step of Φ_qᵀλ: exact for this form, same numbers to round-off).

Real or complex p (the complex-step ∂R/∂ρ runs every kernel with a complex p; the
force Jacobians then are not requested).  Branches of the smooth switches
(model/smooth.py) test real parts only, as the numpy ones.
"""
import numpy as np
from ._jit import njit

from ..model.component import CS_H
from .planar import _add, _add_block, _loc, _timefn
from .spatial import _as, _hess, _mtm, _mtv, _mv, _rotjac, _scatter_rows, _sides

#: point-to-point force laws (``p2p``'s law argument)
LINEAR, ILTIS_STRUT, BUMP_STOP = 0, 1, 2
#: the tyre's kind code in ``_force_r`` (after the point-to-point laws)
TYRE = 3
#: time-function code of spatial drivers beyond planar.CONSTANT/POLYNOMIAL/HARMONIC
SINE_PULSES = 3
#: road codes of ``rp[0]`` (road_params): spatial/road.py's kinds
PLANE, FLAT, BUMP, STEP, SINUSOID = 0, 1, 2, 3, 4


def road_params(road):
    """The float array (code, z₀, s_x, s_y, H, L, x₀, A, λ, φ) of a spatial/road.py road,
    or None for a kind without a compiled form (the table road)."""
    from ..spatial import road as rd
    if road is None or isinstance(road, rd.PlaneRoad):
        r = road or rd.PlaneRoad()
        return np.array([PLANE, r.z0, r.sx, r.sy, 0, 1, 0, 0, 1, 0], float)
    if isinstance(road, rd.ShapeRoad):
        code = {"flat": FLAT, "bump": BUMP, "step": STEP, "sinusoid": SINUSOID}[road.kind]
        return np.array([code, road.z0, 0, 0, road.H, road.L, road.x0, road.A, road.lam, road.phase], float)
    return None


# ----------------------------------------------------------------------------- scalar helpers

@njit(cache=True)
def _ramp(x, d):
    """smooth.ramp g_δ(x)."""
    if x.real <= 0.0:
        return 0.0 * x
    if x.real >= d.real:
        return x - 0.5 * d
    xi = x / d
    return x * xi * xi * (1.0 - 0.5 * xi)


@njit(cache=True)
def _step(x, d):
    """smooth.step σ_δ(x)."""
    if x.real <= 0.0:
        return 0.0 * x
    if x.real >= d.real:
        return 1.0 + 0.0 * x
    xi = x / d
    return xi * xi * (3.0 - 2.0 * xi)


@njit(cache=True)
def _positive(F, w):
    """smooth.positive P_w(F)."""
    if F.real <= 0.0:
        return 0.0 * F
    if F.real >= w.real:
        return F
    xi = F / w
    return w * xi * xi * xi * (6.0 + xi * (-8.0 + 3.0 * xi))


@njit(cache=True)
def _clip_unit(s, w):
    return s - _ramp(s - 1.0 + w, 2.0 * w) + _ramp(-s - 1.0 + w, 2.0 * w)


@njit(cache=True)
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(cache=True)
def _cross(a, b):
    out = np.empty(3, a.dtype)
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]
    return out


@njit(cache=True)
def _road(rp, x, y):
    """(h, h_x, h_y) of road.py's kinds at (x, y) (real or complex)."""
    code = int(rp[0])
    zero = 0.0 * x + 0.0 * y
    if code == PLANE:
        return rp[1] + rp[2] * x + rp[3] * y, rp[2] + 0.0 * x, rp[3] + 0.0 * y
    if code == FLAT:
        return rp[1] + zero, zero, zero
    if code == SINUSOID:
        k = 2 * np.pi / rp[8]
        return (rp[1] + rp[7] * np.sin(k * x + rp[9]) + zero, rp[7] * k * np.cos(k * x + rp[9]) + zero, zero)
    H, L = rp[4], rp[5]
    xi = (x - rp[6]) / L
    inside = xi.real > 0.0 and xi.real < 1.0
    if code == BUMP:
        if not inside:
            return rp[1] + zero, zero, zero
        s, c = np.sin(np.pi * xi), np.cos(np.pi * xi)
        return rp[1] + H * s ** 4, H * 4 * s ** 3 * c * np.pi / L, zero
    if inside:
        return (rp[1] + H * xi ** 3 * (10 - 15 * xi + 6 * xi * xi), H * 30 * xi * xi * (1 - xi) ** 2 / L, zero)
    if xi.real >= 1.0:
        return rp[1] + (H + zero), zero, zero
    return rp[1] + zero, zero, zero


@njit(cache=True)
def _point_load(Jp, F, out, k0, sign):
    """out[k0:k0+7] += sign (F, J(p, s')ᵀF): a global force F at the body point s', with
    Jp = J(p, s') = ∂(A(p)s')/∂p."""
    for i in range(3):
        out[k0 + i] += sign * F[i]
    for k in range(4):
        out[k0 + 3 + k] += sign * (Jp[0, k] * F[0] + Jp[1, k] * F[1] + Jp[2, k] * F[2])


@njit(cache=True)
def _Jv(Jp, x, i):
    """(J x)_i for a 3×4 J and a 4-vector x."""
    return Jp[i, 0] * x[0] + Jp[i, 1] * x[1] + Jp[i, 2] * x[2] + Jp[i, 3] * x[3]


# ----------------------------------------------------------------------------- force residuals

@njit(cache=True)
def _tension(law, l, ld, pv):
    """T(l, l̇) of forces.SpatialSpring / SpatialNonlinearSpringDamper / SpatialBumpStop."""
    if law == LINEAR:
        return pv[8] * (l - pv[10]) + pv[9] * ld
    if law == ILTIS_STRUT:
        k, c, a0, a2, a3, d2, d3, d4, vlo, vhi = (pv[8], pv[9], pv[10], pv[11], pv[12], pv[13], pv[14],
                                                    pv[15], pv[16], pv[17])
        Fs = a0 + l * (k + l * (a2 + l * a3))
        if ld.real <= vlo.real:
            vb = vlo
        elif ld.real >= vhi.real:
            vb = vhi
        else:
            return Fs + ld * (c + ld * (d2 + ld * (d3 + ld * d4)))
        Fb = vb * (c + vb * (d2 + vb * (d3 + vb * d4)))
        slope = c + vb * (2 * d2 + vb * (3 * d3 + vb * 4 * d4))
        return Fs + (Fb + slope * (ld - vb))
    k, s0, delta, c = pv[8], pv[9], pv[10], pv[11]
    x = s0 - l
    return -_positive(k * _ramp(x, delta) - c * _step(x, delta) * ld, k * delta)


@njit(cache=True)
def _p2p_r(law, ql, vl, pv):
    """forces.PointToPoint.r: (−F, −J_aᵀF, F, J_bᵀF), F = T(l, l̇) e (force_kernels.py);
    scalar loops (this sits inside 14 complex-step evaluations per element)."""
    pa, pb = ql[3:7].copy(), ql[10:14].copy()
    pa[0] += pv[3]
    pb[0] += pv[7]
    Ja, Jb = _rotjac(pa, pv[0:3]), _rotjac(pb, pv[4:7])
    d = np.empty(3, ql.dtype)
    dd = np.empty(3, ql.dtype)
    for i in range(3):
        d[i] = (ql[7 + i] + 0.5 * _Jv(Jb, pb, i)) - (ql[i] + 0.5 * _Jv(Ja, pa, i))
        dd[i] = vl[7 + i] + _Jv(Jb, vl[10:14], i) - vl[i] - _Jv(Ja, vl[3:7], i)
    l = np.sqrt(_dot(d, d))
    for i in range(3):
        d[i] = d[i] / l
    T = _tension(law, l, _dot(d, dd), pv)
    for i in range(3):
        d[i] = T * d[i]
    out = np.zeros(14, ql.dtype)
    _point_load(Ja, d, out, 0, -1.0)
    _point_load(Jb, d, out, 7, 1.0)
    return out


@njit(cache=True)
def _tyre_r(ql, vl, pv, rp):
    """tyre.Tyre.r (eqs. 5.6–5.10 of its module docstring) at one wheel."""
    pe = ql[3:7].copy()
    pe[0] += pv[3]
    sc = pv[0:3]
    up = pv[4:7] / np.sqrt(_dot(pv[4:7], pv[4:7]))
    Jc, Ju = _rotjac(pe, sc), _rotjac(pe, up)
    c = np.empty(3, ql.dtype)
    vc = np.empty(3, ql.dtype)
    u = np.empty(3, ql.dtype)
    for i in range(3):
        c[i] = ql[i] + 0.5 * _Jv(Jc, pe, i)
        vc[i] = vl[i] + _Jv(Jc, vl[3:7], i)
        u[i] = 0.5 * _Jv(Ju, pe, i)
    ed = vl[3:7]
    w = np.empty(3, ql.dtype)                   # ω = 2 (e0 ė − ė0 e + e × ė)
    exd = _cross(pe[1:4], ed[1:4])
    for i in range(3):
        w[i] = 2.0 * (pe[0] * ed[1 + i] - ed[0] * pe[1 + i] + exd[i])
    h, hx, hy = _road(rp, c[0], c[1])
    N = np.sqrt(1.0 + hx * hx + hy * hy)
    n = np.empty(3, ql.dtype)
    n[0], n[1], n[2] = -hx / N, -hy / N, (1.0 + 0.0 * hx) / N
    r = (c[2] - h) / N
    R, kn, cn, mux, muy, kc, ac, veps, wsat, delta = (pv[7], pv[8], pv[9], pv[10], pv[11], pv[12], pv[13],
                                                      pv[14], pv[15], pv[16])
    x = R - r
    Fn = _positive(kn * _ramp(x, delta) + cn * _step(x, delta) * (-_dot(n, vc)), kn * delta)
    un = _cross(u, n)
    b = un / np.sqrt(_dot(un, un))
    vslip = vc - _cross(w, r * n)
    Vx = _dot(b, vc)
    kappa = -_dot(b, vslip) / np.sqrt(Vx * Vx + veps * veps)
    vt = vc - _dot(n, vc) * n
    sin_a = _dot(n, _cross(b, vt)) / np.sqrt(_dot(vt, vt) + veps * veps)
    alpha = -np.arcsin(sin_a)
    cx = _clip_unit(kappa / kc, wsat)
    cy = _clip_unit(alpha / ac, wsat)
    scale = 1.0 / np.sqrt(1.0 + _ramp(cx * cx + cy * cy - 1.0, 2.0 * wsat))
    Fx, Fy = mux * Fn * cx * scale, muy * Fn * cy * scale
    Ft = Fx * b + Fy * _cross(n, b)
    F = Fn * n + Ft
    T = _cross(-r * n, Ft)
    out = np.zeros(7, ql.dtype)
    _point_load(Jc, F, out, 0, -1.0)
    eT = pe[1] * T[0] + pe[2] * T[1] + pe[3] * T[2]
    exT = _cross(pe[1:4], T)
    out[3] -= -2.0 * eT
    for i in range(3):
        out[4 + i] -= 2.0 * (pe[0] * T[i] - exT[i])
    return out


@njit(cache=True)
def _force_r(kind, ql, vl, pv, rp):
    if kind == TYRE:
        return _tyre_r(ql, vl, pv, rp)
    return _p2p_r(kind, ql, vl, pv)


@njit(cache=True)
def force(kind, q, v, p, qidx, pidx, rp, R, J, w, cq, cv, want_J):
    """One group of a force kind (``kind``: LINEAR, ILTIS_STRUT, BUMP_STOP or TYRE):
    R₁ += w r; J₁₁ += w (c_q r_q + c_v r_v) by complex step, column j = Im r(q + i c_q h e_j,
    v + i c_v h e_j)/h — the derivative along (c_q e_j, c_v e_j), i.e. c_q r_q[:, j] +
    c_v r_v[:, j], in one evaluation instead of two (module docstring)."""
    nq = qidx.shape[1]
    npar = pidx.shape[1]
    B = np.zeros((nq, nq))
    for e in range(qidx.shape[0]):
        idx, pe = qidx[e], pidx[e]
        ql, vl = _as(_loc(q, idx), p), _as(_loc(v, idx), p)
        pv = np.empty(npar, p.dtype)
        for k in range(npar):
            pv[k] = p[pe[k]]
        r = _force_r(kind, ql, vl, pv, rp)
        for k in range(nq):
            _add(R, idx[k], w * r[k])
        if not want_J:
            continue
        qc = np.zeros(nq, np.complex128)
        vc = np.zeros(nq, np.complex128)
        pc = np.zeros(npar, np.complex128)
        for k in range(nq):
            qc[k] = ql[k].real
            vc[k] = vl[k].real
        for k in range(npar):
            pc[k] = pv[k].real
        for j in range(nq):
            qc[j] = complex(ql[j].real, cq * CS_H)
            vc[j] = complex(vl[j].real, cv * CS_H)
            rj = _force_r(kind, qc, vc, pc, rp)
            qc[j] = ql[j].real
            vc[j] = vl[j].real
            for i in range(nq):
                B[i, j] = rj[i].imag / CS_H
        _add_block(J, idx, B, w)


# ----------------------------------------------------------------------------- constraints

@njit(cache=True)
def _vec(p, pe, i):
    out = np.zeros(3, p.dtype)
    for k in range(3):
        out[k] = p[pe[8 + 3 * i + k]]
    return out


@njit(cache=True)
def _dot1(pa, pb, u, w_, Gq, r, H, wgt, sgn, want_J):
    """Dot-1 primitive c = (A_a u')ᵀ(A_b w'): returns c; Gq[r, :] += sgn ∂c/∂q and, when
    want_J, H += wgt ∂²c/∂q² (joint_kernels.py)."""
    Jau, Jbw = _rotjac(pa, u), _rotjac(pb, w_)
    a_, b = 0.5 * _mv(Jau, pa), 0.5 * _mv(Jbw, pb)
    ga, gb = _mtv(Jau, b), _mtv(Jbw, a_)
    for k in range(4):
        Gq[r, 3 + k] += sgn * ga[k]
        Gq[r, 10 + k] += sgn * gb[k]
    if want_J:
        Kba, Kab, Jab = _hess(b, u), _hess(a_, w_), _mtm(Jau, Jbw)
        for j in range(4):
            for k in range(4):
                H[3 + j, 3 + k] += wgt * Kba[j, k]
                H[10 + j, 10 + k] += wgt * Kab[j, k]
                H[3 + j, 10 + k] += wgt * Jab[j, k]
                H[10 + k, 3 + j] += wgt * Jab[j, k]
    return _dot(a_, b)


@njit(cache=True)
def joint(q, lam, p, qidx, pidx, rows, pairs, n, R, J, wf, bh2, hw, want_J):
    """joints.SpatialUniversal / SpatialRigid: the spherical rows Φ = P_a − P_b, then one
    dot-1 row per vector pair (i, j) of ``pairs`` (u'_a = vector i, w'_b = vector j of
    the element's parameters)."""
    me = 3 + pairs.shape[0]
    for e in range(qidx.shape[0]):
        idx, pe, rw = qidx[e], pidx[e], rows[e]
        ql, pa, pb, sa, sb = _sides(q, p, idx, pe)
        Gq = np.zeros((me, 14), p.dtype)
        H = np.zeros((14, 14), p.dtype)
        phi = np.zeros(me, p.dtype)
        lr = np.zeros(me, p.dtype)
        for r in range(me):
            if rw[r] >= 0:
                lr[r] = lam[rw[r]]
        Ja, Jb = _rotjac(pa, sa), _rotjac(pb, sb)
        Asa, Asb = 0.5 * _mv(Ja, pa), 0.5 * _mv(Jb, pb)
        for i in range(3):
            phi[i] = ql[i] + Asa[i] - ql[7 + i] - Asb[i]
            Gq[i, i] = 1.0
            Gq[i, 7 + i] = -1.0
            for k in range(4):
                Gq[i, 3 + k] = Ja[i, k]
                Gq[i, 10 + k] = -Jb[i, k]
        if want_J:
            Ka, Kb = _hess(lr[0:3], sa), _hess(lr[0:3], sb)
            for j in range(4):
                for k in range(4):
                    H[3 + j, 3 + k] += Ka[j, k]
                    H[10 + j, 10 + k] -= Kb[j, k]
        for r in range(pairs.shape[0]):
            phi[3 + r] = _dot1(pa, pb, _vec(p, pe, pairs[r, 0]), _vec(p, pe, pairs[r, 1]), Gq, 3 + r, H,
                               lr[3 + r], 1.0, want_J)
        _scatter_rows(idx, rw, phi, Gq, lr, H, n, R, J, wf, bh2, hw, want_J)


@njit(cache=True)
def _timefn_v(kind, nc, t, p, pe, k0):
    """planar._timefn, and timefunctions.SinePulses (kind SINE_PULSES): Σ amp_i
    (½ sin 2πτ − ¼ sin 4πτ) on 0 < τ = (t − t0_i)/dur_i < 1."""
    if kind != SINE_PULSES:
        return _timefn(kind, nc, t, p, pe, k0) + 0.0 * p[pe[k0]]
    out = 0.0 * p[pe[k0]]
    w = 2.0 * np.pi
    for i in range(nc // 3):
        amp, t0, dur = p[pe[k0 + 3 * i]], p[pe[k0 + 3 * i + 1]], p[pe[k0 + 3 * i + 2]]
        tau = (t - t0) / dur
        val = 0.5 * np.sin(w * tau) - 0.25 * np.sin(2 * w * tau)
        if tau.real > 0.0 and tau.real < 1.0:
            out = out + amp * val
    return out


@njit(cache=True)
def revolute_driver(q, lam, p, qidx, pidx, rows, meta, n, t, R, J, wf, bh2, hw, want_J):
    """drivers.RevoluteDriver: Φ = c₂ cos f − c₁ sin f, c_k = (A_a n_k')ᵀ(A_b m_b');
    p = (s'_a, g_a, s'_b, g_b, n1'_a, n2'_a, m'_b, coefficients of f), meta = (time
    function kind, number of coefficients)."""
    for e in range(qidx.shape[0]):
        idx, pe, rw = qidx[e], pidx[e], rows[e]
        if rw[0] < 0:
            continue
        ql, pa, pb, sa, sb = _sides(q, p, idx, pe)
        f = _timefn_v(meta[e, 0], meta[e, 1], t, p, pe, 17)
        C, S = np.cos(f), np.sin(f)
        l = lam[rw[0]] + 0.0 * C
        Gq = np.zeros((1, 14), p.dtype)
        H = np.zeros((14, 14), p.dtype)
        mb = _vec(p, pe, 2)
        c2 = _dot1(pa, pb, _vec(p, pe, 1), mb, Gq, 0, H, l * C, C, want_J)
        c1 = _dot1(pa, pb, _vec(p, pe, 0), mb, Gq, 0, H, -(l * S), -S, want_J)
        phi = np.zeros(1, p.dtype)
        phi[0] = c2 * C - c1 * S
        lr = np.zeros(1, p.dtype)
        lr[0] = l
        _scatter_rows(idx, rw, phi, Gq, lr, H, n, R, J, wf, bh2, hw, want_J)
