"""Point names of flexible bodies: which ``BODY.POINT`` references a config may make.

Pure functions of the config data, so config/*checks.py can validate a reference
without importing the body kinds that resolve it (flexible/ imports them from here:
one rule for the check and for the model; tests/test_layers.py keeps config below
flexible).

* ANCF and spatial beams (``[[beams]]``, ``[[spatial.beams]]``): ``root`` (= node0),
  ``tip`` (= the last node), ``nodeK`` for K = 0 … n_el, and the configured ``points``.
* FFR beams: the same names, but a point must fall on a node (joints act at nodes):
  ``ffr_node`` gives its index, None if it does not.
* Structured meshes (plates, continua, solids): ``origin``, the configured ``points``
  (named nodes) and ``node_i_j`` (``node_i_j_k`` for a mesh with ``nz``) with each
  index up to the mesh's element count in that direction: ``mesh_node``.
"""
import re

_NODE_RE = re.compile(r"^node_([0-9]+(?:_[0-9]+)*)$")


def beam_point_names(cfg):
    """Every point name of a beam config (ANCF, FFR or spatial beam)."""
    return ["root", "tip", *(f"node{k}" for k in range(cfg.elements + 1)), *cfg.points]


def ffr_node(cfg, name):
    """Node index of a point name on an FFR beam config, None if it is not at a node."""
    nel = cfg.elements
    if name == "root":
        return 0
    if name == "tip":
        return nel
    if name.startswith("node") and name[4:].isdigit():
        k = int(name[4:])
        return k if k <= nel else None
    if name in cfg.points:
        x = cfg.points[name] * nel / cfg.length
        k = int(round(x))
        return k if abs(x - k) <= 1e-9 * max(1.0, x) else None
    return None


def mesh_point_names(cfg):
    """Named points of a structured mesh config, without the node_i_j family (which
    ``mesh_node`` resolves)."""
    return ["origin", *cfg.points]


def mesh_node(cfg, name, origin=(0, 0)):
    """(i, j) — (i, j, k) for a mesh with ``nz`` (a solid) — of a point name of a
    structured mesh (plate, continuum or solid), ``origin`` for "origin" (a plate's
    node_0_0; a continuum or solid passes its frame origin), None if unknown."""
    if name == "origin":
        return origin
    if name in cfg.points:
        return tuple(int(v) for v in cfg.points[name])
    m = _NODE_RE.match(name)
    if m:
        ijk = tuple(int(v) for v in m.group(1).split("_"))
        dims = (cfg.nx, cfg.ny) + ((cfg.nz,) if hasattr(cfg, "nz") else ())
        if len(ijk) == len(dims) and all(a <= b for a, b in zip(ijk, dims)):
            return ijk
    return None
