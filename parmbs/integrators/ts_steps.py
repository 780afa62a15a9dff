"""A PETSc TS taken one TSStep at a time, so that parmbs's time loop drives it.

PETSc's TSSolve owns a loop over TSStep (petsc/petsc v3.18.5, src/ts/interface/ts.c):

    TSSetSolution(u); TSSetUp; TSTrajectorySetUp
    (MATCHSTEP) dt = max_time − t if dt ≥ it or within 10 ε of it
    reason = steps ≥ max_steps or t ≥ max_time ?
    TSTrajectorySet(0, t, u)
    TSViewFromOptions(-ts_view_pre)
    while no reason: TSMonitor; TSPreStep; TSStep; TSTrajectorySet(steps, t, u); TSPostStep
    TSMonitor; TSViewFromOptions(-ts_view)

``TSSteps`` does what that loop does around each TSStep and nothing else, so the time
loop of parmbs (``timeloop.march_ts``) takes the steps — progress, the instability guard,
the trajectory store and checkpoints are its own — and the numbers are TSSolve's bit for
bit: the same calls in the same order on a fresh TS (TSCreate leaves the counters as
TSSolve resets them).  Rejected attempts of an adaptive run (TSAdapt) stay inside
TSStep; each ``step()`` returns after one accepted step.  TSTrajectorySet (for
TSAdjoint's stages; petsc4py 3.18 does not wrap it) and TSTrajectorySetUp are called
through the C library; without a saved trajectory they return at once.
"""
from __future__ import annotations

import ctypes

import numpy as np

from .._petsc import PETSc
from ..petsc_options import _libpetsc

#: PETSC_MACHINE_EPSILON of double precision (TSSolve's closeness test of the first step)
_EPS = float(np.finfo(float).eps)


class TSSteps:
    """``ts`` started at the solution ``u`` (module docstring); ``step()`` takes one
    accepted TSStep, ``finished`` says whether TSSolve's loop would have ended."""

    def __init__(self, ts, u):
        self.ts = ts
        self._lib = _libpetsc()
        self._tj = ctypes.c_void_p()
        ts.setSolution(u)
        ts.setUp()
        if self._lib.TSGetTrajectory(ctypes.c_void_p(ts.handle), ctypes.byref(self._tj)) != 0:
            raise RuntimeError("TSGetTrajectory failed")
        if self._tj.value and self._lib.TSTrajectorySetUp(self._tj, ctypes.c_void_p(ts.handle)) != 0:
            raise RuntimeError("TSTrajectorySetUp failed")
        eft = ctypes.c_int()
        if self._lib.TSGetExactFinalTime(ctypes.c_void_p(ts.handle), ctypes.byref(eft)) != 0:
            raise RuntimeError("TSGetExactFinalTime failed")
        if eft.value == ts.ExactFinalTime.MATCHSTEP:
            dt, maxdt = ts.getTimeStep(), ts.getMaxTime() - ts.getTime()
            lib = self._lib
            lib.PetscIsCloseAtTol.argtypes = [ctypes.c_double] * 4
            lib.PetscIsCloseAtTol.restype = ctypes.c_int
            ts.setTimeStep(maxdt if dt >= maxdt or lib.PetscIsCloseAtTol(dt, maxdt, 10 * _EPS, 0.0) else dt)
        self.finished = ts.getStepNumber() >= ts.getMaxSteps() or ts.getTime() >= ts.getMaxTime()
        self._keep()
        ts.viewFromOptions("-ts_view_pre")

    def _keep(self):
        """TSTrajectorySet of the current step (nothing without a saved trajectory)."""
        if not self._tj.value:
            return
        ts = self.ts
        Int = ctypes.c_int64 if np.dtype(PETSc.IntType).itemsize == 8 else ctypes.c_int32
        self._lib.TSTrajectorySet.argtypes = [ctypes.c_void_p, ctypes.c_void_p, Int, ctypes.c_double,
                                              ctypes.c_void_p]
        if self._lib.TSTrajectorySet(self._tj, ctypes.c_void_p(ts.handle), ts.getStepNumber(), ts.getTime(),
                                     ctypes.c_void_p(ts.getSolution().handle)) != 0:
            raise RuntimeError("TSTrajectorySet failed")

    @staticmethod
    def _hook(got, ts):
        if got is not None:
            fn, args, kw = got
            fn(ts, *args, **kw)

    def step(self):
        """One accepted step (TSAdapt's rejections inside): TSMonitor, PreStep, TSStep,
        TSTrajectorySet, PostStep, as TSSolve's loop; a failed step raises PETSc.Error
        (TSStep's error-if-step-fails)."""
        ts = self.ts
        ts.monitor(ts.getStepNumber(), ts.getTime(), ts.getSolution())
        self._hook(ts.getPreStep(), ts)
        ts.step()
        self._keep()
        self._hook(ts.getPostStep(), ts)
        self.finished = ts.getConvergedReason() != 0
        if self.finished:
            ts.monitor(ts.getStepNumber(), ts.getTime(), ts.getSolution())
            ts.viewFromOptions("-ts_view")
