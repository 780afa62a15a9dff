"""Reading TOML, applying ``--set`` overrides and validating into a ``Config``.

Pydantic's errors are translated into a single ``ConfigError`` whose key uses
entity names (``bodies.A1.mass`` rather than ``bodies.0.mass``) and whose
message is short and human ("expected a number, got str 'abc'"), so the CLI can
print one line and exit 2.
"""
from __future__ import annotations

import copy
import hashlib
import os
import re
import tomllib
from typing import Any, Iterable

from pydantic import ValidationError

from .checks import check_config
from .errors import ConfigError
from .schema import Config

#: Top-level sections that are arrays of named tables (addressed by ``name``).
NAMED_LISTS = ("bodies", "beams", "plates", "continua", "joints", "forces", "design", "objectives")
_BOOKKEEPING = ("source", "text_sha256")
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")


# ----------------------------------------------------------------------------- public entry point


def load_config(path: str | os.PathLike, overrides: Iterable[str] = ()) -> Config:
    """Read the TOML file at ``path``, apply ``overrides`` ("a.b.c=value"), validate.

    Raises ``ConfigError`` for any problem.  ``text_sha256`` of the result hashes
    the raw file bytes followed by each override (NUL-separated), so it equals
    the plain file sha256 when there are no overrides.
    """
    file = os.fspath(path)
    overrides = list(overrides)
    try:
        with open(file, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise ConfigError(file, "<file>", "no such file") from None
    except OSError as exc:
        raise ConfigError(file, "<file>", f"cannot read: {exc.strerror or exc}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(file, "<toml>", f"not UTF-8 text (byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(file, "<toml>", f"syntax error: {exc}") from None

    sha = hashlib.sha256(raw)
    for ov in overrides:
        sha.update(b"\0" + ov.encode("utf-8"))
    raw = copy.deepcopy(data) if overrides else None
    origins = apply_overrides(data, overrides, file)
    cfg = validate(data, file, sha.hexdigest(), origins)
    if overrides and any(d.drives for d in cfg.design):
        from .links import check_overrides
        check_overrides(cfg, raw, overrides, file)      # a --set a drive would overwrite: error
    return cfg


def validate(data: dict[str, Any], file: str, sha: str = "", origins: dict[str, str] | None = None) -> Config:
    """Validate a raw TOML-like dict into a ``Config`` (fields, then cross-references).

    ``origins`` maps override paths to the ``--set`` text they came from, so an
    error caused by an override says so.
    """
    for key in _BOOKKEEPING:
        if key in data:
            raise ConfigError(file, key, "unknown key")
    try:
        cfg = Config.model_validate({**data, "source": file, "text_sha256": sha})
    except ValidationError as exc:
        errors = exc.errors()
        key, message = translate_error(errors[0], data)
        for path, text in (origins or {}).items():
            if key == path or key.startswith(path + ".") or key.startswith(path + "["):
                message += f" (from --set {text})"
                break
        if len(errors) > 1:
            message += f" (+{len(errors) - 1} more error{'s' if len(errors) > 2 else ''})"
        raise ConfigError(file, key, message) from None
    check_config(cfg, file)
    from .links import resolve_links
    return resolve_links(cfg, file)           # driven values follow the design (links.py)


# ----------------------------------------------------------------------------- overrides


def parse_override_value(text: str) -> Any:
    """A TOML value if ``text`` parses as one (``5e-4``, ``[0,-9.8]``, ``true``), else the string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def apply_overrides(data: dict[str, Any], overrides: Iterable[str], file: str) -> dict[str, str]:
    """Apply ``--set`` overrides to ``data`` in place; return {path: override text}.

    Entries of arrays of tables are addressed by ``name`` (``forces.S1.stiffness``)
    or by index; 2-vectors also by ``x``/``y``.  Missing intermediate tables are
    created (pydantic then rejects unknown keys, naming the override).
    """
    origins: dict[str, str] = {}
    for text in overrides:
        path, sep, raw_value = text.partition("=")
        path = path.strip()
        segs = path.split(".")
        if not sep or not all(s.strip() for s in segs):
            raise ConfigError(file, "<set>", f"bad override {text!r} (expected KEY=VALUE, e.g. simulation.dt=5e-4)")
        segs = [s.strip() for s in segs]
        _set_path(data, segs, parse_override_value(raw_value.strip()), file, path)
        origins[path] = text
    return origins


def _set_path(data: dict[str, Any], segs: list[str], value: Any, file: str, path: str) -> None:
    node: Any = data
    created = False  # whether ``node`` is an intermediate table made up by us
    for i, seg in enumerate(segs):
        last = i == len(segs) - 1
        where = ".".join(segs[:i]) or "top level"
        if isinstance(node, dict):
            if created and (seg in ("x", "y") or seg.isdigit()):
                # The vector is not in the file (default applies): we cannot set one component.
                raise ConfigError(file, path, f"{where} is not in the file; set it whole, e.g. {where}=[0.0, 0.0]")
            if last:
                node[seg] = value
                return
            created = seg not in node
            if created:
                node[seg] = [] if (i == 0 and seg in NAMED_LISTS) else _table_default(segs[:i + 1])
            node = node[seg]
        elif isinstance(node, list):
            idx = list_index(node, seg)
            if idx is None:
                names = [e["name"] for e in node if isinstance(e, dict) and isinstance(e.get("name"), str)]
                known = ", ".join(names) if names else f"{len(node)} entries"
                raise ConfigError(file, path, f"no entry {seg!r} in {where} (known: {known or 'none'})")
            if last:
                node[idx] = value
                return
            node, created = node[idx], False
        else:
            raise ConfigError(file, path, f"{where} is a {_type_name(node)}, it has no key {seg!r}")


def _table_default(segs: list[str]) -> dict[str, Any]:
    """The table a ``--set`` creates at ``segs`` when the file lacks it: the schema's
    default if that is a non-empty table, else empty.  So ``--set
    simulation.petsc_options.pc_factor_mat_solver_type=mumps`` adds to the default
    ``{ksp_type = "preonly", pc_type = "lu"}`` instead of replacing it (which ran
    GMRES + ILU and failed: MUMPS has no ILU)."""
    model: Any = Config
    field = None
    for seg in segs:
        fields = getattr(model, "model_fields", None)
        if not fields or seg not in fields:
            return {}
        field = fields[seg]
        model = field.annotation
    default = field.get_default(call_default_factory=True) if field is not None else None
    return copy.deepcopy(default) if isinstance(default, dict) and default else {}


def list_index(node: list, seg: str) -> int | None:
    """Index into ``node`` for path segment ``seg``: an entry name, an integer, x/y of a
    2-vector or x/y/z of a 3-vector."""
    for i, entry in enumerate(node):
        if isinstance(entry, dict) and entry.get("name") == seg:
            return i
    if seg.isdigit() and int(seg) < len(node):
        return int(seg)
    if (seg in ("x", "y", "z") and (len(node) == 3 or (len(node) == 2 and seg != "z"))
            and not any(isinstance(e, (dict, list)) for e in node)):
        return ("x", "y", "z").index(seg)        # 2-vectors x, y; 3-vectors x, y, z ([spatial])
    return None


# ----------------------------------------------------------------------------- error translation

_TYPE_NAMES = {str: "str", bool: "bool", int: "int", float: "float", dict: "table", list: "array"}
_EXPECTED = {
    "float_type": "a number",
    "int_type": "an integer",
    "string_type": "a string",
    "bool_type": "a boolean (true/false)",
    "list_type": "an array",
    "tuple_type": "an array",
    "dict_type": "a table",
    "model_type": "a table",
    "model_attributes_type": "a table",
}
_BOUNDS = {"greater_than": ("gt", ">"), "greater_than_equal": ("ge", ">="),
           "less_than": ("lt", "<"), "less_than_equal": ("le", "<=")}


def _type_name(value: Any) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def _describe(value: Any) -> str:
    text = repr(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{_type_name(value)} {text}"


def loc_to_key(loc: tuple, data: Any) -> tuple[str, Any]:
    """Dotted key for a pydantic ``loc``, walking the raw data to use entity names.

    Returns the key and the raw parent node of the last element (or None).
    Discriminator tags that pydantic inserts into ``loc`` are skipped.
    """
    parts: list[str] = []
    node, parent = data, None
    for i, item in enumerate(loc):
        last = i == len(loc) - 1
        parent = node
        if isinstance(item, int):
            entry = node[item] if isinstance(node, list) and 0 <= item < len(node) else None
            name = entry.get("name") if isinstance(entry, dict) else None
            if isinstance(name, str) and _NAME_RE.match(name):
                parts.append("." + name)
            else:
                parts.append(f"[{item}]")
            node = entry
        elif isinstance(node, dict) and item in node:
            parts.append("." + item)
            node = node[item]
        elif isinstance(node, dict) and node.get("type") == item and not last:
            continue  # pydantic's discriminated-union tag, not a real key
        else:
            parts.append("." + str(item))
            node = None
    return "".join(parts).lstrip("."), parent


def translate_error(err: dict[str, Any], data: Any) -> tuple[str, str]:
    """(key, one-line message) for one pydantic error dict."""
    key, parent = loc_to_key(tuple(err["loc"]), data)
    kind, ctx, value = err["type"], err.get("ctx") or {}, err.get("input")
    if kind == "extra_forbidden":
        return key, "unknown key"
    if kind == "missing":
        if isinstance(parent, list):
            return key, "too few values"
        return key, "required key missing"
    if kind in _EXPECTED:
        return key, f"expected {_EXPECTED[kind]}, got {_describe(value)}"
    if kind in _BOUNDS:
        name, op = _BOUNDS[kind]
        return key, f"must be {op} {ctx.get(name)}, got {value!r}"
    if kind == "finite_number":
        return key, f"must be finite, got {value!r}"
    if kind == "literal_error":
        return key, f"must be one of {ctx.get('expected')}, got {_describe(value)}"
    if kind == "union_tag_invalid":
        return _join(key, "type"), f"unknown type {ctx.get('tag')!r} (expected one of {ctx.get('expected_tags')})"
    if kind == "union_tag_not_found":
        return _join(key, "type"), "required key missing"
    if kind in ("too_short", "too_long"):
        noun = "values" if isinstance(value, (list, tuple)) and ctx.get("field_type") == "Tuple" else "entries"
        if kind == "too_short":
            return key, f"needs at least {ctx.get('min_length')} {noun}, got {ctx.get('actual_length')}"
        return key, f"allows at most {ctx.get('max_length')} {noun}, got {ctx.get('actual_length')}"
    if kind == "value_error":
        return key, str(ctx.get("error", err["msg"]))
    return key, err["msg"]


def _join(key: str, leaf: str) -> str:
    return f"{key}.{leaf}" if key else leaf
