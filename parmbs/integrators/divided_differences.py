"""The newest diagonal of Newton's divided-difference table, updated one node at a time:
the third divided difference y[z_{m−3}, …, z_m] of timeloop.LocalError's error estimate.

Newton's recursion (Hairer, Nørsett & Wanner I, §III.5; Stoer & Bulirsch §2.1.3): for
nodes z_0, z_1, … and values y_i, the divided differences

    y[z_i] = y_i,    y[z_i, …, z_{i+j}] = (y[z_{i+1}, …, z_{i+j}] − y[z_i, …, z_{i+j−1}]) / (z_{i+j} − z_i),

so the newest entry of level j needs only the new node's entry of level j − 1 and the
previous newest entry of level j − 1: a new node costs one subtraction and one division
per level (three for the third difference), whatever came before.  Repeated nodes (a
Hermite table) take derivative data instead of the division by zero: y[z, z] = y'(z),
y[z, z, z] = y''(z)/2.  LocalError starts at t_0 with the consistent v_0, a_0 as such
data (q' = v_0, q'' = a_0, v' = a_0; v'' is not known, so the velocities' third difference
becomes available one node after the positions').

The entries are those of the textbook table, expression by expression (the same
subtraction and division, in the same order): ``tests/test_local_error.py`` holds
LocalError's estimate against the table written out from its definition, bit for bit.
"""
import numpy as np

#: the highest level kept: the third difference (C h³ y''' ≈ 6 C h³ y[4 nodes])
LEVELS = 4


class Diagonal:
    """Newest diagonal levels[j] = y[z_{m−j}, …, z_m] (j = 0 … ``len(levels)`` − 1) of
    the stacked vector y = (q, v) (``n`` = len(q)); ``z`` the last nodes with multiplicity;
    ``known`` = (levels known for the q part, for the v part) — a level whose v part is
    not known (no v'' at t_0) holds NaN there and is never read; ``absy`` = |y[z_m]| (the
    error weights' scale, computed once per node).  ``levels`` is a list, or the rows of
    one array whose first four rows are the levels (compiled/local_error.py's)."""
    __slots__ = ("z", "levels", "known", "absy", "n")

    def __init__(self, z, levels, known, n, absy=None):
        self.z, self.levels, self.known, self.n = z, levels, known, n
        self.absy = np.abs(levels[0]) if absy is None else absy

    @classmethod
    def start(cls, t, q, v, rates=None):
        """The first node (t, q, v); with ``rates`` = (v_0, a_0) the confluent data at t:
        z = (t, t, t), levels (y, y', (q''/2, unknown))."""
        y = np.concatenate((q, v))
        if rates is None:
            return cls([t], [y], (1, 1), q.shape[0])
        v0, a0 = rates
        half = np.concatenate((0.5 * a0, np.full(v.shape[0], np.nan, dtype=np.result_type(a0, float))))
        return cls([t, t, t], [y, np.concatenate((v0, a0)), half], (3, 2), q.shape[0])

    def push(self, t1, q1, v1):
        """The diagonal after the node (t1, q1, v1) (self is left as it is)."""
        y = np.concatenate((q1, v1))
        new = [y]
        for below, zj in zip(self.levels[:LEVELS - 1], reversed(self.z)):    # level j: y[…] of level j − 1, z_{m−j+1}
            y = (y - below) / (t1 - zj)
            new.append(y)
        kq, kv = self.known
        return Diagonal((self.z + [t1])[1 - LEVELS:], new, (kq + (kq < LEVELS), kv + (kv < LEVELS)), self.n)

    def third(self):
        """y[z_{m−3}, …, z_m] and how many leading components of it are known (n: only the
        positions', or all), or (None, 0)."""
        if self.known[0] < LEVELS:
            return None, 0
        d3 = self.levels[LEVELS - 1]
        return d3, (d3.shape[0] if self.known[1] == LEVELS else self.n)
