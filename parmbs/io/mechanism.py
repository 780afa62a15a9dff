"""What a planar mechanism looks like at a state: the geometry ``parmbs plot`` and
``parmbs animate`` draw, from the config and the named coordinates of q alone (so it
works on a stored HDF5 trajectory as well as on a run in memory).

Per kind of body (coordinate names: io/hdf5.coordinate_names):

* rigid body B ("B.x", "B.y", "B.angle" of the centre of mass): a point P̄ of the body
  frame is at r = r_c + A(θ)(P̄ − c̄), c̄ the centre of mass in the body frame; the body
  is drawn as the outline (convex hull) of its points and centre of mass;
* ANCF beam B ("B.nodeK.x|y|dx|dy": nodal position and slope ∂r/∂s): the centre line is
  the element's cubic Hermite interpolation r(ξ) = H₁r_k + H₂h r'_k + H₃r_{k+1} + H₄h r'_{k+1},
  h = L/nel, the shape functions of the element itself (flexible/ancf.py);
* floating-frame beam B (frame "B.x|y|angle" at the clamped root, "B.nodeK.u|v|phi"
  elastic in the frame): local centre line (s + u(s), v(s)), u linear and v Hermite
  with slopes φ, turned and moved by the frame;
* plate P ("P.node_i_j.x|y": absolute nodal positions): the deformed quad mesh;
* continuum C (frame "C.x|y|angle", "C.u_i_j.x|y" of the free nodes): node (i, j) at
  r + A(θ)(X_ij + u_ij), X_ij = offset + (i hx, j hy), clamped nodes u = 0.

Joints are drawn at their point a, springs as zig-zags between their end points.
"""
from __future__ import annotations

import numpy as np

from ..config.points import mesh_node


#: cubic Hermite shape functions on ξ ∈ [0, 1]
def _hermite(xi):
    xi = np.asarray(xi, float)
    return (1 - 3 * xi**2 + 2 * xi**3, xi - 2 * xi**2 + xi**3, 3 * xi**2 - 2 * xi**3, -xi**2 + xi**3)


def _rot(th, v):
    """A(θ) v: θ (rows,), v (2,) or (rows, ..., 2) → (rows, ..., 2)."""
    th, v = np.asarray(th, float), np.asarray(v, float)
    extra = max(v.ndim - 1 - th.ndim, 0) if v.ndim > 1 else 0
    c = np.cos(th).reshape(th.shape + (1,) * extra)
    s = np.sin(th).reshape(th.shape + (1,) * extra)
    return np.stack([c * v[..., 0] - s * v[..., 1], s * v[..., 0] + c * v[..., 1]], -1)


class Mechanism:
    """The drawable geometry of a planar config over the rows of a trajectory q (rows, n)."""

    def __init__(self, config, coordinates):
        self.cfg = config
        self.col = {n: i for i, n in enumerate(coordinates)}
        self.rigid = {b.name: b for b in config.bodies}
        self.ancf = {b.name: b for b in config.beams if b.type == "ancf"}
        self.ffr = {b.name: b for b in config.beams if b.type == "ffr"}
        self.plates = {p.name: p for p in config.plates}
        self.continua = {c.name: c for c in config.continua}

    def _c(self, q, name, default=0.0):
        i = self.col.get(name)
        return q[:, i] if i is not None else np.full(len(q), default)

    def _frame(self, q, body):
        return np.stack([self._c(q, f"{body}.x"), self._c(q, f"{body}.y")], -1), self._c(q, f"{body}.angle")

    # -- bodies --------------------------------------------------------------------------------
    def rigid_point(self, q, body, local):
        b = self.rigid[body]
        r, th = self._frame(q, body)
        return r + _rot(th, np.asarray(local, float) - np.asarray(b.com, float))

    def rigid_outline(self, q, body):
        """(rows, k, 2): the convex hull of the body's points and centre of mass."""
        b = self.rigid[body]
        local = np.array([b.com, *b.points.values()], float)
        hull = _hull(local)
        return np.stack([self.rigid_point(q, body, p) for p in local[hull]], 1)

    def ancf_line(self, q, body, per=8):
        """(rows, m, 2) centre line of an ANCF beam."""
        b = self.ancf[body]
        h = b.length / b.elements
        def nodal(a, b_):                                           # (rows, nodes, 2)
            return np.stack([np.stack([self._c(q, f"{body}.node{k}.{a}"), self._c(q, f"{body}.node{k}.{b_}")], -1)
                             for k in range(b.elements + 1)], 1)
        r, d = nodal("x", "y"), nodal("dx", "dy")
        xi = np.linspace(0.0, 1.0, per + 1)[:-1]
        H = _hermite(xi)
        seg = [H[0][:, None] * r[:, e, None] + H[1][:, None] * h * d[:, e, None]
               + H[2][:, None] * r[:, e + 1, None] + H[3][:, None] * h * d[:, e + 1, None]
               for e in range(b.elements)]
        return np.concatenate(seg + [r[:, -1:, :]], 1)

    def ffr_line(self, q, body, per=8):
        """(rows, m, 2) centre line of a floating-frame beam."""
        b = self.ffr[body]
        h = b.length / b.elements
        u = np.stack([self._c(q, f"{body}.node{k}.u") for k in range(b.elements + 1)], 1)
        v = np.stack([self._c(q, f"{body}.node{k}.v") for k in range(b.elements + 1)], 1)
        ph = np.stack([self._c(q, f"{body}.node{k}.phi") for k in range(b.elements + 1)], 1)
        xi = np.linspace(0.0, 1.0, per + 1)[:-1]
        H = _hermite(xi)
        xs, ys = [], []
        for e in range(b.elements):
            xs.append((e + xi) * h + (1 - xi) * u[:, e, None] + xi * u[:, e + 1, None])
            ys.append(H[0] * v[:, e, None] + H[1] * h * ph[:, e, None] + H[2] * v[:, e + 1, None]
                      + H[3] * h * ph[:, e + 1, None])
        xs.append(b.length + u[:, -1:])
        ys.append(v[:, -1:])
        local = np.stack([np.concatenate(xs, 1), np.concatenate(ys, 1)], -1)
        r, th = self._frame(q, body)
        return r[:, None, :] + _rot(th, local)

    def mesh_nodes(self, q, body):
        """(rows, ny+1, nx+1, 2) nodal positions of a plate or continuum."""
        if body in self.plates:
            p = self.plates[body]
            out = np.zeros((len(q), p.ny + 1, p.nx + 1, 2))
            for j in range(p.ny + 1):
                for i in range(p.nx + 1):
                    out[:, j, i, 0] = self._c(q, f"{body}.node_{i}_{j}.x")
                    out[:, j, i, 1] = self._c(q, f"{body}.node_{i}_{j}.y")
            return out
        c = self.continua[body]
        X = np.stack(np.meshgrid(c.offset[0] + np.linspace(0.0, c.size[0], c.nx + 1),
                                 c.offset[1] + np.linspace(0.0, c.size[1], c.ny + 1)), -1)
        U = np.zeros((len(q),) + X.shape)
        for j in range(c.ny + 1):
            for i in range(c.nx + 1):
                U[:, j, i, 0] = self._c(q, f"{body}.u_{i}_{j}.x")
                U[:, j, i, 1] = self._c(q, f"{body}.u_{i}_{j}.y")
        r, th = self._frame(q, body)
        return r[:, None, None, :] + _rot(th, X[None] + U)

    def chord_angle(self, q, body):
        """(rows,) unwrapped angle of a body without an angle coordinate: an ANCF beam's
        chord root → tip, a plate's bottom edge node_0_0 → node_nx_0."""
        if body in self.ancf:
            a, b = self.point(q, f"{body}.root"), self.point(q, f"{body}.tip")
        else:
            nodes = self.mesh_nodes(q, body)
            a, b = nodes[:, 0, 0], nodes[:, 0, -1]
        d = b - a
        return np.unwrap(np.arctan2(d[:, 1], d[:, 0]))

    def mesh_density(self, body):
        m = self.plates.get(body) or self.continua[body]
        return np.broadcast_to(np.asarray(m.density, float), (m.nx * m.ny,))

    # -- points --------------------------------------------------------------------------------
    def point(self, q, ref):
        """(rows, 2) global position of ``BODY.POINT`` or ``ground.POINT``; None if unknown."""
        body, _, name = ref.partition(".")
        rows = len(q)
        if body == "ground":
            xy = self.cfg.ground.points.get(name)
            return None if xy is None else np.broadcast_to(np.asarray(xy, float), (rows, 2))
        if body in self.rigid:
            b = self.rigid[body]
            local = b.com if name == "com" else b.points.get(name)
            return None if local is None else self.rigid_point(q, body, local)
        if body in self.ancf or body in self.ffr:
            b = self.ancf.get(body) or self.ffr[body]
            line = self.ancf_line(q, body, per=1) if body in self.ancf else self.ffr_line(q, body, per=1)
            if name in ("root", "tip") or (name.startswith("node") and name[4:].isdigit()):
                k = 0 if name == "root" else b.elements if name == "tip" else int(name[4:])
                return line[:, min(k, b.elements)]
            if name in b.points:
                s = b.points[name] / b.length * b.elements
                k = min(int(s), b.elements - 1)
                return line[:, k] + (s - k) * (line[:, k + 1] - line[:, k])
            return None
        if body in self.plates or body in self.continua:
            m = self.plates.get(body) or self.continua[body]
            ij = mesh_node(m, name, origin="origin")
            if ij is None:
                return None
            if ij == "origin":
                return self.mesh_nodes(q, body)[:, 0, 0] if body in self.plates else self._frame(q, body)[0]
            return self.mesh_nodes(q, body)[:, ij[1], ij[0]]
        return None

    def named_points(self):
        """Every named point of the rigid bodies ("B.P")."""
        return [f"{b.name}.{p}" for b in self.cfg.bodies for p in b.points]

    def body_names(self):
        return [*self.rigid, *self.ancf, *self.ffr, *self.plates, *self.continua]


def _hull(pts):
    """Indices of the convex hull of 2-D points, counter-clockwise (monotone chain);
    all points in order if they are collinear or fewer than 3."""
    pts = np.asarray(pts, float)
    n = len(pts)
    if n < 3:
        return np.arange(n)
    order = sorted(range(n), key=lambda i: (pts[i, 0], pts[i, 1]))

    def cross(o, a, b):
        return (pts[a, 0] - pts[o, 0]) * (pts[b, 1] - pts[o, 1]) - (pts[a, 1] - pts[o, 1]) * (pts[b, 0] - pts[o, 0])
    lower, upper = [], []
    for i in order:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], i) <= 1e-15:
            lower.pop()
        lower.append(i)
    for i in reversed(order):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], i) <= 1e-15:
            upper.pop()
        upper.append(i)
    hull = lower[:-1] + upper[:-1]
    return np.array(hull if len(hull) >= 3 else order)


def zigzag(a, b, turns=6, width=None):
    """(m, 2) zig-zag polyline of a spring from a to b (straight ends of 15 % each)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    d = b - a
    L = float(np.hypot(*d))
    if L == 0.0:
        return np.array([a, b])
    t, n = d / L, np.array([-d[1], d[0]]) / L
    w = 0.06 * L if width is None else width
    s = np.linspace(0.15, 0.85, 2 * turns + 1)
    off = np.zeros_like(s)
    off[1:-1:2], off[2:-1:2] = w, -w
    mid = a + np.outer(s * L, t) + np.outer(off, n)
    return np.vstack([a, mid, b])
