"""The integrands of all objectives at one state, for a run that sums ψ step by step.

A checkpointed forward run (checkpoint/restart.py) adds w_k g_j(x_k) of every objective j
at every step, ψ_k = ψ_{k−1} + w_{k−1} g(x_{k−1}), because ψ_k is stored with x_k.  With
``Term.value`` per objective that is ~10 small numpy calls per objective and step: on
the double wishbone's 17 objectives (16 ``stress_ks`` tubes and the chassis CM) 0.70–0.84
ms a step against the in-memory forward's 2.2–2.5 ms; 0.18–0.33 ms with this module
(benchmarks/README.md, "integ18").

``StepValues`` gives the same numbers bit for bit with fewer calls:

* q, v, a are extended by ground's slots once per state, not once per objective;
* batchable terms (``Term.batchable``: the integrand is elementwise over leading axes and
  reads no t) with the same integrand — same function, same bound keywords (ρ_KS, the
  element layout, h), same numbers of coordinates and parameters — are evaluated in one
  call on their local arrays stacked on a leading axis, one row per objective.  That is
  the call ``Term.values_batch`` makes with one row per state (``Problem.objective_values``),
  which gives the per-state values of ``Term.value``; here the rows are objectives.  A
  row reduces to one number per objective as ``Term.value`` does (np.sum of the row).

Other integrands (user, ride, λ-reading, unbatchable) keep ``Term.value``; objectives
without a per-step integrand (none, or a ride history) give 0.
"""
from functools import partial

import numpy as np

from .objectives import Term


def _stack_key(tm):
    """What stacked terms must share (module docstring), or None: the term stays alone."""
    if type(tm) is not Term or not tm.batchable() or len(tm.lrows) or tm.ldrop \
            or tm.qidx.ndim != 1 or tm.pidx.ndim != 1:
        return None
    fn = tm.fn
    if isinstance(fn, partial):
        kw = tuple(sorted((k, (v.dtype.str, v.shape, v.tobytes()) if isinstance(v, np.ndarray) else v)
                          for k, v in fn.keywords.items()))
        try:
            hash(kw)
        except TypeError:
            return None
        head = (fn.func, fn.args, kw)
    else:
        head = (fn, (), ())
    return head + (len(tm.qidx), len(tm.pidx))


class StepValues:
    """g_j(t, x) of every objective j at one state (unweighted; 0 where none), bit for bit
    ``ob.integrand.value`` (module docstring).  ``refs``: the run's reference per objective."""

    def __init__(self, sys, objectives, refs):
        self.sys, self.refs = sys, refs
        self.n = len(objectives)
        self.terms = {}                      # j: its integrand, every one evaluated
        self.alone = []                      # (j, term): Term.value or local_extended
        groups = {}
        for j, ob in enumerate(objectives):
            tm = ob.integrand
            if not tm or getattr(tm, "history", False):
                continue
            self.terms[j] = tm
            key = _stack_key(tm)
            if key is not None:
                key += (np.shape(refs[j]),)          # (the references stack too)
            if key is None:
                self.alone.append((j, tm))
            else:
                groups.setdefault(key, []).append(j)
        self.stacks = []                     # (rows j, fn, qidx (G, nq), pidx (G, np), refs (G, ·))
        for key, rows in groups.items():
            terms = [objectives[j].integrand for j in rows]
            if len(rows) == 1:
                self.alone.append((rows[0], terms[0]))
                continue
            self.stacks.append((np.array(rows), terms[0].fn, np.array([tm.qidx for tm in terms]),
                                np.array([tm.pidx for tm in terms]),
                                np.array([np.asarray(refs[j]) for j in rows])))

    def __call__(self, t, x, p):
        q, v, a, lam = x[:4]
        sys = self.sys
        out = np.zeros(self.n)
        if not (self.alone or self.stacks):
            return out
        if np.iscomplexobj(q) or np.iscomplexobj(v) or np.iscomplexobj(a) or np.iscomplexobj(p):
            for j, tm in self.terms.items():          # (complex states: Term.value, as before)
                out[j] = tm.value(sys, t, x[:4], p, self.refs[j])
            return out
        xe = (sys.extend(q), sys.extend(v), sys.extend(a), lam)
        for j, tm in self.alone:
            if type(tm) is Term:
                out[j] = float(np.real(np.sum(tm.fn(*tm.local_extended(t, xe, p, self.refs[j])))))
            else:
                out[j] = tm.value(sys, t, x[:4], p, self.refs[j])
        for rows, fn, qi, pi, refs in self.stacks:
            g = np.asarray(fn(t, xe[0][qi], xe[1][qi], xe[2][qi], np.zeros((len(rows), 0)), p[pi], refs))
            if g.ndim == 1:                          # one number per row: its own sum (values_batch)
                out[rows] = np.real(g)
            else:
                for r, j in enumerate(rows):
                    out[j] = float(np.real(np.sum(g[r])))
        return out
