"""Components: vectorized groups of joints, drivers and force elements.

A component is a group of ``ne`` elements of one kind.  It declares, per element,

* ``qidx`` (ne, nq): the global coordinates it reads (ground has its own slots, which
  hold zeros and are dropped at assembly);
* ``pidx`` (ne, np): the entries of the model parameter vector p it reads;
* for constraints, ``rows`` (ne, m): its rows of Φ (and of λ).

and returns *local* residuals and derivative blocks as numpy arrays.  It never sees
PETSc; ``assembly.py`` scatters the blocks.  Only the leading-order pieces are written
by hand in each component (Φ, Φ_q, Φ_t, γ for constraints; the residual r for forces).
Every other block — the constraint Hessian ∂(Φ_qᵀλ)/∂q, ∂(Φ_q w)/∂q, ∂γ/∂(q, v),
parameter derivatives ∂/∂p, force Jacobians ∂r/∂(q, v, a) — defaults to a complex-step
derivative of a hand-written function, exact to round-off (no truncation error):

    ∂f/∂x_j = Im f(x + i h e_j) / h,   h = 1e-30.

A component may override any default with an analytic block; the generic test
``tests/test_components.py`` checks every block of every registered component
against central finite differences.
"""
import numpy as np

CS_H = 1e-30
REGISTRY = {}


def register(cls):
    """Class decorator: make a component kind visible to the generic block test."""
    REGISTRY[cls.__name__] = cls
    return cls


def cs_jacobian(f, args, i, cols=None):
    """Complex-step Jacobian of ``f(*args)`` w.r.t. the last axis of ``args[i]``.

    ``f`` must broadcast over a new leading axis.  Returns the derivative with the
    differentiated axis last: f output (ne, ...) → (ne, ..., k).  ``cols`` restricts
    the differentiation to some local columns (the result then has len(cols) last).
    """
    a, nc = cs_args(args, i, cols)
    return cs_result(f(*a), nc)


def cs_args(args, i, cols=None):
    """(the arguments of cs_jacobian's one call of f, the number of columns): ``args``
    with ``args[i]`` + i h e_j for every column j on a new leading axis."""
    x = np.asarray(args[i])
    k = x.shape[-1]
    cols = np.arange(k) if cols is None else np.asarray(cols)
    nc = len(cols)
    # x + i h e_j for every column j, built in place: this sits on every adjoint and
    # tangent step, so it avoids the (nc, …, k) identity product of the textbook form
    xc = np.zeros((nc,) + x.shape, dtype=complex)
    if np.iscomplexobj(x):
        xc[...] = x
        xc.imag[np.arange(nc), ..., cols] += CS_H
    else:
        xc.real[...] = x
        xc.imag[np.arange(nc), ..., cols] = CS_H
    # every array argument gets the new leading axis, so the output always has it
    # (size 1 where f does not depend on x: the derivative is then zero)
    a = [_lead(y) for y in args]
    a[i] = xc
    return a, nc


def cs_result(fa, nc):
    """cs_jacobian's derivative from f's value ``fa`` at ``cs_args``'s arguments."""
    out = np.asarray(fa).imag / CS_H
    if out.shape[0] != nc:
        out = np.broadcast_to(out, (nc,) + out.shape[1:])
    return out.transpose(tuple(range(1, out.ndim)) + (0,))


def _lead(y):
    """``y`` with a new leading axis of length 1 (scalars unchanged)."""
    if type(y) is np.ndarray:
        return y[None] if y.ndim else y
    return np.asarray(y)[None] if np.ndim(y) else y


class Component:
    """Base of every component group: names, index maps and the parameter map."""
    nq = 0       # local coordinates per element
    np_ = 0      # local parameters per element

    def __init__(self, names, qidx, pidx):
        self.names = list(names)
        self.qidx = np.asarray(qidx, dtype=np.int64).reshape(len(self.names), self.nq)
        self.pidx = np.asarray(pidx, dtype=np.int64).reshape(len(self.names), self.np_)

    @property
    def ne(self):
        return len(self.names)


class Constraint(Component):
    """Holonomic constraints Φ(q, t; p) = 0, m rows per element.

    Subclasses implement ``phi`` and ``gamma`` (and ``phi_t`` if rheonomic); ``phi_q``
    is worth writing analytically because it sits on every Newton iteration.
    γ is the part of Φ̈ not proportional to the acceleration:
        Φ̈ = Φ_q a + γ(q, v, t),   γ = (Φ_q v)_q v + 2 Φ_qt v + Φ_tt.
    """
    m = 0

    def __init__(self, names, qidx, pidx, rows):
        super().__init__(names, qidx, pidx)
        self.rows = np.asarray(rows, dtype=np.int64).reshape(self.ne, self.m)

    # -- hand-written -----------------------------------------------------------
    def phi(self, t, q, p):
        raise NotImplementedError

    def gamma(self, t, q, v, p):
        raise NotImplementedError

    def phi_t(self, t, q, p):
        """∂Φ/∂t (zero for scleronomic constraints)."""
        return np.zeros(np.broadcast_shapes(q.shape[:-1], p.shape[:-1]) + (self.m,))

    def phi_q(self, t, q, p):
        """Φ_q (ne, m, nq), analytic: the derived blocks complex-step through it, so it
        must not itself be a complex-step derivative."""
        raise NotImplementedError

    # -- derived blocks (complex step unless overridden) ------------------------
    # Every argument is passed to ``cs_jacobian`` (no closures over arrays) so the
    # output always carries the perturbation axis.
    def phi_qT_lam(self, t, q, p, lam):
        """Φ_qᵀ λ per element: (ne, nq)."""
        return np.einsum("...mk,...m->...k", self.phi_q(t, q, p), lam)

    def phi_q_w(self, t, q, p, w):
        """Φ_q w per element: (ne, m)."""
        return np.einsum("...mk,...k->...m", self.phi_q(t, q, p), w)

    def hess_lam(self, t, q, p, lam):
        """∂(Φ_qᵀλ)/∂q (ne, nq, nq): the constraint Hessian term of the tangent matrix."""
        return cs_jacobian(self.phi_qT_lam, [t, q, p, lam], 1)

    def phi_q_w_q(self, t, q, p, w):
        """∂(Φ_q w)/∂q (ne, m, nq) for a fixed vector w (velocity-level sensitivities)."""
        return cs_jacobian(self.phi_q_w, [t, q, p, w], 1)

    def gamma_q(self, t, q, v, p):
        return cs_jacobian(self.gamma, [t, q, v, p], 1)

    def gamma_v(self, t, q, v, p):
        return cs_jacobian(self.gamma, [t, q, v, p], 2)

    def phi_t_q(self, t, q, p):
        return cs_jacobian(self.phi_t, [t, q, p], 1)

    # -- parameter derivatives (only the local columns ``cols``) ----------------
    def phi_p(self, t, q, p, cols=None):
        return cs_jacobian(self.phi, [t, q, p], 2, cols)

    def phi_t_p(self, t, q, p, cols=None):
        return cs_jacobian(self.phi_t, [t, q, p], 2, cols)

    def phi_qT_lam_p(self, t, q, p, lam, cols=None):
        return cs_jacobian(self.phi_qT_lam, [t, q, p, lam], 2, cols)

    def phi_q_w_p(self, t, q, p, w, cols=None):
        return cs_jacobian(self.phi_q_w, [t, q, p, w], 2, cols)

    def gamma_p(self, t, q, v, p, cols=None):
        return cs_jacobian(self.gamma, [t, q, v, p], 3, cols)


class Force(Component):
    """A contribution r(t, q, v, a; p) to the dynamic residual M a + Φ_qᵀλ − Q = 0.

    Inertia enters with + (M a), applied loads with − (−Q).  ``inertial`` components
    are weighted with α_m in generalized-α, the others with α_f.  ``uses_q``,
    ``uses_v`` and ``uses_a`` let the steppers skip blocks that are identically zero
    (the generic block test checks the flags).
    """
    inertial = False
    uses_q = True
    uses_v = False
    uses_a = False

    def r(self, t, q, v, a, p):
        raise NotImplementedError

    def energy(self, t, q, v, p):
        """Kinetic or potential energy per element (0 for non-conservative loads)."""
        return np.zeros(q.shape[:-1])

    def jacobians(self, t, q, v, a, p):
        """(r_q, r_v, r_a), None where the flags say the block is zero.  Override to
        share work between the three (one geometry evaluation per Newton iterate)."""
        return (self.r_q(t, q, v, a, p) if self.uses_q else None,
                self.r_v(t, q, v, a, p) if self.uses_v else None,
                self.r_a(t, q, v, a, p) if self.uses_a else None)

    def r_q(self, t, q, v, a, p):
        return cs_jacobian(self.r, [t, q, v, a, p], 1)

    def r_v(self, t, q, v, a, p):
        return cs_jacobian(self.r, [t, q, v, a, p], 2)

    def r_a(self, t, q, v, a, p):
        return cs_jacobian(self.r, [t, q, v, a, p], 3)

    def r_p(self, t, q, v, a, p, cols=None):
        return cs_jacobian(self.r, [t, q, v, a, p], 4, cols)


class ClosedFormJacobians:
    """Mixin, listed before ``Force``, for a force whose ``jacobians`` is written in
    closed form (one geometry evaluation shared by ∂r/∂q, ∂r/∂v, ∂r/∂a): the single
    blocks ``r_q``, ``r_v``, ``r_a`` are read from it.

    Why: the steppers call only ``jacobians`` (model/evaluation.py); the single blocks
    are what the generic block test (tests/test_components.py) holds against central
    differences, so reading them from ``jacobians`` makes that test check the code the
    Newton tangent runs, not a complex-step stand-in.  A block whose ``uses_*`` flag is
    off, and every block at a state where ``closed_form`` says no, stays the complex
    step of ``Force`` (an off flag then still has its zero checked).  A ``jacobians``
    that falls back to ``super().jacobians`` where ``closed_form`` is False thus ends
    in the complex step instead of calling itself again."""

    def closed_form(self, q, v, a, p):
        """Whether ``jacobians`` is the closed form here: at a real state (the closed
        forms are written for real arguments; a complex state gets the complex step)."""
        return not any(np.iscomplexobj(x) for x in (q, v, a, p))

    def _block(self, k, t, q, v, a, p):
        """Block k (0: q, 1: v, 2: a) of ``jacobians``, None where it is not used."""
        if getattr(self, ("uses_q", "uses_v", "uses_a")[k]) and self.closed_form(q, v, a, p):
            return self.jacobians(t, q, v, a, p)[k]
        return None

    def r_q(self, t, q, v, a, p):
        J = self._block(0, t, q, v, a, p)
        return super().r_q(t, q, v, a, p) if J is None else J

    def r_v(self, t, q, v, a, p):
        J = self._block(1, t, q, v, a, p)
        return super().r_v(t, q, v, a, p) if J is None else J

    def r_a(self, t, q, v, a, p):
        J = self._block(2, t, q, v, a, p)
        return super().r_a(t, q, v, a, p) if J is None else J
