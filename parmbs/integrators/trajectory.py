"""The computed trajectory (t_k, q_k, v_k, a_k, λ_k and a stepper's trailing blocks), as
every stepper returns it and the objectives, sweeps and checkpoints read it, and the
trapezoid weights of a fixed grid.  A leaf of integrators/: sensitivity/ and
checkpoint/ import it from here (tests/test_layers.py)."""
import numpy as np


class Trajectory:
    def __init__(self, t, q, v, a, lam, newton_its, grid=None, rejected=0, extra=()):
        self.t, self.q, self.v, self.a, self.lam = t, q, v, a, lam
        self.extra = tuple(extra)         # trailing state blocks (state_blocks), row k = step k
        self.newton_its = newton_its
        self.grid = grid                  # TimeGrid: t_k and h_k (integrators/timeloop.py)
        self.h = None if grid is None else grid.h   # h_k (a PETSc TS run sets its own)
        self.rejected = rejected          # rejected steps of an adaptive run

    def x(self, k):
        return (self.q[k], self.v[k], self.a[k], self.lam[k]) + tuple(e[k] for e in self.extra)

    @property
    def steps(self):
        return len(self.t) - 1


def quadrature_weights(nsteps, h):
    """Trapezoid weights w_k of ψ = Σ w_k f(t_k) on N = ``nsteps`` steps of size h:
    h/2 at both ends, h inside."""
    w = np.full(nsteps + 1, h)
    w[0] = w[-1] = 0.5 * h
    return w
