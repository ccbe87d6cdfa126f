"""AOT autograd: a captured graph trained through its own forward and backward, as one autograd
node (torch's ``torch._functorch.aot_autograd``).

``aot_compile_training(graph, ...)`` decides which values need gradients (those computed from
an input or parameter that requires grad), generates the forward over arrays — keeping only the
arrays the backward reads — and the backward (``ember/_inductor/derivatives.py``), and wraps the
pair in one ``ember.autograd.Function``. Calling the result records one node for the whole
graph; ``loss.backward()`` runs the generated backward once and the engine hands each parameter
its gradient, accumulated into ``.grad`` exactly as for an eager graph."""
from .._tensor import Tensor
from ..autograd.function import Function
from ..fx.node import Node, map_arg
from .._inductor.memory_planning import release_dead_locals

__all__ = ["aot_compile_training", "TrainingGraph", "differentiable_nodes"]

_SECOND_BACKWARD = ("Trying to backward through the graph a second time (or directly access "
                    "saved tensors after they have already been freed). Saved intermediate "
                    "values of the graph are freed when you call .backward() or autograd.grad()."
                    " Specify retain_graph=True if you need to backward through the graph a "
                    "second time or if you need to access saved tensors after calling backward.")


EAGER = "eager"


def _is_float(meta):
    if hasattr(meta, "dtype"):
        return meta.dtype.is_floating_point or meta.dtype.is_complex
    if isinstance(meta, (tuple, list)):
        return any(_is_float(m) for m in meta)
    return False


def differentiable_nodes(graph, attrs, example_inputs):
    """The nodes whose value depends on a tensor that requires grad (with a float value)."""
    requires = set()
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    for ph, value in zip(placeholders, example_inputs):
        if isinstance(value, Tensor) and value.requires_grad:
            requires.add(ph)
    for n in graph.nodes:
        if n.op == "get_attr":
            value = attrs.get(n.target)
            if isinstance(value, Tensor) and value.requires_grad:
                requires.add(n)
        elif n.op in ("call_function", "call_method"):
            reads = []
            map_arg((n.args, n.kwargs), reads.append)
            if any(r in requires for r in reads) and _is_float(n.meta.get("tensor_meta")):
                requires.add(n)
    return requires


def _flatten(x, leaves):
    """The output structure with each Node replaced by its index among ``leaves``."""
    if isinstance(x, Node):
        leaves.append(x)
        return ("leaf", len(leaves) - 1)
    if isinstance(x, (tuple, list)) and not hasattr(x, "_fields"):
        return (type(x), [_flatten(i, leaves) for i in x])
    if isinstance(x, dict):
        return (dict, {k: _flatten(v, leaves) for k, v in x.items()})
    return ("const", x)


def _rebuild(template, flat):
    kind, body = template
    if kind == "leaf":
        return flat[body]
    if kind == "const":
        return body
    if kind is dict:
        return {k: _rebuild(v, flat) for k, v in body.items()}
    items = [_rebuild(i, flat) for i in body]
    return items if kind is list else tuple(items)


class TrainingGraph:
    """The compiled training callable: ``forward_source``/``backward_source`` are the generated
    pair; calling it applies the graph's one autograd Function."""

    def __init__(self, function, params, template, forward_source, backward_source, lowering):
        self.function = function
        self.params = params
        self.template = template
        self.forward_source = forward_source
        self.backward_source = backward_source
        self.buffer_plan = lowering.buffer_plan
        self._thread_buffers = lowering.thread_buffers

    @property
    def buffers(self):
        """The calling thread's planned buffers of the forward."""
        return self._thread_buffers()

    @property
    def source(self):
        return self.forward_source + "\n" + self.backward_source

    def __call__(self, *args):
        flat = self.function.apply(*args, *self.params)
        if not isinstance(flat, tuple):
            flat = (flat,)
        return _rebuild(self.template, flat)


def aot_compile_training(graph, attrs, like, example_inputs, *, plan=True):
    """The ``TrainingGraph`` of ``graph`` (already through its passes); None when no output
    depends on anything that requires grad; ``EAGER`` when a gradient path crosses a value the
    generated code cannot differentiate (the graph then runs as captured, under eager
    autograd)."""
    from .._inductor.codegen import GraphLowering
    from .._inductor.derivatives import BackwardGenerator, has_vjp
    from ..autograd import grad as autograd_grad
    requires = differentiable_nodes(graph, attrs, example_inputs)
    output = next(n for n in graph.nodes if n.op == "output")
    leaves = []
    template = _flatten(output.args[0], leaves)
    if not any(o in requires for o in leaves):
        return None
    lowering = GraphLowering(graph, attrs, like, example_inputs=example_inputs, plan=plan,
                             training_nodes=requires, has_vjp=has_vjp)
    if not lowering.differentiable_through_arrays():
        return EAGER
    placeholders = lowering.placeholders
    # The Function's inputs: the graph's inputs, then each parameter requiring grad once.
    params, readers = [], {}
    for n in lowering.nodes:
        if n.op == "get_attr" and n in requires:
            p = attrs[n.target]
            if id(p) not in readers:
                readers[id(p)] = []
                params.append(p)
            readers[id(p)].append(n)
    inputs = [[ph] if ph in requires else [] for ph in placeholders] + \
        [readers[id(p)] for p in params]
    from .._inductor.memory_planning import BufferPlan
    lowering.forward_lines(BufferPlan())  # finds the fallbacks' leaves for the backward
    backward_source, saved = BackwardGenerator(lowering, leaves, inputs).generate()
    lowering.buffer_plan = lowering.plan()
    body = lowering.forward_lines(lowering.buffer_plan)
    body.append(f"ctx.__arrays = ({', '.join(saved)}{',' if saved else ''})")
    outs = []
    for i, leaf in enumerate(leaves):
        body.append(f"__o{i} = {lowering.result_src(leaf)}")
        outs.append(f"__o{i}")
    non_diff = [f"__o{i}" for i, leaf in enumerate(leaves)
                if leaf not in requires and lowering.value_kind(leaf) == "array"]
    if non_diff:
        body.append(f"ctx.mark_non_differentiable({', '.join(non_diff)})")
    body.append(f"return ({', '.join(outs)},)")
    args = ", ".join(["ctx"] + [f"{ph.name}__t" for ph in placeholders] + ["*__params"])
    forward_source = f"def forward({args}):\n" + "".join(f"    {line}\n" for line in body)
    lowering.globals["__grad"] = autograd_grad
    lowering.globals["__SECOND_BACKWARD"] = _SECOND_BACKWARD
    forward, namespace = lowering.compile(forward_source, "forward")
    backward_source = release_dead_locals(backward_source)  # saved values freed as eager's are
    exec(compile(backward_source, "<ember_inductor backward>", "exec"), namespace)  # noqa: S102
    backward = namespace["backward"]
    function = type("CompiledFunction", (Function,), {
        "forward": staticmethod(forward), "backward": staticmethod(backward),
        "__doc__": "The compiled graph's forward and backward, as one autograd node."})
    return TrainingGraph(function, params, template, forward_source, backward_source, lowering)
