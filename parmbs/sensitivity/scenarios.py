"""Load cases: ``[[scenarios]]`` resolved into one validated config each.

A scenario is the base config with a table of ``--set``-style overrides::

    [[scenarios]]
    name = "fast"
    weight = 1.0                                   # optional; default 1
    set = { "joints.drive.function.omega" = 4.0, "simulation.t_end" = 0.5 }

Every objective is evaluated in every scenario; the gradient is reported per
scenario × objective and summed, ``Σ_s weight_s ∇ψ_o^s``, per objective.  Design
variables and objectives are shared (``schema.SCENARIO_SECTIONS`` lists what may be
overridden), so all scenarios differentiate the same quantities.

Resolution is deterministic and identical on every rank (no communication), so it
is safe to call before any collective; a bad override raises ``ConfigError`` naming
``scenarios.<name>.set.<key>`` so the CLI prints one line and exits 2.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..config import ConfigError
from ..config.schema import Config, _drop_none


@dataclass
class Scenario:
    """One resolved load case: its name, weight and validated config (no scenarios)."""

    name: str
    weight: float
    config: Config


NOMINAL = "nominal"


def resolve_scenarios(cfg: Config) -> list[Scenario]:
    """The scenarios of ``cfg`` as validated configs; the base config alone if it has none.

    Raises ``ConfigError`` (file, ``scenarios.NAME.set[.KEY]``, message) for duplicate
    names, overrides of unknown keys, invalid values, and anything the override makes
    invalid downstream (dangling references, design paths that no longer exist).
    """
    from ..config.loader import _set_path, validate

    file = cfg.source
    if not cfg.scenarios:
        return [Scenario(NOMINAL, 1.0, cfg)]
    seen = set()
    base = _drop_none(cfg.to_dict())
    base["scenarios"] = []
    out = []
    for sc in cfg.scenarios:
        prefix = f"scenarios.{sc.name}"
        if sc.name in seen:
            raise ConfigError(file, f"{prefix}.name", f"duplicate name {sc.name!r} in scenarios")
        seen.add(sc.name)
        data = _deepcopy(base)
        for key, value in sc.set.items():
            segs = [s.strip() for s in key.split(".")]
            if not all(segs):
                raise ConfigError(file, f"{prefix}.set", f"bad key {key!r}")
            try:
                _set_path(data, segs, value, file, key)
            except ConfigError as e:
                raise ConfigError(file, f"{prefix}.set.{key}", e.message) from None
        try:
            sub = validate(data, file, cfg.text_sha256)
        except ConfigError as e:
            key = next((k for k in sc.set if e.key == k or e.key.startswith(k + ".")), None)
            where = f"{prefix}.set.{key}" if key else f"{prefix}.set"
            msg = e.message if key else f"{e.key}: {e.message}"
            raise ConfigError(file, where, msg) from None
        out.append(Scenario(sc.name, sc.weight, sub))
    return out


def _deepcopy(obj):
    if isinstance(obj, dict):
        return {k: _deepcopy(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_deepcopy(v) for v in obj]
    return obj
