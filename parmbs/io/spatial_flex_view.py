"""What a spatial flexible model looks like (``parmbs export --xdmf``, io/xdmf.py): the
deformed centre lines of the spatial ANCF beams and the frames of the natural-coordinate
bodies, from the stored coordinates and the model's parameters.

* beam: r(ξ) = S(ξ) e on each element, S = [s₁ I₃, s₂ I₃, s₃ I₃, s₄ I₃] with the
  Hermite shape functions of ``ancf.shape`` (seed 000 Eq. 29, flexible/ancf3d.py) and
  e = (r_i, r′_i, r_j, r′_j) — the element's own interpolation, so the drawn line is the
  one the model integrates; ``per`` segments per element;
* natural body with q_b = (r, e₁, e₂, e₃) (spatial/natural_set.py): a point s′ is at
  r + s′ₓ e₁ + s′ᵧ e₂ + s′_z e₃ (Eq. 37); its frame axes are r + ℓ e_k.
"""
import numpy as np

from ..flexible.ancf import shape


def beam_lines(system, q, per=4):
    """{beam name: centre line (rows, n_el·per + 1, 3)} of every spatial beam at the rows
    of ``q`` (rows, n)."""
    sb = getattr(system, "spatial_beams", None)
    if sb is None:
        return {}
    qe = system.extend(np.atleast_2d(q))
    xs = np.linspace(0.0, 1.0, per + 1)
    out = {}
    for name, b in sb.beams.items():
        l = float(np.real(system.p[b.p["length"]])) / b.nel
        pts = []
        for e in range(b.nel):
            el = qe[:, b.element(e)].reshape(len(qe), 4, 3)      # (r_i, r'_i, r_j, r'_j)
            for xi in (xs if e == 0 else xs[1:]):
                pts.append(np.einsum("k,rkc->rc", np.array(shape(xi, l)), el))
        out[name] = np.stack(pts, 1)
    return out


def natural_bodies(system, q):
    """{body name: (com (rows, 3), {point: (rows, 3)}, axes (rows, 3, 3): e₁, e₂, e₃)} of
    every natural-coordinate body."""
    nb = getattr(system, "natural", None)
    if nb is None:
        return {}
    qe = system.extend(np.atleast_2d(q))
    out = {}
    for name, b in nb.bodies.items():
        qb = qe[:, b.qidx()].reshape(len(qe), 4, 3)
        r, axes = qb[:, 0], qb[:, 1:]
        pts = {}
        for pt, idx in b.points.items():
            if pt == "com":
                continue
            s = np.asarray(np.real(system.p[idx]), float)
            pts[pt] = r + np.einsum("k,rkc->rc", s, axes)
        out[name] = (r, pts, axes)
    return out
