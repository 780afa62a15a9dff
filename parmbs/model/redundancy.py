"""Redundant constraint rows: found at set-up, dropped exactly; singular configurations.

A mechanism is *redundantly constrained* when rows of Φ_q are linearly dependent at
every configuration (a parallelogram with a third crank, the Iltis suspension's 6
redundant rows of seed 004 §5.2): the multipliers λ are then not unique and the
saddle-point matrix [[M, Φ_qᵀ], [Φ_q, 0]] of every formulation is singular.

What parmbs does (``drop_redundant_rows``, called at the end of ``System.__init__``):

1. Only when the model asks for it by its counts: the independent coordinates given
   (``bodies.*.independent``) number more than n − m.  A model with exactly n − m has
   a square initial-assembly matrix E_q = [Φ_q; Φ_ind,q]; if that is nonsingular Φ_q
   has full row rank, so nothing is done and nothing changes (bitwise).
2. The initial configuration is assembled (Newton on [Φ_keep; Φ_ind] = 0, square) and
   Φ_q is factorised there, rank-revealing and *in declaration order*: row i is
   redundant when its distance to the span of the rows kept before it is at most
   ``DROP_TOL`` = 1e-9 of its norm (Gram–Schmidt with re-orthogonalisation on the
   rows' nonzero columns).  The rows dropped are therefore those of the joints
   declared last, as if those rows had not been written.  A kept row must stand out
   by ``KEEP_TOL`` = 1e-6 (else the initial configuration is nearly singular and the
   choice would be arbitrary: ModelError).  The selection is repeated at the
   assembled configuration until it no longer changes.
3. The dropped rows must hold at the assembled configuration (|Φ_i| ≤ 1e-10 (1+|q|)):
   otherwise the "redundant" joints contradict the others (ModelError).
4. The dropped rows are removed from the model: ``g.rows`` of their groups becomes −1
   (the kept rows are renumbered 0..r−1, ``system.m = r``).  Every formulation then
   sees a model with r independent rows: Φ, Φ_q, γ and the Newton matrices have no
   entry for a dropped row (StateEval sends −1 rows to a spare slot, BlockPattern
   drops them) and its multiplier reads as λ_i = 0.  Forward, tangent and adjoint
   steps are those of the reduced model, hence exact; its trajectory is the one of
   the same mechanism modelled without the dropped rows.

Multipliers.  With redundant rows λ is not unique: the reaction shared by the
redundant joints is assigned to the kept rows and the dropped rows carry none.  Every
output (``/trajectory/lambda``, whose columns ``constraint_names`` lists the kept rows)
and every objective of λ (``reaction_sq`` of a joint with a dropped row reads 0 for
that row) follows that choice, and so do their gradients: another choice of dropped
rows would give other λ values and λ-objectives, not other q, v, a.

Design variables.  The selection is made once, at the nominal parameters, and kept for
every perturbed or optimised design (the model's structure must not change inside a
gradient).  A parameter that breaks the redundancy (crank C3's length in
configs/parallelogram.toml) then moves the reduced model only: its gradient is exact
for the reduced model, whereas the full model would lock or fail to assemble.

Singular configurations (``singular_configuration``): when a Newton matrix becomes
singular (or Newton fails) mid-run because the kept rows of Φ_q lose rank (a change
point, a dead centre: not a constant redundancy, which step 4 removed), the Newmark
family, index-1 and variational steppers raise ``SingularConfiguration`` — a
ModelError, exit code 2 — naming the step, the time and the joints whose rows are
dependent there (the left null vector of the row-normalised Φ_q at the failed Newton
iterate, rows weighing ≥ 10 % of its largest entry); other failures stay StepError
(exit 1).  Maggi, matrix-r and penalty keep their StepError.  Models with more than
DIAGNOSE_MAX_ROWS constraint rows are not diagnosed (dense SVD).
"""
import copy

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from .system import ModelError

#: a row is redundant when its distance to the span of the rows kept before it is at
#: most DROP_TOL of its norm
DROP_TOL = 1e-9
#: ... and kept only when that distance is at least KEEP_TOL of its norm
KEEP_TOL = 1e-6
#: a configuration is singular when σ_min/σ_max of the row-normalised Φ_q is below this
SINGULAR_TOL = 1e-8
#: failure diagnoses (dense factorisations of Φ_q) only for models with at most this many
#: constraint rows: a large flexible model's failed step is not held up by an O(m³) SVD
DIAGNOSE_MAX_ROWS = 1000


class SingularConfiguration(ModelError):
    """The kept constraint rows are dependent at a configuration reached in the run."""


class Redundancy:
    """What was dropped: original row names, rank, and the distance ratios found."""

    def __init__(self, names, dropped, rank, m_full, ratios):
        self.names = names                  # original row names, e.g. "KC3[1]"
        self.dropped = dropped              # original row indices dropped
        self.rank, self.m_full = rank, m_full
        self.ratios = ratios                # distance/norm of every row at the final selection

    @property
    def dropped_names(self):
        return [self.names[i] for i in self.dropped]

    def summary(self):
        """One line for the start-up report."""
        return (f"redundant constraints: {len(self.dropped)} of {self.m_full} rows dropped "
                f"(Φ_q has rank {self.rank} at the initial configuration): "
                f"{', '.join(self.dropped_names)}; their multipliers are reported as 0")


# -- linear algebra -----------------------------------------------------------------------
def _sparse(op):
    """A LocalOperator as a scipy CSR matrix (−1 rows/columns dropped, duplicates summed)."""
    R, C, V = [], [], []
    for rows, cols, B in op.parts:
        Rb = np.broadcast_to(rows[:, :, None], B.shape)
        Cb = np.broadcast_to(cols[:, None, :], B.shape)
        keep = (Rb >= 0) & (Cb >= 0)
        R.append(Rb[keep])
        C.append(Cb[keep])
        V.append(np.real(B)[keep])
    if not R:
        return sp.csr_matrix(op.shape)
    return sp.coo_matrix((np.concatenate(V), (np.concatenate(R), np.concatenate(C))), shape=op.shape).tocsr()


def _dense_rows(G):
    """Rows of a sparse G on its nonzero columns only (dense m × k, k ≤ n)."""
    G = G.tocsc()
    cols = np.nonzero(np.diff(G.indptr))[0]
    return G[:, cols].toarray()


def ordered_rank(G, drop_tol=DROP_TOL):
    """Greedy, order-preserving rank-revealing factorisation of the rows of dense G.

    Returns (keep mask, ratios): ratio_i = dist(g_i, span{g_j kept, j < i}) / |g_i|
    (0 for a zero row), keep_i = ratio_i > drop_tol.  Classical Gram–Schmidt with one
    re-orthogonalisation ("twice is enough"), applied to rows only when kept, so a
    dropped row's round-off never enters the basis."""
    m, k = G.shape
    Q = np.zeros((min(m, k), k))
    r = 0
    keep = np.zeros(m, bool)
    ratios = np.zeros(m)
    for i in range(m):
        g = G[i]
        nrm = np.linalg.norm(g)
        if nrm == 0.0:
            continue
        w = g - Q[:r].T @ (Q[:r] @ g)
        w -= Q[:r].T @ (Q[:r] @ w)
        d = np.linalg.norm(w)
        ratios[i] = d / nrm
        if ratios[i] > drop_tol and r < Q.shape[0]:
            Q[r] = w / d
            r += 1
            keep[i] = True
    return keep, ratios


# -- views of the system ----------------------------------------------------------------------
class _RowView:
    """The system's constraints with only ``keep`` rows (renumbered 0..r−1, others −1),
    followed by the independent-coordinate drivers (for the initial assembly); what
    StateEval needs (n, m, forces, constraints, extend)."""

    def __init__(self, system, keep, with_independent=True):
        self.n, self.forces, self.extend = system.n, [], system.extend
        new = np.full(len(keep) + 1, -1, np.int64)
        new[np.nonzero(keep)[0]] = np.arange(int(keep.sum()))
        self.constraints = []
        for g in system.constraints:
            c = copy.copy(g)
            c.rows = new[g.rows]
            self.constraints.append(c)
        row = int(keep.sum())
        if with_independent:
            for _, drv, _ in system.independent:
                d = copy.copy(drv)
                k = drv.ne * drv.m
                d.rows = (row + np.arange(k)).reshape(drv.ne, drv.m)
                row += k
                self.constraints.append(d)
        self.m = row


def _eval(view, t, q, p):
    from .evaluation import StateEval
    z = np.zeros(view.n)
    return StateEval(view, t, q, z, z, np.zeros(view.m), p)


def _selection(system, t, q, p):
    """(keep, ratios) of Φ_q(q) over every row of the model, in declaration order."""
    ev = _eval(_RowView(system, np.ones(system.m, bool), with_independent=False), t, q, p)
    return ordered_rank(_dense_rows(_sparse(ev.G())))


def _solve_square(A, b):
    try:
        x = spla.spsolve(A.tocsc(), b)
    except RuntimeError:        # exactly singular factor
        return None
    return x if np.all(np.isfinite(x)) else None


def _assemble(system, keep, t, q, p):
    """Newton on E(q) = [Φ_keep; Φ_ind](q) = 0: the initial configuration.

    ``keep`` None: every row, overdetermined while the redundancy is unknown — Gauss–
    Newton, E_qᵀE_q dq = −E_qᵀE (E_q has full column rank when the independent
    coordinates determine the configuration; zero residual: quadratic convergence).
    Otherwise the square Newton of the kept rows (what InitialState then repeats)."""
    view = _RowView(system, np.ones(system.m, bool) if keep is None else keep)
    q = q.copy()
    for it in range(50):
        ev = _eval(view, t, q, p)
        E, A = ev.phi(), _sparse(ev.G())
        dq = _solve_square(A.T @ A, -(A.T @ E)) if keep is None else _solve_square(A, -E)
        if dq is None:
            raise ModelError("bodies.*.independent", "initial assembly: the constraint Jacobian with the "
                             "independent coordinates does not determine the configuration (rank-deficient at "
                             "the initial guesses); choose other independent coordinates or move the guesses")
        q += dq
        if np.max(np.abs(dq)) <= 1e-14 * (1 + np.max(np.abs(q))):
            break
    return q


# -- set-up ------------------------------------------------------------------------------------------
def drop_redundant_rows(system, t0=0.0):
    """Find and drop redundant constraint rows of ``system`` (see the module docstring).

    Does nothing (returns None) unless the independent coordinates given outnumber
    n − m.  Otherwise sets ``system.redundancy`` (a Redundancy), renumbers the kept
    rows of every constraint group (dropped rows −1), reduces ``system.m`` and
    ``system.constraint_names``, and returns the Redundancy.  Raises ModelError (key
    ``bodies.*.independent`` or ``joints``) when the counts or the geometry do not fit."""
    n, m = system.n, system.m
    n_ind = sum(drv.ne * drv.m for _, drv, _ in system.independent)
    if m + n_ind <= n:
        return None
    keys = ", ".join(sorted({k for k, *_ in system.independent}))
    p, q = system.p, system.q_guess
    q = _assemble(system, None, t0, q, p)                 # every row: no choice made yet
    for _ in range(4):
        keep, ratios = _selection(system, t0, q, p)
        r = int(keep.sum())
        if r + n_ind != n:
            dropped = [system.constraint_names[i] for i in np.nonzero(~keep)[0]]
            raise ModelError(keys, f"the model has {n} coordinates and {m} constraint rows of rank {r} "
                             f"({', '.join(dropped) or 'none'} redundant) at the initial configuration: "
                             f"{n - r} degrees of freedom, but {n_ind} independent coordinate(s) are given")
        q = _assemble(system, keep, t0, q, p)              # the square system InitialState solves
        keep_new, ratios_new = _selection(system, t0, q, p)
        if np.array_equal(keep_new, keep):
            ratios = ratios_new
            break
    else:
        raise ModelError("joints", "the redundant rows found change with every assembly of the initial "
                         "configuration: it is (nearly) singular; move the initial guesses")
    names = list(system.constraint_names)
    weak = np.nonzero(keep & (ratios < KEEP_TOL))[0]
    if len(weak):
        raise ModelError("joints", f"the initial configuration is nearly singular: rows "
                         f"{', '.join(names[i] for i in weak)} are almost dependent on the rows before them "
                         f"(distance/norm {ratios[weak].min():.1e}); no clear set of redundant rows")
    phi = _eval(_RowView(system, np.ones(m, bool), with_independent=False), t0, q, p).phi()
    bad = np.nonzero(~keep & (np.abs(phi) > 1e-10 * (1 + np.max(np.abs(q)))))[0]
    if len(bad):
        raise ModelError("joints", f"rows {', '.join(names[i] for i in bad)} are redundant at the initial "
                         f"configuration but not satisfied there (|Φ| = {np.max(np.abs(phi[bad])):.2e}): these "
                         "joints contradict the others (check their points and lengths)")
    dropped = np.nonzero(~keep)[0]
    new = np.full(m + 1, -1, np.int64)
    new[np.nonzero(keep)[0]] = np.arange(r)
    for g in system.constraints:
        g.rows_all = g.rows          # the original numbering (matrix-r's least-squares R^Φ reads it)
        g.rows = new[g.rows]
    system.m = r
    system.constraint_names = [names[i] for i in np.nonzero(keep)[0]]
    system.redundancy = Redundancy(names, dropped, r, m, ratios)
    return system.redundancy


# -- singular configurations mid-run --------------------------------------------------------------
def singular_configuration(system, t, q, p, step, tol=SINGULAR_TOL):
    """A SingularConfiguration naming the joints whose (kept) rows of Φ_q are dependent
    at (t, q), or None when the row-normalised Φ_q is not singular there (σ_min/σ_max
    ≥ tol: the failure has another cause)."""
    if system.m == 0 or system.m > DIAGNOSE_MAX_ROWS:
        return None
    from .evaluation import StateEval
    q, z = np.real(q), np.zeros(system.n)
    G = _dense_rows(_sparse(StateEval(system, t, q, z, z, np.zeros(system.m), np.real(p)).G()))
    nrm = np.linalg.norm(G, axis=1)
    G = G / np.where(nrm > 0, nrm, 1.0)[:, None]
    U, s, _ = np.linalg.svd(G, full_matrices=True)
    smin = s[-1] if len(s) == system.m else 0.0       # more rows than columns: rank-deficient
    if smin > tol * s[0]:
        return None
    u = np.abs(U[:, -1])
    rows = np.nonzero(u >= 0.1 * u.max())[0]
    joints = list(dict.fromkeys(system.constraint_names[i].rsplit("[", 1)[0] for i in rows))
    return SingularConfiguration(
        "joints", f"singular configuration at step {step} (t = {t:.6g}): the constraint rows "
        f"{', '.join(system.constraint_names[i] for i in rows)} of joints {', '.join(joints)} are linearly "
        f"dependent there (σ_min/σ_max = {smin / s[0]:.1e}): a change point or dead centre of the "
        "mechanism, not a constant redundancy (those are dropped at set-up)")


def explain_singular_assembly(system, t, q, p):
    """The message for a singular initial-assembly matrix [Φ_q; Φ_ind,q] at the Newton
    iterate q: names the constraint rows that depend on the rows declared before them
    (a redundant model given n − m independent coordinates), else the general cause."""
    weak = []
    if 0 < system.m <= DIAGNOSE_MAX_ROWS:
        keep, ratios = _selection(system, t, np.real(q), np.real(p))
        weak = np.nonzero(ratios < KEEP_TOL)[0]
    if not len(weak):
        return ("initial assembly: the constraint Jacobian with the independent coordinates is singular: "
                "the independent coordinates do not determine the configuration")
    names = ", ".join(system.constraint_names[i] for i in weak)
    d = system.n - system.m + len(weak)
    return (f"initial assembly: the constraint rows {names} depend on the rows before them (redundant "
            f"constraints): the model then has {d} degrees of freedom, not {system.n - system.m}; give {d} "
            "independent coordinate(s) and parmbs drops the redundant rows")
