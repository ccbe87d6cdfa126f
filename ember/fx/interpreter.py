"""``Interpreter`` and ``Transformer``, as ``torch.fx.interpreter``.

An Interpreter runs a GraphModule node by node, calling one method per opcode; subclass it and
override those methods to observe or change execution (ShapeProp does). A Transformer is an
Interpreter that runs on Proxies, so its result is a new, transformed GraphModule."""
import inspect

from .graph import Graph
from .graph_module import GraphModule
from .node import map_arg, map_aggregate
from .proxy import Proxy, TracerBase

__all__ = ["Interpreter", "Transformer"]


class Interpreter:
    """``Interpreter(module, garbage_collect_values=True, graph=None)``: ``run(*args)``
    executes ``graph`` (default ``module.graph``) against ``module``'s attributes. With
    ``garbage_collect_values`` each value is dropped after its last use."""

    def __init__(self, module, garbage_collect_values=True, graph=None):
        self.module = module
        self.submodules = dict(module.named_modules())
        if graph is not None:
            self.graph = graph
        else:
            if not hasattr(module, "graph"):
                raise TypeError("Interpreter needs a GraphModule, or a graph= argument")
            self.graph = module.graph
        self.env = {}
        self.name = "Interpreter"
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        if garbage_collect_values:
            # For each node, the values whose last reader it is.
            last_reader = {}
            for node in reversed(self.graph.nodes):
                for inp in node.all_input_nodes:
                    last_reader.setdefault(inp, node)
            self.user_to_last_uses = {}
            for value, reader in last_reader.items():
                self.user_to_last_uses.setdefault(reader, []).append(value)

    def run(self, *args, initial_env=None, enable_io_processing=True):
        """Run the graph on ``args``; ``initial_env`` pre-binds some nodes' values (they are
        not run)."""
        self.env = dict(initial_env) if initial_env is not None else {}
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                # Which node failed, without changing the exception's type or arguments.
                if self.extra_traceback and hasattr(e, "add_note"):
                    e.add_note(f"While executing {node.format_node()}")
                raise
            if self.garbage_collect_values:
                for to_delete in self.user_to_last_uses.get(node, []):
                    del self.env[to_delete]
            if node.op == "output":
                return self.env[node]
        return None

    def run_node(self, n):
        """Run one node: fetch its arguments from ``env``, call the method named by its op."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    # ---- one method per opcode --------------------------------------------------------------
    def placeholder(self, target, args, kwargs):
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration:
            if args:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one "
                               "was not passed in!") from None

    def get_attr(self, target, args, kwargs):
        return self.fetch_attr(target)

    def call_function(self, target, args, kwargs):
        return target(*args, **kwargs)

    def call_method(self, target, args, kwargs):
        self_obj, *rest = args
        return getattr(self_obj, target)(*rest, **kwargs)

    def call_module(self, target, args, kwargs):
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target, args, kwargs):
        return args[0]

    # ---- helpers ----------------------------------------------------------------------------
    def fetch_attr(self, target):
        obj = self.module
        for i, atom in enumerate(target.split(".")):
            if not hasattr(obj, atom):
                raise RuntimeError(f"Node referenced nonexistent target "
                                   f"{'.'.join(target.split('.')[:i + 1])}")
            obj = getattr(obj, atom)
        return obj

    def fetch_args_kwargs_from_env(self, n):
        args = self.map_nodes_to_values(n.args, n)
        kwargs = self.map_nodes_to_values(n.kwargs, n)
        return args, kwargs

    def map_nodes_to_values(self, args, n):
        def load_arg(n_arg):
            if n_arg not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {n_arg}! Run "
                                   "Graph.lint() to diagnose such issues")
            return self.env[n_arg]
        return map_arg(args, load_arg)


class _TransformerTracer(TracerBase):
    def __init__(self, graph):
        super().__init__()
        self.graph = graph
        self.tensor_attrs = {}
        self.root = None

    def is_leaf_module(self, m, qualname):
        return True


class Transformer(Interpreter):
    """``Transformer(module).transform()`` → a new GraphModule: every node is re-emitted on
    Proxies, so an overridden ``call_function``/``call_method``/``call_module`` can return
    other operations (written as ordinary Ember code) in its place."""

    def __init__(self, module):
        super().__init__(module)
        self.new_graph = Graph()
        self.new_graph._codegen = self.graph._codegen
        self.tracer = _TransformerTracer(self.new_graph)
        self.tracer.root = module

    def placeholder(self, target, args, kwargs):
        default = args[0] if args else inspect.Signature.empty
        return Proxy(self.new_graph.placeholder(target, default_value=default), self.tracer)

    def get_attr(self, target, args, kwargs):
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_module(self, target, args, kwargs):
        return self.tracer.create_proxy("call_module", target, args, kwargs)

    def call_function(self, target, args, kwargs):
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def call_method(self, target, args, kwargs):
        return self.tracer.create_proxy("call_method", target, args, kwargs)

    def transform(self):
        """Run the transformation; returns the new GraphModule (attributes from ``module``)."""
        from ._symbolic_trace import _Patcher, _patch_ember_ops
        # Overrides may call Ember ops on Proxies: record them, as a trace does.
        # Overrides may call Ember ops on Proxies: record them, as a trace does, also where
        # the subclass's module imported them by name.
        subclass_globals = [meth.__globals__ for cls in type(self).__mro__
                            if issubclass(cls, Transformer) and cls is not Transformer
                            for meth in vars(cls).values() if hasattr(meth, "__globals__")]
        with _Patcher() as patcher:
            _patch_ember_ops(patcher, subclass_globals)
            result = super().run(enable_io_processing=False)
        if result is not None:
            def strip_proxy(a):
                return a.node if isinstance(a, Proxy) else a
            self.new_graph.output(map_aggregate(result, strip_proxy))
        return GraphModule(self.module, self.new_graph)
