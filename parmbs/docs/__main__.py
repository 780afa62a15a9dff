"""``python -m parmbs.docs [--check]``: write the generated pages into docs/ (or, with
--check, exit 1 naming the pages that are stale and the keys that are undocumented)."""
import sys

from . import build, check
from .config_ref import undocumented


def main(argv) -> int:
    missing = undocumented()
    if missing:
        print("parmbs.docs: undocumented config keys (add a '# comment' beside the field in "
              "parmbs/config/schema*.py or an entry in parmbs/docs/descriptions.py): "
              + ", ".join(missing), file=sys.stderr)
    if "--check" in argv:
        stale = check()
        if stale:
            print("parmbs.docs: stale (run python -m parmbs.docs): " + ", ".join(stale), file=sys.stderr)
        return 1 if stale or missing else 0
    for path in build():
        print(f"wrote {path}")
    return 1 if missing else 0


sys.exit(main(sys.argv[1:]))
