"""Tracked allocations: the bytes of live tensors over time, by op and by module.

**An Ember addition** (torch has no CPU equivalent; on CUDA see
``ember.cuda.memory._record_memory_history``). ``with ember.utils.memory.track(model) as t:``
records, for the code in the block:

* every array an Ember tensor is created around (``t.current``, ``t.peak``, ``t.timeline``);
* which op made it (the outermost Ember op running, or the backward node, ``MulBackward0``)
  and inside which module (its qualified name in ``model``; a module run outside ``model``
  by its class name);
* when it is freed;

and ``t.summary()`` prints the tables (``by_op``/``by_module`` hold the figures).

What is counted: the memory of each distinct array a result tensor holds, once, whoever holds
it: a view (``x.t()``, ``x[1:]``) costs nothing, an in-place op nothing, and the bytes are
freed when the last tensor or view on them goes. Arrays an op keeps without a tensor around
them (a convolution's cached im2col columns), tensors created before the block and views of
their memory are not counted: the figures are what the block *added*.

How it sees creation and release at no cost outside a block: while tracking, the two
functions every result tensor is made by (``_tensor._wrap`` and ``_wrap_with``) are swapped
wherever Ember binds them, each new array gets a weak reference whose callback records its
release, the ops are swapped for wrappers that name the running op (``make_fx``'s op swap,
``fx.experimental.proxy_tensor._patch_everything``), the autograd engine's ``_call_node`` for
one that names the backward node, and global module forward hooks keep the module stack;
entering a block walks the collector's objects once to note the arrays existing tensors hold.
All of it is undone when the block ends. The record is the process's: allocations made by
other threads during the block count too, named by whatever this thread is running.

On CUDA the same idea is torch's own API: ``ember.cuda.memory._record_memory_history``."""
import collections
import sys
import threading
import time
import weakref

__all__ = ["track", "MemoryTracker", "OpMemory"]

_active = None  # the MemoryTracker recording now (one at a time: the swaps are global)
_lock = threading.Lock()

OpMemory = collections.namedtuple(
    "OpMemory", ["name", "allocations", "allocated_bytes", "peak_bytes", "live_bytes"])
OpMemory.__doc__ = ("One row of a tracker's table: the allocations made under ``name``, their "
                    "total bytes, the bytes of them alive at the peak and alive at the end.")

_TOP_LEVEL = "<top level>"


def _format_size(size):
    from ..cuda.memory import _format_size as format_size
    return format_size(size) if size >= 0 else "-" + format_size(-size)


class MemoryTracker:
    """The record of one ``track()`` block (see the module docstring)."""

    def __init__(self, model=None, timeline=True):
        self._names = {}
        if model is not None:
            models = model if isinstance(model, (list, tuple)) else [model]
            for m in models:
                for name, sub in m.named_modules():
                    self._names.setdefault(id(sub), name or type(m).__name__)
        self._keep_timeline = timeline
        self.timeline = []  # (seconds since the start, live bytes, change, op, module)
        self.current = 0
        self.peak = 0
        self.allocated_bytes = 0
        self.freed_bytes = 0
        self._live = {}  # id(array) -> (weakref with the release callback, bytes, op, module)
        self._live_by_op = collections.Counter()
        self._live_by_module = collections.Counter()
        self._peak_by_op = {}
        self._peak_by_module = {}
        self._allocs_by_op = collections.Counter()
        self._bytes_by_op = collections.Counter()
        self._allocs_by_module = collections.Counter()
        self._bytes_by_module = collections.Counter()
        self._ops = []      # names of the ops running, outermost first
        self._modules = []  # qualified names of the modules running, outermost first
        self._node_module = weakref.WeakKeyDictionary()  # backward node -> module it came from
        self._before = {}  # id(array) -> weakref, the arrays tensors held when the block began
        self._t0 = None
        self._patcher = None
        self._handles = []

    # -- recording -------------------------------------------------------------------------

    def _allocated(self, data):
        root = _root(data)
        key = id(root)
        if key in self._live:
            return
        before = self._before.get(key)
        if before is not None and before() is root:
            return  # a view of memory a tensor from before the block holds
        try:
            ref = weakref.ref(root, self._make_release(key))
        except TypeError:  # an array type without weak references: not trackable
            return
        nbytes = int(root.nbytes)
        op = self._ops[0] if self._ops else sys._getframe(2).f_code.co_name
        module = self._modules[-1] if self._modules else _TOP_LEVEL
        self._live[key] = (ref, nbytes, op, module)
        self.current += nbytes
        self.allocated_bytes += nbytes
        self._live_by_op[op] += nbytes
        self._live_by_module[module] += nbytes
        self._allocs_by_op[op] += 1
        self._bytes_by_op[op] += nbytes
        self._allocs_by_module[module] += 1
        self._bytes_by_module[module] += nbytes
        if self.current > self.peak:
            self.peak = self.current
            self._peak_by_op = dict(self._live_by_op)
            self._peak_by_module = dict(self._live_by_module)
        if self._keep_timeline:
            self.timeline.append((time.perf_counter() - self._t0, self.current, nbytes, op,
                                  module))

    def _make_release(self, key):
        def released(_ref, self=self, key=key):
            entry = self._live.pop(key, None)
            if entry is None:
                return
            _, nbytes, op, module = entry
            self.current -= nbytes
            self.freed_bytes += nbytes
            self._live_by_op[op] -= nbytes
            self._live_by_module[module] -= nbytes
            if self._keep_timeline and self._t0 is not None:
                self.timeline.append((time.perf_counter() - self._t0, self.current, -nbytes,
                                      op, module))
        return released

    def _module_name(self, module):
        name = self._names.get(id(module))
        return name if name is not None else type(module).__name__

    # -- starting and stopping ----------------------------------------------------------------

    def __enter__(self):
        global _active
        from .. import _tensor
        from ..autograd import engine
        from ..fx._symbolic_trace import _Patcher
        from ..fx.experimental.proxy_tensor import _patch_everything
        from ..nn.modules.module import (register_module_forward_hook,
                                         register_module_forward_pre_hook)
        with _lock:
            if _active is not None:
                raise RuntimeError("ember.utils.memory.track: a tracker is already recording")
            _active = self
        self._before = _arrays_held_by_tensors()
        self._t0 = time.perf_counter()
        patcher = self._patcher = _Patcher().__enter__()
        try:
            _patch_everything(patcher, [], wrap=_naming_wrapper)
            wrap, wrap_with = _tensor._wrap, _tensor._wrap_with
            tracked_wrap, tracked_wrap_with = _tracked(wrap), _tracked(wrap_with)
            for name, mod in list(sys.modules.items()):
                if mod is None or not (name == "ember" or name.startswith("ember.")):
                    continue
                namespace = vars(mod)
                if namespace.get("_wrap") is wrap:
                    patcher.patch(namespace, "_wrap", tracked_wrap)
                if namespace.get("_wrap_with") is wrap_with:
                    patcher.patch(namespace, "_wrap_with", tracked_wrap_with)
            patcher.patch(vars(engine), "_call_node", _naming_call_node(engine._call_node))
            self._handles = [register_module_forward_pre_hook(self._enter_module),
                             register_module_forward_hook(self._exit_module, always_call=True)]
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        global _active
        for handle in self._handles:
            handle.remove()
        self._handles = []
        if self._patcher is not None:
            patcher, self._patcher = self._patcher, None
            patcher.__exit__(None, None, None)
        with _lock:
            if _active is self:
                _active = None
        # Releases after the block are no longer recorded: the figures stay as they ended.
        self._live = {key: (None,) + entry[1:] for key, entry in self._live.items()}
        self._before = {}
        return False

    def _enter_module(self, module, inputs):
        self._modules.append(self._module_name(module))

    def _exit_module(self, module, inputs, output):
        if self._modules:
            self._modules.pop()

    # -- results ------------------------------------------------------------------------------

    @property
    def live_bytes_at_exit(self):
        return sum(entry[1] for entry in self._live.values())

    def by_op(self):
        """One ``OpMemory`` per op name, largest share of the peak first."""
        return self._rows(self._allocs_by_op, self._bytes_by_op, self._peak_by_op,
                          self._live_by_op)

    def by_module(self, inclusive=False):
        """One ``OpMemory`` per module (qualified name); ``inclusive`` adds each module's
        submodules into it."""
        allocs, nbytes = self._allocs_by_module, self._bytes_by_module
        peak, live = self._peak_by_module, self._live_by_module
        if inclusive:
            def roll_up(table):
                out = collections.Counter()
                for name, value in table.items():
                    out[name] += value
                    parts = name.split(".")
                    for i in range(1, len(parts)):
                        if ".".join(parts[:i]) in allocs:
                            out[".".join(parts[:i])] += value
                return out
            allocs, nbytes, peak, live = (roll_up(t) for t in (allocs, nbytes, peak, live))
        return self._rows(allocs, nbytes, peak, live)

    @staticmethod
    def _rows(allocs, nbytes, peak, live):
        rows = [OpMemory(name, allocs[name], nbytes[name], peak.get(name, 0), live[name])
                for name in allocs]
        rows.sort(key=lambda r: (-r.peak_bytes, -r.allocated_bytes, r.name))
        return rows

    def summary(self, row_limit=10):
        """The peak, then tables by op and by module (top ``row_limit`` rows each)."""
        lines = [f"Peak live tensor memory: {_format_size(self.peak)}; allocated "
                 f"{_format_size(self.allocated_bytes)}, freed {_format_size(self.freed_bytes)}, "
                 f"live at exit {_format_size(self.live_bytes_at_exit)}", ""]
        for title, rows in (("Op", self.by_op()), ("Module", self.by_module())):
            rows = rows[:row_limit]
            width = max([len(title)] + [len(r.name) for r in rows]) + 2
            header = (f"{title:<{width}}{'Allocations':>13}{'Allocated':>14}{'At peak':>14}"
                      f"{'At exit':>14}")
            lines += [header, "-" * len(header)]
            lines += [f"{r.name:<{width}}{r.allocations:>13}{_format_size(r.allocated_bytes):>14}"
                      f"{_format_size(r.peak_bytes):>14}{_format_size(r.live_bytes):>14}"
                      for r in rows]
            lines.append("")
        return "\n".join(lines)

    def __repr__(self):
        return (f"MemoryTracker(peak={self.peak}, current={self.current}, "
                f"allocated={self.allocated_bytes}, freed={self.freed_bytes})")


def track(model=None, timeline=True):
    """``with track(model) as t:`` records the tensor memory the block allocates and frees
    (``t.peak``, ``t.summary()``); ``model`` (a Module or a list of them) names modules by
    their qualified names; ``timeline=False`` keeps only the totals."""
    return MemoryTracker(model, timeline=timeline)


def _root(data):
    while True:
        base = getattr(data, "base", None)
        if base is None or type(base) is not type(data):
            return data
        data = base


def _arrays_held_by_tensors():
    """The arrays (view roots) of every tensor alive now, so that a view taken of one inside
    the block (``weight.t()``) is not counted as new memory. One walk over the collector's
    objects when a block begins."""
    import gc
    from .._tensor import Tensor
    held = {}
    for obj in gc.get_objects():
        # type(), not isinstance(): isinstance also asks objects for __class__, which lazy
        # module proxies answer with warnings or imports
        if issubclass(type(obj), Tensor):
            data = getattr(obj, "_data", None)
            if data is None:
                continue
            root = _root(data)
            try:
                held[id(root)] = weakref.ref(root)
            except TypeError:
                pass
    return held


# -- the swaps ---------------------------------------------------------------------------------

def _tracked(make):
    def tracked(data, *args):
        t = make(data, *args)
        tracker = _active
        if tracker is not None:
            tracker._allocated(t._data)
        return t
    tracked.__wrapped__ = make
    return tracked


def _naming_wrapper(kind, target, fn, reorder):
    import functools
    # A method by its name, an operator (``operator.add``) by the function's, as the ops are
    # called in tables (``add``, ``matmul``, ``getitem``).
    name = target if kind == "call_method" else getattr(target, "__name__", None) or \
        getattr(fn, "__name__", str(target))

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        tracker = _active
        if tracker is None:
            return fn(*args, **kwargs)
        tracker._ops.append(name)
        try:
            out = fn(*args, **kwargs)
        finally:
            tracker._ops.pop()
        if tracker._modules:
            grad_fn = getattr(out, "grad_fn", None)
            if grad_fn is not None and grad_fn not in tracker._node_module:
                tracker._node_module[grad_fn] = tracker._modules[-1]
        return out
    return wrapper


def _naming_call_node(call_node):
    def call(node, grads):
        tracker = _active
        if tracker is None:
            return call_node(node, grads)
        module = tracker._node_module.get(node)
        tracker._ops.insert(0, node.name())  # the backward node names what its ops allocate
        if module is not None:
            tracker._modules.append(module)
        try:
            return call_node(node, grads)
        finally:
            tracker._ops.pop(0)
            if module is not None:
                tracker._modules.pop()
    return call
