"""Technique (b2) of issue 19: plain numpy written for the step, no compilation.

Same formulas as numba_kernels.py (parmbs's Inertia, Gravity, Spring, Revolute), but
vectorized over the elements of each kind with as few numpy calls as the formulas
allow, because on a small model every numpy call costs ~1 µs of dispatch whatever its
size.  What is done once per design (p fixed during a run): the COM-relative offsets
s = P̄ − c̄, k, c, l₀, the mass diagonal, the constant gravity residual, and every
scatter key.  Per Newton iterate: one gather of q, v, a, λ; per kind its local
residual and blocks; one ``bincount`` for R and one for the dense J (−1 entries go to
a spare slot); ``numpy.linalg.solve``.
"""
import numpy as np


class LeanModel:
    def __init__(self, ma, p, h, beta=0.25, gamma=0.5):
        n, m, N = ma.n, ma.m, ma.N
        self.n, self.m, self.N = n, m, N
        self.bh2, self.gh = beta * h * h, gamma * h
        iq, ip, _ = ma.stacked("Inertia", 3, 2)
        gq, gp, _ = ma.stacked("Gravity", 3, 3)
        sq, sp, _ = ma.stacked("Spring", 6, 11)
        rq, rp, rr = ma.stacked("Revolute", 6, 8, 2)
        # per design: inertia diagonal, gravity residual (constant)
        mdiag = np.zeros(n + 1)
        np.add.at(mdiag, np.where(iq < 0, n, iq).ravel(), np.stack([p[ip[:, 0]], p[ip[:, 0]], p[ip[:, 1]]], -1).ravel())
        self.mdiag = mdiag[:n]
        rg = np.zeros(n + 1)
        np.add.at(rg, np.where(gq < 0, n, gq).ravel(),
                  np.stack([-p[gp[:, 0]] * p[gp[:, 1]], -p[gp[:, 0]] * p[gp[:, 2]], 0 * p[gp[:, 0]]], -1).ravel())
        self.rg = rg[:n]
        self.J0 = np.zeros((N, N))
        self.J0[np.arange(n), np.arange(n)] = self.mdiag           # r_a of the inertia (ca = 1)
        # springs: offsets of both points (ne, 2 points, 2), k, c, l0
        self.sq, self.rq = sq, rq
        self.s_s = np.stack([p[sp[:, 0:2]] - p[sp[:, 2:4]], p[sp[:, 4:6]] - p[sp[:, 6:8]]], 1)
        self.k, self.c, self.l0 = p[sp[:, 8]], p[sp[:, 9]], p[sp[:, 10]]
        self.s_r = np.stack([p[rp[:, 0:2]] - p[rp[:, 2:4]], p[rp[:, 4:6]] - p[rp[:, 6:8]]], 1)
        self.rr = rr
        # scatter keys: R (spring r, revolute Φ_qᵀλ, revolute Φ) and J (spring blocks,
        # revolute Φ_q and Φ_qᵀ, revolute Hessian θθ entries); −1 -> spare slot
        gi = lambda idx: np.where(idx < 0, N, idx)
        crow = np.where(rr < 0, N, n + rr)
        self.kR = np.concatenate([gi(sq).ravel(), gi(rq).ravel(), crow.ravel()])
        NN = N * N

        def key(r, c):
            return np.where((r >= N) | (c >= N), NN, r * N + c)
        Rs, Cs = np.broadcast_arrays(gi(sq)[:, :, None], gi(sq)[:, None, :])
        cr, cq = np.broadcast_arrays(crow[:, :, None], gi(rq)[:, None, :])          # (ne, 2, 6)
        th = gi(rq)[:, [2, 5]]
        self.kJ = np.concatenate([key(Rs, Cs).ravel(), key(cr, cq).ravel(), key(cq, cr).ravel(),
                                  key(th, th).ravel()])
        # constant entries of the revolute Φ_q (±1 on x, y)
        self.Gconst = np.zeros((len(rq), 2, 6))
        self.Gconst[:, 0, 0] = self.Gconst[:, 1, 1] = 1.0
        self.Gconst[:, 0, 3] = self.Gconst[:, 1, 4] = -1.0
        self.lam_ix = np.where(rr < 0, m, rr)

    def eval_RJ(self, q, v, a, lam):
        n, N, bh2, gh = self.n, self.N, self.bh2, self.gh
        qe, ve = np.append(q, 0.0), np.append(v, 0.0)       # index −1 reads the zero
        # -- springs --------------------------------------------------------------------
        qs, vs = qe[self.sq], ve[self.sq]                     # (ne, 6)
        th = qs[:, [2, 5]]                                    # (ne, 2)
        C, S = np.cos(th)[..., None], np.sin(th)[..., None]
        s = self.s_s                                          # (ne, 2, 2)
        rot = np.concatenate([C * s[..., :1] - S * s[..., 1:], S * s[..., :1] + C * s[..., 1:]], -1)
        drot = np.concatenate([-rot[..., 1:], rot[..., :1]], -1)       # A R s = (−(As)_y, (As)_x)
        d = qs[:, 3:5] + rot[:, 1] - qs[:, 0:2] - rot[:, 0]
        l = np.sqrt(np.einsum("ei,ei->e", d, d))
        e = d / l[:, None]
        ne = len(l)
        D = np.zeros((ne, 2, 6))
        D[:, 0, 0] = D[:, 1, 1] = -1.0
        D[:, 0, 3] = D[:, 1, 4] = 1.0
        D[:, :, 2], D[:, :, 5] = -drot[:, 0], drot[:, 1]
        G = np.einsum("ei,eik->ek", e, D)
        ldot = np.einsum("ek,ek->e", G, vs)
        F = self.k * (l - self.l0) + self.c * ldot
        P = np.eye(2) - e[:, :, None] * e[:, None, :]
        H = np.einsum("eik,eij,ejl->ekl", D, P, D) / l[:, None, None]
        er = np.einsum("ei,eji->ej", e, rot)                  # e·A s_a, e·A s_b
        H[:, 2, 2] += er[:, 0]
        H[:, 5, 5] -= er[:, 1]
        dF = self.k[:, None] * G + self.c[:, None] * np.einsum("ekl,el->ek", H, vs)
        Bs = (gh * self.c)[:, None, None] * G[:, :, None] * G[:, None, :] \
            + bh2 * (G[:, :, None] * dF[:, None, :] + F[:, None, None] * H)
        # -- revolute joints ----------------------------------------------------------
        qr = qe[self.rq]
        thr = qr[:, [2, 5]]
        C, S = np.cos(thr)[..., None], np.sin(thr)[..., None]
        s = self.s_r
        rr_ = np.concatenate([C * s[..., :1] - S * s[..., 1:], S * s[..., :1] + C * s[..., 1:]], -1)
        dr = np.concatenate([-rr_[..., 1:], rr_[..., :1]], -1)
        Gq = self.Gconst.copy()
        Gq[:, :, 2], Gq[:, :, 5] = dr[:, 0], -dr[:, 1]
        lam_e = np.append(lam, 0.0)[self.lam_ix]              # (ne, 2)
        phi = qr[:, 0:2] + rr_[:, 0] - qr[:, 3:5] - rr_[:, 1]
        lr = np.einsum("ei,eji->ej", lam_e, rr_)              # λ·A s_a, λ·A s_b
        # -- assembly -------------------------------------------------------------------
        vals = np.concatenate([(F[:, None] * G).ravel(), np.einsum("emk,em->ek", Gq, lam_e).ravel(),
                               (phi / bh2).ravel()])
        R = np.bincount(self.kR, vals, N + 1)[:N]
        R[:n] += self.mdiag * a + self.rg
        Jv = np.concatenate([Bs.ravel(), Gq.ravel(), Gq.ravel(), (bh2 * np.stack([-lr[:, 0], lr[:, 1]], -1)).ravel()])
        J = np.bincount(self.kJ, Jv, N * N + 1)[:N * N].reshape(N, N) + self.J0
        return R, J
