"""Walk the pydantic config schema (parmbs/config/schema*.py) into sections and rows.

One ``Section`` per model class reachable from ``Config`` (depth first, in field
order, so the reference reads in the order of a config file); one ``Row`` per field:
key, type text, default, where the field is used.  Nothing here is written by hand:
a key added to the schema appears on the next ``python -m parmbs.docs`` and the
test (tests/test_docs.py) fails until the committed Markdown is regenerated.
"""
from __future__ import annotations

import inspect
import re
import types
import typing
from dataclasses import dataclass, field

import annotated_types as at
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined


@dataclass
class Row:
    key: str
    annotation: typing.Any
    info: FieldInfo
    type_text: str
    default_text: str
    comment: str            # trailing ``# ...`` on the field's line in the source, if any


@dataclass
class Section:
    cls: type
    paths: list[str] = field(default_factory=list)   # TOML paths where the class is used
    rows: list[Row] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.cls.__name__

    @property
    def path(self) -> str:
        return self.paths[0]


# ----------------------------------------------------------------------------- types as text

#: what the named validators of the schema require, in a user's words
_VALIDATORS = {
    "_check_name": "a name: letters, digits, `_`, `-`",
    "_check_model_name": "a plain file name",
    "_check_point_ref": "`BODY.POINT`",
    "_point_ref": "`BODY.POINT`",
    "_check_axis_ref": "`BODY.AXIS`",
    "_axis_ref": "`BODY.AXIS`",
    "_check_coordinate": "`BODY.x`, `BODY.y` or `BODY.angle`",
    "_check_dof_name": "a joint name, `BODY.POINT.x|y|z` or `BODY.angle`",
    "_check_schedule": "`all`, `every:K` or `revolve:C`",
    "_nonempty": "not empty",
    "_no_duplicates": "no duplicates",
    "_nonzero": "nonzero",
    "_nonzero3": "nonzero",
    "_no_com_point": "`com` reserved",
    "_beam_points": "`root`, `tip`, `com`, `nodeK` reserved",
    "_check_petsc_options": "PETSc option names without `-`",
    "_check_scenario_set": "keys of the model sections",
    "_inertia": "[J_xx, J_yy, J_zz] or a symmetric positive definite 3×3",
}


def _constraints(meta) -> list[str]:
    out = []
    for m in meta:
        if isinstance(m, FieldInfo):
            out += _constraints(m.metadata)
        elif isinstance(m, at.Gt):
            out.append(f"> {m.gt:g}")
        elif isinstance(m, at.Ge):
            out.append(f"≥ {m.ge:g}")
        elif isinstance(m, at.Lt):
            out.append(f"< {m.lt:g}")
        elif isinstance(m, at.Le):
            out.append(f"≤ {m.le:g}")
        else:
            fn = getattr(m, "func", None)
            if fn is not None and fn.__name__ in _VALIDATORS:
                out.append(_VALIDATORS[fn.__name__])
    return out


def _model_link(cls) -> str:
    return f"[{cls.__name__}](#{cls.__name__.lower()})"


def type_text(ann, meta=()) -> str:
    """A short human type: ``number > 0``, ``[number, number]``, ``"a" | "b"``, a link
    to a table's section."""
    origin = typing.get_origin(ann)
    if origin is typing.Annotated:
        base, *more = typing.get_args(ann)
        return type_text(base, tuple(more) + tuple(meta))
    cons = _constraints(meta)
    suffix = f" ({', '.join(cons)})" if cons and not all(c[0] in "<>≤≥" for c in cons) else ""
    bounds = ", ".join(c for c in cons if c[0] in "<>≤≥")
    if bounds:
        bounds = " " + bounds
        suffix = "" if not suffix else " (" + ", ".join(c for c in cons if c[0] not in "<>≤≥") + ")"
    if ann is float:
        return f"number{bounds}{suffix}"
    if ann is int:
        return f"integer{bounds}{suffix}"
    if ann is str:
        return f"string{suffix}"
    if ann is bool:
        return "boolean"
    if ann is typing.Any:
        return f"any{suffix}"
    if origin is typing.Literal:
        return " | ".join(f'`"{a}"`' if isinstance(a, str) else f"`{a}`" for a in typing.get_args(ann)) + suffix
    if origin in (typing.Union, types.UnionType):
        parts = [type_text(a) for a in typing.get_args(ann) if a is not type(None)]
        return " or ".join(parts) + suffix
    if origin is tuple:
        args = typing.get_args(ann)
        return "[" + ", ".join(type_text(a) for a in args) + "]" + suffix
    if origin is list:
        (a,) = typing.get_args(ann)
        return f"array of {type_text(a)}{suffix}"
    if origin is dict:
        k, v = typing.get_args(ann)
        return f"table {{{type_text(k)} = {type_text(v)}}}{suffix}"
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return f"table: {_model_link(ann)}"
    return str(ann)


def default_text(info: FieldInfo) -> str:
    if info.default_factory is not None:
        value = info.default_factory()
        if isinstance(value, BaseModel):
            return "(table defaults)"
        return _toml_value(value)
    if info.default is PydanticUndefined:
        return "**required**"
    if info.default is None:
        return "—"
    return _toml_value(info.default)


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "`true`" if v else "`false`"
    if isinstance(v, str):
        return f'`"{v}"`'
    if isinstance(v, float):
        return f"`{v:g}`" if (abs(v) >= 1e-4 or v == 0) else f"`{v:.0e}`"
    if isinstance(v, (tuple, list)):
        if not v:
            return "`[]`"
        return "`[" + ", ".join(_toml_value(x).strip("`") for x in v) + "]`"
    if isinstance(v, dict):
        if not v:
            return "`{}`"
        return "`{ " + ", ".join(f"{k} = {_toml_value(x).strip('`')}" for k, x in v.items()) + " }`"
    return f"`{v}`"


# ----------------------------------------------------------------------------- comments in the source

def trailing_comments(cls) -> dict[str, str]:
    """``{field: comment}`` from ``NAME: TYPE = DEFAULT  # comment`` lines of the class body
    (comments written beside a field are its documentation; they are kept in the source
    so a change of the field and its words stay together)."""
    try:
        src = inspect.getsource(cls)
    except (OSError, TypeError):
        return {}
    out = {}
    for line in src.splitlines():
        m = re.match(r"^\s{4}([A-Za-z_][A-Za-z0-9_]*)\s*:[^#]*#\s*(.+)$", line)
        if m and m.group(1) in cls.model_fields:
            out[m.group(1)] = m.group(2).strip()
    return out


# ----------------------------------------------------------------------------- the walk

def _models_in(ann) -> list[tuple[type, bool]]:
    """(model class, reached through a list) for every model inside an annotation."""
    found = []

    def visit(a, in_list):
        origin = typing.get_origin(a)
        if isinstance(a, type) and issubclass(a, BaseModel):
            found.append((a, in_list))
            return
        if origin is typing.Annotated:
            visit(typing.get_args(a)[0], in_list)
            return
        for x in typing.get_args(a):
            visit(x, in_list or origin is list)
    visit(ann, False)
    return found


def _tag(cls) -> str | None:
    f = cls.model_fields.get("type")
    if f is not None and typing.get_origin(f.annotation) is typing.Literal and len(typing.get_args(f.annotation)) == 1:
        return typing.get_args(f.annotation)[0]
    return None


def walk(root) -> list[Section]:
    """Every model class reachable from ``root`` as a Section, depth first in field order."""
    sections: dict[type, Section] = {}

    def visit(cls, path):
        if cls in sections:
            sections[cls].paths.append(path)
            return
        sec = Section(cls, [path])
        sections[cls] = sec
        comments = trailing_comments(cls)
        children = []
        for key, info in cls.model_fields.items():
            if info.exclude:
                continue                 # bookkeeping (Config.source, text_sha256)
            ann = info.annotation
            sec.rows.append(Row(key, ann, info, type_text(ann, info.metadata), default_text(info),
                                comments.get(key, "")))
            for sub, in_list in _models_in(ann):
                p = f"{path}.{key}" if path else key
                if in_list:
                    p += "[]"
                tag = _tag(sub)
                if tag is not None:
                    p += f' (type = "{tag}")'
                children.append((sub, p))
        for sub, p in children:
            visit(sub, p)
    visit(root, "")
    return list(sections.values())


def all_keys(root) -> list[tuple[str, str]]:
    """(class name, field) for every documented field: what the test checks."""
    return [(s.name, r.key) for s in walk(root) for r in s.rows]
