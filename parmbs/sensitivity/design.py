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

Reduced continua and solids (``continua.C.reduction``, ``spatial.solids.S.reduction``;
flexible/modal.py, modal_solid.py) are drives of the same
kind: designing the density field of a reduced body makes its body data (the entries
``<continua.C.reduced.*>`` of p) driven columns.  ``apply`` recomputes them (eigenproblem
at the new densities; a complex ρ gets D + i·δD, the forward eigen-derivative), and
``chain`` pulls ∂ψ/∂D back by ``Reduction.vjp`` (adjoint: one solve per mode, no dense
block) or, for the direct method (``forward=True``), multiplies by the dense forward
Jacobian (one jvp per design column: small designs only, as the direct method is).

The column map of the sweeps (``read_by``): a reduced body's densities are design
columns, but no component of the stepped model reads them — the reduced components
read its body data — so the per-step products ∂R/∂pᵀμ, dx/dp, ∂ψ/∂p would carry n_ρ
zeros each (at 10⁶ densities the adjoint of the 24-unknown reduced crank cost 54 s per
rank against 12.5 s at 10⁵, benchmarks/README.md).  ``read_by(system, objectives)``
learns which p entries the model's components (forces, constraints) and the objectives
(``Objective.params``: what each declares it reads) read, and numbers the *swept*
columns: every column but the reduced densities nobody reads.  Every stepper is built on
that map (``sweep_map``, ``nswept``), the objective partials are taken in it, and
``expand`` scatters the gradient into all columns once, before ``chain``.  The
gradient is bit for bit that of the all-column sweep: the per-column sums are the same
additions in the same order (``scatter_add_cols``' bincount sums each column's terms in
input order whatever the numbering), and a dropped column's sum was 0 + (−0) + … = +0,
which ``expand`` writes.  An objective that declares nothing (a user integrand without
``reads``) reads every entry: no column is dropped.
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
            if field is None and getattr(system, "solids", None) is not None:
                field = system.solids.field(d.path)         # spatial.solids.S.density
            if field is not None:
                plate = d.path.split(".")[-2]
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
        self._nlinks = len(driven)
        # reduced continua (flexible/modal.py): designing their densities drives their body data
        self._reductions = []
        reds = [r for kind in ("continua", "solids") if getattr(system, kind, None) is not None
                for r in getattr(system, kind).reductions()]        # planar continua, hexahedral solids
        for red in reds:
            other = [k for k, i in red.pidx.items() if k != "density" and int(i) in set(index)]
            if other:
                raise ModelError("design", f"{red.key}.{other[0]} of a reduced continuum cannot be "
                                           "designed (its reduction differentiates the density field only)")
            if np.isin(red.pidx["density"], index).any():
                self._reductions.append((red, slice(len(self.names) + len(driven),
                                                    len(self.names) + len(driven) + len(red.data_index))))
                driven.extend(red.data_index)
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
        self._sweep(np.arange(len(self.col_index)))

    def _sweep(self, swept):
        """Sweep the columns ``swept`` (sorted): ``sweep_map`` p → swept column (−1: not swept)."""
        self.swept = np.asarray(swept, np.int64)
        self.nswept = len(self.swept)
        renum = -np.ones(self.ncols + 1, np.int64)          # column −1 stays −1
        renum[self.swept] = np.arange(self.nswept)
        self.sweep_map = renum[self.map]

    def read_by(self, system, objectives):
        """Sweep only the columns something reads (module docstring): drop the density
        columns of reduced bodies that no component of ``system`` (its forces' and
        constraints' ``pidx``) and no objective (``Objective.params``; None: all of p)
        reads.  Returns self."""
        dens = [self.map[red.pidx["density"]].ravel() for red, _ in self._reductions]
        cols = np.unique(np.concatenate(dens)) if dens else np.zeros(0, np.int64)
        cols = cols[cols >= 0]
        read = np.zeros(len(self.map), bool)                 # p entries something reads
        for g in list(system.forces) + list(system.constraints):
            idx = np.asarray(g.pidx).ravel()
            read[idx[idx >= 0]] = True
        for ob in objectives:
            idx = ob.params(system)
            if idx is None:
                read[:] = True
                break
            read[np.asarray(idx, np.int64).ravel()] = True
        readcols = self.map[read]
        keep = np.ones(self.ncols, bool)
        keep[np.setdiff1d(cols, readcols[readcols >= 0])] = False
        self._sweep(np.flatnonzero(keep))
        return self

    def expand(self, g, axis=0):
        """An array over the swept columns (along ``axis``) -> over all ``ncols``, zero
        (+0) in the others; the array itself when every column is swept."""
        if self.nswept == self.ncols:
            return g
        g = np.asarray(g)
        shape = list(g.shape)
        shape[axis] = self.ncols
        out = np.zeros(shape, g.dtype)
        out[(slice(None),) * axis + (self.swept,)] = g
        return out

    def __len__(self):
        return len(self.names)

    @property
    def linked(self):
        """True if some design variable drives other parameters through expressions (links.py)."""
        return self._nlinks > 0

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
        for red, sl in self._reductions:            # dD/dρ by forward eigen-sensitivities (modal.py)
            dens = red.pidx["density"]
            cols = self.map[dens]
            on = cols >= 0
            J[sl, cols[on]] = red.jacobian(p, np.nonzero(on)[0])
        if self._links is None or not self._nlinks:
            return J
        h = 1e-30
        for j in range(n):
            pc = np.asarray(p, dtype=complex).copy()
            pc[self.index[j]] += 1j * h
            J[n:n + self._nlinks, j] = np.imag(np.array(self._driven(pc), dtype=complex)) / h
        return J

    def chain(self, grads, p, forward=False):
        """{objective: ∂ψ/∂p_cols} -> {objective: dψ/dρ} (identity without drives).
        Reduced continua: ``forward`` (the direct method) multiplies by the dense forward
        Jacobian of their body data, else (the adjoint) pulls back through
        ``Reduction.vjp`` — one bordered solve per mode and objective, no dense block."""
        if self.ncols == len(self):
            return grads
        if forward or not self._reductions:
            J = self.jacobian(p)
            return {k: J.T @ np.asarray(g) for k, g in grads.items()}
        n = len(self)
        out = {}
        for k, g in grads.items():
            g = np.asarray(g)
            res = g[:n].copy()
            if self._nlinks:
                Jl = self.jacobian_links(p)
                res = res + Jl.T @ g[n:n + self._nlinks]
            for red, sl in self._reductions:
                xb = red.vjp(p, g[sl])
                cols = self.map[red.pidx["density"]]
                on = cols >= 0
                res[cols[on]] += xb[on]
            out[k] = res
        return out

    def jacobian_links(self, p):
        """∂(link-driven entries)/∂ρ (nlinks × len(self)) by a complex step."""
        n = len(self)
        Jl = np.zeros((self._nlinks, n))
        h = 1e-30
        for j in range(n):
            pc = np.asarray(p, dtype=complex).copy()
            pc[self.index[j]] += 1j * h
            Jl[:, j] = np.imag(np.array(self._driven(pc), dtype=complex)) / h
        return Jl

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
        shift = len(cols) - len(self)
        sub._reductions = [(red, slice(sl.start + shift, sl.stop + shift)) for red, sl in self._reductions]
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
        if self._links is not None and self._nlinks:
            vals = self._driven(p)
            if not np.iscomplexobj(p):
                vals = [float(np.real(v)) for v in vals]
            p[self.driven_index[:self._nlinks]] = vals
        for red, sl in self._reductions:           # body data of reduced continua (modal.py)
            p[red.data_index] = red.data(p)
        return p
