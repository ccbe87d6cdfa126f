"""``jit.freeze`` and ``jit.optimize_for_inference``, as ``torch.jit._freeze``.

Freezing turns every parameter and buffer the graph reads into a constant of the program
(detached, no longer in ``parameters()`` or ``state_dict()``), which lets the inference passes
rewrite them: a convolution or linear layer followed by an inference batch norm becomes one
convolution or linear layer with folded weights, and inference dropout disappears."""
import inspect

from ._script import ScriptModule, RecursiveScriptModule

__all__ = ["freeze", "optimize_for_inference", "run_frozen_optimizations"]

_CONVS = {"conv1d", "conv2d", "conv3d"}


def _is_op(node, names):
    return (node.op == "call_function" and getattr(node.target, "__name__", None) in names
            and getattr(node.target, "__module__", "").startswith("ember"))


def _bound(node):
    """The node's arguments by parameter name (defaults filled in)."""
    bound = inspect.signature(node.target).bind(*node.args, **node.kwargs)
    bound.apply_defaults()
    return bound.arguments


class _Constants:
    """The frozen module's constants by name, and a way to add one as a get_attr node."""

    def __init__(self, graph, tensors):
        self.graph = graph
        self.tensors = tensors

    def value(self, arg):
        if arg is None:
            return None
        if getattr(arg, "op", None) == "get_attr" and arg.target in self.tensors:
            return self.tensors[arg.target]
        raise LookupError

    def add(self, tensor, before):
        name = f"_frozen_param{len(self.tensors)}"
        while name in self.tensors:
            name += "_"
        self.tensors[name] = tensor
        with self.graph.inserting_before(before):
            return self.graph.get_attr(name)


def _fold_batch_norms(graph, constants):
    """conv/linear → batch_norm(training=False) with constant operands: one conv/linear."""
    import ember
    for bn in list(graph.nodes):
        if not _is_op(bn, {"batch_norm"}):
            continue
        a = _bound(bn)
        producer = a["input"]
        if a["training"] or getattr(producer, "op", None) != "call_function" or \
                len(producer.users) != 1:
            continue
        is_conv = _is_op(producer, _CONVS)
        if not (is_conv or _is_op(producer, {"linear"})):
            continue
        p = _bound(producer)
        try:
            w, b = constants.value(p["weight"]), constants.value(p["bias"])
            mean, var = constants.value(a["running_mean"]), constants.value(a["running_var"])
            gamma, beta = constants.value(a["weight"]), constants.value(a["bias"])
        except LookupError:
            continue
        if mean is None or var is None:
            continue
        meta = producer.meta.get("tensor_meta")
        if not is_conv and (meta is None or len(meta.shape) != 2):
            continue  # a linear's batch norm normalises dim 1 only for 2-D outputs
        out_channels = w.shape[0]
        scale = (var + a["eps"]).rsqrt()
        if gamma is not None:
            scale = scale * gamma
        shift = -mean * scale if beta is None else beta - mean * scale
        bias = ember.zeros(out_channels, dtype=w.dtype) if b is None else b
        new_w = w * scale.reshape(out_channels, *([1] * (w.dim() - 1)))
        new_b = bias * scale + shift
        new_args = dict(p)
        new_args["weight"] = constants.add(new_w.detach(), producer)
        new_args["bias"] = constants.add(new_b.detach(), producer)
        producer.args = tuple(new_args.values())
        producer.kwargs = {}
        bn.replace_all_uses_with(producer)
        graph.erase_node(bn)


def _remove_inference_dropout(graph):
    for node in list(graph.nodes):
        if _is_op(node, {"dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
                         "feature_alpha_dropout"}):
            a = _bound(node)
            if not a.get("training", True):
                node.replace_all_uses_with(a["input"])
                graph.erase_node(node)


def _rebuild(mod, graph, tensors):
    import copy
    graph.eliminate_dead_code()
    used = {n.target for n in graph.nodes if n.op == "get_attr"}
    tensors = {k: v for k, v in tensors.items() if k in used}
    # a submodule script kept whole (its forward does not trace symbolically) is kept as it is,
    # in eval mode: its own parameters stay parameters
    leaves = {n.target: copy.deepcopy(mod.get_submodule(n.target)).eval()
              for n in graph.nodes if n.op == "call_module"}
    frozen = RecursiveScriptModule({**tensors, **leaves}, graph, type(mod).__name__,
                                   mod.original_name)
    for name in tensors:
        *prefix, field = name.split(".")
        frozen.get_submodule(".".join(prefix))._non_persistent_buffers_set.add(field)
    frozen.__dict__["_ember_constant_names"] = set(tensors)
    frozen.__dict__["_ember_frozen"] = True
    frozen.eval()
    return frozen


def run_frozen_optimizations(mod, optimize_numerics=True, preserved_methods=None):
    """The passes ``freeze`` runs: batch-norm folding (a numerics change, as in torch, hence
    ``optimize_numerics``). Returns the rewritten module."""
    if not optimize_numerics:
        return mod
    graph, tensors = _graph_and_tensors(mod)
    _fold_batch_norms(graph, _Constants(graph, tensors))
    return _rebuild(mod, graph, tensors)


def _graph_and_tensors(mod):
    import copy
    graph = copy.deepcopy(mod.graph)
    tensors = {}
    for node in graph.nodes:
        if node.op == "get_attr" and node.target not in tensors:
            value = mod
            for part in node.target.split("."):
                value = getattr(value, part)
            tensors[node.target] = value
    return graph, tensors


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    """``torch.jit.freeze``: parameters and buffers become constants of an eval-mode module."""
    from .._tensor import Tensor
    if not isinstance(mod, ScriptModule):
        raise RuntimeError("Freezing expects a ScriptModule as input. Please use torch.jit.script"
                           " or torch.jit.trace to script your 'nn.Module'.")
    if mod.training:
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. "
                           "Please call .eval() on your module before freezing.")
    if preserved_attrs:
        raise NotImplementedError("freeze: preserved_attrs is not supported in Ember (the "
                                  "frozen module keeps no attributes besides its constants)")
    graph, tensors = _graph_and_tensors(mod)
    renamed = {}
    for node in graph.nodes:
        if node.op == "get_attr":
            value = tensors[node.target]
            if not isinstance(value, Tensor):
                raise RuntimeError(f"freeze: node {node.name} reads {node.target!r}, a "
                                   f"{type(value).__name__}, which cannot be frozen")
            if node.target not in renamed:
                renamed[node.target] = f"_frozen_param{len(renamed)}"
            node.target = renamed[node.target]
    frozen_tensors = {renamed[k]: v.detach() for k, v in tensors.items()}
    constants = _Constants(graph, frozen_tensors)
    if optimize_numerics:
        _fold_batch_norms(graph, constants)
    return _rebuild(mod, graph, frozen_tensors)


def optimize_for_inference(mod, other_methods=None):
    """``torch.jit.optimize_for_inference``: ``freeze(mod.eval())`` plus inference-only
    rewrites (batch-norm folding, dropout removal)."""
    if not isinstance(mod, ScriptModule):
        raise RuntimeError("optimize_for_inference expects a ScriptModule as input. Please use "
                           "torch.jit.script or torch.jit.trace to script your 'nn.Module'.")
    if other_methods:
        raise NotImplementedError("optimize_for_inference: other_methods is not supported: "
                                  "Ember's scripted module holds forward only")
    frozen = freeze(mod.eval()) if not mod.__dict__.get("_ember_frozen") else mod
    graph, tensors = _graph_and_tensors(frozen)
    _remove_inference_dropout(graph)
    _fold_batch_norms(graph, _Constants(graph, tensors))
    return _rebuild(frozen, graph, tensors)
