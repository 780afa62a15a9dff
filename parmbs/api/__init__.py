"""The Python API: build a model in Python (``Model``), run it (``simulate``,
``gradient``, ``verify``, ``optimize``) with numpy results, write it as TOML (``Model.to_toml``).

One schema, two front ends: a ``Model`` is the dict a TOML file parses to, validated
by the loader's own code (parmbs/config/loader.py), so ``Model(...).config()`` and
``load_config(file)`` give equal ``Config`` objects and the same numbers.  Reference:
docs/python.md; examples: examples/fivebar_api.py, custom_objective.py,
optimize_tao.py, batch_mpi.py.
"""
from .model import Model
from .run import (Gradient, Optimized, Run, Verification, as_config, design_parameters, gradient,
                  objective_function, optimize, problem, simulate, verify)

__all__ = ["Model", "Run", "Gradient", "Optimized", "Verification", "as_config", "problem",
           "design_parameters", "simulate", "gradient", "objective_function", "optimize", "verify"]
