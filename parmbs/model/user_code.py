"""User code named in a config (``callable = "module:function"``): loading it the same
way for every key that takes one (Python objectives, Python force elements), and one
line describing its failures.  In ``model/`` so the model layer can load user forces
without importing the sensitivity layer."""


def load_callable(spec, config_file, key):
    """The function named by ``module:function`` (see ``UserTerm``)."""
    import importlib
    import importlib.util
    import os
    from .system import ModelError
    import sys
    module, _, name = spec.partition(":")
    here = os.path.dirname(os.path.abspath(config_file)) if config_file else os.getcwd()
    path = os.path.join(here, *module.split(".")) + ".py"
    try:
        if os.path.isfile(path) and "." in module:
            # a package next to the config: import it as a package (from its parent
            # directory), so relative imports inside it work
            sys.path.insert(0, here)
            try:
                mod = importlib.import_module(module)
            finally:
                sys.path.remove(here)
        elif os.path.isfile(path):
            # a single file next to the config: loaded under a private name, so it
            # cannot shadow (or be shadowed by) an installed module of the same name
            spec_ = importlib.util.spec_from_file_location(f"parmbs_user_{module}", path)
            mod = importlib.util.module_from_spec(spec_)
            spec_.loader.exec_module(mod)
        else:
            mod = importlib.import_module(module)
    except (Exception, SystemExit) as e:        # its module-level code runs here: no traceback, no exit
        raise ModelError(key, f"cannot import {module!r} (looked for {path} and on sys.path): "
                              f"{describe_failure(e)}") from None
    fn = getattr(mod, name, None)
    if not callable(fn):
        raise ModelError(key, f"module {module!r} has no function {name!r}")
    return fn


def describe_failure(e):
    """One line for an exception from the user's code (SystemExit: its sys.exit call)."""
    if isinstance(e, SystemExit):
        return f"called sys.exit({e.code!r}); a callable must return, not exit"
    return f"{type(e).__name__}: {' '.join(str(e).split())}"
