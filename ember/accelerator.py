"""``ember.accelerator``: the device-agnostic accelerator API of ``torch.accelerator``.

The accelerator is the first non-CPU backend in Ember's registry (``ember.backends``) whose
library is present: CUDA when CuPy is installed, otherwise a registered third-party backend
(the role torch gives its PrivateUse1 device). On a machine with neither, nothing is
available and every call that needs a device raises torch's "Cannot access accelerator device
when none is available." error.
"""
import importlib.util

from ._device import device as _device

__all__ = ["current_accelerator", "current_device_idx", "current_device_index", "device_count",
           "device_index", "is_available", "set_device_idx", "set_device_index", "synchronize"]

_NONE_AVAILABLE = "Cannot access accelerator device when none is available."
_current_index = {}  # device type -> index chosen by set_device_index


def _built_type():
    """The accelerator's device type whose backend library is present, or None."""
    from .backends import registered_device_types
    types = [t for t in registered_device_types() if t != "cpu"]
    if "cuda" in types:
        types.remove("cuda")
        if importlib.util.find_spec("cupy") is not None:
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
    return _current_index.get(_require(), 0)


def set_device_index(device, /):
    """Make ``device`` (an index, or a device of the accelerator's type) the current one."""
    device_type = _require()
    index = _index_of(device, device_type)
    count = _count(device_type)
    if not 0 <= index < count:
        raise RuntimeError(f"Invalid device index {index}: the {device_type} accelerator has "
                           f"{count} device{'s' if count != 1 else ''}")
    if device_type == "cuda":
        import cupy
        cupy.cuda.Device(index).use()
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
