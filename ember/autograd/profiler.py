"""``torch.autograd.profiler``: ``profile``, ``record_function``, ``emit_nvtx``.

How ops are seen: while a profile records, every Ember op — wherever Ember binds it, and in
the globals of the code that entered the profile — is swapped for a timing wrapper through
``ember.fx.experimental.proxy_tensor._patch_everything`` (the swap ``make_fx`` records with).
The wrapper opens an event, runs the op, and closes it; an op that another op runs inside
itself becomes that op's child (torch's total vs self time). With no profile recording nothing
is swapped, so eager dispatch is unchanged; ``record_function`` then costs one global read.

The backward pass is seen through one hook in ``ember/autograd/engine.py`` (a module-level
``None`` check when no profile records): each node run is the event
``autograd::engine::evaluate_function: <Node>`` with the node's own event as its child, both
carrying the node's sequence number, which the forward op that made the node carries too (and
the Chrome trace links them with a "fwdbwd" flow).
"""
import functools
import itertools
import operator
import os
import sys
import threading
import time
import types
import warnings
import weakref
from contextlib import ContextDecorator

from .profiler_util import EventList, FunctionEvent, FunctionEventAvg, DeviceType  # noqa: F401

__all__ = ["profile", "record_function", "emit_nvtx", "emit_itt", "EventList",
           "FunctionEvent", "FunctionEventAvg"]

_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

#: the recorder now recording (the op wrappers are process-wide, so one at a time)
_active = None
_start_lock = threading.Lock()

# ---------------------------------------------------------------------------------------------
# Op names and FLOP counts
# ---------------------------------------------------------------------------------------------

# Python's operator functions, by the aten op torch names for them.
_OPERATOR_NAMES = {operator.add: "add", operator.sub: "sub", operator.mul: "mul",
                   operator.truediv: "div", operator.floordiv: "floor_divide",
                   operator.mod: "remainder", operator.pow: "pow", operator.matmul: "matmul",
                   operator.and_: "bitwise_and", operator.or_: "bitwise_or",
                   operator.xor: "bitwise_xor", operator.lshift: "__lshift__",
                   operator.rshift: "__rshift__", operator.eq: "eq", operator.ne: "ne",
                   operator.lt: "lt", operator.le: "le", operator.gt: "gt", operator.ge: "ge",
                   operator.neg: "neg", operator.pos: "positive", operator.abs: "abs",
                   operator.invert: "bitwise_not", operator.getitem: "index",
                   operator.setitem: "index_put_"}
# The in-place operators (``x += y``) are the in-place ops (``add_``).
_OPERATOR_NAMES.update({operator.iadd: "add_", operator.isub: "sub_", operator.imul: "mul_",
                        operator.itruediv: "div_", operator.ifloordiv: "floor_divide_",
                        operator.imod: "remainder_", operator.ipow: "pow_",
                        operator.imatmul: "matmul_", operator.iand: "bitwise_and_",
                        operator.ior: "bitwise_or_", operator.ixor: "bitwise_xor_"})

# Tensor methods that read metadata or drive autograd: not ops, so never events.
_NOT_OPS = frozenset({
    "backward", "register_hook", "register_post_accumulate_grad_hook", "retain_grad", "size",
    "dim", "ndimension", "numel", "nelement", "stride", "is_contiguous", "data_ptr",
    "element_size", "get_device", "is_floating_point", "is_complex", "is_signed", "tolist",
    "numpy", "storage_offset", "untyped_storage", "storage", "dim_order", "is_pinned",
    "is_shared", "is_set_to", "is_inference", "is_conj", "is_neg", "has_names",
    "__repr__", "__format__", "__reduce_ex__", "__array__"})


# Ops that return no tensor but are ops in torch's profiles too (in-place ones ending in "_"
# are kept as well).
_KEPT_WITHOUT_TENSOR = frozenset({"item", "equal", "allclose", "index_put_", "is_nonzero"})


def _op_name(kind, target, fn):
    if kind == "call_method":
        return target
    name = _OPERATOR_NAMES.get(target)
    if name is not None:
        return name
    return getattr(fn, "__name__", str(target))


def _shape(x):
    return tuple(x._data.shape)


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _arg(args, kwargs, i, name):
    return args[i] if len(args) > i else kwargs.get(name)


def _flops_mm(args, kwargs, out, i=0):
    a, b = _shape(args[i]), _shape(args[i + 1])
    return 2 * a[0] * a[1] * b[1]


def _flops_bmm(args, kwargs, out):
    a, b = _shape(args[0]), _shape(args[1])
    return 2 * a[0] * a[1] * a[2] * b[2]


def _flops_contract(args, kwargs, out):
    # matmul and linear: each output element is a dot product over the first operand's last
    # dimension (torch counts these on the mm/addmm its matmul/linear run).
    return 2 * _numel(_shape(out)) * _shape(args[0])[-1]


def _flops_conv(args, kwargs, out):
    weight = _shape(_arg(args, kwargs, 1, "weight"))
    # weight is (C_out, C_in / groups, *kernel): one multiply-add per output element, input
    # channel of its group and kernel position.
    return 2 * _numel(_shape(out)) * weight[1] * _numel(weight[2:])


def _flops_elementwise(args, kwargs, out):
    return _numel(_shape(out))


_FLOP_COUNTS = {"mm": _flops_mm, "addmm": functools.partial(_flops_mm, i=1),
                "bmm": _flops_bmm, "matmul": _flops_contract, "linear": _flops_contract,
                "conv1d": _flops_conv, "conv2d": _flops_conv, "conv3d": _flops_conv,
                "add": _flops_elementwise, "mul": _flops_elementwise}

_DTYPE_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
                "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int",
                "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
                "bool": "bool", "complex64": "c10::complex<float>",
                "complex128": "c10::complex<double>"}


# ---------------------------------------------------------------------------------------------
# The recorder
# ---------------------------------------------------------------------------------------------

_Tensor = None


def _tensor_type():
    global _Tensor
    if _Tensor is None:
        from .._tensor import Tensor
        _Tensor = Tensor
    return _Tensor


def _user_frame():
    """The innermost frame outside Ember: the user's code."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_EMBER_DIR):
        f = f.f_back
    return f


def _user_stack():
    frames = []
    f = _user_frame()
    while f is not None:
        frames.append(f"{f.f_code.co_filename}({f.f_lineno}): {f.f_code.co_name}")
        f = f.f_back
    return frames


def _root(array):
    while getattr(array, "base", None) is not None:
        array = array.base
    return array


class _Recorder:
    """Collects events while it is ``_active``; its wrappers are swapped in between
    ``install`` and ``uninstall``."""

    def __init__(self, record_shapes=False, profile_memory=False, with_stack=False,
                 with_flops=False, use_cuda=False, nvtx=False):
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.use_cuda = use_cuda
        self.nvtx = nvtx
        self.events = []
        self._local = threading.local()
        self._all_stacks = []  # every thread's stack of open events
        self._ids = itertools.count(1)
        self._fwd_threads = {}
        self._cuda_pending = []
        self._patcher = None
        self.total_allocated = 0
        self.base_ns = time.perf_counter_ns()
        self.epoch_us = time.time_ns() / 1000.0

    # -- swapping the ops in and out ----------------------------------------------------------
    def install(self, user_globals=()):
        from ..fx._symbolic_trace import _Patcher
        from ..fx.experimental.proxy_tensor import _patch_everything
        self._patcher = _Patcher().__enter__()
        try:
            _patch_everything(self._patcher, list(user_globals), wrap=_timing_wrapper)
            _patch_labelled_calls(self._patcher)
        except BaseException:
            self._patcher.__exit__(None, None, None)
            self._patcher = None
            raise

    def uninstall(self):
        if self._patcher is not None:
            patcher, self._patcher = self._patcher, None
            patcher.__exit__(None, None, None)

    def start(self):
        global _active
        from . import engine
        with _start_lock:
            if _active is not None:
                raise RuntimeError("Profiler is already enabled on this thread")
            self.base_ns = time.perf_counter_ns()
            self.epoch_us = time.time_ns() / 1000.0
            if self.use_cuda:
                self._cuda_reference = self._cuda_event()
            _active = self
            engine._node_profiler = _profile_node

    def stop(self):
        global _active
        from . import engine
        with _start_lock:
            if _active is self:
                _active = None
                engine._node_profiler = None
        now = self._now()
        # Ranges still open (a record_function entered but not exited) end with the profile.
        for stack in self._all_stacks:
            while stack:
                ev = stack.pop()
                if ev is not None:
                    ev.end_us = now
        self._resolve_cuda()

    # -- events -------------------------------------------------------------------------------
    def _now(self):
        return (time.perf_counter_ns() - self.base_ns) / 1000.0

    def _stack(self):
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
            self._local.tid = threading.get_native_id()
            self._all_stacks.append(stack)
        return stack

    def open(self, name, category="cpu_op", shapes_of=None):
        stack = self._stack()
        tid = self._local.tid
        if self.nvtx:
            from ..cuda import nvtx
            if shapes_of is not None and self.record_shapes:
                # torch's NVTX range names carry the input sizes the same way
                shapes = types.SimpleNamespace()
                self._shapes(shapes, *shapes_of)
                name = f"{name}, sizes = {shapes.input_shapes}"
            nvtx.range_push(name)
            stack.append(None)
            return None
        parent = stack[-1] if stack else None
        ev = FunctionEvent._recorded(next(self._ids), name, tid, category)
        if parent is not None:
            ev.cpu_parent = parent
            parent.cpu_children.append(ev)
        if self.with_stack:
            ev.stack = _user_stack()
        if shapes_of is not None and self.record_shapes:
            self._shapes(ev, *shapes_of)
        self.events.append(ev)
        stack.append(ev)
        if self.use_cuda:
            ev._cuda_start = self._cuda_event()
        ev.start_us = self._now()
        return ev

    def close(self, ev):
        end = self._now()
        stack = self._stack()
        if self.nvtx:
            from ..cuda import nvtx
            if stack:
                stack.pop()
                nvtx.range_pop()
            return
        if ev is None:
            return
        ev.end_us = end
        if self.profile_memory and ev.cpu_children:
            # A range's memory is its children's (an op's own outputs are added in _memory).
            ev.cpu_memory_usage = sum(c.cpu_memory_usage for c in ev.cpu_children)
            ev.device_memory_usage = sum(c.device_memory_usage for c in ev.cpu_children)
        if self.use_cuda and getattr(ev, "_cuda_start", None) is not None:
            self._cuda_pending.append((ev, ev._cuda_start, self._cuda_event()))
        while stack:
            if stack.pop() is ev:
                break

    def _shapes(self, ev, args, kwargs):
        Tensor = _tensor_type()
        shapes, kinds = [], []
        for a in itertools.chain(args, kwargs.values()):
            if isinstance(a, Tensor):
                shapes.append(list(a._data.shape))
                kinds.append(_DTYPE_NAMES.get(str(a._dtype).replace("ember.", ""),
                                              str(a._dtype)))
            else:
                shapes.append([])
                kinds.append("Scalar" if isinstance(a, (bool, int, float, complex)) else "")
        ev.input_shapes = shapes
        ev.input_types = kinds

    def run_op(self, name, base, fn, args, kwargs, reorder):
        stack = self._stack()
        if stack and stack[-1] is not None and stack[-1].name == name and \
                not stack[-1].cpu_children:
            # A Tensor method or operator that calls the op of its own name (``x.add(y)``
            # runs ``ember.add``) is one op, as in torch.
            return fn(*args, **kwargs)
        shown = reorder(args) if reorder is not None else args
        ev = self.open(name, "cpu_op", (shown, kwargs))
        try:
            out = fn(*args, **kwargs)
        finally:
            self.close(ev)
        if ev is not None:
            self._finish(ev, base, shown, kwargs, out)
        return out

    def _finish(self, ev, base, args, kwargs, out):
        Tensor = _tensor_type()
        outs = [out] if isinstance(out, Tensor) else \
            [o for o in out if isinstance(o, Tensor)] if isinstance(out, (tuple, list)) else []
        if not outs and not ev.cpu_children and base not in _KEPT_WITHOUT_TENSOR and \
                not base.endswith("_"):
            # A Python value read from a tensor (``x.shape`` helpers, ``is_*`` queries): not an
            # op torch would record.
            self._discard(ev)
            return
        inputs = [a for a in args if isinstance(a, Tensor)]
        if kwargs:
            inputs += [a for a in kwargs.values() if isinstance(a, Tensor)]
        if outs:
            node = outs[0].grad_fn
            if node is not None and all(a.grad_fn is not node for a in inputs):
                seq = node._seq
                if seq != float("inf"):
                    ev.sequence_nr = seq
                    self._fwd_threads[seq] = ev.thread
        if self.with_flops:
            below = any(c.flops or c._flops_below for c in ev.cpu_children)
            ev._flops_below = below
            rule = _FLOP_COUNTS.get(base)
            if rule is not None and not below and outs:
                try:
                    ev.flops = int(rule(args, kwargs, outs[0]))
                except (AttributeError, IndexError, TypeError):
                    ev.flops = None  # an argument form the formula does not read
        if self.profile_memory:
            self._memory(ev, inputs, outs)

    def _discard(self, ev):
        if self.events and self.events[-1] is ev:
            self.events.pop()
        else:
            self.events.remove(ev)
        if ev.cpu_parent is not None:
            ev.cpu_parent.cpu_children.remove(ev)

    def _memory(self, ev, inputs, outs):
        """An op's memory is the bytes of the outputs it made itself: results that are views
        of an input, or that a child op already made, were not allocated by it."""
        seen = {id(_root(a._data)) for a in inputs}
        for c in ev.cpu_children:
            seen.update(c._allocated)
        made = set()
        cpu = device = 0
        for t in outs:
            root = _root(t._data)
            key = id(root)
            if key in seen or key in made:
                continue
            made.add(key)
            nbytes = int(getattr(root, "nbytes", 0))
            is_cuda = t._device.type == "cuda"
            if is_cuda:
                device += nbytes
            else:
                cpu += nbytes
            self._memory_event(nbytes, is_cuda, key, ev.end_us, ev.thread)
            try:
                # The recorder by weak reference: arrays that outlive the profile must not
                # keep its events alive.
                weakref.finalize(root, _freed, weakref.ref(self), nbytes, is_cuda,
                                 key).atexit = False
            except TypeError:
                pass  # an array type without weak references: its free is not seen
        for c in ev.cpu_children:
            made.update(c._allocated)
            cpu += c.cpu_memory_usage
            device += c.device_memory_usage
        ev._allocated = made
        ev.cpu_memory_usage = cpu
        ev.device_memory_usage = device

    def _memory_event(self, nbytes, is_cuda, addr, at_us, thread):
        self.total_allocated += nbytes
        ev = FunctionEvent(next(self._ids), "[memory]", thread, at_us, at_us,
                           cpu_memory_usage=0 if is_cuda else nbytes,
                           device_memory_usage=nbytes if is_cuda else 0,
                           category="cpu_instant_event")
        ev.addr = addr
        ev.total_allocated = self.total_allocated
        self.events.append(ev)

    # -- CUDA ---------------------------------------------------------------------------------
    def _cuda_event(self):
        from ..cuda import _cupy_or_none
        event = _cupy_or_none().cuda.Event()
        event.record()
        return event

    def _resolve_cuda(self):
        if not self._cuda_pending:
            return
        from ..cuda import _cupy_or_none
        cupy = _cupy_or_none()
        self._cuda_pending[-1][2].synchronize()
        index = cupy.cuda.runtime.getDevice()
        for ev, start, end in self._cuda_pending:
            ev.device_range_us = cupy.cuda.get_elapsed_time(start, end) * 1000.0
            ev.device_start_us = cupy.cuda.get_elapsed_time(self._cuda_reference, start) * 1e3
            ev.device_index = index
            ev._cuda_start = None
        self._cuda_pending = []


def _freed(recorder_ref, nbytes, is_cuda, addr):
    rec = recorder_ref()
    if rec is not None and _active is rec:
        rec._memory_event(-nbytes, is_cuda, addr, rec._now(), threading.get_native_id())


def _optimizer_range(method, fn):
    """torch labels each optimizer call "Optimizer.step#Adam.step" (zero_grad alike)."""
    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        rec = _active
        if rec is None:
            return fn(self, *args, **kwargs)
        label = f"Optimizer.{method}#{type(self).__name__}.{method}"
        stack = rec._stack()
        if stack and stack[-1] is not None and stack[-1].name == label:
            return fn(self, *args, **kwargs)  # a subclass's step calling super().step()
        with record_function(label):
            return fn(self, *args, **kwargs)
    return wrapper


def _data_loader_range(fn):
    """torch labels each batch fetched "enumerate(DataLoader)#_SingleProcessDataLoaderIter.
    __next__"."""
    @functools.wraps(fn)
    def wrapper(self):
        if _active is None:
            return fn(self)
        with record_function(f"enumerate(DataLoader)#{type(self).__name__}.__next__"):
            return fn(self)
    return wrapper


def _patch_labelled_calls(patcher):
    """The ranges torch's own classes open: optimizer steps and data loader batches."""
    loader = sys.modules.get("ember.utils.data.dataloader")
    if loader is not None:
        base = loader._BaseDataLoaderIter
        patcher.patch(base, "__next__", _data_loader_range(base.__next__))
    optim = sys.modules.get("ember.optim.optimizer")
    if optim is None:
        return
    base = optim.Optimizer
    patcher.patch(base, "zero_grad", _optimizer_range("zero_grad", base.zero_grad))
    classes, seen = [base], set()
    while classes:
        cls = classes.pop()
        if cls in seen:
            continue
        seen.add(cls)
        classes.extend(cls.__subclasses__())
        step = cls.__dict__.get("step")
        # Only a step already wrapped with the step hooks (the class has instances): an
        # unwrapped one gets its hooks from the first instance, which must find the original.
        if step is not None and getattr(step, "hooked", False):
            wrapped = _optimizer_range("step", step)
            wrapped.hooked = True
            patcher.patch(cls, "step", wrapped)


def _timing_wrapper(kind, target, fn, reorder):
    """The wrap factory ``_patch_everything`` is given: a wrapper that times ``fn`` while a
    recorder is active and calls straight through otherwise."""
    if kind == "call_method" and target in _NOT_OPS:
        return fn
    base = _op_name(kind, target, fn)
    name = "aten::" + base

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        rec = _active
        if rec is None:
            return fn(*args, **kwargs)
        return rec.run_op(name, base, fn, args, kwargs, reorder)
    return wrapper


class _NodeProfiler:
    """The engine's hook: a backward node's run as torch names it, the event
    ``autograd::engine::evaluate_function: <Node>`` (the run and the summing of the gradients
    it sends on) around the node's own event."""

    def enter(self, node, grads=None):
        rec = _active
        if rec is None:
            return None
        name = node.name()
        seq = node._seq if node._seq != float("inf") else -1
        outer = rec.open(f"autograd::engine::evaluate_function: {name}")
        inner = rec.open(name)
        if inner is not None:
            for ev in (outer, inner):
                ev.sequence_nr = seq
                ev.fwd_thread = rec._fwd_threads.get(seq, ev.thread) if seq >= 0 else None
            inner.is_backward = True
            if rec.record_shapes and grads is not None:
                Tensor = _tensor_type()
                inner.input_shapes = [list(g._data.shape) if isinstance(g, Tensor) else []
                                      for g in grads]
        return rec, outer, inner

    def called(self, token):
        if token is not None:
            token[0].close(token[2])

    def exit(self, token):
        if token is not None:
            rec, outer, inner = token
            if inner is not None and inner.end_us == 0.0:
                rec.close(inner)
            rec.close(outer)

    def run(self, node, call, *args):
        token = self.enter(node)
        try:
            return call(*args)
        finally:
            self.called(token)
            self.exit(token)


_profile_node = _NodeProfiler()


# Defaults for the attributes the recorder adds to events.
FunctionEvent.is_backward = False
FunctionEvent.device_start_us = 0.0
FunctionEvent.total_allocated = 0
FunctionEvent.addr = 0
FunctionEvent._flops_below = False
FunctionEvent._allocated = frozenset()
FunctionEvent._cuda_start = None


# ---------------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------------

class record_function(ContextDecorator):
    """Label a block of code (or, as a decorator, a function) in the profile: its range is an
    event of its own (category "user_annotation") and the ops inside are its children."""

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self._recorder = None
        self._event = None

    def __enter__(self):
        rec = _active
        if rec is not None:
            self._recorder = rec
            self._event = rec.open(self.name, "user_annotation")
            if self._event is not None and self.name.startswith("ProfilerStep#"):
                # torch keys every step range as one name; the trace keeps the number.
                self._event.trace_name = self.name
                self._event.name = "ProfilerStep*"
        return self

    def __exit__(self, *exc):
        rec, self._recorder = self._recorder, None
        if rec is not None and rec is _active:
            rec.close(self._event)
        self._event = None
        return False


class profile:
    """``torch.autograd.profiler.profile``: record every Ember op run inside the ``with``
    block; read the results after it with ``table``, ``key_averages``, ``export_chrome_trace``
    or ``function_events``."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False,
                 with_flops=False, profile_memory=False, with_stack=False, with_modules=False,
                 use_kineto=False, use_cpu=True, experimental_config=None, acc_events=False,
                 custom_trace_id_callback=None):
        self.enabled = enabled
        self.function_events = None
        self.entered = False
        if not enabled:
            return
        if use_cuda:
            warnings.warn("The attribute `use_cuda` will be deprecated soon, please use "
                          "``use_device = 'cuda'`` instead.", FutureWarning, stacklevel=2)
            use_device = "cuda"
        if use_device not in (None, "cuda"):
            raise ValueError(f"profile: use_device={use_device!r} is not a device Ember "
                             "profiles; use None or 'cuda'")
        if use_device == "cuda":
            from .. import cuda
            if not cuda.is_available():
                warnings.warn("CUDA is not available, disabling CUDA profiling")
                use_device = None
        if not use_cpu:
            raise NotImplementedError("profile(use_cpu=False): Ember measures device time "
                                      "around the CPU-side op calls, so the CPU events are "
                                      "always recorded")
        self.use_device = use_device
        self.use_cuda = use_device == "cuda"
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        # with_modules, as in eager torch, adds nothing (it annotates TorchScript modules).
        self.with_modules = with_modules
        self.acc_events = acc_events
        self.entered = False
        self.function_events = None
        self._recorder = None
        self._metadata = {}

    # torch's profiler splits entering into these, for torch.profiler's schedule.
    def _prepare_trace(self, user_globals=None):
        if self._recorder is None:
            self._recorder = _Recorder(self.record_shapes, self.profile_memory,
                                       self.with_stack, self.with_flops, self.use_cuda)
            if user_globals is None:
                frame = _user_frame()
                user_globals = [frame.f_globals] if frame is not None else []
            self._recorder.install(user_globals)

    def _start_trace(self):
        self.entered = True
        try:
            self._recorder.start()
        except BaseException:
            self._recorder.uninstall()
            self._recorder = None
            raise

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self._prepare_trace()
        self._start_trace()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if not self.enabled:
            return False
        rec, self._recorder = self._recorder, None
        if rec is not None:
            rec.stop()
            rec.uninstall()
            self.function_events = EventList(
                rec.events, use_device=self.use_device, profile_memory=self.profile_memory,
                with_flops=self.with_flops, metadata=self._metadata,
                trace_start_epoch_us=rec.epoch_us)
        return False

    def _check_finish(self):
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")

    def __repr__(self):
        if self.function_events is None:
            return "<unfinished torch.autograd.profile>"
        return repr(self.function_events)

    def __str__(self):
        if self.function_events is None:
            return "<unfinished torch.autograd.profile>"
        return self.function_events.table()

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False, time_unit=None):
        self._check_finish()
        return self.function_events.table(
            sort_by=sort_by, row_limit=row_limit, max_src_column_width=max_src_column_width,
            max_name_column_width=max_name_column_width,
            max_shapes_column_width=max_shapes_column_width, header=header,
            top_level_events_only=top_level_events_only, time_unit=time_unit)

    table.__doc__ = EventList.table.__doc__

    def export_chrome_trace(self, path):
        self._check_finish()
        return self.function_events.export_chrome_trace(path)

    export_chrome_trace.__doc__ = EventList.export_chrome_trace.__doc__

    def export_stacks(self, path, metric="self_cpu_time_total"):
        self._check_finish()
        if not self.with_stack:
            raise AssertionError("export_stacks() requires with_stack=True")
        return self.function_events.export_stacks(path, metric)

    export_stacks.__doc__ = EventList.export_stacks.__doc__

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        self._check_finish()
        return self.function_events.key_averages(group_by_input_shape, group_by_stack_n,
                                                 group_by_overload_name)

    key_averages.__doc__ = EventList.key_averages.__doc__

    def total_average(self):
        self._check_finish()
        return self.function_events.total_average()

    total_average.__doc__ = EventList.total_average.__doc__

    @property
    def self_cpu_time_total(self):
        """The sum of every event's self CPU time (us)."""
        self._check_finish()
        return self.function_events.self_cpu_time_total


class emit_nvtx:
    """Push an NVTX range for every Ember op (and autograd node) run inside the block, for
    Nsight Systems (``nsys profile -t nvtx,cuda python script.py``). Needs CUDA: without it,
    entering raises as torch's CPU build does."""

    def __init__(self, enabled=True, record_shapes=False):
        self.enabled = enabled
        self.record_shapes = record_shapes
        self.entered = False
        self._recorder = None

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("NVTX annotation context manager is not reentrant")
        from .. import cuda
        if not cuda.is_available():
            raise RuntimeError("Can't use NVTX profiler - Ember has no CUDA device here "
                               "(ember.cuda.is_available() is False)")
        from ..cuda import nvtx
        nvtx._nvtx()  # raises if CuPy was built without NVTX
        self.entered = True
        rec = _Recorder(record_shapes=self.record_shapes, nvtx=True)
        frame = _user_frame()
        rec.install([frame.f_globals] if frame is not None else [])
        try:
            rec.start()
        except BaseException:
            rec.uninstall()
            raise
        self._recorder = rec
        return self

    def __exit__(self, *exc):
        if self._recorder is not None:
            rec, self._recorder = self._recorder, None
            rec.stop()
            rec.uninstall()
        self.entered = False
        return False


class emit_itt:
    """torch's ITT annotation for Intel VTune: Ember has no ITT instrumentation, so entering
    raises (``emit_nvtx`` is the Nsight Systems equivalent)."""

    def __init__(self, enabled=True, record_shapes=False):
        self.enabled = enabled
        self.record_shapes = record_shapes

    def __enter__(self):
        if self.enabled:
            from ..profiler.itt import _NO_ITT
            raise RuntimeError(_NO_ITT)
        return self

    def __exit__(self, *exc):
        return False
