"""``replace_pattern``: find every occurrence of a pattern graph in a GraphModule and put a
replacement in its place, as ``torch.fx.subgraph_rewriter``."""
from typing import Dict, NamedTuple

from .graph_module import GraphModule
from .node import Node, map_arg

__all__ = ["Match", "replace_pattern"]


class Match(NamedTuple):
    anchor: Node  # the pattern node the match was found from (its returned value)
    nodes_map: Dict[Node, Node]  # pattern node -> graph node


def _as_graph_module(fn):
    if isinstance(fn, GraphModule):
        return fn
    from ._symbolic_trace import symbolic_trace
    return symbolic_trace(fn)


class _Matcher:
    """Matches a pattern backwards from its returned node: placeholders match any node (the
    same node each time they recur), other nodes by op, target and arguments."""

    def __init__(self, pattern_graph):
        self.placeholders = [n for n in pattern_graph.nodes if n.op == "placeholder"]
        output = [n for n in pattern_graph.nodes if n.op == "output"]
        if not output:
            raise ValueError("The pattern graph has no output node")
        returned = output[0].args[0]
        if not isinstance(returned, Node):
            raise NotImplementedError("replace_pattern supports patterns returning one value; "
                                      f"this one returns {returned!r}")
        self.anchor = returned
        self.body = [n for n in pattern_graph.nodes if n.op not in ("placeholder", "output")]

    def match(self, gn, taken):
        nodes_map = {}
        if not self._match_node(self.anchor, gn, nodes_map, taken):
            return None
        # The match replaces its inner nodes: none may be read from outside it.
        matched = {nodes_map[p] for p in self.body}
        for pn in self.body:
            if pn is self.anchor:
                continue
            if any(user not in matched for user in nodes_map[pn].users):
                return None
        if len({nodes_map[p] for p in self.placeholders if p in nodes_map}) != \
                len([p for p in self.placeholders if p in nodes_map]):
            return None  # two pattern inputs bound to one graph value
        return nodes_map

    def _match_node(self, pn, gn, nodes_map, taken):
        if pn in nodes_map:
            return nodes_map[pn] is gn
        if pn.op == "placeholder":
            nodes_map[pn] = gn
            return True
        if gn in taken or gn.op != pn.op or gn.target != pn.target:
            return False
        if len(gn.args) != len(pn.args) or set(gn.kwargs) != set(pn.kwargs):
            return False
        nodes_map[pn] = gn
        ok = all(self._match_arg(pa, ga, nodes_map, taken) for pa, ga in zip(pn.args, gn.args))
        ok = ok and all(self._match_arg(pn.kwargs[k], gn.kwargs[k], nodes_map, taken)
                        for k in pn.kwargs)
        if not ok:
            del nodes_map[pn]
        return ok

    def _match_arg(self, pa, ga, nodes_map, taken):
        if isinstance(pa, Node):
            return isinstance(ga, Node) and self._match_node(pa, ga, nodes_map, taken)
        if isinstance(pa, (tuple, list)):
            return type(pa) is type(ga) and len(pa) == len(ga) and \
                all(self._match_arg(a, b, nodes_map, taken) for a, b in zip(pa, ga))
        return not isinstance(ga, Node) and pa == ga


def replace_pattern(gm, pattern, replacement):
    """Replace each non-overlapping occurrence of ``pattern`` in ``gm.graph`` by
    ``replacement`` (callables or GraphModules with the same inputs); returns the matches,
    as ``torch.fx.replace_pattern``. ``gm`` is recompiled."""
    pattern_gm = _as_graph_module(pattern)
    replacement_gm = _as_graph_module(replacement)
    matcher = _Matcher(pattern_gm.graph)
    graph = gm.graph
    matches, taken = [], set()
    for gn in list(graph.nodes):
        if gn.op in ("placeholder", "output") or gn in taken:
            continue
        nodes_map = matcher.match(gn, taken)
        if nodes_map is None:
            continue
        taken.update(nodes_map[p] for p in matcher.body)
        matches.append(Match(anchor=matcher.anchor, nodes_map=nodes_map))

    rep_placeholders = [n for n in replacement_gm.graph.nodes if n.op == "placeholder"]
    if len(rep_placeholders) != len(matcher.placeholders):
        raise ValueError(f"The replacement takes {len(rep_placeholders)} inputs but the pattern "
                         f"takes {len(matcher.placeholders)}")
    order = {n: i for i, n in enumerate(graph.nodes)}
    for match in matches:
        anchor = match.nodes_map[matcher.anchor]
        val_map = {rp: match.nodes_map[pp]
                   for rp, pp in zip(rep_placeholders, matcher.placeholders)}
        # The replacement goes just before the first reader of the matched value, as in torch.
        readers = sorted(anchor.users, key=lambda n: order.get(n, len(order)))
        with graph.inserting_before(readers[0] if readers else anchor.next):
            for rn in replacement_gm.graph.nodes:
                if rn.op == "placeholder":
                    continue
                if rn.op == "output":
                    new_value = map_arg(rn.args[0], lambda n: val_map[n])
                    break
                if rn.op in ("get_attr", "call_module") and not _has_path(gm, rn.target):
                    _install(gm, rn.target, _fetch(replacement_gm, rn.target))
                val_map[rn] = graph.node_copy(rn, lambda n: val_map[n])
        if isinstance(new_value, Node):
            anchor.replace_all_uses_with(new_value)
        else:
            raise NotImplementedError("replace_pattern supports replacements returning one "
                                      f"value; this one returns {new_value!r}")
        for pn in reversed(matcher.body):
            node = match.nodes_map[pn]
            if not node.users:
                graph.erase_node(node)
    gm.recompile()
    return matches


def _fetch(mod, target):
    for atom in target.split("."):
        mod = getattr(mod, atom)
    return mod


def _has_path(mod, target):
    try:
        _fetch(mod, target)
        return True
    except AttributeError:
        return False


def _install(gm, target, value):
    from .graph_module import _set_attr
    _set_attr(gm, target, value)
