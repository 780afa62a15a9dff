"""Body kinds reach System through model/body_kinds.py's registry, filled when each
kind's module is imported; ``import parmbs`` imports them all (parmbs/__init__.py).

Registration order is the risk: a registry filled at import time must be full before
the first System is built.  So each shipped config that uses a kind is loaded in a fresh
interpreter that imports only ``parmbs.config`` and ``parmbs.model.system`` — nothing
from spatial/ or flexible/ by hand — and must build that kind's bodies.  The layout
order of the kinds (which fixes q, hence every HDF5 trajectory) is pinned too.
"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# kind (System attribute) -> a shipped config with at least one body of that kind
CONFIGS = {
    "beams": "flexible-pendulum.toml",
    "ffr": "slider-crank-flex.toml",
    "plates": "plate-pendulum.toml",
    "continua": "topopt-crank.toml",
    "spatial": "heavy-top.toml",
    "spatial_beams": "spatial-flexible-pendulum.toml",
    "natural": "spatial-flexible-pendulum.toml",
    "solids": "spatial-crank.toml",
}

SCRIPT = """
import json, sys
from parmbs.config import load_config
from parmbs.model.body_kinds import body_kinds
from parmbs.model.system import System
counts = {}
for kind, path in json.loads(sys.argv[1]).items():
    counts[kind] = len(getattr(System(load_config(path)), kind))
print(json.dumps({"order": [name for name, _ in body_kinds()], "counts": counts}))
"""


def test_every_kind_loads_in_a_fresh_process():
    paths = {k: os.path.join(ROOT, "configs", c) for k, c in CONFIGS.items()}
    env = {**os.environ, "PYTHONPATH": ROOT}
    r = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(paths)], env=env, cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    # the layout order of before the registry (model/system.py built them in this order)
    assert out["order"] == ["beams", "ffr", "plates", "continua", "spatial", "spatial_beams", "natural",
                            "solids"]
    empty = [k for k, n in out["counts"].items() if n < 1]
    assert not empty, f"configs built no bodies of kind {empty}: {out['counts']}"


def test_an_order_is_taken_once():
    from parmbs.model.body_kinds import body_kind
    import pytest
    with pytest.raises(ValueError, match="order 10 already taken by 'beams'"):
        body_kind("other", order=10)(type("Other", (), {}))
