"""The single exception type of the config layer.

Every problem with a configuration (missing file, TOML syntax, unknown key, wrong
type, non-physical value, dangling reference, bad ``--set``) is reported as a
``ConfigError`` that names the file and the dotted key, so the CLI can print one
readable line and exit 2 without a traceback.
"""
from __future__ import annotations


class ConfigError(Exception):
    """A bad configuration: ``str(err) == f"{file}: {key}: {message}"``.

    ``key`` is dotted and uses entity names where known (``bodies.A1.mass``),
    otherwise list indices (``bodies[2].mass``); pseudo-keys ``<toml>``,
    ``<file>`` and ``<set>`` mark syntax, file-access and override-syntax errors.
    """

    def __init__(self, file: str, key: str, message: str):
        self.file = str(file)
        self.key = key
        self.message = message
        super().__init__(f"{self.file}: {key}: {message}")
