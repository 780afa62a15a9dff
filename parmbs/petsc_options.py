"""A config's ``simulation.petsc_options`` in PETSc's process-global options database.

PETSc reads solver options from one database per process, and reads some of them late
(MUMPS and redundant sub-solver options at the first factorization), so a config's
options have to stay in the database while its solvers live.  Two rules:

* an option the user gave (command line, ``PETSC_OPTIONS``, or set by a script) wins
  over the config — the config only fills names that are absent;
* an option an earlier config of this process put there is *replaced* by the next
  config's value (or removed when the next config does not have it).  Without this the
  first Problem of a process fixed the options of every later one under the same prefix
  (an optimization or a test that builds two Problems with different
  ``petsc_options`` silently ran the second with the first one's solver).

An entry counts as the config's only while the database still holds the value the
config put there: a script that overwrites it afterwards owns it from then on.
"""
from ._petsc import PETSc

#: option name → (prefix, string value) a config of this process put into the database
_FROM_CONFIG = {}


def _text(v):
    return str(v).lower() if isinstance(v, bool) else str(v)


def _ours(opts, name):
    return name in _FROM_CONFIG and opts.hasName(name) and opts.getString(name) == _FROM_CONFIG[name][1]


def set_config_options(prefix, options):
    """Put ``options`` (a config's ``{name: value}``) under ``prefix`` into the
    database by the two rules of the module doc; returns the names now holding the
    config's values."""
    opts = PETSc.Options()
    for name in [n for n, (pre, _) in _FROM_CONFIG.items() if pre == prefix]:
        if not _ours(opts, name):
            del _FROM_CONFIG[name]                       # the user took it over (or removed it)
        elif name[len(prefix):] not in options:
            opts.delValue(name)                          # an earlier config's, not in this one
            del _FROM_CONFIG[name]
    held = []
    for k, v in options.items():
        name = prefix + k
        if opts.hasName(name) and name not in _FROM_CONFIG:
            continue                                     # the user's: it wins
        opts.setValue(name, _text(v))
        _FROM_CONFIG[name] = (prefix, _text(v))
        held.append(name)
    return held
