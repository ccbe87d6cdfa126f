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
import weakref

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
_MISSING = object()


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
    ``ember.nn.functional``, every public function of the op families (``ember.ops.*``), which
    Ember's own layers call by direct reference, and the functions ``ember.linalg``,
    ``ember.special`` and ``ember.fft`` expose under torch's names (some are thin wrappers,
    ``ember.linalg.matrix_norm``, that no op family holds)."""
    return set(_SwapSites.current().fns)


def _swapped_from(v):
    """The op behind ``v`` when ``v`` is a wrapper a running swap put in its place."""
    return getattr(v, "_ember_swap_of", None) if type(v) is types.FunctionType else None


def _op_behind(v):
    """The function a wrapper bound in an op's place stands for: a running swap's wrapper, a
    dispatching wrapper that names its op (``__fx_original__``, as symbolic tracing sets), or any
    ``functools.wraps`` wrapper. The swap replaces such a binding by the op's own wrapper."""
    if type(v) is not types.FunctionType:
        return None
    return getattr(v, "_ember_swap_of", None) or getattr(v, "__fx_original__", None) or \
        getattr(v, "__wrapped__", None)


_modules_seen = [-1, []]  # len(sys.modules) when Ember's modules were last listed, the list


def _ember_modules():
    import sys
    # Listing means a pass over every loaded module's name; the count tells whether any loaded.
    if len(sys.modules) != _modules_seen[0]:
        _modules_seen[:] = [len(sys.modules),
                            [mod for name, mod in list(sys.modules.items())
                             if mod is not None and (name == "ember" or name.startswith("ember."))
                             and not name.startswith("ember.fx")]]
    return _modules_seen[1]


def _scan_functions(modules):
    from .._symbolic_trace import _ember_op_namespaces
    fns = set()
    for _, table in _ember_op_namespaces():
        fns.update(table.values())
    for mod in modules:
        modname = mod.__name__
        if modname.startswith("ember.ops.") and not modname.rsplit(".", 1)[1].startswith("_"):
            family = True  # an op family: the functions it defines
        elif modname in ("ember.linalg", "ember.special", "ember.fft"):
            family = False  # torch's names, wherever in Ember the function is defined
        else:
            continue
        for k, v in list(vars(mod).items()):
            v = _swapped_from(v) or v
            if not k.startswith("_") and isinstance(v, types.FunctionType) and (
                    v.__module__ == modname if family
                    else (v.__module__ or "").startswith("ember")):
                fns.add(v)
    return frozenset(fns)


def _hashable_in(v, fns):
    try:
        return v in fns
    except TypeError:  # an unhashable value
        return False


def _op_of(v, fns):
    """The op of ``fns`` that ``v`` is, or that a running swap's wrapper ``v`` stands for."""
    if _hashable_in(v, fns):
        return v
    op = _op_behind(v)
    return op if _hashable_in(op, fns) else None


def _scan_namespace(d, fns, globals_sites, static_sites, default_sites):
    """Where ``d`` (a module's globals) binds an op of ``fns``: as a global, as a class's
    staticmethod (layers keep their functional so: ``_functional = staticmethod(F.conv2d)``),
    or as a default argument of a class's method (``layer_op=rnn_layer``, bound at definition
    time)."""
    for k, v in list(d.items()):
        op = _op_of(v, fns)
        if op is not None:
            globals_sites.append((d, k, op))
        elif isinstance(v, type) and v.__module__ == d.get("__name__"):
            for attr, member in list(vars(v).items()):
                if isinstance(member, staticmethod):
                    op = _op_of(member.__func__, fns)
                    if op is not None:
                        static_sites.append((v, attr, op))
                elif isinstance(member, types.FunctionType) and member.__defaults__:
                    ops = tuple(_op_of(x, fns) for x in member.__defaults__)
                    if any(o is not None for o in ops):
                        default_sites.append((member, ops))


class _SwapSites:
    """Where the op swap writes, found by one scan of Ember's modules and reused: the scan
    (every namespace, layers' classes, methods' defaults) costs ~10 ms, which make_fx, the
    profiler, the memory tracker and every ``vmap`` call would otherwise each pay. The cache
    is dropped when the set of loaded ``ember.*`` modules or the size of their globals
    changes; a site whose binding no longer holds its op (a module global rebound) forces a
    rescan when the swap is applied (``valid``)."""
    key = None
    fns = frozenset()
    globals_sites = ()  # (module dict, name, op)
    static_sites = ()   # (class, attribute, op)
    default_sites = ()  # (function, per default: its op or None)
    ember_dicts = frozenset()
    generation = 0

    @classmethod
    def current(cls, force=False):
        with _sites_lock:
            modules = _ember_modules()
            key = (len(modules), sum(len(vars(m)) for m in modules))
            if force or key != cls.key:
                fns = _scan_functions(modules)
                g, st, de = [], [], []
                for mod in modules:
                    _scan_namespace(vars(mod), fns, g, st, de)
                cls.fns, cls.globals_sites, cls.static_sites, cls.default_sites = fns, g, st, de
                cls.ember_dicts = frozenset(id(vars(m)) for m in modules)
                cls.key = key
                cls.generation += 1
            return cls

    @classmethod
    def valid(cls):
        for d, k, op in cls.globals_sites:
            v = d.get(k)
            if v is not op and _op_behind(v) is not op:
                return False
        for c, attr, op in cls.static_sites:
            m = c.__dict__.get(attr)
            if not isinstance(m, staticmethod) or (m.__func__ is not op and
                                                   _op_behind(m.__func__) is not op):
                return False
        for f, ops in cls.default_sites:
            cur = f.__defaults__ or ()
            if len(cur) != len(ops) or any(o is not None and v is not o and
                                           _op_behind(v) is not o
                                           for v, o in zip(cur, ops)):
                return False
        return True


_sites_lock = threading.RLock()
# wrap factory -> {(kind, target, fn, reflected): wrapper}: a swap's wrappers are made once.
_wrapper_cache = weakref.WeakKeyDictionary()


def _cached_wrap(wrap, kind, target, fn, reorder):
    try:
        table = _wrapper_cache[wrap]
    except KeyError:
        table = _wrapper_cache[wrap] = {}
    key = (kind, target, fn, reorder is not None)
    w = table.get(key)
    if w is None:
        w = wrap(kind, target, fn, reorder)
        if w is not fn and type(w) is types.FunctionType:
            w._ember_swap_of = fn  # how a later scan, or a nested swap, finds the op
        table[key] = w
    return w


def _patch_cell(patcher, cell, value):
    old = cell.cell_contents
    cell.cell_contents = value
    patcher._undo.append(lambda: setattr(cell, "cell_contents", old))


def _wrapped_defaults(f, ops, wrapper_of):
    """``f``'s defaults with each op of ``ops`` (None: not an op) replaced by its wrapper."""
    return tuple(v if o is None else wrapper_of(o) for v, o in zip(f.__defaults__, ops))


def _patch_defaults(patcher, f, ops, wrapper_of):
    old = f.__defaults__
    f.__defaults__ = _wrapped_defaults(f, ops, wrapper_of)
    patcher._undo.append(lambda: setattr(f, "__defaults__", old))


def _op_wrapper(wrap, op):
    """``wrap``'s wrapper of the function ``op`` bound in a module or class (made once)."""
    return _cached_wrap(wrap, "call_function", op, op, None)


def _patch_everything(patcher, extra_globals, closures=(), wrap=_recorder):
    """Swap every Ember op, wherever Ember binds it, for ``wrap(kind, target, fn, reorder)``:
    the public functions, the op families' functions, layers' functionals, ops bound as default
    arguments or in ``closures``, and Tensor's methods and operators. make_fx records with it;
    the profiler times, the memory tracker names and vmap batches through the same swap with
    their own ``wrap`` (its wrappers are made once per op and reused). Only the tracer (the
    default ``wrap``) also swaps Tensor's properties and ``__iter__``. The sites in Ember's
    modules come from ``_SwapSites`` (scanned once); ``extra_globals`` (the traced code's own
    modules) and ``closures`` are looked at on every call. Inside another swap, a module
    global's new wrapper calls the op itself, not the outer swap's wrapper."""
    sites = _SwapSites.current()
    if not sites.valid():
        sites = _SwapSites.current(force=True)
    fns = sites.fns
    plan = _plan_of(wrap, sites)
    wrapper_of = functools.partial(_op_wrapper, wrap)
    # The bulk of the swap, with one undo for all of it (thousands of entries).
    saved_globals, saved_attrs, saved_defaults = [], [], []
    for d, k, w in plan.globals:
        saved_globals.append((d, k, d.get(k, _MISSING)))
        d[k] = w
    for c, attr, member in plan.attrs:
        saved_attrs.append((c, attr, c.__dict__.get(attr, _MISSING)))
        setattr(c, attr, member)
    for f, ops in sites.default_sites:
        saved_defaults.append((f, f.__defaults__))
        f.__defaults__ = _wrapped_defaults(f, ops, wrapper_of)

    def undo_sites():
        for f, old in reversed(saved_defaults):
            f.__defaults__ = old
        for c, attr, old in reversed(saved_attrs):
            if old is _MISSING:
                delattr(c, attr)
            else:
                setattr(c, attr, old)
        for d, k, old in reversed(saved_globals):
            if old is _MISSING:
                d.pop(k, None)
            else:
                d[k] = old
    patcher._undo.append(undo_sites)
    seen = set(sites.ember_dicts)
    for d in extra_globals:
        if id(d) in seen:
            continue
        seen.add(id(d))
        g, st, de = [], [], []
        _scan_namespace(d, fns, g, st, de)
        for _, k, op in g:
            patcher.patch(d, k, wrapper_of(op))
        for c, attr, op in st:
            patcher.patch(c, attr, staticmethod(wrapper_of(op)))
        for f, ops in de:
            _patch_defaults(patcher, f, ops, wrapper_of)
    for cells in closures:
        for cell in cells or ():
            try:
                op = _op_of(cell.cell_contents, fns)
            except ValueError:  # an empty cell
                continue
            if op is not None:
                _patch_cell(patcher, cell, wrapper_of(op))


class _Plan:
    """What one wrap factory writes where: the sites' wrappers, made once per scan, and
    Tensor's swapped methods, remade when Tensor's own attributes change (a swap already
    holding them, a method added)."""
    __slots__ = ("generation", "globals", "attrs", "tensor_state", "__weakref__")


# wrap factory -> its _Plan
_plans = weakref.WeakKeyDictionary()


def _plan_of(wrap, sites):
    from ..._tensor import Tensor
    plan = _plans.get(wrap)
    tensor_vars = vars(Tensor)
    if plan is not None and plan.generation == sites.generation and \
            list(map(tensor_vars.get, plan.tensor_state[0])) == plan.tensor_state[1]:
        return plan
    plan = _Plan()
    plan.generation = sites.generation
    wrapper_of = functools.partial(_op_wrapper, wrap)
    plan.globals = [(d, k, wrapper_of(op)) for d, k, op in sites.globals_sites]
    attrs = [(c, attr, staticmethod(wrapper_of(op))) for c, attr, op in sites.static_sites]
    tracing = wrap is _recorder
    state = []
    for name, value in list(tensor_vars.items()):
        member = None
        if name in _OPERATOR_OF:
            member = _cached_wrap(wrap, "call_function", _OPERATOR_OF[name], value, None)
        elif name in _REFLECTED_OF:
            member = _cached_wrap(wrap, "call_function", _REFLECTED_OF[name], value,
                                  _swap_operands)
        elif name in _INPLACE_OF:
            member = _cached_wrap(wrap, "call_function", _INPLACE_OF[name], value, None)
        elif name == "__iter__":
            if tracing:
                member = _iter_recorder(value)
        elif name in _TENSOR_PROPERTIES and isinstance(value, property):
            if tracing:
                member = _property_recorder(name, value)
        elif not name.startswith("_") and isinstance(value, types.FunctionType):
            member = _cached_wrap(wrap, "call_method", name, value, None)
        if member is not None:
            attrs.append((Tensor, name, member))
            state.append((name, value))
    plan.attrs = attrs
    plan.tensor_state = ([n for n, _ in state], [v for _, v in state])
    _plans[wrap] = plan
    return plan


def _swap_operands(a):
    return (a[1], a[0])


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
