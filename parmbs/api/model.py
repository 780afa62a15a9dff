"""``Model``: build a parmbs model in Python — the TOML model, not a second one.

One schema, two front ends.  A ``Model`` holds exactly the dict a TOML file parses
to (``tomllib.loads``): ``body(...)`` appends a ``[[bodies]]`` table, ``simulation(...)``
fills ``[simulation]``, and so on.  Nothing is checked while building; ``config()``
runs the loader's own validation (``parmbs.config.loader.validate``: the pydantic
schema, then the cross-reference checks and linked drives), so a bad value is the
same ``ConfigError`` a file gives, naming the key (``bodies.A1.mass: must be > 0,
got -1.0``), with the model's ``source`` label in place of the file name.
``to_toml(path)`` writes the dict as TOML; ``load_config(path)`` of that file gives
a config equal to ``config()`` (same ``to_dict()``, same ``text_sha256``), so a model
scripted here runs unchanged as a batch job (``parmbs gradient path``).

Example (the first two bars of the five-bar, configs/fivebar.toml)::

    m = Model("fivebar", gravity=(0.0, -9.81))
    m.ground(A=(0.0, 0.0), B=(1.0, 0.0))
    m.body("A1", mass=1.0, inertia=1 / 6, com=(0.7071, 0.0),
           points={"O": (0, 0), "P1": (1.4142, 0)}, initial={"angle": -2.3562})
    m.joint("JA", "revolute", a="ground.A", b="A1.O")
    m.force("S1", "spring", a="A1.P1", b="ground.B", stiffness=100.0, length=2.236)
    m.simulation(t_end=1.0, dt=1e-3)
    m.design("Ls1", "forces.S1.length")
    m.objective("psi1", integrand="point_deviation_sq", point="A1.P1", reference=(1.0, -1.0))
    cfg = m.config()
"""
from __future__ import annotations

import copy
import hashlib
import os
import tomllib
from typing import Any, Callable, Iterable

import numpy as np

from ..config.errors import ConfigError

#: Sections that are one TOML table, merged by the method of the same name.
TABLES = ("simulation", "sensitivity", "checkpoint", "optimize", "parallel", "spatial")


def plain(value: Any) -> Any:
    """``value`` as TOML-ready Python: numpy arrays and tuples become lists, numpy
    scalars Python numbers; dicts and lists are copied; None entries of a table are
    dropped (TOML has no null: an absent key takes the schema default).  So a model
    built from numpy values writes the same TOML, and validates the same, as one
    built from floats."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def callable_spec(fn: Callable, source: str, key: str = "objectives.integrand") -> str:
    """``"module:function"`` naming ``fn`` for ``callable`` (objectives.load_callable).

    A function of the running script (``__main__``) is named by the script's file
    stem, which ``load_callable`` finds next to the config file or on ``sys.path``
    (``python script.py`` puts the script's folder there).  Lambdas and nested
    functions have no importable name: ConfigError."""
    name = getattr(fn, "__qualname__", "")
    module = getattr(fn, "__module__", None)
    if not name or "<" in name or "." in name or module is None:
        raise ConfigError(source, key, f"{fn!r} has no importable name: define it at the top level of a module")
    if module == "__main__":
        file = getattr(__import__("__main__"), "__file__", None)
        if not file:
            raise ConfigError(source, key, f"{name} is defined interactively: put it in a module file and import it")
        module = os.path.splitext(os.path.basename(file))[0]
    return f"{module}:{name}"


class Model:
    """A model under construction: the TOML dict, built by calls.

    ``name``: ``model.name``; further ``[model]`` keys (``gravity``, ``units``) as
    keywords.  ``source``: the label a ``ConfigError`` names in place of a file, and
    the directory (its folder; default the working directory) ``callable`` modules
    are looked up in — ``to_toml(path)`` and ``Model.from_toml(path)`` set it to the
    file.

    Methods that add a named entry (``body``, ``beam``, ``plate``, ``continuum``,
    ``joint``, ``force``, ``design``, ``objective``, ``scenario``) take the name first
    and the entry's other keys as keywords, spelled as in the TOML
    (docs/config.md); methods of a single table (``simulation``, ``sensitivity``,
    ``checkpoint``, ``optimize``, ``parallel``, ``spatial``, ``parameters``,
    ``ground``) merge their keywords into it.  Each returns the model, so calls
    chain.  Values may be numpy arrays or scalars (stored as lists and floats).
    """

    def __init__(self, name: str, *, source: str | None = None, **model: Any):
        self.source = source if source is not None else f"<Model {name!r}>"
        self.data: dict[str, Any] = {"model": {"name": name, **plain(model)}}

    # ------------------------------------------------------------------ other front end
    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "<dict>") -> "Model":
        """A model holding a copy of ``data`` (a TOML-like dict, e.g. ``Config.to_dict()``)."""
        m = cls.__new__(cls)
        m.source, m.data = source, plain(data)
        return m

    @classmethod
    def from_toml(cls, path: str | os.PathLike) -> "Model":
        """The model of a TOML file, to edit in Python (errors name the file)."""
        file = os.fspath(path)
        try:
            with open(file, "rb") as fh:
                data = tomllib.load(fh)
        except FileNotFoundError:                       # the loader's messages (config/loader.py)
            raise ConfigError(file, "<file>", "no such file") from None
        except OSError as exc:
            raise ConfigError(file, "<file>", f"cannot read: {exc.strerror or exc}") from None
        except UnicodeDecodeError as exc:
            raise ConfigError(file, "<toml>", f"not UTF-8 text (byte {exc.start})") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(file, "<toml>", f"syntax error: {exc}") from None
        return cls.from_dict(data, file)

    # ------------------------------------------------------------------ entries
    def _add(self, section: str, name: str, fields: dict[str, Any], head: dict[str, Any] | None = None) -> "Model":
        entry = {**(head or {}), "name": name, **plain(fields)}
        self.data.setdefault(section, []).append(entry)
        return self

    def body(self, name: str, **fields: Any) -> "Model":
        """A rigid body ``[[bodies]]``: mass, inertia, com, points, initial, independent, ..."""
        return self._add("bodies", name, fields)

    def beam(self, name: str, **fields: Any) -> "Model":
        """A flexible beam ``[[beams]]`` (type "ancf" or "ffr"): length, elements, density, E, ..."""
        return self._add("beams", name, fields)

    def plate(self, name: str, **fields: Any) -> "Model":
        """A flexible plate ``[[plates]]``: size, nx, ny, thickness, E, density, points, ..."""
        return self._add("plates", name, fields)

    def continuum(self, name: str, **fields: Any) -> "Model":
        """A floating-frame continuum ``[[continua]]``: as plate, plus offset, clamp_radius."""
        return self._add("continua", name, fields)

    def joint(self, name: str, type: str, **fields: Any) -> "Model":
        """A joint ``[[joints]]`` of ``type`` revolute, prismatic, weld or driver."""
        return self._add("joints", name, fields, {"type": type})

    def force(self, name: str, type: str, **fields: Any) -> "Model":
        """A force element ``[[forces]]`` of ``type`` spring, rotational_spring, force, torque, ..."""
        return self._add("forces", name, fields, {"type": type})

    def design(self, name: str, path: str, **fields: Any) -> "Model":
        """A design variable ``[[design]]`` at the config ``path`` (lower, upper, drives)."""
        return self._add("design", name, {"path": path, **fields})

    def objective(self, name: str, **fields: Any) -> "Model":
        """An objective ``[[objectives]]``: integrand / terminal kind, point, reference, weight, ...

        ``integrand`` may be a Python function ``g(t, q, v, a, lam, p, model) ->
        (value, partials)`` (sensitivity/objectives.py UserTerm): it is stored as
        ``integrand = "python"``, ``callable = "module:function"``."""
        fn = fields.get("integrand")
        if callable(fn):
            spec = callable_spec(fn, self.source, f"objectives.{name}.integrand")
            fields = {**fields, "integrand": "python", "callable": spec}
        return self._add("objectives", name, fields)

    def scenario(self, name: str, set: dict[str, Any], **fields: Any) -> "Model":  # noqa: A002 (TOML key)
        """A load case ``[[scenarios]]``: ``set`` maps ``--set``-style keys to values (weight)."""
        return self._add("scenarios", name, {"set": set, **fields})

    def drop(self, section: str, *names: str) -> "Model":
        """Remove the named entries of a list section (``drop("design", "m_A1")``);
        KeyError for a name not there."""
        entries = self.data.get(section, [])
        for name in names:
            if not any(e.get("name") == name for e in entries):
                raise KeyError(f"no {section} entry {name!r}")
        self.data[section] = [e for e in entries if e.get("name") not in names]
        return self

    # ------------------------------------------------------------------ tables
    def _merge(self, section: str, fields: dict[str, Any]) -> "Model":
        table = self.data.setdefault(section, {})
        table.update(plain(fields))
        return self

    def ground(self, **points: Any) -> "Model":
        """Ground points by name: ``ground(A=(0, 0), B=(1, 0))`` (``[ground] points``)."""
        table = self.data.setdefault("ground", {})
        table.setdefault("points", {}).update(plain(points))
        return self

    def parameters(self, **values: Any) -> "Model":
        """Named scalars and expressions ``[parameters]`` (for design drives)."""
        return self._merge("parameters", values)

    def simulation(self, **fields: Any) -> "Model":
        """``[simulation]``: t_end, dt, formulation, integrator, newton, petsc_options, ..."""
        return self._merge("simulation", fields)

    def sensitivity(self, **fields: Any) -> "Model":
        """``[sensitivity]``: method, fd_step."""
        return self._merge("sensitivity", fields)

    def checkpoint(self, **fields: Any) -> "Model":
        """``[checkpoint]``: schedule, file."""
        return self._merge("checkpoint", fields)

    def optimize(self, **fields: Any) -> "Model":
        """``[optimize]``: method, objective, max_it, tolerances, constraints, ..."""
        return self._merge("optimize", fields)

    def parallel(self, **fields: Any) -> "Model":
        """``[parallel]``: groups, distribute."""
        return self._merge("parallel", fields)

    def spatial(self, **fields: Any) -> "Model":
        """``[spatial]``: the 3-D rigid-body model's tables (spatial_schema.py)."""
        return self._merge("spatial", fields)

    # ------------------------------------------------------------------ results
    def to_dict(self) -> dict[str, Any]:
        """A copy of the TOML dict built so far (as ``tomllib`` would parse the file)."""
        return copy.deepcopy(self.data)

    def toml(self) -> str:
        """The TOML text of the model (what ``to_toml`` writes)."""
        import tomli_w
        try:
            return tomli_w.dumps(self.data)
        except TypeError as exc:           # a value TOML cannot hold (None, an object)
            raise ConfigError(self.source, "<toml>", f"cannot write as TOML: {exc}") from None

    def to_toml(self, path: str | os.PathLike) -> str:
        """Write the model as TOML to ``path`` (via ``path.partial``, renamed on
        success); returns the path.  The model's ``source`` becomes the file."""
        text = self.toml()
        file = os.fspath(path)
        tmp = file + ".partial"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, file)
        self.source = file
        return file

    def config(self, overrides: Iterable[str] = ()):
        """The validated ``Config`` (the loader's validation; ``ConfigError`` naming the
        key).  ``overrides`` are ``--set`` strings ("simulation.t_end=0.5").
        ``text_sha256`` hashes the TOML text of ``toml()`` and the overrides as
        ``load_config`` hashes a file, so a written file's config is the same."""
        from ..config.loader import apply_overrides, validate
        overrides = list(overrides)
        sha = hashlib.sha256(self.toml().encode("utf-8"))
        for ov in overrides:
            sha.update(b"\0" + ov.encode("utf-8"))
        data = self.to_dict()
        origins = apply_overrides(data, overrides, self.source)
        cfg = validate(data, self.source, sha.hexdigest(), origins)
        if overrides and any(d.drives for d in cfg.design):
            from ..config.links import check_overrides
            check_overrides(cfg, self.to_dict(), overrides, self.source)
        return cfg

    def __repr__(self) -> str:
        counts = ", ".join(f"{len(v)} {k}" for k, v in self.data.items() if isinstance(v, list))
        return f"Model({self.data['model'].get('name')!r}{', ' + counts if counts else ''})"
