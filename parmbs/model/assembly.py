"""Generic assembly: local component blocks -> global numpy vectors and PETSc AIJ.

Knows index maps and PETSc, never a formula.  Index convention: the extended
coordinate space has the model's n coordinates followed by ground's 3 zero slots;
a global *unknown* index ≥ 0 is kept, −1 (a ground slot) is dropped.
"""
import numpy as np

from .._petsc import PETSc
from ..petsc_options import set_config_options
from .._log import event


def scatter_add(size, idx, vals):
    """Σ of ``vals`` at ``idx`` (same shape) into a length-``size`` vector (complex
    values too: the complex-step gradient runs the residuals in complex arithmetic)."""
    if np.iscomplexobj(vals):
        return scatter_add(size, idx, vals.real) + 1j * scatter_add(size, idx, vals.imag)
    return np.bincount(idx.ravel(), weights=vals.ravel(), minlength=size)[:size]


def scatter_add_cols(size, idx, vals):
    """Multi-column scatter: idx (ne, a), vals (ne, a, k) -> (size, k); −1 drops.

    One ``bincount`` over (row, column) keys: several times cheaper than
    ``np.add.at`` for the small blocks of one time step."""
    k = vals.shape[-1]
    rows = np.where(idx < 0, size, idx).reshape(-1, 1)
    keys = (rows * k + np.arange(k)).ravel()
    return scatter_add((size + 1) * k, keys, vals.reshape(-1))[:size * k].reshape(size, k)


def gather_cols(X, idx):
    """Rows ``idx`` of X (size, k) with −1 -> zero rows: (ne, a, k)."""
    Xe = np.vstack([X, np.zeros((1, X.shape[1]), X.dtype)])
    return Xe[idx]           # −1 picks the appended zero row


class BlockPattern:
    """The sparsity of Σ_blocks scatter(rows, cols, local values) in CSR form.

    ``blocks`` is a list of (rows (ne, a), cols (ne, b)) in global unknown numbering
    (−1 entries are dropped).  ``values`` turns a matching list of (ne, a, b) arrays
    into the CSR data of the locally owned rows, summing duplicates, with one
    ``bincount`` and no Python loop over elements: every local entry has a slot
    (dropped and off-rank entries the spare slot ``nnz``), so no masking per call.

    ``by_element=True`` keeps slots only for the elements of each block that have a
    row in [r0, r1) (``elements[i]``: their indices), so a rank's pattern and its
    ``values`` input are O(its rows), not O(all elements): the FFR continua's F
    (flexible/continuum_schur.py) and M, G, K (continuum_structured.py) hold 64–128
    entries per element, ≈ 1 GB of int64 slots per pattern at 10⁶ elements if every
    rank kept them all.  ``values`` then takes, per block, either the whole (ne, a, b)
    array (its local elements are picked) or the local (len(elements[i]), a, b) one —
    what lets a caller evaluate only its own elements.  Slots are int32 when nnz fits.
    """

    #: entries per np.unique call when the pattern is built (its sort needs ~40 bytes per
    #: entry: 8·10⁶ entries ≈ 0.3 GB; a 10⁶-element continuum has 6.4·10⁷ per rank on 2)
    CHUNK = 8_000_000

    def __init__(self, N, blocks, row_range=None, by_element=False):
        self.N = N
        r0, r1 = row_range if row_range is not None else (0, N)
        it = np.int32 if N < 2 ** 31 - 1 else np.int64
        Rs, Cs, masks, self.elements = [], [], [], []
        for rows, cols in blocks:
            sel = None
            if by_element and (r0, r1) != (0, N):
                own = ((rows >= r0) & (rows < r1)).any(axis=1)
                if not own.all():
                    sel = np.nonzero(own)[0]
                    rows, cols = rows[sel], cols[sel]
            self.elements.append(sel)
            R = np.broadcast_to(rows.astype(it, copy=False)[:, :, None], rows.shape + (cols.shape[1],))
            C = np.broadcast_to(cols.astype(it, copy=False)[:, None, :], R.shape)
            mask = ((R >= r0) & (R < r1) & (C >= 0)).ravel()
            masks.append(mask)
            Rs.append(R.ravel()[mask])
            Cs.append(C.ravel()[mask])
        self.sizes = [len(m) for m in masks]
        mask = np.concatenate(masks) if masks else np.zeros(0, bool)
        del masks
        R = np.concatenate(Rs) if Rs else np.zeros(0, it)
        del Rs
        C = np.concatenate(Cs) if Cs else np.zeros(0, it)
        del Cs
        # the unique (row, col) keys and every entry's slot, by chunks of rows so that the
        # sort's temporaries stay O(CHUNK) (row-major keys: chunks in row order are in
        # key order, their unique sets concatenate)
        counts = np.bincount(R - r0, minlength=r1 - r0) if len(R) else np.zeros(r1 - r0, np.int64)
        ends = np.searchsorted(np.cumsum(counts), np.arange(self.CHUNK, len(R), self.CHUNK), side="right")
        bounds = np.unique(np.r_[0, ends, r1 - r0]) + r0
        inv_all = np.empty(len(R), np.int64 if len(R) >= 2 ** 31 - 1 else np.int32)
        uniq_rows, uniq_cols, nnz = [], [], 0
        for ra, rb in zip(bounds[:-1], bounds[1:]):
            pos = np.nonzero((R >= ra) & (R < rb))[0]
            keys = R[pos].astype(np.int64) * N + C[pos]
            u, inv = np.unique(keys, return_inverse=True)
            del keys
            inv_all[pos] = inv.ravel() + nnz
            del inv, pos
            uniq_rows.append((u // N).astype(it))
            uniq_cols.append((u % N).astype(it))
            nnz += len(u)
            del u
        del R, C
        self.nnz = nnz
        self.slots = np.full(len(mask), self.nnz, np.int32 if self.nnz < 2 ** 31 - 1 else np.int64)
        self.slots[mask] = inv_all
        del mask, inv_all
        rows = np.concatenate(uniq_rows) if uniq_rows else np.zeros(0, it)
        self.indices = (np.concatenate(uniq_cols) if uniq_cols else np.zeros(0, it)).astype(PETSc.IntType)
        counts = np.bincount(rows - r0, minlength=r1 - r0)
        self.indptr = np.concatenate([[0], np.cumsum(counts)]).astype(PETSc.IntType)

    def pick(self, i, v):
        """Entries of block i's this-pattern elements of a whole per-element array ``v`` (ne, …)."""
        sel = self.elements[i]
        return v if sel is None else np.asarray(v)[sel]

    def local(self, i, v):
        """Block i's values of this pattern's elements: ``v`` whole (ne, …) or already local."""
        sel = self.elements[i]
        v = np.asarray(v)
        if sel is None or v.size == self.sizes[i]:         # (len(sel) < ne: no ambiguity)
            return v
        return v[sel]

    def values(self, vals):
        """CSR data of Σ blocks, duplicates summed in entry order.  A block given as None is
        zero: then the others are summed block by block, so that the temporaries are one
        block's (M, G, K of continuum_structured.py: at 10⁶ elements 6.4·10⁷ values per
        rank, and only the inertia or only the elastic blocks are nonzero in each — the
        same sums as with explicit zeros, bit for bit)."""
        if not vals:
            return np.zeros(self.nnz)
        if all(v is not None for v in vals):
            data = np.concatenate([np.ravel(self.local(i, v)) for i, v in enumerate(vals)])
            if data.shape != self.slots.shape:
                raise ValueError(f"{data.size} local values for a pattern of {self.slots.size}")
            if np.iscomplexobj(data):
                raise TypeError("matrix blocks must be real: evaluate them at StateEval.real()")
            return np.bincount(self.slots, weights=data, minlength=self.nnz + 1)[:self.nnz]
        if len(vals) != len(self.sizes):
            raise ValueError(f"{len(vals)} blocks for a pattern of {len(self.sizes)}")
        out, o = None, 0
        for i, v in enumerate(vals):
            size = self.sizes[i]
            if v is not None:
                d = np.ravel(self.local(i, v))
                if d.size != size:
                    raise ValueError(f"{d.size} local values for a block of {size}")
                if np.iscomplexobj(d):
                    raise TypeError("matrix blocks must be real: evaluate them at StateEval.real()")
                part = np.bincount(self.slots[o:o + size], weights=d, minlength=self.nnz + 1)
                out = part if out is None else out.__iadd__(part)
            o += size
        return np.zeros(self.nnz) if out is None else out[:self.nnz]


def split_counts(N, size):
    """Rows per rank in PETSc's default contiguous split of N rows over ``size`` ranks."""
    return np.array([N // size + (r < N % size) for r in range(size)], np.int64)


def block_range(N, size, rank):
    """Rows [r0, r1) of ``rank`` in that split."""
    counts = split_counts(N, size)
    r0 = int(counts[:rank].sum())
    return r0, r0 + int(counts[rank])


def local_size(N, comm):
    """PETSc's default split of N rows over the ranks of ``comm``: (n_local, rstart)."""
    r0, r1 = block_range(N, comm.getSize(), comm.getRank())
    return r1 - r0, r0


#: serial systems of at least this many unknowns are factored by MUMPS (measured crossover)
SERIAL_MUMPS_SIZE = 200

#: MUMPS's INFOG(1) codes for a workspace too small, which a larger ICNTL(14) cures
#: (MUMPS 5.5 user's guide §8: −8, −9 factorization; −11, −12, −14, −15 solve and
#: refinement; −17, −20 communication buffers); tried at most this many doublings
MUMPS_WORKSPACE_ERRORS = (-8, -9, -11, -12, -14, -15, -17, -20)
MUMPS_WORKSPACE_TRIES = 4
#: how many times any operator of this process enlarged MUMPS's workspace (for tests)
MUMPS_RETRIES = [0]

#: the forward run in progress (``new_run``); an operator set up in an earlier one is
#: factored from scratch at its first matrix of this one (``SparseOperator.set_values``)
_RUN = [0]


def new_run():
    """A forward run starts (sensitivity/problem.Problem.forward): every SparseOperator
    forgets its factorization — the symbolic analysis too — at its next ``set_values``.
    PETSc keeps the analysis of the first matrix factored while the nonzero pattern stays,
    and MUMPS's analysis reads the matrix's values (its maximum-transversal column
    permutation and scaling, ICNTL(6)/(8)), so without this a run's last bits depend on
    the designs the process ran before: the double wishbone's initial assembly at an MMA
    iterate differed by 3e-15 between the uninterrupted run (third evaluation of the
    process) and a restart (first), ψ by 1.5e-13 relative (tests/test_restart_bits.py).
    With it a run is a function of its own inputs, so ``parmbs optimize --restart``
    repeats the uninterrupted record bit for bit."""
    _RUN[0] += 1


class ColumnSolves:
    """``solve_many`` for any operator with ``solve(rhs, transpose)``."""

    def solve_many(self, B, transpose=False):
        """Solve for every column of B (N, k), reusing the factorization."""
        out = np.empty_like(B)
        for j in range(B.shape[1]):
            out[:, j] = self.solve(np.ascontiguousarray(B[:, j]), transpose)
        return out


class SparseOperator(ColumnSolves):
    """A PETSc AIJ matrix with a fixed BlockPattern, its KSP, and the vectors to use it.

    Models small enough to replicate keep their state as numpy arrays on every rank;
    the matrix and solves are distributed by rows.  ``solve`` takes and returns full
    (replicated) numpy vectors, ``solve_many`` a dense block of right-hand sides.
    """

    def __init__(self, N, blocks, comm=None, options_prefix="parmbs_", options=None):
        self.comm = comm or PETSc.COMM_WORLD
        self.N = N
        nl, r0 = local_size(N, self.comm)
        self.r0, self.r1 = r0, r0 + nl
        self.pattern = BlockPattern(N, blocks, (self.r0, self.r1))
        A = PETSc.Mat().createAIJ(((nl, N), (nl, N)), comm=self.comm)
        A.setPreallocationCSR((self.pattern.indptr, self.pattern.indices))
        A.setOption(PETSc.Mat.Option.NEW_NONZERO_ALLOCATION_ERR, True)
        self.A = A
        self.x, self.b = A.createVecs()
        # one rank owns every row: read the solution Vec directly, no gather scatter
        self._serial = self.comm.getSize() == 1
        self._all, self._x_all = (None, None) if self._serial else PETSc.Scatter.toAll(self.x)
        ksp = PETSc.KSP().create(self.comm)
        ksp.setOperators(A)
        ksp.setOptionsPrefix(options_prefix)
        opts = PETSc.Options()
        set_config_options(options_prefix, options or {})
        user_order = opts.hasName(options_prefix + "pc_factor_mat_ordering_type")
        user_solver = opts.hasName(options_prefix + "pc_factor_mat_solver_type")
        # saddle-point matrices: PETSc's own LU does not pivot, so keep the natural
        # order (mass block first); in parallel use MUMPS, which pivots — set on this
        # PC below, not in the options database: an entry there outlived the operator
        # and read as the user's choice for every later operator of the process (a
        # serial run after a distributed one in the same process factored with MUMPS
        # instead of PETSc's LU: tests/test_small_mpi.py's batch gradient 6.9e-18 off)
        # (not for an operator that asks for MUMPS: a natural order handed to MUMPS
        # gives it dense fronts — 20 s instead of 0.3 s for a 1500-link chain's
        # initial assembly).  Set on this PC, not in the options database: an entry
        # there would read as the user's choice for every later operator of the
        # process, which then handed MUMPS the natural order (a second Iltis Problem in
        # one process: 4.6 instead of 2.0 ms per factorization)
        natural = (self.comm.getSize() == 1 and not user_order
                   and (options or {}).get("pc_factor_mat_solver_type") != "mumps")
        ksp.setFromOptions()
        if self.comm.getSize() > 1 and not user_solver and ksp.getPC().getType() in ("lu", "cholesky"):
            ksp.getPC().setFactorSolverType("mumps")
        if natural and ksp.getPC().getType() in ("lu", "ilu"):
            ksp.getPC().setFactorOrdering("natural")
        # PETSc's LU in natural order fills in the whole multiplier block of a large
        # model (a 150-link chain: 85 ms per step vs 12 ms with MUMPS, which orders
        # and pivots); small models stay on PETSc's LU, faster below ~200 unknowns.
        # Set on this PC only, not in the global options database.
        pc = ksp.getPC()
        if (self.comm.getSize() == 1 and N >= SERIAL_MUMPS_SIZE and pc.getType() == "lu"
                and not user_solver):
            pc.setFactorSolverType("mumps")
            if not user_order:
                # hand MUMPS no ordering (its own AMD/METIS): the natural order set above
                # for PETSc's LU would be used as MUMPS's pivot order, and a floating
                # frame's dense rows eliminated first fill the whole factor (8·10³
                # unknowns: 60 s per factorization instead of ~0.05 s)
                pc.setFactorOrdering("external")
        self.ksp = ksp
        self._factored = False
        self._run = _RUN[0]
        self._mumps_icntl14, self._mumps_tries = None, 0

    @event("ParmbsAssemble")
    def set_values(self, vals):
        """Assemble the matrix from local blocks (list matching the pattern's blocks);
        the first matrix of a new forward run is factored from scratch (``new_run``)."""
        if self._run != _RUN[0]:
            self._run = _RUN[0]
            self._reset()
        data = self.pattern.values(vals)
        self.A.setValuesCSR(self.pattern.indptr, self.pattern.indices, data)
        self.A.assemble()
        self._factored = False

    def _to_petsc(self, rhs):
        self.b.setArray(rhs[self.r0:self.r1])

    def _gather(self, v):
        if self._serial:
            return v.getArray(readonly=True).copy()
        self._all.scatter(v, self._x_all, addv=PETSc.InsertMode.INSERT, mode=PETSc.ScatterMode.FORWARD)
        return self._x_all.getArray(readonly=True).copy()

    def solve(self, rhs, transpose=False):
        """x = A⁻¹ rhs (or A⁻ᵀ rhs); rhs and x are full numpy vectors on every rank.

        A complex rhs (complex-step gradients; the matrix is always real) is solved
        as two real systems with the same factorization."""
        if np.iscomplexobj(rhs):
            return self.solve(np.ascontiguousarray(rhs.real), transpose) \
                + 1j * self.solve(np.ascontiguousarray(rhs.imag), transpose)
        self._to_petsc(rhs)
        while True:
            try:
                if transpose:
                    self.ksp.solveTranspose(self.b, self.x)
                else:
                    self.ksp.solve(self.b, self.x)
                reason, why = self.ksp.getConvergedReason(), None
            except PETSc.Error as e:   # zero pivot, factorization failure
                reason, why = -1, f"PETSc error {e.ierr}"
            if reason >= 0:
                return self._gather(self.x)
            if not self._more_mumps_workspace():
                self._reset()
                raise np.linalg.LinAlgError(f"linear solve failed ({why or f'KSP reason {reason}'}"
                                            f"{self._mumps_note()})")

    def _mumps_infog1(self):
        """MUMPS's INFOG(1) of the current factorization (0 when not factored by MUMPS)."""
        pc = self.ksp.getPC()
        if pc.getType() not in ("lu", "cholesky") or pc.getFactorSolverType() != "mumps":
            return 0
        try:
            return pc.getFactorMatrix().getMumpsInfog(1)
        except PETSc.Error:
            return 0

    def _more_mumps_workspace(self):
        """After a failed solve: if MUMPS stopped because its workspace estimate was too
        small (INFOG(1) in ``MUMPS_WORKSPACE_ERRORS``), double ICNTL(14) — the percentage
        MUMPS adds to its analysis's estimate, 20 by default (MUMPS 5.5 user's guide,
        §5.1 and the error list of §8) — forget the factorization and return True, so the
        caller factors again; at most ``MUMPS_WORKSPACE_TRIES`` times per operator.
        Measured: a 206-unknown natural-body model under index-3 + GGL stopped with −9 at
        20 % (branch seed24g) and PETSc reported it as a failed factorization, read as a
        singular Newton matrix.  The condition is global (every rank's INFOG), so every
        rank retries together."""
        if self._mumps_infog1() not in MUMPS_WORKSPACE_ERRORS or self._mumps_tries >= MUMPS_WORKSPACE_TRIES:
            return False
        self._mumps_tries += 1
        MUMPS_RETRIES[0] += 1
        self._mumps_icntl14 = 2 * (self._mumps_icntl14 or
                                   self.ksp.getPC().getFactorMatrix().getMumpsIcntl(14))
        self._reset()
        return True

    def _mumps_note(self):
        i = self._mumps_infog1()
        return f"; MUMPS INFOG(1) = {i}, ICNTL(14) = {self._mumps_icntl14 or 'default'}" if i else ""

    def _reset(self):
        """Forget the factorization, so the next matrix is factored from scratch (the
        symbolic analysis too): at a new forward run (``new_run``), and after a failed
        factorization (a singular or non-finite matrix: a trial design that fails).
        Without the latter MUMPS keeps its error code (INFOG(1) < 0) and, the nonzero
        pattern being the same, PETSc skips every later numeric factorization: measured
        under `mpirun -n 2 parmbs optimize`, after one trial with a non-finite matrix
        every later evaluation failed (PETSc errors 76, 56).

        Only the PC is reset (PCReset: its factor matrix and orderings; its type, solver
        type and ordering type stay), not the KSP: KSPReset also destroys the KSP's
        viewers, so ``-ksp_view`` printed nothing after it
        (tests/test_petsc_cli.py::test_a_prefixed_option_wins_over_the_unprefixed_one).
        PCReset drops the operators, so they are set again.  Collective (every rank's
        solve fails together; every rank starts the run)."""
        self.ksp.getPC().reset()
        self.ksp.setOperators(self.A)
        self._factored = False
        if self._mumps_icntl14:            # the enlarged workspace, on the new factor matrix
            pc = self.ksp.getPC()
            pc.setFactorSetUpSolverType()
            pc.getFactorMatrix().setMumpsIcntl(14, self._mumps_icntl14)

    def destroy(self):
        for o in (self.ksp, self.A, self.x, self.b, self._all, self._x_all):
            if o is not None:
                o.destroy()
