"""An adaptive TS forward run resumed at step k0, re-run from x_0 (ts.py and
ts_alpha2.py ``march_adaptive``).

TSAdapt's step-size estimate reads the scheme's previous steps (TSTHETA: y_{k−1};
TSALPHA2: X_{n−1}, V_{n−1} and its own restart at a TS's first step), which a TS started
at a stored x_k0 lacks: it would take other steps.  So a checkpointed adaptive run
resumed at k0 > 0 runs again from x_0 — deterministic, the same bits — and this keep()
drops the steps before k0 and checks the re-run's x_k0, t_k0 against the stored ones.
"""
from __future__ import annotations

import numpy as np

from .timeloop import TimeGrid


class Rerun:
    """keep() of an adaptive TS forward run resumed at k0 by re-running it from x_0
    (TSAdapt's history is not in the file: ts.py and ts_alpha2.py ``march_adaptive``):
    the steps before k0 are dropped, x_k0 and t_k0 checked against the stored ones bit
    for bit (RuntimeError naming the step otherwise), each later step goes to ``keep``
    with its t, h collected in T, H (``note(k)`` first: the loop state).  ``done()``
    after the run: the re-run reached k0."""

    def __init__(self, what, k0, t0, x, keep, note=None):
        self.what, self.k0, self.t0, self.x, self.keep, self.note = what, k0, t0, x, keep, note
        self.T, self.H, self.seen = [t0], [], k0 == 0

    def __call__(self, k, t, h, xk):
        if k < self.k0:
            return
        if k == self.k0:
            if k > 0 and (t != self.t0 or not all(np.array_equal(a, b) for a, b in zip(xk, self.x))):
                raise RuntimeError(f"step {k} (t = {t:.6g}): the adaptive {self.what} run re-run from the initial "
                                   "state differs from the stored state it resumes from")
            self.seen = True
            return
        if self.note is not None:
            self.note(k)
        self.T.append(t)
        self.H.append(h)
        self.keep(k, t, h, xk)

    def done(self):
        if not self.seen:
            raise RuntimeError(f"the adaptive {self.what} run re-run from the initial state has fewer than the "
                               f"{self.k0} steps it resumes from")
        return TimeGrid(np.array(self.T), np.array(self.H))
