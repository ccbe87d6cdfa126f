"""``make_fx``: the concrete tracer, as ``torch.fx.experimental.proxy_tensor.make_fx``.

``make_fx(f)(*example_inputs)`` runs ``f`` on the real inputs and records every Ember op that
actually runs on them — through modules, Python control flow and loops, which run on real
values and are thereby resolved — into a GraphModule whose nodes carry the shape and dtype
they produced (``node.meta["tensor_meta"]``, ``node.meta["type"]``). This is what
``jit.trace`` and ``export`` build on.

How ops are seen: while it runs, the public functions of ``ember`` and ``ember.nn.functional``
and the methods, operators and tensor-valued properties of ``Tensor`` are swapped for wrappers.
A wrapper whose arguments include a traced tensor (an input, a value computed from one, or a
parameter/buffer of the traced module) runs the op and records it; the ops an op runs inside
itself are not recorded. Values computed from nothing traced (``ember.ones(3)``) are constants,
and Python numbers read from tensors (``x.size(0)``, ``x.item()``) are baked in: the graph is
specialised to the example inputs' shapes, as a trace is."""
import functools
import operator
import threading
import types

from ..graph import Graph
from ..graph_module import GraphModule
from ..node import map_aggregate, _side_effectful_functions
from ..passes.shape_prop import _extract_tensor_metadata

__all__ = ["make_fx"]

_BINARY = ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or",
           "xor", "lshift", "rshift"]
_OPERATOR_OF = {f"__{n}__": getattr(operator, n if n not in ("and", "or") else n + "_")
                for n in _BINARY}
_OPERATOR_OF.update({f"__{n}__": getattr(operator, n)
                     for n in ("eq", "ne", "lt", "le", "gt", "ge", "neg", "pos", "abs",
                               "invert", "getitem", "setitem")})
_REFLECTED_OF = {f"__r{n}__": _OPERATOR_OF[f"__{n}__"] for n in _BINARY}
_INPLACE_OF = {f"__i{n}__": getattr(operator, f"i{n}" if n not in ("and", "or") else f"i{n}")
               for n in _BINARY if n not in ("lshift", "rshift")}
_TENSOR_PROPERTIES = ("T", "mT", "H", "mH", "real", "imag", "data")
# In-place operators write into their left operand: they must survive dead-code elimination.
_side_effectful_functions.update(_INPLACE_OF.values())

_state = threading.local()


class _ConcreteTracer:
    """Maps each traced tensor (by identity) to the node that produced it."""

    # make_fx records an op only when it reads a traced value (the rest are constants); the
    # capture of ``ember.compile`` records every tensor op, so that a factory call
    # (``ember.zeros``, ``ember.randn``) is re-run, with fresh memory and fresh draws, on replay.
    record_all = False

    def op_started(self, args, kwargs):
        """Called before a recorded op runs (``ember._dynamo``'s capture watches mutations)."""

    def __init__(self, root, attr_paths):
        self.graph = Graph()
        self.root = root
        self.values = {}  # id(tensor) -> (tensor, node); the tensor kept so ids stay unique
        self.attr_paths = attr_paths  # id(parameter or buffer) -> qualified name
        self.constants = 0

    def is_traced(self, x):
        from ..._tensor import Tensor
        return isinstance(x, Tensor) and (id(x) in self.values or id(x) in self.attr_paths)

    def any_traced(self, args, kwargs):
        found = []

        def look(x):
            if not found and self.is_traced(x):
                found.append(x)
            return x
        map_aggregate((args, kwargs), look)
        return bool(found)

    def node_of(self, t):
        entry = self.values.get(id(t))
        if entry is not None and entry[0] is t:
            return entry[1]
        name = self.attr_paths.get(id(t))
        if name is None:
            # A tensor computed from nothing traced: a constant of the graph.
            name = f"_tensor_constant{self.constants}"
            self.constants += 1
            self.root.register_buffer(name, t)
        node = self.graph.get_attr(name)
        self.bind(t, node)
        return node

    def bind(self, t, node):
        self.values[id(t)] = (t, node)
        node.meta["tensor_meta"] = _extract_tensor_metadata(t)
        node.meta["type"] = type(t)

    def as_arg(self, a):
        from ..._tensor import Tensor
        from ..._device import device
        from ..._dtype import dtype
        from ..._memory_format import memory_format

        def convert(x):
            if isinstance(x, Tensor):
                return self.node_of(x)
            if x is None or x is Ellipsis or isinstance(x, (bool, int, float, complex, str,
                                                            dtype, device, memory_format)):
                return x
            if isinstance(x, (types.FunctionType, types.BuiltinFunctionType, type)):
                return x
            return self.opaque_constant(x)
        return map_aggregate(a, convert)

    def opaque_constant(self, obj):
        """Any other argument (an op's parameter record, a module): held by the GraphModule
        as an attribute and read with ``get_attr``, since it has no Python literal."""
        key = id(obj)
        entry = self.values.get(key)
        if entry is not None and entry[0] is obj:
            return entry[1]
        name = f"_constant{self.constants}"
        self.constants += 1
        object.__setattr__(self.root, name, obj) if not hasattr(obj, "_parameters") \
            else self.root.add_module(name, obj)
        node = self.graph.get_attr(name)
        self.values[key] = (obj, node)
        node.meta["type"] = type(obj)
        return node

    def record(self, kind, target, args, kwargs, out):
        """Add the node for an op that returned ``out``; bind the tensors in ``out``."""
        from ..._tensor import Tensor
        node = self.graph.create_node(kind, target, self.as_arg(args), self.as_arg(kwargs))
        if isinstance(out, Tensor):
            self.bind(out, node)
        elif isinstance(out, (tuple, list)):
            node.meta["type"] = type(out)
            metas = []
            for i, item in enumerate(out):
                if isinstance(item, Tensor):
                    item_node = self.graph.call_function(operator.getitem, (node, i))
                    self.bind(item, item_node)
                    metas.append(item_node.meta["tensor_meta"])
                else:
                    metas.append(None)
            node.meta["tensor_meta"] = type(out)(metas) if isinstance(out, list) else tuple(metas)
        else:
            node.meta["type"] = type(out)
        return out


def _recorder(kind, target, fn, reorder=None):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        tracer = getattr(_state, "tracer", None)
        if tracer is None or _state.depth or not (tracer.record_all
                                                    or tracer.any_traced(args, kwargs)):
            return fn(*args, **kwargs)
        tracer.op_started(args, kwargs)
        _state.depth += 1
        try:
            out = fn(*args, **kwargs)
        finally:
            _state.depth -= 1
        recorded_args = reorder(args) if reorder is not None else args
        if kind == "call_function" and target is operator.setitem:
            tracer.record(kind, target, recorded_args, kwargs, None)
            return out
        if not _contains_tensor(out):
            return out  # a Python value read from a tensor: baked into the trace
        return tracer.record(kind, target, recorded_args, kwargs, out)
    return wrapper


def _contains_tensor(out):
    from ..._tensor import Tensor
    if isinstance(out, Tensor):
        return True
    return isinstance(out, (tuple, list)) and any(isinstance(o, Tensor) for o in out)


def _property_recorder(name, prop):
    getter = _recorder("call_function", getattr, lambda self, _name: prop.fget(self))

    def fget(self):
        return getter(self, name)
    return property(fget, prop.fset, prop.fdel, prop.__doc__)


def _iter_recorder(fn):
    @functools.wraps(fn)
    def wrapper(self):
        tracer = getattr(_state, "tracer", None)
        if tracer is None or _state.depth or not tracer.is_traced(self):
            return fn(self)
        # A loop over a traced tensor is unrolled into indexing, one node per row.
        return iter([self[i] for i in range(self.shape[0])])
    return wrapper


def _recorded_functions():
    """The functions recorded as ``call_function``: the public ops of ``ember`` and
    ``ember.nn.functional`` and every public function of the op families (``ember.ops.*``),
    which Ember's own layers call by direct reference."""
    import sys
    from .._symbolic_trace import _ember_op_namespaces
    fns = set()
    for _, table in _ember_op_namespaces():
        fns.update(table.values())
    for modname, mod in list(sys.modules.items()):
        if mod is None or not modname.startswith("ember.ops.") or \
                modname.rsplit(".", 1)[1].startswith("_"):
            continue
        fns.update(v for k, v in vars(mod).items()
                   if not k.startswith("_") and isinstance(v, types.FunctionType)
                   and v.__module__ == modname)
    return fns


def _patch_cell(patcher, cell, value):
    old = cell.cell_contents
    cell.cell_contents = value
    patcher._undo.append(lambda: setattr(cell, "cell_contents", old))


def _patch_defaults(patcher, fn, recorders):
    def swap(v):
        try:
            return recorders.get(v, v)
        except TypeError:  # an unhashable default
            return v
    defaults = tuple(swap(v) for v in fn.__defaults__)
    if any(a is not b for a, b in zip(defaults, fn.__defaults__)):
        old = fn.__defaults__
        fn.__defaults__ = defaults
        patcher._undo.append(lambda: setattr(fn, "__defaults__", old))


def _patch_everything(patcher, extra_globals, closures=(), wrap=_recorder):
    """Swap every Ember op, wherever Ember binds it, for ``wrap(kind, target, fn, reorder)``:
    the public functions, the op families' functions, layers' functionals, ops bound as default
    arguments or in ``closures``, and Tensor's methods and operators. make_fx records with it;
    the profiler times and vmap batches through the same swap with their own ``wrap``. Only
    the tracer (the default ``wrap``) also swaps Tensor's properties and ``__iter__``."""
    import sys
    from ..._tensor import Tensor
    tracing = wrap is _recorder
    recorders = {fn: wrap("call_function", fn, fn, None) for fn in _recorded_functions()}
    namespaces = [vars(mod) for name, mod in list(sys.modules.items())
                  if mod is not None and (name == "ember" or name.startswith("ember."))
                  and not name.startswith("ember.fx")]
    seen = set()
    for d in namespaces + list(extra_globals):
        if id(d) in seen:
            continue
        seen.add(id(d))
        for k, v in list(d.items()):
            try:
                r = recorders.get(v)
            except TypeError:  # an unhashable module global
                continue
            if r is not None:
                patcher.patch(d, k, r)
            elif isinstance(v, type) and v.__module__ == d.get("__name__"):
                # Layers keep their functional as a class attribute (``_functional =
                # staticmethod(F.conv2d)``).
                for attr, member in list(vars(v).items()):
                    if isinstance(member, staticmethod):
                        r = recorders.get(member.__func__)
                        if r is not None:
                            patcher.patch(v, attr, staticmethod(r))
                    elif isinstance(member, types.FunctionType) and member.__defaults__:
                        # An op bound as a default argument (``layer_op=rnn_layer``, the
                        # recurrent layers) is captured at definition time.
                        _patch_defaults(patcher, member, recorders)
    for cells in closures:
        for cell in cells or ():
            try:
                r = recorders.get(cell.cell_contents)
            except (TypeError, ValueError):  # unhashable, or an empty cell
                continue
            if r is not None:
                _patch_cell(patcher, cell, r)
    for name, value in list(vars(Tensor).items()):
        if name in _OPERATOR_OF:
            patcher.patch(Tensor, name, wrap("call_function", _OPERATOR_OF[name], value, None))
        elif name in _REFLECTED_OF:
            patcher.patch(Tensor, name, wrap("call_function", _REFLECTED_OF[name], value,
                                             lambda a: (a[1], a[0])))
        elif name in _INPLACE_OF:
            patcher.patch(Tensor, name, wrap("call_function", _INPLACE_OF[name], value, None))
        elif name == "__iter__":
            if tracing:
                patcher.patch(Tensor, name, _iter_recorder(value))
        elif name in _TENSOR_PROPERTIES and isinstance(value, property):
            if tracing:
                patcher.patch(Tensor, name, _property_recorder(name, value))
        elif not name.startswith("_") and isinstance(value, types.FunctionType):
            patcher.patch(Tensor, name, wrap("call_method", name, value, None))


def make_fx(f, decomposition_table=None, tracing_mode="real", _allow_non_fake_inputs=False,
            **kwargs):
    """``make_fx(f)(*args)`` → a GraphModule of the Ember ops ``f`` ran on ``args``.

    ``f`` may be a function or a Module; a Module's parameters and buffers become ``get_attr``
    nodes of their own paths (the GraphModule holds them, so its ``state_dict`` keys are the
    module's). Only ``tracing_mode="real"`` exists: Ember has no fake or symbolic tensors."""
    if tracing_mode != "real":
        raise NotImplementedError(f"make_fx: tracing_mode={tracing_mode!r} needs fake tensors, "
                                  "which Ember does not have; use tracing_mode='real'")
    if decomposition_table:
        raise NotImplementedError("make_fx: Ember records its own ops, which have no ATen "
                                  "decompositions to apply")
    if kwargs:
        raise TypeError(f"make_fx() got unexpected keyword arguments {sorted(kwargs)}")

    @functools.wraps(f)
    def wrapped(*args):
        from ...nn import Module
        from ..._tensor import Tensor
        from .._symbolic_trace import _Patcher
        if isinstance(f, Module):
            root = f
            attr_paths = {id(p): n for n, p in f.named_parameters()}
            attr_paths.update({id(b): n for n, b in f.named_buffers()})
        else:
            root, attr_paths = Module(), {}
        tracer = _ConcreteTracer(root, attr_paths)
        # Values are bound to placeholders by identity: the same tensor passed twice would leave
        # one placeholder unused (torch's make_fx does so), so a repeat is traced as a copy.
        seen = set()
        fresh = []
        for a in args:
            if isinstance(a, Tensor):
                if id(a) in seen:
                    a = a.detach().clone().requires_grad_(a.requires_grad)
                seen.add(id(a))
            fresh.append(a)
        args = tuple(fresh)
        for i, a in enumerate(args):
            ph = tracer.graph.placeholder(f"arg{i}_1")
            if isinstance(a, Tensor):
                tracer.bind(a, ph)
            else:
                ph.meta["type"] = type(a)
        if getattr(_state, "tracer", None) is not None:
            raise RuntimeError("make_fx cannot run inside another make_fx trace")
        # The traced code's own modules may bind ops by name too (``from ember import relu``).
        user_fns = [f] + [type(m).forward for m in (root.modules() if isinstance(f, Module)
                                                    else ())]
        user_globals = [getattr(fn, "__globals__", None) for fn in user_fns]
        with _Patcher() as patcher:
            _patch_everything(patcher, [g for g in user_globals if g is not None],
                              [getattr(fn, "__closure__", None) for fn in user_fns])
            _state.tracer, _state.depth = tracer, 0
            try:
                out = f(*args)
            finally:
                _state.tracer = None
        tracer.graph.output(tracer.as_arg(out))
        name = type(f).__name__ if isinstance(f, Module) else getattr(f, "__name__", "f")
        return GraphModule(root, tracer.graph, name)
    return wrapped
