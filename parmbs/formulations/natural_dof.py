"""Degrees of freedom of the independent-coordinate Matrix R that are *natural*
coordinates (Cartesian coordinates of body points, or a body's absolute angle), not
relative coordinates of the tree: seed 002 §2.2.3, eqs. 12–15.

    z^i = h(z; p),   ż^i = B ż,   z̈^i = B z̈ + Ḃ ż,   B = h_z            (eqs. 12, 14, 15)

Here h(z) = H(f(z)) with f the tree kinematics (relative.Tree, spatial/relative_tree.py)
and H a point of a body, r_P = r + A s (planar: s = P̄ − c̄, the point's offset from the
centre of mass; spatial Euler-parameter bodies: s' from the body's points, A = A(e);
natural-coordinate bodies: A = (e₁ e₂ e₃), r_P = C(s') q_b linear in their coordinates):

    z^i = r_P,k,   ż^i = ṙ_P,k = ṙ_k + (Ȧ s)_k,   z̈^i = r̈_P,k = r̈_k + (Ä s)_k

(planar Ȧ s = θ̇ A' s, Ä s = θ̈ A' s − θ̇² A s, model/kinematics.py; spatial Ȧ = 2B(e, ė),
Ä = 2B(ė, ė) + 2B(e, ë), spatial/kinematics.py), so Ḃ ż is not formed: z̈^i is the
point's exact acceleration at (q, v, a) = kin(z, ż, z̈), and the Ȧ, Ä terms with the
Ṙ ż inside a are seed 002's Ḃ ż.  A
relative coordinate named as DOF (a tree joint) is the constant-B case (eq. 9): z^i = z_j.

Names (``simulation.matrix_r.independent``): a tree joint (its relative coordinate),
``BODY.POINT.x|y`` (planar; ``POINT`` may be ``com``, the body's reference point),
``BODY.angle`` (planar), ``BODY.POINT.x|y|z`` (spatial: Euler-parameter or natural-coordinate
bodies).

``DofMap.evaluate`` returns g = (z^i, ż^i, z̈^i) at a state ξ = (z, ż, z̈, ·) and the
Jacobians with respect to z, ż, z̈ and the design variables: the point map's own
derivatives (complex step on its inputs q_b, v_b, a_b, s: exact to round-off) chained
with the tree's (R = q_z, v_z, a_z, a_ż and f_p, v_p, a_p of matrix_r._kin).

Reference point: the tree kinematics refer every body to its centre of mass (seed 002
§3's "RTdyn0", the choice of all the paper's results, §4); the paper's other choice, the
global origin ("RTdyn1"), changes the cost of the recursion, not the equations'
solution, so it is not offered.  Why: the reference point only chooses the body
velocity variables V = (ṙ_ref, ω) of eqs. 1–4; another point gives V' = T V with
T = [[I, r̃ − r̃'], [0, I]] invertible (as eq. 1c), so R^v' = T R^v, M^v' = T⁻ᵀ M^v T⁻¹ and the
projected M^d = R^vᵀ M^v R^v and Q^d of eq. 27 (the virtual power, independent of the
variables it is written in) are the same matrices.  The z-equations, their trapezoidal
discretization and every sensitivity are therefore identical; only the operation count
of the recursion (RTdyn1: B^v_i = I) and round-off differ.  parmbs does not run the
V-recursion at all (q, v, a of the centres of mass come from closed-form kinematics and
their complex-step Jacobians), so the choice has no cost effect here either.
"""
import numpy as np

from ..model.component import CS_H
from ..model.kinematics import point_acceleration, point_position, point_velocity
from ..model.system import ModelError
from ..spatial.kinematics import rotation, rotation_ddot, rotation_dot

KEY = "simulation.matrix_r.independent"


def _point_map(u):
    """(r_P, ṙ_P, r̈_P) (…, 2 each) from u = (q_b, v_b, a_b, s) (…, 11)."""
    qb, vb, ab, s = u[..., 0:3], u[..., 3:6], u[..., 6:9], u[..., 9:11]
    return point_position(qb, s), point_velocity(qb, vb, s), point_acceleration(qb, vb, ab, s)


def _spatial_point_map(u):
    """(r_P, ṙ_P, r̈_P) (…, 3 each) of an Euler-parameter body from u = (q_b, v_b, a_b, s')
    (…, 24), q_b = (r, e): r + A s', ṙ + Ȧ s', r̈ + Ä s' (Ȧ = 2B(e, ė), Ä = 2B(ė, ė) +
    2B(e, ë), spatial/kinematics.py)."""
    qb, vb, ab, s = u[..., 0:7], u[..., 7:14], u[..., 14:21], u[..., 21:24]
    e, ed, edd = qb[..., 3:], vb[..., 3:], ab[..., 3:]
    Av = lambda M: np.einsum("...ij,...j->...i", M, s)      # noqa: E731
    return (qb[..., :3] + Av(rotation(e)), vb[..., :3] + Av(rotation_dot(e, ed)),
            ab[..., :3] + Av(rotation_ddot(e, ed, edd)))


def _natural_point_map(u):
    """(r_P, ṙ_P, r̈_P) (…, 3 each) of a natural-coordinate body (spatial/natural.py) from
    u = (q_b, v_b, a_b, s') (…, 39), q_b = (r, e₁, e₂, e₃): r_P = C(s') q_b = r + Σ s'_k e_k,
    linear in q_b, so ṙ_P = C v_b and r̈_P = C a_b."""
    s = u[..., 36:39]
    pt = lambda x: x[..., 0:3] + sum(s[..., k:k + 1] * x[..., 3 + 3 * k:6 + 3 * k] for k in range(3))  # noqa: E731
    return pt(u[..., 0:12]), pt(u[..., 12:24]), pt(u[..., 24:36])


#: (map, coordinates per body, point components) for planar, spatial (Euler-parameter)
#: and natural-coordinate bodies
_MAPS = {"point": (_point_map, 3, "xy"), "spoint": (_spatial_point_map, 7, "xyz"),
         "npoint": (_natural_point_map, 12, "xyz")}


class DofMap:
    """The d degrees of freedom named by the user (module doc)."""

    def __init__(self, system, tree, names, nd, Ep):
        self.sys, self.tree, self.nd, self.Ep = system, tree, nd, Ep
        self.names = list(names)
        self.kind = []          # ("z", j) | ("angle", qb) | ("point", qb, pidx(4), k)
        joints = tree.tree_joints
        bodies = set(system.body_names)
        sp = getattr(system, "spatial", None)
        sbodies = sp.bodies if sp is not None and len(sp) else {}
        nat = getattr(system, "natural", None)
        nbodies = nat.bodies if nat is not None and len(nat) else {}
        for nm in self.names:
            parts = nm.split(".")
            if len(parts) == 1 and nm in joints:
                self.kind.append(("z", joints.index(nm)))
            elif len(parts) == 2 and parts[0] in bodies and parts[1] == "angle":
                self.kind.append(("angle", system._qb(parts[0])))
            elif len(parts) == 3 and parts[0] in bodies and parts[2] in ("x", "y") \
                    and parts[1] in system.body_p[parts[0]]["points"]:
                qb, _, idx = system.point_offset(f"{parts[0]}.{parts[1]}")
                self.kind.append(("point", list(qb), list(idx), "xy".index(parts[2])))
            elif len(parts) == 3 and parts[0] in sbodies and parts[2] in ("x", "y", "z") \
                    and parts[1] in sbodies[parts[0]].points:
                idx = list(sbodies[parts[0]].points[parts[1]])          # s' (3), no COM offset
                self.kind.append(("spoint", sbodies[parts[0]].qidx(), idx + idx, "xyz".index(parts[2])))
            elif len(parts) == 3 and parts[0] in nbodies and parts[2] in ("x", "y", "z") \
                    and parts[1] in nbodies[parts[0]].points:
                idx = list(nbodies[parts[0]].points[parts[1]])          # s' (3), no COM offset
                self.kind.append(("npoint", nbodies[parts[0]].qidx(), idx + idx, "xyz".index(parts[2])))
            else:
                raise ModelError(KEY, f"{nm!r} is neither a joint of the relative-coordinate tree (tree joints: "
                                      f"{', '.join(joints)}) nor a natural coordinate BODY.POINT.x|y(|z) or "
                                      "BODY.angle (planar) of a body")
        self.d = len(self.names)
        self.constant = all(k[0] == "z" for k in self.kind)

    def evaluate(self, K, xi, p, with_p=False):
        """g = (z^i, ż^i, z̈^i) and, in G, their Jacobians: G.z, G.dz, G.dzd, G.ddz, G.ddzd,
        G.ddzdd (d × nz) and with ``with_p`` G.p, G.dp, G.ddp (d × nd).  K: matrix_r._kin at ξ
        (with_p for the p-columns)."""
        d, nz, nd = self.d, len(xi[0]), self.nd
        G = type("G", (), {})()
        for a in ("z", "dz", "dzd", "ddz", "ddzd", "ddzdd"):
            setattr(G, a, np.zeros((d, nz)))
        G.p, G.dp, G.ddp = (np.zeros((d, nd)) for _ in range(3))
        g = np.zeros((3, d))
        for i, kd in enumerate(self.kind):
            if kd[0] == "z":
                j = kd[1]
                g[:, i] = xi[0][j], xi[1][j], xi[2][j]
                G.z[i, j] = G.dzd[i, j] = G.ddzdd[i, j] = 1.0
                continue
            if kd[0] == "angle":
                c = kd[1][2]
                g[:, i] = K.q[c], K.v[c], K.a[c]
                # z^i = q_c, ż^i = v_c, z̈^i = a_c
                e = np.eye(len(K.q))[c]
                self._chain(G, i, K, e, None, None, level=0)
                self._chain(G, i, K, None, e, None, level=1)
                self._chain(G, i, K, None, None, e, level=2)
                continue
            kind, qb, idx, k = kd
            fmap, nb, _ = _MAPS[kind]
            ns = len(idx) // 2
            s = self._offset(p, idx, kind)
            u = np.r_[K.q[qb], K.v[qb], K.a[qb], s]
            U = u + 1j * CS_H * np.vstack([np.zeros(len(u)), np.eye(len(u))])
            pos, vel, acc = fmap(U)
            g[:, i] = pos[0, k].real, vel[0, k].real, acc[0, k].real
            n = len(K.q)
            for level, val in enumerate((pos, vel, acc)):
                du = val[1:, k].imag / CS_H                   # ∂(level)/∂u
                wq, wv, wa = (np.zeros(n) for _ in range(3))
                wq[qb], wv[qb], wa[qb] = du[0:nb], du[nb:2 * nb], du[2 * nb:3 * nb]
                self._chain(G, i, K, wq, wv if level else None, wa if level == 2 else None, level)
                if with_p and nd:
                    ds = self.Ep[:, idx[:ns]] - (self.Ep[:, idx[ns:]] if kind == "point" else 0.0)   # ∂s/∂ρ
                    getattr(G, ("p", "dp", "ddp")[level])[i] += ds @ du[3 * nb:]
        return g, G

    def _chain(self, G, i, K, wq, wv, wa, level):
        """Row i of the level's Jacobians from weights on q, v, a (∂(level)/∂q, ∂v, ∂a):
        q = f(z), v = R ż, a = R z̈ + Ṙ ż (matrix_r module doc) and their p-columns."""
        tz = ("z", "dz", "ddz")[level]
        tzd = (None, "dzd", "ddzd")[level]
        tp = ("p", "dp", "ddp")[level]
        if wq is not None:
            getattr(G, tz)[i] += wq @ K.R
            if hasattr(K, "Qp"):
                getattr(G, tp)[i] += wq @ K.Qp
        if wv is not None:
            getattr(G, tz)[i] += wv @ K.Vz
            getattr(G, tzd)[i] += wv @ K.R
            if hasattr(K, "Vp"):
                getattr(G, tp)[i] += wv @ K.Vp
        if wa is not None:
            getattr(G, tz)[i] += wa @ K.Az
            getattr(G, tzd)[i] += wa @ K.Azd
            G.ddzdd[i] += wa @ K.R
            if hasattr(K, "Ap"):
                getattr(G, tp)[i] += wa @ K.Ap

    def values(self, q, v, a, xi, p):
        """g = (z^i, ż^i, z̈^i) (3, d) alone at a state with q, v, a = kin(ξ)."""
        g = np.zeros((3, self.d))
        pv = np.asarray(p, float)
        for i, kd in enumerate(self.kind):
            if kd[0] == "z":
                g[:, i] = xi[0][kd[1]], xi[1][kd[1]], xi[2][kd[1]]
            elif kd[0] == "angle":
                c = kd[1][2]
                g[:, i] = q[c], v[c], a[c]
            else:
                kind, qb, idx, k = kd
                pos, vel, acc = _MAPS[kind][0](np.r_[q[qb], v[qb], a[qb], self._offset(pv, idx, kind)])
                g[:, i] = pos[k], vel[k], acc[k]
        return g

    @staticmethod
    def _offset(p, idx, kind="point"):
        """The point's offset from the centre of mass: planar s = P̄ − c̄ (idx = P̄, c̄),
        spatial s' (idx = s', s')."""
        pv = np.asarray(p, float)
        ns = len(idx) // 2
        return pv[idx[:ns]] - pv[idx[ns:]] if kind == "point" else pv[idx[:ns]]