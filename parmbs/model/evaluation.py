"""Everything the formulations need from the components at one state, as global objects.

``StateEval`` gathers the local arrays of every component group once for a state
(t, q, v, a, λ) and returns, on demand:

* global vectors (the weighted dynamic residual, Φ, Φ_t, γ);
* local block lists for ``SparseOperator.set_values`` (Newton matrices);
* ``LocalOperator`` s — matrix-free global operators built from local blocks — for
  the tangent and adjoint right-hand sides (∂R/∂q, ∂R/∂v, ∂R/∂a, Φ_q, ∂R/∂p ...).

Weights: generalized-α weights the inertial groups with ``wi`` and the others (and
the constraint forces Φ_qᵀλ) with ``wf``.
"""
import numpy as np

from .assembly import scatter_add, scatter_add_cols
from .._log import event


class LocalOperator:
    """A global linear operator Σ_e scatter(rows_e, cols_e, B_e), never assembled.

    ``parts``: list of (rows (ne, a), cols (ne, b), B (ne, a, b)); −1 indices drop.
    ``A @ X`` and ``A.T @ Y`` act on dense column blocks (size, k).
    """

    def __init__(self, nrows, ncols, parts=(), extra=()):
        self.shape = (nrows, ncols)
        self.parts = [pt for pt in parts if pt[2].size]
        # assembled operators added as they are (``@``, ``.T``, ``scaled``): the FFR
        # continua's structured Jacobians (flexible/continuum_structured.py)
        self.extra = list(extra)

    def __add__(self, other):
        return LocalOperator(*self.shape, self.parts + other.parts, self.extra + other.extra)

    def scaled(self, c):
        return LocalOperator(*self.shape, [(r, cc, c * B) for r, cc, B in self.parts],
                             [e.scaled(c) for e in self.extra])

    def __matmul__(self, X):
        X = np.asarray(X)
        vec = X.ndim == 1
        X2 = X[:, None] if vec else X
        k = X2.shape[1]
        if not self.parts:
            out = np.zeros((self.shape[0], k), X2.dtype)
            for e in self.extra:
                out = out + e @ X2
            return out[:, 0] if vec else out
        # one appended zero row serves every −1 column.  Parts are summed one by one in
        # their order with einsum, as always: penalty-formulation gradients amplify any
        # change of summation order (a fused single scatter moved FD checks by 20 %)
        Xe = np.vstack([X2, np.zeros((1, k), X2.dtype)])
        out = np.zeros((self.shape[0], k), np.result_type(X2, *(B for _, _, B in self.parts)))
        for rows, cols, B in self.parts:
            out += scatter_add_cols(self.shape[0], rows, np.einsum("eab,ebk->eak", B, Xe[cols]))
        for e in self.extra:
            out = out + e @ X2
        return out[:, 0] if vec else out

    @property
    def T(self):
        return LocalOperator(self.shape[1], self.shape[0],
                             [(c, r, np.swapaxes(B, 1, 2)) for r, c, B in self.parts], [e.T for e in self.extra])

    def dense(self):
        return self @ np.eye(self.shape[1])


class EvalPlan:
    """Index arrays of one (system, design map) pair, built once per stepper.

    Everything a ``StateEval`` needs that does not depend on the state: each group's
    rows in unknown numbering and design columns.  A ``StateEval`` without a plan builds its own, so
    reusing one across the states of a run only saves the rebuilding."""

    def __init__(self, system, design_map=None):
        n = system.n
        self.sys, self.design_map = system, design_map
        gidx = np.r_[np.arange(n), -np.ones(3, np.int64)]    # ext slot -> unknown
        self.rows = {id(g): gidx[g.qidx] for g in list(system.forces) + list(system.constraints)}
        # constraint rows −1: redundant rows dropped at set-up (model/redundancy.py); their
        # λ reads as 0 and their Φ, γ … entries go nowhere (off for every other model)
        self.drop = any(np.any(g.rows < 0) for g in system.constraints)
        #: per group with dropped rows, a (ne, m, 1) 0/1 mask zeroing their local Φ_q rows, so
        #: local products over an element's rows (the penalty Jacobian's Φ_qᵀ α Λ_q) skip them
        self.rowmask = {id(g): (g.rows >= 0)[:, :, None].astype(float)
                        for g in system.constraints if np.any(g.rows < 0)}
        self._pc = {}

    def pcols(self, g):
        """Local p columns of group g that are design variables, and their columns."""
        if id(g) not in self._pc:
            dm = self.design_map
            cols = np.nonzero(np.any(dm[g.pidx] >= 0, axis=0))[0]
            self._pc[id(g)] = cols, dm[g.pidx[:, cols]]
        return self._pc[id(g)]


class StateEval:
    def __init__(self, system, t, q, v, a, lam, p, design_map=None, plan=None):
        self.sys = system
        self.t = t
        self.q, self.v, self.a, self.lam, self.p = q, v, a, lam, p
        n, m = system.n, system.m
        self.n, self.m = n, m
        p_sys = getattr(system, "p", None)     # (views of a system, e.g. the initial assembly's, have none)
        if p_sys is not None and len(p) != len(p_sys):   # e.g. a stepper state's extra block (Arnold-Bruls x(k): 5)
            raise ValueError(f"StateEval: p has {len(p)} entries, the system's parameter vector {len(p_sys)} "
                             "(pass physical(traj.x(k)) = q, v, a, λ, not the stepper's whole state)")
        if plan is None or plan.sys is not system or plan.design_map is not design_map:
            plan = EvalPlan(system, design_map)
        self.plan = plan
        # the groups an assembled structured operator evaluates (FFR continua,
        # flexible/continuum_structured.py) are gathered only when asked for (``F``):
        # their element arrays are ~10⁶ entries, read by R_p and energy only
        st = getattr(plan, "structured", None)
        self._lazy = st.ids if st is not None and not np.iscomplexobj(p) else ()
        groups = [g for g in system.forces if id(g) not in self._lazy] + list(system.constraints)
        loc = self._gather(groups, q, v, a)
        # (copies: the Newton loop updates its iterate in place)
        self._qva = (q.copy(), v.copy(), a.copy()) if len(groups) < len(system.forces) + len(system.constraints) \
            else None
        self._F = [(g, *loc[id(g)], p[g.pidx]) if id(g) in loc else None for g in system.forces]
        lam_g = np.append(lam, 0) if plan.drop else lam     # a dropped row (−1) reads λ = 0
        self.C = [(g, *loc[id(g)], lam_g[g.rows], p[g.pidx]) for g in system.constraints]
        self.design_map = design_map     # p index -> design column (−1 if not designed)
        self.dtype = np.result_type(q, v, a, lam, p)
        self._cache = {}

    def _gather(self, groups, q, v, a):
        system = self.sys
        if np.shape(q) == np.shape(v) == np.shape(a) and q.dtype == v.dtype == a.dtype:
            # q, v, a gathered together: one extension, one fancy index per group
            X = system.extend(np.stack([q, v, a]))
            return {id(g): X[:, g.qidx] for g in groups}
        qe, ve, ae = system.extend(q), system.extend(v), system.extend(a)
        return {id(g): (qe[g.qidx], ve[g.qidx], ae[g.qidx]) for g in groups}

    @property
    def F(self):
        """(group, q, v, a, p) local arrays of every force group."""
        if any(f is None for f in self._F):
            todo = [g for g, f in zip(self.sys.forces, self._F) if f is None]
            loc = self._gather(todo, *self._qva)
            self._F = [f if f is not None else (g, *loc[id(g)], self.p[g.pidx])
                       for g, f in zip(self.sys.forces, self._F)]
        return self._F

    def forces_except(self, ids):
        """The force tuples of the groups not in ``ids``, in order (no gather of the others)."""
        return [f if f is not None else self.F[i] for i, f in enumerate(self._F)
                if id(self.sys.forces[i]) not in ids]

    def real(self):
        """This state with every imaginary part dropped (self when already real).

        The complex-step gradient runs residuals in complex arithmetic but builds
        Newton matrices at the real state: the derived blocks are themselves
        complex-step derivatives, which cannot be nested, and a real Jacobian makes
        Newton converge to the same complex solution."""
        if self.dtype != complex:
            return self
        return StateEval(self.sys, self.t, self.q.real, self.v.real, self.a.real, self.lam.real, self.p.real,
                         self.design_map, self.plan)

    def _memo(self, key, fn):
        if key not in self._cache:
            self._cache[key] = fn()
        return self._cache[key]

    def _rows(self, g):
        return self.plan.rows[id(g)]

    # -- vectors -------------------------------------------------------------------
    @event("ParmbsResidual")
    def residual(self, wi=1.0, wf=1.0, wl=None):
        """wi Σ_inertial r + wf (Σ_other r + Φ_qᵀλ) on the n coordinates; ``wl`` (default
        wf) weights Φ_qᵀλ instead (seed 001's index-1 generalized-α puts it at α_m).

        One scatter per group, summed group by group: a single concatenated bincount
        was measured no faster on small models and changes the summation order, which
        the weakly damped a/λ modes of index-3 schemes amplify (MPI vs serial test)."""
        out = np.zeros(self.n + 3, self.dtype)
        st = self._structured()
        for g, q, v, a, p in self.forces_except(st.ids if st is not None else ()):
            out += scatter_add(self.n + 3, g.qidx, (wi if g.inertial else wf) * g.r(self.t, q, v, a, p))
        if st is not None:
            st.residual(self.q, self.v, self.a, wi, wf, out)
        for g, q, v, a, lam, p in self.C:
            out += scatter_add(self.n + 3, g.qidx, (wf if wl is None else wl)
                               * np.einsum("emk,em->ek", self.phi_q_local(g, q, p), lam))
        return out[:self.n]

    def phi_q_local(self, g, q, p):
        mask = self.plan.rowmask.get(id(g)) if self.plan.drop else None
        if mask is not None:
            return self._memo(("phiq", id(g)), lambda: g.phi_q(self.t, q, p) * mask)
        return self._memo(("phiq", id(g)), lambda: g.phi_q(self.t, q, p))

    def _con_vector(self, fn, dtype=None):
        drop = self.plan.drop             # a spare last entry takes the dropped rows (−1)
        out = np.zeros(self.m + drop, dtype or self.dtype)
        for g, q, v, a, lam, p in self.C:
            out[g.rows] = fn(g, q, v, p)
        return out[:self.m] if drop else out

    def energy(self):
        """Mechanical energy Σ (kinetic + potential) of the conservative elements."""
        return float(sum(np.sum(g.energy(self.t, q, v, p)) for g, q, v, a, p in self.F))

    def phi(self):
        return self._con_vector(lambda g, q, v, p: g.phi(self.t, q, p))

    def phi_t(self):
        return self._con_vector(lambda g, q, v, p: g.phi_t(self.t, q, p))

    def gamma(self):
        return self._con_vector(lambda g, q, v, p: g.gamma(self.t, q, v, p))

    def phi_q_dot(self, w):
        """Φ_q w as a vector (m,)."""
        we = self.sys.extend(w)
        return self._con_vector(lambda g, q, v, p: np.einsum("emk,ek->em", self.phi_q_local(g, q, p), we[g.qidx]),
                                np.result_type(self.dtype, w))

    # -- local block lists (for SparseOperator) --------------------------------------
    @event("ParmbsAssemble")
    def force_blocks(self, cq, cv, ca, wi=1.0, wf=1.0):
        """Per force group: w (ca r_a + cv r_v + cq r_q)."""
        out = []
        for g, q, v, a, p in self.F:
            Jq, Jv, Ja = self._memo(("jac", id(g)), lambda: g.jacobians(self.t, q, v, a, p))
            B = None
            for c, J in ((ca, Ja), (cv, Jv), (cq, Jq)):
                if c and J is not None:
                    B = c * J if B is None else B + c * J
            w = wi if g.inertial else wf
            out.append(np.zeros((g.ne, g.nq, g.nq)) if B is None else
                       w * (B if B.shape == (g.ne, g.nq, g.nq) else np.broadcast_to(B, (g.ne, g.nq, g.nq))))
        return out

    @event("ParmbsAssemble")
    def hess_blocks(self):
        return [self._memo(("hess", id(g)), lambda: g.hess_lam(self.t, q, p, lam))
                for g, q, v, a, lam, p in self.C]

    def phi_q_blocks(self):
        return [self.phi_q_local(g, q, p) for g, q, v, a, lam, p in self.C]

    # -- index maps for patterns ----------------------------------------------------
    def force_index(self):
        return [(self._rows(g), self._rows(g)) for g, *_ in self.F]

    def constraint_index(self, row_offset):
        """(coordinate rows, constraint rows + offset) per constraint group (a dropped
        row stays −1)."""
        return [(self._rows(g), np.where(g.rows < 0, -1, g.rows + row_offset)) for g, *_ in self.C]

    # -- matrix-free operators ------------------------------------------------------------
    def _jac_parts(self, which, wi, wf):
        """(rows, rows, w J) of every force group whose Jacobian ``which`` (0: ∂r/∂q,
        1: ∂r/∂v, 2: ∂r/∂a) is not identically zero (the groups' uses_* flags)."""
        parts = []
        st = self._structured()
        for g, q, v, a, p in self.forces_except(st.ids if st is not None else ()):
            J = self._memo(("jac", id(g)), lambda: g.jacobians(self.t, q, v, a, p))[which]
            if J is not None:
                r = self._rows(g)
                parts.append((r, r, (wi if g.inertial else wf) * J))
        return parts

    def K(self, wi=1.0, wf=1.0, with_hessian=True, wl=None):
        """∂R/∂q of the weighted residual (forces + wl·Φ_qᵀλ, wl = wf by default) as a
        LocalOperator (n × n)."""
        parts = self._jac_parts(0, wi, wf)
        if with_hessian:
            wl = wf if wl is None else wl
            parts += [(self._rows(g), self._rows(g), wl * H) for (g, *_), H in zip(self.C, self.hess_blocks())]
        return LocalOperator(self.n, self.n, parts, self._structured_jac(1.0, 0.0, 0.0, wi, wf))

    def Cv(self, wi=1.0, wf=1.0):
        """∂R/∂v (n × n)."""
        return LocalOperator(self.n, self.n, self._jac_parts(1, wi, wf), self._structured_jac(0.0, 1.0, 0.0, wi, wf))

    def Ma(self, wi=1.0, wf=1.0):
        """∂R/∂a (n × n)."""
        return LocalOperator(self.n, self.n, self._jac_parts(2, wi, wf), self._structured_jac(0.0, 0.0, 1.0, wi, wf))

    def _structured(self):
        """The plan's ContinuumStructure (groups evaluated as assembled sparse operators,
        flexible/continuum_structured.py), set up for this design; None without one or
        at a complex design (complex-step gradients run the element kernels)."""
        st = getattr(self.plan, "structured", None)
        if st is None or np.iscomplexobj(self.p):
            return None
        st.set_design(self.p)
        return st

    def _structured_jac(self, cq, cv, ca, wi, wf):
        """The structured operators' cq ∂r/∂q + cv ∂r/∂v + ca ∂r/∂a, the unweighted
        border remembered per (cq, cv, ca) and weighted here (``ContinuumStructure.weigh``:
        the same products as building it weighted)."""
        st = self._structured()
        if st is None:
            return []
        raw = self._memo(("sjac", cq, cv, ca, st.version),
                         lambda: st.jacobian_frames(self.q, self.v, self.a, cq, cv, ca))
        return [st.weigh(raw, cq, wi, wf)]

    def G(self):
        """Φ_q (m × n)."""
        return LocalOperator(self.m, self.n, [(g.rows, self._rows(g), B) for (g, *_), B in
                                              zip(self.C, self.phi_q_blocks())])

    def phi_q_w_q(self, w):
        """∂(Φ_q w)/∂q (m × n) for fixed w."""
        we = self.sys.extend(w)
        return LocalOperator(self.m, self.n, [(g.rows, self._rows(g), g.phi_q_w_q(self.t, q, p, we[g.qidx]))
                                              for g, q, v, a, lam, p in self.C])

    def gamma_q(self):
        return LocalOperator(self.m, self.n, [(g.rows, self._rows(g), g.gamma_q(self.t, q, v, p))
                                              for g, q, v, a, lam, p in self.C])

    def gamma_v(self):
        return LocalOperator(self.m, self.n, [(g.rows, self._rows(g), g.gamma_v(self.t, q, v, p))
                                              for g, q, v, a, lam, p in self.C])

    def phi_t_q(self):
        return LocalOperator(self.m, self.n, [(g.rows, self._rows(g), g.phi_t_q(self.t, q, p))
                                              for g, q, v, a, lam, p in self.C])

    # -- parameter derivatives (design columns only) -------------------------------------
    def _pcols(self, g):
        """Local p columns of group g that are design variables, and their columns."""
        return self.plan.pcols(g)

    def _pop(self, nrows, ndesign, items):
        return LocalOperator(nrows, ndesign, [it for it in items if it is not None])

    def R_p(self, ndesign, wi=1.0, wf=1.0, own=False, wl=None):
        """∂R/∂ρ of the weighted dynamic residual (n × ndesign; Φ_qᵀλ weighted by ``wl``,
        default wf, as in ``residual``).  ``own``: the continuum
        groups' elements of this rank only (``plan.split``, flexible/continuum_split.py):
        ``R_p.T @ λ`` is then complete in this rank's own columns only — for the adjoint
        sweep's accumulator, which ``ElementSplit.combine`` makes whole once per sweep.
        Each group's unweighted ∂r/∂ρ is remembered: the adjoint step asks for it at one
        state with two weightings (integrators/newmark.py: x_k as the old state of step k
        and as the new state of step k − 1), and w·B is the same product either way."""
        items = []
        split = getattr(self.plan, "split", None) if own else None
        if split is not None and not split.active:
            split = None
        mine = set() if split is None else split.ids
        for g, q, v, a, p in self.forces_except(mine):
            cols, dcols = self._pcols(g)
            if len(cols):
                B = (wi if g.inertial else wf) * self._memo(("rp", id(g)), lambda: g.r_p(self.t, q, v, a, p, cols))
                items.append((self._rows(g), dcols, B))
        for i, g in enumerate(self.sys.forces):
            cols, dcols = self._pcols(g)
            if id(g) in mine and len(cols):          # this rank's elements only, gathered alone
                e0, e1 = split.ranges[id(g)]
                B = (wi if g.inertial else wf) * self._memo(("rp_own", id(g)), lambda: self._own_r_p(i, g, e0, e1, cols))
                items.append((self._rows(g)[e0:e1], dcols[e0:e1], B))
        for g, q, v, a, lam, p in self.C:
            cols, dcols = self._pcols(g)
            if len(cols):
                items.append((self._rows(g), dcols, (wf if wl is None else wl)
                              * g.phi_qT_lam_p(self.t, q, p, lam, cols)))
        return self._pop(self.n, ndesign, items)

    def _own_r_p(self, i, g, e0, e1, cols):
        """∂r/∂p of force group i's elements [e0, e1) (unweighted), gathered alone."""
        if self._F[i] is not None:
            _, q, v, a, p = self._F[i]
            q, v, a, p = q[e0:e1], v[e0:e1], a[e0:e1], p[e0:e1]
        else:
            q, v, a = (self.sys.extend(x)[g.qidx[e0:e1]] for x in self._qva)
            p = self.p[g.pidx[e0:e1]]
        return g.r_p(self.t, q, v, a, p, cols)

    def _con_p(self, ndesign, fn):
        items = []
        for g, q, v, a, lam, p in self.C:
            cols, dcols = self._pcols(g)
            if len(cols):
                items.append((g.rows, dcols, fn(g, q, v, lam, p, cols)))
        return self._pop(self.m, ndesign, items)

    def phi_p(self, nd):
        return self._con_p(nd, lambda g, q, v, lam, p, c: g.phi_p(self.t, q, p, c))

    def phi_t_p(self, nd):
        return self._con_p(nd, lambda g, q, v, lam, p, c: g.phi_t_p(self.t, q, p, c))

    def gamma_p(self, nd):
        return self._con_p(nd, lambda g, q, v, lam, p, c: g.gamma_p(self.t, q, v, p, c))

    def phi_q_w_p(self, nd, w):
        we = self.sys.extend(w)
        return self._con_p(nd, lambda g, q, v, lam, p, c: g.phi_q_w_p(self.t, q, p, we[g.qidx], c))
