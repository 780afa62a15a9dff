"""Design variables: named entries of the model parameter vector p."""
import numpy as np

from ..model.system import ModelError


class DesignSpace:
    def __init__(self, system, design_cfg):
        self.names = [d.name for d in design_cfg]
        self.paths = [d.path for d in design_cfg]
        self.index = []
        for d in design_cfg:
            if d.path not in system.params.index:
                raise ModelError(f"design.{d.name}.path",
                                 f"'{d.path}' is not a parameter of this model")
            self.index.append(system.params.index[d.path])
        self.index = np.array(self.index, dtype=np.int64)
        self.map = -np.ones(len(system.p), np.int64)
        self.map[self.index] = np.arange(len(self.index))
        self.lower = np.array([-np.inf if d.lower is None else d.lower for d in design_cfg])
        self.upper = np.array([np.inf if d.upper is None else d.upper for d in design_cfg])

    def __len__(self):
        return len(self.names)

    def values(self, p):
        return p[self.index].copy()

    def apply(self, p, rho):
        p = p.copy()
        p[self.index] = rho
        return p
