"""parmbs's packages import only downward: the import graph has no cycles.

The graph: one node per subpackage of parmbs/ (config, model, …) and per top-level
module (cli, parallel, …); an edge A -> B for every ``import``/``from … import`` in A
that names B — at module level AND inside functions (a function-level import is still
a dependency; it only hides the cycle from Python).  ``parmbs/__init__.py`` is the
composition root and is not a node: it may import anything (it loads the body kinds,
see model/body_kinds.py).

Intended layer order, lowest first; a module may import only from layers below its own:

    base          _determinism (before numpy loads), errors (ModelError, StepError) and
                  _memory (glibc malloc_trim after large set-ups),
                  then _petsc (PETSc start-up), then
                  _log, agreement, faults, parallel, petsc_options (leaf helpers)
    config        TOML, schema, --set overrides, one-line errors: data, no physics
    model         components, parameters, System, assembly; registries that the layers
                  above fill (body kinds)
    spatial       a body kind: 3-D rigid bodies and their joints/forces/kernels
    flexible      body kinds: beams, plates, continua (spatial beams use spatial's kernels)
    compiled      compiled (numba) steps of small models
    io            HDF5 layout, plots, XDMF: reads a model, never runs one
    integrators   steppers: step, tangent step, adjoint step of one scheme
    checkpoint    trajectory store, schedules, restart
    formulations  index-3/penalty/… equations wired to their steppers
    sensitivity   design variables, objectives, direct/adjoint/fd/cs, verify
    optimize      MMA/TAO drivers
    api           the Python API
    cli           the command line
    docs, __main__  the generated docs (they read cli's parser); `python -m parmbs`

An import up this order closes a cycle or will let the next one close it.  KNOWN_UPWARD
lists the upward imports that exist today, each with the reason it is still there; the
list may only shrink:
* a new upward import fails ``test_imports_only_look_down`` (with every cycle it closes);
* an entry whose import is gone fails ``test_known_list_is_tight`` (delete the entry).
A lower layer that must find something from a higher one asks a registry in the lower
layer that the higher one fills (MBDyn's ``SetUDE``; parmbs's ``@register``).
"""
import ast
import collections
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent / "parmbs"

LAYERS = [
    {"_determinism", "errors", "_memory"},
    {"_petsc"},
    {"_log", "agreement", "faults", "parallel", "petsc_options"},
    {"config"},
    {"model"},
    {"spatial"},
    {"flexible"},
    {"compiled"},
    {"io"},
    {"integrators"},
    {"checkpoint"},
    {"formulations"},
    {"sensitivity"},
    {"optimize"},
    {"api"},
    {"cli"},
    {"docs", "__main__"},
]
LAYER = {name: k for k, names in enumerate(LAYERS) for name in names}

# (importer, imported): why it is still there.  May only shrink.
KNOWN_UPWARD = {}


def _node(dotted, root=ROOT):
    """'parmbs.model.system' -> 'model'; 'parmbs' itself and non-parmbs names -> None."""
    parts = dotted.split(".")
    if parts[0] != "parmbs" or len(parts) < 2:
        return None
    name = parts[1]
    if (root / name).is_dir() or (root / f"{name}.py").is_file():
        return name
    return None


def import_graph(root=ROOT):
    """{(A, B): ["path:line", …]} for every import in node A naming node B ≠ A."""
    edges = collections.defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent)
        mod = list(rel.with_suffix("").parts)
        package = mod[:-1]                       # what a relative import is relative to
        if mod[-1] == "__init__":
            mod = mod[:-1]
        me = _node(".".join(mod), root)
        if me is None:                           # parmbs/__init__.py: the composition root
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module.split(".") if node.module else []
                if node.level:
                    base = package[:len(package) - node.level + 1] + base
                # `from . import x` / `from parmbs import x`: x may be a module
                names = [".".join(base + [a.name]) for a in node.names] + [".".join(base)]
            else:
                continue
            for name in names:
                other = _node(name, root)
                if other is not None and other != me:
                    edges[(me, other)].append(f"{rel}:{node.lineno}")
    return {e: sorted(set(w)) for e, w in edges.items()}


def cycles_through(edges, a, b):
    """Every simple cycle a -> b -> … -> a of the graph (as node lists)."""
    succ = collections.defaultdict(set)
    for x, y in edges:
        succ[x].add(y)
    found = []

    def walk(path):
        for nxt in sorted(succ[path[-1]]):
            if nxt == a:
                found.append(path + [a])
            elif nxt not in path:
                walk(path + [nxt])
    walk([a, b])
    return found


def all_cycles(edges):
    """Every simple cycle of the graph, each once (started at its smallest node)."""
    out = []
    for a, b in sorted(edges):
        out += [c for c in cycles_through(edges, a, b) if min(c) == a]
    return out


EDGES = import_graph()


def test_every_node_has_a_layer():
    nodes = {n for e in EDGES for n in e}
    nodes |= {p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    nodes |= {p.stem for p in ROOT.glob("*.py") if p.stem != "__init__"}
    missing = sorted(nodes - set(LAYER))
    assert not missing, f"place these in LAYERS (tests/test_layers.py docstring too): {missing}"


def test_imports_only_look_down():
    upward = {e: w for e, w in EDGES.items() if LAYER[e[0]] <= LAYER[e[1]] and e not in KNOWN_UPWARD}
    lines = []
    for (a, b), where in sorted(upward.items()):
        lines.append(f"{a} -> {b} imports up the layer order at {', '.join(where)}")
        closed = cycles_through(EDGES, a, b)
        lines += ["    closes cycle " + " -> ".join(c) for c in closed[:10]]
        lines += [f"    … and {len(closed) - 10} longer cycles"] if len(closed) > 10 else []
    assert not lines, "\n" + "\n".join(lines)


def test_no_cycles_beyond_known():
    """The graph without the known upward edges has no cycle (listed if it has)."""
    rest = {e: w for e, w in EDGES.items() if e not in KNOWN_UPWARD}
    cycles = all_cycles(rest)
    assert not cycles, "\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_known_list_is_tight():
    stale = sorted(e for e in KNOWN_UPWARD if e not in EDGES)
    assert not stale, f"these imports are gone: delete them from KNOWN_UPWARD: {stale}"
    downward = sorted(e for e in KNOWN_UPWARD if LAYER[e[0]] > LAYER[e[1]])
    assert not downward, f"not upward imports, delete them from KNOWN_UPWARD: {downward}"


def test_checker_sees_function_level_and_relative_imports(tmp_path):
    """The scan would catch a cycle hidden in a function: a two-package toy tree."""
    pkg = tmp_path / "parmbs"
    for sub, text in {"model": "def f():\n    from ..flexible import beams\n",
                      "flexible": "from ..model.system import System\n"}.items():
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
        (pkg / sub / "x.py").write_text(text)
    (pkg / "__init__.py").write_text("from .flexible import x\n")
    edges = import_graph(pkg)
    assert set(edges) == {("model", "flexible"), ("flexible", "model")}
    assert edges[("model", "flexible")] == ["parmbs/model/x.py:2"]
    assert all_cycles(edges) == [["flexible", "model", "flexible"]]
