"""Common-subexpression elimination: two nodes calling the same target on the same arguments
compute the same value, so the later one is replaced by the earlier. Nodes with effects or
random draws are never merged (two dropouts draw two masks)."""
from ..._tensor import Tensor
from ...fx.node import Node
from .dead_code import has_side_effect

__all__ = ["eliminate_common_subexpressions"]


def _key(x):
    """A hashable form of an argument; None when it has none (the node is then left alone)."""
    if isinstance(x, Node):
        return ("node", id(x))
    if isinstance(x, Tensor):
        return ("tensor", id(x))
    if isinstance(x, (tuple, list)):
        items = tuple(_key(i) for i in x)
        return None if any(i is None for i in items) else (type(x).__name__, items)
    if isinstance(x, dict):
        items = tuple((k, _key(v)) for k, v in sorted(x.items()))
        return None if any(v is None for _, v in items) else ("dict", items)
    if isinstance(x, slice):
        return ("slice", _key(x.start), _key(x.stop), _key(x.step))
    try:
        hash(x)
    except TypeError:
        return None
    # A float and an int that compare equal (1 == 1.0) are different arguments to an op.
    return (type(x).__name__, x)


def eliminate_common_subexpressions(graph):
    seen = {}
    changed = False
    for node in list(graph.nodes):
        if node.op not in ("call_function", "call_method", "get_attr") or has_side_effect(node):
            continue
        key = _key((node.args, node.kwargs))
        if key is None:
            continue
        try:
            key = (node.op, node.target, key)
            hash(key)
        except TypeError:
            continue
        earlier = seen.get(key)
        if earlier is None:
            seen[key] = node
            continue
        node.replace_all_uses_with(earlier)
        graph.erase_node(node)
        changed = True
    return changed
