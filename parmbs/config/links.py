"""Linked design parameters: one design variable driving several model parameters.

A ``[[design]]`` entry designs the scalar at its ``path``; ``drives`` gives further
config values as expressions (``expressions.py``) of the design variables and of the
named scalars of ``[parameters]``::

    [parameters]                 # a number (constant) or an expression (string)
    X_C = 1.5
    Y_C = 0.0
    l = "hypot(X_C - D_x, Y_C - D_y)"                     # seed 000 Eq. 53

    [[design]]
    name = "D_x"
    path = "ground.points.D.x"
    drives = [{ path = "beams.beam.length", expression = "l" },
              { path = "beams.beam.initial.angle", expression = "atan2(Y_C - D_y, X_C - D_x)" }]

An expression may read every scalar design variable (not only the entry it is listed
under: ``l`` above reads D_x and D_y) and every parameter.  A driven value in the file
is replaced by its expression at the nominal design when the config is loaded (and
whenever ``with_value`` changes a design value), so the model is always the one the
design variables describe.  The design space (``sensitivity/design.py``) sets the
driven entries of p from the design vector ρ and chains gradients exactly:

    dψ/dρ_j = ∂ψ/∂p_{path_j} + Σ_k ∂ψ/∂p_{drive_k} ∂f_k/∂ρ_j,

with ∂f_k/∂ρ_j by a complex step of the expressions (exact to rounding).

Checks (``check_links``, each a ``ConfigError`` naming the key): parameter names
(valid, not a design variable, function or constant), expressions (grammar, unknown
names, element-field design variables), cycles among parameters, driven paths
(a scalar of the config and of the model, not a design path, driven once), and finite
values at the nominal design (``resolve_links``).
"""
from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

from .errors import ConfigError
from .expressions import RESERVED, Expression, ExpressionError

if TYPE_CHECKING:
    from .schema import Config

_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def has_links(cfg: "Config") -> bool:
    return bool(cfg.parameters) or any(d.drives for d in cfg.design)


def drive_key(dname: str, i: int, leaf: str) -> str:
    return f"design.{dname}.drives[{i}].{leaf}"


class Links:
    """The parsed ``[parameters]`` and ``drives`` of a checked config.

    ``design``: the scalar design variable names (element fields excluded);
    ``order``: parameter names in evaluation order (dependencies first);
    ``drives``: (key prefix, path, Expression) in config order."""

    def __init__(self, cfg: "Config", file: str = ""):
        from .paths import field_path
        self.file = file or cfg.source
        fields = {d.name for d in cfg.design if field_path(cfg, d.path)}
        self.design = [d.name for d in cfg.design if d.name not in fields]
        self.constants: dict[str, float] = {}
        self.exprs: dict[str, Expression] = {}
        for name, v in cfg.parameters.items():
            key = f"parameters.{name}"
            if not _NAME_RE.match(name):
                raise ConfigError(self.file, key, f"invalid parameter name {name!r} (letters, digits, '_'; "
                                  "an expression reads it, so no '-')")
            if name in RESERVED:
                raise ConfigError(self.file, key, f"{name!r} is a built-in function or constant")
            if name in self.design or name in fields:
                raise ConfigError(self.file, key, f"{name!r} is also a [[design]] name")
            if isinstance(v, str):
                self.exprs[name] = self._parse(v, key, fields)
            else:
                self.constants[name] = float(v)
        self.order = self._order()
        self.drives: list[tuple[str, str, Expression]] = []
        for d in cfg.design:
            for i, dr in enumerate(d.drives):
                self.drives.append((drive_key(d.name, i, ""), dr.path,
                                    self._parse(dr.expression, drive_key(d.name, i, "expression"), fields)))

    def _parse(self, text: str, key: str, fields: set[str]) -> Expression:
        try:
            e = Expression(text)
        except ExpressionError as exc:
            raise ConfigError(self.file, key, str(exc)) from None
        for n in e.names:
            if n in fields:
                raise ConfigError(self.file, key, f"{n!r} is an element-field design entry (one value per "
                                  "element); an expression reads scalars only")
        self._pending = getattr(self, "_pending", []) + [(key, e)]
        return e

    def _order(self) -> list[str]:
        """Parameters in dependency order; unknown names and cycles are errors."""
        known = set(self.design) | set(self.constants) | set(self.exprs)
        for key, e in getattr(self, "_pending", []):
            for n in e.names:
                if n not in known:
                    raise ConfigError(self.file, key, f"unknown name {n!r} in {e.short} (known: "
                                      f"{', '.join(sorted(known)) or 'none'})")
        order, state = [], {}
        # depth-first, with an explicit stack: a chain of thousands of parameters
        # (p1 = "p0 + 1", p2 = "p1 + 1", ...) must not exhaust Python's recursion limit
        for root in self.exprs:
            if state.get(root) == 2:
                continue
            state[root] = 1
            path = [root]
            todo = [iter([n for n in self.exprs[root].names if n in self.exprs])]
            while todo:
                n = next(todo[-1], None)
                if n is None:                       # every dependency of path[-1] is ordered
                    todo.pop()
                    done = path.pop()
                    state[done] = 2
                    order.append(done)
                    continue
                if state.get(n) == 2:
                    continue
                if state.get(n) == 1:
                    cyc = path[path.index(n):] + [n]
                    raise ConfigError(self.file, f"parameters.{cyc[0]}", "cycle: " + " -> ".join(cyc))
                state[n] = 1
                path.append(n)
                todo.append(iter([m for m in self.exprs[n].names if m in self.exprs]))
        return order

    def check_names(self) -> None:
        """Unknown names in the drives (parsed after the parameters)."""
        known = set(self.design) | set(self.constants) | set(self.exprs)
        for key, path, e in self.drives:
            for n in e.names:
                if n not in known:
                    raise ConfigError(self.file, key + "expression", f"unknown name {n!r} in {e.short} "
                                      f"(known: {', '.join(sorted(known)) or 'none'})")

    # -- evaluation -------------------------------------------------------------------------------
    def env(self, values: dict[str, Any]) -> dict[str, Any]:
        """Names -> values: the design values given, the constants, the parameters."""
        env = dict(self.constants)
        env.update(values)
        for name in self.order:
            env[name] = self.exprs[name].value(env)
        return env

    def driven(self, values: dict[str, Any]) -> list[Any]:
        """Values of the drives (config order) at design ``values`` (float or complex)."""
        env = self.env(values)
        return [e.value(env) for _, _, e in self.drives]


def check_links(cfg: "Config", file: str) -> None:
    """The checks of the module docstring that need no evaluation."""
    from .paths import PathError, field_path, nominal_value
    if not has_links(cfg):
        return
    links = Links(cfg, file)
    links.check_names()
    for d in cfg.design:
        if d.drives and field_path(cfg, d.path):
            raise ConfigError(file, drive_key(d.name, 0, "path"), f"design entry {d.name!r} is an element "
                              "field; only scalar design variables drive other parameters")
    designed = {d.path: d.name for d in cfg.design}
    driven: dict[str, str] = {}
    for key, path, _ in links.drives:
        k = key + "path"
        if field_path(cfg, path):
            raise ConfigError(file, k, f"{path!r} is an element field; drives set scalars")
        try:
            nominal_value(cfg, path)
        except PathError as exc:
            raise ConfigError(file, k, str(exc)) from None
        if path in designed:
            raise ConfigError(file, k, f"{path!r} is the path of design variable {designed[path]!r}; "
                              "a parameter is either designed or driven")
        if path in driven:
            raise ConfigError(file, k, f"{path!r} is driven twice (also by {driven[path]})")
        driven[path] = k


def check_overrides(cfg: "Config", raw: dict[str, Any], overrides: list[str], file: str) -> None:
    """A ``--set`` that changes a driven value is an error (ConfigError naming the --set,
    the path and the [[design]] entry whose drive sets it).

    Why not a warning: a driven value always follows its expression (``resolve_links``
    replaces it when the config is loaded and whenever a design value changes), so such
    an override never reaches the model — there is no use of it that keeps the value,
    and silently dropping it ran another model than the command line says.  What the
    user means is a change of the design value or of a [parameters] entry the
    expression reads (or removing the drive).  ``raw``: the TOML data before the
    overrides; each override is applied in turn and the driven leaves compared, so the
    check does not depend on how a path is spelled (entry name or index, a whole table
    or vector, or the leaf itself); an override that sets a driven value to what the
    file already holds changes nothing and passes."""
    import copy

    from .loader import apply_overrides
    from .paths import _locate
    drives = [(d.name, i, dr.path, dr.expression) for d in cfg.design for i, dr in enumerate(d.drives)]
    if not drives or not overrides:
        return
    missing = object()

    def leaf(data, path):
        try:
            container, index = _locate(data, path)
            return container[index]
        except Exception:  # noqa: BLE001 - a path absent from the raw file (a default) or not yet made
            return missing

    data = copy.deepcopy(raw)
    before = [leaf(data, path) for _, _, path, _ in drives]
    for text in overrides:
        apply_overrides(data, [text], file)
        now = [leaf(data, path) for _, _, path, _ in drives]
        for (name, i, path, expr), b, a in zip(drives, before, now):
            if a is not b and (a is missing or b is missing or a != b):
                raise ConfigError(file, f"--set {text.partition('=')[0].strip()}",
                                  f"sets {path}, which [[design]] {name!r} drives "
                                  f"({drive_key(name, i, 'expression')} = {expr!r}) and so overwrites; "
                                  "change the design value or a [parameters] entry instead")
        before = now


def driven_values(cfg: "Config", file: str) -> list[tuple[str, str, float]]:
    """(key, path, value) of every drive at the nominal design; ConfigError if a value
    is not a finite real number."""
    links = Links(cfg, file)
    values = {d.name: cfg.resolve_path(d.path) for d in cfg.design if d.name in links.design}
    try:
        env = links.env(values)
    except ArithmeticError as exc:
        bad = _first_failing(links, values)
        raise ConfigError(file, bad, f"{exc} at the nominal design") from None
    for name in links.order:
        if not math.isfinite(env[name]):
            raise ConfigError(file, f"parameters.{name}", f"{links.exprs[name].short} = {env[name]} "
                              "at the nominal design (must be finite)")
    out = []
    for key, path, e in links.drives:
        try:
            v = e.value(env)
        except ArithmeticError as exc:
            raise ConfigError(file, key + "expression", f"{exc} at the nominal design") from None
        if not math.isfinite(v):
            raise ConfigError(file, key + "expression", f"{e.short} = {v} at the nominal design "
                              "(must be finite)")
        out.append((key, path, float(v)))
    return out


def _first_failing(links: Links, values: dict[str, Any]) -> str:
    env = dict(links.constants)
    env.update(values)
    for name in links.order:
        try:
            env[name] = links.exprs[name].value(env)
        except ArithmeticError:
            return f"parameters.{name}"
    return "parameters"


def resolve_links(cfg: "Config", file: str) -> "Config":
    """``cfg`` with every driven value set to its expression at the nominal design
    (revalidated: a driven value the schema rejects, e.g. a length <= 0, is an error
    naming the drive)."""
    if not any(d.drives for d in cfg.design):
        if cfg.parameters:
            driven_values(cfg, file)          # finite parameters
        return cfg
    from pydantic import ValidationError

    from .checks import check_config
    from .loader import translate_error
    from .paths import _locate
    from .schema import Config

    vals = driven_values(cfg, file)
    data = cfg.to_dict()
    changed = False
    for _, path, v in vals:
        container, index = _locate(data, path)
        if container[index] != v:
            container[index], changed = v, True
    if not changed:
        return cfg
    try:
        new = Config.model_validate({**data, "source": cfg.source, "text_sha256": cfg.text_sha256})
    except ValidationError as exc:
        where, msg = translate_error(exc.errors()[0], data)
        key = next((k for k, p, _ in vals if where == p), None)
        if key is None:
            raise ConfigError(file, where, msg) from None
        value = next(v for _, p, v in vals if p == where)
        raise ConfigError(file, key + "expression", f"gives {where} = {value!r}: {msg}") from None
    check_config(new, file)
    return new
