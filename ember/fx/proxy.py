"""``Proxy``: the stand-in value that symbolic tracing passes through user code, as
``torch.fx.proxy``. Every operation on a Proxy (an operator, a method call, an attribute read,
a call of an ember function) records a node in the tracer's graph and returns a new Proxy."""
import dis
import inspect
import operator

from .graph import Graph
from .node import Node

__all__ = ["TraceError", "TracerBase", "GraphAppendingTracer", "Proxy", "Attribute",
           "ParameterProxy"]


class TraceError(ValueError):
    """A program construct symbolic tracing cannot capture (data-dependent control flow)."""


class TracerBase:
    """What every tracer shares: making nodes and proxies and turning arguments into graph
    arguments. ``Tracer`` (in ``_symbolic_trace``) adds module tracing."""
    graph: Graph
    proxy_buffer_attributes = False

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node):
        return Proxy(node, self)

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None,
                     proxy_factory_fn=None):
        """Record ``kind``/``target`` applied to ``args``/``kwargs`` (which may hold proxies
        and constants) and return a Proxy for its value."""
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def create_arg(self, a):
        """A value as it may appear in a node's args: proxies become their nodes, containers
        are rebuilt, literals stay; anything else is an error naming its type."""
        from .._dtype import dtype
        from .._device import device
        from .._memory_format import memory_format
        from .._layout import layout
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, Node):
            return a
        if isinstance(a, tuple) and hasattr(a, "_fields"):
            return type(a)(*[self.create_arg(elem) for elem in a])
        if isinstance(a, (tuple, list)):
            return type(a)(self.create_arg(elem) for elem in a)
        if isinstance(a, dict):
            out = {}
            for k, v in a.items():
                if not isinstance(k, str):
                    raise NotImplementedError(f"dictionaries with non-string keys: {a}")
                out[k] = self.create_arg(v)
            return out
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop),
                         self.create_arg(a.step))
        if isinstance(a, range):
            return range(self.create_arg(a.start), self.create_arg(a.stop),
                         self.create_arg(a.step))
        if a is None or a is Ellipsis or isinstance(a, (str, int, float, bool, complex, dtype,
                                                        device, memory_format, layout)):
            return a
        if callable(a) and not hasattr(a, "forward"):
            return a  # a function passed as an argument (a hook, an activation)
        raise NotImplementedError(f"argument of type: {type(a)}")

    def to_bool(self, obj):
        """A Proxy used as a condition: its value is unknown while tracing."""
        raise TraceError("symbolically traced variables cannot be used as inputs to control "
                         "flow")

    def iter(self, obj):
        """A Proxy iterated (a loop, ``*args``): its length is unknown while tracing."""
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the Proxy "
                         "is used in a loop or as a *args or **kwargs function argument. See "
                         "the torch.fx docs on pytorch.org for a more detailed explanation of "
                         "what types of control flow can be traced, and check out the Proxy "
                         "docstring for help troubleshooting Proxy iteration errors")

    def keys(self, obj):
        """``**proxy``: recorded as a ``keys`` method call."""
        return Attribute(obj, "keys")()


class GraphAppendingTracer(TracerBase):
    """A tracer that only appends to an existing graph (for Proxies made by hand)."""

    def __init__(self, graph):
        super().__init__()
        self.graph = graph
        self.tensor_attrs = {}
        self.root = None


class Proxy:
    """A traced value: ``node`` is the graph node producing it. Operators, method calls and
    attribute reads on it are recorded, not run."""

    def __init__(self, node, tracer=None):
        if tracer is None:
            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node

    def __repr__(self):
        return f"Proxy({self.node.name})"

    def __getattr__(self, k):
        # Only reached for names Proxy itself lacks: a tensor attribute or method.
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)
        return Attribute(self, k)

    def __getstate__(self):
        return self.__dict__

    def __setstate__(self, d):
        self.__dict__ = d

    def __deepcopy__(self, memo):
        raise TypeError("A Proxy cannot be deep-copied: it stands for a value being traced")

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __iter__(self):
        # ``a, b = proxy`` is fine: the unpacked count is in the caller's bytecode.
        frame = inspect.currentframe().f_back
        try:
            current = next((inst for inst in dis.get_instructions(frame.f_code)
                            if inst.offset == frame.f_lasti), None)
        finally:
            del frame
        if current is not None and current.opname == "UNPACK_SEQUENCE":
            return (self[i] for i in range(current.argval))
        return self.tracer.iter(self)

    def __bool__(self):
        return self.tracer.to_bool(self)

    def keys(self):
        return self.tracer.keys(self)

    def __len__(self):
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want "
                           "this call to be recorded, please call torch.fx.wrap('len') at "
                           "module scope")

    # Hashable by identity: __eq__ below records a node instead of comparing.
    __hash__ = object.__hash__


class ParameterProxy(Proxy):
    """A parameter read while tracing with ``param_shapes_constant``: its shape queries answer
    with the real parameter's values instead of recording nodes."""

    def __init__(self, tracer, node, name, param):
        super().__init__(node, tracer)
        self.param = param
        self.name = name

    def __repr__(self):
        return f"ParameterProxy({self.name})"

    @property
    def shape(self):
        return self.param.shape

    def size(self, dim=None):
        return self.param.size() if dim is None else self.param.size(dim)

    def dim(self):
        return self.param.dim()

    @property
    def ndim(self):
        return self.param.ndim

    def numel(self):
        return self.param.numel()

    def nelement(self):
        return self.param.nelement()


class Attribute(Proxy):
    """``proxy.name``: a ``getattr`` node, made only when the value is used as such; called
    directly it becomes a ``call_method`` node instead."""

    def __init__(self, root, attr):
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None

    @property
    def node(self):
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr,
                                                  (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


# Operators recorded as ``operator`` functions, as torch.fx's ``magic_methods``.
_MAGIC = ["add", "sub", "mul", "floordiv", "truediv", "mod", "pow", "lshift", "rshift", "and_",
          "or_", "xor", "getitem", "matmul", "eq", "ne", "lt", "gt", "le", "ge"]
_REFLECTABLE = ["add", "sub", "mul", "floordiv", "truediv", "mod", "pow", "lshift", "rshift",
                "and_", "or_", "xor", "matmul"]
# ``tensor + proxy`` reaches the reflected method; torch records the Tensor's own method then.
_TENSOR_METHOD_OF = {"add": "add", "sub": "sub", "mul": "mul", "truediv": "div",
                     "matmul": "matmul", "pow": "pow", "floordiv": "floor_divide",
                     "mod": "remainder"}


def _dunder(name):
    return f"__{name.rstrip('_')}__"


def _make_magic(name):
    target = getattr(operator, name)

    def impl(self, *rest):
        return self.tracer.create_proxy("call_function", target, (self,) + rest, {})
    impl.__name__ = _dunder(name)
    setattr(Proxy, impl.__name__, impl)


def _make_reflected(name):
    target = getattr(operator, name)

    def impl(self, rhs):
        from .._tensor import Tensor
        if isinstance(rhs, Tensor) and name in _TENSOR_METHOD_OF:
            return self.tracer.create_proxy("call_method", _TENSOR_METHOD_OF[name],
                                            (rhs, self), {})
        return self.tracer.create_proxy("call_function", target, (rhs, self), {})
    impl.__name__ = f"__r{name.rstrip('_')}__"
    setattr(Proxy, impl.__name__, impl)


for _name in _MAGIC:
    _make_magic(_name)
for _name in _REFLECTABLE:
    _make_reflected(_name)
for _name in ("neg", "pos", "invert", "abs"):
    _make_magic(_name)
del _name
