"""The adjoint sweep of a reduced body in its own parameter columns (issue 21: adjoint ÷ forward).

A reduced continuum's or solid's densities are design columns (``DesignSpace``: the
designed entries, then the driven body data), but no component of the stepped model
reads them — the reduced components read the body data, and ``DesignSpace.chain``
pulls ∂ψ/∂D back to the densities once per sweep (``Reduction.vjp``).  Yet the
per-step sweep carried them: ∂R/∂ρᵀν, Φ_ρᵀν, the objective partials and the running
sum are all vectors of every column, ~15 passes over n_ρ numbers a step — at 10⁶
densities the adjoint of the 24-unknown reduced crank cost 54 s per rank against 12.5 s
at 10⁵ (benchmarks/README.md).  Here the sweep runs in the columns the model reads
(``keep``: every column but those densities), and ``expand`` puts the sum back into all
columns once: the stepper's per-column sums are the same additions in the same order
(``scatter_add_cols``' bincount sums each column's terms in input order whatever the
numbering), and a dropped column's sum was 0 + (−0) + 0 … = +0, which ``expand``
writes — the gradient is bit for bit that of the full-column sweep
(tests/test_modal_reduction.py).  An objective whose ∂g/∂p reaches a dropped column
(a user integrand reading the densities) raises ``Reaches``: the sweep is then run
again over all columns.

Taken only on the plain in-memory Newmark-family sweep: no compiled step, no continuum
Schur operator (its plan carries the element split), no partials table, no ``on_step``
observer (its gradients are per column).
"""
import numpy as np


class Reaches(Exception):
    """An objective's ∂g/∂p is nonzero in a dropped column."""


class CompactColumns:
    def __init__(self, design, system):
        dens = [design.map[red.pidx["density"]] for red, _ in design._reductions]
        cols = np.unique(np.concatenate(dens)) if dens else np.zeros(0, np.int64)
        cols = cols[cols >= 0]
        read = np.zeros(len(design.map), bool)       # p entries some component reads
        for g in list(system.forces) + list(system.constraints):
            idx = np.asarray(g.pidx).ravel()
            read[idx[idx >= 0]] = True
        readcols = design.map[read]
        drop = np.setdiff1d(cols, readcols[readcols >= 0])
        self.ncols = design.ncols
        keep = np.ones(self.ncols, bool)
        keep[drop] = False
        self.keep = np.flatnonzero(keep)
        self.n = len(self.keep)
        renum = -np.ones(self.ncols + 1, np.int64)   # column −1 stays −1
        renum[self.keep] = np.arange(self.n)
        self.map = renum[design.map]
        self.plan = None

    @classmethod
    def make(cls, problem):
        """The compaction for ``problem``'s in-memory sweep, or None (module docstring)."""
        from ..integrators.newmark import NewmarkFamily
        st = problem.stepper
        if not (type(st) is NewmarkFamily and st.schur is None and st.compiled is None
                and getattr(problem, "_table", None) is None and getattr(problem, "_on_step", None) is None
                and problem.design._reductions):
            return None
        cc = getattr(problem, "_compact_cache", None)
        if cc is None:
            cc = cls(problem.design, problem.sys)
            problem._compact_cache = cc if cc.n < cc.ncols else False
        return problem._compact_cache or None

    def partials(self, dp):
        """An objective's ∂ψ/∂ρ over all columns -> the kept ones (``Reaches`` if it has more)."""
        dk = dp[self.keep]
        if np.count_nonzero(dk) != np.count_nonzero(dp):
            raise Reaches
        return dk

    def expand(self, grad):
        """(n, K) over the kept columns -> (ncols, K), zero elsewhere."""
        out = np.zeros((self.ncols,) + grad.shape[1:], grad.dtype)
        out[self.keep] = grad
        return out

    def install(self, stepper):
        """Run ``stepper`` in the kept columns; returns what ``restore`` takes."""
        from ..model.evaluation import EvalPlan
        if self.plan is None or self.plan.sys is not stepper.sys:
            self.plan = EvalPlan(stepper.sys, self.map)
        saved = stepper.design_map, stepper.nd, stepper.plan
        stepper.design_map, stepper.nd, stepper.plan = self.map, self.n, self.plan
        return saved

    @staticmethod
    def restore(stepper, saved):
        stepper.design_map, stepper.nd, stepper.plan = saved
