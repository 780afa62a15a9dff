"""Same input, same bytes: pin what makes floating-point results depend on the run.

Imported first by ``import parmbs``, before numpy or PETSc do any work.  Three
sources of run-to-run differences were measured (issue 17) and are switched off here:

1. **Threaded BLAS/LAPACK and OpenMP.**  OpenBLAS (Debian: pthreads) splits dgemv,
   dgemm and LAPACK's getrf between threads, so the number of threads changes the
   summation order (measured: ``numpy.linalg.solve`` of a 17×17 system differs between
   1 and 2 threads with the SkylakeX kernels).  Default: one thread per MPI rank —
   ranks already use the cores.  ``PARMBS_THREADS=N`` asks for N threads; a thread
   count the user set explicitly (``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``,
   ``MKL_NUM_THREADS``) is kept for that library.  Fixed thread counts give fixed
   results; only the default is guaranteed to give the same bytes as the tests.
2. **numpy's AVX-512 math (SVML) chosen by memory layout.**  On an AVX-512 CPU,
   numpy ≥ 1.22 computes float64 sin, cos, exp, log, power, arctan2 … with SVML
   unless the output array overlaps the span of a strided input, in which case it
   falls back to libm (numpy/core/src/umath/loops_umath_fp.dispatch.c.src, the
   ``is_mem_overlap`` test).  SVML and libm differ by one ulp on ~60 % of arguments,
   and whether a fresh output array lands inside that span depends on the heap: the
   same ``np.cos(q[..., 5])`` gave different last bits on consecutive calls
   (measured: ~1 call in 6000 of ``Spring.jacobians`` in a double-pendulum run; the
   trajectory then drifted to 2e-4 and revolve:7 vs all gradients to 8e-8 relative).
   ``NPY_DISABLE_CPU_FEATURES=AVX512_SKX`` makes numpy use libm everywhere — the
   result no longer depends on the heap, and equals that of CPUs without AVX-512.
   This works only before numpy is imported: the CLI always gets it; a script or
   test that imports numpy first keeps numpy's choice (import parmbs first, or set
   the variable) and is warned (``svml_active``).  ``PARMBS_NUMPY_SIMD=native`` keeps
   numpy's dispatch, silently.  Measured (five-bar, t_end 0.1, four such processes
   at once on 2 cores): in-memory vs in-memory and vs every:7/revolve:5 adjoint
   gradients up to 2.9e-12 (genalpha) and 1.7e-11 (trapezoidal) apart; with parmbs
   imported first, or the variable set, 0 in every comparison.
3. **Scotch threads** (PT-Scotch orderings for MUMPS): ``SCOTCH_PTHREAD_NUMBER=1``.
4. **OpenBLAS's kernels chosen by the CPU.**  Debian's OpenBLAS (DYNAMIC_ARCH) picks its
   SkylakeX (AVX-512) kernels on an AVX-512 CPU and Haswell's (AVX2) elsewhere; the two
   sum in other orders.  Measured on an AVX-512 machine (2026-11-27): the numpy path's
   Iltis Newton matrix differed from the compiled one by 333 u of its largest entry
   (tests/test_compiled_vehicle.py, bound 100 u; 2 u with ``OPENBLAS_CORETYPE=Haswell``
   and on the earlier machine).  ``OPENBLAS_CORETYPE=Haswell`` is set when the user left
   it unset (x86_64, before numpy loads), so an AVX-512 machine computes what an AVX2
   one does; ``PARMBS_BLAS_CORE=native`` keeps OpenBLAS's choice.

The MUMPS settings live with the operators that use MUMPS (``mumps_options``).
"""
from __future__ import annotations

import os
import platform
import sys

#: library thread-count variables set to the pinned count unless the user set them
THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
               "SCOTCH_PTHREAD_NUMBER")
#: numpy's AVX-512 SVML loops are dispatched for this target (numpy 1.22 … 2.x, x86-64)
NUMPY_SVML_TARGET = "AVX512_SKX"


def requested_threads() -> int:
    """Threads per MPI rank: ``PARMBS_THREADS`` (an integer ≥ 1), default 1."""
    text = os.environ.get("PARMBS_THREADS", "").strip()
    if not text:
        return 1
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        sys.stderr.write(f"parmbs: PARMBS_THREADS={text!r} is not a positive integer; using 1\n")
        return 1
    return n


def _pin_environment(n: int) -> dict:
    """Set the thread variables (and numpy's SIMD choice) the user left unset; returns
    what was set.  PARMBS_THREADS, when given, overrides the per-library variables."""
    forced = "PARMBS_THREADS" in os.environ
    done = {}
    for var in THREAD_VARS:
        if forced or var not in os.environ:
            os.environ[var] = str(n)
            done[var] = str(n)
    if ("numpy" not in sys.modules and platform.machine().lower() in ("x86_64", "amd64")
            and os.environ.get("PARMBS_NUMPY_SIMD", "").lower() != "native"
            and "NPY_DISABLE_CPU_FEATURES" not in os.environ and "NPY_ENABLE_CPU_FEATURES" not in os.environ):
        os.environ["NPY_DISABLE_CPU_FEATURES"] = NUMPY_SVML_TARGET
        done["NPY_DISABLE_CPU_FEATURES"] = NUMPY_SVML_TARGET
    if ("numpy" not in sys.modules and platform.machine().lower() in ("x86_64", "amd64")
            and os.environ.get("PARMBS_BLAS_CORE", "").lower() != "native"
            and "OPENBLAS_CORETYPE" not in os.environ):
        os.environ["OPENBLAS_CORETYPE"] = "Haswell"          # item 4 of the module docstring
        done["OPENBLAS_CORETYPE"] = "Haswell"
    return done


def limit_loaded_pools(n: int | None = None) -> None:
    """Cap the BLAS and OpenMP pools already loaded in this process (threadpoolctl):
    the environment variables are read when a library loads, so a numpy or PETSc
    imported before parmbs would otherwise keep its default (one thread per core).
    Pools whose variable the user set explicitly keep their count unless
    ``PARMBS_THREADS`` is given."""
    n = requested_threads() if n is None else n
    try:
        from threadpoolctl import threadpool_info, threadpool_limits
    except ImportError:        # pragma: no cover - a declared dependency; env vars still apply
        return
    forced = "PARMBS_THREADS" in os.environ
    user = {"openblas": "OPENBLAS_NUM_THREADS", "mkl": "MKL_NUM_THREADS", "blis": "BLIS_NUM_THREADS",
            "openmp": "OMP_NUM_THREADS"}
    limits = {}
    for pool in threadpool_info():
        var = user.get(pool.get("internal_api"))
        want = n if forced or var is None or os.environ.get(var) == str(n) else None
        if want is not None and pool.get("num_threads") != want:
            limits[pool["prefix"]] = want
    if limits:
        threadpool_limits(limits=limits)


def svml_active() -> bool:
    """True when the loaded numpy dispatches its float64 math to AVX-512 (SVML) — the
    layout-dependent choice of item 2 — i.e. it was imported before parmbs could set
    NPY_DISABLE_CPU_FEATURES on an AVX-512 CPU."""
    if "numpy" not in sys.modules:
        return False
    try:
        from numpy.core._multiarray_umath import __cpu_features__ as features
    except ImportError:                 # pragma: no cover - numpy 2.x layout
        try:
            from numpy._core._multiarray_umath import __cpu_features__ as features
        except ImportError:
            return False
    return bool(features.get(NUMPY_SVML_TARGET, False))


#: the one-line warning of a process whose numpy came first with SVML on
SVML_WARNING = ("numpy was imported before parmbs with AVX-512 (SVML) math on: results may differ "
                "in the last bits from run to run and between checkpoint schedules; import parmbs "
                f"first or set NPY_DISABLE_CPU_FEATURES={NUMPY_SVML_TARGET} (PARMBS_NUMPY_SIMD=native: "
                "keep numpy's choice)")


def configure() -> None:
    """Called once by ``import parmbs``."""
    n = requested_threads()
    _pin_environment(n)
    if "numpy" in sys.modules:          # loaded before parmbs: its BLAS pool already exists
        limit_loaded_pools(n)
        if os.environ.get("PARMBS_NUMPY_SIMD", "").lower() != "native" and svml_active():
            import warnings
            warnings.warn(SVML_WARNING, RuntimeWarning, stacklevel=3)
