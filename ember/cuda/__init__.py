"""``ember.cuda``: the torch.cuda surface, answered by the CUDA backend
(``ember/backends/cupy_backend.py``). CuPy is an optional extra: without it, or without a GPU,
the queries answer "no CUDA" (``is_available()`` is False, ``device_count()`` is 0) and the calls
that need a device raise torch's error, as torch's CPU build does."""
from .._device import device as _device

__all__ = ["is_available", "device_count", "current_device", "set_device", "device",
           "get_device_name", "get_device_capability", "get_device_properties", "synchronize",
           "manual_seed", "manual_seed_all", "is_initialized", "init"]

_NOT_COMPILED = "Torch not compiled with CUDA enabled"


def _cupy_or_none():
    """CuPy's module where it is installed, else None: the only place this namespace looks."""
    from ..backends.cupy_backend import import_cupy_or_none
    return import_cupy_or_none()


def _lazy_init():
    if not is_available():
        raise AssertionError(_NOT_COMPILED)
    return _cupy_or_none()


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
    cupy = _cupy_or_none()
    if cupy is None:
        return 0
    from ..backends.cupy_backend import device_count as count
    return count(cupy)


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


def synchronize(device=None):
    _lazy_init()
    from ..backends import get_backend
    get_backend(_device("cuda", _index(device))).synchronize()


def manual_seed(seed):
    """Seeds the current device's CuPy generator. Without CUDA it is silently ignored, as
    torch documents (scripts call it unconditionally). Ember's own random ops still draw on
    the host from ``ember.manual_seed``'s generator and copy to the device (issue 16 moves
    them onto the device generators this seeds)."""
    cupy = _cupy_or_none()
    if cupy is None or not is_available():
        return
    cupy.random.seed(int(seed) & 0xFFFF_FFFF_FFFF_FFFF)


def manual_seed_all(seed):
    """Seeds every device's generator; silently ignored without CUDA, as in torch."""
    for index in range(device_count()):
        with device(index):
            manual_seed(seed)
