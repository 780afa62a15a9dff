"""A small, safe expression language for linked design parameters.

``[parameters]`` and ``[[design]] drives`` (see ``links.py``) give model parameters as
expressions of design variables, e.g. the beam length of seed 000 §5.5 (Eq. 53)

    l = hypot(X_C - D_x, Y_C - D_y)

The text is parsed with ``ast`` and only this grammar is accepted (anything else —
attributes, subscripts, comparisons, keywords, lambdas, strings — is an error naming
the offending construct; nothing is ever passed to ``eval``)::

    expr := number | NAME | pi | expr (+ - * / **) expr | (+ -) expr | FUNC(expr, ...)
    FUNC := sqrt exp log sin cos tan asin acos atan (one argument) | atan2 hypot (two)

The text is bounded before it is parsed: at most ``MAX_LENGTH`` characters and
``MAX_DEPTH`` levels of nesting (each operator or function call is one level of the
parsed tree; a sum of k terms is k − 1 levels deep; parentheses only group).  Without the bounds a 40 000-character
``[parameters]`` entry made the parser raise MemoryError and a deeply nested one
RecursionError — tracebacks instead of one line (issue 17).  Python's own parser
takes 1000 characters of any nesting without exhausting its stack (measured: 990
unary minus signs, 990-term sums and powers parse; past 200 nested parentheses it
stops with a SyntaxError, reported as one), and the compile and evaluation
below recurse once per level, so ``MAX_DEPTH`` levels need about 2·MAX_DEPTH frames,
well inside the interpreter's default limit of 1000.  Real parameter expressions
(seed 000 §5.5) are a few dozen characters and a few levels deep.

A parsed ``Expression`` is a tree of closures evaluated on floats or complex numbers.
Every function is complex-step compatible, f(x + ih) = f(x) + ih f′(x) + O(h²):
the analytic ones by numpy's principal branches (real positive arguments in use);
``atan2`` (not analytic as numpy defines it for complex input) by its first-order
expansion atan2(y, x) + i (x Im y − y Im x)/(x² + y²) with x, y the real parts.  So a
complex step through ``DesignSpace.apply`` differentiates the expressions exactly, and
``gradient`` gives ∂f/∂(names) to rounding by a complex step of size 1e-30 (no
subtractive cancellation: Squire & Trapp 1998).
"""
from __future__ import annotations

import ast
import math

import numpy as np


class ExpressionError(ValueError):
    """Text that is not an expression of the grammar above (message says why)."""


#: longest expression text accepted (characters) and deepest nesting (levels); see above
MAX_LENGTH = 1000
MAX_DEPTH = 100


def short(text: str, width: int = 60) -> str:
    """``repr`` of ``text`` cut to about ``width`` characters, for one-line messages."""
    text = str(text)
    return repr(text) if len(text) <= width else repr(text[:width - 3] + "...") + f" ({len(text)} characters)"


def _atan2(y, x):
    if isinstance(y, complex) or isinstance(x, complex) or np.iscomplexobj(y) or np.iscomplexobj(x):
        y, x = complex(y), complex(x)
        yr, xr = y.real, x.real
        return complex(math.atan2(yr, xr), (xr * y.imag - yr * x.imag) / (xr * xr + yr * yr))
    return math.atan2(y, x)


def _unary(real_fn, complex_fn):
    def f(z):
        return complex(complex_fn(z)) if isinstance(z, complex) else real_fn(z)
    return f


def _real_sqrt(x):
    if x < 0:
        raise ArithmeticError(f"sqrt of negative number {x!r}")
    return math.sqrt(x)


def _real_log(x):
    if x <= 0:
        raise ArithmeticError(f"log of non-positive number {x!r}")
    return math.log(x)


def _hypot(a, b):
    if isinstance(a, complex) or isinstance(b, complex):
        return complex(np.sqrt(complex(a) * a + complex(b) * b))
    return math.hypot(a, b)


#: name -> (arity, function); each accepts float or complex
FUNCTIONS = {
    "sqrt": (1, _unary(_real_sqrt, np.sqrt)),
    "exp": (1, _unary(math.exp, np.exp)),
    "log": (1, _unary(_real_log, np.log)),
    "sin": (1, _unary(math.sin, np.sin)),
    "cos": (1, _unary(math.cos, np.cos)),
    "tan": (1, _unary(math.tan, np.tan)),
    "asin": (1, _unary(math.asin, np.arcsin)),
    "acos": (1, _unary(math.acos, np.arccos)),
    "atan": (1, _unary(math.atan, np.arctan)),
    "atan2": (2, _atan2),
    "hypot": (2, _hypot),
}
CONSTANTS = {"pi": math.pi}
RESERVED = set(FUNCTIONS) | set(CONSTANTS)

_BINOPS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.Pow: lambda a, b: a ** b,
}
_UNARY = {ast.USub: lambda a: -a, ast.UAdd: lambda a: a}
_SYMBOL = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}


class Expression:
    """A parsed expression: ``names`` (the free names it reads, sorted) and
    ``value(env)`` for env mapping each name to a float or complex."""

    def __init__(self, text: str):
        if not isinstance(text, str) or not text.strip():
            raise ExpressionError("empty expression")
        self.text = text
        self.short = short(text)
        if len(text) > MAX_LENGTH:
            raise ExpressionError(f"expression of {len(text)} characters, at most {MAX_LENGTH} are allowed "
                                  f"({self.short}); split it into several [parameters]")
        try:
            tree = ast.parse(text.strip(), mode="eval")
        except SyntaxError as exc:
            raise ExpressionError(f"syntax error in {self.short}: {exc.msg}") from None
        except (RecursionError, MemoryError):       # guarded by MAX_LENGTH; kept as a safety net
            raise ExpressionError(f"{self.short} is nested too deeply to parse") from None
        names: set[str] = set()
        self._fn = self._compile(tree.body, names, 0)
        self.names = sorted(names)

    def _compile(self, node, names, depth):
        if depth > MAX_DEPTH:
            raise ExpressionError(f"{self.short} is nested more than {MAX_DEPTH} levels deep (each operator "
                                  "or call is a level); split it into several [parameters]")
        depth += 1
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ExpressionError(f"{self.short}: only numbers are allowed as constants, got {v!r}")
            v = float(v)
            return lambda env: v
        if isinstance(node, ast.Name):
            name = node.id
            if name in CONSTANTS:
                c = CONSTANTS[name]
                return lambda env: c
            if name in FUNCTIONS:
                raise ExpressionError(f"{self.short}: {name!r} is a function; call it, e.g. {name}(x)")
            names.add(name)
            return lambda env: env[name]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            op, a, b = _BINOPS[type(node.op)], self._compile(node.left, names, depth), self._compile(node.right, names, depth)
            return lambda env: op(a(env), b(env))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            op, a = _UNARY[type(node.op)], self._compile(node.operand, names, depth)
            return lambda env: op(a(env))
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
                what = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
                raise ExpressionError(f"{self.short}: unknown function {what!r} "
                                      f"(known: {', '.join(sorted(FUNCTIONS))})")
            name = node.func.id
            arity, fn = FUNCTIONS[name]
            if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
                raise ExpressionError(f"{self.short}: {name}() takes plain positional arguments")
            if len(node.args) != arity:
                raise ExpressionError(f"{self.short}: {name}() takes {arity} argument"
                                      f"{'s' if arity > 1 else ''}, got {len(node.args)}")
            args = [self._compile(a, names, depth) for a in node.args]
            if arity == 1:
                a0 = args[0]
                return lambda env: fn(a0(env))
            a0, a1 = args
            return lambda env: fn(a0(env), a1(env))
        if isinstance(node, ast.BinOp):
            raise ExpressionError(f"{self.short}: operator {type(node.op).__name__} is not allowed "
                                  f"(allowed: {' '.join(_SYMBOL.values())})")
        raise ExpressionError(f"{self.short}: {type(node).__name__.lower()} "
                              f"({ast.unparse(node)!r}) is not allowed; use numbers, names, "
                              f"+ - * / ** and {', '.join(sorted(FUNCTIONS))}")

    def value(self, env):
        """The value at ``env`` (float, or complex if any input is complex).  Raises
        ``ArithmeticError`` (division by zero, sqrt/log of a negative number, overflow)."""
        try:
            v = self._fn(env)
        except ZeroDivisionError:
            raise ArithmeticError(f"division by zero in {self.short}") from None
        except OverflowError:
            raise ArithmeticError(f"overflow in {self.short}") from None
        except ValueError as exc:          # math domain errors (asin(2), 0 ** -1, ...)
            raise ArithmeticError(f"{exc} in {self.short}") from None
        if isinstance(v, complex) and not any(isinstance(env[n], complex) for n in self.names):
            raise ArithmeticError(f"{self.short} is complex at real inputs (negative number to a "
                                  "fractional power?)")
        return v

    def __repr__(self):
        return f"Expression({self.short})"
