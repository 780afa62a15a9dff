"""Spatial joints between two Euler-parameter bodies, or a body and ground, in one
vectorized group per kind.

Local coordinates of an element: q = (r_a, p_a, r_b, p_b) (14).  Parameters:
(s'_a, g_a, s'_b, g_b, vectors...) — s' the joint point relative to the body's centre
of mass (body frame), g ∈ {0, 1} the ground mask: a ground side reads ground's zero
slots and its Euler parameters are p = q[3:7] + g (1, 0, 0, 0), the identity pose, so a
ground point's s' is its global position (SPATIAL.md "Ground in spatial components").
Vectors are body-fixed unit vectors (3 parameters each).

Each joint is a stack of three primitive constraints (the spherical, dot-1 and dot-2
primitives of Nikravesh 1988 ch. 7 and Haug 1989 ch. 9), with A = A(p), ȧ = Ȧ a',
ä = Ä a' (kinematics.py):

* spherical (3 rows):  Φ = r_a + A_a s'_a − r_b − A_b s'_b
      γ = Ä_a^v s'_a − Ä_b^v s'_b,      Ä^v = 2 B(ṗ, ṗ) (the velocity part of Ä)
* dot-1 (1 row), a' on body a, b' on body b:  Φ = (A_a a')ᵀ(A_b b')
      γ = (Ä_a^v a')ᵀ b + 2 ȧᵀḃ + aᵀ(Ä_b^v b')
* dot-2 (1 row), n' on body a, d = r_Pb − r_Pa:  Φ = (A_a n')ᵀ d
      γ = (Ä_a^v n')ᵀ d + 2 ṅᵀḋ + nᵀ(Ä_b^v s'_b − Ä_a^v s'_a)

Φ_q is analytic from ∂(A s')/∂p = ``rotation_jacobian`` (the derived blocks complex-step
through it).  Joints (rows):

* ``SpatialSpherical`` (3): spherical.
* ``SpatialRevolute`` (5): spherical; dot-1(n1_a, u_b), dot-1(n2_a, u_b) with n1', n2' ⊥ u'_a.
* ``SpatialUniversal`` (4): spherical; dot-1(u_a, u_b) (the cross axes stay perpendicular).
* ``SpatialCylindrical`` (4): dot-1(n1_a, u_b), dot-1(n2_a, u_b), dot-2(n1_a), dot-2(n2_a).
* ``SpatialTranslational`` (5): cylindrical + dot-1(n1_a, h_b), h'_b = A_b0ᵀ A_a0 n2'_a
  (locks the rotation about the axis at its initial value).
* ``SpatialRigid`` (6): spherical + dot-1(x_a, h2_b), dot-1(x_a, h3_b), dot-1(y_a, h3_b),
  h'_k = A_b0ᵀ A_a0 e_k (relative orientation locked at its initial value).
"""
import numpy as np

from ..model.component import Constraint, register
from .joint_kernels import JointKernel
from .kinematics import E0, bilinear, dot, mv, rotation, rotation_dot, rotation_jacobian

NQ = 14
NSIDE = 8          # s'_a, g_a, s'_b, g_b


class Frames:
    """Both sides' pose (and velocity) quantities of a joint element, computed once."""

    def __init__(self, q, p, v=None):
        self.ra, self.rb = q[..., 0:3], q[..., 7:10]
        self.ea = q[..., 3:7] + p[..., 3:4] * E0
        self.eb = q[..., 10:14] + p[..., 7:8] * E0
        self.sa, self.sb = p[..., 0:3], p[..., 4:7]
        self.Aa, self.Ab = rotation(self.ea), rotation(self.eb)
        if v is not None:
            self.va, self.vb = v[..., 0:3], v[..., 7:10]
            eda, edb = v[..., 3:7], v[..., 10:14]
            self.Ada, self.Adb = rotation_dot(self.ea, eda), rotation_dot(self.eb, edb)
            self.Qa, self.Qb = 2.0 * bilinear(eda, eda), 2.0 * bilinear(edb, edb)

    def d(self):
        """d = r_Pb − r_Pa."""
        return self.rb + mv(self.Ab, self.sb) - self.ra - mv(self.Aa, self.sa)

    def d_dot(self):
        return self.vb + mv(self.Adb, self.sb) - self.va - mv(self.Ada, self.sa)


# -- primitives: value (..., k), Jacobian (..., k, 14), γ (..., k) ----------------------
def sph_phi(F):
    return -F.d()


def sph_jac(F):
    Ja, Jb = rotation_jacobian(F.ea, F.sa), rotation_jacobian(F.eb, F.sb)
    I = np.broadcast_to(np.eye(3), Ja.shape[:-1] + (3,))
    return np.concatenate([I, Ja, -I, -Jb], -1)


def sph_gamma(F):
    return mv(F.Qa, F.sa) - mv(F.Qb, F.sb)


def dot1_phi(F, u, w):
    return dot(mv(F.Aa, u), mv(F.Ab, w))[..., None]


def dot1_jac(F, u, w):
    a, b = mv(F.Aa, u), mv(F.Ab, w)
    ja = np.einsum("...i,...ik->...k", b, rotation_jacobian(F.ea, u))
    jb = np.einsum("...i,...ik->...k", a, rotation_jacobian(F.eb, w))
    z = np.zeros(ja.shape[:-1] + (3,), ja.dtype)
    return np.concatenate([z, ja, z, jb], -1)[..., None, :]


def dot1_gamma(F, u, w):
    a, b = mv(F.Aa, u), mv(F.Ab, w)
    return (dot(mv(F.Qa, u), b) + 2.0 * dot(mv(F.Ada, u), mv(F.Adb, w)) + dot(a, mv(F.Qb, w)))[..., None]


def dot1_rate(F, u, w):
    """d/dt (A_a u')ᵀ(A_b w')."""
    return dot(mv(F.Ada, u), mv(F.Ab, w)) + dot(mv(F.Aa, u), mv(F.Adb, w))


def dot2_phi(F, u):
    return dot(mv(F.Aa, u), F.d())[..., None]


def dot2_jac(F, u):
    n, d = mv(F.Aa, u), F.d()
    ja = (np.einsum("...i,...ik->...k", d, rotation_jacobian(F.ea, u))
          - np.einsum("...i,...ik->...k", n, rotation_jacobian(F.ea, F.sa)))
    jb = np.einsum("...i,...ik->...k", n, rotation_jacobian(F.eb, F.sb))
    return np.concatenate([-n, ja, n, jb], -1)[..., None, :]


def dot2_gamma(F, u):
    n, d = mv(F.Aa, u), F.d()
    dd = mv(F.Qb, F.sb) - mv(F.Qa, F.sa)
    return (dot(mv(F.Qa, u), d) + 2.0 * dot(mv(F.Ada, u), F.d_dot()) + dot(n, dd))[..., None]


def cat(parts, trail):
    """Concatenate along axis −trail after broadcasting the leading axes (a complex-step
    perturbation axis may be on some parts only)."""
    shape = np.broadcast_shapes(*(x.shape[:-trail] for x in parts))
    return np.concatenate([np.broadcast_to(x, shape + x.shape[-trail:]) for x in parts], -trail)


class _SpatialJoint(Constraint):
    """A stack of primitives ``prims``: ("sph",), ("dot1", i, j), ("dot2", i) with i, j
    indices of the vector parameters (3 each, after the 8 side parameters)."""
    nq = NQ
    prims = ()
    nvec = 0

    @staticmethod
    def _vec(p, i):
        return p[..., NSIDE + 3 * i:NSIDE + 3 * i + 3]

    def _rows(self, F, p, kind):
        out = []
        for pr in self.prims:
            args = [self._vec(p, i) for i in pr[1:]]
            fn = {"sph": (sph_phi, sph_jac, sph_gamma), "dot1": (dot1_phi, dot1_jac, dot1_gamma),
                  "dot2": (dot2_phi, dot2_jac, dot2_gamma)}[pr[0]][kind]
            out.append(fn(F, *args))
        return out

    #: Φ, Φ_q and ∂(Φ_qᵀλ)/∂q from the batched closed forms of joint_kernels.py (one
    #: cached geometry per iterate); False: the per-primitive forms above and the
    #: complex-step Hessian (kept as the reference: tests and benchmarks/spatial_speed.py)
    analytic = True

    def _geometry(self, q, p):
        """joint_kernels.JointGeometry at (q, p), reused while q and p are unchanged (Φ,
        Φ_q and the Hessian of one Newton iterate share it)."""
        c = getattr(self, "_gcache", None)
        if (c is not None and c[0].shape == q.shape and c[1].shape == p.shape
                and np.array_equal(c[0], q) and np.array_equal(c[1], p)):
            return c[2]
        G = self._kernel().geometry(q, p)
        if not (np.iscomplexobj(q) or np.iscomplexobj(p)):
            self._gcache = (q.copy(), p.copy(), G)
        return G

    @classmethod
    def _kernel(cls):
        if "_kern" not in cls.__dict__:
            cls._kern = JointKernel(cls.prims, cls.nvec)
        return cls._kern

    def phi(self, t, q, p):
        if self.analytic:
            return self._kernel().phi(self._geometry(q, p))
        return cat(self._rows(Frames(q, p), p, 0), 1)

    def phi_q(self, t, q, p):
        if self.analytic:
            return self._kernel().phi_q(self._geometry(q, p))
        return cat(self._rows(Frames(q, p), p, 1), 2)

    def hess_lam(self, t, q, p, lam):
        if self.analytic:
            return self._kernel().hess_lam(self._geometry(q, p), lam)
        return super().hess_lam(t, q, p, lam)

    def gamma(self, t, q, v, p):
        return cat(self._rows(Frames(q, p, v), p, 2), 1)


def _joint(name, prims, nvec):
    m = sum(3 if pr[0] == "sph" else 1 for pr in prims)
    cls = type(name, (_SpatialJoint,), {"prims": prims, "nvec": nvec, "m": m, "np_": NSIDE + 3 * nvec,
                                        "__doc__": f"Spatial joint: {prims} (module docstring)."})
    cls.__module__ = __name__
    return register(cls)


SpatialSpherical = _joint("SpatialSpherical", (("sph",),), 0)
SpatialRevolute = _joint("SpatialRevolute", (("sph",), ("dot1", 0, 2), ("dot1", 1, 2)), 3)
SpatialUniversal = _joint("SpatialUniversal", (("sph",), ("dot1", 0, 1)), 2)
SpatialCylindrical = _joint("SpatialCylindrical",
                            (("dot1", 0, 2), ("dot1", 1, 2), ("dot2", 0), ("dot2", 1)), 3)
SpatialTranslational = _joint("SpatialTranslational",
                              (("dot1", 0, 2), ("dot1", 1, 2), ("dot2", 0), ("dot2", 1), ("dot1", 0, 3)), 4)
SpatialRigid = _joint("SpatialRigid", (("sph",), ("dot1", 0, 2), ("dot1", 0, 3), ("dot1", 1, 3)), 4)

#: vector parameters of each kind, in order (spatial_set.py fills them)
VECTORS = {"spherical": (), "revolute": ("n1_a", "n2_a", "u_b"), "universal": ("u_a", "u_b"),
           "cylindrical": ("n1_a", "n2_a", "u_b"), "translational": ("n1_a", "n2_a", "u_b", "h_b"),
           "rigid": ("x_a", "y_a", "h2_b", "h3_b")}
CLASSES = {"spherical": SpatialSpherical, "revolute": SpatialRevolute, "universal": SpatialUniversal,
           "cylindrical": SpatialCylindrical, "translational": SpatialTranslational, "rigid": SpatialRigid}
