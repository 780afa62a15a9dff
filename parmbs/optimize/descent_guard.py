"""MMA's descent guard (``optimize.descent = true``; driver.py's module docstring says why).

A trial iterate k is rejected when its ψ is above iterate k − 1's while its constraint
violation did not fall; the driver then halves the step towards iterate k − 1.  The
guard decides on the forward run's values alone — ``Driver.evaluate_all(wanted=guard)``
calls it between the forward run and the gradient — so a rejected trial costs one
forward run, not the adjoint sweep (57 % of an evaluation of the double wishbone) or the
FD runs of ``gradient = "fd"`` (98 %).  Iterate k − 1 is history row k − 1 of the record
(on disk), so a resumed run rejects the same trials.
"""
from .constraints import violation


class DescentGuard:
    """The verdict on MMA trial iterate ``k`` at the physical densities ``phys``: call it
    with the trial's objective values; True lets the evaluation go on to the gradient,
    False stops it and ``reason`` says why.  ``history``: the record's MMA history rows
    (iteration, objective, max_violation, …); ``constraints`` evaluate the violation from
    the values; ``objective`` is the minimized one.  The values are global, so every rank
    decides alike."""

    def __init__(self, history, constraints, objective, phys, k):
        self.history, self.constraints, self.objective = history, constraints, objective
        self.phys, self.k = phys, k
        self.reason = None                    # why the trial was rejected; None: accepted (or not judged)

    def __call__(self, vals):
        fc, _ = self.constraints.evaluate(self.phys, vals, None)
        self.reason = self.rose(vals[self.objective], violation(fc))
        return self.reason is None

    def rose(self, f, viol):
        """Why ψ = f with violation ``viol`` is rejected (ψ rose above iterate k − 1's while
        the violation did not fall), or None."""
        prev = self.history()[self.k - 1]
        fp, vp = float(prev[1]), float(prev[2])
        if f > fp and viol >= vp:
            return f"psi {f:.6e} > {fp:.6e} of iterate {self.k - 1} (violation {viol:.2e}, was {vp:.2e})"
        return None


def next_move(cap, step, halvings):
    """``optimize.adaptive_move``: the move limit of MMA's next update, from the run's
    ``cap`` (``optimize.move``), the accepted iterate's ``step`` (max_j |Δρ_j|/(upper_j −
    lower_j), the log's ``step``) and the number of ``halvings`` of its trial (rejected
    or failed) before it was accepted.

    A trust-region radius update (Conn, Gould & Toint, *Trust-Region Methods*, SIAM 2000,
    §6.1, the basic algorithm: an unsuccessful trial leaves x_k and shrinks the radius, a
    successful one keeps or enlarges it, here up to the largest radius), with MMA's move
    limit as the radius — the adaptive move limits of sequential approximate
    optimization (Wujek & Renaud, AIAA J. 36(10), 1998).  A trial accepted only after
    halvings taught that the model was not to be trusted beyond the step that worked:
    the next update is solved within that step, not from the cap again (the
    60-variable double wishbone at T = 3 s paid 3–4 rising forward runs per iterate,
    each time from move 0.05 down to 0.006 or 0.003).  A trial accepted as proposed
    gives the next update the whole cap back: on the same file at T = 0.3 s, doubling
    instead (the textbook ×2) kept the limit at 0.005–0.01 for 20 iterates, where the
    fixed rule's full MMA steps of 0.035–0.047 were accepted as proposed
    (benchmarks/README.md: ψ 6.0e-6 against 1.4e-6 after 36 forward runs).  Svanberg's
    GCMMA (SIAM J. Optim. 12(2), 2002) learns with the approximation's conservativeness
    ρ instead of the box (raised until the trial is conservative, ×0.1 for the next outer
    iteration); the box needs no gradients of the constraints at x_k on disk for a
    restart (the driver halves the trial towards x_k instead of re-solving)."""
    if halvings > 0:
        return min(cap, step)
    return cap
