"""Hand freed heap memory back to the operating system after a large set-up.

Why.  The per-design set-up of a big FFR continuum (element patterns, M, G, K, F:
flexible/continuum_structured.py, continuum_schur.py) allocates and frees many arrays
of a few MB to a few hundred MB.  glibc keeps freed heap pages mapped (the process's
resident set stays at the set-up's peak) unless asked: measured on the 500 × 200 crank,
2 ranks, a rank's RSS after ``Problem`` 811 MB, after ``malloc_trim(0)`` 366 MB.  The
10⁶-element run's ranks otherwise sat at their set-up peak for the whole run.
``malloc_trim(0)`` (glibc ≥ 2.8) releases every free page; elsewhere this does nothing.
"""
import ctypes
import ctypes.util

_trim = None


def release():
    """malloc_trim(0) where the C library has it (glibc); a no-op otherwise."""
    global _trim
    if _trim is None:
        try:
            _trim = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
            _trim.argtypes = [ctypes.c_size_t]
        except (OSError, AttributeError):
            _trim = False
    if _trim:
        _trim(0)
