"""Bookkeeping of floating-frame (FFR) beams in a System (``[[beams]]`` with
``type = "ffr"``): coordinates, parameters, element groups, joints and loads at beam
nodes, drivers of the frame, the initial-assembly rows and fibre-stress outputs.

Coordinates: FFR beams follow the ANCF beams.  Beam b with n_el elements owns
3 + 3 n_el consecutive coordinates: its frame (x, y, angle) — the origin at the root
node, x along the undeformed beam — then (u, v, φ) of nodes 1..n_el in the body frame.
Reference conditions: the root is clamped in the frame (u₀ = v₀ = φ₀ = 0), so node 0's
elastic coordinates are ground's zero slots (seed 001 §3.2 lists all three elastic
coordinates of the crank's node A, which this choice keeps).

Parameters (config paths): ``beams.B.length|width|height|side|density|E``,
``beams.B.stiffness_damping`` (only when > 0: its FfrDamping groups),
``beams.B.initial.x|y|angle``, ``beams.B.initial_velocity.x|y|angle`` (frame pose and
rigid velocity).  Constants (n_el, k/n_el, element indices) are entries of p.

Points: ``B.root`` (= node0, the frame origin), ``B.nodeK``, ``B.tip`` and configured
``points`` whose arclength falls on a node (joints act at nodes).

Initial configuration: undeformed, q_f = 0 and q̇_f = 0 (3 n_el independent rows per
beam), frame pose from ``initial``/``independent`` exactly as for a rigid body (the
frame *is* the body's coordinate set, so ``model.joints.Driver`` with c̄ = 0 serves).
"""
import numpy as np

from ..config.points import ffr_node as node_of  # the point-name rule (config/points.py)
from ..model.parameters import ZERO
from ..model.body_kinds import body_kind
from .ffr_beam import FfrInertia, FfrGravity, FfrElastic, FfrDamping, fibre_stress
from .ffr_joints import FfrRevolute, FfrWeld, FfrPointForce

NODE_DOF = 3


def const(P, value):
    """A constant entry of the parameter vector (not a config path)."""
    return P.add(f"<const {float(value)!r}>", value)


class _FfrBeam:
    def __init__(self, cfg, P, offset):
        self.cfg = cfg
        self.name = cfg.name
        self.nel = cfg.elements
        self.offset = offset
        self.ncoord = 3 + NODE_DOF * self.nel
        base = f"beams.{cfg.name}"
        self.p = {k: P.add(f"{base}.{k}", getattr(cfg, k)) for k in ("density", "E", "length")}
        if cfg.side is not None:
            self.p["width"] = self.p["height"] = P.add(f"{base}.side", cfg.side)
        else:
            self.p.update({k: P.add(f"{base}.{k}", getattr(cfg, k)) for k in ("width", "height")})
        if cfg.stiffness_damping:
            self.p["stiffness_damping"] = P.add(f"{base}.stiffness_damping", cfg.stiffness_damping)
        self.p["nel"] = const(P, self.nel)
        self.kconst = [const(P, k) for k in range(self.nel + 1)]
        self.fconst = [const(P, k / self.nel) for k in range(self.nel + 1)]
        for k in ("x", "y", "angle"):
            self.p[f"initial.{k}"] = P.add(f"{base}.initial.{k}", getattr(cfg.initial, k))
            self.p[f"initial_velocity.{k}"] = P.add(f"{base}.initial_velocity.{k}",
                                                    getattr(cfg.initial_velocity, k))

    def frame(self):
        return [self.offset, self.offset + 1, self.offset + 2]

    def node(self, k, ground):
        """Coordinate indices (u, v, φ) of node k (ground's zero slots at the clamped root)."""
        if k == 0:
            return list(ground)
        o = self.offset + 3 + NODE_DOF * (k - 1)
        return [o, o + 1, o + 2]

    def element_params(self, e):
        return [self.p[k] for k in ("density", "width", "height", "E", "length", "nel")] + [self.kconst[e]]


@body_kind("ffr", order=20)  # floating-frame beams: after the ANCF ones
class FfrBeamSet:
    """All FFR beams of a model."""

    def __init__(self, config, P, offset):
        self.P = P
        self.beams = {}
        for b in getattr(config, "beams", None) or []:
            if b.type == "ffr":
                self.beams[b.name] = _FfrBeam(b, P, offset)
                offset += self.beams[b.name].ncoord
        self.ncoord = sum(b.ncoord for b in self.beams.values())

    def __len__(self):
        return len(self.beams)

    def coordinate_names(self):
        """"B.x", "B.y", "B.angle" (frame), then "B.node3.u|v|phi" (body-frame elastic)."""
        out = []
        for b in self.beams.values():
            out += [f"{b.name}.{c}" for c in ("x", "y", "angle")]
            out += [f"{b.name}.node{k}.{c}" for k in range(1, b.nel + 1) for c in ("u", "v", "phi")]
        return out

    def is_ffr_point(self, ref):
        return ref.split(".", 1)[0] in self.beams

    def is_ffr_body(self, name):
        return name in self.beams

    def coord(self, beam, k, comp):
        """Global index of (u, v, phi)[comp] of node k ≥ 1 of ``beam``."""
        b = self.beams[beam]
        return b.offset + 3 + NODE_DOF * (k - 1) + ("u", "v", "phi").index(comp)

    def frame(self, beam):
        return self.beams[beam].frame()

    # -- element groups ---------------------------------------------------------------------
    def add_forces(self, system, gx, gy):
        gs = system.ground_slots
        for b in self.beams.values():
            for e in range(b.nel):
                name = f"{b.name}[{e}]"
                qidx = b.frame() + b.node(e, gs) + b.node(e + 1, gs)
                mat = b.element_params(e)
                system._add_force(("FfrInertia",), FfrInertia, {}, name, qidx, mat)
                system._add_force(("FfrGravity",), FfrGravity, {}, name, qidx, mat + [gx, gy])
                system._add_force(("FfrElastic",), FfrElastic, {}, name, qidx, mat)
                if "stiffness_damping" in b.p:       # Rayleigh β_K > 0 (FfrDamping)
                    system._add_force(("FfrDamping",), FfrDamping, {}, name, qidx, mat + [b.p["stiffness_damping"]])

    # -- joints, drivers, loads --------------------------------------------------------------
    def side(self, system, ref, key):
        """(6 coordinate indices, 6 parameter indices) of a joint side (ffr_joints)."""
        from ..model.system import ModelError
        body, point = ref.split(".", 1)
        gs = system.ground_slots
        if body in self.beams:
            b = self.beams[body]
            k = node_of(b.cfg, point)
            if k is None:
                raise ModelError(key, f"point {point!r} of FFR beam {body!r} is not at a node "
                                 f"(joints and loads act at nodes: arclength k·{b.cfg.length / b.nel:g})")
            return b.frame() + b.node(k, gs), [ZERO] * 4 + [b.p["length"], b.fconst[k]]
        if system.beams.is_beam_point(ref) or system.plates.is_plate_point(ref):
            raise ModelError(key, f"{ref!r}: FFR beams join rigid bodies, ground and other FFR beams only")
        body, pidx = system._point(ref)
        return system._qb(body) + list(gs), list(pidx) + [ZERO, ZERO]

    def add_joint(self, system, j):
        from ..model.system import ModelError
        base = f"joints.{j.name}"
        if j.type not in ("revolute", "weld"):
            raise ModelError(f"{base}.type", f"a {j.type} joint cannot attach to an FFR beam (revolute and weld can)")
        qa, pa = self.side(system, j.a, f"{base}.a")
        qb, pb = self.side(system, j.b, f"{base}.b")
        if j.type == "revolute":
            system._group(("FfrRevolute",), FfrRevolute, {}, j.name, qa + qb, pa + pb, 2)
        else:
            th = self.P.add(f"{base}.angle", self._angle0(system, j.b) - self._angle0(system, j.a))
            system._group(("FfrWeld",), FfrWeld, {}, j.name, qa + qb, pa + pb + [th], 3)

    def _angle0(self, system, ref):
        body = ref.split(".", 1)[0]
        if body in self.beams:
            return self.beams[body].cfg.initial.angle
        return {b.name: b.initial.angle for b in system.config.bodies}.get(body, 0.0)

    def add_driver(self, system, j, fn, coef):
        """A driver of an FFR beam's frame coordinate (x, y of the root, or angle)."""
        from ..model import joints as J
        body, coord = j.coordinate.rsplit(".", 1)
        pidx = [ZERO, ZERO] + [self.P.add(f"joints.{j.name}.function.{k}", c)
                               for k, c in zip(fn.param_names(), coef)]
        system._group(("Driver", coord, fn.kind, fn.ncoef), J.Driver, {"coordinate": coord, "function": fn},
                      j.name, self.frame(body), pidx, 1)

    def add_point_force(self, system, f, fn, fp):
        qidx, pp = self.side(system, f.point, f"forces.{f.name}.point")
        P = self.P
        base = f"forces.{f.name}"
        pidx = pp + [P.add(f"{base}.value.x", f.value[0]), P.add(f"{base}.value.y", f.value[1])] + fp
        system._add_force(("FfrPointForce", fn.kind, fn.ncoef), FfrPointForce, {"function": fn},
                          f.name, qidx, pidx)

    # -- initial configuration ---------------------------------------------------------------
    def initial_setup(self, system, q0):
        """Frame pose guesses; rows q_f = 0 (velocity 0) and the frame's independent rows."""
        from ..model import joints as J
        from ..model.timefunctions import Polynomial
        gs = system.ground_slots
        for b in self.beams.values():
            c = b.cfg
            q0[b.frame()] = [c.initial.x, c.initial.y, c.initial.angle]
            key = f"beams.{b.name}.initial"
            for k in range(1, b.nel + 1):
                for i, comp in enumerate(("u", "v", "phi")):
                    drv = J.Driver([f"{b.name}.node{k}.{comp}"], [[b.node(k, gs)[i], gs[0], gs[1]]],
                                   [[ZERO, ZERO, ZERO]], [[0]], coordinate="x", function=Polynomial(1))
                    system.independent.append((key, drv, ZERO))
            for k in c.independent:
                drv = J.Driver([f"{b.name}.{k}"], [b.frame()], [[ZERO, ZERO, b.p[f"initial.{k}"]]], [[0]],
                               coordinate=k, function=Polynomial(1))
                system.independent.append((f"beams.{b.name}.independent", drv, b.p[f"initial_velocity.{k}"]))

    # -- outputs -------------------------------------------------------------------------------
    def stress_layout(self, system, names=None):
        """(qidx (E, 9), pidx (E, 7)) of every element of the named beams (all by default),
        for ``fibre_stress``."""
        gs = system.ground_slots
        qi, pi = [], []
        for b in self.beams.values():
            if names is not None and b.name not in names:
                continue
            for e in range(b.nel):
                qi.append(b.frame() + b.node(e, gs) + b.node(e + 1, gs))
                pi.append(b.element_params(e))
        return np.array(qi, np.int64), np.array(pi, np.int64)

    def stresses(self, system, q, p, names=None):
        """Fibre stresses of every element end, upper and lower (E·4,), at state q."""
        qi, pi = self.stress_layout(system, names)
        return fibre_stress(system.extend(q)[qi], p[pi]).reshape(-1)


def ks(sigma, rho_ks):
    """Kreisselmeier–Steinhauser aggregate of |σ|: KS = σ̂ + (1/ρ) ln Σ_i exp(ρ(±σ_i − σ̂)),
    σ̂ = max|Re σ| (a shift that leaves KS unchanged and keeps exp from overflowing);
    max|σ| ≤ KS ≤ max|σ| + ln(2N)/ρ.  Complex-step safe."""
    s = np.concatenate([sigma, -sigma], -1)
    shift = np.max(np.real(s), axis=-1, keepdims=True)
    return shift[..., 0] + np.log(np.sum(np.exp(rho_ks * (s - shift)), -1)) / rho_ks


#: the columns of ``fibre_stress`` (upper ξ=0, lower ξ=0, upper ξ=1, lower ξ=1) per fibre
FIBRES = {None: [0, 1, 2, 3], "upper": [0, 2], "lower": [1, 3]}


def ks_stress(system, q, p, rho_ks, names=None, fibre=None):
    """(KS of the fibre stresses, {"q": ∂/∂q (n,), "p": ∂/∂p}) at state q — the
    ``integrand = "python"`` form (sensitivity/objectives.UserTerm).  ``names``: the
    beams (all by default); ``fibre``: "upper" (+h/2) or "lower" (−h/2) only (both by
    default) — seed 001's Figs. 14–15 plot crank and rod, upper and lower fibre apart.

    ∂KS/∂x = Σ_i (π_i⁺ − π_i⁻) ∂σ_i/∂x with π^± = exp(ρ(±σ_i − KS)) the KS weights of
    +σ_i and −σ_i; ∂σ/∂(element q, p) are complex-step derivatives per element (σ is
    linear in q, exact to round-off).  With a complex q or p (``--method cs``) only
    the value is meaningful."""
    from ..model.component import cs_jacobian
    qi, pi = system.ffr.stress_layout(system, names)
    qe, pe = system.extend(q)[qi], p[pi]
    cols = FIBRES[fibre]
    stress = lambda x, y: fibre_stress(x, y)[..., cols]
    sig = stress(qe, pe)                                        # (E, 4 or 2)
    value = ks(sig.reshape(-1), rho_ks)
    if np.iscomplexobj(sig):
        return value, {}
    wts = np.exp(rho_ks * (sig - value)) - np.exp(rho_ks * (-sig - value))
    gq = np.einsum("ek,ekj->ej", wts, cs_jacobian(stress, [qe, pe], 0))
    gp = np.einsum("ek,ekj->ej", wts, cs_jacobian(stress, [qe, pe], 1))
    dq = np.zeros(system.n + 3)
    np.add.at(dq, qi.reshape(-1), gq.reshape(-1))
    dp = np.zeros(len(p))
    np.add.at(dp, pi.reshape(-1), gp.reshape(-1))
    return value, {"q": dq[:system.n], "p": dp}
