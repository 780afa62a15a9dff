"""Technique (c) of issue 19: the whole model residual as a CasADi SX graph, its Newton
matrix by CasADi AD, both in one casadi Function called once per Newton iterate.

R(q, v, a, λ) is built element by element from the same formulas as parmbs
(Inertia, Gravity, Spring, Revolute; ground slots are constant zeros, a dropped
row reads λ = 0), R₂ = Φ/(βh²), and J = [βh² R_q + γh R_v + R_a, R_λ].  Modes:
``vm`` — CasADi's SX virtual machine; ``jit`` — CasADi generates C and compiles it
with the system C compiler (``compiler = shell``, -O2), loaded into the process.
"""
import os
import tempfile

import casadi as ca
import numpy as np


def _rot(th, s0, s1):
    c, sn = ca.cos(th), ca.sin(th)
    return c * s0 - sn * s1, sn * s0 + c * s1


class CasadiModel:
    def __init__(self, ma, p, h, mode="vm", beta=0.25, gamma=0.5):
        n, m, N = ma.n, ma.m, ma.N
        bh2, gh = beta * h * h, gamma * h
        q, v, a, lam = (ca.SX.sym(k, s) for k, s in (("q", n), ("v", n), ("a", n), ("lam", m)))
        Z = ca.SX(1, 1)
        X = lambda x, i: Z if i < 0 else x[int(i)]
        L = lambda i: Z if i < 0 else lam[int(i)]
        R = [ca.SX(0)] * N

        def add(i, val):
            if i >= 0:
                R[int(i)] = R[int(i)] + val

        for qi, pi_, _ in ma.groups["Inertia"]:
            for e in range(len(qi)):
                mm, I = p[pi_[e, 0]], p[pi_[e, 1]]
                for k, c in enumerate((mm, mm, I)):
                    add(qi[e, k], c * X(a, qi[e, k]))
        for qi, pi_, _ in ma.groups["Gravity"]:
            for e in range(len(qi)):
                mm, gx, gy = p[pi_[e]]
                add(qi[e, 0], -mm * gx)
                add(qi[e, 1], -mm * gy)
        for qi, pi_, _ in ma.groups["Spring"]:
            for e in range(len(qi)):
                ql = [X(q, i) for i in qi[e]]
                vl = [X(v, i) for i in qi[e]]
                pe = p[pi_[e]]
                sa, sb = (pe[0] - pe[2], pe[1] - pe[3]), (pe[4] - pe[6], pe[5] - pe[7])
                k, c, l0 = pe[8], pe[9], pe[10]
                ra, rb = _rot(ql[2], *sa), _rot(ql[5], *sb)
                da, db = (-ra[1], ra[0]), (-rb[1], rb[0])
                d = (ql[3] + rb[0] - ql[0] - ra[0], ql[4] + rb[1] - ql[1] - ra[1])
                l = ca.sqrt(d[0] ** 2 + d[1] ** 2)
                e_ = (d[0] / l, d[1] / l)
                G = (-e_[0], -e_[1], -(e_[0] * da[0] + e_[1] * da[1]), e_[0], e_[1], e_[0] * db[0] + e_[1] * db[1])
                ldot = sum(G[j] * vl[j] for j in range(6))
                F = k * (l - l0) + c * ldot
                for j in range(6):
                    add(qi[e, j], F * G[j])
        for qi, pi_, rows in ma.groups["Revolute"]:
            for e in range(len(qi)):
                ql = [X(q, i) for i in qi[e]]
                pe = p[pi_[e]]
                ra, rb = _rot(ql[2], pe[0] - pe[2], pe[1] - pe[3]), _rot(ql[5], pe[4] - pe[6], pe[5] - pe[7])
                da, db = (-ra[1], ra[0]), (-rb[1], rb[0])
                l0, l1 = L(rows[e, 0]), L(rows[e, 1])
                Gt = (l0, l1, l0 * da[0] + l1 * da[1], -l0, -l1, -(l0 * db[0] + l1 * db[1]))
                for j in range(6):
                    add(qi[e, j], Gt[j])
                phi = (ql[0] + ra[0] - ql[3] - rb[0], ql[1] + ra[1] - ql[4] - rb[1])
                for r, ph in zip(rows[e], phi):
                    if r >= 0:
                        R[n + int(r)] = R[n + int(r)] + ph / bh2
        Rv = ca.vertcat(*R)
        J = ca.horzcat(bh2 * ca.jacobian(Rv, q) + gh * ca.jacobian(Rv, v) + ca.jacobian(Rv, a), ca.jacobian(Rv, lam))
        opts = {}
        if mode == "jit":
            opts = {"jit": True, "compiler": "shell", "jit_options": {"flags": ["-O2"], "verbose": False}}
        cwd = os.getcwd()
        os.chdir(tempfile.mkdtemp(prefix="casadi-jit-"))     # the shell compiler writes into the cwd
        try:
            self.f = ca.Function("RJ", [q, v, a, lam], [Rv, ca.densify(J)], opts)
        finally:
            os.chdir(cwd)

    def eval_RJ(self, q, v, a, lam):
        R, J = self.f(q, v, a, lam)
        return R.full().ravel(), J.full()
