"""``python -m parmbs ...`` — same as the ``parmbs`` command."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
