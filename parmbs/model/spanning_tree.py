"""The spanning tree of a joint graph and the checked list of cut joints: shared by the
planar (formulations/relative.py) and spatial (spatial/relative_tree.py) relative-
coordinate trees of ``formulation = "matrix-r"``."""
from .system import ModelError


def checked_cut(system, joints, cut, key):
    """(the cut list or None, {constraint element name: (group, element)}): every listed
    name must be a joint of ``joints`` (else ModelError on ``key``)."""
    cut = None if cut is None else list(cut)
    for name in cut or []:
        if name not in joints:
            raise ModelError(key, f"no joint {name!r} in the model (joints: {', '.join(joints) or 'none'})")
    where = {}
    for g in system.constraints:
        for e, name in enumerate(g.names):
            where[name] = (g, e)
    return cut, where


def breadth_first(adj, root, seen, parent, order):
    """Grow the spanning tree from ``root`` over ``adj`` ({node: [(joint, other)]}):
    parent[b] = (joint, parent node), bodies appended to ``order`` as reached."""
    queue = [root]
    while queue:
        node = queue.pop(0)
        for j, other in adj[node]:
            if other not in seen:
                seen.add(other)
                parent[other] = (j, node)
                order.append(other)
                queue.append(other)
