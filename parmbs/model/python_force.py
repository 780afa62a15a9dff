"""Force elements written by the user in Python (``[[forces]] type = "python"``).

The user's function returns the generalized force Q it applies to the centre-of-mass
coordinates (x, y, θ) of the bodies it names; parmbs adds r = −Q to the dynamic
residual M a + Φ_qᵀλ − Q = 0 like any other force element:

    Q = f(t, q, v, p)      q, v: (..., 3·nb) — (x, y, θ) of each named body in order
                           p: dict name → (...) array of the element's ``parameters``
                           returns (..., 3·nb)  (q, v and p share their leading shape)

Every derivative block (∂r/∂q, ∂r/∂v, ∂r/∂p) is the complex-step default of
model/component.py, so the function must be *vectorized* over the leading axes and
*complex-step safe*: numpy arithmetic, np.sin/np.sqrt/…, no abs() or np.real, no
comparisons on values that depend on q, v or p (use smooth forms; see the example
below).  Then its blocks are exact to round-off, and the generic block test
(tests/test_components.py) checks this class with ``example_bushing``.  The
parameters are model parameters: ``forces.NAME.parameters.KEY`` design paths.

A failure of the user's code (an exception, sys.exit, a result of the wrong shape or
non-finite values) is a ``ModelError`` naming ``forces.NAME.callable``: one line, exit 2.
"""
import numpy as np

from .component import Force, register


def example_bushing(t, q, v, p):
    """A linear bushing between the centres of mass of two bodies: Q_b = −k (r_b − r_a)
    − c (ṙ_b − ṙ_a) − k_θ (θ_b − θ_a) e_θ, and the opposite on body a.  Parameters k,
    c, k_theta.  The example of the docs and of the generic block test."""
    d, dd = q[..., 3:6] - q[..., 0:3], v[..., 3:6] - v[..., 0:3]
    k, c, kt = p["k"][..., None], p["c"][..., None], p["k_theta"]
    F = -k * d[..., :2] - c * dd[..., :2]
    M = -kt * d[..., 2]
    Fb = np.concatenate([F, M[..., None]], -1)
    return np.concatenate([-Fb, Fb], -1)


@register
class PythonForce(Force):
    """r = −f(t, q, v, p) with the user's f (module docstring).  nq = 3·(number of bodies),
    np_ = number of parameters; the class defaults (2 bodies, k, c, k_theta) are those
    of ``example_bushing``, used when no function is given (the generic block test)."""
    nq, np_ = 6, 3
    uses_v = True

    def __init__(self, names, qidx, pidx, fn=example_bushing, nbodies=2, parameters=("k", "c", "k_theta"),
                 key="forces.?.callable"):
        self.nq, self.np_ = 3 * nbodies, len(parameters)
        super().__init__(names, qidx, pidx)
        self.fn, self.param_names, self.key = fn, list(parameters), key

    def r(self, t, q, v, a, p):
        from .system import ModelError
        from .user_code import describe_failure
        # one common shape for q, v and every parameter (the complex-step blocks add a
        # leading axis to one argument only): the user's code need not broadcast
        want = np.broadcast_shapes(q.shape, v.shape, p.shape[:-1] + (q.shape[-1],))
        q, v = np.broadcast_to(q, want), np.broadcast_to(v, want)
        pd = {k: np.broadcast_to(p[..., j], want[:-1]) for j, k in enumerate(self.param_names)}
        try:
            Q = np.asarray(self.fn(t, q, v, pd))
        except (Exception, SystemExit) as e:        # the user's code: name it, never a traceback
            raise ModelError(self.key, f"at t = {np.real(t):.6g}: {describe_failure(e)}") from None
        if Q.shape != want:
            raise ModelError(self.key, f"returned shape {Q.shape}, expected {want} (the generalized force on "
                                       f"(x, y, θ) of each of its {self.nq // 3} bodies, vectorized over the "
                                       "leading axes)")
        if Q.dtype.kind not in "fc" or not np.all(np.isfinite(Q)):
            raise ModelError(self.key, f"returned non-finite or non-float values at t = {np.real(t):.6g}")
        return -Q + 0.0 * a[..., :1]
