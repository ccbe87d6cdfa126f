"""Merging samples into batches (``default_collate``) and converting NumPy data to tensors
without batching (``default_convert``), as ``torch.utils.data._utils.collate``."""
import collections.abc
import copy
import re

import numpy as np

from .... import _dtype as dt
from ...._tensor import Tensor, _wrap
from ....ops.creation import as_tensor, tensor as _tensor
from ....ops.shape import stack
from . import shared_memory

__all__ = ["default_convert", "collate", "default_collate", "default_collate_fn_map",
           "collate_tensor_fn", "collate_numpy_array_fn", "collate_numpy_scalar_fn",
           "collate_float_fn", "collate_int_fn", "collate_str_fn"]

#: dtype kinds (bytes, str, void, object) that cannot become tensors
np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = ("default_collate: batch must contain tensors, numpy arrays, "
                                  "numbers, dicts or lists; found {}")


def default_convert(data):
    """NumPy arrays and scalars inside ``data`` become tensors; containers keep their type
    (tuples become lists, as in PyTorch)."""
    data_type = type(data)
    if isinstance(data, Tensor):
        return data
    if data_type.__module__ == "numpy" and data_type.__name__ not in ("str_", "string_"):
        if data_type.__name__ == "ndarray" and np_str_obj_array_pattern.search(data.dtype.str):
            return data
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({key: default_convert(data[key]) for key in data})
                return clone
            return data_type({key: default_convert(data[key]) for key in data})
        except TypeError:
            return {key: default_convert(data[key]) for key in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return data_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return data_type([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def collate(batch, *, collate_fn_map=None):
    """Collate a list of samples: leaf types by ``collate_fn_map`` (exact type first, then
    ``isinstance``), containers recursively, keeping their type."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)

    if isinstance(elem, collections.abc.Mapping):
        def merged():
            return {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map) for key in elem}
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update(merged())
                return clone
            return elem_type(merged())
        except TypeError:
            return merged()
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, samples in enumerate(transposed):
                    clone[i] = collate(samples, collate_fn_map=collate_fn_map)
                return clone
            return elem_type([collate(samples, collate_fn_map=collate_fn_map) for samples in transposed])
        except TypeError:
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def collate_tensor_fn(batch, *, collate_fn_map=None):
    elem = batch[0]
    if (shared_memory.sharing_enabled() and elem._backend.xp is np and not elem.requires_grad
            and all(type(t) is Tensor and t._dtype is elem._dtype and t._device is elem._device
                    for t in batch)):
        shape = (len(batch),) + tuple(elem._data.shape)
        for i, t in enumerate(batch):
            if t._data.shape != elem._data.shape:
                raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                                   f"{list(elem._data.shape)} at entry 0 and {list(t._data.shape)} at entry {i}")
        # In a worker, stack straight into shared memory: the batch then reaches the main
        # process without another copy.
        out = shared_memory.empty(shape, elem._dtype.np)
        np.stack([t._data for t in batch], out=out)
        return _wrap(out, elem._dtype, elem)
    return stack(batch, 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    elem = batch[0]
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    return as_tensor(batch)


def collate_float_fn(batch, *, collate_fn_map=None):
    return _tensor(batch, dtype=dt.float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    return _tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch):
    """Stack a list of samples into a batch, as ``torch.utils.data.default_collate``: tensors
    and NumPy arrays are stacked along a new first dimension, Python floats become float64,
    ints int64, bools bool; strings and bytes stay lists; dicts, namedtuples and sequences are
    collated field by field."""
    return collate(batch, collate_fn_map=default_collate_fn_map)
