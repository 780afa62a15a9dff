"""The reference docs in docs/, generated: ``python -m parmbs.docs`` (or ``make docs``).

Generated pages (never edit them; change the schema, its comments, descriptions.py,
the parser or refs.py and rebuild):

    docs/config.md       every config key (config_ref.py, from the pydantic schema)
    docs/cli.md          every command and option (cli_ref.py, from argparse)
    docs/references.md   the papers cited (refs.py)

Written by hand, checked by tests/test_docs.py against what parmbs really does:
docs/output.md (HDF5 and JSON layouts), docs/tutorial.md (its TOML runs), docs/python.md.

``check()`` returns the pages that differ from a fresh build; the test fails on any.
"""
from __future__ import annotations

import os

DOCS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "docs")


def pages() -> dict[str, str]:
    """{file name in docs/: text} of every generated page."""
    from . import cli_ref, config_ref, refs
    return {"config.md": config_ref.render() + "\n",
            "cli.md": cli_ref.render() + "\n",
            "references.md": refs.render() + "\n"}


def build(where: str = DOCS) -> list[str]:
    """Write the generated pages into ``where``; return the files written."""
    os.makedirs(where, exist_ok=True)
    written = []
    for name, text in pages().items():
        path = os.path.join(where, name)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
        written.append(path)
    return written


def check(where: str = DOCS) -> list[str]:
    """Names of the generated pages missing from ``where`` or differing from a fresh build."""
    stale = []
    for name, text in pages().items():
        try:
            with open(os.path.join(where, name), encoding="utf-8") as fh:
                if fh.read() == text:
                    continue
        except FileNotFoundError:
            pass
        stale.append(name)
    return stale
