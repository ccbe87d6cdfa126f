"""Constant folding: a node computed only from constants is computed once, at compile time, and
read as a constant afterwards.

Constants are the tensors the tracer baked in (``_tensor_constant*``: values computed from
nothing traced) and what earlier folds produced. A module's parameters and buffers are *not*
constants — an optimizer or ``load_state_dict`` updates them in place between calls — unless
the caller promises they are frozen (``compile_fx(..., freezing=True)``, as torch's
``torch._inductor.config.freezing``). Random and effectful nodes are never folded."""
from ..._tensor import Tensor
from ...autograd import grad_mode
from ...fx.node import Node, map_arg
from .dead_code import has_side_effect

__all__ = ["fold_constants", "is_constant_attr"]

_CONSTANT_PREFIXES = ("_tensor_constant", "_folded_constant")


def is_constant_attr(node, attrs, freezing):
    if node.op != "get_attr":
        return False
    value = attrs.get(node.target)
    if not isinstance(value, Tensor):
        return False
    if freezing:
        return True
    # A tensor the tracer baked in may still be a parameter (one a traced function closed
    # over): an optimizer updates it, so only tensors that no gradient reaches are constants.
    return node.target.startswith(_CONSTANT_PREFIXES) and not value.requires_grad and \
        not isinstance(value, _parameter_type())


def _parameter_type():
    from ...nn.parameter import Parameter
    return Parameter


def _evaluate(node, attrs):
    def value(n):
        return attrs[n.target]
    args = map_arg(node.args, value)
    kwargs = map_arg(node.kwargs, value)
    fn = getattr(Tensor, node.target) if node.op == "call_method" else node.target
    with grad_mode.no_grad():
        return fn(*args, **kwargs)


def fold_constants(graph, attrs, freezing=False):
    """Fold the constant subexpressions of ``graph``; ``attrs`` maps get_attr targets to their
    objects and receives the folded values (``_folded_constantN``)."""
    from ...fx.passes.shape_prop import _extract_tensor_metadata
    changed = False
    count = sum(k.startswith("_folded_constant") for k in attrs)
    for node in list(graph.nodes):
        if node.op not in ("call_function", "call_method") or has_side_effect(node):
            continue
        inputs = []
        map_arg((node.args, node.kwargs), inputs.append)
        if not inputs or not all(is_constant_attr(n, attrs, freezing) for n in inputs):
            continue
        if any(isinstance(a, Tensor) for a in _leaves((node.args, node.kwargs))):
            continue
        try:
            result = _evaluate(node, attrs)
        except Exception:  # noqa: BLE001 - an op that fails here fails at run time, as eager
            continue
        if not isinstance(result, Tensor):
            continue
        name = f"_folded_constant{count}"
        count += 1
        attrs[name] = result.detach()
        with graph.inserting_before(node):
            folded = graph.create_node("get_attr", name)
        folded.meta["tensor_meta"] = _extract_tensor_metadata(result)
        folded.meta["type"] = Tensor
        node.replace_all_uses_with(folded)
        graph.erase_node(node)
        changed = True
    return changed


def _leaves(a):
    out = []

    def visit(x):
        if isinstance(x, (tuple, list)):
            for i in x:
                visit(i)
        elif isinstance(x, dict):
            for i in x.values():
                visit(i)
        elif not isinstance(x, Node):
            out.append(x)
    visit(a)
    return out
