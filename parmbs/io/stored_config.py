"""The config stored in a parmbs HDF5 file (``/config``, TOML text) back as a Config.

Its own module so that plot.py and density.py, which both read stored configs, do not
import each other (they did: io/plot ↔ io/density).
"""
from __future__ import annotations

import os
import tempfile


def config_from_text(text, name="config.toml"):
    """Rebuild a Config from TOML text (as stored in /config) via a temp file."""
    from ..config import load_config
    with tempfile.TemporaryDirectory(prefix="parmbs-") as d:
        path = os.path.join(d, name)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        return load_config(path)
