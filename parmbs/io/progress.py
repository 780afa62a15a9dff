"""Progress reporting for long runs: the ``progress(k, N)`` callbacks of
``Problem.forward``, ``adjoint``, ``direct``, ``finite_differences`` and
``complex_step_gradient`` (k of N steps, or design columns, done).

Rank 0 only, to stderr.  With tqdm importable and stderr a terminal: one bar,
refreshed at most every 2 s.  Otherwise plain lines at each 10 % of the run,
rate-limited to one per 2 s and silent for runs shorter than 2 s, so short
runs and test logs stay clean:

    parmbs: adjoint: step 1200/2000 (60.0 %), 850 steps/s, ETA 0:01

The rate counts from the first ``k`` seen, so a sweep resumed from a checkpoint
(first call at k > 1) gets an ETA from its own speed.
"""
from __future__ import annotations

import sys
import time


def _fmt_eta(s):
    s = int(round(s))
    h, r = divmod(s, 3600)
    m, s = divmod(r, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:d}:{s:02d}"


def _rate(r):
    return f"{r:.0f}" if r >= 10 else f"{r:.2g}"


class PlainProgress:
    def __init__(self, label="steps", stream=None, min_interval=2.0, unit="step"):
        self.label, self.stream, self.min_interval = label, stream or sys.stderr, min_interval
        self.unit = unit
        self.t0 = time.monotonic()
        self.last = self.t0
        self.next_decile = 1
        self.printed = False
        self.k0 = None                      # the work already done before the first call

    def __call__(self, k, N):
        if N <= 0:
            return
        if self.k0 is None:
            self.k0 = max(k - 1, 0)
        now = time.monotonic()
        decile = (10 * k) // N
        if decile < self.next_decile:
            return
        self.next_decile = decile + 1
        if now - self.last < self.min_interval and not (k == N and self.printed):
            return
        self.last = now
        el = now - self.t0
        rate = (k - self.k0) / el if el > 0 else float("inf")
        eta = (N - k) / rate if rate > 0 else 0.0
        print(f"parmbs: {self.label}: {self.unit} {k}/{N} ({100.0 * k / N:5.1f} %), {_rate(rate)} {self.unit}s/s, "
              f"ETA {_fmt_eta(eta)}", file=self.stream, flush=True)
        self.printed = True

    def close(self):
        pass


class TqdmProgress:
    def __init__(self, label="steps", stream=None, unit="step"):
        from tqdm import tqdm
        self.bar = tqdm(total=None, desc=f"parmbs {label}", unit=unit, file=stream or sys.stderr,
                        mininterval=2.0, dynamic_ncols=True, leave=True)
        self.k = 0

    def __call__(self, k, N):
        if self.bar.total is None:
            self.bar.total = N
        if k > self.k:
            self.bar.update(k - self.k)
            self.k = k
        if k >= N:
            self.close()

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def make_progress(config=None, label="steps", rank=None, stream=None, enabled=None, unit="step"):
    """A ``progress(k, N)`` callable, or None (not rank 0, or disabled by
    ``config.simulation.progress = false`` / ``enabled=False``); ``unit``: what k
    counts (``step``, ``column``)."""
    if enabled is None:
        enabled = bool(getattr(getattr(config, "simulation", None), "progress", True))
    if not enabled:
        return None
    if rank is None:
        from mpi4py import MPI
        rank = MPI.COMM_WORLD.rank
    if rank != 0:
        return None
    stream = stream or sys.stderr
    isatty = getattr(stream, "isatty", lambda: False)()
    if isatty:
        try:
            return TqdmProgress(label, stream, unit=unit)
        except ImportError:
            pass
    return PlainProgress(label, stream, unit=unit)
