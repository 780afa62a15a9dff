"""The system seen by the initial-state solve (integrators/initial.py) and by the
automatic choice of independent coordinates (spatial/spatial_set.py): Φ's m rows
followed by one row per independent coordinate, E(q, p) = [Φ; Φ_ind] = 0."""
import numpy as np


class AssemblyView:
    """The system with the independent-coordinate rows appended after Φ's m rows."""

    def __init__(self, system):
        self.n, self.forces = system.n, system.forces
        self.extend = system.extend
        groups, vel = [], []
        row = system.m
        for key, drv, vel_idx in system.independent:
            # a group may hold many rows (a continuum's u = 0 rows: one group, not one per row)
            k = drv.ne * drv.m
            drv.rows = (row + np.arange(k)).reshape(drv.ne, drv.m)
            row += k
            groups.append(drv)
            vel.append(np.broadcast_to(np.asarray(vel_idx, np.int64), (k,)))
        self.constraints = list(system.constraints) + groups
        self.m = row
        self.vel_idx = np.concatenate(vel) if vel else np.zeros(0, np.int64)
