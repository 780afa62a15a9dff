"""parmbs: exact discrete sensitivities of multibody dynamics on PETSc."""
__version__ = "0.1.0"

# before numpy or PETSc load: one BLAS/OpenMP thread per rank, numpy math by libm
# (parmbs/_determinism.py: what made two identical runs differ, and how to opt out)
from . import _determinism

_determinism.configure()
