"""The backend registry: a device type ("cpu", "cuda", a third party's name) maps to a Backend.

A backend is registered once, under its device type, as a factory taking the device index;
``get_backend(device)`` builds one instance per concrete device and caches it. Op code never
names a backend: it asks a tensor for ``tensor._backend`` and computes through it.
"""
from .base import Backend, BackendUnavailableError

__all__ = ["Backend", "BackendUnavailableError", "register_backend", "get_backend",
           "is_known_device_type", "registered_device_types", "current_index"]

_FACTORIES = {}
_INSTANCES = {}


def register_backend(device_type, factory, *, replace=False):
    """Register ``factory(index) -> Backend`` for ``device_type``.

    ``factory`` is called lazily, the first time a tensor is made on that device, so a backend
    whose array library is missing costs nothing until it is used."""
    if not device_type.isidentifier():
        raise ValueError(f"device type must be an identifier, got {device_type!r}")
    if device_type in _FACTORIES and not replace:
        raise RuntimeError(f"a backend for device type '{device_type}' is already registered")
    _FACTORIES[device_type] = factory
    for key in [k for k in _INSTANCES if k[0] == device_type]:
        del _INSTANCES[key]


def unregister_backend(device_type):
    _FACTORIES.pop(device_type, None)
    for key in [k for k in _INSTANCES if k[0] == device_type]:
        del _INSTANCES[key]


def is_known_device_type(device_type, load_entry_points=True):
    """Whether a backend serves ``device_type``. An unknown type is looked up once among the
    installed packages' ``ember.backends`` entry points (name: the device type; object: the
    backend class or factory), so an out-of-tree backend needs no import of its own."""
    if device_type in _FACTORIES:
        return True
    return load_entry_points and _load_entry_point(device_type)


_ENTRY_POINTS = None


def _load_entry_point(device_type):
    global _ENTRY_POINTS
    if _ENTRY_POINTS is None:
        from importlib.metadata import entry_points
        _ENTRY_POINTS = {ep.name: ep for ep in entry_points(group="ember.backends")}
    ep = _ENTRY_POINTS.pop(device_type, None)  # each is tried once
    if ep is None:
        return False
    factory = ep.load()  # importing the package may register it itself
    if device_type not in _FACTORIES:
        register_backend(device_type, factory)
    return True


def registered_device_types():
    return tuple(_FACTORIES)


def current_index(device_type):
    """The index a device of this type without one ("cuda") means: CUDA's current device (as
    ``ember.cuda.set_device`` sets it), 0 for every other type."""
    if device_type == "cuda":
        # Asked of CuPy as the "cuda" backend uses it (ember.cuda's one lookup). Without CUDA,
        # 0: building that device's backend then says what is missing.
        from ..cuda import _cupy_or_none
        cupy = _cupy_or_none()
        return 0 if cupy is None else cupy.cuda.runtime.getDevice()
    return 0


def get_backend(device):
    """The backend instance for an ``ember.device`` (index None means the current one:
    ``current_index``)."""
    index = device.index
    if index is None:
        index = current_index(device.type)
    key = (device.type, index)
    backend = _INSTANCES.get(key)
    if backend is None:
        factory = _FACTORIES.get(device.type)
        if factory is None:
            raise RuntimeError(f"no backend is registered for device type '{device.type}'")
        backend = _INSTANCES[key] = factory(index)
    return backend


def _cpu_factory(index):
    if index != 0:
        raise RuntimeError(f"Invalid device: cpu:{index}; the CPU backend has a single device, cpu:0")
    from .numpy_backend import NumpyBackend
    return NumpyBackend()


def _cuda_factory(index):
    # cupy_backend imports CuPy when the backend is built, raising CudaNotCompiledError
    # (torch's AssertionError) where it is missing.
    from .cupy_backend import CupyBackend
    return CupyBackend(index)


register_backend("cpu", _cpu_factory)
register_backend("cuda", _cuda_factory)


# torch.backends' flag and query modules (``ember.backends.cudnn.benchmark = True``…), loaded
# on first use: they are not backends, and the registry above does not depend on them.
_FLAG_MODULES = frozenset({"cudnn", "mps", "cuda", "cpu", "mkldnn", "openmp", "mkl"})


def __getattr__(name):
    if name in _FLAG_MODULES:
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module '{__name__}' has no attribute '{name}'")
