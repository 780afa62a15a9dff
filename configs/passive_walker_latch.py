"""A latched knee lock for the passive walker (``[[forces]] type = "python"``), written by
``configs/passive_walker_build.py --latch ANGLE``.

The shipped lock (``stance_lock``, model/contact.py) is a spring-damper towards the
straight knee, engaged by the foot's contact alone:

    M = σ_w(x) (k φ + c φ̇),    φ = θ_shank − θ_thigh,  x the foot's penetration.

When a foot lands on a bent knee (the μ = 0.2 walker lands its second foot bent 0.72 rad)
that spring engages at once and releases ½ k φ² ≈ 2.6 kJ into a 1.6 kg walker
(benchmarks/README.md, "Passive dynamic walker").  [Zhu 2014] §5.3.2 locks the knee
"after the heel-strike" of a leg whose knee the knee strike has straightened; a lock
that engages on a bent knee is not the thesis' lock.  Here the lock engages only near
the straight knee, a smooth latch window on φ:

    M = σ_w(x) L(φ) (k φ + c φ̇),   L(φ) = σ_{0.75 a²}(a² − φ²)

(σ_δ the C¹ step of model/smooth.py: L = 1 for |φ| ≤ a/2, 0 for |φ| ≥ a, C¹ between;
a the latch angle).  In the gait the stance knee stays within 1e-3 rad of straight, so
for a ≥ 2e-3 rad L ≡ 1 there and the lock is the shipped one exactly; a knee bent beyond
a at touchdown stays free, the leg buckles.  Not a true latch (no memory: a stance knee
forced beyond a unlocks again); the thesis' event-switched lock needs a state.

Parameters (the element's ``parameters``): k, c, w (the foot's engagement width), a
(latch angle), sx, sy (the foot point relative to the shank's centre of mass, shank
frame), ox, oy, nx, ny (the contact's ground line: a point and its normal, normalised
here).  Bodies: [thigh, shank].  Complex-step safe (model/python_force.py):
tests/test_passive_walker.py checks its blocks against central differences.
"""
import numpy as np

from parmbs.model import smooth


def stance_latch(t, q, v, p):
    """Q on (x, y, θ) of [thigh, shank]: Q_θ = +M on the thigh, −M on the shank (StanceLock's
    r = −Q with a = thigh, b = shank; M in the module docstring)."""
    th, ts = q[..., 2], q[..., 5]
    sx, sy = p["sx"], p["sy"]
    c, s = np.cos(ts), np.sin(ts)
    Px = q[..., 3] + c * sx - s * sy
    Py = q[..., 4] + s * sx + c * sy
    nn = np.sqrt(p["nx"] * p["nx"] + p["ny"] * p["ny"])
    x = -((Px - p["ox"]) * p["nx"] + (Py - p["oy"]) * p["ny"]) / nn     # penetration (point foot)
    phi = ts - th
    a2 = p["a"] * p["a"]
    M = (smooth.step(x, p["w"]) * smooth.step(a2 - phi * phi, 0.75 * a2)
         * (p["k"] * phi + p["c"] * (v[..., 5] - v[..., 2])))
    z = 0.0 * M
    return np.stack([z, z, M, z, z, -M], -1)
