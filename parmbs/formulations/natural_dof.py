"""Degrees of freedom of the independent-coordinate Matrix R that are *natural*
coordinates (Cartesian coordinates of body points, or a body's absolute angle), not
relative coordinates of the tree: seed 002 §2.2.3, eqs. 12–15.

    z^i = h(z; p),   ż^i = B ż,   z̈^i = B z̈ + Ḃ ż,   B = h_z            (eqs. 12, 14, 15)

Here h(z) = H(f(z)) with f the tree kinematics (relative.Tree) and H a point of a planar
body, r_P = r + A(θ) s (s = P̄ − c̄, the point's offset from the centre of mass):

    z^i = r_P,k,   ż^i = ṙ_P,k = ṙ_k + θ̇ (A' s)_k,
    z̈^i = r̈_P,k = r̈_k + θ̈ (A' s)_k − θ̇² (A s)_k                           (model/kinematics.py)

so Ḃ ż is not formed: z̈^i is the point's exact acceleration at (q, v, a) =
kin(z, ż, z̈), and the −θ̇² A s term with the Ṙ ż inside a is seed 002's Ḃ ż.  A
relative coordinate named as DOF (a tree joint) is the constant-B case (eq. 9): z^i = z_j.

Names (``simulation.matrix_r.independent``): a tree joint (its relative coordinate),
``BODY.POINT.x`` / ``BODY.POINT.y`` (``POINT`` may be ``com``, the body's reference
point) or ``BODY.angle``.

``DofMap.evaluate`` returns g = (z^i, ż^i, z̈^i) at a state ξ = (z, ż, z̈, ·) and the
Jacobians with respect to z, ż, z̈ and the design variables: the point map's own
derivatives (complex step on its 11 inputs q_b, v_b, a_b, s: exact to round-off) chained
with the tree's (R = q_z, v_z, a_z, a_ż and f_p, v_p, a_p of matrix_r._kin).

Reference point: the tree kinematics refer every body to its centre of mass (seed 002
§3's "RTdyn0"); the paper's other choice, the global origin ("RTdyn1"), changes the
cost of the recursion, not the equations' solution, so it is not offered.
"""
import numpy as np

from ..model.component import CS_H
from ..model.kinematics import point_acceleration, point_position, point_velocity
from ..model.system import ModelError

KEY = "simulation.matrix_r.independent"


def _point_map(u):
    """(r_P, ṙ_P, r̈_P) (…, 2 each) from u = (q_b, v_b, a_b, s) (…, 11)."""
    qb, vb, ab, s = u[..., 0:3], u[..., 3:6], u[..., 6:9], u[..., 9:11]
    return point_position(qb, s), point_velocity(qb, vb, s), point_acceleration(qb, vb, ab, s)


class DofMap:
    """The d degrees of freedom named by the user (module doc)."""

    def __init__(self, system, tree, names, nd, Ep):
        self.sys, self.tree, self.nd, self.Ep = system, tree, nd, Ep
        self.names = list(names)
        self.kind = []          # ("z", j) | ("angle", qb) | ("point", qb, pidx(4), k)
        joints = tree.tree_joints
        bodies = set(system.body_names)
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
            else:
                raise ModelError(KEY, f"{nm!r} is neither a joint of the relative-coordinate tree (tree joints: "
                                      f"{', '.join(joints)}) nor a natural coordinate BODY.POINT.x|y or "
                                      "BODY.angle of a body")
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
            _, qb, idx, k = kd
            s = np.asarray(p, float)[idx[0:2]] - np.asarray(p, float)[idx[2:4]]
            u = np.r_[K.q[qb], K.v[qb], K.a[qb], s]
            U = u + 1j * CS_H * np.vstack([np.zeros(11), np.eye(11)])
            pos, vel, acc = _point_map(U)
            g[:, i] = pos[0, k].real, vel[0, k].real, acc[0, k].real
            n = len(K.q)
            for level, val in enumerate((pos, vel, acc)):
                du = val[1:, k].imag / CS_H                   # ∂(level)/∂u (11)
                wq, wv, wa = (np.zeros(n) for _ in range(3))
                wq[qb], wv[qb], wa[qb] = du[0:3], du[3:6], du[6:9]
                self._chain(G, i, K, wq, wv if level else None, wa if level == 2 else None, level)
                if with_p and nd:
                    ds = self.Ep[:, idx[0:2]] - self.Ep[:, idx[2:4]]          # (nd, 2): ∂s/∂ρ
                    getattr(G, ("p", "dp", "ddp")[level])[i] += ds @ du[9:11]
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
                _, qb, idx, k = kd
                pos, vel, acc = _point_map(np.r_[q[qb], v[qb], a[qb], pv[idx[0:2]] - pv[idx[2:4]]])
                g[:, i] = pos[k], vel[k], acc[k]
        return g
