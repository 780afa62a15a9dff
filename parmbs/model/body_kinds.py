"""Registry of body kinds: the body sets that spatial/ and flexible/ define register here,
and ``System`` builds one of each without importing those packages (they import model/,
so model/ importing them would be a cycle; tests/test_layers.py).  MBDyn registers its
element kinds the same way (``SetUDE``), as model/component.py does components.

A body kind is a class ``K(config, P, offset)`` with ``ncoord`` (its coordinates,
numbered from ``offset``) and the methods System calls on it.  ``order`` fixes where its
coordinates go in q: System lays the kinds out by increasing order, so the layout (and
every HDF5 trajectory written with it) does not depend on import order.

Registration happens when the defining module is imported; ``import parmbs`` imports
every body-kind module (parmbs/__init__.py), so any System sees all of them.
"""

_KINDS = {}          # attribute name on System -> (order, class)


def body_kind(name, order):
    """Class decorator: register a body set as ``System.<name>``, laid out by ``order``."""
    def register(cls):
        taken = {o: n for n, (o, _) in _KINDS.items()}
        if taken.get(order, name) != name:
            raise ValueError(f"body kind {name!r}: order {order} already taken by {taken[order]!r}")
        _KINDS[name] = (order, cls)
        return cls
    return register


def body_kinds():
    """[(name, class)] of every registered body kind, by increasing order."""
    if not _KINDS:
        raise RuntimeError("no body kinds registered: import parmbs (parmbs/__init__.py loads them)")
    return [(name, cls) for name, (_, cls) in sorted(_KINDS.items(), key=lambda kv: kv[1][0])]
