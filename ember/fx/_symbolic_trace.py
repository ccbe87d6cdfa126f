"""``symbolic_trace`` and ``Tracer``, as ``torch.fx._symbolic_trace``.

Tracing runs ``forward`` once on Proxies. PyTorch catches ``torch.relu(proxy)`` through
``__torch_function__``; Ember's ops are plain Python functions, so while a trace runs the
tracer swaps the public ops of ``ember``, ``ember.nn.functional`` (and the same functions bound
in the traced code's globals, and every ``fx.wrap``-ped name) for wrappers that record a
``call_function`` node when any argument is a Proxy and call the op otherwise. It also swaps
``Module.__call__`` (submodules become ``call_module`` nodes, or are traced through) and
``Module.__getattr__`` (parameters read in forward become ``get_attr`` nodes). Everything is
restored when the trace ends, also when it fails."""
import builtins
import functools
import inspect
import math
import threading
import types
import warnings

from .graph import Graph
from .graph_module import GraphModule
from .node import map_aggregate, has_side_effect
from .proxy import Proxy, ParameterProxy, TracerBase, TraceError  # noqa: F401

__all__ = ["Tracer", "symbolic_trace", "wrap", "PH", "ProxyableClassMeta"]

# (id of a module's globals, name) -> those globals: the names ``wrap`` asked to record.
_wrapped_fns_to_patch = {}
_ORIGINAL = "__fx_original__"
# The swaps are process-wide: one trace (or Transformer run) at a time. Another thread running
# eager Ember code meanwhile sees the wrappers, which call straight through on real tensors.
_patching_lock = threading.RLock()


class _PlaceholderToken:
    """``PH``: in ``concrete_args``, a value that stays an input rather than a constant."""

    def __repr__(self):
        return "PH"


PH = _PlaceholderToken()


class ProxyableClassMeta(type):
    """A metaclass whose classes, constructed with Proxy arguments, are recorded as a
    ``call_function`` of the class instead of being built."""

    def __call__(cls, *args, **kwargs):
        tracer = _find_tracer(args, kwargs)
        if tracer is not None:
            return tracer.create_proxy("call_function", cls, args, kwargs)
        return super().__call__(*args, **kwargs)


def wrap(fn_or_name):
    """Record calls of this module-level function (or global name) as ``call_function``
    nodes instead of tracing into them. Call it at the top level of the defining module."""
    if not callable(fn_or_name) and not isinstance(fn_or_name, str):
        raise RuntimeError("Unsupported type for global function! Must be either a callable or "
                           "string name")
    name = fn_or_name if isinstance(fn_or_name, str) else fn_or_name.__name__
    caller = inspect.currentframe().f_back
    try:
        if caller.f_code.co_name != "<module>":
            raise NotImplementedError("wrap must be called at the top level of a module")
        _wrapped_fns_to_patch[(id(caller.f_globals), name)] = caller.f_globals
    finally:
        del caller
    return fn_or_name


@has_side_effect
def _assert_is_none(value, msg):
    assert value is None, msg


@has_side_effect
def _assert(condition, msg):
    if not condition:
        raise AssertionError(msg)


def _find_tracer(args, kwargs):
    found = []

    def look(x):
        if isinstance(x, Proxy) and not found:
            found.append(x.tracer)
        return x
    map_aggregate(args, look)
    if not found:
        map_aggregate(kwargs, look)
    return found[0] if found else None


def _recording(fn):
    """``fn`` as it behaves while tracing: recorded when it meets a Proxy, run otherwise."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        tracer = _find_tracer(args, kwargs)
        if tracer is None:
            return fn(*args, **kwargs)
        return tracer.create_proxy("call_function", fn, args, kwargs)
    setattr(wrapper, _ORIGINAL, fn)
    return wrapper


# ---- which functions are Ember ops --------------------------------------------------------------
# Names of ``ember`` that are ops yet hold no tensor maths to record: asking them about a Proxy
# must answer for the Proxy object itself.
_NOT_RECORDED = frozenset({"is_tensor", "is_storage"})
_op_namespaces = None


def _ember_op_namespaces():
    """(module, {name: function}) for ``ember`` and ``ember.nn.functional``: the functions a
    trace records. Computed once, from the unpatched functions."""
    global _op_namespaces
    if _op_namespaces is None:
        import ember
        import ember.nn.functional as F
        from ember import ops, _functional_exports
        names = [n for n in list(ops.__dict__) if not n.startswith("_")]
        names += list(_functional_exports.__all__)
        top = {}
        for n in names:
            fn = getattr(ember, n, None)
            fn = getattr(fn, _ORIGINAL, fn)
            if n not in _NOT_RECORDED and isinstance(fn, (types.FunctionType,
                                                          types.BuiltinFunctionType)):
                top[n] = fn
        functional = {}
        for n in dir(F):
            fn = getattr(F, n)
            fn = getattr(fn, _ORIGINAL, fn)
            if not n.startswith("_") and isinstance(fn, types.FunctionType):
                functional[n] = fn
        _op_namespaces = [(ember, top), (F, functional)]
    return _op_namespaces


@functools.lru_cache(maxsize=None)
def _public_names():
    names = {}
    for module, fns in reversed(_ember_op_namespaces()):  # ``ember.relu`` wins over F's
        for n, fn in fns.items():
            names[fn] = f"{module.__name__}.{n}"
    return names


def _public_ember_name(fn):
    """``ember.relu`` / ``ember.nn.functional.gelu`` for an Ember op, else None."""
    try:
        return _public_names().get(fn)
    except TypeError:  # unhashable callable
        return None


class _Patcher:
    """Attribute swaps undone in reverse order on exit."""

    def __init__(self):
        self._undo = []

    def patch(self, namespace, name, value):
        """``namespace`` is a dict (module globals) or an object (a class)."""
        if isinstance(namespace, dict):
            missing = name not in namespace
            old = namespace.get(name)
            namespace[name] = value
            self._undo.append(lambda: namespace.pop(name, None) if missing
                              else namespace.__setitem__(name, old))
        else:
            old = namespace.__dict__.get(name, _MISSING)
            setattr(namespace, name, value)
            self._undo.append(lambda: delattr(namespace, name) if old is _MISSING
                              else setattr(namespace, name, old))

    def __enter__(self):
        _patching_lock.acquire()
        return self

    def __exit__(self, *exc):
        try:
            while self._undo:
                self._undo.pop()()
        finally:
            _patching_lock.release()
        return False


_MISSING = object()


# Tensor operators that must give way to the Proxy's reflected operator (``tensor + proxy``).
_TENSOR_OPERATORS = [f"__{p}{op}__" for op in ("add", "sub", "mul", "truediv", "floordiv", "mod",
                                              "pow", "matmul", "and", "or", "xor", "lshift",
                                              "rshift") for p in ("", "r")] + \
    ["__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"]


def _yielding_to_proxy(method):
    @functools.wraps(method)
    def wrapper(self, other):
        if isinstance(other, Proxy):
            return NotImplemented
        return method(self, other)
    return wrapper


def _patch_ember_ops(patcher, extra_globals=(), extra_fns=()):
    """Swap the Ember ops (and ``extra_fns``) for recording wrappers in their namespaces and
    wherever ``extra_globals`` (the traced code's module globals) bind them."""
    from .._tensor import Tensor
    for name in _TENSOR_OPERATORS:
        method = Tensor.__dict__.get(name)
        if method is not None:
            patcher.patch(Tensor, name, _yielding_to_proxy(method))
    wrappers = {}
    for module, fns in _ember_op_namespaces():
        for n, fn in fns.items():
            w = wrappers.get(fn)
            if w is None:
                w = wrappers[fn] = _recording(fn)
            patcher.patch(module.__dict__, n, w)
    for fn in extra_fns:
        wrappers.setdefault(fn, _recording(fn))
    seen = set()
    for g in extra_globals:
        if id(g) in seen:
            continue
        seen.add(id(g))
        for n, value in list(g.items()):
            try:
                w = wrappers.get(value)
            except TypeError:
                continue
            if w is not None:
                patcher.patch(g, n, w)
    for (_, name), g in list(_wrapped_fns_to_patch.items()):
        if name in g:
            orig = g[name]
        elif hasattr(builtins, name):
            orig = getattr(builtins, name)
        else:
            raise NameError(f"fx.wrap({name!r}) was called in module {g.get('__name__')!r}, "
                            f"which has no global named {name!r}")
        orig = getattr(orig, _ORIGINAL, orig)
        patcher.patch(g, name, _recording(orig))


def _flatten_signature(fn):
    """``fn`` with ``*args``/``**kwargs`` and keyword-only parameters made ordinary positional
    ones (same code, same globals and closure), so that a trace can hand ``args`` a single
    Proxy instead of unpacking one."""
    code = fn.__code__
    flags = code.co_flags
    if not flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS) and not code.co_kwonlyargcount:
        return fn
    total = code.co_argcount + code.co_kwonlyargcount + bool(flags & inspect.CO_VARARGS) + \
        bool(flags & inspect.CO_VARKEYWORDS)
    flat = code.replace(co_argcount=total, co_kwonlyargcount=0,
                        co_flags=flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS))
    return types.FunctionType(flat, fn.__globals__, fn.__name__, None, fn.__closure__)


class Tracer(TracerBase):
    """Turns a module's forward (or a function) into a Graph by running it on Proxies.

    Override ``is_leaf_module`` to choose which submodules stay ``call_module`` nodes (by
    default every module of ``ember.nn`` but ``Sequential``); ``create_proxy``/``create_node``
    to attach extra information to nodes."""

    def __init__(self, autowrap_modules=(math,), autowrap_functions=(),
                 param_shapes_constant=False):
        super().__init__()
        self._autowrap_fns = set(autowrap_functions)
        for mod in autowrap_modules:
            self._autowrap_fns.update(v for k, v in vars(mod).items()
                                      if not k.startswith("_") and callable(v))
        self.param_shapes_constant = param_shapes_constant
        self.root = None
        self.graph = None

    # ---- hooks a custom tracer overrides --------------------------------------------------------
    def is_leaf_module(self, m, module_qualified_name):
        from ..nn import Sequential
        module = type(m).__module__ or ""
        return (module.startswith("ember.nn") or module.startswith("torch.nn")) and \
            not isinstance(m, Sequential)

    def path_of_module(self, mod):
        path = self._module_paths.get(id(mod))
        if path is None:
            raise NameError("module is not installed as a submodule")
        return path

    def call_module(self, m, forward, args, kwargs):
        """A submodule called in forward: a ``call_module`` node if it is a leaf, else traced
        through."""
        qualname = self.path_of_module(m)
        if not self.is_leaf_module(m, qualname):
            return forward(*args, **kwargs)
        return self.create_proxy("call_module", qualname, args, kwargs)

    def getattr(self, attr, attr_val, parameter_proxy_cache):
        """A module attribute read in forward: parameters (and buffers with
        ``proxy_buffer_attributes``) become ``get_attr`` proxies, other values stay."""
        from ..nn import Parameter
        from .._tensor import Tensor
        if isinstance(attr_val, Parameter):
            name = self._param_paths.get(id(attr_val))
            if name is not None:
                if name not in parameter_proxy_cache:
                    factory = None
                    if self.param_shapes_constant:
                        def factory(node):
                            return ParameterProxy(self, node, name, attr_val)
                    parameter_proxy_cache[name] = self.create_proxy(
                        "get_attr", name, (), {}, proxy_factory_fn=factory)
                return parameter_proxy_cache[name]
        if self.proxy_buffer_attributes and isinstance(attr_val, Tensor):
            name = self._buffer_paths.get(id(attr_val))
            if name is not None:
                if name not in parameter_proxy_cache:
                    parameter_proxy_cache[name] = self.create_proxy("get_attr", name, (), {})
                return parameter_proxy_cache[name]
        return attr_val

    def create_arg(self, a):
        """As TracerBase's, plus tensors: a parameter or buffer of the root becomes a
        ``get_attr`` of its path, any other tensor a ``_tensor_constantN`` attribute."""
        from ..nn import Module, Parameter
        from .._tensor import Tensor
        if isinstance(a, Parameter):
            name = self._param_paths.get(id(a))
            if name is None:
                raise NameError("parameter is not a member of this module")
            return self.create_node("get_attr", name, (), {})
        if isinstance(a, Tensor):
            name = self._buffer_paths.get(id(a)) or self.tensor_attrs.get(id(a))
            if name is None:
                i = 0
                while hasattr(self.root, f"_tensor_constant{i}"):
                    i += 1
                name = f"_tensor_constant{i}"
                setattr(self.root, name, a)
                self.tensor_attrs[id(a)] = name
                self._keep_alive.append(a)
            return self.create_node("get_attr", name, (), {})
        if isinstance(a, Module):
            name = self._module_paths.get(id(a))
            if name is None:
                raise NameError("module is not installed as a submodule")
            return self.create_node("get_attr", name, (), {})
        return super().create_arg(a)

    # ---- tracing --------------------------------------------------------------------------------
    def _index_root(self, root):
        from .._tensor import Tensor
        from ..nn import Parameter
        self._module_paths = {id(m): name for name, m in root.named_modules()}
        self._param_paths = {id(p): name for name, p in root.named_parameters()}
        self._buffer_paths = {id(b): name for name, b in root.named_buffers()}
        self.tensor_attrs = {}
        self._keep_alive = []
        for prefix, m in root.named_modules():
            for k, v in vars(m).items():
                if isinstance(v, Tensor) and not isinstance(v, Parameter):
                    self.tensor_attrs.setdefault(id(v), f"{prefix}.{k}" if prefix else k)

    def create_args_for_root(self, root_fn, is_module, concrete_args=None):
        """Placeholders for the traced function's parameters, in signature order; returns
        the function to run (``*args``/``**kwargs`` turned into plain parameters, so they
        receive one Proxy each) and the values to call it with, positionally."""
        sig = inspect.signature(root_fn)
        params = list(sig.parameters.values())
        if is_module:
            params = params[1:]  # self
        concrete_args = dict(concrete_args or {})
        unknown = set(concrete_args) - {p.name for p in params}
        if unknown:
            raise RuntimeError(f"concrete_args names {sorted(unknown)} that are not parameters "
                               f"of {root_fn.__qualname__}")
        values = {}
        for p in params:
            if p.kind is p.VAR_POSITIONAL or p.kind is p.VAR_KEYWORD:
                stars = "*" if p.kind is p.VAR_POSITIONAL else "**"
                values[p.name] = self.proxy(self.graph.placeholder(stars + p.name))
            elif p.name in concrete_args:
                values[p.name] = self._concrete_placeholder(p, concrete_args[p.name])
            else:
                default = inspect.Signature.empty if p.default is p.empty else p.default
                values[p.name] = self.proxy(self.graph.placeholder(p.name,
                                                                   default_value=default))
        fn = _flatten_signature(root_fn)
        # The flattened function takes every parameter positionally, in co_varnames order.
        code = fn.__code__
        order = code.co_varnames[:code.co_argcount]
        if is_module:
            order = order[1:]
        return fn, [values[name] for name in order]

    def _concrete_placeholder(self, param, value):
        if value is PH:
            return self.proxy(self.graph.placeholder(param.name))
        default = inspect.Signature.empty if param.default is param.empty else param.default
        ph = self.proxy(self.graph.placeholder(f"{param.name}_1", default_value=default))
        msg = f"{param.name} has been specialized to have value {value} but got another value"
        if value is None:
            self.create_proxy("call_function", _assert_is_none, (ph, msg), {})
        elif type(value) in (bool, int, float, str):
            self.create_proxy("call_function", _assert, (ph == value, msg), {})
        else:
            warnings.warn(f"Was not able to add assertion to guarantee correct input "
                          f"{param.name} to specialized function. It is up to the user to make "
                          "sure that your inputs match the inputs you specialized the function "
                          "with.")
        return value

    def trace(self, root, concrete_args=None):
        """Trace ``root`` (a Module, whose forward runs, or a function) into a Graph."""
        from ..nn import Module
        is_module = isinstance(root, Module)
        if is_module:
            self.root = root
            fn = type(root).forward
        else:
            if not inspect.isfunction(root):
                raise TypeError(f"symbolic_trace expects an ember.nn.Module or a Python "
                                f"function, got {type(root).__name__}")
            self.root = Module()
            fn = root
        self.graph = Graph(tracer_cls=type(self))
        self._index_root(self.root)
        fn, args = self.create_args_for_root(fn, is_module, concrete_args)
        if is_module:
            args = [root] + args

        parameter_proxy_cache = {}
        orig_call = Module.__call__
        orig_getattr = Module.__getattr__
        tracer = self

        def module_call(mod, *a, **k):
            def forward(*fa, **fk):
                return orig_call(mod, *fa, **fk)
            return tracer.call_module(mod, forward, a, k)

        def module_getattr(mod, attr):
            return tracer.getattr(attr, orig_getattr(mod, attr), parameter_proxy_cache)

        traced_globals = [getattr(fn, "__globals__", {})]
        for name, m in self.root.named_modules():
            forward = getattr(type(m), "forward", None)
            if name and not self.is_leaf_module(m, name) and hasattr(forward, "__globals__"):
                traced_globals.append(forward.__globals__)
        with _Patcher() as patcher:
            patcher.patch(Module, "__call__", module_call)
            patcher.patch(Module, "__getattr__", module_getattr)
            _patch_ember_ops(patcher, traced_globals, self._autowrap_fns)
            result = fn(*args)
            self.create_node("output", "output", (self.create_arg(result),), {})
        return self.graph


def symbolic_trace(root, concrete_args=None):
    """Trace ``root`` (a Module or a function) into a GraphModule, as
    ``torch.fx.symbolic_trace``."""
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    from ..nn import Module
    name = type(root).__name__ if isinstance(root, Module) else root.__name__
    return GraphModule(tracer.root, graph, name)
