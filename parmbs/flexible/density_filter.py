"""Density filter for topology design fields (``[optimize] filter_radius``).

Element densities optimized directly on a bilinear-quad mesh form checkerboards
(alternating solid/void elements that the element stiffness overrates).  The linear
density filter of Bruns & Tortorelli (2001) / Bourdin (2001) removes them and sets a
minimum length scale: the physical density of element e is a weighted mean of the
design densities within the radius r around it,

    x̃_e = Σ_i w_ei x_i / Σ_i w_ei,    w_ei = max(0, r − |c_e − c_i|),

with c the element centres.  In matrix form x̃ = W x, W = D⁻¹ K, K symmetric (the
cone kernel, cut at the mesh boundary) and D = diag(K 1); so the chain rule for any
function of x̃ is ∂f/∂x = Wᵀ ∂f/∂x̃ = K (D⁻¹ ∂f/∂x̃).

The optimizer works on x (the design vector of the record, ``/optimize/x``); the model
is evaluated at x̃ (``/optimize/design_physical`` at the end).  The structured mesh
makes K a sum of shifted copies of the field — one numpy slice per kernel offset,
no sparse matrix and no loop over elements.
"""
from __future__ import annotations

import numpy as np


class ConeFilter:
    """W of one nx × ny structured mesh (element e = j·nx + i, sizes hx × hy)."""

    def __init__(self, nx, ny, hx, hy, radius):
        self.nx, self.ny = int(nx), int(ny)
        ri, rj = int(np.floor(radius / hx)), int(np.floor(radius / hy))
        self.offsets = []
        for dj in range(-rj, rj + 1):
            for di in range(-ri, ri + 1):
                w = radius - np.hypot(di * hx, dj * hy)
                if w > 0:
                    self.offsets.append((di, dj, w))
        self.D = self._K(np.ones((self.ny, self.nx)))          # Σ_i w_ei per element

    def _K(self, x):
        """K x for a (ny, nx) field: Σ over kernel offsets of the shifted field (zero
        outside the mesh)."""
        out = np.zeros(x.shape[:-2] + (self.ny, self.nx))
        nx, ny = self.nx, self.ny
        for di, dj, w in self.offsets:
            # out[j, i] += w x[j + dj, i + di] where both are inside the mesh
            j0, j1 = max(0, -dj), min(ny, ny - dj)
            i0, i1 = max(0, -di), min(nx, nx - di)
            if j0 < j1 and i0 < i1:
                out[..., j0:j1, i0:i1] += w * x[..., j0 + dj:j1 + dj, i0 + di:i1 + di]
        return out

    def apply(self, x):
        """x̃ = W x (the trailing axis holds the nx·ny element values)."""
        x = np.asarray(x, float)
        X = x.reshape(x.shape[:-1] + (self.ny, self.nx))
        return (self._K(X) / self.D).reshape(x.shape)

    def transpose(self, g):
        """Wᵀ g = K (D⁻¹ g): gradients with respect to x̃ → with respect to x."""
        g = np.asarray(g, float)
        G = g.reshape(g.shape[:-1] + (self.ny, self.nx))
        return self._K(G / self.D).reshape(g.shape)


def mesh_filter(mesh, radius):
    """The ConeFilter of a plate or continuum config entry (size, nx, ny)."""
    return ConeFilter(mesh.nx, mesh.ny, mesh.size[0] / mesh.nx, mesh.size[1] / mesh.ny, radius)


class DensityFilter:
    """W over the whole design vector: the cone filter on every density field of
    plates/continua, identity on every other design column.  ``radius`` None: identity."""

    def __init__(self, config, design, radius):
        self.parts = []                 # (slice of design columns, ConeFilter)
        self.radius = radius
        if radius is None:
            return
        for d in config.design:
            kind, _, rest = d.path.partition(".")
            body, _, key = rest.partition(".")
            if kind in ("plates", "continua") and key == "density" and d.name in design.fields:
                mesh = next(m for m in getattr(config, kind) if m.name == body)
                sl = design.fields[d.name]
                if sl.stop - sl.start == mesh.nx * mesh.ny:
                    self.parts.append((sl, mesh_filter(mesh, radius)))

    def __bool__(self):
        return bool(self.parts)

    def apply(self, rho):
        out = np.array(rho, float)
        for sl, f in self.parts:
            out[..., sl] = f.apply(out[..., sl])
        return out

    def transpose(self, g):
        out = np.array(g, float)
        for sl, f in self.parts:
            out[..., sl] = f.transpose(out[..., sl])
        return out
