"""Code generation: a graph becomes one Python function over the backend's arrays.

The generated source (kept on the compiled object as ``.source``, so it can be read and
stepped through) unwraps each input tensor once (``x = x__t._data``), runs every lowered node
as direct calls of the array namespace (``xp.matmul(..., out=__b0)``) or of ``kernels.py``,
and wraps only the results in tensors: no per-op argument checks, dtype resolution, Tensor
construction or autograd bookkeeping — the per-op Python dispatch that dominates an eager step
on small inputs. A node with no lowering (or whose metadata its lowering refuses) calls the
Ember op itself on wrapped tensors (``__f3(...)``): correct, and as fast as eager.

Training graphs are generated as a pair (``aot_autograd.py``): the forward function also keeps
what the backward reads, and the backward function (from ``derivatives.py``) computes the
inputs' gradients on arrays in one pass. A fallback node of a training graph runs its Ember op
with autograd on and hands its part of the backward to the engine."""
import operator

from .._tensor import Tensor, _wrap
from ..fx.node import Node, map_arg
from .fx_passes.batch_norm_folding import DerivedConstant
from .fx_passes.fusion import FusedElementwise
from .lowering import lowering_for, bind_args
from .memory_planning import plan_buffers, release_dead_locals, ThreadBuffers
from . import kernels

__all__ = ["GraphLowering"]

_SIMPLE_LITERALS = (int, float, bool, str, type(None))


def _simple(x):
    if isinstance(x, _SIMPLE_LITERALS):
        return not (isinstance(x, float) and (x != x or x in (float("inf"), float("-inf"))))
    if isinstance(x, (tuple, list)):
        return all(_simple(i) for i in x)
    if isinstance(x, slice):
        return _simple((x.start, x.stop, x.step))
    return x is Ellipsis


class _Emit:
    """What an emitter sees of the generator (see ``lowering.py``)."""
    __slots__ = ("gen", "name", "out", "training")

    def __init__(self, gen, name, out, training):
        self.gen, self.name, self.out, self.training = gen, name, out, training

    def src(self, x):
        return self.gen.array_src(x)

    def lit(self, x):
        return self.gen.lit(x)


class GraphLowering:
    """Lowers one graph. ``attrs`` maps get_attr targets to their objects; ``like`` is a tensor
    on the graph's device (results are made on it); ``training_nodes`` the nodes whose value
    depends on an input that requires grad (empty for inference); ``has_vjp(node, args)`` says
    whether the backward generator can differentiate a lowered node."""

    def __init__(self, graph, attrs, like, *, example_inputs=(), plan=True,
                 training_nodes=frozenset(), has_vjp=None):
        self.graph = graph
        self.attrs = attrs
        self.like = like
        self.plan_enabled = plan
        self.training = bool(training_nodes)
        self.requires = training_nodes
        self.nodes = list(graph.nodes)
        self.placeholders = [n for n in self.nodes if n.op == "placeholder"]
        self.output = next(n for n in self.nodes if n.op == "output")
        self.globals = {"xp": like._backend.xp, "__be": like._backend, "__K": kernels,
                        "__W": _wrap, "__like": like, "operator": operator}
        self._global_ids = {}
        self.example_is_tensor = {ph: isinstance(v, Tensor)
                                  for ph, v in zip(self.placeholders, example_inputs)}
        self.decisions = {}  # node -> (Lowering, args) or None (fallback)
        for n in self.nodes:
            if n.op in ("call_function", "call_method"):
                self.decisions[n] = self._decide(n, has_vjp)
        self.saved = set()  # forward names the backward reads
        self.fallback_leaves = {}  # training fallback node -> the inputs it differentiates

    # ---- decisions ---------------------------------------------------------------------------
    def _decide(self, n, has_vjp):
        if isinstance(n.target, FusedElementwise):
            return ("fused", None)
        low = lowering_for(n)
        if low is None:
            return None
        args = bind_args(n)
        if args is None or not low.check(n, args):
            return None
        if self.training and n in self.requires and not has_vjp(n, args):
            return None  # autograd differentiates it through the fallback
        return (low, args)

    def is_lowered(self, n):
        return self.decisions.get(n) is not None

    def differentiable_through_arrays(self):
        """Whether every gradient path runs through array values: a fallback that reads a
        tuple or another non-array value that needs a gradient could not hand it on."""
        for n, d in self.decisions.items():
            if d is None and n in self.requires:
                for a in self._node_args(n):
                    if a in self.requires and self.value_kind(a) != "array":
                        return False
        return True

    def value_kind(self, n):
        """"array", "tuple" (of arrays) or "object" (anything else) for node ``n``'s value."""
        if n.op == "placeholder":
            return "array" if self.example_is_tensor.get(n, True) else "object"
        if n.op == "get_attr":
            v = self.attrs.get(n.target)
            return "array" if isinstance(v, (Tensor, DerivedConstant)) else "object"
        meta = n.meta.get("tensor_meta")
        if hasattr(meta, "dtype"):
            return "array"
        if isinstance(meta, (tuple, list)):
            return "tuple"
        return "object"

    # ---- rendering ---------------------------------------------------------------------------
    def global_(self, obj, hint="c"):
        key = id(obj)
        name = self._global_ids.get(key)
        if name is None:
            name = f"__{hint}{len(self._global_ids)}"
            self._global_ids[key] = name
            self.globals[name] = obj
        return name

    def lit(self, x):
        if _simple(x):
            return repr(x)
        if isinstance(x, tuple):
            inner = ", ".join(self.lit(i) for i in x)
            return f"({inner},)" if len(x) == 1 else f"({inner})"
        return self.global_(x)

    def array_src(self, x):
        if isinstance(x, Node):
            return x.name
        return self.lit(x)

    def dtype_src(self, meta):
        return self.global_(meta.dtype, "dt")

    def tensor_src(self, x):
        """``x`` as an Ember value for a fallback call: the original tensor for inputs and
        attributes, arrays wrapped in tensors, tuples of them."""
        if not isinstance(x, Node):
            if isinstance(x, (tuple, list)):
                inner = ", ".join(self.tensor_src(i) for i in x)
                return f"[{inner}]" if isinstance(x, list) else \
                    (f"({inner},)" if len(x) == 1 else f"({inner})")
            if isinstance(x, dict):
                return "{" + ", ".join(f"{k!r}: {self.tensor_src(v)}" for k, v in x.items()) + "}"
            if isinstance(x, slice):
                return f"slice({self.tensor_src(x.start)}, {self.tensor_src(x.stop)}, " \
                       f"{self.tensor_src(x.step)})"
            return self.lit(x)
        kind = self.value_kind(x)
        if x.op == "placeholder":
            return f"{x.name}__t"
        if x.op == "get_attr" and isinstance(self.attrs.get(x.target), Tensor):
            return self.global_(self.attrs[x.target], "a")
        if kind == "array":
            return f"__W({x.name}, {self.dtype_src(x.meta['tensor_meta'])}, __like)"
        if kind == "tuple":
            metas = x.meta["tensor_meta"]
            items = ", ".join(f"__W({x.name}[{i}], {self.dtype_src(m)}, __like)"
                              if m is not None else f"{x.name}[{i}]"
                              for i, m in enumerate(metas))
            return f"({items},)"
        return x.name

    # ---- forward -----------------------------------------------------------------------------
    def escapes(self):
        """Nodes whose value outlives a call: the outputs, what the backward reads, and in
        training every input and result of a fallback that records an autograd graph (the
        engine saved their arrays)."""
        out = set()
        map_arg(self.output.args, out.add)
        if self.training:
            by_name = {n.name: n for n in self.nodes}
            for name in self.saved:
                base = name.split("__")[0] if name not in by_name else name
                if base in by_name:
                    out.add(by_name[base])
            for n, d in self.decisions.items():
                if d is None and n in self.requires:
                    out.add(n)
                    map_arg((n.args, n.kwargs), out.add)
        return out

    def plan(self):
        def can_use(n):
            d = self.decisions.get(n)
            return d is not None and (d[0] == "fused" or d[0].out)

        def is_view(n):
            d = self.decisions.get(n)
            if n.op not in ("call_function", "call_method"):
                return False
            # A fallback's result may be a view of its input (the op decides), so it is
            # treated as one: the input's buffer then lives as long as the result.
            if d is None:
                return True
            if d[0] == "fused":
                return False
            view = d[0].view
            return view(n, d[1]) if callable(view) else view
        if not self.plan_enabled:
            return plan_buffers([], can_use, is_view, set())
        return plan_buffers(self.nodes, can_use, is_view, self.escapes())

    def forward_lines(self, buffer_plan):
        lines = []
        slots = len(buffer_plan.slots)
        if slots:
            lines.append(f"({', '.join(f'__b{i}' for i in range(slots))},) = __buffers()")
        for ph in self.placeholders:
            if self.value_kind(ph) == "array":
                lines.append(f"{ph.name} = {ph.name}__t._data")
            else:
                lines.append(f"{ph.name} = {ph.name}__t")
        for n in self.nodes:
            if n.op == "get_attr":
                value = self.attrs.get(n.target)
                g = self.global_(value, "a")
                if isinstance(value, Tensor):
                    lines.append(f"{n.name} = {g}._data")
                elif isinstance(value, DerivedConstant):
                    lines.append(f"{n.name} = {g}.value()")
                else:
                    lines.append(f"{n.name} = {g}")
            elif n.op in ("call_function", "call_method"):
                slot = buffer_plan.assignment.get(n.name)
                out = None if slot is None else f"__b{slot}"
                d = self.decisions[n]
                if d is None:
                    lines.extend(self._fallback(n))
                elif d[0] == "fused":
                    lines.extend(self._fused(n, out))
                else:
                    low, args = d
                    lines.extend(low.emit(n, args, _Emit(self, n.name, out, self.training)))
        return lines

    def _fused(self, n, out):
        steps = n.target.steps
        ins = [self.array_src(a) for a in n.args]
        lines = [f"# fused: {n.target.expression(ins)}"]
        for i, (ufunc, operands) in enumerate(steps):
            parts = [n.name if o[0] == "acc" else ins[o[1]] if o[0] == "in" else repr(o[1])
                     for o in operands]
            if i == 0:
                target = f", out={out}" if out else ""
            else:
                target = f", out={n.name}"
            lines.append(f"{n.name} = xp.{ufunc}({', '.join(parts)}{target})")
        return lines

    def _fallback(self, n):
        fn = getattr(Tensor, n.target) if n.op == "call_method" else n.target
        f = self.global_(fn, "f")
        kind = self.value_kind(n)
        if self.training and n in self.requires:
            # The op runs with autograd on leaf copies of its differentiable inputs; the
            # backward asks the engine for their gradients (see derivatives.py).
            lines, leaves = [], []
            leaf_of = {}
            for a in self._node_args(n):
                if a in self.requires and a not in leaf_of and self.value_kind(a) == "array":
                    leaf = f"{n.name}__l{len(leaves)}"
                    lines.append(f"{leaf} = {self.tensor_src(a)}.detach().requires_grad_()")
                    leaf_of[a] = leaf
                    leaves.append(a)

            def render(x):
                if isinstance(x, Node) and x in leaf_of:
                    return leaf_of[x]
                return self.tensor_src(x)
            call = self._call_src(f, n, render)
            lines.append("with __enable_grad():")
            lines.append(f"    {n.name}__r = {call}")
            lines.append(f"{n.name}__leaves = ({', '.join(leaf_of[a] for a in leaves)},)")
            self.fallback_leaves[n] = leaves
            from ..autograd.grad_mode import enable_grad
            self.globals["__enable_grad"] = enable_grad
        else:
            lines = [f"{n.name}__r = {self._call_src(f, n, self.tensor_src)}"]
        if kind == "array":
            lines.append(f"{n.name} = {n.name}__r._data")
        elif kind == "tuple":
            lines.append(f"{n.name} = tuple(t._data if isinstance(t, __T) else t "
                         f"for t in {n.name}__r)")
            self.globals["__T"] = Tensor
        else:
            lines.append(f"{n.name} = {n.name}__r")
        return lines

    def _node_args(self, n):
        found = []
        map_arg((n.args, n.kwargs), found.append)
        return found

    def _call_src(self, f, n, render):
        parts = [render(a) for a in n.args]
        parts += [f"{k}={render(v)}" for k, v in n.kwargs.items()]
        return f"{f}({', '.join(parts)})"

    # ---- results -----------------------------------------------------------------------------
    def result_src(self, x):
        """The output structure with each tensor value wrapped (inputs returned as themselves)."""
        if isinstance(x, Node):
            if x.op == "placeholder":
                return f"{x.name}__t"
            if x.op == "get_attr" and isinstance(self.attrs.get(x.target), Tensor):
                return self.global_(self.attrs[x.target], "a")
            return self.tensor_src(x)
        if isinstance(x, (tuple, list)) and not hasattr(x, "_fields"):
            inner = ", ".join(self.result_src(i) for i in x)
            if isinstance(x, list):
                return f"[{inner}]"
            return f"({inner},)" if len(x) == 1 else f"({inner})"
        if isinstance(x, dict):
            return "{" + ", ".join(f"{k!r}: {self.result_src(v)}" for k, v in x.items()) + "}"
        return self.lit(x)

    def inference_source(self):
        """The source of ``forward(*inputs)`` for a graph run without autograd."""
        buffer_plan = self.plan()
        self.buffer_plan = buffer_plan
        params = ", ".join(f"{ph.name}__t" for ph in self.placeholders)
        body = self.forward_lines(buffer_plan)
        body.append(f"return {self.result_src(self.output.args[0])}")
        return f"def forward({params}):\n" + "".join(f"    {line}\n" for line in body)

    def compile(self, source, name):
        """Run ``source`` with this graph's globals (the buffers' source included); returns the
        function ``name`` and its namespace."""
        plan = getattr(self, "buffer_plan", None)
        if plan is not None:
            self.thread_buffers = ThreadBuffers(plan, self.globals["xp"])
            self.globals["__buffers"] = self.thread_buffers
        namespace = dict(self.globals)
        # Warnings are attributed by module name: NumPy's floating-point warnings are silenced
        # for Ember's modules (backends/numpy_backend.py), and the generated code is one.
        namespace["__name__"] = "ember._inductor.generated"
        source = release_dead_locals(source)
        code = compile(source, f"<ember_inductor {name}>", "exec")
        exec(code, namespace)  # noqa: S102 - our own generated source
        fn = namespace[name]
        fn.__source__ = source
        return fn, namespace

