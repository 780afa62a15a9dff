"""The two errors every layer raises and the CLI turns into one line (exit 2 and 1):
here, below every package, so that the leaf helpers (petsc_options.py, faults.py) can
raise them without importing model/ or integrators/ (tests/test_layers.py).
``model.system.ModelError`` and ``integrators.newmark.StepError`` are these classes."""


class ModelError(Exception):
    """A model that validates as config but cannot be built or assembled."""

    def __init__(self, key, message):
        super().__init__(f"{key}: {message}")
        self.key, self.message = key, message


class StepError(RuntimeError):
    """Newton failed in a time step (message names step and time)."""
