"""``ember.accelerator``: the device-agnostic accelerator API of ``torch.accelerator``.

The accelerator is the first non-CPU backend in Ember's registry (``ember.backends``) whose
library is present: CUDA when CuPy is installed, otherwise a registered third-party backend
(the role torch gives its PrivateUse1 device). On a machine with neither, nothing is
available and every call that needs a device raises torch's "Cannot access accelerator device
when none is available." error.

Streams, memory statistics and graphs are CUDA's (``ember.cuda``): for a third-party backend
they raise, saying the backend has none, unless it offers them itself.
"""
import importlib.util

from ._device import device as _device

__all__ = ["current_accelerator", "current_device_idx", "current_device_index", "device_count",
           "device_index", "is_available", "set_device_idx", "set_device_index", "synchronize",
           "current_stream", "set_stream", "empty_cache", "empty_host_cache", "get_memory_info",
           "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
           "memory_stats", "reset_accumulated_memory_stats", "reset_peak_memory_stats",
           "get_device_capability", "Graph"]

_NONE_AVAILABLE = "Cannot access accelerator device when none is available."
_current_index = {}  # device type -> index chosen by set_device_index


def _built_type():
    """The accelerator's device type whose backend library is present, or None."""
    from .backends import registered_device_types
    types = [t for t in registered_device_types() if t != "cpu"]
    if "cuda" in types:
        types.remove("cuda")
        # Built: CuPy installed (torch's "compiled with CUDA"), or a CUDA backend running
        # over another CuPy-compatible module (the test suite's conformance device).
        from . import cuda
        if importlib.util.find_spec("cupy") is not None or cuda.is_available():
            return "cuda"
    return types[0] if types else None


def _count(device_type):
    if device_type == "cuda":
        from . import cuda
        return cuda.device_count()
    from .backends import get_backend
    try:
        backend = get_backend(_device(device_type, 0))
    except Exception:  # a backend that cannot start has no usable device
        return 0
    counter = getattr(backend, "device_count", None)
    return counter() if callable(counter) else 1


def current_accelerator(check_available=False):
    """The accelerator's ``ember.device`` (index None), or None when there is none. With
    ``check_available=True`` a present backend with no usable device also gives None."""
    device_type = _built_type()
    if device_type is None or (check_available and _count(device_type) == 0):
        return None
    return _device(device_type)


def is_available():
    device_type = _built_type()
    return device_type is not None and _count(device_type) > 0


def device_count():
    device_type = _built_type()
    return 0 if device_type is None else _count(device_type)


def _require():
    device_type = _built_type()
    if device_type is None or _count(device_type) == 0:
        raise RuntimeError(_NONE_AVAILABLE)
    return device_type


def current_device_index():
    device_type = _require()
    if device_type == "cuda":
        from . import cuda
        return cuda.current_device()
    return _current_index.get(device_type, 0)


def set_device_index(device, /):
    """Make ``device`` (an index, or a device of the accelerator's type) the current one."""
    device_type = _require()
    index = _index_of(device, device_type)
    count = _count(device_type)
    if not 0 <= index < count:
        raise RuntimeError(f"Invalid device index {index}: the {device_type} accelerator has "
                           f"{count} device{'s' if count != 1 else ''}")
    if device_type == "cuda":
        from . import cuda
        cuda.set_device(index)
    _current_index[device_type] = index


def _index_of(device, device_type):
    if isinstance(device, str):
        device = _device(device)
    if isinstance(device, _device):
        if device.type != device_type:
            raise ValueError(f"{device.type} doesn't match the current accelerator {device_type}.")
        return device.index if device.index is not None else _current_index.get(device_type, 0)
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    raise TypeError(f"Expected a torch.device, str or int as device, got {type(device).__name__}")


def _deprecated_index_alias(name, target):
    import warnings

    def alias(*args, **kwargs):
        warnings.warn(f"Use `{target.__name__}` instead.", FutureWarning, stacklevel=2)
        return target(*args, **kwargs)
    alias.__name__ = name
    alias.__doc__ = f"Deprecated alias of ``{target.__name__}``."
    return alias


current_device_idx = _deprecated_index_alias("current_device_idx", current_device_index)
set_device_idx = _deprecated_index_alias("set_device_idx", set_device_index)


def synchronize(device=None, /):
    """Wait for all queued work on ``device`` (default: the current accelerator device)."""
    device_type = _require()
    index = _current_index.get(device_type, 0) if device is None else _index_of(device, device_type)
    from .backends import get_backend
    get_backend(_device(device_type, index)).synchronize()


class device_index:
    """Context manager: make ``device`` the current accelerator index for its body, restoring
    the previous one afterwards; ``None`` changes nothing."""

    def __init__(self, device, /):
        self.idx = device
        self.prev_idx = -1

    def __enter__(self):
        if self.idx is not None:
            self.prev_idx = current_device_index()
            set_device_index(self.idx)

    def __exit__(self, *exc_info):
        if self.idx is not None:
            set_device_index(self.prev_idx)


def _cuda_only(what):
    """The accelerator's type, which must be CUDA for ``what`` (a third-party backend has no
    streams, allocator statistics or graphs that Ember knows of)."""
    device_type = _require()
    if device_type != "cuda":
        raise RuntimeError(f"torch.accelerator.{what} is not available for the '{device_type}' "
                           f"accelerator: its Ember backend has no {what.split('(')[0]} support")
    from . import cuda
    return cuda


def _cuda_index(device, what):
    cuda = _cuda_only(what)
    return cuda, (cuda.current_device() if device is None else _index_of(device, "cuda"))


def current_stream(device=None, /):
    """The current stream of ``device`` (default: the current accelerator device)."""
    cuda, index = _cuda_index(device, "current_stream")
    return cuda.current_stream(index)


def set_stream(stream):
    """Make ``stream`` current, and its device the current device."""
    cuda = _cuda_only("set_stream")
    cuda.set_device(stream.device_index)
    cuda.set_stream(stream)


def empty_cache():
    """Return the allocator's unused cached memory to the device."""
    _cuda_only("empty_cache").empty_cache()


def empty_host_cache():
    """Return the pinned host allocator's unused cached memory (CuPy's pinned pool)."""
    cuda = _cuda_only("empty_host_cache")
    cuda._lazy_init().get_default_pinned_memory_pool().free_all_blocks()


def get_memory_info(device_index=None, /):
    """``(free, total)`` bytes of the device."""
    cuda, index = _cuda_index(device_index, "get_memory_info")
    return cuda.mem_get_info(index)


def memory_stats(device_index=None, /):
    """``ember.cuda.memory_stats`` of the device."""
    cuda, index = _cuda_index(device_index, "memory_stats")
    return cuda.memory_stats(index)


def memory_allocated(device_index=None, /):
    return memory_stats(device_index).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device_index=None, /):
    return memory_stats(device_index).get("allocated_bytes.all.peak", 0)


def memory_reserved(device_index=None, /):
    return memory_stats(device_index).get("reserved_bytes.all.current", 0)


def max_memory_reserved(device_index=None, /):
    return memory_stats(device_index).get("reserved_bytes.all.peak", 0)


def reset_accumulated_memory_stats(device_index=None, /):
    cuda, index = _cuda_index(device_index, "reset_accumulated_memory_stats")
    cuda.reset_accumulated_memory_stats(index)


def reset_peak_memory_stats(device_index=None, /):
    cuda, index = _cuda_index(device_index, "reset_peak_memory_stats")
    cuda.reset_peak_memory_stats(index)


def get_device_capability(device=None, /):
    """``{"supported_dtypes": set of ember dtypes}``: the dtypes of Ember's tensors, which every
    backend stores (each op's own dtype support is the op's)."""
    device_type = _require()
    if device is not None:
        _index_of(device, device_type)  # the same checks of the argument as everywhere
    from . import _dtype
    return {"supported_dtypes": set(_dtype._ALL)}


class Graph:
    """``torch.accelerator.Graph``: capture the current stream's work and replay it, over
    ``ember.cuda.CUDAGraph``; as a context manager it synchronizes, empties the caches and
    captures its body."""

    def __init__(self, keep_graph=False, *, pool=None, capture_error_mode="default"):
        cuda = _cuda_only("Graph")
        self._graph = cuda.CUDAGraph(keep_graph)
        self.graph_pool = pool
        # torch's "default" is the CUDA graph's own default, global capture
        self.capture_error_mode = ("global" if capture_error_mode == "default"
                                   else capture_error_mode)

    def capture_begin(self):
        self._graph.capture_begin(self.graph_pool, capture_error_mode=self.capture_error_mode)

    def capture_end(self):
        self._graph.capture_end()

    def instantiate(self):
        self._graph.instantiate()

    def replay(self):
        self._graph.replay()

    def reset(self):
        self._graph.reset()

    def pool(self):
        return self._graph.pool()

    def enable_debug_mode(self):
        self._graph.enable_debug_mode()

    def debug_dump(self, path):
        self._graph.debug_dump(path)

    def __enter__(self):
        synchronize()
        empty_cache()
        empty_host_cache()
        self.capture_begin()

    def __exit__(self, *exc_info):
        self.capture_end()
