"""An adaptive TS forward run resumed at step k0, re-run from x_0 (``march_rerun``: the
adaptive loop of timeloop.march for ts_alpha2.py, and ts.py's run from x_0; ts.py resumes
at k0 itself: ts_resume.py).

TSAdapt's step-size estimate reads the scheme's previous steps (TSTHETA: y_{k−1};
TSALPHA2: X_{n−1}, V_{n−1} and its own restart at a TS's first step), which a TS started
at a stored x_k0 lacks: it would take other steps.  So a checkpointed adaptive run
resumed at k0 > 0 runs again from x_0 — deterministic, the same bits — and this keep()
drops the steps before k0 and checks the re-run's x_k0, t_k0 against the stored ones.
"""
from __future__ import annotations

import numpy as np

from .timeloop import TimeGrid


def march_rerun(what, k0, t0, x, keep, state, run, live):
    """timeloop.march's adaptive loop of a TS stepper whose steps TSAdapt chooses (ts.py,
    ts_alpha2.py ``march_adaptive``; a checkpointed forward run resumed at k0 from x at
    t0): ``run(kept)`` takes the whole run from x_0 and returns (Newton iterations per
    step, rejected steps).  kept() drops the steps before k0, checks x_k0 and t_k0
    against the stored ones bit for bit (RuntimeError naming the step otherwise) and
    hands each later step to ``keep``, ``state`` (timeloop.MarchState) first updated
    from ``live()`` = (the step TSAdapt proposes next, or NaN; its rejections so far) —
    there is no own controller state to keep.  Returns march's ((TimeGrid of steps
    k0 … N, Newton iterations), rejected steps)."""
    T, H, seen = [t0], [], [k0 == 0]

    def kept(k, t, h, xk):
        if k < k0:
            return
        if k == k0:
            if k > 0 and (t != t0 or not all(np.array_equal(a, b) for a, b in zip(xk, x))):
                raise RuntimeError(f"step {k} (t = {t:.6g}): the adaptive {what} run re-run from the initial "
                                   "state differs from the stored state it resumes from")
            seen[0] = True
            return
        if state is not None:
            state.h_next, state.rejected = live()
            state.err_prev, state.hist = None, []
        T.append(t)
        H.append(h)
        keep(k, t, h, xk)
    its, rejected = run(kept)
    if not seen[0]:
        raise RuntimeError(f"the adaptive {what} run re-run from the initial state has fewer than the "
                           f"{k0} steps it resumes from")
    return (TimeGrid(np.array(T), np.array(H)), its[k0:]), rejected
