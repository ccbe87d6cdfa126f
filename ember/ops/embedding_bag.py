"""``ember.embedding_bag``: the ATen form of ``nn.functional.embedding_bag``, as
``torch.embedding_bag``.

It returns the bags (what ``F.embedding_bag`` computes) with the three tensors torch's kernel
also returns for its backward: ``offset2bag`` (the bag of each index position), ``bag_size``
(the number of non-padding indices per bag) and ``max_indices`` (for ``max``: the weight row
chosen per bag and column). Their contents follow torch's CPU kernel, including where it leaves
them unfilled: in ``sum`` mode ``bag_size`` and ``max_indices`` are zeros, and ``offset2bag`` is
empty when torch takes its fast path (float32/float16/bfloat16 weight with unit column stride
and no padding index); in ``mean`` mode ``max_indices`` repeats ``bag_size``.
"""
import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor, _wrap_with

__all__ = ["embedding_bag"]

_MODES = {0: "sum", 1: "mean", 2: "max"}
_FAST_DTYPES = (dt.float32, dt.float16, dt.bfloat16)


def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """``(output, offset2bag, bag_size, max_indices)``; ``mode`` is 0 (sum), 1 (mean) or
    2 (max); ``padding_idx`` None means no padding index, a negative one counts from the end."""
    from ..nn import functional as F
    for name, position, value in (("weight", 1, weight), ("indices", 2, indices),
                                  ("offsets", 3, offsets)):
        if not isinstance(value, Tensor):
            raise TypeError(f"embedding_bag(): argument '{name}' (position {position}) must be "
                            f"Tensor, not {type(value).__name__}")
    if mode not in _MODES:
        raise RuntimeError("`mode` must be sum, mean, or max.")
    padding = padding_idx
    if padding is not None and padding < 0:
        padding += weight.shape[0]  # counted from the end, as a Python index
    output = F.embedding_bag(indices, weight, offsets, scale_grad_by_freq=scale_grad_by_freq,
                             mode=_MODES[mode], sparse=sparse,
                             per_sample_weights=per_sample_weights,
                             include_last_offset=include_last_offset, padding_idx=padding)
    index_dtype = indices.dtype
    flat = indices._backend.to_numpy(indices._data).reshape(-1).astype(np.int64)
    starts = offsets._backend.to_numpy(offsets._data).reshape(-1).astype(np.int64)
    if include_last_offset:
        starts = starts[:-1]
    num_bags, n = starts.shape[0], flat.shape[0]
    # offset2bag as torch builds it: +1 at each bag's start, a running sum
    marks = np.zeros(n + 1, dtype=np.int64)
    np.add.at(marks, starts, 1)
    marks[0] -= 1
    bag_of = np.cumsum(marks)[:n]
    valid = np.ones(n, dtype=bool) if padding is None else flat != padding

    def result(array):
        return _wrap_with(weight._backend.asarray(array.astype(index_dtype.np)), index_dtype,
                          weight._device, weight._backend)

    if mode == 0:
        fast = (weight.dtype in _FAST_DTYPES and weight.stride(1) == 1 and padding is None)
        zeros = np.zeros(num_bags, dtype=np.int64)
        return (output, result(np.zeros(0, np.int64) if fast else bag_of), result(zeros),
                result(zeros))
    bag_size = np.bincount(bag_of[valid], minlength=num_bags)[:num_bags]
    if mode == 1:
        return output, result(bag_of), result(bag_size), result(bag_size)
    return output, result(bag_of), result(bag_size), result(
        _max_rows(weight, flat, bag_of, valid, num_bags))


def _max_rows(weight, flat, bag_of, valid, num_bags):
    """Per bag and column, the weight row holding the bag's maximum (its first occurrence, as
    torch's kernel keeps the first); 0 for an empty bag."""
    w = weight._backend.to_numpy(weight.detach()._data)
    dim = w.shape[1]
    rows, bags = flat[valid], bag_of[valid]
    out = np.zeros((num_bags, dim), dtype=np.int64)
    if rows.size == 0:
        return out
    values = w[rows]                                   # (positions, dim), in bag order
    order = np.arange(rows.size)
    bag_max = np.full((num_bags, dim), -np.inf)
    np.maximum.at(bag_max, bags, values)
    is_max = values == bag_max[bags]
    first = np.full((num_bags, dim), rows.size)
    np.minimum.at(first, bags, np.where(is_max, order[:, None], rows.size))
    filled = first < rows.size
    out[filled] = rows[first[filled]]
    return out
