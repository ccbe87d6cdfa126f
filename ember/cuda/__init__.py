"""``ember.cuda``: the torch.cuda surface. The CUDA backend (CuPy) is optional; without it every
query answers "no CUDA" instead of failing."""
from .._device import device as _device

__all__ = ["is_available", "device_count", "current_device", "synchronize", "manual_seed",
           "manual_seed_all"]


def _backend(index=None):
    from ..backends import get_backend
    return get_backend(_device("cuda", index or 0))


def is_available():
    try:
        _backend()
    except Exception:  # any failure to start the backend means "not available", as in torch
        return False
    return device_count() > 0


def device_count():
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:
        return 0


def current_device():
    if not is_available():
        raise RuntimeError("CUDA is not available: no CUDA device or CuPy is missing "
                           "(pip install 'ember[cuda]')")
    import cupy
    return cupy.cuda.Device().id


def synchronize(device=None):
    if is_available():
        _backend(device if isinstance(device, int) else None).synchronize()


def manual_seed(seed):
    """Seeds the CUDA generators; random numbers are drawn from the host generator today, so
    this is a no-op kept for API compatibility with torch.cuda."""


manual_seed_all = manual_seed
