"""The recording run of ``ember.compile``: one real call of the function, recorded op by op,
then cut into graphs at its graph breaks.

Capture design. Ember cannot rewrite bytecode, so instead of translating the function symbolically
it runs the function once, eagerly and for real, under the concrete tracer of
``ember.fx.experimental.proxy_tensor`` (the ``make_fx`` machinery: Ember's public ops, Tensor
methods and operators swapped for recording wrappers), with three additions:

* every op at the top level is recorded, also one that reads no traced value (``ember.zeros``,
  ``ember.randn``), so a replay makes fresh tensors and draws fresh random numbers, consuming
  the generator as eager does;
* a read of a tensor's value into Python — ``bool()``, ``int()``/``float()``/``index``,
  ``.item()``, ``.tolist()``, ``repr``/``format`` — is a **graph break**: the recording notes
  where it happened, which tensor it read and the Python value it got, and the function goes on
  with that value. An op whose output shape comes from the data (``nonzero``, boolean-mask
  indexing, ``unique``…, or any op that read a traced tensor's value inside) ends a graph the
  same way: it runs on its own and the shapes it gave are the break's value;
* the ``side_effects.Watcher`` looks for Python effects a replay would skip.

Afterwards the recorded op list is cut at the breaks into graphs (``ember.fx.GraphModule``: a
graph's inputs are the function's tensors and the outputs of earlier graphs it reads; its
outputs are what later graphs, break reads and the return value need; parameters and buffers
stay ``get_attr``), each compiled by the backend. Consecutive ops recorded under different grad
modes (``with no_grad():`` inside the function) go to different graphs, each replayed under its
mode. ``eval_frame`` replays them: graph, read the break value, follow the path recorded for that
value, next graph… A value never seen before means recording again (``recompile``).

What the capture does not do: translate Python (a replay never re-runs the function's Python, so
anything Python computes is baked into the graphs and must be covered by a guard or a break key),
symbolic shapes (a recording is made at concrete sizes; ``eval_frame`` reuses it for other sizes of
a dimension only where no size read could have baked that size in), or resume in the middle of a
function (a break with a new value re-records the whole call, after restoring the tensors and
random generators that the graphs before it changed)."""
import operator
import sys

from ..fx.experimental import proxy_tensor as _pt
from ..fx.graph import Graph
from ..fx.graph_module import GraphModule
from ..fx.node import Node, map_aggregate
from . import exc
from .side_effects import Watcher, user_stack, where, _SCALARS

__all__ = ["capture", "Recording"]

# Ops whose output shape is read from the data, not from the input shapes.
_DATA_DEPENDENT = {"nonzero", "argwhere", "masked_select", "unique", "unique_consecutive",
                   "bincount", "repeat_interleave", "masked_select_backward"}
# Tensor methods that read a tensor's value into Python: each is a graph break.
_CONVERSIONS = ("__bool__", "__int__", "__float__", "__index__", "__complex__", "item", "tolist",
                "__repr__", "__format__")
# Tensor methods that hand the tensor's memory to code Ember cannot see: the function runs eagerly.
_ESCAPES = ("numpy", "__array__", "__dlpack__", "data_ptr", "untyped_storage", "storage")


class Break:
    """One graph break of a recording. ``kind`` is "value" (a Python read of ``node``'s tensor
    by ``method``) or "shape" (the data-dependent op recorded in nodes ``start:end``, whose
    output ``nodes`` shapes are the key)."""

    def __init__(self, kind, reason, stack, cut, key, node=None, method=None, start=None,
                 nodes=()):
        self.kind, self.reason, self.user_stack = kind, reason, stack
        self.cut, self.key, self.node, self.method = cut, key, node, method
        self.start, self.nodes = start, list(nodes)


def _key(v):
    """A hashable form of a Python value read from a tensor (type included: 1 and 1.0 and True
    are different outcomes)."""
    if isinstance(v, list):
        return (list, tuple(_key(x) for x in v))
    return (type(v), v)


class _CaptureTracer(_pt._ConcreteTracer):
    record_all = True

    def __init__(self, module, attr_paths, fullgraph):
        from ..nn import Module
        super().__init__(Module(), attr_paths)
        self.module = module
        self.fullgraph = fullgraph
        self.breaks = []
        self.effect = None      # an Unsupported: the reason the function must run eagerly
        self.fatal = None       # an Unsupported raised for fullgraph=True
        self.data_read_in_op = False
        self.rng_used = False
        self.uses_rng = False
        self.mutated = {}       # id -> pre-existing tensor (input, parameter, buffer) an op changed
        self.modes = {}         # node -> (grad enabled, inference mode) it was recorded under
        self.size_reads = []    # sizes the function's own code read (shape, size(), len, numel)
        self._versions = ()

    # ---- ops ---------------------------------------------------------------------------------
    def op_started(self, args, kwargs):
        from .._tensor import Tensor
        self.data_read_in_op = False
        self.rng_used = False
        versions = []

        def look(x):
            if isinstance(x, Tensor):
                versions.append((x, x._version))
            return x
        map_aggregate((args, kwargs), look)
        self._versions = versions

    def record(self, kind, target, args, kwargs, out):
        # The bookkeeping below runs as if inside the op: nothing in it is recorded or watched.
        _pt._state.depth += 1
        try:
            return self._record(kind, target, args, kwargs, out)
        finally:
            _pt._state.depth -= 1

    def _record(self, kind, target, args, kwargs, out):
        from ..autograd.grad_mode import _state as grad_state
        for t, v in self._versions:   # before recording rebinds an in-place op's output
            if t._version != v:
                self._note_mutation(t)
        before = self.graph._len
        out = super().record(kind, target, args, kwargs, out)
        new = []
        n = self.graph._root._prev
        for _ in range(self.graph._len - before):
            new.append(n)
            n = n._prev
        new.reverse()
        mode = (grad_state.enabled, grad_state.inference)
        amp = sys.modules.get("ember.amp.autocast_mode")
        if amp is not None and amp.active and self.effect is None:
            # An op casts under autocast inside itself; a replay outside autocast would not.
            self.set_effect("autocast entered inside the compiled function", user_stack())
        for node in new:
            self.modes[node] = mode
        main = next((x for x in new if x.op != "get_attr"), None)
        if main is None:
            return out
        if self.rng_used:
            main.meta["nondeterministic"] = True
            self.uses_rng = True
        name = target if isinstance(target, str) else getattr(target, "__name__", "")
        dd = name in _DATA_DEPENDENT or self.data_read_in_op or (
            target is operator.getitem and _has_mask_index(args))
        if dd and out is not None:
            self._shape_break(name or str(target), new, main, out)
        return out

    def _note_mutation(self, t):
        base = t._base if t._base is not None else t
        for x in (t, base):
            entry = self.values.get(id(x))
            node = entry[1] if entry is not None and entry[0] is x else None
            if (node is not None and node.op in ("placeholder", "get_attr")) or \
                    id(x) in self.attr_paths:
                self.mutated[id(x)] = x

    def _shape_break(self, name, new, main, out):
        from .._tensor import Tensor
        stack = user_stack()
        reason = f"{name}: an op whose output shape depends on the tensor's data"
        if self.fullgraph:
            self.fail(f"{reason}, at {where(stack)}", stack)
        outs = [out] if isinstance(out, Tensor) else [o for o in out if isinstance(o, Tensor)]
        nodes = [self.values[id(o)][1] for o in outs]
        start = self.graph._len - len(new)
        self.breaks.append(Break("shape", reason, stack, self.graph._len,
                                 tuple(tuple(o.shape) for o in outs), start=start, nodes=nodes))

    # ---- Python reads and escapes ------------------------------------------------------------
    def value_break(self, t, method, args, kwargs, value):
        stack = user_stack()
        reason = (f"Tensor.{method.strip('_')}() reads the tensor's value into Python "
                  "(data-dependent control flow or a Python number)")
        if self.fullgraph:
            self.fail(f"{reason}, at {where(stack)}", stack)
        _pt._state.depth += 1
        try:
            node = self.node_of(t)
        finally:
            _pt._state.depth -= 1
        self.breaks.append(Break("value", reason, stack, self.graph._len, _key(value),
                                 node=node, method=(method, args, kwargs)))

    def set_effect(self, reason, stack):
        if self.effect is None:
            self.effect = exc.Unsupported(f"{reason}, at {where(stack)}", stack)

    def fail(self, msg, stack):
        self.fatal = exc.Unsupported(msg, stack)
        raise self.fatal


def _contains_only_tensors(out):
    from .._tensor import Tensor
    if isinstance(out, Tensor):
        return True
    return isinstance(out, (tuple, list)) and all(isinstance(o, Tensor) for o in out)


def _has_mask_index(args):
    from .._tensor import Tensor
    from .. import _dtype as dt
    idx = args[1] if len(args) > 1 else None
    items = idx if isinstance(idx, (tuple, list)) else (idx,)
    return any(isinstance(i, Tensor) and i.dtype in (dt.bool, dt.uint8) for i in items)


def _conversion(method, original):
    def wrapper(self, *args, **kwargs):
        tracer = getattr(_pt._state, "tracer", None)
        if not isinstance(tracer, _CaptureTracer):
            return original(self, *args, **kwargs)
        if _pt._state.depth:
            if tracer.is_traced(self):
                tracer.data_read_in_op = True
            return original(self, *args, **kwargs)
        _pt._state.depth += 1
        try:
            value = original(self, *args, **kwargs)
        finally:
            _pt._state.depth -= 1
        tracer.value_break(self, method, args, kwargs, value)
        return value
    wrapper.__name__ = getattr(original, "__name__", method)
    return wrapper


def _escape(method, original):
    def wrapper(self, *args, **kwargs):
        tracer = getattr(_pt._state, "tracer", None)
        if isinstance(tracer, _CaptureTracer) and not _pt._state.depth:
            stack = user_stack()
            reason = (f"Tensor.{method.strip('_')}() gives the tensor's memory to code Ember "
                      "cannot record")
            if tracer.fullgraph:
                tracer.fail(f"{reason}, at {where(stack)}", stack)
            tracer.set_effect(reason, stack)
        return original(self, *args, **kwargs)
    wrapper.__name__ = getattr(original, "__name__", method)
    return wrapper


def _rng_watch(sampler):
    def wrapper(*args, **kwargs):
        tracer = getattr(_pt._state, "tracer", None)
        if isinstance(tracer, _CaptureTracer):
            tracer.rng_used = True
        return sampler(*args, **kwargs)
    return wrapper


# Tensor methods that read sizes into Python: a graph is reused for other sizes of a dynamic
# dimension only if no such read could have baked the dimension's size into it.
_SIZE_READS = ("shape", "size", "__len__", "numel", "nelement", "stride")


def _size_read(name, original):
    getter = original.fget if isinstance(original, property) else original

    def wrapper(self, *args, **kwargs):
        value = getter(self, *args, **kwargs)
        tracer = getattr(_pt._state, "tracer", None)
        if isinstance(tracer, _CaptureTracer) and not _pt._state.depth:
            tracer.size_reads.append(value)
        return value
    return property(wrapper) if isinstance(original, property) else wrapper


def _patch_capture(patcher):
    from .._tensor import Tensor
    from .. import _random
    for name in _SIZE_READS:
        for klass in Tensor.__mro__:
            if name in klass.__dict__:
                patcher.patch(Tensor, name, _size_read(name, klass.__dict__[name]))
                break
    for name in _CONVERSIONS:
        fn = Tensor.__dict__.get(name)
        if fn is not None:
            patcher.patch(Tensor, name, _conversion(name, getattr(Tensor, name)))
    for name in _ESCAPES:
        if name in Tensor.__dict__:
            patcher.patch(Tensor, name, _escape(name, getattr(Tensor, name)))
    original = _random.sampler
    watch = _rng_watch(original)
    for modname, mod in list(sys.modules.items()):
        if mod is not None and modname.startswith("ember.") and \
                vars(mod).get("sampler") is original:
            patcher.patch(vars(mod), "sampler", watch)


class _Slot:
    """Where a value of the return template comes from: position ``pos`` of the recording."""
    __slots__ = ("pos",)

    def __init__(self, pos):
        self.pos = pos


class Recording:
    """One recorded call: its nodes (positions: index in ``nodes``), breaks, return template,
    the tensors it changed in place, and why it cannot be replayed (``effect``), if so."""

    def __init__(self, tracer, nodes, n_inputs, template, example_of):
        self.tracer = tracer
        self.nodes = nodes
        self.pos = {n: i for i, n in enumerate(nodes)}
        self.n_inputs = n_inputs
        self.breaks = tracer.breaks
        self.template = template
        self.example_of = example_of
        self.effect = tracer.effect
        self.mutated = list(tracer.mutated.values())
        self.uses_rng = tracer.uses_rng
        self.modes = tracer.modes
        self.size_reads = tracer.size_reads

    def resolve_attr(self, target):
        """The object a get_attr ``target`` names: a constant of the capture or a module path."""
        holder = self.tracer.root
        for root in (holder, self.tracer.module):
            obj = root
            try:
                for atom in target.split("."):
                    obj = getattr(obj, atom)
                return obj
            except AttributeError:
                continue
        raise RuntimeError(f"ember.compile: cannot resolve graph attribute {target!r}")

    # ---- cutting into graphs -----------------------------------------------------------------
    def pieces(self):
        """The steps of this recording: ``[(ranges, brk)]``, where ``ranges`` are the
        ``(start, end, eager)`` node ranges run before ``brk`` (None: the return)."""
        steps = []
        prev = self.n_inputs
        for brk in self.breaks:
            if brk.kind == "value":
                steps.append(([(prev, brk.cut, False)], brk))
            else:
                steps.append(([(prev, brk.start, False), (brk.start, brk.cut, True)], brk))
            prev = brk.cut
        steps.append(([(prev, len(self.nodes), False)], None))
        return steps

    def split_modes(self, start, end):
        """``start:end`` cut where the grad mode changes: ``[(start, end, mode)]``."""
        out = []
        cur = None
        for i in range(start, end):
            n = self.nodes[i]
            if n.op == "get_attr":
                continue
            m = self.modes.get(n)
            if cur is None or m != cur[2]:
                cur = [i, i + 1, m]
                out.append(cur)
            else:
                cur[1] = i + 1
        return [tuple(c) for c in out]

    def needed_after(self, end):
        """Positions before ``end`` read at or after ``end``: by later nodes, by break reads
        at ``end`` or later, or by the return template."""
        need = set()
        for i in range(end, len(self.nodes)):
            for a in self.nodes[i].all_input_nodes:
                p = self.pos[a]
                if p < end and a.op != "get_attr":
                    need.add(p)
        for brk in self.breaks:
            if brk.cut >= end:
                for n in ([brk.node] if brk.kind == "value" else brk.nodes):
                    p = self.pos[n]
                    if p < end and n.op != "get_attr":
                        need.add(p)

        def look(x):
            if isinstance(x, _Slot) and x.pos < end and self.nodes[x.pos].op != "get_attr":
                need.add(x.pos)
            return x
        map_aggregate(self.template, look)
        return need

    def build_graph(self, start, end, outputs):
        """A GraphModule of the nodes ``start:end``: placeholders for the positions read from
        before ``start``, returning the tuple of ``outputs`` (positions)."""
        g = Graph()
        body = [n for n in self.nodes[start:end] if n.op != "get_attr"]
        inputs = sorted({self.pos[a] for n in body for a in n.all_input_nodes
                         if a.op != "get_attr" and self.pos[a] < start})
        env = {}
        for p in inputs:
            src = self.nodes[p]
            ph = g.placeholder(f"in_{src.name}")
            ph.meta = dict(src.meta)
            env[src] = ph
        attrs = {}

        def arg(a):
            if a not in env:
                if a.op != "get_attr":
                    raise RuntimeError(f"ember.compile: node {a.name} read before it is made")
                env[a] = g.node_copy(a)
                attrs[a.target] = self.resolve_attr(a.target)
            return env[a]
        for n in body:
            env[n] = g.node_copy(n, arg)
        outs = tuple(env[self.nodes[p]] if p >= start else None for p in outputs)
        g.output(outs)
        gm = GraphModule(attrs, g, "GraphModule")
        examples = [self.example_of[self.nodes[p]] for p in inputs]
        return gm, inputs, examples

    def signature(self, ranges, brk):
        """What must be equal for two recordings to share a step: the ops, their arguments
        (positions for nodes) and the break."""
        def leaf(x):
            if isinstance(x, Node):
                return ("a", x.target) if x.op == "get_attr" else ("n", self.pos[x])
            if isinstance(x, _SCALARS):
                return (type(x), x)
            return type(x).__name__

        sig = []
        for start, end, _ in ranges:
            for n in self.nodes[start:end]:
                if n.op != "get_attr":
                    tgt = n.target if isinstance(n.target, str) else id(n.target)
                    sig.append((n.op, tgt, map_aggregate((n.args, n.kwargs), leaf)))
        if brk is not None:
            read = (brk.method[0], repr(brk.method[1:])) if brk.kind == "value" else \
                tuple(self.pos[n] for n in brk.nodes)
            node = leaf(brk.node) if brk.kind == "value" else None
            sig.append(("break", brk.kind, read, node))
        return tuple(repr(s) for s in sig)


def flatten_args(args, kwargs):
    """The tensors of ``(args, kwargs)`` in order, the other leaves, and a hashable structure."""
    from .._tensor import Tensor
    tensors, leaves, spec = [], [], []

    def walk(x):
        if isinstance(x, Tensor):
            tensors.append(x)
            spec.append("T")
        elif isinstance(x, (tuple, list)):
            spec.append((type(x), len(x)))
            for v in x:
                walk(v)
        elif isinstance(x, dict):
            spec.append((dict, tuple(x)))
            for v in x.values():
                walk(v)
        else:
            leaves.append(x)
            spec.append("L")
    walk(args)
    walk(kwargs)
    return tensors, leaves, tuple(spec)


def capture(fn, args, kwargs, *, module=None, fullgraph=False):
    """Run ``fn(*args, **kwargs)`` once under the recorder; returns ``(result, Recording)``.
    ``module`` (if any) has its parameters and buffers recorded as ``get_attr`` of their paths."""
    from .._tensor import Tensor
    from ..fx._symbolic_trace import _Patcher
    if getattr(_pt._state, "tracer", None) is not None:
        raise RuntimeError("ember.compile: a compiled function was called while another one "
                           "is being recorded (or inside make_fx)")
    attr_paths = {}
    if module is not None:
        attr_paths = {id(p): n for n, p in module.named_parameters(remove_duplicate=False)}
        attr_paths.update({id(b): n for n, b in module.named_buffers(remove_duplicate=False)})
    tracer = _CaptureTracer(module, attr_paths, fullgraph)
    flat, _, _ = flatten_args(args, kwargs)
    example_of = {}
    bound = set()
    for i, t in enumerate(flat):
        ph = tracer.graph.placeholder(f"arg{i}")
        if id(t) not in bound:   # a repeated tensor is read from its first placeholder
            tracer.bind(t, ph)
            bound.add(id(t))
        else:
            ph.meta["tensor_meta"] = tracer.values[id(t)][1].meta.get("tensor_meta")
        example_of[ph] = t
    user_fns = [getattr(fn, "__func__", fn)]
    if module is not None:
        user_fns += [type(m).forward for m in module.modules()]
    watcher = Watcher(tracer.set_effect)
    from ..autograd.grad_mode import _state as grad_state
    grad_mode = (grad_state.enabled, grad_state.inference)
    with _Patcher() as patcher:
        _pt._patch_everything(patcher, [g for g in (getattr(f, "__globals__", None)
                                                    for f in user_fns) if g is not None],
                              [getattr(f, "__closure__", None) for f in user_fns])
        _patch_capture(patcher)
        _pt._state.tracer, _pt._state.depth = tracer, 0
        try:
            with watcher:
                out = fn(*args, **kwargs)
        finally:
            _pt._state.tracer = None
    if tracer.fatal is not None:
        raise tracer.fatal
    from ..autograd.grad_mode import _state as grad_state
    if (grad_state.enabled, grad_state.inference) != grad_mode:
        tracer.set_effect("the function leaves grad mode or inference mode changed",
                          user_stack(None) or [])

    def template(x):
        if isinstance(x, Tensor):
            node = tracer.node_of(x)
            return _Slot(node)
        if isinstance(x, _SCALARS) or x is Ellipsis:
            return x
        from .._dtype import dtype
        from .._device import device
        if isinstance(x, (dtype, device)) or not watcher.is_new(x):
            return x
        tracer.set_effect(f"the function returns a {type(x).__name__} made inside it, which a "
                          "replay cannot make", user_stack(None) or [])
        return x
    tmpl = map_aggregate(out, template)
    nodes = list(tracer.graph.nodes)
    pos = {n: i for i, n in enumerate(nodes)}
    tmpl = map_aggregate(tmpl, lambda x: _Slot(pos[x.pos]) if isinstance(x, _Slot) else x)
    for t_id, (t, node) in tracer.values.items():
        if isinstance(t, Tensor) and isinstance(node, Node):
            example_of.setdefault(node, t)
    rec = Recording(tracer, nodes, len(flat), tmpl, example_of)
    rec.watcher = watcher
    rec.call_args = (args, kwargs)
    rec.example_inputs = flat
    if fullgraph and rec.effect is not None:
        raise rec.effect
    return out, rec
