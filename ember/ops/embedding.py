"""The embedding family: ``embedding``, ``embedding_bag`` (in ``nn.functional``'s form and in
torch's ATen form ``torch.embedding_bag``) and ``one_hot``.

``embedding`` is one op: the forward is a row gather, the backward a scatter-add of the
incoming rows into a zero matrix shaped like the weight (rows at ``padding_idx`` get nothing),
or with ``sparse=True`` a sparse COO gradient holding just those rows, uncoalesced as PyTorch's.
``embedding_bags`` reduces the looked-up rows per bag with scatter-adds (sum, mean) or a max over
a padded dense block; bag membership is index bookkeeping done once on the index arrays.

The ATen form ``embedding_bag`` returns the bags with the three tensors torch's kernel also
returns for its backward: ``offset2bag`` (the bag of each index position), ``bag_size`` (the
number of non-padding indices per bag) and ``max_indices`` (for ``max``: the weight row chosen
per bag and column). Their contents follow torch's CPU kernel, including where it leaves them
unfilled: in ``sum`` mode ``bag_size`` and ``max_indices`` are zeros, and ``offset2bag`` is
empty when torch takes its fast path (float32/float16/bfloat16 weight with unit column stride
and no padding index); in ``mean`` mode ``max_indices`` repeats ``bag_size``.
"""
import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor, _wrap_with
from ..autograd.grad_mode import no_grad
from ._dispatch import Node, needs_grad, record, _wrap, dtype_name, CompositeBackward, \
    record_composite
from .creation import zeros, ones, full, arange
from .elementwise import where

__all__ = ["embedding_bag"]


class EmbeddingBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        indices, padding_idx = self.indices, self.padding_idx
        num, dim = self.weight_shape
        if self.sparse:
            return (_sparse_weight_grad(grad, indices, padding_idx, num, dim,
                                        self.scale_grad_by_freq),)
        rows = grad.reshape(-1, dim)
        if padding_idx is not None:
            rows = rows.masked_fill((indices == padding_idx).unsqueeze(1), 0)
        if self.scale_grad_by_freq:
            counts = zeros(num, dtype=grad.dtype, device=grad.device).index_add(
                0, indices, ones(indices.shape, dtype=grad.dtype, device=grad.device))
            rows = rows / counts.index_select(0, indices).unsqueeze(1)
        return (zeros((num, dim), dtype=grad.dtype, device=grad.device).index_add(
            0, indices, rows),)


def _sparse_weight_grad(grad, indices, padding_idx, num, dim, scale_grad_by_freq):
    """``sparse=True``: a COO gradient with one entry per looked-up position, in input order and
    uncoalesced (repeated rows are not summed), positions holding ``padding_idx`` left out, as
    PyTorch's ``embedding_sparse_backward``."""
    if scale_grad_by_freq:
        raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse "
                           "gradients")
    from ..sparse.tensor import wrap_coo
    from .sparse import record_construction
    rows = grad.reshape(-1, dim)
    if padding_idx is not None:
        keep = (indices != padding_idx).nonzero().reshape(-1)
        indices, rows = indices.index_select(0, keep), rows.index_select(0, keep)
    elif rows._data.base is not None or not rows._data.flags.c_contiguous:
        rows = rows.clone()  # the gradient owns its values, as PyTorch's does
    index = indices._data.reshape(1, -1).astype(dt.int64.np, copy=True)
    # PyTorch flags a COO tensor with fewer than two entries coalesced
    out = wrap_coo(index, rows._data, (num, dim), rows.dtype, rows, index.shape[1] < 2)
    record_construction(out, rows)
    return out


def check_indices(input, name):
    """ATen's index dtype check."""
    if input.dtype not in (dt.int64, dt.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got ember."
                           f"{dtype_name(input.dtype)}Tensor instead (while checking arguments "
                           f"for {name})")


def padding_index(padding_idx, num_embeddings):
    """``padding_idx`` counted from the start, with torch.nn's asserts (``nn.functional``'s and
    the ``Embedding`` modules'; the ATen form ``ember.embedding_bag`` runs them too)."""
    if padding_idx is None:
        return None
    if padding_idx > 0:
        assert padding_idx < num_embeddings, "Padding_idx must be within num_embeddings"
    elif padding_idx < 0:
        assert padding_idx >= -num_embeddings, "Padding_idx must be within num_embeddings"
        padding_idx += num_embeddings
    return padding_idx


def _renorm_rows(weight, indices, max_norm, norm_type):
    """Scale, in place, each referenced row of ``weight`` whose norm exceeds ``max_norm``."""
    xp = weight._backend.xp
    unique = _wrap(xp.unique(indices._data), dt.int64, indices)
    with no_grad():
        rows = weight.index_select(0, unique)
        norms = rows.norm(norm_type, 1, keepdim=True)
        scale = where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight[unique] = rows * scale


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """The rows of ``weight`` at ``input`` (checked indices; ``padding_idx`` counted from the
    start), renormalised first under ``max_norm``."""
    num, dim = weight.shape
    flat = input.reshape(-1).to(dt.int64)
    data = flat._data
    if data.size and (int(data.min()) < 0 or int(data.max()) >= num):
        raise IndexError("index out of range in self")
    if max_norm is not None:
        _renorm_rows(weight, flat, max_norm, norm_type)
    xp = weight._backend.xp
    out = xp.take(weight._data, data, axis=0).reshape(tuple(input.shape) + (dim,))
    res = _wrap(out, weight.dtype, weight)
    if needs_grad(weight):
        record(EmbeddingBackward0, (weight,), res, indices=flat, padding_idx=padding_idx,
               weight_shape=(num, dim), scale_grad_by_freq=scale_grad_by_freq,
               sparse=bool(sparse))
    return res


def _bag_layout(input, offsets, include_last_offset):
    """``(flat indices, bag of each position, number of bags)``."""
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is "
                             "a mini-batch of fixed length sequences. However, found offsets of "
                             f"type {type(offsets)}")
        bags, length = input.shape
        bag_of = arange(bags, device=input.device).repeat_interleave(length)
        return input.reshape(-1), bag_of, bags
    if input.ndim != 1:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.ndim}")
    if offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    if offsets.ndim != 1:
        raise ValueError("offsets has to be a 1D Tensor")
    if offsets.numel() and int(offsets[0]) != 0:
        raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the mini-batch "
                           f"has to start from position 0. However, got {int(offsets[0])}")
    bags = offsets.numel() - 1 if include_last_offset else offsets.numel()
    xp = input._backend.xp
    starts = offsets._data[:bags].astype(dt.int64.np)
    bag_of = xp.searchsorted(starts, xp.arange(input.numel()), side="right") - 1
    return input, _wrap(bag_of.astype(dt.int64.np), dt.int64, input), bags


def embedding_bags(input, weight, offsets=None, max_norm=None, norm_type=2,
                   scale_grad_by_freq=False, mode="mean", sparse=False,
                   per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """``nn.functional.embedding_bag``'s result, with its argument checks: both it and the ATen
    form ``embedding_bag`` below run them."""
    if mode == "max":
        if scale_grad_by_freq:
            raise ValueError("max mode does not support scaling the gradient by the frequency")
        if sparse:
            raise ValueError("max mode does not support sparse weights")
    elif mode not in ("sum", "mean"):
        raise ValueError("mode has to be one of sum, mean or max")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
            "GitHub.")
    if input.ndim == 2 and input.dtype is dt.bool:
        # PyTorch makes the bags' offsets with arange in the indices' dtype first
        raise NotImplementedError("\"arange_cpu\" not implemented for 'Bool'")
    check_indices(input, "embedding_bag")
    num, dim = weight.shape
    padding_idx = padding_index(padding_idx, num)
    flat, bag_of, bags = _bag_layout(input, offsets, include_last_offset)
    keep = None
    if padding_idx is not None:
        # Positions holding padding_idx take no part in any bag.
        keep = (flat != padding_idx).nonzero().reshape(-1)
        flat, bag_of = flat.index_select(0, keep), bag_of.index_select(0, keep)
    like = dict(dtype=weight.dtype, device=weight.device)

    def bags_of(weight, per_sample_weights):
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
            if keep is not None:
                per_sample_weights = per_sample_weights.index_select(0, keep)
        rows = embedding(flat, weight, None, max_norm, norm_type, scale_grad_by_freq, sparse)
        if mode == "max":
            return _bag_max(rows, bag_of, bags, dim, like)
        if per_sample_weights is not None:
            rows = rows * per_sample_weights.unsqueeze(1)
        out = zeros((bags, dim), **like).index_add(0, bag_of, rows)
        if mode == "mean":
            counts = zeros(bags, **like).index_add(0, bag_of, ones(bag_of.shape, **like))
            out = out / counts.clamp_min(1).unsqueeze(1)
        return out
    return record_composite(EmbeddingBagBackward0, (weight, per_sample_weights), bags_of)


class EmbeddingBagBackward0(CompositeBackward):
    __slots__ = ()


def _bag_max(rows, bag_of, bags, dim, like):
    xp = bag_of._backend.xp
    bag_data = bag_of._data
    counts = xp.bincount(bag_data, minlength=bags) if bag_data.size else xp.zeros(bags, int)
    if not bag_data.size:
        return zeros((bags, dim), **like)
    starts = xp.concatenate([xp.zeros(1, counts.dtype), xp.cumsum(counts)[:-1]])
    slot = xp.arange(bag_data.size) - starts[bag_data]
    slot_t = _wrap(slot.astype(dt.int64.np), dt.int64, bag_of)
    longest = int(counts.max())
    block = full((bags, longest, dim), float("-inf"), **like)
    block = block.index_put((bag_of, slot_t), rows)
    out = block.max(1).values
    empty = _wrap(counts == 0, dt.bool, bag_of)
    return out.masked_fill(empty.unsqueeze(1), 0)


_MODES = {0: "sum", 1: "mean", 2: "max"}
_FAST_DTYPES = (dt.float32, dt.float16, dt.bfloat16)


def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """``(output, offset2bag, bag_size, max_indices)``; ``mode`` is 0 (sum), 1 (mean) or
    2 (max); ``padding_idx`` None means no padding index, a negative one counts from the end."""
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
    output = embedding_bags(indices, weight, offsets, scale_grad_by_freq=scale_grad_by_freq,
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
        unfilled = np.zeros(num_bags, dtype=np.int64)
        return (output, result(np.zeros(0, np.int64) if fast else bag_of), result(unfilled),
                result(unfilled))
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


def one_hot(tensor, num_classes=-1):
    if tensor.dtype is not dt.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    data = tensor._data
    if num_classes == -1:
        if data.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(data.max()) + 1
    if data.size:
        if int(data.min()) < 0:
            raise RuntimeError("Class values must be non-negative.")
        if int(data.max()) >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    xp = tensor._backend.xp
    hot = (data[..., None] == xp.arange(num_classes)).astype(dt.int64.np)
    return _wrap(hot, dt.int64, tensor)
