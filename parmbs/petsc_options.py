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
import functools
import re

from ._petsc import PETSc, parse_petsc_args

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


def _probe(options, ts_solver=""):
    """None if PETSc reads ``options`` (name → text) without error, else its message.
    ``ts_solver``: the probe TS's Newton solver reads ``ts_solver + name`` (``"ts_"``
    for options relative to ``parmbs_``, as ``integrators/ts.py`` sets its prefixes)."""
    opts = PETSc.Options()
    pre = _PROBE_PREFIX
    for k, v in options.items():
        opts.setValue(pre + k, v)
    A = ksp = ts = tao = None
    helping = opts.getAll().get("help", False)      # (-help: the probe's objects print none)
    if helping is not False:
        opts.delValue("help")
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
        ts.getSNES().setOptionsPrefix(pre + ts_solver)
        ts.setFromOptions()
        tao = PETSc.TAO().create(PETSc.COMM_SELF)        # (optimize: -parmbs_opt_tao_*)
        tao.setOptionsPrefix(pre)
        tao.setFromOptions()
        return None
    except PETSc.Error as e:
        lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
        text = lines[-1] if lines else f"error code {e.ierr}"
        return text.split("] ", 1)[1] if text.startswith("[") and "] " in text else text
    finally:
        if helping is not False:
            opts.setValue("help", helping)
        for k in options:
            opts.delValue(pre + k)
        for o in (tao, ts, ksp, A):
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
        from .errors import ModelError
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


# ----------------------------------------------------------------------------- the user's options
#
# PETSc options on parmbs's command line (after the config) and in PETSC_OPTIONS.  PETSc
# starts with them (parmbs/_petsc.py); ``UserOptions`` then
#
# * checks their values before the run, with the probe above (a bad one: one line naming
#   option and source, exit 2 — before, a traceback from setFromOptions, exit 1);
# * lets an unprefixed solver option reach parmbs's solvers: parmbs has no unprefixed
#   solver, every solver reads its own prefix (PREFIXES), so ``-ksp_monitor`` was silently
#   ignored.  The rule: an unprefixed option of a solver kind (ROUTED: ksp_, pc_, snes_,
#   ts_, tao_, mat_, ...) applies to every parmbs solver, as if given under each prefix
#   (``-ksp_type gmres`` is ``-parmbs_ksp_type gmres``, ``-parmbs_init_ksp_type gmres``,
#   ...), except where the same option is given under that solver's prefix.  The copies
#   count as the user's (they win over ``simulation.petsc_options``);
# * at the end names the options nothing read, in one warning line (PETSc's
#   ``-options_left`` prints a page and would list the copies no solver of this run read).

#: every options prefix of a parmbs solver (tests/test_petsc_cli.py checks this list against
#: the setOptionsPrefix / options_prefix= of the source).  ``parmbs_`` is also the TS's own
#: prefix (its options -parmbs_ts_<name>), ``parmbs_ts_`` the TS's Newton solver's.
PREFIXES = ("parmbs_", "parmbs_ts_", "parmbs_init_", "parmbs_maggi_", "parmbs_schur_",
            "parmbs_schur0_", "parmbs_tsinit_", "parmbs_tsaux_", "parmbs_opt_", "parmbs_ggl_proj_",
            "parmbs_modal_")
#: unprefixed options of these kinds reach every parmbs solver
ROUTED = ("ksp_", "pc_", "snes_", "ts_", "tao_", "mat_", "sub_", "redundant_")
#: options PETSc reads only in PetscFinalize, after parmbs looks (never "unused")
AT_FINALIZE = ("options_left", "options_view")
#: the solver parmbs builds when a config says nothing else (config/schema.py): a probe of
#: the user's options runs on top of it (pc_factor_mat_solver_type mumps is fine for LU,
#: an error for PETSc's default ILU)
BASE = {"ksp_type": "preonly", "pc_type": "lu"}


class OptionError(Exception):
    """A PETSc option the user gave that PETSc rejects."""

    def __init__(self, source, name, message):
        self.source, self.name, self.message = source, name, message
        super().__init__(f"{source}: -{name}: {message}")


@functools.lru_cache(maxsize=None)
def _libpetsc():
    """PETSc's C library (through petsc4py's extension module, which links it), for
    ``PetscOptionsUsed``, which petsc4py does not wrap."""
    import ctypes
    lib = ctypes.CDLL(PETSc.__file__)
    lib.PetscOptionsUsed.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]
    return lib


#: PETSc's trajectory types (3.18 through 3.26)
TRAJECTORY_TYPES = ("memory", "basic", "singlefile", "visualization")


def set_trajectory_type(ts, kind):
    """``TSTrajectorySetType`` on ``ts``'s trajectory (after setSaveTrajectory), which
    petsc4py 3.18 does not wrap; the unprefixed -ts_trajectory_type still overrides it
    in setFromOptions."""
    import ctypes
    if kind not in TRAJECTORY_TYPES:
        from .errors import ModelError
        raise ModelError("-parmbs_ts_trajectory_type", f"PETSc rejects {kind!r}: not one of "
                         f"{', '.join(TRAJECTORY_TYPES)}")
    lib = _libpetsc()
    tj = ctypes.c_void_p()
    if (lib.TSGetTrajectory(ctypes.c_void_p(ts.handle), ctypes.byref(tj)) != 0 or not tj.value
            or lib.TSTrajectorySetType(tj, ctypes.c_void_p(ts.handle), kind.encode()) != 0):
        raise RuntimeError(f"TSTrajectorySetType({kind!r}) failed")


def adapt_type(ts, kind=None):
    """The type of ``ts``'s TSAdapt ("none", "basic", ...), set to ``kind`` first if
    given (TSGetAdapt/TSAdaptSetType/TSAdaptGetType, which petsc4py 3.18 does not wrap).
    Set before ``ts.setFromOptions()``, -parmbs_ts_adapt_type still overrides it."""
    import ctypes
    lib = _libpetsc()
    ad = ctypes.c_void_p()
    if lib.TSGetAdapt(ctypes.c_void_p(ts.handle), ctypes.byref(ad)) != 0 or not ad.value:
        raise RuntimeError("TSGetAdapt failed")
    if kind is not None and lib.TSAdaptSetType(ad, kind.encode()) != 0:
        raise RuntimeError(f"TSAdaptSetType({kind!r}) failed")
    name = ctypes.c_char_p()
    if lib.TSAdaptGetType(ad, ctypes.byref(name)) != 0:
        raise RuntimeError("TSAdaptGetType failed")
    return (name.value or b"").decode()


def used(name):
    """Has PETSc looked up option ``name`` (no dash) since it was set?"""
    import ctypes
    flag = ctypes.c_int(0)
    if _libpetsc().PetscOptionsUsed(None, name.encode(), ctypes.byref(flag)) != 0:
        return True                       # (cannot tell: do not warn)
    return bool(flag.value)


def _prefix_of(name):
    """The parmbs prefix ``name`` is under ('' for none); ``parmbs_ts_`` counts as
    ``parmbs_`` + the TS's ``ts_`` (see _probe's ts_solver)."""
    hits = [p for p in PREFIXES if p != "parmbs_ts_" and name.startswith(p)]
    return max(hits, key=len) if hits else ""


def _find_bad(user, base, ts_solver=""):
    """None if PETSc reads ``base`` + ``user`` (name → text) without error, else (the
    name in ``user`` responsible, PETSc's message): the one option whose value PETSc's
    message quotes ("Unable to find requested KSP type bogus"), else the first whose
    addition, in the order given, makes the probe fail.  (Not "the one whose removal
    makes it pass": ``-ksp_type gmres -ksp_rtol abc`` passes without ksp_type, because
    preonly reads no tolerance.)"""
    def probe(names):
        return _probe({**base, **{n: user[n] for n in names}}, ts_solver)
    names = list(user)
    msg = probe(names)
    if msg is None:
        return None
    words = set(re.findall(r"[^\s,;:'\"()]+", msg))
    quoted = [k for k in names if user[k] and user[k] in words]
    if len(quoted) == 1:
        return quoted[0], msg
    for i in range(len(names)):
        m = probe(names[:i + 1])
        if m is not None:
            return names[i], m
    return names[-1], msg


class UserOptions:
    """The PETSc options of one parmbs command: ``argv`` (the command line's PETSc
    options) and ``env`` (the text of PETSC_OPTIONS); the command line wins, as in
    PETSc.  See the section comment above."""

    def __init__(self, argv, env=""):
        import shlex
        try:
            env_tokens = shlex.split(env or "")
        except ValueError:
            env_tokens = (env or "").split()
        self.given = {}                     # lower-case name -> (name, value, source)
        for tokens, source in ((env_tokens, "PETSC_OPTIONS"), (list(argv), "command line")):
            for name, value in parse_petsc_args(tokens):
                self.given[name.lower()] = (name, value, source)
        self._argv = parse_petsc_args(list(argv))
        self.copies = {}                    # unprefixed name -> the names it was copied to
        self.inserted = []                  # names put into a running PETSc's database

    def start(self, at_init):
        """Check the values, then (PETSc already running: ``at_init`` False) insert the
        command line's options, then copy the unprefixed solver options under every
        prefix.  Raises OptionError."""
        self.check()
        opts = PETSc.Options()
        if not at_init:                     # a second command in one process
            for name, value in self._argv:
                opts.setValue(name, value)
                _FROM_CONFIG.pop(name, None)
                self.inserted.append(name)
            if any(n.lower().startswith(("log_view", "log_summary", "log_all")) for n, _ in self._argv):
                PETSc.Log.begin()           # (PetscInitialize does this for -log_view)
        self.route()

    def check(self):
        """Probe the solver options by prefix group; OptionError for a rejected value."""
        groups = {}
        for key, (name, value, source) in self.given.items():
            pre = _prefix_of(key)
            rest = key[len(pre):]
            if (pre or rest.startswith(ROUTED)) and not any(w in rest for w in _NOT_PROBED):
                groups.setdefault(pre, {})[rest] = "" if value is None else value
        for pre, user in groups.items():
            base, ts_solver = dict(BASE), ""
            if pre == "parmbs_":            # the TS's Newton solver reads parmbs_ts_<name>
                base.update({"ts_" + k: v for k, v in BASE.items()})
                ts_solver = "ts_"
            found = _find_bad(user, base, ts_solver)
            if found:
                rest, msg = found
                name, value, source = self.given[pre + rest]
                what = f"{value!r}" if value is not None else "it"
                raise OptionError(source, name, f"PETSc rejects {what}: {msg}")

    def route(self):
        """Copy each unprefixed solver option under every parmbs prefix where the user
        did not give that option (the rule in the section comment)."""
        opts = PETSc.Options()
        have = {k.lower() for k in opts.getAll()} - {k.lower() for k in _FROM_CONFIG}
        for key, (name, value, source) in self.given.items():
            if _prefix_of(key) or not key.startswith(ROUTED):
                continue
            for pre in PREFIXES:
                full = pre + key
                if full in self.given or (full in have and full not in self.copies.get(key, ())):
                    continue                # given under that prefix: it wins
                opts.setValue(full, value)
                _FROM_CONFIG.pop(full, None)
                self.copies.setdefault(key, []).append(full)

    def unused(self):
        """The options nothing read, ``-name (source)``, in the order given."""
        out = []
        for key, (name, value, source) in self.given.items():
            if key in AT_FINALIZE:
                continue
            if not (used(key) or any(used(c) for c in self.copies.get(key, ()))):
                out.append(f"-{name} ({source})")
        return out

    def finish(self, report=True):
        """The warning line for options nothing read (None if all were read, or
        ``report`` is False); then remove the copies (so PETSc's own -options_left does
        not list copies for solvers this run did not have) and, for a second command
        in one process, the options this one inserted (-log_view stays for
        PetscFinalize)."""
        line = None
        if report:
            left = self.unused()
            if left:
                line = ("parmbs: warning: PETSc options that nothing read (misspelt, or for a "
                        f"solver this run does not have): {', '.join(left)}")
        opts = PETSc.Options()
        for key, copies in self.copies.items():
            if any(used(c) for c in copies):
                opts.hasName(key)           # (marks the unprefixed original read)
            for c in copies:
                opts.delValue(c)
        self.copies = {}
        for name in self.inserted:
            if not name.lower().startswith("log"):
                opts.delValue(name)
        self.inserted = []
        return line
