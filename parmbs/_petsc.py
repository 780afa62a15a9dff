"""Import petsc4py once, wherever it lives.

Debian's petsc4py is found through a .pth file that looks in ``/usr/lib/petsc`` —
a link only ``petsc-dev`` creates.  Without it (the plain runtime packages) the
module sits under ``/usr/lib/petscdir/petsc*/<arch>``; we add that to ``sys.path``
so ``parmbs`` works without asking the user to export PETSC_DIR.  A pip-built
petsc4py (cluster route) is found first and used unchanged.
"""
import glob
import os
import sys

try:
    import petsc4py  # noqa: F401
except ImportError:  # pragma: no cover - depends on the machine
    for d in sorted(glob.glob("/usr/lib/petscdir/petsc*/*-real/lib/python3/dist-packages")):
        sys.path.append(d)
        os.environ.setdefault("PETSC_DIR", d.split("/lib/python3")[0])
        break
    import petsc4py  # noqa: F401

if not petsc4py.__dict__.get("_parmbs_init"):
    # argparse owns the command line; PETSc options come from the config
    # (simulation.petsc_options) or the PETSC_OPTIONS environment variable
    petsc4py.init(sys.argv[:1])
    petsc4py._parmbs_init = True

from petsc4py import PETSc  # noqa: E402

PETSC_VERSION = PETSc.Sys.getVersion()

__all__ = ["PETSc", "PETSC_VERSION"]
