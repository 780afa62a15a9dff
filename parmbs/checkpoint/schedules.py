"""Checkpoint schedules (config ``checkpoint.schedule``): which forward states are kept,
and how the reverse sweep gets back the states it did not keep.

The reverse (adjoint) sweep of step k needs x_k and x_{k+1}; it always holds x_{k+1}
(it is the state the previous reverse step used), so it asks for the states
x_{N-1}, x_{N-2}, …, x_0 one after the other, in that order.

* ``all``        every state is stored; no recomputation.
* ``every:K``    x_0, x_K, x_2K, … are stored; the reverse sweep recomputes the K−1
                 states between two stored ones once, keeping that segment in memory.
                 The forward run keeps its last segment in memory, so an uninterrupted
                 run recomputes (K−1)·⌊(N−1)/K⌋ steps.
* ``revolve:C``  binomial checkpointing (Griewank & Walther, ACM TOMS 26, 2000) with C
                 slots, x_0 in one of them.  Reversing l steps with c slots costs the
                 minimal t(l, c) = r·l − β(c+1, r−1) forward steps, β(c, r) = C(c+r, c),
                 β(c, r−1) < l ≤ β(c, r); our first sweep also computes x_N (one step
                 more than Revolve's, whose last step is the taping "youturn"), so an
                 uninterrupted run recomputes t(N, C) + 1 − N steps — 10⁴ steps with 100
                 slots: 24 748 forward steps in all, 2.47 sweeps.
                 Adaptive runs (N unknown in advance) place the forward checkpoints
                 online (``Revolve.online_slot``): equidistant at a power-of-two spacing
                 d(k) on at most B = ⌈C/2⌉ slots, d doubled (every other checkpoint
                 dropped, its slot reused) when they would not fit — the "equidistant
                 online checkpointing with thinning" idea (cf. Stumm & Walther, SIAM J.
                 Sci. Comput. 32, 2010, whose optimal online schedule repeats fewer steps
                 but needs bookkeeping beyond a slot table).  At the end the B stored
                 states are ≤ d ≤ 2N/B steps apart and ≥ C − B slots are free, with which
                 the reverse sweep's binomial recursion (the same provider as for fixed
                 steps: it works from whatever the slots hold) reverses each gap.

Why not ``checkpoint_schedules`` or ``pyrevolve``: see parmbs/checkpoint/__init__.py.
"""
from __future__ import annotations

import math
import re
from functools import lru_cache

_RE = re.compile(r"^(all|every:([0-9]+)|revolve:([0-9]+))$")


def beta(c: int, r: int) -> int:
    """β(c, r) = (c + r)! / (c! r!): the most steps c slots reverse with r sweeps."""
    if r < 0 or c < 0:
        return 0
    return math.comb(c + r, c)


def revolve_cost(l: int, c: int) -> int:
    """Griewank's minimal number of forward steps t(l, c) to reverse l steps with c slots
    (x_lo in one of them, x_{lo+l} held); ``math.inf`` when impossible (c = 0, l ≥ 2)."""
    if l <= 1:
        return 0
    if c <= 0:
        return math.inf
    r = 0
    while beta(c, r) < l:
        r += 1
    return r * l - beta(c + 1, r - 1)


@lru_cache(maxsize=4096)
def revolve_split(l: int, c: int) -> int:
    """An optimal first advance m (1 ≤ m < l) for reversing l steps with c ≥ 1 slots:
    m + t(l − m, c − 1) + t(m, c) = t(l, c).

    With β(c, r−1) < l ≤ β(c, r), m = min(β(c, r−1), l − β(c−1, r−1)) is optimal (the
    upper end of the optimal range; checked against the exhaustive recursion in
    tests/test_checkpoint.py).  The result is verified against the closed form here too,
    with a scan as the safety net."""
    if l < 2:
        raise ValueError("nothing to split")
    if c == 1:
        return l - 1
    best = revolve_cost(l, c)

    def ok(m):
        return 1 <= m < l and m + revolve_cost(l - m, c - 1) + revolve_cost(m, c) == best

    r = 0
    while beta(c, r) < l:
        r += 1
    m = min(beta(c, r - 1), l - beta(c - 1, r - 1))
    if ok(m):
        return m
    for m in range(1, l):  # pragma: no cover - safety net
        if ok(m):
            return m
    raise AssertionError((l, c))  # pragma: no cover


class Schedule:
    """A parsed ``checkpoint.schedule``; ``kind`` is ``all``, ``every`` or ``revolve``."""

    kind = "?"

    def __init__(self, text: str, count: int = 0):
        self.text, self.count = text, count

    def __repr__(self):
        return f"Schedule({self.text!r})"

    def slots(self, N: int) -> int:
        """Number of storage slots the file needs for N steps."""
        raise NotImplementedError

    def forward_slot(self, k: int, N: int):
        """Slot the forward sweep writes x_k into, or None."""
        raise NotImplementedError

    def forward_keep(self, N: int) -> int:
        """The forward sweep keeps x_j for j ≥ this in memory for the reverse sweep."""
        return N

    def recomputations(self, N: int) -> int:
        """Forward steps an uninterrupted reverse sweep recomputes (theory)."""
        raise NotImplementedError


class All(Schedule):
    kind = "all"

    def slots(self, N):
        return N + 1

    def forward_slot(self, k, N):
        return k

    def recomputations(self, N):
        return 0


class Every(Schedule):
    kind = "every"

    def slots(self, N):
        return N // self.count + 1

    def forward_slot(self, k, N):
        return k // self.count if k % self.count == 0 else None

    def forward_keep(self, N):
        return self.count * ((N - 1) // self.count) if N >= 1 else 0

    def recomputations(self, N):
        return (self.count - 1) * ((N - 1) // self.count) if N >= 1 else 0


class Revolve(Schedule):
    kind = "revolve"

    def slots(self, N):
        """C slots, but never more than N: with C ≥ N − 1 the chain below stores every
        state x_0 … x_{N−2} (one slot each) whatever C is, so further slots would stay
        empty — and were allocated all the same (revolve:10000000 on a 200-step run
        wrote a 1.2 GB file; issue 17)."""
        return min(self.count, max(N, 1))

    def chain(self, N):
        """Steps the first sweep stores, in order (slot i holds chain[i]): the rightmost
        descent of the binomial recursion.  x_{N−1} and x_N stay in memory."""
        lo, c, chain = 0, self.count, [0]
        while N - lo > 1 and c >= 2:
            lo += revolve_split(N - lo, c)
            c -= 1
            if lo >= N - 1:
                break
            chain.append(lo)
        return chain

    def forward_slot(self, k, N):
        chain = self._chain(N)
        try:
            return chain.index(k)
        except ValueError:
            return None

    def _chain(self, N):
        if getattr(self, "_cached", (None,))[0] != N:
            self._cached = (N, self.chain(N))
        return self._cached[1]

    def forward_keep(self, N):
        return max(N - 1, 0)

    def recomputations(self, N):
        return revolve_cost(N, self.count) + 1 - N if N >= 1 else 0

    # -- online placement (adaptive runs: N unknown; module docstring) ----------------------------
    def online_spacing(self, k):
        """d(k): the smallest power of two with ⌊k/d⌋ + 1 ≤ B = ⌈C/2⌉ (the multiples of
        d up to k fit in B slots)."""
        B = max(1, (self.count + 1) // 2)
        d = 1
        while k // d + 1 > B:
            d *= 2
        return d

    def online_slot(self, k, slot_step):
        """The slot x_k is written into when N is not known in advance, or None: x_k is
        kept when d(k) divides k, into a slot whose state is no longer a multiple of
        d(k) (dropped), else the lowest empty one — so at most B slots are ever used."""
        d = self.online_spacing(k)
        if k % d or k in slot_step:
            return None
        steps = list(slot_step)
        for i, s in enumerate(steps):
            if s >= 0 and (s % d or s > k):
                return i
        for i, s in enumerate(steps):
            if s < 0:
                return i
        raise AssertionError((k, steps))  # pragma: no cover - at most B ≤ C slots are used


def parse_schedule(text: str) -> Schedule:
    """``all`` | ``every:K`` | ``revolve:C`` → Schedule (ValueError otherwise)."""
    m = _RE.match(str(text))
    if not m:
        raise ValueError(f"invalid schedule {text!r} (expected 'all', 'every:K' or 'revolve:C')")
    if m.group(1) == "all":
        return All("all")
    if m.group(2) is not None:
        k = int(m.group(2))
        if k < 1:
            raise ValueError(f"invalid schedule {text!r}: K must be >= 1")
        return Every(text, k)
    c = int(m.group(3))
    if c < 1:
        raise ValueError(f"invalid schedule {text!r}: C must be >= 1")
    return Revolve(text, c)
