"""``add_graph``: a model's trace as TensorBoard's ``GraphDef``.

The trace is ``make_fx``'s (what ``ember.jit.trace`` records): one node per Ember op that ran,
each with the shape and dtype it produced. While tracing, a global forward pre/post hook
keeps the stack of modules being run, and every graph node made inside a module gets that
module's scope as its name prefix (``Net/Linear[fc1]/linear``), which TensorBoard draws as
collapsible groups, as it draws torch's ``Net/Linear[fc1]/...`` scopes."""
__all__ = ["graph_def"]


def _scoped_trace(model, args):
    from ...fx.experimental import proxy_tensor
    from ...jit._trace import _capture
    from ...nn.modules.module import (register_module_forward_hook,
                                      register_module_forward_pre_hook)
    names = {id(m): n for n, m in model.named_modules()}
    stack = [type(model).__name__]
    scopes = []  # (number of graph nodes made so far, scope in force from then on)

    def nodes_so_far():
        tracer = getattr(proxy_tensor._state, "tracer", None)
        return len(tracer.graph.nodes) if tracer is not None else 0

    def enter(module, inputs):
        name = names.get(id(module))
        if name:  # the root is the first scope already; unnamed modules are not scopes
            stack.append(f"{type(module).__name__}[{name.rsplit('.', 1)[-1]}]")
            scopes.append((nodes_so_far(), "/".join(stack)))

    def leave(module, inputs, output):
        if names.get(id(module)):
            stack.pop()
            scopes.append((nodes_so_far(), "/".join(stack)))

    handles = [register_module_forward_pre_hook(enter),
               register_module_forward_hook(leave, always_call=True)]
    try:
        gm, _ = _capture(model, tuple(args))
    finally:
        for h in handles:
            h.remove()
    root_scope = type(model).__name__
    scope_of, k, current = {}, 0, root_scope
    for i, node in enumerate(gm.graph.nodes):
        while k < len(scopes) and scopes[k][0] <= i:
            current = scopes[k][1]
            k += 1
        scope_of[node] = current
    return gm, scope_of


def _shape_attr(meta, attr_value_pb2, tensor_shape_pb2):
    # TensorMetadata is itself a namedtuple: a list of them is told apart by its items
    metas = (meta,) if hasattr(meta, "shape") else meta
    shapes = [tensor_shape_pb2.TensorShapeProto(
        dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=int(s)) for s in m.shape])
        for m in metas if m is not None]
    return attr_value_pb2.AttrValue(list=attr_value_pb2.AttrValue.ListValue(shape=shapes))


def graph_def(model, input_to_model, protos):
    """The ``GraphDef`` of ``model`` run on ``input_to_model`` (a tensor or a tuple/list)."""
    from ..._tensor import Tensor
    graph_pb2, node_def_pb2, attr_value_pb2, tensor_shape_pb2, versions_pb2 = protos
    if input_to_model is None:
        raise ValueError("add_graph needs input_to_model: Ember traces the model by running it")
    args = (input_to_model,) if isinstance(input_to_model, Tensor) else tuple(input_to_model)
    gm, scope_of = _scoped_trace(model, args)
    root = type(model).__name__
    name_of, nodes = {}, []
    for node in gm.graph.nodes:
        meta = node.meta.get("tensor_meta")
        if node.op == "placeholder":
            name, op = f"input/{node.name}", "IO Node"
        elif node.op == "output":
            name, op = "output/output.1", "IO Node"
        elif node.op == "get_attr":
            *path, leaf = str(node.target).split(".")
            name, op = f"{scope_of[node]}/{leaf}", "prim::GetAttr"
            if path:  # a parameter lives in its module's scope, whoever reads it
                mods = dict(model.named_modules())
                parts, prefix = [root], []
                for p in path:
                    prefix.append(p)
                    parts.append(f"{type(mods['.'.join(prefix)]).__name__}[{p}]")
                name = "/".join(parts + [leaf])
        else:
            target = node.target if isinstance(node.target, str) else \
                getattr(node.target, "__name__", str(node.target))
            name, op = f"{scope_of[node]}/{node.name}", f"ember::{target}"
        name_of[node] = name
        inputs = [name_of[a] for a in node.all_input_nodes if a in name_of]
        attr = {"attr": attr_value_pb2.AttrValue(s=_describe(node).encode())}
        if meta is not None:
            attr["_output_shapes"] = _shape_attr(meta, attr_value_pb2, tensor_shape_pb2)
            first = meta if hasattr(meta, "shape") else meta[0]
            if first is not None:
                attr["dtype"] = attr_value_pb2.AttrValue(s=str(first.dtype).encode())
        elif node.op == "output":
            out_metas = [a.meta.get("tensor_meta") for a in node.all_input_nodes]
            attr["_output_shapes"] = _shape_attr([m for m in out_metas if m is not None],
                                                 attr_value_pb2, tensor_shape_pb2)
        nodes.append(node_def_pb2.NodeDef(name=name, op=op, input=inputs,
                                          device="/device:CPU:0", attr=attr))
    return graph_pb2.GraphDef(node=nodes, versions=versions_pb2.VersionDef(producer=22))


def _describe(node):
    """The node's non-tensor arguments, shown in TensorBoard's node panel."""
    from ...fx.node import Node
    consts = [repr(a) for a in node.args if not isinstance(a, Node)]
    consts += [f"{k}={v!r}" for k, v in node.kwargs.items() if not isinstance(v, Node)]
    return "{" + ", ".join(consts) + "}"
