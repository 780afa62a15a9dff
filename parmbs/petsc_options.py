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

Before a set of options enters the database it is *probed* (``check_options``): PETSc
reads a bad value late and reports it without the option's name — ``ksp_type =
"bogus"`` was a traceback from KSPSetFromOptions, ``pc_factor_mat_solver_type =
"nosuch"`` an exit-1 "singular matrix" at the first solve (issue 17).  The probe sets
the options under a private prefix and has PETSc read them where a run reads them: a
KSP on a 2×2 diagonal matrix (setFromOptions and setUp, which picks the
factorization package) and a TS (setFromOptions, which also reads its SNES, line
search, KSP and PC options); on a PETSc error it finds the responsible option (the one
whose removal makes the probe pass, else the first whose addition makes it fail) and
raises ``ModelError("simulation.petsc_options.NAME", ...)``, which the CLI prints as
one line with exit 2.  Not probed: viewer and monitor options (names containing
``view``, ``monitor`` or ``log``: reading them may open files; they are checked when
the run reads them) and option names PETSc does not know (PETSc ignores those, as on
its command line).  One probe per distinct option set per process (< 10 ms).
"""
from ._petsc import PETSc

#: option name → (prefix, string value) a config of this process put into the database
_FROM_CONFIG = {}


def _text(v):
    return str(v).lower() if isinstance(v, bool) else str(v)


def _ours(opts, name):
    return name in _FROM_CONFIG and opts.hasName(name) and opts.getString(name) == _FROM_CONFIG[name][1]


#: the option sets already probed in this process (sorted (name, text) tuples)
_PROBED = set()
_PROBE_PREFIX = "parmbs_probe_"
_NOT_PROBED = ("view", "monitor", "log")


def _probe(options):
    """None if PETSc reads ``options`` (name → text) without error, else its message."""
    opts = PETSc.Options()
    pre = _PROBE_PREFIX
    for k, v in options.items():
        opts.setValue(pre + k, v)
    A = ksp = ts = None
    try:
        A = PETSc.Mat().createAIJ(((2, 2), (2, 2)), nnz=1, comm=PETSc.COMM_SELF)
        A.setValue(0, 0, 2.0)
        A.setValue(1, 1, 3.0)
        A.assemble()
        ksp = PETSc.KSP().create(PETSc.COMM_SELF)
        ksp.setOperators(A)
        ksp.setOptionsPrefix(pre)
        ksp.setFromOptions()
        ksp.setUp()
        ts = PETSc.TS().create(PETSc.COMM_SELF)
        ts.setOptionsPrefix(pre)
        ts.setFromOptions()
        return None
    except PETSc.Error as e:
        lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
        text = lines[-1] if lines else f"error code {e.ierr}"
        return text.split("] ", 1)[1] if text.startswith("[") and "] " in text else text
    finally:
        for k in options:
            opts.delValue(pre + k)
        for o in (ts, ksp, A):
            if o is not None:
                o.destroy()


def check_options(options):
    """Raise ``ModelError("simulation.petsc_options.NAME", ...)`` if PETSc rejects a
    value of ``options`` (a config's ``{name: value}``); see the module doc."""
    probe = {k: _text(v) for k, v in options.items() if not any(w in k for w in _NOT_PROBED)}
    key = tuple(sorted(probe.items()))
    if key in _PROBED:
        return
    msg = _probe(probe)
    if msg is not None:
        names = list(probe)
        bad = next((k for k in names if _probe({n: probe[n] for n in names if n != k}) is None), None)
        if bad is None:                             # several bad options: the first that fails
            bad = next((names[i] for i in range(len(names))
                        if _probe({n: probe[n] for n in names[:i + 1]}) is not None), names[-1])
        from .model.system import ModelError
        raise ModelError(f"simulation.petsc_options.{bad}", f"PETSc rejects {bad} = {probe[bad]!r}: {msg}")
    _PROBED.add(key)


def set_config_options(prefix, options):
    """Put ``options`` (a config's ``{name: value}``) under ``prefix`` into the
    database by the two rules of the module doc, after ``check_options``; returns the
    names now holding the config's values."""
    check_options(options)
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
