"""Configuration layer: TOML file + ``--set`` overrides -> validated ``Config``.

Public API: ``load_config``, ``Config``, ``ConfigError`` (see DESIGN.md "Config (TOML)").
All input problems raise ``ConfigError`` naming file and dotted key.
"""
from .errors import ConfigError
from .loader import load_config
from .schema import Config

__all__ = ["Config", "ConfigError", "load_config"]
