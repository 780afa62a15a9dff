"""Per-kind index arrays of a planar parmbs model, for the issue-19 step prototypes.

Reads a built ``parmbs.model.system.System`` (never changes it): for each component
group of a kind the prototypes implement (Inertia, Gravity, Spring, Revolute) its
``qidx`` mapped to unknown numbering (ground slots → −1), ``pidx`` and, for
constraints, ``rows`` (−1: a dropped redundant row).  Any other kind raises
NotImplementedError: the prototypes cover the five-bar's kinds only.
"""
import numpy as np

KINDS = ("Inertia", "Gravity", "Spring", "Revolute")


class ModelArrays:
    def __init__(self, system):
        self.n, self.m = system.n, system.m
        self.N = self.n + self.m
        gi = np.r_[np.arange(self.n), -np.ones(3, np.int64)]
        self.groups = {k: [] for k in KINDS}
        for g in list(system.forces) + list(system.constraints):
            kind = type(g).__name__
            if kind not in KINDS:
                raise NotImplementedError(f"prototype has no kernel for {kind}")
            rows = np.asarray(g.rows, np.int64) if hasattr(g, "rows") else np.zeros((g.ne, 0), np.int64)
            self.groups[kind].append((gi[g.qidx].astype(np.int64), np.asarray(g.pidx, np.int64), rows))

    def stacked(self, kind, nq, np_, m=0):
        """All groups of one kind as one (qidx, pidx, rows) triple (empty arrays if none)."""
        gs = self.groups[kind]
        if not gs:
            return (np.zeros((0, nq), np.int64), np.zeros((0, np_), np.int64), np.zeros((0, m), np.int64))
        return tuple(np.ascontiguousarray(np.concatenate([g[i] for g in gs])) for i in range(3))
