"""``[[optimize.constraints]]`` as MMA constraint functions fᵢ(ρ) ≤ 0.

Each config entry ``lower ≤ c(ρ) ≤ upper`` gives one MMA row per finite bound, scaled
by the bound so the rows are O(1) (what Svanberg's notes recommend for MMA)::

    upper:  fᵢ(ρ) = (c(ρ) − upper) / s_u ≤ 0,     lower:  fᵢ(ρ) = (lower − c(ρ)) / s_l ≤ 0
    s = |bound|  (1 where the bound is 0)

so fᵢ is the relative violation and max(0, maxᵢ fᵢ) the reported constraint violation.

c(ρ) is either
* an objective ψ_c (``objective = "name"``): value from the forward run, ∇ψ_c from the
  same adjoint sweep as the objective's (Problem.adjoint returns every objective's
  gradient from one backward sweep, one adjoint column each), or
* the volume fraction of a density design field (``kind = "volume_fraction"``,
  ``field = "plates.P.density"``): V(ρ) = (1/N) Σₑ ρₑ over the field's N element
  densities (equal-area elements of a uniform plate mesh), ∂V/∂ρₑ = 1/N on the field's
  columns, 0 elsewhere — explicit in the design vector, no simulation needed, or
* a named scalar of ``[parameters]`` or a scalar design variable (``kind =
  "parameter"``, ``parameter = "l"``; config/links.py), e.g. seed 000 Eq. 55's
  l = |C − D| ≥ 0.001 m: explicit in ρ, ∂c/∂ρ by a complex step of its expressions.
"""
from __future__ import annotations

import numpy as np


class Constraints:
    def __init__(self, config, design):
        self.rows = []              # (label, kind, ref, sign, bound, scale)
        self.objectives = []        # objective names needed from the adjoint sweep
        nd = len(design)
        self.nd = nd
        for i, c in enumerate(config.optimize.constraints):
            if c.objective is not None:
                label, ref = c.objective, c.objective
                if ref not in self.objectives:
                    self.objectives.append(ref)
            elif c.kind == "parameter":
                from ..config.links import Links
                self.links = Links(config)
                self.at = {n: design.fields[n].start for n in self.links.design}
                label, ref = c.parameter, c.parameter
            else:
                d = next(d for d in config.design if d.path == c.field)    # checked in checks.py
                ref = design.fields[d.name]
                label = f"volume_fraction({c.field})"
            for sign, bound in ((1.0, c.upper), (-1.0, c.lower)):
                if bound is not None:
                    scale = abs(bound) if bound != 0 else 1.0
                    op = "<=" if sign > 0 else ">="
                    self.rows.append((f"{label} {op} {bound:g}", c.kind or "objective", ref, sign,
                                      float(bound), scale))

    def __len__(self):
        return len(self.rows)

    @property
    def labels(self):
        return [r[0] for r in self.rows]

    def evaluate(self, rho, values, grads):
        """(f (m,), ∂f/∂ρ (m, nd)) at ρ from the objective ``values``/``grads`` dicts;
        ``grads=None``: (f, None), from the values alone (the descent guard decides on the
        violation before the adjoint sweep is paid for)."""
        m = len(self.rows)
        f, df = np.zeros(m), (None if grads is None else np.zeros((m, self.nd)))
        for i, (_, kind, ref, sign, bound, scale) in enumerate(self.rows):
            if kind == "objective":
                c, dc = values[ref], (None if grads is None else np.asarray(grads[ref], float))
            elif kind == "parameter":
                c, dc = self.parameter(rho, ref)
            else:
                n = ref.stop - ref.start
                c = float(np.sum(rho[ref])) / n
                dc = np.zeros(self.nd)
                dc[ref] = 1.0 / n
            f[i] = sign * (c - bound) / scale
            if df is not None:
                df[i] = (sign / scale) * dc
        return f, df

    def values(self, rho, values):
        """The constrained quantities c(ρ) per config row (for the final report)."""
        out = []
        for label, kind, ref, *_ in self.rows:
            out.append((label, values[ref] if kind == "objective" else self.parameter(rho, ref)[0]
                        if kind == "parameter" else float(np.sum(rho[ref])) / (ref.stop - ref.start)))
        return out

    def parameter(self, rho, name, h=1e-30):
        """(c, ∂c/∂ρ) of the named scalar ``name`` at ρ: its value and a complex step
        of size h per design variable (exact to rounding, links.py)."""
        vals = {n: float(rho[j]) for n, j in self.at.items()}
        c = float(self.links.env(vals)[name])
        dc = np.zeros(self.nd)
        for n, j in self.at.items():
            env = self.links.env({**vals, n: vals[n] + 1j * h})
            dc[j] = np.imag(env[name]) / h
        return c, dc


def violation(f):
    """Largest relative violation max(0, maxᵢ fᵢ) (0 without constraints)."""
    return float(max(0.0, np.max(f, initial=0.0)))
