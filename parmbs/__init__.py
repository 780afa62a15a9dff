"""parmbs: exact discrete sensitivities of multibody dynamics on PETSc."""
__version__ = "0.1.0"
