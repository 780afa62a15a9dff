"""Bookkeeping of the spatial rigid bodies of a System (``[spatial]``): coordinates,
parameters, element groups (inertia, gravity, normalisation, joints, drivers) and the
initial-assembly rows.  Built by ``model/system.py`` after the planar and flexible sets.

Coordinates: body i of ``[[spatial.bodies]]`` owns q[o + 7i : o + 7i + 7] =
(x, y, z, e0, e1, e2, e3) (COM position, Euler parameters), names "BODY.x" … "BODY.e3".
Ground reads ground's zero slot 7 times and adds the identity pose with a 0/1 mask
(joints.py).

Parameters (config paths, design-variable paths of config/paths.py):
``spatial.gravity.x|y|z``, ``spatial.ground.points.P.x|y|z``,
``spatial.bodies.B.mass``, ``spatial.bodies.B.inertia.xx|yy|zz|xy|xz|yz`` (off-diagonal
entries only for a full 3×3 inertia; the zero entry otherwise),
``spatial.bodies.B.points.P.x|y|z``, ``spatial.bodies.B.initial.position.x|y|z``,
``spatial.bodies.B.initial_velocity.velocity.x|y|z|angular_velocity.x|y|z``,
``spatial.joints.J.function.…``.  Axes (normalised), initial Euler parameters and the
joint vectors derived from them (perpendiculars n1, n2; locked-rotation references h)
are parameter entries too, but not design variables.

API for the other spatial helpers: ``body_qidx(body)`` (7 extended indices),
``point_pidx("BODY.P")`` (3 parameter indices of s'), ``axis_pidx("BODY.AXIS")``,
``side(ref)`` (7 coordinate indices, 3 point parameters + the ground mask), ``const(v)``.

Initial assembly (integrators/initial.py): the normalisation rows are constraints, so
pᵀp = 1 and pᵀṗ = 0 hold at t0 exactly.  The n − m independent rows are the bodies'
``independent`` coordinates: x, y, z fix the COM position component (velocity:
``initial_velocity.velocity``), rx, ry, rz the rotation component 2(E(p̂)p)_k
(drivers.OrientationRow; velocity: ``angular_velocity``).  If no body lists them, they
are chosen at the initial guess by column-pivoted QR of the candidate rows projected on
the null space of the constraint Jacobian (rotations weighted ×10, so a body's given
angular velocity wins over its COM velocity), i.e. the best-conditioned set.
"""
import numpy as np

from ..model.parameters import ZERO
from ..model.timefunctions import Polynomial, from_config
from ..model.body_kinds import body_kind
from . import joints as SJ
from .bodies import EulerRegularization, Normalization, SpatialGravity, SpatialGyroscopic, SpatialInertia
from .drivers import OrientationRow, RevoluteDriver, TranslationDriver
from .kinematics import E_matrix, pose_euler_parameters, rotation

COORDS = ("x", "y", "z", "e0", "e1", "e2", "e3")
XYZ = ("x", "y", "z")


def perpendiculars(u):
    """Two unit vectors n1, n2 with (n1, n2, u) right-handed orthonormal (u unit)."""
    k = int(np.argmin(np.abs(u)))
    n1 = np.cross(u, np.eye(3)[k])
    n1 /= np.linalg.norm(n1)
    return n1, np.cross(u, n1)


def body_parameters(body, P, base):
    """Register a rigid body's mass, inertia (xx, yy, zz, xy, xz, yz; the zero entry for
    the products of a principal inertia), points (relative to the centre of mass; "com"
    the zero entry), initial position and velocity under the config path ``base`` and
    set them as attributes of ``body`` (Euler-parameter and natural-coordinate bodies)."""
    cfg = body.cfg
    body.mass = P.add(f"{base}.mass", cfg.mass)
    J = cfg.inertia
    if isinstance(J[0], (int, float)):
        body.inertia = [P.add(f"{base}.inertia.{k}", J[i]) for i, k in enumerate(("xx", "yy", "zz"))] + [ZERO] * 3
    else:
        body.inertia = [P.add(f"{base}.inertia.{k}", J[i][j])
                        for k, (i, j) in zip(("xx", "yy", "zz", "xy", "xz", "yz"),
                                             ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2)))]
    body.points = {n: [P.add(f"{base}.points.{n}.{c}", x[i]) for i, c in enumerate(XYZ)]
                   for n, x in cfg.points.items()}
    body.points["com"] = [ZERO] * 3
    body.position = [P.add(f"{base}.initial.position.{c}", cfg.initial.position[i]) for i, c in enumerate(XYZ)]
    body.velocity = [P.add(f"{base}.initial_velocity.velocity.{c}", cfg.initial_velocity.velocity[i])
                     for i, c in enumerate(XYZ)]


def pivoted_rows(C, need, rtol=1e-8):
    """Indices of ``need`` rows of C picked greedily by largest remaining norm.

    Businger–Golub column pivoting (LAPACK dgeqp3 on Cᵀ) picks, at each step, the
    candidate whose component orthogonal to the rows already picked is longest.  Many
    candidate rows of a model tie exactly (unit translations, equal rotation rows), and
    LAPACK then lets round-off decide — measured on the every-joint chain: the base's
    initial z-velocity 0.84 or 0.24 depending only on which OpenBLAS kernels ran (numpy
    imported before or after parmbs).  Here norms within ``rtol`` of the largest count
    as a tie and the first candidate in model order wins, so the choice is that of
    exact arithmetic whenever round-off (≪ rtol) is all that separates the candidates.
    The residual norms do not depend on which orthonormal basis C is expressed in.
    """
    R = np.array(C, dtype=float)
    left = np.ones(len(R), dtype=bool)
    out = []
    for _ in range(min(need, len(R))):
        norms = np.where(left, np.sqrt(np.einsum("ij,ij->i", R, R)), -1.0)
        top = norms.max()
        i = int(np.flatnonzero(norms >= top * (1.0 - rtol))[0])
        out.append(i)
        left[i] = False
        if norms[i] > 0.0:
            u = R[i] / norms[i]
            for _ in range(2):       # twice is enough (Gram–Schmidt re-orthogonalization)
                R -= np.outer(R @ u, u)
    return out


class _Body:
    def __init__(self, cfg, P, offset):
        self.cfg, self.name, self.offset = cfg, cfg.name, offset
        base = f"spatial.bodies.{cfg.name}"
        body_parameters(self, P, base)
        self.axes = _axes(P, base, cfg.axes)
        self.p0 = pose_euler_parameters(cfg.initial)
        self.orientation = [P.add(f"{base}.initial.orientation.e{i}", self.p0[i]) for i in range(4)]
        v0 = cfg.initial_velocity
        self.omega = [P.add(f"{base}.initial_velocity.angular_velocity.{c}", v0.angular_velocity[i])
                      for i, c in enumerate(XYZ)]

    def qidx(self):
        return list(range(self.offset, self.offset + 7))


def _axes(P, base, axes):
    """{name: (3 parameter indices, unit value)}: predefined x, y, z, then the config's."""
    from ..config.spatial_schema import PREDEFINED_AXES
    out = {}
    for n, u in {**PREDEFINED_AXES, **axes}.items():
        u = np.array(u, float) / np.linalg.norm(u)
        out[n] = ([P.add(f"{base}.axes.{n}.{c}", u[i]) for i, c in enumerate(XYZ)], u)
    return out


@body_kind("spatial", order=50)  # spatial (3D) rigid bodies: after the continua
class SpatialBodySet:
    """All spatial rigid bodies, ground's points/axes and gravity of a model."""

    def __init__(self, config, P, offset):
        self.P = P
        self.solids = None                 # the SolidSet, set by model/system.py (flexible/solids.py)
        sp = getattr(config, "spatial", None)
        self.cfg = sp
        self.bodies = {}
        for b in (sp.bodies if sp is not None else []):
            self.bodies[b.name] = _Body(b, P, offset)
            offset += 7
        self.ncoord = 7 * len(self.bodies)
        if sp is None:
            return
        self.gravity = [P.add(f"spatial.gravity.{c}", sp.gravity[i]) for i, c in enumerate(XYZ)]
        self.ground_points = {n: [P.add(f"spatial.ground.points.{n}.{c}", x[i]) for i, c in enumerate(XYZ)]
                              for n, x in sp.ground.points.items()}
        self.ground_axes = _axes(P, "spatial.ground", sp.ground.axes)
        self.one = self.const(1.0)

    def __len__(self):
        return len(self.bodies)

    def const(self, value):
        """A constant entry of p (not a config path)."""
        return self.P.add(f"<const {float(value)!r}>", value)

    def coordinate_names(self):
        return [f"{b}.{c}" for b in self.bodies for c in COORDS]

    def is_spatial_body(self, name):
        return name in self.bodies

    # -- index maps (API for the other spatial components) -------------------------------
    def body_qidx(self, body):
        """7 extended-vector indices of a body's (r, p); ground: its zero slot ×7."""
        if body == "ground":
            return [self._gs[0]] * 7
        return self.bodies[body].qidx()

    def point_pidx(self, ref):
        """3 parameter indices of s' (body frame, relative to the COM; ground: global)."""
        body, point = ref.split(".", 1)
        return list(self.ground_points[point] if body == "ground" else self.bodies[body].points[point])

    def axis_pidx(self, ref):
        return list(self._axis(ref)[0])

    def mask(self, body):
        """The ground-mask parameter: 1 for ground (identity pose added), 0 for a body."""
        return self.one if body == "ground" else ZERO

    def side(self, ref):
        """(7 coordinate indices, [s' (3), g]) of a point reference (a solid's origin or
        clamped node: its frame and X, flexible/solids.py)."""
        body = ref.split(".", 1)[0]
        if self.solids is not None and self.solids.is_solid(body):
            return self.solids.side(ref)
        return self.body_qidx(body), self.point_pidx(ref) + [self.mask(body)]

    def _axis(self, ref):
        body, name = ref.split(".", 1)
        if self.solids is not None and self.solids.is_solid(body):
            return self.solids.solids[body].axes[name]
        return (self.ground_axes if body == "ground" else self.bodies[body].axes)[name]

    def _initial_offset(self, ref_a, ref_b):
        """r_Pb − r_Pa at the given initial poses (global frame)."""
        out = []
        for ref in (ref_a, ref_b):
            body = ref.split(".", 1)[0]
            s = np.array([self.P.values[i] for i in self.side(ref)[1][:3]])
            r0 = (np.zeros(3) if body == "ground" else self.solids.position0(body) if self._solid(body)
                  else np.asarray(self.bodies[body].cfg.initial.position, float))
            out.append(r0 + self._A0(body) @ s)
        return out[1] - out[0]

    def _A0(self, body):
        if self._solid(body):
            return self.solids.A0(body)
        return np.eye(3) if body == "ground" else rotation(self.bodies[body].p0)

    def _solid(self, body):
        return self.solids is not None and self.solids.is_solid(body)

    def _vec(self, path, u):
        return [self.P.add(f"<{path}.{c}>", u[i]) for i, c in enumerate(XYZ)]

    # -- element groups ----------------------------------------------------------------
    def add_forces(self, system):
        self._gs = system.ground_slots
        for b in self.bodies.values():
            q = b.qidx()
            system._add_force(("SpatialInertia",), SpatialInertia, {}, b.name, q, [b.mass] + b.inertia)
            system._add_force(("SpatialGyroscopic",), SpatialGyroscopic, {}, b.name, q[3:], b.inertia)
            system._add_force(("EulerRegularization",), EulerRegularization, {}, b.name, q[3:], b.inertia[:3])
            system._add_force(("SpatialGravity",), SpatialGravity, {}, b.name, q[:3], [b.mass] + self.gravity)
        from .force_set import add_spatial_forces      # [[spatial.forces]], [spatial.road] (force_set.py)
        add_spatial_forces(self, system)

    def add_joints(self, system):
        """Normalisation rows (one per body), then the joints and drivers in config order."""
        for b in self.bodies.values():
            system._group(("Normalization",), Normalization, {}, f"{b.name}.norm", b.qidx()[3:], [ZERO], 1)
        if self.cfg is None:
            return
        joints = {j.name: j for j in self.cfg.joints}
        for j in self.cfg.joints:
            if j.type == "driver":
                self._add_driver(system, j, joints)
            else:
                self._add_joint(system, j)

    def _joint_vectors(self, j, natural=None):
        """The vector parameters of joint j (joints.VECTORS order) and its sides; with
        ``natural`` (the NaturalBodySet) a side may be a natural-coordinate body (its
        named axes and initial A₀)."""
        nat = {} if natural is None else natural.bodies
        axis = lambda ref: nat[ref.split(".", 1)[0]].axes[ref.split(".", 1)[1]] \
            if ref.split(".", 1)[0] in nat else self._axis(ref)         # noqa: E731
        ba, bb = j.a.split(".", 1)[0], j.b.split(".", 1)[0]
        Aa0, Ab0 = (nat[b].A0 if b in nat else self._A0(b) for b in (ba, bb))
        base = f"spatial.joints.{j.name}"
        vecs = []
        if j.type in ("revolute", "cylindrical", "translational", "universal"):
            ia, ua = axis(j.axis_a)
            ib, ub = axis(j.axis_b)
            if j.type == "universal":
                if abs((Aa0 @ ua) @ (Ab0 @ ub)) > 1e-6:
                    from ..model.system import ModelError
                    raise ModelError(f"{base}.axis_b", "the universal joint's axes must be perpendicular in the "
                                     f"initial configuration (cos = {(Aa0 @ ua) @ (Ab0 @ ub):.3g})")
                vecs = list(ia) + list(ib)
            else:
                n1, n2 = perpendiculars(ua)
                vecs = self._vec(f"{base}.n1_a", n1) + self._vec(f"{base}.n2_a", n2) + list(ib)
                if j.type == "translational":
                    vecs += self._vec(f"{base}.h_b", Ab0.T @ Aa0 @ n2)
        elif j.type == "rigid":
            E = np.eye(3)
            vecs = (self._vec(f"{base}.x_a", E[0]) + self._vec(f"{base}.y_a", E[1])
                    + self._vec(f"{base}.h2_b", Ab0.T @ Aa0 @ E[1]) + self._vec(f"{base}.h3_b", Ab0.T @ Aa0 @ E[2]))
        return vecs

    def _add_joint(self, system, j):
        sb, nb = system.spatial_beams, system.natural
        if any(s.is_beam_point(r) or nb.is_natural_point(r) for s in (sb,) for r in (j.a, j.b)):
            return sb.add_joint(system, self, j)      # spatial ANCF beams, natural-coordinate bodies
        if getattr(j, "angle", None) is not None:
            from ..model.system import ModelError
            raise ModelError(f"spatial.joints.{j.name}.angle", "only a weld of two beam points holds an angle")
        if j.type not in SJ.CLASSES:
            from ..model.system import ModelError
            raise ModelError(f"spatial.joints.{j.name}.type", f"a {j.type} joint needs a natural-coordinate body "
                             "or a spatial beam point on one side")
        so = self.solids
        if so is not None and any(so.is_solid_point(r) and not so.moves_with_frame(r) for r in (j.a, j.b)):
            if j.type != "spherical":
                from ..model.system import ModelError
                raise ModelError(f"spatial.joints.{j.name}.type", f"a {j.type} joint needs an orientation, which a "
                                 "free node of a solid does not carry: attach it at the origin or a clamped node "
                                 "(spherical joints attach anywhere)")
            return so.add_spherical(system, j, self)
        qa, pa = self.side(j.a)
        qb, pb = self.side(j.b)
        cls = SJ.CLASSES[j.type]
        system._group((cls.__name__,), cls, {}, j.name, qa + qb, pa + pb + self._joint_vectors(j), cls.m)

    def _add_driver(self, system, j, joints):
        fn, coef = from_config(j.function)
        fp = [self.P.add(f"spatial.joints.{j.name}.function.{k}", c) for k, c in zip(fn.param_names(), coef)]
        if j.coordinate is not None:
            from ..model import joints as J
            body, c = j.coordinate.split(".")
            nat = system.natural.bodies
            k = (nat[body] if body in nat else self.bodies[body]).offset + XYZ.index(c)
            gs = system.ground_slots
            system._group(("SpatialCoordinateDriver", fn.kind, fn.ncoef), J.Driver,
                          {"coordinate": "x", "function": fn}, j.name, [k, gs[0], gs[1]], [ZERO, ZERO] + fp, 1)
            return
        target = joints[j.joint]
        ba, bb = target.a.split(".", 1)[0], target.b.split(".", 1)[0]
        if system.natural.is_natural_point(target.a) or system.natural.is_natural_point(target.b):
            from ..model.system import ModelError
            raise ModelError(f"spatial.joints.{j.name}.joint", f"a {j.motion} driver on {target.name!r}, a joint of a "
                             "natural-coordinate body, is not available (drive a joint between spatial bodies or "
                             "ground, or a centre-of-mass coordinate with `coordinate`)")
        qa, pa = self.side(target.a)
        qb, pb = self.side(target.b)
        if j.motion == "translation":
            u = self._axis(target.axis_a)[1]
            base = f"spatial.joints.{j.name}"
            d0 = self._initial_offset(target.a, target.b) @ (self._A0(ba) @ u)
            vecs = self._vec(f"{base}.u_a", u) + [self.P.add(f"<{base}.d0>", float(d0))]
            system._group(("TranslationDriver", fn.kind, fn.ncoef), TranslationDriver, {"function": fn}, j.name,
                          qa + qb, pa + pb + vecs + fp, 1)
            return
        n1, n2 = perpendiculars(self._axis(target.axis_a)[1])
        base = f"spatial.joints.{j.name}"
        vecs = (self._vec(f"{base}.n1_a", n1) + self._vec(f"{base}.n2_a", n2)
                + self._vec(f"{base}.m_b", self._A0(bb).T @ self._A0(ba) @ n1))
        system._group(("RevoluteDriver", fn.kind, fn.ncoef), RevoluteDriver, {"function": fn}, j.name,
                      qa + qb, pa + pb + vecs + fp, 1)

    # -- initial configuration -----------------------------------------------------------
    def initial_setup(self, system, q0):
        """Initial guess (given poses) and the independent rows (module docstring)."""
        if not self.bodies:
            return
        for b in self.bodies.values():
            q0[b.offset:b.offset + 3] = b.cfg.initial.position
            q0[b.offset + 3:b.offset + 7] = b.p0
        chosen = {b: b_.cfg.independent for b, b_ in self.bodies.items()}
        if all(c is None for c in chosen.values()):
            chosen = self._choose_independent(system, q0)
        for name, comps in chosen.items():
            for c in comps:
                self._independent_row(system, self.bodies[name], c)

    def _independent_row(self, system, b, c, key=None):
        """The row holding coordinate c of body b (or of a solid's frame: the same API)."""
        from ..model import joints as J
        gs = system.ground_slots
        key = key or f"spatial.bodies.{b.name}.independent"
        if c in XYZ:
            k = XYZ.index(c)
            drv = J.Driver([f"{b.name}.{c}"], [[b.offset + k, gs[0], gs[1]]], [[ZERO, ZERO, b.position[k]]],
                           [[0]], coordinate="x", function=Polynomial(1))
            system.independent.append((key, drv, b.velocity[k]))
        else:
            k = ("rx", "ry", "rz").index(c)
            row = OrientationRow([f"{b.name}.{c}"], [b.qidx()[3:]], [b.orientation], [[0]], component=k)
            system.independent.append((key, row, b.omega[k]))

    def _choose_independent(self, system, q0):
        """{body: [components]}: the n − (rows so far) best-conditioned candidates."""
        from ..model.assembly_view import AssemblyView
        from ..model.evaluation import StateEval
        n = system.n
        view = AssemblyView(system)
        z = np.zeros(n)
        Phi_q = StateEval(view, 0.0, q0, z, z, np.zeros(view.m), system.p).G().dense() if view.m else np.zeros((0, n))
        names, rows = [], []
        for b in self.bodies.values():
            E = 2.0 * E_matrix(b.p0)
            for k, c in enumerate(XYZ):
                r = np.zeros(n)
                r[b.offset + k] = 1.0
                names.append((b.name, c))
                rows.append(r)
            for k, c in enumerate(("rx", "ry", "rz")):
                r = np.zeros(n)
                r[b.offset + 3:b.offset + 7] = 10.0 * E[k]
                names.append((b.name, c))
                rows.append(r)
        chosen = {b: [] for b in self.bodies}
        rank = 0
        N = np.eye(n)
        if Phi_q.shape[0]:
            _, s, Vt = np.linalg.svd(Phi_q)
            rank = int(np.sum(s > 1e-10 * max(1.0, s[0])))
            N = Vt[rank:].T
        need = n - rank           # the degrees of freedom (redundant rows do not count)
        if need <= 0:
            return chosen
        for i in sorted(pivoted_rows(np.array(rows) @ N, need)):
            chosen[names[i][0]].append(names[i][1])
        return chosen
