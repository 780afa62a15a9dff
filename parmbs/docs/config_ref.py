"""docs/config.md: the config reference, generated from the pydantic schema.

Every key of every table reachable from ``Config`` gets a row: type (with bounds),
default, unit, meaning (descriptions.py) and the one line a user sees for a bad value.
That line is not written by hand: a bad value is made up from the key's type
(``bad_value``), validated by pydantic, and turned into the message by the loader's
own ``translate_error`` — the same path ``parmbs`` takes (config/loader.py).
"""
from __future__ import annotations

import re
import typing

import annotated_types as at
from pydantic import BaseModel, Field, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo

from ..config.loader import translate_error
from ..config.schema import FORMULATION_INTEGRATORS, Config
from .descriptions import describe
from .refs import cite
from .schema_walk import Section, walk

FILE = "model.toml"


# ----------------------------------------------------------------------------- the error a user sees

def _flatten(ann, meta=()):
    while typing.get_origin(ann) is typing.Annotated:
        base, *more = typing.get_args(ann)
        ann, meta = base, tuple(more) + tuple(meta)
    cons = []
    for m in meta:
        cons += m.metadata if isinstance(m, FieldInfo) else [m]
    return ann, cons


def _validator_names(cons):
    return {getattr(m, "func", None).__name__ for m in cons if getattr(m, "func", None) is not None}


def bad_value(ann, meta=()):
    """A value of the wrong kind for ``ann`` that shows its most telling error: beyond a
    bound if it has one, else the wrong type."""
    ann, cons = _flatten(ann, meta)
    origin = typing.get_origin(ann)
    if origin in (typing.Union, __import__("types").UnionType):
        args = [a for a in typing.get_args(ann) if a is not type(None)]
        if all(isinstance(a, type) and issubclass(a, BaseModel) for a in args) and len(args) > 1:
            return {"type": "bogus"}
        return bad_value(args[0])
    if ann in (float, int):
        for m in cons:
            if isinstance(m, at.Gt):
                return m.gt
            if isinstance(m, at.Ge):
                return m.ge - 1
            if isinstance(m, at.Lt):
                return m.lt
            if isinstance(m, at.Le):
                return m.le + 1
        return "abc"
    if ann is bool:
        return "yes"
    if origin is typing.Literal:
        return "bogus"
    if ann is str:
        names = _validator_names(cons)
        if names & {"_check_name", "_check_model_name"}:
            return "my model/1"
        if names:
            return "x"
        return 1
    if origin is tuple:
        return [1.0]
    if origin is list:
        return "abc"
    if origin is dict:
        if "_check_petsc_options" in _validator_names(cons):
            return {"-ksp_type": "cg"}
        return "abc"
    return "abc"


def error_line(path: str, row) -> str:
    ann = row.annotation
    info = row.info
    extra = [Field(discriminator=info.discriminator)] if info.discriminator else []
    full = typing.Annotated[(ann, *info.metadata, *extra)] if (info.metadata or extra) else ann
    bad = bad_value(ann, info.metadata)
    try:
        TypeAdapter(full).validate_python(bad)
    except ValidationError as exc:
        key, msg = translate_error(exc.errors()[0], bad)
        key = (path + key if key.startswith("[") else f"{path}.{key}") if key else path
        return f"{FILE}: {key}: {msg}"
    except Exception:     # noqa: BLE001 - a type pydantic cannot adapt alone: no example
        return ""
    return ""


# ----------------------------------------------------------------------------- rendering

def toml_path(section_path: str, key: str, named: bool = True) -> str:
    """``bodies[].initial`` + ``x`` → ``bodies.NAME.initial.x`` (how --set and messages name
    it); an entry without a ``name`` (``named`` False, last level) by index: ``drives[0]``."""
    p = re.sub(r' \(type = "[^"]*"\)', "", section_path)
    if not named and p.endswith("[]"):
        p = p[:-2] + "[0]"
    p = p.replace("[]", ".NAME")
    return f"{p}.{key}" if p else key


def _heading(sec: Section) -> str:
    """``[simulation.newton]``, ``[[bodies]]``, ``[[joints]] type = "revolute"``,
    ``joints.NAME.function type = "harmonic"`` (an inline table)."""
    p = sec.path
    if not p:
        return "Top level"
    tag = re.search(r'\(type = "([^"]*)"\)$', p)
    base = re.sub(r' \(type = "[^"]*"\)', "", p)
    if base.endswith("[]") and "[]" not in base[:-2]:
        title = f"[[{base[:-2]}]]"
    elif "[]" not in base:
        title = f"[{base}]"
    else:
        title = toml_path(base, "", "name" in sec.cls.model_fields).rstrip(".")   # inside an array entry
    return f"`{title}`" + (f' type = "{tag.group(1)}"' if tag else "")


def _cell(text: str) -> str:
    return cite(text).replace("|", "\\|").replace("\n", " ") if text else ""


def render() -> str:
    sections = walk(Config)
    out = [
        "# Config reference",
        "",
        "<!-- generated by `python -m parmbs.docs` from parmbs/config/schema*.py and "
        "parmbs/docs/descriptions.py; do not edit -->",
        "",
        "A model is one TOML file.  This page lists every key of every table, as the schema "
        "(parmbs/config/schema*.py) checks it: type and bounds, default (**required** keys have "
        "none), unit, meaning, and the one line `parmbs` prints (exit 2) for a bad value of it.  "
        "Unknown keys are errors (`unknown key`).  Entries of arrays of tables (`[[bodies]]`, "
        "`[[joints]]`, …) are named by their `name`, and messages and `--set` use that name: "
        "`bodies.NAME.mass`.  A `--set KEY=VALUE` override takes the same keys.",
        "",
        "Checks that need more than one key (a joint naming a body that does not exist, "
        "`dt > t_end`, an integrator the formulation does not accept, a design `path` that names "
        "no scalar) run after these and name the key the same way (parmbs/config/checks.py).",
        "",
        "**Units.**  parmbs has none of its own: every number is read in one consistent set.  "
        "The units shown are those of an SI model (kg, m, s, N, Pa); a model written in mm, t "
        "(tonne), s reads them as mm, t, N, MPa, and names its units for the plots in "
        "[`[model.units]`](#units) (configs/slider-crank-flex.toml).",
        "",
        "## Formulations and integrators",
        "",
        "| `simulation.formulation` | accepted `simulation.integrator` |",
        "|---|---|",
    ]
    for f, ints in FORMULATION_INTEGRATORS.items():
        out.append(f"| `{f}` | {', '.join(f'`{i}`' for i in ints)} |")
    out += ["", "## Tables", ""]
    for sec in sections:
        out.append(f"- [{_heading(sec)}](#{sec.name.lower()})")
    out.append("")
    for sec in sections:
        out += [f'<a id="{sec.name.lower()}"></a>', "", f"### {_heading(sec)}", ""]
        if len(sec.paths) > 1:
            shown = [f"`{toml_path(p, '').rstrip('.')}`" for p in sec.paths]
            out += ["Used at " + ", ".join(dict.fromkeys(shown)) + ".", ""]
        doc = (sec.cls.__doc__ or "").strip()
        if doc and sec.cls is not Config and not doc.startswith("Base for"):
            out += [cite(" ".join(doc.split())), ""]
        if not sec.rows:
            out += ["(no keys)", ""]
            continue
        out += ["| key | type | default | unit | meaning | a bad value gives |", "|---|---|---|---|---|---|"]
        for r in sec.rows:
            unit, words = describe(sec.name, r.key, r.comment, r.info)
            err = error_line(toml_path(sec.path, r.key, "name" in sec.cls.model_fields), r)
            out.append(f"| `{r.key}` | {_cell(r.type_text)} | {_cell(r.default_text)} | {_cell(unit)} | "
                       f"{_cell(words)} | {('`' + err.replace('|', '¦') + '`') if err else ''} |")
        out.append("")
    return "\n".join(out)


def undocumented() -> list[str]:
    """"Class.field" of every schema field without words (what tests/test_docs.py refuses)."""
    missing = []
    for sec in walk(Config):
        for r in sec.rows:
            if not describe(sec.name, r.key, r.comment, r.info)[1]:
                missing.append(f"{sec.name}.{r.key}")
    return missing
