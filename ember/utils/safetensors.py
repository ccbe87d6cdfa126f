"""safetensors files for Ember tensors, through the ``safetensors`` package, with the API of
``safetensors.torch``: ``save_file`` / ``load_file``, ``save`` / ``load`` (bytes), and
``save_model`` / ``load_model`` for modules whose tensors share memory (tied weights).

The package writes, parses and validates the files; tensors are handed to it as raw memory
(``TensorSpec``), and read back from the offsets in the header it has validated, so every
dtype safetensors and Ember share works, bfloat16 included (``safetensors.numpy`` lacks it).
"""
import collections
import json
import os
import secrets
import struct

import numpy as np

from .. import _dtype as dt

__all__ = ["save", "save_file", "load", "load_file", "save_model", "load_model"]

_DTYPE_BY_CODE = {"BOOL": dt.bool, "U8": dt.uint8, "I8": dt.int8, "I16": dt.int16,
                  "I32": dt.int32, "I64": dt.int64, "F16": dt.float16, "BF16": dt.bfloat16,
                  "F32": dt.float32, "F64": dt.float64, "C64": dt.complex64}


def _package():
    try:
        import safetensors
    except ImportError as exc:
        raise ImportError("ember.utils.safetensors needs the safetensors package: "
                          "pip install 'ember[safetensors]'") from exc
    return safetensors


def _host_array(tensor):
    array = tensor.detach()._data
    return array if isinstance(array, np.ndarray) else tensor._backend.to_numpy(array)


def _memory_block(tensor):
    """(device, start, size) of the memory block ``tensor`` views: what safetensors.torch
    calls its storage."""
    from ..backends.numpy_backend import memory_owner, array_address
    if not isinstance(tensor._data, np.ndarray):
        return tensor.device, tensor.data_ptr(), tensor.nbytes
    owner = memory_owner(tensor._data)
    return tensor.device, array_address(owner), owner.nbytes


def _byte_range(tensor):
    start = tensor.data_ptr()
    if tensor.numel() == 0:
        return start, start
    last = sum((n - 1) * s for n, s in zip(tensor.shape, tensor.stride()))
    return start, start + (last + 1) * tensor.element_size()


def _find_shared_tensors(state_dict):
    """Groups of names whose tensors overlap in memory."""
    by_block = collections.defaultdict(set)
    for name, tensor in state_dict.items():
        if tensor.numel():
            by_block[_memory_block(tensor)].add(name)
    groups = []
    for names in sorted(by_block.values(), key=sorted):
        areas = sorted((*_byte_range(state_dict[n]), n) for n in names)
        _, last_stop, first = areas[0]
        groups.append({first})
        for start, stop, name in areas[1:]:
            if start >= last_stop:
                groups.append({name})
            else:
                groups[-1].add(name)
            last_stop = max(last_stop, stop)
    return groups


def _specs(tensors):
    from .._tensor import Tensor
    safetensors = _package()
    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, ember.Tensor] but received {type(tensors)}")
    for name, tensor in tensors.items():
        if not isinstance(tensor, Tensor):
            raise ValueError(f"Key `{name}` is invalid, expected ember.Tensor but received "
                             f"{type(tensor)}")
    failing = [names for names in _find_shared_tensors(tensors) if len(names) > 1]
    if failing:
        raise RuntimeError(f"Some tensors share memory, this will lead to duplicate memory on "
                           f"disk and potential differences when loading them again: {failing}."
                           f" A potential way to correctly save your model is to use "
                           f"`save_model`.")
    specs, keep_alive = {}, []
    for name, tensor in tensors.items():
        if not tensor.is_contiguous():
            raise ValueError(f"You are trying to save a non contiguous tensor: `{name}` which is "
                             "not allowed. It either means you are trying to save tensors which "
                             "are reference of each other in which case it's recommended to "
                             "save only the full tensors, and reslice at load time, or simply "
                             "call `.contiguous()` on your tensor to pack it before saving.")
        if tensor.dtype is dt.complex128:
            raise ValueError(f"Key `{name}`: safetensors has no complex128 dtype")
        array = np.ascontiguousarray(_host_array(tensor))  # (a 0-d array comes back 1-d)
        keep_alive.append(array)
        specs[name] = safetensors.TensorSpec(dtype=tensor.dtype.name, shape=list(tensor.shape),
                                             data_ptr=array.ctypes.data, data_len=array.nbytes)
    return specs, keep_alive


def save(tensors, metadata=None):
    """The safetensors file holding ``tensors`` (a dict of contiguous tensors), as bytes."""
    specs, keep_alive = _specs(tensors)
    return bytes(_package().serialize(specs, metadata=metadata))


def save_file(tensors, filename, metadata=None):
    """Write ``tensors`` to ``filename``; the file is written beside it and renamed into
    place, so an interrupted save leaves any previous file intact."""
    specs, keep_alive = _specs(tensors)
    filename = os.fspath(filename)
    folder = os.path.dirname(os.path.abspath(filename))
    temp = os.path.join(folder, f".{os.path.basename(filename)}.{secrets.token_hex(6)}.tmp")
    try:
        _package().serialize_file(specs, temp, metadata=metadata)
        os.replace(temp, filename)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise


def _to_device(array, dtype, device):
    from .._device import device as _device
    from .._tensor import _wrap_with
    from ..backends import get_backend
    dev = _device(device) if not isinstance(device, int) else _device("cuda", device)
    backend = get_backend(dev)
    if dev.type != "cpu":
        array = backend.asarray(array, dtype.np)
    return _wrap_with(array, dtype, dev, backend)


def _dtype_of(code, name):
    dtype = _DTYPE_BY_CODE.get(code)
    if dtype is None:
        raise ValueError(f"tensor `{name}` has safetensors dtype {code}, which Ember does not "
                         "have")
    return dtype


def load(data):
    """The tensors of a safetensors file given as bytes (CPU tensors in new memory)."""
    tensors = {}
    for name, info in _package().deserialize(data):
        dtype = _dtype_of(info["dtype"], name)
        array = np.frombuffer(info["data"], dtype.np).reshape(info["shape"])
        tensors[name] = _to_device(array, dtype, "cpu")
    return tensors


def _read_header(file):
    (length,) = struct.unpack("<Q", file.read(8))
    return json.loads(file.read(length)), 8 + length


def load_file(filename, device="cpu"):
    """The tensors of safetensors file ``filename``, read into new memory on ``device``."""
    safetensors = _package()
    with safetensors.safe_open(filename, framework="np") as checked:  # validates the header
        names = list(checked.keys())
    with open(filename, "rb", buffering=0) as file:
        header, data_start = _read_header(file)
        tensors = {}
        for name in names:
            info = header[name]
            dtype = _dtype_of(info["dtype"], name)
            begin, end = info["data_offsets"]
            array = np.empty(info["shape"], dtype.np)
            view = memoryview(array.reshape(-1).view(np.uint8))
            if end - begin != len(view):
                raise ValueError(f"tensor `{name}`: {end - begin} bytes in the file for "
                                 f"{len(view)} bytes of data")
            file.seek(data_start + begin)
            done = 0
            while done < len(view):
                n = file.readinto(view[done:])
                if not n:
                    raise ValueError(f"{filename} is truncated: tensor `{name}` is cut off")
                done += n
            tensors[name] = _to_device(array, dtype, device)
    return tensors


def _is_complete(tensor):
    device, start, size = _memory_block(tensor)
    return tensor.data_ptr() == start and tensor.nbytes == size


def _remove_duplicate_names(state_dict, *, preferred_names=None, discard_names=None):
    preferred_names = set(preferred_names or [])
    discard_names = set(discard_names or [])
    to_remove = collections.defaultdict(list)
    for shared in _find_shared_tensors(state_dict):
        if len(shared) < 2:
            continue
        complete = {name for name in shared if _is_complete(state_dict[name])}
        if not complete:
            raise RuntimeError(f"Error while trying to find names to remove to save state dict, "
                               f"but found no suitable name to keep for saving amongst: "
                               f"{shared}. None is covering the entire storage. Refusing to "
                               f"save/load the model since you could be storing much more "
                               f"memory than needed.")
        keep = sorted(complete)[0]
        preferred = complete - discard_names
        if preferred:
            keep = sorted(preferred)[0]
        if preferred_names & complete:
            keep = sorted(preferred_names & complete)[0]
        to_remove[keep].extend(name for name in sorted(shared) if name != keep)
    return to_remove


def save_model(model, filename, metadata=None, force_contiguous=True):
    """Save ``model.state_dict()``, keeping one name of each group of tensors sharing memory
    (tied weights) and recording the dropped names in the metadata."""
    state_dict = model.state_dict()
    for kept, removed in _remove_duplicate_names(state_dict).items():
        for name in removed:
            metadata = {} if metadata is None else metadata
            metadata.setdefault(name, kept)
            del state_dict[name]
    if force_contiguous:
        state_dict = {k: v.contiguous() for k, v in state_dict.items()}
    try:
        save_file(state_dict, filename, metadata=metadata)
    except ValueError as exc:
        raise ValueError(f"{exc} Or use save_model(..., force_contiguous=True), read the docs "
                         "for potential caveats.") from None


def load_model(model, filename, strict=True, device="cpu"):
    """Load a file written by ``save_model`` into ``model``; names dropped for sharing memory
    with a saved tensor are not reported missing. Returns ``(missing, unexpected)``."""
    state_dict = load_file(filename, device=device)
    to_remove = _remove_duplicate_names(model.state_dict(), preferred_names=state_dict.keys())
    missing, unexpected = model.load_state_dict(state_dict, strict=False)
    missing = set(missing)
    for group in to_remove.values():
        for name in group:
            if name in missing:
                missing.remove(name)
            else:
                unexpected.append(name)
    if strict and (missing or unexpected):
        error = f"Error(s) in loading state_dict for {model.__class__.__name__}:"
        if missing:
            error += "\n    Missing key(s) in state_dict: " + ", ".join(
                f'"{k}"' for k in sorted(missing))
        if unexpected:
            error += "\n    Unexpected key(s) in state_dict: " + ", ".join(
                f'"{k}"' for k in sorted(unexpected))
        raise RuntimeError(error)
    return missing, unexpected
