"""parmbs: exact discrete sensitivities of multibody dynamics on PETSc."""
__version__ = "0.1.0"

# before numpy or PETSc load: one BLAS/OpenMP thread per rank, numpy math by libm
# (parmbs/_determinism.py: what made two identical runs differ, and how to opt out)
from . import _determinism

_determinism.configure()

# every body kind registers itself with model/body_kinds.py when its module is imported:
# import them all here (after the pinning above), so every System sees every kind
from .flexible import beams, ffr_beams, plates, continua, spatial_beams, solids  # noqa: E402,F401
from .spatial import spatial_set, natural_set  # noqa: E402,F401
