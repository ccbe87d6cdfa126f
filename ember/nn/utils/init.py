"""``skip_init``: a module built without initialising its parameters and buffers, as
``torch.nn.utils.skip_init``.

PyTorch builds the module on the meta device (where the initialisers compute nothing) and then
``to_empty``'s it onto the requested device. Ember has no meta device, so the module is built on
the requested device and its tensors are then replaced by uninitialised ones (``to_empty``);
the CPU random stream and the target device's are restored around the construction, so that,
as in PyTorch, building the module draws no random numbers. The initialisers' arithmetic still
runs once.
"""
import inspect

from ..._device import device as _device
from ...backends import current_index
from ...random import fork_rng
from ..modules.module import Module

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """``module_cls(*args, **kwargs)`` with parameters and buffers left uninitialised (the
    contents of ``empty``), same shapes, dtypes and device. The class must take a ``device``
    argument, as PyTorch requires."""
    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    where = _device(final_device)
    off_cpu = where.type != "cpu"
    index = where.index if where.index is not None else current_index(where.type)
    with fork_rng(devices=[index] if off_cpu else [], device_type=where.type if off_cpu else None):
        module = module_cls(*args, device=final_device, **kwargs)
    return module.to_empty(device=final_device)
