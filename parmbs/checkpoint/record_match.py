"""Does a stored record (a checkpoint file, an optimization record) belong to this config?

Why: a checkpoint or an optimization record may only be continued by the run that wrote
it — same model, parameters, steps, objectives — so each file carries the sha256 of the
resolved config (``resolved_sha256``: defaults included, output-only keys left out) and
its resolved TOML text (``/config``).  But a run killed under one parmbs version and
restarted under a later one sees keys the schema gained in between (e.g.
``optimize.gradient``, ``simulation.adapt.objective_atol``): the resolved config now has
them, the record does not, and a plain hash comparison refuses a record its own code
would have continued.  A key the record predates cannot have been chosen by it, and a
new key's default is the behaviour the record's code had (otherwise the new key would
have changed every config), so those keys — and only while at their default — are left
out of the comparison (``keys_added_since``).

When the record really differs, ``config_difference`` names the first key that does,
so the one-line error says what to change back."""
from __future__ import annotations

import hashlib

#: keys of the resolved config that do not change any computed number
OUTPUT_KEYS = (("checkpoint", "file"), ("simulation", "progress"))


def _pop(d, path):
    """Remove the key at ``path`` (a tuple of table names and the key) from nested dict ``d``."""
    for name in path[:-1]:
        d = d.get(name)
        if not isinstance(d, dict):
            return
    d.pop(path[-1], None)


def resolved_sha256(config, ignore=()) -> str:
    """sha256 of the resolved config (TOML, defaults included) without the purely
    output-related keys (``checkpoint.file``, ``simulation.progress``) and the key
    paths in ``ignore`` (tuples like ("optimize", "max_it") or ("simulation", "adapt",
    "objective_atol")): a file may be renamed or a run made quiet without invalidating
    it, any other change does."""
    import tomli_w
    from ..config.schema import _drop_none
    d = config.to_dict()
    for path in OUTPUT_KEYS + tuple(ignore):
        _pop(d, tuple(path))
    return hashlib.sha256(tomli_w.dumps(_drop_none(d)).encode("utf-8")).hexdigest()


def stored_config(f):
    """The record's resolved config as a dict (its /config TOML text), or None."""
    import tomllib
    try:
        text = f["config"][()]
        return tomllib.loads(text.decode("utf-8") if isinstance(text, bytes) else str(text))
    except Exception:  # noqa: BLE001 - unreadable: the plain hash comparison decides
        return None


def keys_added_since(f, config):
    """The key paths of ``config`` that the record's /config does not have and that are
    at their schema default now, in every table both have (nested tables included,
    e.g. ``simulation.adapt``): keys added to the schema after the record was written
    (module docstring).  A non-default value of such a key, or any other difference,
    still makes it another run.  () if /config cannot be read."""
    old = stored_config(f)
    if old is None:
        return ()
    out = []

    def walk(model, new, old_d, path):
        fields = getattr(type(model), "model_fields", None)
        if fields is None:
            return
        for key, val in new.items():
            field = fields.get(key)
            if field is None:
                continue
            if key not in old_d:
                if getattr(model, key) == field.default:
                    out.append((*path, key))
            elif isinstance(val, dict) and isinstance(old_d[key], dict):
                walk(getattr(model, key), val, old_d[key], (*path, key))

    walk(config, config.to_dict(), old, ())
    return tuple(out)


def older_sha256(f, config, ignore=()):
    """The hash of ``config`` without the keys the record predates, or None if there are
    none (then only the plain hash can match)."""
    later = keys_added_since(f, config)
    return resolved_sha256(config, ignore=[*ignore, *later]) if later else None


def matches(f, stored_sha, config, ignore=()):
    """Does the record with hash ``stored_sha`` (and /config in ``f``) belong to ``config``?"""
    return stored_sha == resolved_sha256(config, ignore) or stored_sha == older_sha256(f, config, ignore)


def flat(d, prefix=""):
    """{"a.b.c": value} of a nested TOML dict; tables in arrays by their ``name``."""
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flat(v, key + "."))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for i, x in enumerate(v):
                out.update(flat(x, f"{key}.{x.get('name', i)}."))
        else:
            out[key] = v
    return out


def config_difference(f, config, ignore=()):
    """'KEY = OLD in the record, NEW now' for the first resolved-config key that differs
    between the record's /config and ``config`` (keys in ``ignore``, the keys the record
    predates and output keys skipped); a general phrase if /config cannot be read."""
    import tomllib
    general = "the model, design or simulation settings differ"
    old = stored_config(f)
    if old is None:
        return general
    try:
        old, new = flat(old), flat(tomllib.loads(config.to_toml()))
    except Exception:  # noqa: BLE001 - only the message is at stake
        return general
    skip = {".".join(p) for p in (*OUTPUT_KEYS, *ignore, *keys_added_since(f, config))}
    missing = "(not set)"
    for key in [*new, *(k for k in old if k not in new)]:
        if key in skip:
            continue
        a, b = old.get(key, missing), new.get(key, missing)
        if a != b:
            return f"{key} = {a!r} in the record, {b!r} now"
    return general
