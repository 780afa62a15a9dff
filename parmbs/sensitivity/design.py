"""Design variables: named entries of the model parameter vector p.

A design entry whose path is a scalar parameter (``forces.S1.length``) is one design
column.  A path naming an element *field* (``plates.P.density``: one entry of p per
element) expands into N columns, named ``P.density[e]``, in element order.  Each
element's density is a separate entry of p read only by that element's components,
so their ∂r/∂p blocks (``Force.r_p(..., cols)``) hold only the element-local column:
∂R/∂ρ stays a sparse local operator and the adjoint gradient over all N costs one
sparse transpose product per step, never a dense N_state × N_design block.

``fields`` maps each design entry name to its slice of columns (a scalar entry: a
slice of length 1) for output grouped by entry (gradient JSON/HDF5 of a field).

Linked parameters (``[[design]] drives``, ``config/links.py``): a design variable ρ_j
sets the entry of p at its path and, through expressions, further entries p_k = f_k(ρ)
(the beam length l = |C − D| of seed 000 Eq. 53).  The steppers differentiate with
respect to the *parameter columns* — the ``len(self)`` designed entries followed by
the driven ones, ``ncols`` in all, addressed by ``map`` — and ``chain`` takes their
gradient to the design variables, dψ/dρ = Jᵀ ∂ψ/∂p_cols with J = [I; ∂f/∂ρ]
(``jacobian``: complex step of the expressions, exact to rounding).  Without drives
ncols = len(self) and ``chain`` is the identity.
"""
import numpy as np

from ..model.system import ModelError

#: the direct (tangent) method propagates one dense state column per design variable
DIRECT_MAX_COLUMNS = 200


class DesignSpace:
    def __init__(self, system, design_cfg):
        self.names, self.paths, index, lower, upper = [], [], [], [], []
        self.fields = {}
        plates = getattr(system, "plates", None)
        for d in design_cfg:
            field = plates.field(d.path) if plates is not None else None
            if field is None and getattr(system, "continua", None) is not None:
                field = system.continua.field(d.path)       # continua.C.density
            if field is not None:
                plate = d.path.split(".")[1]
                cols = [f"{plate}.density[{e}]" for e in range(len(field))]
                idx = list(field)
            elif d.path in system.params.index:
                cols, idx = [d.name], [system.params.index[d.path]]
            else:
                raise ModelError(f"design.{d.name}.path",
                                 f"'{d.path}' is not a parameter of this model")
            self.fields[d.name] = slice(len(self.names), len(self.names) + len(cols))
            self.names += cols
            self.paths += [system.params.paths[i] for i in idx] if field is not None else [d.path]
            index += idx
            lower += [-np.inf if d.lower is None else d.lower] * len(cols)
            upper += [np.inf if d.upper is None else d.upper] * len(cols)
        self.index = np.array(index, dtype=np.int64)
        self._links, driven = None, []
        if any(d.drives for d in design_cfg):
            from ..config.links import Links
            self._links = Links(system.config)
            self._pidx = {d.name: system.params.index[d.path] for d in design_cfg
                          if d.name in self._links.design}
            for key, path, _ in self._links.drives:
                if path not in system.params.index:
                    raise ModelError(key + "path", f"'{path}' is not a parameter of this model")
                driven.append(system.params.index[path])
        self.driven_index = np.array(driven, dtype=np.int64)
        self.lower = np.array(lower, dtype=float)
        self.upper = np.array(upper, dtype=float)
        self._set_columns(len(system.p))

    def _set_columns(self, np_):
        """Parameter columns: the designed entries, then the driven ones; ``map`` p → column."""
        self.col_index = np.concatenate([self.index, self.driven_index])
        if len(np.unique(self.col_index)) != len(self.col_index):
            raise ModelError("design", "a parameter is designed twice (overlapping design entries)")
        self.map = -np.ones(np_, np.int64)
        self.map[self.col_index] = np.arange(len(self.col_index))

    def __len__(self):
        return len(self.names)

    @property
    def linked(self):
        """True if some design variable drives other parameters (links.py)."""
        return len(self.driven_index) > 0

    @property
    def ncols(self):
        """Number of parameter columns the steppers differentiate (designed + driven)."""
        return len(self.col_index)

    def _driven(self, p):
        """Driven values at the design values held in p (float or complex)."""
        return self._links.driven({n: p[i] for n, i in self._pidx.items()})

    def jacobian(self, p):
        """J = ∂p_cols/∂ρ (ncols × len(self)) at the design in p: identity rows for the
        designed entries, ∂f_k/∂ρ_j by a complex step of size 1e-30 for the driven."""
        n = len(self)
        J = np.zeros((self.ncols, n))
        J[:n] = np.eye(n)
        if self._links is None or not len(self.driven_index):
            return J
        h = 1e-30
        for j in range(n):
            pc = np.asarray(p, dtype=complex).copy()
            pc[self.index[j]] += 1j * h
            J[n:, j] = np.imag(np.array(self._driven(pc), dtype=complex)) / h
        return J

    def chain(self, grads, p):
        """{objective: ∂ψ/∂p_cols} -> {objective: dψ/dρ} (identity without drives)."""
        if self.ncols == len(self):
            return grads
        J = self.jacobian(p)
        return {k: J.T @ np.asarray(g) for k, g in grads.items()}

    def is_field(self, name):
        """True if the design entry ``name`` is an element field (more than a scalar)."""
        s = self.fields[name]
        return s.stop - s.start != 1 or self.names[s.start] != name

    def check_direct(self, limit=DIRECT_MAX_COLUMNS):
        """Refuse the direct method for an element field of more than ``limit`` design
        columns: its tangent carries one dense state column per design variable (use
        the adjoint).  A list of scalar design variables is the user's explicit choice
        (the gradient benchmark runs direct at N = 500) and is not refused."""
        if len(self) > limit and any(self.is_field(n) for n in self.fields):
            raise ModelError("sensitivity.method",
                             f"the direct method carries one state column per design variable; "
                             f"{len(self)} design columns exceed its limit of {limit} — use "
                             f"method = \"adjoint\" for element fields")

    def subset(self, columns):
        """The design space of ``columns`` only (sorted column indices), for a batch of
        the batch-parallel gradients: same parameters, fewer columns.  A field entry
        cut by the batch keeps the columns it has left."""
        import copy
        cols = np.asarray(columns, dtype=np.int64)
        sub = copy.copy(self)
        sub.names = [self.names[c] for c in cols]
        sub.paths = [self.paths[c] for c in cols]
        sub.index, sub.lower, sub.upper = self.index[cols], self.lower[cols], self.upper[cols]
        sub._set_columns(len(self.map))   # drives: every driven column stays (J restricted to cols)
        sub.fields = {}
        for name, sl in self.fields.items():
            inside = np.nonzero((cols >= sl.start) & (cols < sl.stop))[0]
            if len(inside):
                sub.fields[name] = slice(int(inside[0]), int(inside[-1]) + 1)
        return sub

    def values(self, p):
        return p[self.index].copy()

    def apply(self, p, rho):
        """p with the designed entries set to rho and the driven entries following them
        (complex rho gives complex driven values: complex-step compatible)."""
        p = p.copy()
        p[self.index] = rho
        if self._links is not None and len(self.driven_index):
            vals = self._driven(p)
            if not np.iscomplexobj(p):
                vals = [float(np.real(v)) for v in vals]
            p[self.driven_index] = vals
        return p
