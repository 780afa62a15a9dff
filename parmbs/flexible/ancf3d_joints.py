"""Joints at points of spatial ANCF beams, and the beams' initial-assembly rows.

A joint side is *rigid* — a spatial Euler-parameter body or ground (7 coordinates
(r, p) and the parameters (s', g) of ``spatial/joints.py``: s' the point relative to the
centre of mass in the body frame, g the ground mask, p + g(1, 0, 0, 0) the pose) —,
*natural* (a natural-coordinate body, ``spatial/natural.py``: 12 coordinates (r, e₁, e₂,
e₃), the parameters s'; r_P = r + x̄e₁ + ȳe₂ + z̄e₃) or *beam* (the 12 coordinates of
the element the point lies on and the 5 beam-point parameters of
``ancf.beam_point_xi``).  Natural and beam points are linear in their coordinates
(r = S(ξ)e, r′ = S′(ξ)e), so such a side adds nothing to γ.

* spherical (3 rows), seed 000 Eq. 41:   Φ = r_a − r_b,
      γ = Ä_a^v s'_a (rigid a; Ä^v = 2B(ṗ, ṗ), the velocity part of Ä) − 0.
* revolute, universal, cylindrical, translational between a rigid or natural side a
  and a natural side b (``_AxisPair``, AXIS_PAIRS): the primitive stacks of
  spatial/joints.py on these sides.
* weld, rigid or natural a – beam b (5 rows): spherical, and the beam tangent keeps its
  initial direction in a's frame: (A_a n'_k)·r′_b = 0, k = 1, 2, with n'_1, n'_2 ⊥ the
  initial tangent (body frame of a; parameters; natural: A_a n' = Σ n'_k e_k).  The seed's Eq. 42 fixes all three components
  of A_aᵀr′_B, which also fixes |r′_B| — the beam's axial stretch at the node — and
  makes the row set redundant with the element's axial stiffness; the two rows here fix
  only the direction (the element has no twist for a third row to act on).
      γ_k = (Ä_a^v n'_k)·r′_b + 2 (Ȧ_a n'_k)·ṙ′_b   (natural: Ä_a^v = 0).
"""
import numpy as np

from ..model.component import ClosedFormJacobians, Constraint, Force, register
from ..spatial.joints import CLASSES, VECTORS
from ..spatial.kinematics import E0, bilinear, dot, mv, rotation, rotation_jacobian
from .ancf import BEAM_POINT_NP, beam_point_matrices

SIDE_NQ = {"rigid": 7, "natural": 12, "beam": 12}
SIDE_NP = {"rigid": 4, "natural": 3, "beam": BEAM_POINT_NP}


def _side(kind, q, v, p):
    """(r, ∂r/∂q (…, 3, nq), the velocity part of r̈) of one side."""
    if kind == "rigid":
        e = q[..., 3:7] + p[..., 3:4] * E0
        s = p[..., 0:3]
        r = q[..., 0:3] + mv(rotation(e), s)
        Je = rotation_jacobian(e, s)
        Jr = np.concatenate([np.broadcast_to(np.eye(3), Je.shape[:-1] + (3,)), Je], -1)
        g = None if v is None else mv(2.0 * bilinear(v[..., 3:7], v[..., 3:7]), s)
        return r, Jr, g
    S = beam_point_matrices(p, dim=3) if kind == "beam" else _natural_matrix(p)
    r = np.einsum("...ij,...j->...i", S, q)
    return r, S, None if v is None else 0.0 * r


def _natural_matrix(s):
    """C(s') = [I, x̄ I, ȳ I, z̄ I] (…, 3, 12) of a natural-coordinate body point
    (spatial/natural.py, seed Eq. 37)."""
    w = np.concatenate([np.ones(s.shape[:-1] + (1,), s.dtype), s[..., 0:3]], -1)     # (…, 4)
    out = np.zeros(s.shape[:-1] + (3, 4, 3), s.dtype)
    for c in range(3):
        out[..., c, :, c] = w
    return out.reshape(s.shape[:-1] + (3, 12))


def _direction(kind, q, v, p, n):
    """A body-fixed direction a = A n' of side a (rigid or natural): (a, ∂a/∂q (…, 3, nq),
    ȧ, the velocity part of ä); None for the last two without ``v``."""
    if kind == "rigid":
        e = q[..., 3:7] + p[..., 3:4] * E0
        a = mv(rotation(e), n)
        Je = rotation_jacobian(e, n)
        J = np.concatenate([np.zeros(Je.shape[:-1] + (3,), Je.dtype), Je], -1)
        if v is None:
            return a, J, None, None
        ed = v[..., 3:7]
        return a, J, mv(2.0 * bilinear(e, ed), n), mv(2.0 * bilinear(ed, ed), n)
    C = _natural_matrix(n)
    C = np.concatenate([np.zeros(C.shape[:-1] + (3,), C.dtype), C[..., 3:]], -1)     # a = Σ n_k e_k
    a = np.einsum("...ij,...j->...i", C, q)
    if v is None:
        return a, C, None, None
    ad = np.einsum("...ij,...j->...i", C, v)
    return a, C, ad, 0.0 * ad


def _bcast_cat(parts, axis):
    """Concatenate along ``axis`` (negative) after broadcasting the other axes.  Parts whose
    other axes already agree (the common case: every part carries the batch axes) go
    straight to ``np.concatenate`` — the same copy, without the broadcasting calls that
    were 13 % of the double wishbone's forward + adjoint (profile, issue 22)."""
    nd = max(x.ndim for x in parts)
    s0 = parts[0].shape
    if all(x.ndim == nd and x.shape[:axis] == s0[:axis] and x.shape[axis + 1 or nd:] == s0[axis + 1 or nd:]
           for x in parts):
        return np.concatenate(parts, axis)
    parts = [x.reshape((1,) * (nd - x.ndim) + x.shape) for x in parts]
    ax = axis % nd
    lead = np.broadcast_shapes(*(tuple(1 if i == ax else s for i, s in enumerate(x.shape)) for x in parts))
    return np.concatenate([np.broadcast_to(x, tuple(x.shape[i] if i == ax else lead[i] for i in range(nd)))
                           for x in parts], axis)


class _BeamPair(Constraint):
    kinds = ("rigid", "beam")
    weld = False

    def _split(self, x):
        na = SIDE_NQ[self.kinds[0]]
        return (None, None) if x is None else (x[..., :na], x[..., na:])

    def _parts(self, q, p, v=None):
        ka, kb = self.kinds
        pa = SIDE_NP[ka]
        (qa, qb), (va, vb) = self._split(q), self._split(v)
        return _side(ka, qa, va, p[..., :pa]), _side(kb, qb, vb, p[..., pa:pa + SIDE_NP[kb]])

    def _normals(self, p):
        o = SIDE_NP[self.kinds[0]] + SIDE_NP[self.kinds[1]]
        return p[..., o:o + 3], p[..., o + 3:o + 6]

    def _tangent(self, q, p, v=None):
        """S′_b and r′_b (and ṙ′_b) of the beam side b of a weld."""
        pa = SIDE_NP[self.kinds[0]]
        _, qb = self._split(q)
        Sp = beam_point_matrices(p[..., pa:pa + BEAM_POINT_NP], deriv=True, dim=3)
        d = np.einsum("...ij,...j->...i", Sp, qb)
        return Sp, d, None if v is None else np.einsum("...ij,...j->...i", Sp, self._split(v)[1])

    def phi(self, t, q, p):
        A, B = self._parts(q, p)
        rows = [A[0] - B[0]]
        if self.weld:
            qa, _ = self._split(q)
            _, d, _ = self._tangent(q, p)
            rows += [dot(_direction(self.kinds[0], qa, None, p, n)[0], d)[..., None] for n in self._normals(p)]
        return _bcast_cat(rows, -1)

    def phi_q(self, t, q, p):
        A, B = self._parts(q, p)
        J = _bcast_cat([A[1], -B[1]], -1)
        if not self.weld:
            return J
        qa, _ = self._split(q)
        Sp, d, _ = self._tangent(q, p)
        rows = [J]
        for n in self._normals(p):
            a, Ja, _, _ = _direction(self.kinds[0], qa, None, p, n)
            ja = np.einsum("...i,...ik->...k", d, Ja)
            jb = np.einsum("...i,...ik->...k", a, Sp)
            rows.append(_bcast_cat([ja, jb], -1)[..., None, :])
        return _bcast_cat(rows, -2)

    def gamma(self, t, q, v, p):
        A, B = self._parts(q, p, v)
        rows = [(0.0 * A[0] if A[2] is None else A[2]) - B[2]]
        if self.weld:
            qa, _ = self._split(q)
            va, _ = self._split(v)
            _, d, dd = self._tangent(q, p, v)
            for n in self._normals(p):
                _, _, ad, add = _direction(self.kinds[0], qa, va, p, n)
                rows.append((dot(add, d) + 2.0 * dot(ad, dd))[..., None])
        return _bcast_cat(rows, -1)


def _pair(kinds, weld):
    ka, kb = kinds
    name = f"Spatial{ka.capitalize()}{kb.capitalize()}{'Weld' if weld else 'Spherical'}"
    attrs = dict(kinds=kinds, weld=weld, nq=SIDE_NQ[ka] + SIDE_NQ[kb],
                 np_=SIDE_NP[ka] + SIDE_NP[kb] + (6 if weld else 0), m=5 if weld else 3,
                 __doc__=f"{'Weld' if weld else 'Spherical'} joint, side a {ka}, side b {kb} (module docstring).")
    cls = type(name, (_BeamPair,), attrs)
    cls.__module__ = __name__
    return register(cls)


#: (side a, side b, weld) -> class; side a "rigid" is an Euler-parameter body or ground
PAIRS = {(ka, kb, w): _pair((ka, kb), w)
         for ka, kb, w in (("rigid", "beam", False), ("beam", "beam", False), ("rigid", "beam", True),
                           ("rigid", "natural", False), ("natural", "natural", False),
                           ("natural", "beam", False), ("natural", "beam", True))}
SpatialRigidBeamSpherical = PAIRS[("rigid", "beam", False)]
SpatialBeamBeamSpherical = PAIRS[("beam", "beam", False)]
SpatialRigidBeamWeld = PAIRS[("rigid", "beam", True)]


class _AxisPair(Constraint):
    """A revolute, universal, cylindrical or translational joint between a rigid side a
    (Euler-parameter body or ground) or a natural side a and a natural side b: the stack
    of primitives ``prims`` of spatial/joints.py (("sph",), ("dot1", i, j), ("dot2", i);
    i, j index the vector parameters after the two sides', 3 each) with each side's point
    P = r + A s' and body-fixed directions A n' read by ``_side`` and ``_direction``
    (natural: C(s') q and Σ n'_k e_k, linear in q, no velocity part):

        sph   Φ = P_a − P_b,   Φ_q = [J_Pa, −J_Pb],   γ = P̈_a^v − P̈_b^v;
        dot1  Φ = a·b,         Φ_q = [bᵀJ_a, aᵀJ_b],  γ = ä^v·b + 2ȧ·ḃ + a·b̈^v;
        dot2  Φ = n·d, d = P_b − P_a,  Φ_q = [dᵀJ_n − nᵀJ_Pa, nᵀJ_Pb],
              γ = n̈^v·d + 2ṅ·ḋ + n·(P̈_b^v − P̈_a^v)

    (r̈^v, ä^v the velocity parts of the second derivatives, zero on a natural side).
    p = (side a, side b, vectors…) with the vectors of joints.VECTORS.  The constraint
    Hessian is the base class's complex step through Φ_q."""
    kinds = ("rigid", "natural")
    prims = ()

    def _sides(self, q, p, v=None):
        ka, kb = self.kinds
        na, pa, pb = SIDE_NQ[ka], SIDE_NP[ka], SIDE_NP[kb]
        qa, qb = q[..., :na], q[..., na:]
        va, vb = (None, None) if v is None else (v[..., :na], v[..., na:])
        sa, sb = p[..., :pa], p[..., pa:pa + pb]
        vec = lambda i: p[..., pa + pb + 3 * i:pa + pb + 3 * i + 3]        # noqa: E731
        return (_side(ka, qa, va, sa), _side(kb, qb, vb, sb),
                lambda i: _direction(ka, qa, va, sa, vec(i)), lambda j: _direction(kb, qb, vb, sb, vec(j)), va, vb)

    def _rows(self, q, p, v, what):
        A, B, da, db, va, vb = self._sides(q, p, v)
        out = []
        for pr in self.prims:
            if pr[0] == "sph":
                out.append(A[0] - B[0] if what == 0 else _bcast_cat([A[1], -B[1]], -1) if what == 1 else A[2] - B[2])
                continue
            a, Ja, ad, add = da(pr[1])
            if pr[0] == "dot1":
                b, Jb, bd, bdd = db(pr[2])
                if what == 0:
                    row = dot(a, b)
                elif what == 1:
                    row = _bcast_cat([np.einsum("...i,...ik->...k", b, Ja), np.einsum("...i,...ik->...k", a, Jb)], -1)
                else:
                    row = dot(add, b) + 2.0 * dot(ad, bd) + dot(a, bdd)
            else:
                d = B[0] - A[0]
                if what == 0:
                    row = dot(a, d)
                elif what == 1:
                    row = _bcast_cat([np.einsum("...i,...ik->...k", d, Ja) - np.einsum("...i,...ik->...k", a, A[1]),
                                      np.einsum("...i,...ik->...k", a, B[1])], -1)
                else:
                    dd = np.einsum("...ij,...j->...i", B[1], vb) - np.einsum("...ij,...j->...i", A[1], va)
                    row = dot(add, d) + 2.0 * dot(ad, dd) + dot(a, B[2] - A[2])
            out.append(row[..., None, :] if what == 1 else row[..., None])
        return _bcast_cat(out, -2 if what == 1 else -1)

    def phi(self, t, q, p):
        return self._rows(q, p, None, 0)

    def phi_q(self, t, q, p):
        return self._rows(q, p, None, 1)

    def gamma(self, t, q, v, p):
        return self._rows(q, p, v, 2)


def _axis_pair(kinds, jtype):
    ka, kb = kinds
    prims = CLASSES[jtype].prims
    attrs = dict(kinds=kinds, prims=prims, nq=SIDE_NQ[ka] + SIDE_NQ[kb], m=CLASSES[jtype].m,
                 np_=SIDE_NP[ka] + SIDE_NP[kb] + 3 * len(VECTORS[jtype]),
                 __doc__=f"{jtype.capitalize()} joint, side a {ka}, side b {kb} (``_AxisPair``).")
    cls = type(f"Spatial{ka.capitalize()}{kb.capitalize()}{jtype.capitalize()}", (_AxisPair,), attrs)
    cls.__module__ = __name__
    return register(cls)


#: (side a, side b, joint type) -> class: the joints with axes on natural-coordinate bodies
AXIS_PAIRS = {(ka, kb, t): _axis_pair((ka, kb), t) for ka, kb in (("rigid", "natural"), ("natural", "natural"))
              for t in ("revolute", "universal", "cylindrical", "translational")}



def _unit_rates(a, ad):
    """(â, â̇, â̈ᵛ) of the unit vector â = a/|a| along a path with ȧ = ad and ä = 0:
    â̇ = (ȧ − â(â·ȧ))/|a|,  â̈ᵛ = −(2 â̇ (â·ȧ) + â (â̇·ȧ))/|a|  (complex-step safe)."""
    n = np.sqrt(dot(a, a))[..., None]
    u = a / n
    if ad is None:
        return u, n, None, None
    s = dot(u, ad)[..., None]
    ud = (ad - u * s) / n
    return u, n, ud, -(2.0 * ud * s + u * dot(ud, ad)[..., None]) / n


@register
class SpatialBeamBeamWeld(Constraint):
    """Weld of two gradient-deficient beams at points A (beam a) and B (beam b), e.g. the
    apex of a welded wishbone (two tubes, seed 000 §6.3):

        Φ = (r_A − r_B,  â·b̂ − cos θ₀)        (4 rows),  â = r′_A/|r′_A|, b̂ = r′_B/|r′_B|,

    the points coincide and the angle between the two tangents keeps its initial value
    θ₀.  A gradient-deficient element has no cross-section frame (no twist), so the
    included angle is all a weld of two such beams can hold; the seed's Eq. 42
    (R^T r′ fixed in a rigid body's frame) has no beam–beam form.  Rows:
        Φ_q = ([S_A, −S_B]; [(P_a b̂/|r′_A|)ᵀS′_A, (P_b â/|r′_B|)ᵀS′_B]),  P_u = I − ûûᵀ,
        γ = (0; â̈ᵛ·b̂ + 2 â̇·b̂̇ + â·b̂̈ᵛ)   (``_unit_rates``).
    p = (beam point A (5), beam point B (5), θ₀) — θ₀ the config's ``angle`` (a design
    path: a link can make it follow moved beam ends).  At a straight, unstretched initial
    configuration the angle row follows from the two beams' lengths when they close a
    triangle (a wishbone: both roots on the chassis), so ``spatial_beams`` drops beam b's
    |r′₀| = 1 assembly row for it (the angle row then sets beam b's chord length)."""
    nq, np_, m = 24, 2 * BEAM_POINT_NP + 1, 4

    def _geom(self, q, p, v=None):
        out = []
        for k in range(2):
            pk, qk = p[..., k * BEAM_POINT_NP:(k + 1) * BEAM_POINT_NP], q[..., 12 * k:12 * k + 12]
            S = beam_point_matrices(pk, dim=3)
            Sp = beam_point_matrices(pk, deriv=True, dim=3)
            d = np.einsum("...ij,...j->...i", Sp, qk)
            dd = None if v is None else np.einsum("...ij,...j->...i", Sp, v[..., 12 * k:12 * k + 12])
            out.append((S, Sp, np.einsum("...ij,...j->...i", S, qk), d, dd))
        return out

    def phi(self, t, q, p):
        (_, _, ra, da, _), (_, _, rb, db, _) = self._geom(q, p)
        ua, ub = _unit_rates(da, None)[0], _unit_rates(db, None)[0]
        return _bcast_cat([ra - rb, (dot(ua, ub) - np.cos(p[..., 2 * BEAM_POINT_NP]))[..., None]], -1)

    def phi_q(self, t, q, p):
        (Sa, Spa, _, da, _), (Sb, Spb, _, db, _) = self._geom(q, p)
        ua, na, _, _ = _unit_rates(da, None)
        ub, nb, _, _ = _unit_rates(db, None)
        ga = (ub - ua * dot(ua, ub)[..., None]) / na            # ∂(â·b̂)/∂r′_A
        gb = (ua - ub * dot(ua, ub)[..., None]) / nb
        row = _bcast_cat([np.einsum("...i,...ik->...k", ga, Spa), np.einsum("...i,...ik->...k", gb, Spb)], -1)
        return _bcast_cat([_bcast_cat([Sa, -Sb], -1), row[..., None, :]], -2)

    def gamma(self, t, q, v, p):
        (_, _, ra, da, dda), (_, _, rb, db, ddb) = self._geom(q, p, v)
        ua, _, uda, udda = _unit_rates(da, dda)
        ub, _, udb, uddb = _unit_rates(db, ddb)
        g = dot(udda, ub) + 2.0 * dot(uda, udb) + dot(ua, uddb) + 0.0 * p[..., 0]
        return _bcast_cat([0.0 * (ra - rb), g[..., None]], -1)


class _PairDistance(Constraint):
    """Distance row between a point C of side a and D of side b (rigid, natural or beam;
    a rigid link with ball ends, e.g. a tie rod):

        Φ = ½(|d|² − ℓ₀²),  d = r_C − r_D;   Φ_q = dᵀ[J_C, −J_D];
        γ = d·(r̈_C^v − r̈_D^v) + |ḋ|²,  ḋ = J_C q̇_a − J_D q̇_b,

    r̈^v the velocity part of a rigid side's point acceleration (0 for natural and beam
    points, which are linear in q).  p = (side a, side b, ℓ₀)."""
    kinds = ("natural", "natural")

    def _geometry(self, q, p, v=None):
        ka, kb = self.kinds
        na, pa, pb = SIDE_NQ[ka], SIDE_NP[ka], SIDE_NP[kb]
        A = _side(ka, q[..., :na], None if v is None else v[..., :na], p[..., :pa])
        B = _side(kb, q[..., na:], None if v is None else v[..., na:], p[..., pa:pa + pb])
        return A, B, p[..., pa + pb]

    def phi(self, t, q, p):
        A, B, l0 = self._geometry(q, p)
        d = A[0] - B[0]
        return (0.5 * (dot(d, d) - l0 * l0))[..., None]

    def phi_q(self, t, q, p):
        A, B, _ = self._geometry(q, p)
        d = A[0] - B[0]
        return _bcast_cat([np.einsum("...i,...ik->...k", d, A[1]), -np.einsum("...i,...ik->...k", d, B[1])],
                          -1)[..., None, :]

    def gamma(self, t, q, v, p):
        A, B, _ = self._geometry(q, p, v)
        ka = SIDE_NQ[self.kinds[0]]
        d = A[0] - B[0]
        dd = np.einsum("...ij,...j->...i", A[1], v[..., :ka]) - np.einsum("...ij,...j->...i", B[1], v[..., ka:])
        return (dot(d, A[2] - B[2]) + dot(dd, dd))[..., None]


#: the side pairs of the point-pair elements (rigid–rigid: spatial/joints.py, forces.py)
POINT_PAIRS = (("rigid", "natural"), ("rigid", "beam"), ("natural", "natural"), ("natural", "beam"), ("beam", "beam"))


def _point_pair_class(base, suffix, nextra, what, kinds, **attrs):
    """Register ``Spatial<A><B><suffix>``, ``base`` on sides ``kinds`` with ``nextra``
    parameters after the two sides' (a distance row, a spring-damper)."""
    ka, kb = kinds
    cls = type(f"Spatial{ka.capitalize()}{kb.capitalize()}{suffix}", (base,),
               dict(kinds=kinds, nq=SIDE_NQ[ka] + SIDE_NQ[kb], np_=SIDE_NP[ka] + SIDE_NP[kb] + nextra,
                    __doc__=f"{what}, side a {ka}, side b {kb} (``{base.__name__}``).", **attrs))
    cls.__module__ = __name__
    return register(cls)


#: (side a, side b) -> distance-row class
DISTANCES = {k: _point_pair_class(_PairDistance, "Distance", 1, "Distance row", k, m=1) for k in POINT_PAIRS}

# -- initial assembly: a straight, unstretched beam ------------------------------------------


@register
class Beam3Shape(Constraint):
    """One row of "node k lies on the straight unstretched beam through node 0":
    q = (node 0, node k) (12), p = (L, k/n_el); ``component`` c selects the row:
    0–2: r_k − r_0 − s_k r′_0 (x, y, z) with s_k = L k/n_el;  3–5: r′_k − r′_0."""
    nq, np_, m = 12, 2, 1

    def __init__(self, names, qidx, pidx, rows, component=0):
        self.component = component
        super().__init__(names, qidx, pidx, rows)

    def phi(self, t, q, p):
        c = self.component
        if c < 3:
            val = q[..., 6 + c] - q[..., c] - p[..., 0] * p[..., 1] * q[..., 3 + c]
        else:
            val = q[..., 6 + c] - q[..., c] + 0.0 * p[..., 0]
        return val[..., None]

    def phi_q(self, t, q, p):
        c = self.component
        J = np.zeros(np.broadcast_shapes(q.shape[:-1], p.shape[:-1]) + (1, 12), dtype=np.result_type(q, p))
        J[..., 0, 6 + c] = 1.0
        J[..., 0, c] = -1.0
        if c < 3:
            J[..., 0, 3 + c] = -p[..., 0] * p[..., 1]
        return J

    def gamma(self, t, q, v, p):
        return 0.0 * self.phi(t, q, p) + 0.0 * v[..., :1]


# -- spring-dampers between points of any two sides ------------------------------------------


class _PairSpringDamper(ClosedFormJacobians, Force):
    """Spring-damper between a point C of side a and D of side b (rigid, natural or beam),
    ℓ = |r_C − r_D|, u = (r_C − r_D)/ℓ, the points' velocities ṙ = (∂r/∂q) q̇:

    * ``law = "linear"``: tension T = k(ℓ − ℓ₀) + c ℓ̇, ℓ̇ = u·(ṙ_C − ṙ_D); force on C
      f_C = −T u (as ``spatial/forces.SpatialSpring``);
    * ``law = "relative"``: seed 000 Eq. 43/65 (App. C): f_C = −k(ℓ − ℓ₀) u − c (ṙ_C − ṙ_D),
      the damper acting on the whole relative velocity.

    r = −(J_Cᵀ f_C, −J_Dᵀ f_C);  p = (side a, side b, k, c, ℓ₀);  V = ½k(ℓ − ℓ₀)².

    Jacobians in closed form when neither side is rigid (natural and beam points are
    linear in q: B = [J_C, −J_D] constant, d = B q, ḋ = B q̇): r_q = −Bᵀ (∂f/∂d) B,
    r_v = −Bᵀ (∂f/∂ḋ) B with, "relative", ∂f/∂d = −k[(1 − ℓ₀/ℓ) I + (ℓ₀/ℓ) u uᵀ],
    ∂f/∂ḋ = −c I; "linear", ∂f/∂d = −u (k u + c (ḋ − u ℓ̇)/ℓ)ᵀ − T (I − u uᵀ)/ℓ,
    ∂f/∂ḋ = −c u uᵀ.  A rigid side (J_C depends on q) keeps the complex step.  Was the
    complex step on every side: 14 % of the double wishbone's numpy forward (issue 22)."""
    uses_v = True
    kinds = ("rigid", "beam")

    def __init__(self, names, qidx, pidx, law="linear"):
        self.law = law
        super().__init__(names, qidx, pidx)

    def _geometry(self, q, v, p):
        ka, kb = self.kinds
        na, pa, pb = SIDE_NQ[ka], SIDE_NP[ka], SIDE_NP[kb]
        A = _side(ka, q[..., :na], None, p[..., :pa])
        B = _side(kb, q[..., na:], None, p[..., pa:pa + pb])
        d = A[0] - B[0]
        dv = (np.einsum("...ij,...j->...i", A[1], v[..., :na]) - np.einsum("...ij,...j->...i", B[1], v[..., na:]))
        law = p[..., pa + pb:pa + pb + 3]
        return A[1], B[1], d, dv, law

    def r(self, t, q, v, a, p):
        Ja, Jb, d, dv, law = self._geometry(q, v, p)
        k, c, l0 = law[..., 0], law[..., 1], law[..., 2]
        l = np.sqrt(dot(d, d))
        u = d / l[..., None]
        if self.law == "linear":
            f = -(k * (l - l0) + c * dot(u, dv))[..., None] * u
        else:
            f = -(k * (l - l0))[..., None] * u - c[..., None] * dv
        ra = -np.einsum("...ij,...i->...j", Ja, f)
        rb = np.einsum("...ij,...i->...j", Jb, f)
        return _bcast_cat([ra, rb], -1) + 0.0 * a[..., :1]

    def closed_form(self, q, v, a, p):
        return "rigid" not in self.kinds and super().closed_form(q, v, a, p)

    def jacobians(self, t, q, v, a, p):
        if not self.closed_form(q, v, a, p):
            return super().jacobians(t, q, v, a, p)
        Ja, Jb, d, dv, law = self._geometry(q, v, p)
        k, c, l0 = (law[..., i, None, None] for i in range(3))
        l = np.sqrt(dot(d, d))[..., None, None]
        u = d[..., :, None] / l                                    # (…, 3, 1)
        uu = u * np.swapaxes(u, -1, -2)
        I = np.eye(3)
        if self.law == "linear":
            ld = np.einsum("...ik,...i->...k", u, dv)[..., None]   # ℓ̇ (…, 1, 1)
            T = k * (l - l0) + c * ld
            dT = k * np.swapaxes(u, -1, -2) + c * (dv[..., None, :] - ld * np.swapaxes(u, -1, -2)) / l
            Fd = -u * dT - T * (I - uu) / l
            Fv = -c * uu
        else:
            Fd = -k * ((1.0 - l0 / l) * I + (l0 / l) * uu)
            Fv = -c * I + 0.0 * uu
        B = _bcast_cat([Ja, -Jb], -1)
        rq = -np.einsum("...ki,...kl,...lj->...ij", B, Fd, B)
        rv = -np.einsum("...ki,...kl,...lj->...ij", B, Fv, B)
        return rq, rv, None

    def energy(self, t, q, v, p):
        """V = ½ k (ℓ − ℓ₀)²."""
        _, _, d, _, law = self._geometry(q, 0.0 * v, p)
        return 0.5 * law[..., 0] * (np.sqrt(dot(d, d)) - law[..., 2]) ** 2


#: (side a, side b) -> spring-damper class (rigid–rigid: spatial/forces.SpatialSpring)
SPRINGS = {k: _point_pair_class(_PairSpringDamper, "SpringDamper", 3, "Spring-damper", k) for k in POINT_PAIRS}
