"""Ownership of the FFR continua's rows and elements over the ranks of a communicator.

Why.  The state of a model with continua is a replicated numpy vector (the Newton
loop, the border and the right-hand sides of continuum_schur.py read it whole), but
the O(nnz) work on it — M u, G u̇, K u of the structured Jacobians
(continuum_structured.py), the residual's f rows, the ff block's products in the
tangent/adjoint operators — and the per-element density column ∂r/∂x of the adjoint
(``StateEval.R_p``) need not be done by every rank.  This module owns the split:

* rows: the f rows (elastic coordinates in f numbering) are split exactly as the
  MPIAIJ factor F of continuum_schur.py (``assembly.local_size(nf, comm)``: PETSc's
  default contiguous split), so a rank's numpy row block and its MPIAIJ rows are the
  same ownership; a rank computes its rows of a sparse product, one ``Allgatherv``
  per evaluation makes the product whole on every rank;
* elements: each continuum group's elements 0..ne−1 are split the same way (contiguous
  blocks); a rank evaluates ∂r/∂x of its own elements only.  The design columns they
  touch are the rank's *own* columns when every such column is touched by the elements
  of one rank only and by no other group (a density field: one column per element);
  otherwise (a shared geometry variable …) ``R_p`` stays replicated (``columns_ok``).

Gradient.  In the adjoint sweep each rank accumulates λᵀ ∂R/∂x with its own elements'
columns complete and the other ranks' split columns incomplete; every replicated term
(objective partials, constraints, the initial state) is complete on every rank.  The
gradient is therefore ``combine(g)``: on the split columns the sum over ranks of each
rank's own columns (one ``Allreduce`` per sweep), elsewhere the replicated value.
``combine`` is idempotent — a combined gradient holds complete values in every
column, so combining again (after further own contributions) is exact — which is what
makes a checkpointed sweep restartable: the accumulator written to the file is the
combined one (the serial run's numbers, readable by any rank count).
"""
import numpy as np

from ..model.assembly import block_range, local_size, split_counts


def _mpi(comm):
    """mpi4py communicator of a petsc4py one (None when serial)."""
    if comm is None:
        from .._petsc import PETSc
        comm = PETSc.COMM_WORLD
    if comm.getSize() == 1:
        return None
    return comm.tompi4py()


class RowSplit:
    """The f rows [r0, r1) this rank owns (= F's MPIAIJ rows) and their gather."""

    def __init__(self, nf, comm, serial=False):
        self.nf = nf
        self.mpi = None if serial else _mpi(comm)
        self.size = 1 if self.mpi is None else self.mpi.size
        self.rank = 0 if self.mpi is None else self.mpi.rank
        nl, r0 = local_size(nf, comm) if self.mpi is not None else (nf, 0)
        self.r0, self.r1 = r0, r0 + nl
        self.counts = split_counts(nf, self.size)
        self.displs = np.r_[0, np.cumsum(self.counts)[:-1]]
        self.ngather = 0

    @property
    def parallel(self):
        return self.mpi is not None

    def gather(self, local):
        """The whole (nf, …) array from every rank's (r1 − r0, …) row block: one Allgatherv.
        Serial: ``local`` itself."""
        if self.mpi is None:
            return local
        from mpi4py import MPI
        local = np.ascontiguousarray(local)
        tail = local.shape[1:]
        w = int(np.prod(tail, dtype=np.int64))
        out = np.empty((self.nf,) + tail, local.dtype)
        mt = MPI._typedict[local.dtype.char]
        self.mpi.Allgatherv([local, mt], [out, (self.counts * w, self.displs * w), mt])
        self.ngather += 1
        return out


    def gather_sum(self, local, part):
        """(the whole (nf, …) array of ``gather``, Σ_ranks ``part``) in one Allgatherv:
        each rank's row block travels with its partial sum of a small border product
        (the frame rows' ``row @ x_f`` of a distributed border, continuum_structured.py),
        summed in rank order on every rank.  Serial: (local, part)."""
        if self.mpi is None:
            return local, part
        from mpi4py import MPI
        local = np.ascontiguousarray(local, float)
        part = np.asarray(part, float)
        tail = local.shape[1:]
        w = int(np.prod(tail, dtype=np.int64))
        k = part.size
        buf = np.concatenate([local.ravel(), part.ravel()])
        out = np.empty(self.nf * w + self.size * k)
        counts = self.counts * w + k
        displs = np.r_[0, np.cumsum(counts)[:-1]]
        self.mpi.Allgatherv([buf, MPI.DOUBLE], [out, (counts, displs), MPI.DOUBLE])
        self.ngather += 1
        whole = np.empty((self.nf,) + tail)
        flat = whole.reshape(-1)
        tot = np.zeros(k)
        for r in range(self.size):
            o, n = displs[r], self.counts[r] * w
            flat[self.displs[r] * w:self.displs[r] * w + n] = out[o:o + n]
            tot += out[o + n:o + n + k]
        return whole, tot.reshape(part.shape)

    def allreduce(self, x, op="sum"):
        """Σ (or max) over ranks of a small array (x itself when serial)."""
        if self.mpi is None:
            return x
        from mpi4py import MPI
        x = np.ascontiguousarray(x, np.result_type(x, float))
        out = np.empty_like(x)
        self.mpi.Allreduce(x, out, op=MPI.SUM if op == "sum" else MPI.MAX)
        return out


class ElementSplit:
    """Per continuum group, the elements [e0, e1) this rank evaluates in ``R_p``, and the
    design columns it owns (module doc).  ``active`` is False when serial or when the
    split columns are not one-rank-exclusive (then ``R_p`` stays replicated)."""

    def __init__(self, plan, groups, nd, comm):
        self.mpi = _mpi(comm)
        self.size = 1 if self.mpi is None else self.mpi.size
        self.rank = 0 if self.mpi is None else self.mpi.rank
        self.ids = {id(g) for g in groups}
        self.ranges = {id(g): block_range(g.ne, self.size, self.rank) for g in groups}
        self.nd = nd
        self.split_cols = np.zeros(nd, bool)
        self.own_cols = np.zeros(nd, bool)
        self.active = self.mpi is not None and nd > 0 and self._columns(plan, groups)

    def _columns(self, plan, groups):
        """Owner rank of every design column the split groups touch; False when a column
        has elements on two ranks or is also touched by another group (``columns_ok``)."""
        lo = np.full(self.nd, self.size, np.int64)
        hi = np.full(self.nd, -1, np.int64)
        for g in groups:
            cols, dcols = plan.pcols(g)
            if not len(cols):
                continue
            owner = np.repeat(np.arange(self.size), split_counts(g.ne, self.size))
            d = dcols.reshape(g.ne, -1)
            o = np.broadcast_to(owner[:, None], d.shape)
            m = d >= 0
            np.minimum.at(lo, d[m], o[m])
            np.maximum.at(hi, d[m], o[m])
        touched = hi >= 0
        if not touched.any() or np.any(lo[touched] != hi[touched]):
            return False
        others = [g for g in list(plan.sys.forces) + list(plan.sys.constraints) if id(g) not in self.ids]
        for g in others:
            cols, dcols = plan.pcols(g)
            if len(cols) and np.any(touched[dcols[dcols >= 0]]):
                return False
        self.split_cols = touched
        self.own_cols = touched & (lo == self.rank)
        return True

    def combine(self, grad):
        """The gradient from per-rank accumulators (module doc): split columns summed over
        their owners (one Allreduce), the rest as it is.  Collective; idempotent."""
        grad = np.asarray(grad)
        if not self.active:
            return grad
        from mpi4py import MPI
        own = self.own_cols.reshape((-1,) + (1,) * (grad.ndim - 1))
        part = np.ascontiguousarray(np.where(own, grad, 0.0)[self.split_cols])
        tot = np.empty_like(part)
        self.mpi.Allreduce(part, tot, op=MPI.SUM)
        out = np.array(grad, copy=True)
        out[self.split_cols] = tot
        return out


def split_groups(system):
    """The per-element continuum groups whose ∂r/∂x the adjoint splits by elements."""
    from .continuum import ContinuumInertia, ContinuumElastic, ContinuumGravity
    return [g for g in system.forces if isinstance(g, (ContinuumInertia, ContinuumElastic, ContinuumGravity))]
