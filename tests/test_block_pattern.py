"""BlockPattern (model/assembly.py): the chunked construction and the by-element
selection give the same CSR as a dense scatter of the blocks (issue 21 item 3: a rank
keeps only its rows' elements and sorts its keys in chunks, so that 10⁶ elements fit)."""
import numpy as np
import scipy.sparse as sp

from parmbs.model.assembly import BlockPattern


def _dense(N, blocks, vals):
    D = np.zeros((N, N))
    for (r, c), v in zip(blocks, vals):
        R = np.broadcast_to(r[:, :, None], v.shape)
        C = np.broadcast_to(c[:, None, :], v.shape)
        ok = (R >= 0) & (C >= 0)
        np.add.at(D, (R[ok], C[ok]), v[ok])
    return D


def test_chunks_and_element_selection_equal_dense_scatter(monkeypatch):
    rng = np.random.default_rng(1)
    N = 3000
    blocks = [(rng.integers(-1, N, (2000, 8)),) * 2, (rng.integers(-1, N, (300, 3)), rng.integers(-1, N, (300, 5)))]
    vals = [rng.standard_normal((2000, 8, 8)), rng.standard_normal((300, 3, 5))]
    D = _dense(N, blocks, vals)
    for rr in [(0, N), (700, 2100)]:
        for by_element in (False, True):
            monkeypatch.setattr(BlockPattern, "CHUNK", 8_000_000)
            a = BlockPattern(N, blocks, rr, by_element=by_element)
            monkeypatch.setattr(BlockPattern, "CHUNK", 777)          # many chunks
            b = BlockPattern(N, blocks, rr, by_element=by_element)
            assert b.nnz == a.nnz and np.array_equal(b.slots, a.slots)
            assert np.array_equal(b.indices, a.indices) and np.array_equal(b.indptr, a.indptr)
            d = b.values(vals)
            A = sp.csr_matrix((d, b.indices, b.indptr), shape=(rr[1] - rr[0], N)).toarray()
            # sums of ≤ a few dozen O(1) products: round-off ≲ 1e-14, 1e-12 leaves room
            assert np.max(np.abs(A - D[rr[0]:rr[1]])) <= 1e-12
            if by_element and rr != (0, N):
                sel = b.elements[0]
                assert sel is not None and len(sel) < 2000       # only the rows' elements kept
                assert np.array_equal(b.values([vals[0][sel], vals[1]]), d)   # local input = whole input


def test_none_block_is_zero_bit_for_bit():
    """A block given as None sums as explicit zeros (continuum_structured.py's M, G, K)."""
    rng = np.random.default_rng(2)
    N = 500
    u = rng.integers(-1, N, (400, 8))
    pat = BlockPattern(N, [(u, u), (u, u)], (100, 350), by_element=True)
    v = rng.standard_normal((400, 8, 8))
    assert np.array_equal(pat.values([v, None]), pat.values([v, np.zeros_like(v)]))
    assert np.array_equal(pat.values([None, v]), pat.values([np.zeros_like(v), v]))
    assert not np.any(pat.values([None, None]))
