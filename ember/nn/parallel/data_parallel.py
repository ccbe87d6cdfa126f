"""``DataParallel`` and ``data_parallel``, as ``torch.nn.parallel.data_parallel``.

Without an accelerator PyTorch's ``DataParallel`` is a plain wrapper: ``.module`` is the wrapped
module, ``forward`` calls it, and the ``state_dict`` keys gain the prefix ``module.``; Ember does
the same. With one accelerator device the module is moved there and the inputs follow it.
Splitting a batch over several devices (replicate, scatter, gather) is not written yet and
raises saying so, rather than silently running on one.
"""
from itertools import chain

from ... import cuda
from ..._device import device as _device
from ..._tensor import Tensor
from ..modules.module import Module

__all__ = ["DataParallel", "data_parallel"]


def _available_device_type():
    return "cuda" if cuda.is_available() else None


def _device_index(d):
    if isinstance(d, int):
        return d
    d = _device(d)
    return 0 if d.index is None else d.index


def _to_device(obj, device):
    """``obj`` with its tensors moved to ``device`` (PyTorch's one-device scatter)."""
    if isinstance(obj, Tensor):
        return obj.to(device)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_to_device(o, device) for o in obj))
    if isinstance(obj, (tuple, list)):
        return type(obj)(_to_device(o, device) for o in obj)
    if isinstance(obj, dict):
        return type(obj)((k, _to_device(v, device)) for k, v in obj.items())
    return obj


def _one_device(device_ids, what):
    if len(device_ids) != 1:
        raise RuntimeError(f"{what}: splitting the batch over {len(device_ids)} devices "
                           f"{list(device_ids)} is not implemented in Ember yet; pass one device "
                           "in device_ids")


def _check_module_device(module, src_device):
    for t in chain(module.parameters(), module.buffers()):
        if t.device != src_device:
            raise RuntimeError("module must have its parameters and buffers "
                               f"on device {src_device} (device_ids[0]) but found one of "
                               f"them on device: {t.device}")


class DataParallel(Module):
    """Runs ``module`` on the batch, as ``torch.nn.DataParallel``: on the CPU (no accelerator)
    it only wraps it; on one accelerator device it moves the module and the inputs there."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        device_type = _available_device_type()
        if device_type is None:
            self.module = module
            self.device_ids = []
            return
        if device_ids is None:
            device_ids = list(range(cuda.device_count()))
        if not device_ids:
            raise RuntimeError("no available devices were found")
        if output_device is None:
            output_device = device_ids[0]
        self.dim = dim
        self.module = module
        self.device_ids = [_device_index(d) for d in device_ids]
        _one_device(self.device_ids, "DataParallel")
        self.output_device = _device_index(output_device)
        self.src_device_obj = _device(device_type, self.device_ids[0])
        self.module.to(self.src_device_obj)

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        _check_module_device(self.module, self.src_device_obj)
        return self.module(*_to_device(inputs, self.src_device_obj),
                           **_to_device(kwargs, self.src_device_obj))


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0,
                  module_kwargs=None):
    """``module(*inputs)`` on the devices ``device_ids``, as
    ``torch.nn.parallel.data_parallel``; like PyTorch, it needs an accelerator."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    device_type = _available_device_type()
    if device_type is None:
        raise RuntimeError("device type could not be determined")
    if device_ids is None:
        device_ids = list(range(cuda.device_count()))
    if not device_ids:
        raise RuntimeError("no available devices were found")
    device_ids = [_device_index(d) for d in device_ids]
    _one_device(device_ids, "data_parallel")
    src_device = _device(device_type, device_ids[0])
    _check_module_device(module, src_device)
    return module(*_to_device(inputs, src_device), **_to_device(module_kwargs or {}, src_device))
