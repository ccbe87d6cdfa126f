"""DLPack: zero-copy tensor exchange with NumPy, PyTorch, CuPy, JAX…, as ``torch.utils.dlpack``.

A CPU tensor is a NumPy array, so Ember exports and imports through NumPy's DLPack support.
NumPy has no bfloat16, so a bfloat16 tensor travels as 16-bit unsigned integers whose DLPack
type code is rewritten to bfloat16 in the capsule (and back on import): the memory is shared
either way, and the consumer sees the right dtype.
"""
import ctypes
import enum

import numpy as np

__all__ = ["to_dlpack", "from_dlpack", "DLDeviceType"]


class DLDeviceType(enum.IntEnum):
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


_KDL_UINT, _KDL_BFLOAT = 1, 4
# Offsets into the capsule's struct: DLManagedTensor starts with its DLTensor, while
# DLManagedTensorVersioned first holds its version, manager context, deleter and flags.
_DLTENSOR_OFFSET = {b"dltensor": 0, b"dltensor_versioned": 32}
_DTYPE_OFFSET = 20  # in DLTensor: data pointer (8), device (8), ndim (4), then the dtype
_DEVICE_OFFSET = 8

_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype, _get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype, _get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]


def _dltensor_address(capsule):
    name = _get_name(capsule)
    if name not in _DLTENSOR_OFFSET:
        raise BufferError(f"expected a DLPack capsule, got a capsule named {name!r} "
                          "(a capsule can be consumed only once)")
    return _get_pointer(capsule, name) + _DLTENSOR_OFFSET[name]


def _retype(capsule, from_code, to_code, bits):
    """Rewrite a capsule's element type code, if it is ``from_code`` with ``bits`` bits."""
    address = _dltensor_address(capsule) + _DTYPE_OFFSET
    code = ctypes.c_uint8.from_address(address)
    if code.value == from_code and ctypes.c_uint8.from_address(address + 1).value == bits:
        code.value = to_code
        return True
    return False


def _capsule_device(capsule):
    address = _dltensor_address(capsule) + _DEVICE_OFFSET
    return (DLDeviceType(ctypes.c_int32.from_address(address).value),
            ctypes.c_int32.from_address(address + 4).value)


def _is_capsule(obj):
    return type(obj).__name__ == "PyCapsule"


def export(tensor, stream=None, max_version=None, dl_device=None, copy=None):
    """``Tensor.__dlpack__``: a DLPack capsule viewing ``tensor``'s memory."""
    from .. import _dtype as dt
    if tensor.requires_grad:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    array = tensor._data
    if tensor.dtype is dt.bfloat16:
        array = array.view(np.uint16)
    kwargs = {"dl_device": dl_device, "copy": copy}
    if max_version is not None:
        kwargs["max_version"] = max_version
    if not isinstance(array, np.ndarray):  # another array library's stream semantics
        kwargs["stream"] = stream
    capsule = array.__dlpack__(**kwargs)
    if tensor.dtype is dt.bfloat16:
        _retype(capsule, _KDL_UINT, _KDL_BFLOAT, 16)
    return capsule


def export_device(tensor):
    """``Tensor.__dlpack_device__``."""
    # The backend names its DLPack device type (kDLCUDA for CuPy, also on the conformance
    # device, which stands in for it); a backend that does not know asks its arrays.
    device_type = tensor._backend.dlpack_device_type
    if device_type == DLDeviceType.kDLCPU:
        return DLDeviceType.kDLCPU, 0
    if device_type is not None:
        return DLDeviceType(device_type), tensor.device.index or 0
    if isinstance(tensor._data, np.ndarray):
        return DLDeviceType.kDLCPU, 0
    device_type, index = tensor._data.__dlpack_device__()
    return DLDeviceType(device_type), index


class _Capsule:
    """A capsule presented through the ``__dlpack__`` protocol, which NumPy consumes."""

    def __init__(self, capsule, device):
        self._capsule, self._device = capsule, device

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        return self._capsule

    def __dlpack_device__(self):
        return self._device


def _take_capsule(ext_tensor):
    if _is_capsule(ext_tensor):
        return ext_tensor, _capsule_device(ext_tensor)
    if not hasattr(ext_tensor, "__dlpack__"):
        raise TypeError(f"from_dlpack expects an object with __dlpack__ or a DLPack capsule, "
                        f"got {type(ext_tensor).__name__}")
    device = tuple(ext_tensor.__dlpack_device__())
    if device[0] == DLDeviceType.kDLCPU:
        return ext_tensor.__dlpack__(), device
    return ext_tensor.__dlpack__(stream=None), device


def from_dlpack(ext_tensor, *, device=None, copy=None):
    """A tensor sharing the memory of ``ext_tensor`` (anything with ``__dlpack__``, or a
    DLPack capsule): NumPy arrays, PyTorch, CuPy or JAX tensors."""
    from .. import _dtype as dt
    from .._device import device as _device
    from .._tensor import _wrap_with
    from ..backends import get_backend

    capsule, (device_type, index) = _take_capsule(ext_tensor)
    is_bfloat16 = _retype(capsule, _KDL_BFLOAT, _KDL_UINT, 16)
    if device_type in (DLDeviceType.kDLCPU, DLDeviceType.kDLCUDAHost):
        dev = _device("cpu")
    elif device_type == DLDeviceType.kDLCUDA:
        dev = _device("cuda", index)
    else:
        raise BufferError(f"ember.from_dlpack: unsupported DLPack device type "
                          f"{DLDeviceType(device_type).name}")
    backend = get_backend(dev)
    array = backend.xp.from_dlpack(_Capsule(capsule, (device_type, index)))
    if is_bfloat16:
        array = array.view(dt.bfloat16.np)
    tensor = _wrap_with(array, dt.from_numpy_dtype(array.dtype), dev, backend)
    if device is not None and _device(device) != dev:
        return tensor.to(device)
    return tensor.clone() if copy else tensor


def to_dlpack(tensor):
    """A DLPack capsule viewing ``tensor``'s memory, for another library's ``from_dlpack``."""
    return tensor.__dlpack__()
