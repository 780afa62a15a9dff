"""Objective functions ψ = w·(Σ_k c_k g(t_k, x_k; p) + G(x_N; p)).

The time integral ∫ g dt is the trapezoidal sum with weights c_0 = c_N = h/2,
c_k = h — part of the discrete scheme, differentiated with it.  Each integrand is a
small complex-step-safe function of one body's (or spring's) local arrays; its
partial derivatives are complex-step derivatives, exact to round-off.
"""
import numpy as np

from ..model.component import cs_jacobian
from ..model.forces import Spring
from ..model.kinematics import point_position, point_velocity, point_acceleration, dot


def _point_dev(t, q, v, a, lam, p, ref):
    d = point_position(q, p[..., 0:2] - p[..., 2:4]) - ref
    return dot(d, d)


def _point_vel(t, q, v, a, lam, p, ref):
    d = point_velocity(q, v, p[..., 0:2] - p[..., 2:4])
    return dot(d, d)


def _point_acc(t, q, v, a, lam, p, ref):
    d = point_acceleration(q, v, a, p[..., 0:2] - p[..., 2:4])
    return dot(d, d)


def _angle(t, q, v, a, lam, p, ref):
    return q[..., 2] + 0.0 * p[..., 0]


def _angle_sq(t, q, v, a, lam, p, ref):
    return q[..., 2] ** 2 + 0.0 * p[..., 0]


def _spring_el(t, q, v, a, lam, p, ref):
    l, *_ = Spring.geometry(q, v, p)
    return (l - p[..., 10]) ** 2


def _reaction(t, q, v, a, lam, p, ref):
    return dot(lam, lam) + 0.0 * p[..., 0]


INTEGRANDS = {"point_deviation_sq": _point_dev, "point_velocity_sq": _point_vel,
              "point_acceleration_sq": _point_acc, "angle": _angle, "angle_sq": _angle_sq,
              "spring_elongation_sq": _spring_el, "reaction_sq": _reaction}


class Term:
    """One integrand (or terminal function) bound to its place in the model."""

    def __init__(self, system, kind, cfg):
        self.fn = INTEGRANDS[kind]
        self.kind = kind
        zero = [0]
        self.lrows = np.zeros(0, np.int64)
        if kind.startswith("point_"):
            qidx, _, pidx = system.point_offset(cfg.point)
        elif kind.startswith("angle"):
            qidx, pidx = system._qb(cfg.body), zero
        elif kind == "spring_elongation_sq":
            g, e = _find(system.forces, cfg.force)
            qidx, pidx = g.qidx[e], g.pidx[e]
        else:
            g, e = _find(system.constraints, cfg.joint)
            qidx, pidx, self.lrows = g.qidx[e], zero, g.rows[e]
        self.qidx, self.pidx = np.asarray(qidx), np.asarray(pidx)
        self.uses_ref = kind == "point_deviation_sq"

    def local(self, sys, t, x, p, ref):
        q, v, a, lam = x
        qe, ve, ae = sys.extend(q), sys.extend(v), sys.extend(a)
        return [t, qe[self.qidx], ve[self.qidx], ae[self.qidx], lam[self.lrows], p[self.pidx], ref]

    def value(self, sys, t, x, p, ref):
        return float(np.real(self.fn(*self.local(sys, t, x, p, ref))))

    def grads(self, sys, t, x, p, ref, design_map, nd):
        """∂g/∂(q, v, a, λ) as global vectors, ∂g/∂ρ (nd,) and ∂g/∂ref (2,)."""
        args = self.local(sys, t, x, p, ref)
        n = sys.n
        out = []
        for i in (1, 2, 3):
            d = np.zeros(n + 3)
            d[self.qidx] = cs_jacobian(self.fn, args, i)
            out.append(d[:n])
        dl = np.zeros(len(x[3]))
        if len(self.lrows):
            dl[self.lrows] = cs_jacobian(self.fn, args, 4)
        out.append(dl)
        dp = np.zeros(nd)
        cols = design_map[self.pidx]
        if np.any(cols >= 0):
            gp = cs_jacobian(self.fn, args, 5)
            np.add.at(dp, cols[cols >= 0], gp[cols >= 0])
        dref = cs_jacobian(self.fn, args, 6) if self.uses_ref else np.zeros(2)
        return out, dp, dref


def _find(groups, name):
    for g in groups:
        if name in g.names:
            return g, g.names.index(name)
    raise KeyError(name)


class Objective:
    """ψ of one ``[[objectives]]`` entry: weight × (trapezoidal integral + terminal)."""

    def __init__(self, system, cfg):
        self.name, self.weight, self.cfg = cfg.name, cfg.weight, cfg
        self.integrand = Term(system, cfg.integrand, cfg) if cfg.integrand else None
        self.terminal = Term(system, cfg.terminal, cfg) if cfg.terminal else None
        self.fixed_ref = None if cfg.reference is None else np.array(cfg.reference, float)
        self.point = cfg.point

    def reference(self, system, q0, p):
        """r_ref: fixed, or r_P(q₀) of the assembled initial configuration."""
        if self.fixed_ref is not None or self.point is None:
            return self.fixed_ref if self.fixed_ref is not None else np.zeros(2)
        qidx, _, pidx = system.point_offset(self.point)
        return np.real(_ref_fn(system.extend(q0)[qidx], p[pidx]))

    def ref_grads(self, system, q0, p, design_map, nd):
        """∂r_ref/∂q₀ (2, n) and ∂r_ref/∂ρ (2, nd); zero for a fixed reference."""
        n = system.n
        Jq, Jp = np.zeros((2, n + 3)), np.zeros((2, nd))
        if self.fixed_ref is None and self.point is not None:
            qidx, _, pidx = system.point_offset(self.point)
            args = [system.extend(q0)[qidx], p[pidx]]
            Jq[:, qidx] = cs_jacobian(_ref_fn, args, 0)
            cols = design_map[pidx]
            gp = cs_jacobian(_ref_fn, args, 1)
            for j in np.nonzero(cols >= 0)[0]:
                Jp[:, cols[j]] += gp[:, j]
        return Jq[:, :n], Jp


def _ref_fn(q, p):
    return point_position(q, p[..., 0:2] - p[..., 2:4])


def quadrature_weights(nsteps, h):
    w = np.full(nsteps + 1, h)
    w[0] = w[-1] = 0.5 * h
    return w
