"""Relative (joint) coordinates of a planar rigid model: the kinematic tree, its
recursive kinematics q = f(z), and the cut (loop-closure) constraints.

Seed 002 §2.1 (eqs. 1–4): every closed-loop system is an open tree in relative
coordinates z plus constraints Φ on the joints that were cut.  Here:

* tree: breadth-first from ground over the revolute and prismatic joints (or the
  joints the user did not list in ``simulation.matrix_r.cut``); each body has one
  parent joint, so z has one entry per body (revolute: angle θ_child − θ_parent,
  prismatic: slide along the axis, in units of the axis vector ū);
* kinematics: for planar joints the absolute angles are *linear* in z,
  θ = S (ι z + c), with S the ancestor-or-self matrix (S_ij = 1 if body j lies on
  the path from ground to body i), ι = 1 for revolute joints and c the prismatic
  lock angles.  Every joint k then adds a translation d_k(θ, z) to all bodies of
  its subtree, r = S d (the recursive accumulation of seed 002 eq. 1a, summed in
  one product instead of body by body).  Velocities and accelerations are the same
  sums of ḋ, d̈ (eqs. 2, 4): v = R ż, a = R z̈ + Ṙ ż, R = ∂q/∂z.
  Everything broadcasts over leading axes and is complex-step safe, so the
  derivatives of f, R ż and Ṙ ż with respect to z, ż and p are exact complex-step
  Jacobians of closed-form expressions; the one second derivative the Newton matrix
  needs in every iteration, ∂(Rᵀw)/∂z, is written out (``Tree.rtw_z``).
* cut constraints: the model's own constraint components (joints.py) restricted to
  the cut joints and the drivers (``CutView``), evaluated at q = f(z): no joint or
  force formula is written twice.
"""
import copy

import numpy as np

from ..model.kinematics import rot
from ..model.parameters import ZERO
from ..model.spanning_tree import breadth_first, checked_cut
from ..model.system import ModelError

TREE_TYPES = ("revolute", "prismatic")


def _xyth(x, y, th):
    """Interleave per-body x, y, θ (…, nb) into coordinates (…, 3 nb)."""
    x, y, th = np.broadcast_arrays(x, y, th)
    out = np.empty(x.shape[:-1] + (x.shape[-1], 3), np.result_type(x, y, th))
    out[..., 0], out[..., 1], out[..., 2] = x, y, th
    return out.reshape(x.shape[:-1] + (-1,))


def _ext(x, ground=0.0):
    """x with ground's slot (value ``ground``) appended on the last axis."""
    return np.concatenate([x, np.full(x.shape[:-1] + (1,), ground, x.dtype)], -1)


def _cossin(x):
    """cos x, sin x; for complex x through real functions of the real and imaginary
    parts (cos(a + ib) = cos a cosh b − i sin a sinh b): exact, and several times
    faster than numpy's complex trigonometry on the complex-step batches."""
    if not np.iscomplexobj(x):
        return np.cos(x), np.sin(x)
    a, b = x.real, x.imag
    ca, sa, ch, sh = np.cos(a), np.sin(a), np.cosh(b), np.sinh(b)
    return ca * ch - 1j * (sa * sh), sa * ch + 1j * (ca * sh)


class Tree:
    """Spanning tree, relative coordinates and the map z ↦ (q, v, a).

    Parameters come from the joint components' own parameter indices (point
    offsets s = P̄ − c̄, axis ū, lock angle θ₀), so geometric design variables
    move f(z; p) exactly as they move the joints."""

    def __init__(self, system, cut=None, key="simulation.matrix_r.cut"):
        cfg = system.config
        if system.n != 3 * len(system.body_names):
            flexible = any(getattr(cfg, k, None) for k in ("beams", "plates", "continua"))
            raise ModelError("simulation.formulation", "matrix-r handles rigid bodies only (the model has "
                             f"{'flexible bodies' if flexible else 'bodies of more than one kind'}); "
                             "use formulation = \"index3\"")
        self.sys = system
        nb = len(system.body_names)
        self.nb = self.nz = nb
        joints = {j.name: j for j in cfg.joints}
        cut, where = checked_cut(system, joints, cut, key)
        adj = {"ground": [], **{b: [] for b in system.body_names}}
        for j in cfg.joints:
            if j.type in TREE_TYPES and (cut is None or j.name not in cut):
                ba, bb = j.a.split(".")[0], j.b.split(".")[0]
                adj[ba].append((j, bb))
                adj[bb].append((j, ba))
        parent, seen = {}, {"ground"}
        breadth_first(adj, "ground", seen, parent, [])
        lost = [b for b in system.body_names if b not in seen]
        if lost:
            why = "not listed in simulation.matrix_r.cut" if cut is not None else "revolute or prismatic"
            raise ModelError(key if cut is not None else "joints",
                             f"bodies {', '.join(lost)} are not connected to ground by joints ({why}): "
                             "the relative-coordinate tree must reach every body")
        self.tree_joints = [parent[b][0].name for b in system.body_names]
        tree = set(self.tree_joints)
        if cut is not None:
            loose = [j.name for j in cfg.joints if j.type in TREE_TYPES and j.name not in tree and j.name not in cut]
            if loose:
                raise ModelError(key, f"joints {', '.join(loose)} close loops of the tree: add them to the cut list")
        self.cut_joints = [j.name for j in cfg.joints if j.name not in tree]

        bi = system.body_index
        n = system.n
        self.par = np.full(nb, nb, np.int64)
        self.isrev = np.zeros(nb)
        self.sig = np.zeros(nb)
        self.axis_child = np.zeros(nb, bool)
        self.spP, self.spC, self.scP, self.scC, self.uI = (np.full((nb, 2), ZERO, np.int64) for _ in range(5))
        self.t0I = np.full(nb, ZERO, np.int64)
        for name in system.body_names:
            i = bi[name]
            j, pname = parent[name]
            g, e = where[j.name]
            qa = g.qidx[e][0]
            a_is_child = qa < n and qa // 3 == i
            self.par[i] = bi[pname] if pname != "ground" else nb
            pid = g.pidx[e]
            Pa, ca, Pb, cb = pid[0:2], pid[2:4], pid[4:6], pid[6:8]
            (self.spP[i], self.spC[i], self.scP[i], self.scC[i]) = \
                (Pb, cb, Pa, ca) if a_is_child else (Pa, ca, Pb, cb)
            if j.type == "revolute":
                self.isrev[i] = 1.0
            else:                       # prismatic: d = r_Pb − r_Pa = z A(θ_a) ū, θ_b = θ_a + θ₀
                self.sig[i] = -1.0 if a_is_child else 1.0
                self.axis_child[i] = a_is_child
                self.uI[i], self.t0I[i] = pid[8:10], pid[10]
        S = np.zeros((nb, nb))
        for i in range(nb):
            k = i
            while k != nb:
                S[i, k] = 1.0
                k = self.par[k]
        self.S = S
        self.rows_tree = np.concatenate([g.rows[e] for g, e in (where[nm] for nm in self.tree_joints)]) \
            if nb else np.zeros(0, np.int64)
        cut_rows = [g.rows[e] for g in system.constraints for e, nm in enumerate(g.names) if nm not in tree]
        self.rows_cut = np.sort(np.concatenate(cut_rows)) if cut_rows else np.zeros(0, np.int64)
        # redundant rows dropped at set-up (−1, model/redundancy.py): gone from the cut
        # constraints; a tree joint is kept exactly by z, so none of its rows may be dropped
        if np.any(self.rows_tree < 0):
            red = [nm for nm in self.tree_joints if np.any(where[nm][0].rows[where[nm][1]] < 0)]
            raise ModelError(key, f"redundant rows of the tree joint(s) {', '.join(red)} were dropped at set-up; "
                             "matrix-r keeps tree joints exactly: list them in simulation.matrix_r.cut")
        self.rows_cut = self.rows_cut[self.rows_cut >= 0]

    # -- forward kinematics -------------------------------------------------------------
    def kin(self, z, zd=None, zdd=None, p=None, order=2):
        """(q, v, a) of the bodies' centres of mass for relative (z, ż, z̈); ``order``
        0 or 1 stops after q or v.  Broadcasts over leading axes of every argument.

        Per joint k (child body k, parent π(k), s_p/s_c the joint point's COM offsets
        on parent/child, ū the prismatic axis on the body ``ax`` that carries it):
            d_k = A(θ_π) s_p − A(θ_k) s_c + σ_k z_k A(θ_ax) ū,      r = S d
        and its first and second time derivatives (A' = A R, A'' = −A), with
        ω = S ι ż, α = S ι z̈.  x and y components are kept apart (no stacking)."""
        ST, sig, isr, par, axc = self.S.T, self.sig, self.isrev, self.par, self.axis_child
        th = (isr * z + sig * p[..., self.t0I]) @ ST
        thp = _ext(th)[..., par]
        spx = p[..., self.spP[:, 0]] - p[..., self.spC[:, 0]]
        spy = p[..., self.spP[:, 1]] - p[..., self.spC[:, 1]]
        scx = p[..., self.scP[:, 0]] - p[..., self.scC[:, 0]]
        scy = p[..., self.scP[:, 1]] - p[..., self.scC[:, 1]]
        ux, uy = p[..., self.uI[:, 0]], p[..., self.uI[:, 1]]
        cc, sc = _cossin(th)
        cp, sp = _ext(cc, 1.0)[..., par], _ext(sc)[..., par]
        ca, sa = np.where(axc, cc, cp), np.where(axc, sc, sp)
        Rpx, Rpy = cp * spx - sp * spy, sp * spx + cp * spy          # A(θ_π) s_p;  A R s = (−y, x)
        Rcx, Rcy = cc * scx - sc * scy, sc * scx + cc * scy
        Rux, Ruy = ca * ux - sa * uy, sa * ux + ca * uy
        sz = sig * z
        q = _xyth((Rpx - Rcx + sz * Rux) @ ST, (Rpy - Rcy + sz * Ruy) @ ST, th)
        if order == 0:
            return q
        w = (isr * zd) @ ST
        wp = _ext(w)[..., par]
        wa = np.where(axc, w, wp)
        szd = sig * zd
        ddx = -Rpy * wp + Rcy * w + szd * Rux - sz * Ruy * wa
        ddy = Rpx * wp - Rcx * w + szd * Ruy + sz * Rux * wa
        v = _xyth(ddx @ ST, ddy @ ST, w)
        if order == 1:
            return q, v
        al = (isr * zdd) @ ST
        alp = _ext(al)[..., par]
        ala = np.where(axc, al, alp)
        szdd = sig * zdd
        wp2, w2, wa2 = wp * wp, w * w, wa * wa
        dddx = (-Rpy * alp - Rpx * wp2 + Rcy * al + Rcx * w2 + szdd * Rux - 2 * szd * Ruy * wa
                + sz * (-Ruy * ala - Rux * wa2))
        dddy = (Rpx * alp - Rpy * wp2 - Rcx * al + Rcy * w2 + szdd * Ruy + 2 * szd * Rux * wa
                + sz * (Rux * ala - Ruy * wa2))
        return q, v, _xyth(dddx @ ST, dddy @ ST, al)

    def jacobian(self, z, p):
        """R = ∂q/∂z (n × nz): v at unit relative velocities (v is linear in ż)."""
        _, v = self.kin(z, np.eye(self.nz), None, p, order=1)
        return v.T

    def rtw_z(self, z, p, w):
        """∂(R(z)ᵀ w)/∂z (nz × nz) for a fixed w (n,), in closed form.

        (Rᵀw)_k is the generalized force of w on joint k: Σ_{i ∈ sub(k)} (r_i − P_k) × f_i
        + τ_i for a revolute joint (P_k its point, f_i, τ_i the force and torque parts of
        w on body i), σ_k u_k · Σ_{i ∈ sub(k)} f_i for a prismatic one (u_k = A(θ_ax) ū).
        Joint j moves every point x of its subtree by t_j(x) = e × (x − P_j) (revolute)
        or σ_j u_j (prismatic) and turns u_k with it, so

            revolute k:   H_kj = Σ_i S_ik S_ij t_j(r_i) × f_i − S_π(k)j t_j(P_k) × F_k
            prismatic k:  H_kj = σ_k S_ax(k)j ι_j (e × u_k) · F_k,     F_k = Σ_i S_ik f_i.
        """
        nb, S = self.nb, self.S
        Q = self.kin(z, None, None, p, order=0).reshape(nb, 3)
        r, th = Q[:, :2], Q[:, 2]
        W = np.asarray(w).reshape(nb, 3)
        f = W[:, :2]
        P = r + rot(th, p[self.scP] - p[self.scC])                 # joint points (child side)
        thp = _ext(th)[self.par]
        u = rot(np.where(self.axis_child, th, thp), p[self.uI])
        su = self.sig[:, None] * u
        rev = self.isrev > 0
        d = r[None, :, :] - P[:, None, :]                           # [j, i] = r_i − P_j
        A = np.where(rev[:, None], -np.sum(d * f[None], -1),
                     su[:, 0:1] * f[None, :, 1] - su[:, 1:2] * f[None, :, 0])   # t_j(r_i) × f_i
        H = S.T @ (S * A.T)
        F = S.T @ f
        dP = P[:, None, :] - P[None, :, :]                          # [k, j] = P_k − P_j
        T2 = np.where(rev[None, :], -np.sum(dP * F[:, None, :], -1),
                      su[None, :, 0] * F[:, None, 1] - su[None, :, 1] * F[:, None, 0])
        Sp = np.vstack([S, np.zeros((1, nb))])[self.par]           # S_π(k)j (ground: 0)
        H = H - Sp * T2
        Sax = np.where(self.axis_child[:, None], S, Sp)
        eu_F = -u[:, 1] * F[:, 0] + u[:, 0] * F[:, 1]               # (e × u_k) · F_k
        return np.where(rev[:, None], H, self.sig[:, None] * Sax * self.isrev[None, :] * eu_F[:, None])

    # -- inverse kinematics -------------------------------------------------------------
    def positions(self, q, p):
        """z from absolute coordinates q (closed form for revolute/prismatic trees)."""
        nb = self.nb
        Q = q.reshape(nb, 3)
        th = Q[:, 2]
        the = _ext(th)
        thp = the[self.par]
        r = np.vstack([Q[:, :2], np.zeros((1, 2))])
        sp = p[self.spP] - p[self.spC]
        sc = p[self.scP] - p[self.scC]
        u = p[self.uI]
        thax = np.where(self.axis_child, th, thp)
        e = (Q[:, :2] + rot(th, sc)) - (r[self.par] + rot(thp, sp))
        Ru = rot(thax, u)
        slide = self.sig * np.sum(Ru * e, -1) / np.maximum(np.sum(u * u, -1), 1e-300)
        return np.where(self.isrev > 0, th - thp, slide)


#: body kinds (System.describe keys) as the refusal names them; matrix-r takes a model
#: of only the first (planar rigid) or of the fifth and seventh (spatial rigid: Euler-
#: parameter and natural-coordinate bodies)
KINDS = (("bodies", "planar rigid bodies"), ("beams", "planar beams"), ("plates", "plates"),
         ("continua", "continua"), ("spatial bodies", "spatial rigid bodies"), ("spatial beams", "spatial beams"),
         ("natural bodies", "natural-coordinate bodies"), ("solids", "spatial solids"))


def refusal(system):
    """None if matrix-r can build a relative-coordinate tree of the model, else the
    ModelError naming its body kinds: the tree's joints move rigid bodies, planar (Tree)
    or spatial (SpatialTree: Euler-parameter and natural-coordinate bodies, the latter's
    q = (r, columns of A(e)) from the same recursion); flexible bodies have no
    relative-coordinate description."""
    d = system.describe()
    has = [(k, label) for k, label in KINDS if d.get(k)]
    kinds = [k for k, _ in has]
    if kinds == ["bodies"] or (kinds and set(kinds) <= {"spatial bodies", "natural bodies"}):
        return None
    what = ", ".join(f"{label} ({d[k]})" for k, label in has) or "no bodies"
    return ModelError("simulation.formulation", "matrix-r takes planar rigid bodies or spatial rigid bodies "
                      "(Euler-parameter and natural-coordinate), planar and spatial not mixed; this model has "
                      f"{what}: use formulation = \"index3\"")


def make_tree(system, cut=None):
    """The relative-coordinate tree of a model: planar (Tree) or, for a model of spatial
    rigid bodies only, spatial/relative_tree.SpatialTree (the 3-D semi-recursive method);
    any other model is refused with its body kinds named (``refusal``)."""
    err = refusal(system)
    if err is not None:
        raise err
    if not system.body_names:
        from ..spatial.relative_tree import SpatialTree
        return SpatialTree(system, cut)
    return Tree(system, cut)


class CutView:
    """The system seen with only the cut constraints (cut joints and drivers), rows
    renumbered 0..mc−1 in the order of ``tree.rows_cut``; what StateEval needs
    (n, m, forces, constraints, extend), like integrators/initial.py's view.

    ``full``: the redundant cut rows dropped at set-up (model/redundancy.py) are kept
    too, numbered after the others (mc.., in their original order): matrix-r's
    least-squares R^Φ (seed 002 eq. 17, matrix_r.py) enforces every row.  ``dropped``
    is their number (0 without ``full``)."""

    def __init__(self, system, tree, full=False):
        self.n, self.forces, self.extend = system.n, system.forces, system.extend
        tree_set = set(getattr(tree, "tree_names", tree.tree_joints))   # spatial: + normalisation rows
        new_row = np.full(system.m + 1, -1, np.int64)       # [-1]: a dropped redundant row stays −1
        new_row[tree.rows_cut] = np.arange(len(tree.rows_cut))
        extra = {}                                          # original row of a dropped cut row -> its new row
        if full and getattr(system, "redundancy", None) is not None:
            for k, i in enumerate(sorted(system.redundancy.dropped)):
                extra[int(i)] = len(tree.rows_cut) + k
        self.constraints = []
        for g in system.constraints:
            sel = [e for e, nm in enumerate(g.names) if nm not in tree_set]
            if not sel:
                continue
            c = copy.copy(g)
            c.names = [g.names[e] for e in sel]
            c.qidx, c.pidx = g.qidx[sel], g.pidx[sel]
            c.rows = new_row[g.rows[sel]]
            if extra:
                orig = g.rows_all[sel]
                c.rows = np.where(c.rows >= 0, c.rows,
                                  np.vectorize(lambda i: extra.get(int(i), -1), otypes=[np.int64])(orig))
            self.constraints.append(c)
        self.dropped = len(extra)
        self.m = len(tree.rows_cut) + self.dropped
