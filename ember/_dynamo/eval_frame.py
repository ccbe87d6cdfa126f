"""Compiled callables: the cache of recordings, guarded replay, recompiles and the eager
fallback, as ``torch._dynamo.eval_frame`` (``optimize``, ``OptimizedModule``, ``disable``).

A compiled function keeps a list of cache entries, one per recorded input signature. An entry
is a guard (``guards.build_guard``) and a tree of steps: a step runs its compiled graphs, then
either returns (the return value filled in from the graphs' outputs) or reads its break's value
(``bool(t)``, ``t.item()``, a data-dependent op's output shapes) and goes on to the child step
recorded for that value. A call whose guards all fail records a new entry; a break value with no
child yet records the call again (after putting back what the graphs already ran changed: the
tensors they write in place and the random generators) and adds the new path to the tree. Each
recording counts against ``config.recompile_limit``; past it, or when a recording found an
effect it cannot replay, the function runs eagerly from then on (with a warning), so a compiled
function always computes what the eager one would."""
import functools
import logging
import threading
import warnings
import weakref

from . import config, exc
from .backends.registry import lookup_backend
from .convert_frame import capture, flatten_args, _Slot
from .guards import build_guard
from .utils import counters
from ..fx.experimental import proxy_tensor as _pt
from ..fx.node import map_aggregate, has_side_effect
from ..nn import Module

__all__ = ["optimize", "OptimizedModule", "disable", "reset", "explain", "is_compiling"]

_MODES = (None, "default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs",
          "max-autotune")
_compiled_functions = weakref.WeakSet()
_local = threading.local()   # .disabled: depth of ``disable``d calls on this thread
_counters = {"recordings": 0}
_log = logging.getLogger("ember._dynamo")


def is_compiling():
    """True while a compiled function is being recorded (its Python runs only then)."""
    from .convert_frame import _CaptureTracer
    return isinstance(getattr(_pt._state, "tracer", None), _CaptureTracer)


class _Miss(Exception):
    """A break value the tree has no path for."""


class _Call:
    """One compiled graph of a step: its callable, the positions it reads and writes, and the
    grad mode it was recorded under."""
    __slots__ = ("fn", "in_pos", "out_pos", "mode", "start", "end", "eager", "gm")

    def __init__(self, fn, in_pos, out_pos, mode, start, end, eager, gm):
        self.fn, self.in_pos, self.out_pos, self.mode = fn, in_pos, out_pos, mode
        self.start, self.end, self.eager, self.gm = start, end, eager, gm


class _Step:
    __slots__ = ("calls", "brk", "read", "children", "template", "sig")

    def __init__(self, sig):
        self.calls, self.brk, self.read, self.children = [], None, None, {}
        self.template, self.sig = None, sig


class _Entry:
    __slots__ = ("guard", "guard_text", "root", "fast", "mutated", "uses_rng", "graphs",
                 "dynamic", "core", "shapes")

    def __init__(self, guard, guard_text, dynamic=None, core=None, shapes=()):
        self.guard, self.guard_text = guard, guard_text
        self.root, self.fast, self.mutated, self.uses_rng = None, None, [], False
        self.graphs = []
        self.dynamic = dynamic or {}   # input index -> dims whose size is symbolic
        self.core = core               # what must match for two recordings to share a graph
        self.shapes = shapes           # the input shapes it was recorded at


def _set_mode(mode):
    from ..autograd.grad_mode import _state
    _state.enabled, _state.inference = mode


class _CompiledFunction:
    """``fn`` compiled: called as ``fn`` is."""

    def __init__(self, fn, backend, fullgraph, dynamic, mode, options, name=None):
        self._fn = fn
        self._backend_name = backend if isinstance(backend, str) else \
            getattr(backend, "__name__", repr(backend))
        self._backend = lookup_backend(backend)
        self._options = _backend_options(backend, mode, options)
        self._fullgraph = fullgraph
        self._dynamic = dynamic
        self._entries = []
        self._eager_reason = None
        self._recordings = 0
        self._name = name or getattr(fn, "__qualname__", getattr(fn, "__name__", repr(fn)))
        owner = getattr(fn, "__self__", None)
        self._module = owner if isinstance(owner, Module) else None
        self._fast_specs = {}
        self.recompile_reasons = []
        _compiled_functions.add(self)
        functools.update_wrapper(self, fn, updated=())

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def _reset(self):
        self._entries = []
        self._eager_reason = None
        self._recordings = 0
        self.recompile_reasons = []

    # ---- calling -----------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if self._eager_reason is not None or getattr(_local, "disabled", 0) or \
                getattr(_pt._state, "tracer", None) is not None:
            # Eager for good; inside ``disable``; or inside another recording, which records
            # this call's ops inline.
            return self._fn(*args, **kwargs)
        from .._tensor import Tensor
        if not kwargs and all(type(a) is Tensor for a in args):
            flat, leaves = args, ()
            spec = self._fast_specs.get(len(args))
            if spec is None:
                spec = self._fast_specs[len(args)] = flatten_args(args, {})[2]
        else:
            flat, leaves, spec = flatten_args(args, kwargs)
        for entry in self._entries:
            if entry.guard(flat, leaves, spec):
                fast = entry.fast
                if fast is not None:
                    return fast(flat)
                return self._replay(entry, flat, args, kwargs)
        return self._record(args, kwargs, None)

    def _replay(self, entry, flat, args, kwargs):
        saved = _snapshot(entry, flat) if entry.mutated or entry.uses_rng else None
        try:
            return _run_tree(entry.root, flat)
        except _Miss:
            if saved is not None:
                _restore(saved)
            return self._record(args, kwargs, entry)

    # ---- recording ---------------------------------------------------------------------------
    def _record(self, args, kwargs, entry):
        if config.error_on_recompile and self._recordings:
            raise exc.RecompileError(f"Recompiling function {self._name} "
                                     "(config.error_on_recompile is set)")
        if self._recordings >= config.recompile_limit or \
                _counters["recordings"] >= config.accumulated_recompile_limit:
            self._fall_back(f"ember._dynamo hit config.recompile_limit "
                            f"({config.recompile_limit})\n   function: {self._name!r}\n"
                            "   Running it eagerly from now on. To diagnose the recompiles, "
                            "see ember._dynamo.explain.")
            return self._fn(*args, **kwargs)
        if self._recordings:
            self._note_recompile(args, kwargs, entry)
        self._recordings += 1
        _counters["recordings"] += 1
        out, rec = capture(self._fn, args, kwargs, module=self._module,
                           fullgraph=self._fullgraph)
        if rec.effect is not None:
            self._fall_back(f"ember.compile: {self._name!r} runs eagerly: {rec.effect}")
            return out
        try:
            if entry is None:
                entry = self._new_entry(rec)
            self._add_path(entry, rec)
        except exc.Unsupported as e:
            self._fall_back(f"ember.compile: {self._name!r} runs eagerly: {e}")
        return out

    def _fall_back(self, message):
        self._eager_reason = message
        self._entries = []
        warnings.warn(message, stacklevel=3)

    def _new_entry(self, rec):
        from ..autograd.grad_mode import _state as grad_state
        flat, leaves, spec = flatten_args(*rec.call_args)
        modules = list(rec.watcher.modules.values())
        # The module itself, and modules passed as arguments (a compiled method's ``self``),
        # even where the call reached their forward without Module.__call__.
        for m in [self._module] + [x for x in leaves if isinstance(x, Module)]:
            if m is not None and all(m is not seen for seen in modules):
                modules.append(m)
        args = (flat, leaves, spec, modules, list(rec.watcher.dict_guards.values()), grad_state)
        guard, text = build_guard(*args)
        core = _core(rec, flat, text)
        dynamic = self._dynamic_dims(rec, flat, core)
        if dynamic:
            guard, text = build_guard(*args, dynamic=dynamic)
        entry = _Entry(guard, text, dynamic, core, tuple(tuple(t._data.shape) for t in flat))
        self._entries.insert(0, entry)   # the newest first, as torch checks its cache
        return entry

    # ---- dynamic shapes ----------------------------------------------------------------------
    def _dynamic_dims(self, rec, flat, core):
        """``{input index: dims}`` this recording's graph serves for any size >= 2, as torch's
        ``dynamic``: True, every dim; None (automatic), the dims whose size differs from an
        earlier recording that is the same in everything else (same guards and the same ops
        with the same arguments, so the size did not reach the graph); False, none; plus the
        ``mark_dynamic`` ones, less the ``mark_static`` ones. Ember has no symbolic integers,
        so a dim stays specialised where a size the function's Python read (``x.shape``,
        ``len(x)``…), or an integer argument of a recorded op not confirmed by an earlier
        recording, is a multiple of its size: that integer may have come from it."""
        if core is None:
            return {}
        prev = next((e for e in self._entries if e.core == core), None)
        read = _ints(rec.size_reads)
        in_args = None
        dynamic = {}
        for i, t in enumerate(flat):
            shape = tuple(t._data.shape)
            marked = set(getattr(t, "_dynamo_dynamic_indices", ()) or ())
            dims = set(range(len(shape))) if self._dynamic is True else set()
            dims |= {d for d in marked if d < len(shape)}
            dims |= {d for d in getattr(t, "_dynamo_weak_dynamic_indices", ()) or ()
                     if d < len(shape)}
            confirmed = set()
            if prev is not None and self._dynamic is not False:
                confirmed = {d for d, (a, b) in enumerate(zip(prev.shapes[i], shape)) if a != b}
                confirmed |= prev.dynamic.get(i, set())
                dims |= confirmed
            static = set(getattr(t, "_dynamo_static_indices", ()) or ())
            dims -= static
            keep = set()
            for d in sorted(dims):
                v = shape[d]
                if v < 2 or any(r % v == 0 for r in read):
                    continue
                if d not in confirmed:
                    if in_args is None:
                        in_args = _ints([(n.args, n.kwargs) for n in rec.nodes[rec.n_inputs:]
                                         if _target_name(n) in _SIZE_ARG_OPS])
                    if any(r % v == 0 for r in in_args):
                        continue
                keep.add(d)
            lost = marked - keep - static
            if lost:
                warnings.warn(f"ember.compile: {self._name!r}: dims {sorted(lost)} of input {i} "
                              f"(shape {shape}) were marked dynamic but are specialised: their "
                              "size is 0 or 1, or the function read it into Python (Ember "
                              "has no symbolic integers)", stacklevel=4)
            if keep and t._data.flags.c_contiguous:
                dynamic[i] = keep
        return dynamic

    def _note_recompile(self, args, kwargs, entry):
        """Why this call records again: the first guard of the newest entry that fails (torch's
        ``recompiles`` log), counted in ``ember._dynamo.utils.counters["recompiles"]``."""
        if entry is not None:
            reason = "a graph break value not seen before"
        elif not self._entries:
            return
        else:
            reason = _failed_guard(self._entries[0], args, kwargs)
        self.recompile_reasons.append(reason)
        counters["recompiles"][reason] += 1
        _log.info("Recompiling function %s\n    triggered by the following guard failure(s):"
                  "\n    - %s", self._name, reason)
        if config.verbose:
            print(f"ember._dynamo: recompiling {self._name}: {reason}")

    def _add_path(self, entry, rec):
        flat = rec.example_inputs
        for t in rec.mutated:
            idx = next((i for i, x in enumerate(flat) if x is t), None)
            source = ("input", idx) if idx is not None else ("obj", t)
            if not any(k == source[0] and v is source[1] for k, v in entry.mutated):
                entry.mutated.append(source)
        entry.uses_rng = entry.uses_rng or rec.uses_rng
        parent, key, step = None, None, entry.root
        for ranges, brk in rec.pieces():
            sig = rec.signature(ranges, brk)
            if step is None:
                step = self._new_step(rec, ranges, brk, sig, entry)
                if parent is None:
                    entry.root = step
                else:
                    parent.children[key] = step
            elif step.sig != sig:
                raise exc.Unsupported("the function recorded different graphs for the same "
                                      "guards and break values (it depends on state Ember "
                                      "does not guard)")
            else:
                self._widen(rec, step, entry)
            if brk is None:
                break
            parent, key, step = step, brk.key, step.children.get(brk.key)
        root = entry.root
        entry.fast = _fast_path(root, len(flat)) if root.brk is None else None

    def _new_step(self, rec, ranges, brk, sig, entry):
        step = _Step(sig)
        for start, end, eager in ranges:
            for s, e, mode in rec.split_modes(start, end):
                step.calls.append(self._compile_call(rec, s, e, mode, eager, None, entry))
        step.brk = brk
        if brk is None:
            step.template = map_aggregate(rec.template, lambda x: _resolve_slot(rec, x))
        elif brk.kind == "value":
            step.read = ("value", _source(rec, brk.node), brk.method)
        else:
            step.read = ("shape", [rec.pos[n] for n in brk.nodes], None)
        return step

    def _compile_call(self, rec, s, e, mode, eager, keep, entry):
        need = rec.needed_after(e)
        outs = sorted(p for p in need if s <= p < e)
        if keep:
            outs = sorted(set(outs) | set(keep))
        gm, in_pos, examples = rec.build_graph(s, e, outs)
        # A backend that specialises code to shapes (the inductor one) reads this to keep one
        # variant per shape of a graph the guards let run at several sizes.
        gm._ember_dynamic = bool(entry.dynamic)
        if eager:
            fn = gm.forward
        else:
            counters["stats"]["unique_graphs"] += 1
            try:
                fn = self._backend(gm, examples, **self._options)
            except Exception as err:
                if config.suppress_errors:
                    raise exc.Unsupported(f"backend {self._backend_name!r} failed: {err}")
                raise exc.BackendCompilerFailed(self._backend_name, err) from err
        entry.graphs.append(gm)
        return _Call(fn, in_pos, outs, mode, s, e, eager, gm)

    def _widen(self, rec, step, entry):
        """A later recording through ``step`` may need more of its outputs: recompile the
        graphs that must return more."""
        for i, call in enumerate(step.calls):
            need = {p for p in rec.needed_after(call.end) if call.start <= p < call.end}
            if not need <= set(call.out_pos):
                step.calls[i] = self._compile_call(rec, call.start, call.end, call.mode,
                                                   call.eager, call.out_pos, entry)


def _source(rec, node):
    if node.op == "get_attr":
        return ("obj", rec.resolve_attr(node.target))
    return ("pos", rec.pos[node])


def _resolve_slot(rec, x):
    if isinstance(x, _Slot):
        node = rec.nodes[x.pos]
        return _Const(rec.resolve_attr(node.target)) if node.op == "get_attr" else x
    return x


class _Const:
    """A return value that is the same object on every call (a tensor from outside)."""
    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj


def _run_calls(calls, env):
    from ..autograd.grad_mode import _state
    outer = (_state.enabled, _state.inference)
    try:
        for call in calls:
            if call.mode != (_state.enabled, _state.inference):
                _set_mode(call.mode)
            res = call.fn(*[env[p] for p in call.in_pos])
            for p, v in zip(call.out_pos, res):
                env[p] = v
    finally:
        if (_state.enabled, _state.inference) != outer:
            _set_mode(outer)


def _run_tree(step, flat):
    from .._tensor import Tensor
    env = dict(enumerate(flat))
    while True:
        _run_calls(step.calls, env)
        if step.brk is None:
            return map_aggregate(step.template, lambda x: env[x.pos] if isinstance(x, _Slot)
                                 else x.obj if isinstance(x, _Const) else x)
        kind, src, method = step.read
        if kind == "value":
            t = env[src[1]] if src[0] == "pos" else src[1]
            name, args, kwargs = method
            value = getattr(Tensor, name)(t, *args, **kwargs)
            from .convert_frame import _key
            key = _key(value)
        else:
            key = tuple(tuple(env[p].shape) for p in src)
        nxt = step.children.get(key)
        if nxt is None:
            raise _Miss()
        step = nxt


def _fast_path(root, n_inputs):
    """The replay of a one-graph entry without the step machinery: the common case."""
    if len(root.calls) != 1:
        return lambda flat: _run_tree(root, flat)
    call = root.calls[0]
    fn, in_pos = call.fn, call.in_pos
    index = {p: i for i, p in enumerate(call.out_pos)}
    tmpl = root.template
    straight = in_pos == list(range(n_inputs))
    from ..autograd.grad_mode import _state
    mode = call.mode

    if isinstance(tmpl, _Slot) and tmpl.pos in index:
        k = index[tmpl.pos]
        if straight:
            def run(flat):
                if mode != (_state.enabled, _state.inference):
                    return _run_tree(root, flat)
                return fn(*flat)[k]
            return run

    def fill(x, res, flat):
        if isinstance(x, _Slot):
            return res[index[x.pos]] if x.pos in index else flat[x.pos]
        return x.obj if isinstance(x, _Const) else x

    def run(flat):
        if mode != (_state.enabled, _state.inference):
            return _run_tree(root, flat)
        res = fn(*[flat[p] for p in in_pos])
        return map_aggregate(tmpl, lambda x: fill(x, res, flat))
    return run


def _snapshot(entry, flat):
    from .. import _random
    saved = [("rng", _random.default_states())]
    for kind, x in entry.mutated:
        t = flat[x] if kind == "input" else x
        saved.append(("tensor", t, t._data.copy()))
    return saved


def _restore(saved):
    from .. import _random
    for item in saved:
        if item[0] == "rng":
            _random.restore_default_states(item[1])
        else:
            item[1]._data[...] = item[2]


def _core(rec, flat, guard_text):
    """What two recordings must share for their graph to serve both: None where the recording
    has graph breaks (only a single straight path is reused across sizes)."""
    pieces = rec.pieces()
    if len(pieces) != 1:
        return None
    ranges, brk = pieces[0]
    n = len(flat)
    others = tuple(x for x in guard_text if not x.startswith("input ") or
                   not x.split(":")[0][6:].isdigit())
    inputs = tuple((t._data.ndim, t._dtype, t._device, bool(t._requires_grad),
                    bool(t._data.flags.c_contiguous)) for t in flat)
    return (n, inputs, others, rec.signature(ranges, brk))


# Ops whose integer arguments are sizes or positions, which may have come from a dim's size by a
# route the size-read watch does not see (``ember.numel(x)``, arithmetic on ``x.ndim``...).
_SIZE_ARG_OPS = {"view", "reshape", "expand", "broadcast_to", "zeros", "ones", "empty", "full",
                 "rand", "randn", "randint", "arange", "linspace", "logspace", "eye", "narrow",
                 "repeat", "tile", "new_zeros", "new_ones", "new_empty", "new_full", "unflatten",
                 "split", "tensor_split", "getitem", "__getitem__", "select", "pad",
                 "interpolate", "as_strided", "roll", "resize_", "unfold", "index_select",
                 "diagonal", "tril", "triu", "zeros_like", "ones_like"}


def _target_name(n):
    t = n.target
    return t if isinstance(t, str) else getattr(t, "__name__", "")


def _ints(obj):
    """The non-zero integers in a nest of tuples, lists and dicts (bools excluded)."""
    out = set()

    def walk(x):
        if isinstance(x, bool):
            return
        if isinstance(x, int):
            if x:
                out.add(abs(x))
        elif isinstance(x, (tuple, list)):
            for v in x:
                walk(v)
        elif isinstance(x, dict):
            for v in x.values():
                walk(v)
    walk(obj)
    return out


def _failed_guard(entry, args, kwargs):
    flat, leaves, spec = flatten_args(args, kwargs)
    for i, t in enumerate(flat):
        if i < len(entry.shapes) and tuple(t._data.shape) != entry.shapes[i]:
            dims = entry.dynamic.get(i, set())
            for d, (a, b) in enumerate(zip(entry.shapes[i], t._data.shape)):
                if a != b and (d not in dims or b < 2):
                    if d in dims:
                        return f"input {i} size at index {d}: expected >= 2, actual {b}"
                    return f"input {i} size mismatch at index {d}. expected {a}, actual {b}"
            if len(entry.shapes[i]) != t._data.ndim:
                return f"input {i} rank mismatch. expected {len(entry.shapes[i])}, " \
                       f"actual {t._data.ndim}"
    if entry.core is not None and len(flat) == entry.core[0]:
        for i, (t, want) in enumerate(zip(flat, entry.core[1])):
            for name, a, b in (("dtype", want[1], t._dtype), ("device", want[2], t._device),
                               ("requires_grad", want[3], bool(t._requires_grad))):
                if a != b:
                    return f"input {i} {name} mismatch. expected {a}, actual {b}"
    from ..autograd.grad_mode import _state
    for line in entry.guard_text:
        if line.startswith("grad_mode == ") and line != f"grad_mode == {_state.enabled}":
            return f"grad_mode mismatch. expected {line[13:]}, actual {_state.enabled}"
    return "a guard other than the input shapes failed (see explain(...).out_guards)"


def _backend_options(backend, mode, options):
    if mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: "
                           f"{', '.join(m for m in _MODES if m)}")
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    kwargs = dict(options or {})
    if mode is not None and mode != "default":
        kwargs["mode"] = mode
    return kwargs


# ---- public ----------------------------------------------------------------------------------
class OptimizedModule(Module):
    """What ``ember.compile(module)`` returns: calls run the compiled ``module.__call__``
    (hooks included); the original is ``_orig_mod`` (so ``state_dict`` keys carry the
    ``_orig_mod.`` prefix, as torch's); other attributes are the original's."""

    def __init__(self, mod, compiled):
        super().__init__()
        self._orig_mod = mod
        self.__dict__["_compiled_call"] = compiled
        self.__dict__["dynamo_ctx"] = compiled
        self.training = mod.training

    def forward(self, *args, **kwargs):
        return self.__dict__["_compiled_call"](*args, **kwargs)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name == "_orig_mod":
                raise
            return getattr(self._orig_mod, name)

    def __reduce__(self):
        raise TypeError("ember.compile'd modules cannot be pickled: pickle or save the "
                        "original (._orig_mod) instead")


def optimize(backend="inductor", *, nopython=False, dynamic=None, mode=None, options=None,
             disable=False):
    """A decorator compiling functions and modules with ``backend``, as
    ``torch._dynamo.optimize`` (``nopython`` is ``fullgraph``)."""
    def wrap(fn):
        return _compile(fn, fullgraph=nopython, dynamic=dynamic, backend=backend, mode=mode,
                        options=options, disable=disable)
    lookup_backend(backend)
    return wrap


def _compile(model, *, fullgraph, dynamic, backend, mode, options, disable):
    if disable:
        return model
    if isinstance(model, Module):
        compiled = _CompiledFunction(model.__call__, backend, fullgraph, dynamic, mode, options,
                                     name=type(model).__name__)
        return OptimizedModule(model, compiled)
    if not callable(model):
        raise RuntimeError(f"ember.compile expects a callable or a Module, got "
                           f"{type(model).__name__}")
    return _CompiledFunction(model, backend, fullgraph, dynamic, mode, options)


def _opaque(fn, *, disables):
    """``fn`` as one node of the recording: its ops are not recorded, the replay calls it
    (so what it does happens on every call). ``disables``: compiled functions it calls run
    eagerly."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from .convert_frame import _CaptureTracer, _contains_only_tensors
        tracer = getattr(_pt._state, "tracer", None)
        if disables:
            _local.disabled = getattr(_local, "disabled", 0) + 1
        try:
            if not isinstance(tracer, _CaptureTracer) or _pt._state.depth:
                return fn(*args, **kwargs)
            tracer.op_started(args, kwargs)
            _pt._state.depth += 1
            try:
                out = fn(*args, **kwargs)
            finally:
                _pt._state.depth -= 1
        finally:
            if disables:
                _local.disabled -= 1
        if not _contains_only_tensors(out):
            from .side_effects import user_stack
            tracer.set_effect(f"{getattr(fn, '__qualname__', fn)} (run outside the graph) "
                              f"returns a {type(out).__name__}, not tensors", user_stack())
            return out
        tracer.record("call_function", wrapper, args, kwargs, out)
        return out
    has_side_effect(wrapper)
    wrapper._ember_opaque = fn
    return wrapper


def disable(fn=None, recursive=True, *, reason=None):
    """``fn`` runs eagerly, also when called from a compiled function: the recording puts the
    whole call in its graph as one opaque node, run as it is on every replay (torch makes it a
    graph break; the effect is the same: ``fn``'s Python runs every time)."""
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)
    if not recursive:
        raise NotImplementedError("disable(recursive=False) (compile what fn calls but not fn "
                                  "itself) needs frame-level compilation Ember does not have")
    if isinstance(fn, _CompiledFunction):
        return fn._fn
    if isinstance(fn, Module):
        fn.forward = _opaque(fn.forward, disables=True)
        return fn
    return _opaque(fn, disables=True)


def allow_in_graph(fn):
    """``fn`` goes into the graph as one node, without recording inside it; every replay calls
    it. As in torch, ``fn`` must be a function of its tensor arguments returning tensors."""
    return _opaque(fn, disables=False)


def reset():
    """Forget every compiled function's recordings (they record again on the next call)."""
    for f in list(_compiled_functions):
        f._reset()
    _counters["recordings"] = 0
    counters.clear()


def explain(f, *extra_args, **extra_kwargs):
    """``explain(f)(*args, **kwargs)`` → ``ExplainOutput``: the graphs one recording of ``f``
    makes, its graph breaks and their reasons, its guards."""
    import time
    from .backends.debugging import ExplainOutput, GraphCompileReason

    def inner(*args, **kwargs):
        fn = f.__call__ if isinstance(f, Module) else f
        if isinstance(fn, _CompiledFunction):
            fn = fn._fn
        module = getattr(fn, "__self__", None)
        t0 = time.perf_counter()
        _, rec = capture(fn, args, kwargs, module=module if isinstance(module, Module) else None)
        graphs, reasons = [], []
        for ranges, brk in rec.pieces():
            for start, end, _ in ranges:
                for s, e, _mode in rec.split_modes(start, end):
                    outs = sorted(p for p in rec.needed_after(e) if s <= p < e)
                    graphs.append(rec.build_graph(s, e, outs)[0])
            if brk is not None:
                reasons.append(GraphCompileReason(brk.reason, brk.user_stack))
        if rec.effect is not None:
            reasons.append(GraphCompileReason(f"eager fallback: {rec.effect}",
                                              rec.effect.user_stack))
        from ..autograd.grad_mode import _state as grad_state
        flat, leaves, spec = flatten_args(args, kwargs)
        _, guard_text = build_guard(flat, leaves, spec, list(rec.watcher.modules.values()),
                                    list(rec.watcher.dict_guards.values()), grad_state)
        ops = [[str(n.target) if isinstance(n.target, str) else
                getattr(n.target, "__qualname__", str(n.target))
                for n in g.graph.nodes if n.op in ("call_function", "call_method")]
               for g in graphs]
        return ExplainOutput(graphs=graphs, graph_count=len(graphs),
                             graph_break_count=len(reasons), break_reasons=reasons,
                             op_count=sum(len(o) for o in ops), ops_per_graph=ops,
                             out_guards=guard_text,
                             compile_times=f"recording: {time.perf_counter() - t0:.4f} s")
    if extra_args or extra_kwargs:
        warnings.warn("explain(f, *args, **kwargs) is deprecated: use explain(f)(*args, "
                      "**kwargs)", FutureWarning, stacklevel=2)
        return inner(*extra_args, **extra_kwargs)
    return inner
