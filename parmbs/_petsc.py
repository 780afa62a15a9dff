"""Import petsc4py once, wherever it lives, and start PETSc with the user's options.

Debian's petsc4py is found through a .pth file that looks in ``/usr/lib/petsc`` —
a link only ``petsc-dev`` creates.  Without it (the plain runtime packages) the
module sits under ``/usr/lib/petscdir/petsc*/<arch>``; we add that to ``sys.path``
so ``parmbs`` works without asking the user to export PETSC_DIR.  A pip-built
petsc4py (cluster route) is found first and used unchanged.

PETSc starts (``PetscInitialize``) at the first use of ``PETSc`` from this module
(``from parmbs._petsc import PETSc``), not at import: argparse owns the command line,
and ``parmbs.cli`` first takes out the PETSc options written after the config
(``split_petsc_args``) and hands them over (``set_command_line``), so PETSc starts
with them as a C PETSc program would — ``-log_view`` prints its summary at
``PetscFinalize``, ``-help``, ``-info``, ``-malloc_debug`` work as documented.
PETSc also reads the ``PETSC_OPTIONS`` environment variable and ``~/.petscrc`` there.
"""
import glob
import os
import re
import sys

try:
    import petsc4py  # noqa: F401
except ImportError:  # pragma: no cover - depends on the machine
    for d in sorted(glob.glob("/usr/lib/petscdir/petsc*/*-real/lib/python3/dist-packages")):
        sys.path.append(d)
        os.environ.setdefault("PETSC_DIR", d.split("/lib/python3")[0])
        break
    import petsc4py  # noqa: F401

#: the PETSc options of the command line, given to PetscInitialize (set_command_line)
_ARGS = []

#: a PETSc option name as PETSc's PetscOptionsValidKey sees one: '-' (or '--') and a letter
_KEY = re.compile(r"--?[A-Za-z]")
#: what parmbs takes for a PETSc option on its command line: one '-', a letter, and at
#: least one more name character (so argparse's own -o / -h stay argparse's)
_PETSC_OPTION = re.compile(r"-[A-Za-z][A-Za-z0-9_]+")


def split_petsc_args(argv, own_options):
    """``(rest, petsc)``: the tokens of ``argv`` that are PETSc options, each with its
    value, and the others (for argparse).

    A PETSc option is a token like ``-log_view`` or ``-parmbs_ksp_type`` (one dash, a
    letter, more name characters) that is not one of ``own_options`` (argparse's own,
    ``-o``, ``-h``); its value is the next token unless that is itself an option name
    (PETSc's own rule, ``PetscOptionsInsertArgs``: ``-ksp_rtol -1e-3`` has a value,
    ``-ksp_monitor -o x`` has none).  So ``-options_left`` is PETSc's, where argparse
    alone would read ``-o ptions_left``."""
    rest, petsc = [], []
    i = 0
    while i < len(argv):
        tok = argv[i]
        if _PETSC_OPTION.fullmatch(tok) and tok not in own_options:
            petsc.append(tok)
            if i + 1 < len(argv) and not _KEY.match(argv[i + 1]):
                petsc.append(argv[i + 1])
                i += 1
        else:
            rest.append(tok)
        i += 1
    return rest, petsc


def parse_petsc_args(tokens):
    """``[(name, value or None)]`` of a PETSc command line (``-name [value] ...``), by
    PETSc's rule: a value is the next token unless that is an option name; a lone
    value is ignored, as PETSc does."""
    out = []
    for i, tok in enumerate(tokens):
        if tok.startswith("-") and len(tok) > 1 and tok.lstrip("-")[:1].isalpha():
            nxt = tokens[i + 1] if i + 1 < len(tokens) else None
            val = None if nxt is None or (nxt.startswith("-") and nxt.lstrip("-")[:1].isalpha()) else nxt
            out.append((tok.lstrip("-"), val))
    return out


def blame(message, sources):
    """``(source, -name value)`` of the option whose value ``message`` (PETSc's, from a
    failed start) quotes, else None; ``sources``: ``[(source, tokens)]``."""
    for source, tokens in reversed(sources):           # (the command line wins)
        for name, value in parse_petsc_args(tokens):
            if value is not None and value in message.split():
                return source, f"-{name} {value}"
    return None


def started():
    """True once PETSc runs (here or by an earlier ``from petsc4py import PETSc``)."""
    return bool(petsc4py.__dict__.get("_parmbs_init")) or "petsc4py.PETSc" in sys.modules


def set_command_line(petsc_args):
    """Give ``petsc_args`` to PetscInitialize; False if PETSc already runs (a second
    command in one process: the caller puts them into the options database)."""
    if started():
        return False
    _ARGS[:] = list(petsc_args)
    return True


class StartError(Exception):
    """PetscInitialize refused the options (``-malloc_debug bogus``): PETSc's message."""


def _start():
    if not petsc4py.__dict__.get("_parmbs_init"):
        prog = sys.argv[0] if sys.argv and sys.argv[0] and not sys.argv[0].startswith("-") else "parmbs"
        # PETSc prints its error block to stderr before petsc4py raises: hold stderr
        # back, give it out unchanged if PETSc starts, else keep only PETSc's message
        import tempfile
        sys.stderr.flush()
        saved = os.dup(2)
        failed = None
        with tempfile.TemporaryFile() as held:
            os.dup2(held.fileno(), 2)
            try:
                petsc4py.init([prog] + _ARGS)      # (python -c: argv[0] '-c' is no option)
            except Exception as e:  # noqa: BLE001 - petsc4py.PETSc.Error, not importable yet
                failed = e
            finally:
                os.dup2(saved, 2)
                os.close(saved)
            held.seek(0)
            text = held.read().decode(errors="replace")
        if failed is None:
            if text:
                sys.stderr.write(text)
                sys.stderr.flush()
        else:
            lines = [ln.split("PETSC ERROR: ", 1)[1].strip() for ln in text.splitlines() if "PETSC ERROR: " in ln]
            msg = next((ln for ln in lines[2:3] if ln), None) or (lines[1] if len(lines) > 1 else str(failed))
            raise StartError(msg)
        petsc4py._parmbs_init = True
    from petsc4py import PETSc
    globals().update(PETSc=PETSc, PETSC_VERSION=PETSc.Sys.getVersion())
    # PETSc loads MUMPS, SuperLU_dist and libgomp: if they were loaded before ``import
    # parmbs`` pinned the thread variables, cap their pools now (parmbs/_determinism.py)
    from ._determinism import limit_loaded_pools
    limit_loaded_pools()


def __getattr__(name):
    """``PETSc`` and ``PETSC_VERSION`` start PETSc at their first use (PEP 562)."""
    if name in ("PETSc", "PETSC_VERSION"):
        _start()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["PETSc", "PETSC_VERSION", "StartError", "blame", "parse_petsc_args", "split_petsc_args", "set_command_line", "started"]
