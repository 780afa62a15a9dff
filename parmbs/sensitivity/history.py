"""Sensitivity histories (``parmbs gradient --history``): how the gradient builds up
over time, the figures of Bestle & Eberhard and of López Varela et al. (the five-bar
ψ3 history, Comput. Struct. 2025, Fig. 2).

Recorded through the sweeps' ``on_step`` hook (sensitivity/problem.py), per design
variable ρ (the parameter columns chained by J = ∂p_cols/∂ρ, design.py):

* direct: G(t_k) = Σ_{j≤k} dψ_j/dρ, the discrete objective's gradient accumulated
  from t₀ to t_k (G(t_N) = ∇ψ), and the state sensitivities dq/dρ, dv/dρ, da/dρ of the
  recorded coordinates at t_k;
* adjoint: G(t_k) = Σ_{j≥k} (∂ψ_j/∂ρ + μ_{j+1}ᵀ ∂R_{j+1}/∂ρ), accumulated from t_N back to
  t_k.  ∇ψ = G(t₀) + μ₀ᵀ dx₀/dρ: the initial-state term (assembly of x₀ = (q, v, a, λ)
  and the reference points) is added after the sweep, so the curve at t₀ and ∇ψ differ
  by it (``initial_term`` = ∇ψ − G(t₀), written beside the history).

Rows: every ``stride``-th step and the last, the smallest stride that keeps at most
MAX_ROWS rows and MAX_VALUES numbers (all steps of the five-bar's N = 5000; an element
field of 10⁵ densities gets about 200 rows).  Coordinates of the state sensitivities: all of them for n ≤ ALL_COORDINATES,
else those of the bodies the objectives name (``point = "B.P"``, ``body = "B"``).
"""
from __future__ import annotations

import math

import numpy as np

#: at most this many history rows (the last step always included)
MAX_ROWS = 5001
#: at most this many numbers in the history (160 MB)
MAX_VALUES = 20_000_000
#: models up to this many coordinates record all of them in dq/dv/da
ALL_COORDINATES = 60


def _coordinates(problem):
    from ..io.hdf5 import coordinate_names
    names = coordinate_names(problem.sys)
    if len(names) <= ALL_COORDINATES:
        return list(range(len(names))), names
    bodies = set()
    for ob in problem.config.objectives:
        for ref in (getattr(ob, "point", None), getattr(ob, "body", None)):
            if ref:
                bodies.add(ref.split(".")[0])
    idx = [i for i, n in enumerate(names) if n.split(".")[0] in bodies]
    return idx, [names[i] for i in idx]


class History:
    """The ``on_step`` recorder of one sweep (module docstring); ``finish(grads)`` with
    the returned gradient fills ``initial_term``."""

    def __init__(self, problem, method):
        if method not in ("direct", "adjoint"):
            raise ValueError(f"a sensitivity history needs the direct or adjoint method, not {method!r}")
        self.problem, self.method = problem, method
        N = problem.nsteps
        self.objectives = [ob.name for ob in problem.objectives]
        self.design = list(problem.design.names)
        self.J = problem.design.jacobian(problem._p(None))             # (ncols, nd)
        self.cols, self.coordinates = _coordinates(problem) if method == "direct" else ([], [])
        K, nd = len(self.objectives), len(self.design)
        per_row = nd * (K + 3 * len(self.cols))
        self.stride = max(1, math.ceil(N / (MAX_ROWS - 1)), math.ceil((N + 1) * per_row / MAX_VALUES))
        self.steps = np.array(sorted(set(range(0, N + 1, self.stride)) | {N}), np.int64)
        self._row = {int(k): i for i, k in enumerate(self.steps)}
        R = len(self.steps)
        self.t = np.full(R, np.nan)
        self.gradient = np.full((R, K, nd), np.nan)
        self.states = {s: np.full((R, len(self.cols), nd), np.nan) for s in ("dq", "dv", "da")} \
            if method == "direct" else {}
        self.initial_term = None

    def __call__(self, k, t, grad, dx=None):
        i = self._row.get(int(k))
        if i is None:
            return
        ex = self.problem.design.expand                               # swept -> all columns (design.py)
        if isinstance(grad, dict):                                    # direct: {objective: (nswept,)}
            G = np.stack([ex(np.asarray(grad[o], float)) for o in self.objectives], 0)
        else:                                                         # adjoint: (nswept, K), per-rank parts
            G = ex(np.asarray(self.problem.combine_gradient(grad), float)).T
        self.t[i] = t
        self.gradient[i] = G @ self.J
        if dx is not None and self.cols:
            for name, d in zip(("dq", "dv", "da"), dx[:3]):
                self.states[name][i] = ex(np.asarray(d, float)[self.cols], axis=1) @ self.J

    def finish(self, grads):
        """Record ∇ψ's initial-state term (adjoint) from the final gradient dict."""
        final = np.stack([np.asarray(grads[o], float) for o in self.objectives], 0)
        self.final = final
        self.initial_term = final - self.gradient[0] if self.method == "adjoint" else np.zeros_like(final)
        return self

    def arrays(self):
        """{dataset: array} of ``/sensitivity/history``."""
        out = {"t": self.t, "step": self.steps, "gradient": self.gradient, "final": self.final,
               "initial_term": self.initial_term}
        out.update(self.states)
        return out

    def attrs(self):
        return {"method": self.method, "stride": self.stride,
                "accumulated": "t0 to t" if self.method == "direct" else "t_end back to t"}

    def names(self):
        """{dataset: names} stored as string datasets in the group (a field's 10⁵ design
        names do not fit an attribute; /names/<key> belongs to the trajectory)."""
        out = {"objectives": self.objectives, "design": self.design}
        if self.coordinates:
            out["coordinates"] = self.coordinates
        return out


def write_history(path, hist, comm=None):
    """Rank 0 appends ``/sensitivity/history`` (replacing one that exists); collective error."""
    from ..io.hdf5 import _comm, _root_call

    def write():
        import h5py
        with h5py.File(path, "a") as f:
            if "sensitivity/history" in f:
                del f["sensitivity/history"]
            g = f.require_group("sensitivity").create_group("history")
            for k, v in hist.attrs().items():
                g.attrs[k] = v
            for k, v in hist.names().items():
                g.create_dataset(k, data=np.array([str(x) for x in v], dtype=object),
                                 dtype=h5py.string_dtype("utf-8"))
            for k, v in hist.arrays().items():
                g.create_dataset(k, data=v)
    _root_call(_comm(comm), write, path, "/sensitivity/history")


def read_history(path):
    """{"method", "objectives", "design", "coordinates", "t", "gradient", "final", ...}
    of a file's ``/sensitivity/history``."""
    import h5py
    from ..io.hdf5 import HDF5Error
    with h5py.File(path, "r") as f:
        if "sensitivity/history" not in f:
            raise HDF5Error(path, "/sensitivity/history", "missing (run gradient --history -o FILE)")
        g = f["sensitivity/history"]
        out = {k: g[k][()] for k in g}
        for k in ("objectives", "design", "coordinates"):
            out[k] = [x.decode() if isinstance(x, bytes) else str(x) for x in out.get(k, [])]
        out["method"] = str(g.attrs["method"])
        out["stride"] = int(g.attrs["stride"])
    return out
