"""Input/output helpers: HDF5 layout (``hdf5``), PNG plots (``plot``), progress (``progress``).

Submodules import h5py / matplotlib lazily; import them directly, e.g.
``from parmbs.io.hdf5 import TrajectoryWriter``.
"""
__all__ = ["hdf5", "plot", "progress"]
