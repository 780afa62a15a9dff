"""Relative (joint) coordinates of a spatial rigid model (Euler-parameter and natural-
coordinate bodies): the kinematic tree, the recursive kinematics q = f(z; p) with its
first and second time derivatives, and the data the semi-recursive stepper
(formulations/matrix_r.py) needs.

Seed 002 §2.1 (eqs. 1–4) in 3-D: every body j hangs from its parent π(j) by one tree
joint; the joint's relative coordinates z_j move the child frame relative to the parent
frame, and positions, velocities and accelerations follow recursively from ground
outwards (the accumulation of eqs. 1a, 2, 4).  Per tree joint, with A = A(e) the
rotation of Euler parameters e (kinematics.py), s'_P, s'_C the joint point on the parent
and on the child (COM-relative, body frame; ground: global, identity pose):

    e_C = e_P ∘ ρ(z_j),          ρ = a product of elementary rotations
                                    F(u, θ) = (cos θ/2, sin θ/2 u) and constant factors,
    r_C = r_P + A_P (s'_P + Σ_k z_k w'_k) − A_C s'_C     (w'_k slide axes, parent frame)

and the time derivatives of both by the product rule on the bilinear products (∘, A(e)
x): (XY)˙ = ẊY + XẎ, (XY)¨ = ẌY + 2ẊẎ + XŸ, with Ḟ = F' θ̇, F̈ = F' θ̈ + F'' θ̇²,
F' = ½ (0, u) ∘ F, F'' = −¼ F.  So v = R ż and a = R z̈ + Ṙ ż are exact (R = ∂q/∂z,
seed 002's velocity transformation), every e_C is a product of unit quaternions (pᵀp = 1
and pᵀṗ = 0 hold identically: the normalisation rows are tree constraints) and
everything is polynomial/trigonometric in (z, p): complex-step safe.

Joints (coordinates, ρ):

* revolute (θ):            ρ = F(u_P, θ) ∘ Q,       Q u_C = ±u_P
* cylindrical (θ, s):      revolute's ρ, slide s along u_P
* translational (s):       ρ = Q (the joint's locked relative orientation), slide along u_P
* universal (θ₁, θ₂):      ρ = F(u_P, θ₁) ∘ Q ∘ F(u_C, θ₂),   u_P ⊥ Q u_C
* spherical (ψ, ϑ, φ):     ρ = F(e_z, ψ) ∘ F(e_y, ϑ) ∘ F(e_x, φ) ∘ Q₀  (parent-frame yaw,
  pitch, roll from the initial relative orientation; singular at ϑ = ±90° only)
* rigid (weld, none):      ρ = Q₀, no slide: the child moves with its parent (the weld's
  orientation rows x_a·h2_b = x_a·h3_b = y_a·h3_b = 0 hold at Q₀ exactly, since
  spatial_set.py takes h2_b, h3_b from the same initial guesses; Q₀'s sign chosen so that
  e_P0 ∘ ρ = +e_C0, as for translational)
* free (x, y, z, ψ, ϑ, φ): a body that no tree joint connects to ground (a vehicle's
  chassis) is a root: r = (x, y, z), e = F(e_z, ψ) ∘ F(e_y, ϑ) ∘ F(e_x, φ) ∘ e₀.

u_P, u_C are the joint axes on the parent and the child (the joint's n1_a × n2_a on side
a, u_b on side b, joints.py), Q₀ the relative orientation of the initial guess, Q the
minimal rotation that makes Q₀ satisfy the joint's orientation rows exactly (identity on a
consistent guess; for translational the exact triad map).  Axes and orientations are
parameter entries but never design variables (spatial_set.py), so Q and u are constants
here; the joint points s' are read from p, so hardpoint design variables move f(z; p)
exactly as they move the joints.

Coordinate names (``tree_joints``, the names ``simulation.matrix_r.independent`` takes):
the joint's name for one coordinate, JOINT-angle/-slide (cylindrical), JOINT-1/-2
(universal), JOINT-rz/-ry/-rx (spherical), BODY-x/-y/-z/-rz/-ry/-rx (free root).

Joints not in the tree and all drivers form the cut constraints (relative.CutView with
``tree_names``: the tree joints and the normalisation rows drop out).

Natural-coordinate bodies (spatial/natural.py, ``[[spatial.natural_bodies]]``) are tree
bodies like the Euler-parameter ones: the recursion carries their Euler parameters e
(from A₀ at the initial guess) and presents q_b = (r, e₁, e₂, e₃), the columns of A(e),
with the jets (Ȧ, Ä) the recursion already forms for their children.  So their six
orthonormality rows are tree rows (``BODY.axes``, identically satisfied), their constant
mass matrix enters RᵀMR through the components like any other, and v, a, R stay exact
(complex-step safe).  Their joints (flexible/ancf3d_joints.py: spherical, PAIRS;
revolute, universal, cylindrical, translational, AXIS_PAIRS — the primitives of
joints.py with a natural side's point C(s') q and directions Σ n'_k e_k) are read with
their own parameter layout (``_joint``: side a rigid or natural, side b natural, then
the vectors of joints.VECTORS), the natural body's frame being that of A(e) = (e₁ e₂ e₃),
so the joint kinds above apply unchanged; inverse
kinematics takes A from the nearest rotation to (e₁ e₂ e₃), and since q_b is even in e,
a natural body has no sign to keep: its tree parameters e_P ∘ ρ(z) are the reference
for its children's signs.
"""
import numpy as np

from ..model.parameters import ZERO
from ..model.spanning_tree import breadth_first, checked_cut
from ..model.system import ModelError
from .kinematics import E0, from_matrix, quat_product, rotation

TREE_TYPES = ("revolute", "cylindrical", "translational", "universal", "spherical", "rigid")
EYE = np.eye(3)


# -- the two bilinear maps as constant tensors, applied by matmul: the recursion is
#    dominated by numpy call overhead on small batches (kinematics.py's component forms
#    cost ~10 calls each; measured 5-20x slower on the stepper's 32- and 256-row batches)
def _tensors():
    E = np.eye(4)
    C = np.stack([np.stack([quat_product(E[j], E[k]) for k in range(4)], -1) for j in range(4)], 1)
    D = np.zeros((3, 3, 4, 4))
    for k in range(4):
        for m in range(4):
            D[:, :, k, m] = 0.5 * (rotation(E[k] + E[m]) - rotation(E[k]) - rotation(E[m]))
    # (a @ QC)[4i + k] = Σ_j C_ijk a_j;   (a @ RD)[4(3i + j) + m] = Σ_k D_ijkm a_k
    return C.transpose(1, 0, 2).reshape(4, 16), D.transpose(2, 0, 1, 3).reshape(4, 36)


_QC, _RD = _tensors()       # (a∘b)_i = C_ijk a_j b_k;  B(a, b)_ij = D_ijkm a_k b_m (A(e) = B(e, e))


def _qmul(a, b):
    """Euler-parameter product a ∘ b (kinematics.quat_product): L(a) b, L(a) = a·C."""
    return ((a @ _QC).reshape(a.shape[:-1] + (4, 4)) @ b[..., None])[..., 0]


def _bil(a, b):
    """kinematics.bilinear(a, b) (symmetric; A(e) = B(e, e))."""
    out = (a @ _RD).reshape(a.shape[:-1] + (9, 4)) @ b[..., None]
    return out.reshape(out.shape[:-2] + (3, 3))


def _mv(M, x):
    return (M @ x[..., None])[..., 0]


# -- second-order jets [x, ẋ, ẍ] (None: an identically zero derivative) -----------------
def _add(a, b):
    return b if a is None else a if b is None else a + b


def _jmul(f, X, Y):
    """Product rule for a bilinear f on jets of equal length (1, 2 or 3)."""
    out = [f(X[0], Y[0])]
    if len(X) > 1:
        out.append(_add(None if X[1] is None else f(X[1], Y[0]), None if Y[1] is None else f(X[0], Y[1])))
    if len(X) > 2:
        t = _add(None if X[2] is None else f(X[2], Y[0]), None if Y[2] is None else f(X[0], Y[2]))
        if X[1] is not None and Y[1] is not None:
            t = _add(t, 2.0 * f(X[1], Y[1]))
        out.append(t)
    return out


def _rot_jet(E):
    """Jet of A(e) = B(e, e) from a jet of e: Ȧ = 2B(e, ė), Ä = 2B(ė, ė) + 2B(e, ë)."""
    return _jmul(_bil, E, E)


def _elem(u, z, zd, zdd, order, a=None, b=None):
    """Jet of F(u, θ) = (cos θ/2, sin θ/2 u) along θ(t) with (θ, θ̇, θ̈) = (z, zd, zdd);
    with (a, b) = (Q, (0, u) ∘ Q) the jet of F(u, θ) ∘ Q = cos θ/2 a + sin θ/2 b (a
    constant right factor folded in: no product)."""
    c, s = np.cos(0.5 * z)[..., None], np.sin(0.5 * z)[..., None]
    if a is None:
        a, b = np.eye(4)[0], np.r_[0.0, u]
    F = c * a + s * b
    out = [F]
    if order >= 1:
        F1 = 0.5 * (c * b - s * a)
        out.append(F1 * zd[..., None])
    if order >= 2:
        out.append(F1 * zdd[..., None] - 0.25 * F * (zd * zd)[..., None])
    return out


def _unit(x):
    return np.asarray(x, float) / np.linalg.norm(x)


def _rmin(a, b):
    """The minimal rotation taking unit a to unit b (a ≠ −b): I + ṽ + ṽ²/(1 + a·b), v = a × b."""
    v = np.cross(a, b)
    V = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
    return EYE + V + V @ V / (1.0 + a @ b)


def _angle_about(u, M):
    """θ of a rotation matrix M = Rot(u, θ) (u unit): atan2(u·vee(M − Mᵀ)/2, (tr M − 1)/2)."""
    w = 0.5 * np.array([M[2, 1] - M[1, 2], M[0, 2] - M[2, 0], M[1, 0] - M[0, 1]])
    return np.arctan2(u @ w, 0.5 * (np.trace(M) - 1.0))


def _rotm(u, th):
    return rotation(np.r_[np.cos(th / 2), np.sin(th / 2) * u])


def _zyx(M):
    """(ψ, ϑ, φ) with M = Rz(ψ) Ry(ϑ) Rx(φ)."""
    return np.array([np.arctan2(M[1, 0], M[0, 0]), np.arctan2(-M[2, 0], np.hypot(M[0, 0], M[1, 0])),
                     np.arctan2(M[2, 1], M[2, 2])])


def _fold(factors):
    """Merge each elementary rotation followed by a constant factor Q into one factor
    ("rot", u, k, Q, (0, u) ∘ Q) (``_elem``'s folded form)."""
    out = []
    for f in factors:
        if f[0] == "const" and out and out[-1][0] == "rot" and len(out[-1]) == 3:
            u, k = out[-1][1], out[-1][2]
            out[-1] = ("rot", u, k, np.asarray(f[1], float), quat_product(np.r_[0.0, u], np.asarray(f[1], float)))
        else:
            out.append(f)
    return out


class _TJ:
    """One tree joint: child body c, parent body par (−1: ground), coordinates z[k0:k0+nz],
    elementary factors ("rot", u, k) / ("const", e) of ρ, slides (w', k), point indices."""


class SpatialTree:
    """Spanning tree of a spatial rigid model, relative coordinates and z ↦ (q, v, a):
    the interface of relative.Tree (kin, jacobian, rtw_z, positions, rows_tree, rows_cut,
    tree_joints, cut_joints, nz) for matrix_r.MatrixRStepper."""

    def __init__(self, system, cut=None, key="simulation.matrix_r.cut"):
        cfg = system.config
        sp, nat = system.spatial, system.natural
        names = list(sp.bodies) + list(nat.bodies)
        nb = len(names)
        # body c's coordinates: (r, e) at 7 c (Euler parameters), then (r, e₁, e₂, e₃) per
        # natural-coordinate body (natural_set.py: after the spatial beams, none here)
        self.natural = np.array([b in nat.bodies for b in names], bool)
        self.width = np.where(self.natural, 12, 7)
        self.offset = np.r_[0, np.cumsum(self.width)[:-1]].astype(np.int64)
        given = [sp.bodies[b].offset if b in sp.bodies else nat.bodies[b].offset for b in names]
        if system.n != int(self.width.sum()) or list(self.offset) != given:
            raise ModelError("simulation.formulation", "matrix-r in 3-D handles rigid bodies only (spatial "
                             "Euler-parameter and natural-coordinate bodies; this model also has flexible "
                             "bodies); use formulation = \"index3\"")
        self.sys, self.nb = system, nb
        cut, where = checked_cut(system, {j.name: j for j in cfg.spatial.joints}, cut, key)
        bodyset = set(names) | {"ground"}
        adj = {b: [] for b in bodyset}
        for j in cfg.spatial.joints:
            if j.type in TREE_TYPES and (cut is None or j.name not in cut):
                ba, bb = j.a.split(".")[0], j.b.split(".")[0]
                if ba in bodyset and bb in bodyset and ba != bb:
                    adj[ba].append((j, bb))
                    adj[bb].append((j, ba))
        parent, order = {}, []
        seen = {"ground"}
        roots = ["ground"] + names
        for root in roots:
            if root in seen and root != "ground":
                continue
            if root != "ground":
                seen.add(root)
                parent[root] = (None, "ground")          # a free root
                order.append(root)
            breadth_first(adj, root, seen, parent, order)
        tree = {parent[b][0].name for b in names if parent[b][0] is not None}
        if cut is not None:
            loose = [j.name for j in cfg.spatial.joints if j.type in TREE_TYPES and j.name not in tree
                     and j.name not in cut]
            if loose:
                raise ModelError(key, f"joints {', '.join(loose)} close loops of the tree: add them to the cut list")
        self.cut_joints = [j.name for j in cfg.spatial.joints if j.name not in tree]
        self.tree_names = tree | {f"{b}.axes" if b in nat.bodies else f"{b}.norm" for b in names}

        pv = np.asarray(system.p, float)
        bi = {b: i for i, b in enumerate(names)}
        e0 = {b: np.asarray(sp.bodies[b].p0, float) if b in sp.bodies else from_matrix(nat.bodies[b].A0)
              for b in names}
        e0["ground"] = E0.copy()
        self.joints, self.tree_joints, k0 = [], [], 0
        for b in order:
            j, pname = parent[b]
            J = _TJ()
            J.c, J.par, J.k0 = bi[b], (bi[pname] if pname != "ground" else -1), k0
            eP, eC = e0[pname], e0[b]
            Q0 = rotation(eP).T @ rotation(eC)                   # initial relative orientation
            if j is None:
                J.kind, J.name = "free", b
                J.sP = J.sC = np.array([ZERO] * 3)
                J.slides = [(EYE[i], k0 + i) for i in range(3)]
                J.factors = [("rot", EYE[2], k0 + 3), ("rot", EYE[1], k0 + 4), ("rot", EYE[0], k0 + 5),
                             ("const", eC)]
                J.Q = rotation(eC)
                J.coords = [f"{b}-{c}" for c in ("x", "y", "z", "rz", "ry", "rx")]
            else:
                self._joint(J, j, where[j.name], pv, b, Q0, k0, eP, eC)
            J.factors = _fold(J.factors)
            k0 += len(J.coords)
            self.tree_joints += J.coords
            self.joints.append(J)
        self.nz = k0
        self.rows_tree = np.concatenate([where[nm][0].rows[where[nm][1]] for nm in sorted(self.tree_names)]) \
            if nb else np.zeros(0, np.int64)
        cut_rows = [g.rows[e] for g in system.constraints for e, nm in enumerate(g.names)
                    if nm not in self.tree_names]
        self.rows_cut = np.sort(np.concatenate(cut_rows)) if cut_rows else np.zeros(0, np.int64)
        if np.any(self.rows_tree < 0):
            red = sorted(nm for nm in self.tree_names if np.any(where[nm][0].rows[where[nm][1]] < 0))
            raise ModelError(key, f"redundant rows of the tree joint(s) {', '.join(red)} were dropped at set-up; "
                             "matrix-r keeps tree joints exactly: list them in simulation.matrix_r.cut")
        self.rows_cut = self.rows_cut[self.rows_cut >= 0]

    def _joint(self, J, j, ge, pv, child, Q0, k0, eP0, eC0):
        """Fill J for config joint j (module doc): axes, Q, factors, slides, points."""
        g, e = ge
        pid = g.pidx[e]
        J.kind, J.name = j.type, j.name
        kinds = getattr(g, "kinds", None)
        if kinds is not None:
            # a joint with a natural-coordinate side (flexible/ancf3d_joints.py PAIRS and
            # AXIS_PAIRS; sides ordered rigid < natural, so side b is natural): parameters
            # s'_a (3, and the ground mask on a rigid side), s'_b (3), the vectors
            nat = self.sys.natural
            refs = sorted((j.a, j.b), key=nat.is_natural_point) if kinds[0] != kinds[1] else [j.a, j.b]
            a_is_child = refs[0].split(".")[0] == child
            o = 4 if kinds[0] == "rigid" else 3
            v0 = o + 3
        else:                                   # joints.py: (s'_a, g_a, s'_b, g_b, vectors)
            a_is_child = j.b.split(".")[0] != child
            o, v0 = 4, 8
        sa, sb = np.asarray(pid[0:3]), np.asarray(pid[o:o + 3])
        J.sP, J.sC = (sb, sa) if a_is_child else (sa, sb)
        vec = lambda i: pv[pid[v0 + 3 * i:v0 + 3 + 3 * i]]      # noqa: E731 (the i-th joint vector)
        J.slides, J.factors = [], []
        if j.type in ("revolute", "cylindrical", "translational"):
            n1, n2, ub = vec(0), vec(1), _unit(vec(2))
            ua = _unit(np.cross(n1, n2))
            uP, uC = (ub, ua) if a_is_child else (ua, ub)
            if j.type == "translational":
                # exact triads (module doc): Q_ab û_b = σ ŵ_a, Q_ab ĥ = τ n̂2, Q_ab (ĥ × û_b) = στ n̂1
                h = vec(3)
                h = _unit(h - (h @ ub) * ub)
                Qab0 = Q0.T if a_is_child else Q0
                sg, tau = np.sign(ua @ Qab0 @ ub), np.sign(_unit(n2) @ Qab0 @ h)
                Ta = np.column_stack([sg * tau * _unit(n1), tau * _unit(n2), sg * ua])
                Tb = np.column_stack([np.cross(h, ub), h, ub])
                Qab = Ta @ Tb.T
                Q = Qab.T if a_is_child else Qab
            else:
                c = Q0 @ uC
                Q = _rmin(c, np.sign(uP @ c) * uP) @ Q0
            J.uP, J.uC, J.Q = uP, uC, Q
            if j.type != "translational":
                J.factors.append(("rot", uP, k0))
                J.factors.append(("const", from_matrix(Q)))
            else:                   # no angle to absorb the sign: e_P0 ∘ ρ = +e_C0 at the guess
                eq = from_matrix(Q)
                J.factors.append(("const", eq * np.sign(quat_product(eP0, eq) @ eC0)))
            if j.type == "revolute":
                J.coords = [j.name]
            elif j.type == "cylindrical":
                J.slides, J.coords = [(uP, k0 + 1)], [f"{j.name}-angle", f"{j.name}-slide"]
            else:
                J.slides, J.coords = [(uP, k0)], [j.name]
        elif j.type == "universal":
            ua, ub = _unit(vec(0)), _unit(vec(1))
            uP, uC = (ub, ua) if a_is_child else (ua, ub)
            c = Q0 @ uC
            Q = _rmin(_unit(c), _unit(c - (c @ uP) * uP)) @ Q0
            J.uP, J.uC, J.Q = uP, uC, Q
            J.factors = [("rot", uP, k0), ("const", from_matrix(Q)), ("rot", uC, k0 + 1)]
            J.coords = [f"{j.name}-1", f"{j.name}-2"]
        elif j.type == "rigid":                                   # weld: no coordinate
            eq = from_matrix(Q0)
            J.Q = Q0
            J.factors = [("const", eq * np.sign(quat_product(eP0, eq) @ eC0))]
            J.coords = []
        else:                                                     # spherical
            J.Q = Q0
            J.factors = [("rot", EYE[2], k0), ("rot", EYE[1], k0 + 1), ("rot", EYE[0], k0 + 2),
                         ("const", from_matrix(Q0))]
            J.coords = [f"{j.name}-rz", f"{j.name}-ry", f"{j.name}-rx"]

    # -- forward kinematics -------------------------------------------------------------
    def kin(self, z, zd=None, zdd=None, p=None, order=2):
        """(q, v, a) of the bodies (COM position, Euler parameters) for relative (z, ż, z̈);
        ``order`` 0 or 1 stops after q or v.  Broadcasts over leading axes; q depends on
        the leading axes of z and p only (module doc for the recursion)."""
        L = order + 1
        zs = [z, zd, zdd][:L]
        E, Rr, Aj = {}, {}, {}
        for J in self.joints:
            rho = None
            for f in J.factors:
                k = f[2] if f[0] != "const" else None
                if f[0] == "const":
                    F = [f[1]] + [None] * order
                else:
                    F = _elem(f[1], z[..., k], None if order < 1 else zd[..., k],
                              None if order < 2 else zdd[..., k], order, *f[3:])
                rho = F if rho is None else _jmul(_qmul, rho, F)
            d = [p[..., J.sP]] + [None] * order
            for w, k in J.slides:
                for i in range(L):
                    d[i] = _add(d[i], zs[i][..., k, None] * w)
            if J.par < 0:                               # ground: e_P = (1, 0, 0, 0), r_P = 0, A_P = I
                eC, rC = rho, d
            else:
                eC = _jmul(_qmul, E[J.par], rho)
                rC = [_add(a, b) for a, b in zip(Rr[J.par], _jmul(_mv, Aj[J.par], d))]
            Aj[J.c] = _rot_jet(eC)
            t2 = _jmul(_mv, Aj[J.c], [p[..., J.sC]] + [None] * order)
            rC = [_add(rC[i], None if t2[i] is None else -t2[i]) for i in range(L)]
            E[J.c], Rr[J.c] = eC, rC
        out = []
        for c in range(self.nb):                 # natural-coordinate body: (r, columns of A(e))
            if self.natural[c]:
                E[c] = [None if x is None else np.swapaxes(x, -1, -2).reshape(x.shape[:-2] + (9,)) for x in Aj[c]]
        for i in range(L):
            lead = [x[i] for c in range(self.nb) for x in (Rr[c], E[c]) if x[i] is not None]
            shape = np.broadcast_shapes(*(x.shape[:-1] for x in lead)) if lead else ()
            dt = np.result_type(*lead) if lead else float
            blocks = []
            for c in range(self.nb):
                for x, w in ((Rr[c][i], 3), (E[c][i], self.width[c] - 3)):
                    blocks.append(np.zeros(shape + (w,), dt) if x is None else np.broadcast_to(x, shape + (w,)))
            out.append(np.concatenate(blocks, -1))
        return out[0] if order == 0 else tuple(out)

    def jacobian(self, z, p):
        """R = ∂q/∂z (n × nz): v at unit relative velocities (v is linear in ż)."""
        _, v = self.kin(z, np.eye(self.nz), None, p, order=1)
        return v.T

    def rtw_z(self, z, p, w):
        """∂(R(z)ᵀ w)/∂z (nz × nz) for a fixed w: complex step of (Rᵀw)_k = v(z, e_k)·w in z
        (one batched kinematics pass of nz × nz rows; exact to round-off)."""
        from ..model.component import CS_H
        nz = self.nz
        I = np.eye(nz)
        _, v = self.kin(z + 1j * CS_H * I[:, None, :], I[None, :, :], None, p, order=1)
        return (v @ w).imag.T / CS_H

    # -- inverse kinematics -------------------------------------------------------------
    def positions(self, q, p):
        """z from absolute coordinates q (closed form per joint, in tree order)."""
        q = np.asarray(q, float)
        r = [q[o:o + 3] for o in self.offset]
        A, eul = [], []                             # rotation matrices; Euler parameters (None: natural)
        for c, o in enumerate(self.offset):
            if self.natural[c]:                     # the nearest rotation to (e₁ e₂ e₃)
                U, _, Vt = np.linalg.svd(q[o + 3:o + 12].reshape(3, 3).T)
                A.append(U @ Vt)
                eul.append(None)
            else:
                eul.append(q[o + 3:o + 7] / np.linalg.norm(q[o + 3:o + 7]))
                A.append(rotation(eul[-1]))
        z = np.zeros(self.nz)
        for J in self.joints:
            rC, AC = r[J.c], A[J.c]
            if J.par < 0:
                rP, AP = np.zeros(3), EYE
            else:
                rP, AP = r[J.par], A[J.par]
            Rel = AP.T @ AC
            k = J.k0
            if J.kind in ("free", "spherical"):
                z[k + (3 if J.kind == "free" else 0):][:3] = _zyx(Rel @ J.Q.T)
            elif J.kind in ("revolute", "cylindrical"):
                z[k] = _angle_about(J.uP, Rel @ J.Q.T)
            elif J.kind == "universal":
                a, b = J.Q @ J.uC, Rel @ J.uC
                z[k] = np.arctan2(J.uP @ np.cross(a, b), a @ b)
                z[k + 1] = _angle_about(J.uC, J.Q.T @ _rotm(J.uP, z[k]).T @ Rel)
            if J.slides:
                e = AP.T @ (rC + AC @ p[J.sC] - rP) - p[J.sP]
                for w, kk in J.slides:
                    z[kk] = (e @ w) / (w @ w)
            # Euler parameters cover rotations twice (F(u, θ + 2π) = −F(u, θ)): the angles
            # above are mod 2π, so shift the last one by 2π where ρ(z) has the opposite sign
            # of the given relative parameters, and f(z) reproduces q itself, not −e (the
            # tangent and adjoint maps at this state use R(z), whose ṗ rows flip with e)
            # A natural-coordinate body's q is A(e), even in e: no sign to keep; its tree
            # parameters e_P ∘ ρ(z) stand in for e where a child's sign is compared.
            last = [f[2] for f in J.factors if f[0] == "rot"]
            eP = E0 if J.par < 0 else eul[J.par]
            if last and eul[J.c] is not None:
                rel = quat_product(eP * np.r_[1.0, -1.0, -1.0, -1.0], eul[J.c])
                if self._rho(J, z) @ rel < 0:
                    z[last[-1]] += 2.0 * np.pi
            if eul[J.c] is None:
                eul[J.c] = quat_product(eP, self._rho(J, z))
        return z

    @staticmethod
    def _rho(J, z):
        """ρ(z) of joint J (real, values only)."""
        rho = None
        for f in J.factors:
            F = f[1] if f[0] == "const" else _elem(f[1], z[f[2]], None, None, 0, *f[3:])[0]
            rho = F if rho is None else quat_product(rho, F)
        return rho

