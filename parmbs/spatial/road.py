"""Roads: a ground surface z = h(x, y) for contacts and tyres ([spatial.road]).

Every road returns (h, h_x, h_y) at global (x, y), broadcasting, complex-step safe
(polynomials and analytic functions of x, y; branches test the real part only), and at
least C² in x, y so that the contact residual, which reads the normal
n = (−h_x, −h_y, 1)/√(1 + h_x² + h_y²), is C¹ in q.

Types (``from_config``):

* ``plane``:  h = z₀ − (n_x x + n_y y)/n_z  (a plane through (0, 0, z₀) with normal n).
* ``function`` with a documented shape (z₀ added to each):
  - ``flat``:      h = 0;
  - ``bump``:      h = H sin⁴(π (x − x₀)/L) on x₀ ≤ x ≤ x₀ + L, 0 outside (a smooth speed
                   bump of height H and length L; C³ at both ends);
  - ``step``:      h = H S((x − x₀)/L), S(ξ) = 10ξ³ − 15ξ⁴ + 6ξ⁵ on [0, 1] (a step up,
                   or down for H < 0, over the length L: the step descent of seed 002
                   §4.2; C² at both ends);
  - ``sinusoid``:  h = A sin(2π x/λ + φ).
* ``table``: heights z_i at increasing x_i (a profile along x, uniform in y), the natural
  cubic spline through them (C², Hermite form on each interval) and the straight lines
  of its end slopes beyond the table (C² there too since the natural spline has h'' = 0
  at its ends).
"""
import numpy as np


class Road:
    kind = "road"

    def height(self, x, y):
        """(h, h_x, h_y) at (x, y)."""
        raise NotImplementedError

    def __repr__(self):
        return self.kind


class PlaneRoad(Road):
    kind = "plane"

    def __init__(self, z0=0.0, normal=(0.0, 0.0, 1.0)):
        n = np.asarray(normal, float)
        self.z0, self.sx, self.sy = float(z0), -n[0] / n[2], -n[1] / n[2]

    def height(self, x, y):
        return self.z0 + self.sx * x + self.sy * y, self.sx + 0.0 * x, self.sy + 0.0 * y


class ShapeRoad(Road):
    """The documented shapes of the module docstring."""

    def __init__(self, shape="flat", z0=0.0, height=0.0, length=1.0, x0=0.0,
                 amplitude=0.0, wavelength=1.0, phase=0.0):
        self.kind = shape
        self.z0, self.H, self.L, self.x0 = float(z0), float(height), float(length), float(x0)
        self.A, self.lam, self.phase = float(amplitude), float(wavelength), float(phase)
        if shape not in ("flat", "bump", "step", "sinusoid"):
            raise ValueError(f"unknown road shape {shape!r}")

    def height(self, x, y):
        x = np.asarray(x)
        zero = 0.0 * x + 0.0 * y
        if self.kind == "flat":
            return self.z0 + zero, zero, zero
        if self.kind == "sinusoid":
            k = 2 * np.pi / self.lam
            return self.z0 + self.A * np.sin(k * x + self.phase) + zero, self.A * k * np.cos(k * x + self.phase) + zero, zero
        xi = (x - self.x0) / self.L
        inside = (np.real(xi) > 0.0) & (np.real(xi) < 1.0)
        if self.kind == "bump":
            s, c = np.sin(np.pi * xi), np.cos(np.pi * xi)
            h = self.H * s ** 4
            hx = self.H * 4 * s ** 3 * c * np.pi / self.L
            return self.z0 + np.where(inside, h, zero), np.where(inside, hx, zero), zero
        # step: quintic smoothstep
        h = self.H * xi ** 3 * (10 - 15 * xi + 6 * xi * xi)
        hx = self.H * 30 * xi * xi * (1 - xi) ** 2 / self.L
        after = np.real(xi) >= 1.0
        return (self.z0 + np.where(inside, h, np.where(after, self.H + zero, zero)),
                np.where(inside, hx, zero), zero)

    def __repr__(self):
        return f"{self.kind}"


class TableRoad(Road):
    """Natural cubic spline through (x_i, z_i), linear beyond (module docstring)."""
    kind = "table"

    def __init__(self, x, z):
        from scipy.interpolate import CubicSpline
        self.x = np.asarray(x, float)
        self.z = np.asarray(z, float)
        cs = CubicSpline(self.x, self.z, bc_type="natural")
        self.c = cs.c            # (4, n-1): h = c0 t³ + c1 t² + c2 t + c3, t = x − x_i
        self.slope0 = cs(self.x[0], 1)
        self.slope1 = cs(self.x[-1], 1)

    def height(self, x, y):
        x = np.asarray(x)
        zero = 0.0 * x + 0.0 * y
        i = np.clip(np.searchsorted(self.x, np.real(x), side="right") - 1, 0, len(self.x) - 2)
        t = x - self.x[i]
        c0, c1, c2, c3 = self.c[0, i], self.c[1, i], self.c[2, i], self.c[3, i]
        h = c3 + t * (c2 + t * (c1 + t * c0))
        hx = c2 + t * (2 * c1 + t * 3 * c0)
        xr = np.real(x)
        before, after = xr < self.x[0], xr > self.x[-1]
        h = np.where(before, self.z[0] + self.slope0 * (x - self.x[0]),
                     np.where(after, self.z[-1] + self.slope1 * (x - self.x[-1]), h))
        hx = np.where(before, self.slope0 + 0.0 * x, np.where(after, self.slope1 + 0.0 * x, hx))
        return h + zero, hx + zero, zero


def normal_and_gap(road, P):
    """Road point below P, unit normal n there and the normal distance r of P from the
    tangent plane: n = (−h_x, −h_y, 1)/N, r = (P_z − h)/N, N = √(1 + h_x² + h_y²).
    Exact for a plane; on a curved road r is the distance to the tangent plane at the
    point vertically below P (first order in the curvature)."""
    h, hx, hy = road.height(P[..., 0], P[..., 1])
    N = np.sqrt(1.0 + hx * hx + hy * hy)
    n = np.stack([-hx, -hy, 1.0 + 0.0 * hx], -1) / N[..., None]
    return n, (P[..., 2] - h) / N


def from_config(cfg):
    """Road object of a validated [spatial.road] table (None: no road)."""
    if cfg is None:
        return None
    if cfg.type == "plane":
        return PlaneRoad(cfg.z0, cfg.normal)
    if cfg.type == "table":
        return TableRoad(cfg.x, cfg.z)
    return ShapeRoad(cfg.shape, z0=cfg.z0, height=cfg.height, length=cfg.length, x0=cfg.x0,
                     amplitude=cfg.amplitude, wavelength=cfg.wavelength, phase=cfg.phase)
