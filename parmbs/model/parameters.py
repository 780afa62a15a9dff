"""The model parameter vector p: every scalar a component or the initial assembly
reads, addressed by its config path (``bodies.A1.mass``, ``forces.S1.length``...).

Design variables are a selection of entries of p, so any parameter is differentiable
without the components knowing which ones are designed.
"""
import numpy as np

ZERO = 0   # p[0] is the constant 0 (ground's centre of mass and angle)


class Parameters:
    def __init__(self):
        self.paths = ["<zero>"]
        self.values = [0.0]
        self.index = {"<zero>": ZERO}

    def add(self, path, value):
        """Register ``path`` with its nominal value (idempotent); return its index."""
        if path not in self.index:
            self.index[path] = len(self.paths)
            self.paths.append(path)
            self.values.append(float(value))
        return self.index[path]

    def array(self):
        return np.array(self.values, dtype=float)

    def __len__(self):
        return len(self.paths)
