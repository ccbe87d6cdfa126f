"""``ember.cuda``: the torch.cuda surface, answered by the CUDA backend
(``ember/backends/cupy_backend.py``). CuPy is an optional extra: without it, or without a GPU,
the queries answer "no CUDA" (``is_available()`` is False, ``device_count()`` is 0) and the calls
that need a device raise torch's error, as torch's CPU build does.

The files mirror torch.cuda's: this one holds the devices, ``streams.py`` streams and events,
``memory.py`` the memory statistics and ``OutOfMemoryError``, ``graphs.py`` graph capture,
``nvtx.py`` profiler ranges, ``random.py`` the device generators.

CuPy is never imported here: every function asks the backend registered for "cuda" for its
``xp`` (CuPy's module), so a test can register the real ``CupyBackend`` over a stand-in for CuPy
(``tests/cuda/``) and run this whole namespace on it.
"""
from .._device import device as _device

__all__ = ["is_available", "device_count", "current_device", "set_device", "device",
           "device_of", "get_device_name", "get_device_capability", "get_device_properties",
           "synchronize", "manual_seed", "manual_seed_all", "is_initialized", "init",
           "is_tf32_supported", "is_bf16_supported", "can_device_access_peer",
           "get_stream_from_external",
           # streams.py
           "Stream", "ExternalStream", "Event", "StreamContext", "stream", "current_stream",
           "default_stream", "set_stream",
           # memory.py
           "OutOfMemoryError", "memory_allocated", "max_memory_allocated", "memory_reserved",
           "max_memory_reserved", "memory_cached", "max_memory_cached",
           "reset_peak_memory_stats", "reset_max_memory_allocated", "reset_max_memory_cached",
           "reset_accumulated_memory_stats", "empty_cache", "memory_stats",
           "memory_stats_as_nested_dict", "memory_summary", "memory_snapshot", "mem_get_info",
           "set_per_process_memory_fraction", "get_per_process_memory_fraction",
           # graphs.py
           "CUDAGraph", "graph", "graph_pool_handle", "is_current_stream_capturing",
           "make_graphed_callables",
           # random.py
           "get_rng_state", "get_rng_state_all", "set_rng_state", "set_rng_state_all", "seed",
           "seed_all", "initial_seed"]

_NOT_COMPILED = "Torch not compiled with CUDA enabled"


def _backend(index=0):
    """The CUDA backend of ``cuda:index``, or None where CUDA cannot run here (no CuPy, no
    driver, no device)."""
    from ..backends import BackendUnavailableError, get_backend
    try:
        return get_backend(_device("cuda", index))
    except BackendUnavailableError:
        return None


def _cupy_or_none():
    """CuPy's module as the CUDA backend uses it, else None: the only place this namespace
    looks for CuPy."""
    backend = _backend()
    return None if backend is None else backend.xp


def _lazy_init():
    cupy = _cupy_or_none()
    if cupy is None:
        raise AssertionError(_NOT_COMPILED)
    return cupy


def _index(device=None):
    """A device argument (None, an int, "cuda:1", an ember.device) as an index."""
    if device is None:
        return current_device()
    if isinstance(device, int):
        return device
    dev = device if isinstance(device, _device) else _device(device)
    if dev.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {dev}")
    return current_device() if dev.index is None else dev.index


def is_available():
    return device_count() > 0


def device_count():
    backend = _backend()
    return 0 if backend is None else backend.device_count()


def is_initialized():
    return is_available()


def init():
    _lazy_init()


def current_device():
    return _lazy_init().cuda.runtime.getDevice()


def set_device(device):
    index = _index(device)
    if index >= 0:  # torch ignores a negative index
        _lazy_init().cuda.runtime.setDevice(index)


class device:
    """Context manager that makes ``device`` current, and restores the previous one."""

    def __init__(self, device):
        self.idx = -1 if device is None else _index(device)
        self.prev_idx = -1

    def __enter__(self):
        if self.idx >= 0:
            self.prev_idx = current_device()
            if self.prev_idx != self.idx:
                set_device(self.idx)
        return self

    def __exit__(self, *exc):
        if self.idx >= 0 and self.prev_idx != self.idx:
            set_device(self.prev_idx)
        return False


def get_device_properties(device=None):
    cupy = _lazy_init()
    index = _index(device)
    if not 0 <= index < device_count():
        raise AssertionError("Invalid device id")
    return _DeviceProperties(cupy.cuda.runtime.getDeviceProperties(index))


def get_device_name(device=None):
    return get_device_properties(device).name


def get_device_capability(device=None):
    props = get_device_properties(device)
    return props.major, props.minor


class device_of(device):
    """Context manager that makes the device of tensor ``obj`` current; a CPU tensor (or
    None) changes nothing."""

    def __init__(self, obj):
        idx = obj.get_device() if obj is not None and obj.device.type == "cuda" else -1
        super().__init__(idx)


class _DeviceProperties:
    """torch.cuda's ``_CudaDeviceProperties`` fields, read from cudaGetDeviceProperties."""

    def __init__(self, raw):
        name = raw["name"]
        self.name = name.decode() if isinstance(name, bytes) else name
        self.major = raw["major"]
        self.minor = raw["minor"]
        self.total_memory = raw["totalGlobalMem"]
        self.multi_processor_count = raw["multiProcessorCount"]
        self.is_integrated = bool(raw.get("integrated", 0))
        self.is_multi_gpu_board = bool(raw.get("isMultiGpuBoard", 0))
        self.L2_cache_size = raw.get("l2CacheSize", 0)

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, "
                f"minor={self.minor}, total_memory={self.total_memory // (1024 * 1024)}MB, "
                f"multi_processor_count={self.multi_processor_count})")


def is_tf32_supported():
    """Whether the current device's tensor cores do TF32 (compute capability 8.0 on); False
    without CUDA, as torch's CPU build answers."""
    if not is_available():
        return False
    return get_device_capability()[0] >= 8


def is_bf16_supported(including_emulation=True):
    """Whether the current device computes in bfloat16: natively from compute capability 8.0
    (as torch decides); below it, with ``including_emulation``, where the backend has bfloat16
    arrays at all. False without CUDA, as torch's CPU build answers."""
    if not is_available():
        return False
    if get_device_capability()[0] >= 8:
        return True
    if not including_emulation:
        return False
    import ml_dtypes
    from ..backends import get_backend
    from .._device import device as _device
    return get_backend(_device("cuda", current_device())).supports_dtype(
        ml_dtypes.bfloat16)


def can_device_access_peer(device, peer_device):
    """Whether ``device`` can read and write ``peer_device``'s memory directly."""
    cupy = _lazy_init()
    index, peer = _index(device), _index(peer_device)
    count = device_count()
    if not 0 <= index < count:
        raise AssertionError("Invalid device id")
    if not 0 <= peer < count:
        raise AssertionError("Invalid peer device id")
    return bool(cupy.cuda.runtime.deviceCanAccessPeer(index, peer))


def get_stream_from_external(data_ptr, device=None):
    """An ``ExternalStream`` over a ``cudaStream_t`` another library made (an int)."""
    _lazy_init()
    return ExternalStream(data_ptr, device)


def synchronize(device=None):
    _lazy_init()
    from ..backends import get_backend
    get_backend(_device("cuda", _index(device))).synchronize()


from .streams import (Event, ExternalStream, Stream, StreamContext, current_stream,  # noqa: E402
                      default_stream, set_stream, stream)
from .memory import (OutOfMemoryError, empty_cache, get_per_process_memory_fraction,  # noqa: E402
                     max_memory_allocated, max_memory_cached, max_memory_reserved, mem_get_info,
                     memory_allocated, memory_cached, memory_reserved, memory_snapshot,
                     memory_stats, memory_stats_as_nested_dict, memory_summary,
                     reset_accumulated_memory_stats, reset_max_memory_allocated,
                     reset_max_memory_cached,
                     reset_peak_memory_stats, set_per_process_memory_fraction)
from .graphs import (CUDAGraph, graph, graph_pool_handle, is_current_stream_capturing,  # noqa: E402
                     make_graphed_callables)
from . import nvtx  # noqa: E402,F401
from .random import (get_rng_state, get_rng_state_all, initial_seed, manual_seed,  # noqa: E402
                     manual_seed_all, seed, seed_all, set_rng_state, set_rng_state_all)


# torch.cuda names Ember leaves out on purpose, with the reason a script gets.
_POOL_IS_CUPYS = ("Ember's CUDA memory is CuPy's memory pool, which takes no pluggable allocator "
                  "or private pools from outside")
_ABSENT = {
    "caching_allocator_alloc": _POOL_IS_CUPYS,
    "caching_allocator_delete": _POOL_IS_CUPYS, "CUDAPluggableAllocator": _POOL_IS_CUPYS,
    "change_current_allocator": _POOL_IS_CUPYS, "MemPool": _POOL_IS_CUPYS,
    "use_mem_pool": _POOL_IS_CUPYS,
    "list_gpu_processes": "it reads NVML (pynvml), which Ember does not use",
    "utilization": "it reads NVML (pynvml), which Ember does not use",
    "memory_usage": "it reads NVML (pynvml), which Ember does not use",
    "temperature": "it reads NVML (pynvml), which Ember does not use",
    "power_draw": "it reads NVML (pynvml), which Ember does not use",
    "clock_rate": "it reads NVML (pynvml), which Ember does not use",
}


def __getattr__(name):
    if name == "amp":
        # The deprecated torch.cuda.amp names pull in the mixed-precision machinery: imported
        # on first use so that ``import ember`` does not pay for it.
        import importlib
        return importlib.import_module(".amp", __name__)
    why = _ABSENT.get(name)
    if why is not None:
        raise AttributeError(f"module 'ember.cuda' has no attribute '{name}': {why}")
    raise AttributeError(f"module 'ember.cuda' has no attribute '{name}'")
