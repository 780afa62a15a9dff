"""``njit`` for parmbs's kernels: one specialization per argument *type*, not per constant.

numba types a constant argument of a call from compiled code as a literal
(``Literal[int](3)``, ``Literal[bool](True)``) and compiles the callee once per
literal value; a call from Python is typed non-literal.  Nothing in these kernels uses
a literal value (numba's branch pruning reads only the literal's type, and the value
arrives as an ordinary argument), so every such specialization is the same machine
code compiled again: newmark_step._view 27 times (once per index 0…26),
planar.inertia & co. once for ``want_J`` a variable and once for the constant True,
_evaluate four times for its set ``s`` (0, 1, 2 and a variable).  Measured on a cold
cache (configs/fivebar.toml, forward + adjoint + direct of 4 steps, the planar
kernels' dispatcher signatures; both runs side by side on the same loaded machine):
118 → 67 compiled specializations, 53 → 35 s CPU; tests/numba_warm.py (every kernel
family, cold): 214 → 163 s CPU, the spatial kernels (joint called with the constant
kind 0 or 2) 49 → 25 s.

``njit`` here makes a dispatcher that types calls from compiled code with the
arguments' non-literal types (``numba.core.types.unliteral``); a call from Python
is unchanged.  Same options as numba's ``njit``; ``cache=True`` is numba's on-disk cache
kept by the content of these sources (compiled/_cache.py).

Defaults likewise: an argument left out of a call is typed ``Omitted(default)``, so a
kernel called with and without it compiles twice (newmark_step._evaluate, ab_step.evaluate
and newmark_adjoint._matrix for ``ca``, _tmul and _combine for ``w``/``S``: 8, 6, 4, 3, 3
specializations after a cold tests/numba_warm.py, 4, 4, 2, 2, 2 without the defaults;
231 → 222 in all, 180 → 167 s CPU, the numbers bit for bit the same: benchmarks/README.md).
The kernels therefore have no default arguments; every call passes all of them.
"""
from numba.core import types
from numba.core.registry import CPUDispatcher

from ._cache import enable


class _Dispatcher(CPUDispatcher):
    """A CPU dispatcher whose calls from compiled code take non-literal argument types."""

    def get_call_template(self, args, kws):
        return super().get_call_template(tuple(types.unliteral(a) for a in args),
                                         {k: types.unliteral(v) for k, v in kws.items()})


def njit(func=None, *, cache=False, **options):
    """numba's ``njit(cache=...)`` decorator, with one specialization per non-literal
    argument type (module docstring)."""
    def wrap(f):
        disp = _Dispatcher(py_func=f, locals={}, targetoptions={"nopython": True, "boundscheck": None, **options})
        if cache:
            enable(disp)
        return disp
    return wrap(func) if func is not None else wrap
