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
unfilled: in ``sum`` mode ``bag_size`` and ``max_indices`` are zeros (one per offset where no
argument requires grad), and ``offset2bag`` is empty when torch takes its fast path
(float32/float16/bfloat16 weight with unit column stride and no padding index); in ``mean`` mode
``max_indices`` repeats ``bag_size``.
"""
import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor, _wrap_with
from ..autograd.grad_mode import no_grad
from ..autograd.graph import _type_name
from ._dispatch import Node, needs_grad, record, _wrap, CompositeBackward, record_composite
from .creation import zeros, ones, full, arange
from .elementwise import where
from ..amp import autocast_mode as _autocast

__all__ = ["embedding_bag"]


class EmbeddingBackward0(Node):
    __slots__ = ()

    def jvp(self, t_weight):
        # The lookup is linear in the weight: its tangent is the same lookup of the weight's
        # tangent (padding_idx and scale_grad_by_freq only shape the backward, as in PyTorch).
        rows = t_weight.index_select(0, self.indices)
        return rows.reshape(tuple(self.out_shape))

    def backward(self, grad):
        indices, padding_idx = self.indices, self.padding_idx
        num, dim = self.weight_shape
        if self.sparse:
            return (_sparse_weight_grad(grad, indices, padding_idx, num, dim,
                                        self.scale_grad_by_freq),)
        rows = grad.reshape(indices.shape[0], dim)  # not -1: a weight may have no columns
        if padding_idx is not None:
            rows = rows.masked_fill((indices == padding_idx).unsqueeze(1), 0)
        if self.scale_grad_by_freq:
            counts = self.frequency
            if counts is None:
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
    rows = grad.reshape(indices.shape[0], dim)
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


def check_indices(input, name, position=1):
    """ATen's index dtype check (torch's embedding_bag runs it on the offsets too, under the
    same argument name)."""
    if input.dtype not in (dt.int64, dt.int32):
        raise RuntimeError(f"Expected tensor for argument #{position} 'indices' to have one of "
                           f"the following scalar types: Long, Int; but got "
                           f"{_type_name(input.dtype, input.device)} instead (while checking "
                           f"arguments for {name})")


def padding_index(padding_idx, num_embeddings):
    """``padding_idx`` counted from the start, with torch.nn's asserts
    (``nn.functional.embedding``'s and the ``Embedding`` modules'; the bags' kernel raises
    ``_bag_padding_idx``'s instead)."""
    if padding_idx is None:
        return None
    if padding_idx > 0:
        assert padding_idx < num_embeddings, "Padding_idx must be within num_embeddings"
    elif padding_idx < 0:
        assert padding_idx >= -num_embeddings, "Padding_idx must be within num_embeddings"
        padding_idx += num_embeddings
    return padding_idx


def _check_renorm(weight, indices):
    """``embedding_renorm_``'s argument checks, which torch runs before the lookup's own."""
    if weight.ndim != 2:
        raise RuntimeError(f"Expected 2-dimensional tensor, but got {weight.ndim}-dimensional "
                           f"tensor for argument #1 'self' (while checking arguments for "
                           f"embedding_renorm_)")
    check_indices(indices, "embedding_renorm_", 2)


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
              scale_grad_by_freq=False, sparse=False, *, frequency=None):
    """The rows of ``weight`` at ``input`` (checked indices; ``padding_idx`` counted from the
    start), renormalised first under ``max_norm``. ``frequency`` is, per weight row, what
    ``scale_grad_by_freq`` divides the row's gradient by (default: how often ``input`` holds
    the row)."""
    if max_norm is not None:
        _check_renorm(weight, input)
    if weight.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    check_indices(input, "embedding")
    num, dim = weight.shape
    flat = input.reshape(-1).to(dt.int64)
    data = flat._data
    if data.size and (int(data.min()) < 0 or int(data.max()) >= num):
        raise IndexError("index out of range in self")
    if max_norm is not None:
        # PyTorch's embedding_renorm_ is an in-place kernel, which autocast leaves alone
        _autocast.run_excluded(_renorm_rows, weight, flat, max_norm, norm_type)
    xp = weight._backend.xp
    out = xp.take(weight._data, data, axis=0).reshape(tuple(input.shape) + (dim,))
    res = _wrap(out, weight.dtype, weight)
    if needs_grad(weight):
        record(EmbeddingBackward0, (weight,), res, indices=flat, padding_idx=padding_idx,
               weight_shape=(num, dim), scale_grad_by_freq=scale_grad_by_freq,
               sparse=bool(sparse), frequency=frequency, out_shape=out.shape)
    return res


def _bag_layout(input, offsets, include_last_offset):
    """``(flat indices, bag of each position, number of bags)``."""
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is "
                             "a mini-batch of fixed length sequences. However, found offsets of "
                             f"type {type(offsets)}")
        if input.dtype is dt.bool:
            # torch makes the bags' offsets with arange in the indices' dtype first
            raise NotImplementedError("\"arange_cpu\" not implemented for 'Bool'")
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
    if offsets.numel() and int(offsets[-1]) > input.numel():
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {input.numel()} "
                           f"but got offsets[-1] of {int(offsets[-1])}")
    bags = offsets.numel() - 1 if include_last_offset else offsets.numel()
    xp = input._backend.xp
    starts = offsets._data[:bags].astype(dt.int64.np)
    bag_of = xp.searchsorted(starts, xp.arange(input.numel()), side="right") - 1
    return input, _wrap(bag_of.astype(dt.int64.np), dt.int64, input), bags


def embedding_bags(input, weight, offsets=None, max_norm=None, norm_type=2,
                   scale_grad_by_freq=False, mode="mean", sparse=False,
                   per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """``nn.functional.embedding_bag``'s result, with its argument checks in torch's order
    (``nn.functional``'s, then the ATen kernel's): both it and the ATen form ``embedding_bag``
    below run them."""
    if per_sample_weights is not None and input.shape != per_sample_weights.shape:
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is "
                         f"not None, then it must have the same shape as the input "
                         f"({input.shape})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.ndim}")
    flat, bag_of, bags = _bag_layout(input, offsets, include_last_offset)
    if per_sample_weights is not None and input.ndim == 2:
        # a view outside the bag node, as torch flattens them in Python before its kernel
        per_sample_weights = per_sample_weights.reshape(-1)
    if mode == "max":
        if scale_grad_by_freq:
            raise ValueError("max mode does not support scaling the gradient by the frequency")
        if sparse:
            raise ValueError("max mode does not support sparse weights")
    elif mode not in ("sum", "mean"):
        raise ValueError("mode has to be one of sum, mean or max")
    if max_norm is not None:
        _check_renorm(weight, flat)
        _autocast.run_excluded(_renorm_rows, weight, flat, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
            "GitHub.")
    _check_bag_tensors(flat, offsets, weight, per_sample_weights)
    num, dim = weight.shape
    padding_idx = _bag_padding_idx(padding_idx, num)
    frequency = _bag_frequency(flat, weight) if scale_grad_by_freq else None
    keep = None
    if padding_idx is not None:
        # Positions holding padding_idx take no part in any bag.
        keep = (flat != padding_idx).nonzero().reshape(-1)
        flat, bag_of = flat.index_select(0, keep), bag_of.index_select(0, keep)
    like = dict(dtype=weight.dtype, device=weight.device)
    # torch sums half-precision rows in float32 and rounds each bag once
    acc = dt.float32 if weight.dtype in (dt.float16, dt.bfloat16) else weight.dtype

    def bags_of(weight, per_sample_weights):
        if per_sample_weights is not None and keep is not None:
            per_sample_weights = per_sample_weights.index_select(0, keep)
        rows = embedding(flat, weight, None, None, norm_type, scale_grad_by_freq, sparse,
                         frequency=frequency)
        if mode == "max":
            return _bag_max(rows, bag_of, bags, dim, like)
        rows = rows.to(acc)
        if per_sample_weights is not None:
            rows = rows * per_sample_weights.to(acc).unsqueeze(1)
        out = zeros((bags, dim), dtype=acc, device=weight.device).index_add(
            0, bag_of, rows).to(weight.dtype)
        if mode == "mean":
            counts = zeros(bags, **like).index_add(0, bag_of, ones(bag_of.shape, **like))
            out = out / counts.clamp_min(1).unsqueeze(1)
        return out
    return record_composite(EmbeddingBagBackward0, (weight, per_sample_weights), bags_of)


_BAG_WEIGHT_DTYPES = (dt.float16, dt.bfloat16, dt.float32, dt.float64)


def _check_bag_tensors(indices, offsets, weight, per_sample_weights):
    """The ATen kernel's dtype and index checks."""
    check_indices(indices, "embedding_bag")
    if offsets is not None:
        check_indices(offsets, "embedding_bag")
    if weight.dtype not in _BAG_WEIGHT_DTYPES:
        raise RuntimeError(f"Expected tensor for argument #1 'weight' to have one of the "
                           f"following scalar types: Half, BFloat16, Float, Double; but got "
                           f"{_type_name(weight.dtype, weight.device)} instead (while checking "
                           f"arguments for embedding_bag)")
    if per_sample_weights is not None and per_sample_weights.dtype != weight.dtype:
        raise RuntimeError(f"Expected tensor for argument #1 'weight' to have the same type as "
                           f"tensor for argument #1 'per_sample_weights'; but type "
                           f"{_type_name(weight.dtype, weight.device)} does not equal "
                           f"{_type_name(per_sample_weights.dtype, per_sample_weights.device)} "
                           f"(while checking arguments for embedding_bag)")
    num = weight.shape[0]
    data = indices._data
    bad = ((data < 0) | (data >= num)).nonzero()[0]
    if bad.size:
        first = int(bad[0])
        raise RuntimeError(f"Index {first} of input takes value {int(data[first])} which is not "
                           f"in the valid range [0, {num})")


def _bag_padding_idx(padding_idx, num_embeddings):
    """The ATen kernel's ``padding_idx``: None for none, a negative one counted from the end."""
    if padding_idx is None:
        return None
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise RuntimeError(f"padding_idx must be within the number of embeddings, "
                           f"-{num_embeddings} through {num_embeddings - 1}, but got "
                           f"{padding_idx}")
    return padding_idx + num_embeddings if padding_idx < 0 else padding_idx


def _bag_frequency(indices, weight):
    """Per weight row, what ``scale_grad_by_freq`` divides its gradient by in torch's CPU
    bag backward. That kernel walks the sorted indices one run of equal values at a time but
    reads the count at the run's ordinal rather than at the run's start, so the k-th smallest
    distinct index is divided by the count of the k-th smallest index (padding positions
    included); the counts differ from the true ones once an index repeats."""
    xp = weight._backend.xp
    data = indices._data.astype(dt.int64.np)
    num = weight.shape[0]
    counts = xp.bincount(data, minlength=num)
    distinct = xp.unique(data)
    frequency = xp.ones(num)
    frequency[distinct] = counts[xp.sort(data)[:distinct.size]]
    return _wrap(frequency.astype(weight.dtype.np), weight.dtype, weight)


class EmbeddingBagBackward0(CompositeBackward):
    __slots__ = ()


def _bag_max(rows, bag_of, bags, dim, like):
    xp = bag_of._backend.xp
    bag_data = bag_of._data
    counts = xp.bincount(bag_data, minlength=bags) if bag_data.size else xp.zeros(bags, int)
    if not bag_data.size:
        # the sum of no rows: zeros that still give the weight its (zero) gradient, as torch's
        return zeros((bags, dim), **like).index_add(0, bag_of, rows)
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
    padding = None if padding_idx is None else _bag_padding_idx(padding_idx, weight.size(0))
    # the kernel's shape checks: RuntimeErrors where nn.functional's are ValueErrors
    for name, value, wanted in (("input", indices, (1, 2)), ("offsets", offsets, (1,)),
                                ("weight", weight, (2,))):
        if value.ndim not in wanted:
            raise RuntimeError(f"{name} has to be a {' or '.join(f'{n}D' for n in wanted)} "
                               f"Tensor, but got Tensor of dimension {value.ndim}")
    if mode not in _MODES:
        raise RuntimeError("`mode` must be sum, mean, or max.")
    output = embedding_bags(indices, weight, offsets, scale_grad_by_freq=scale_grad_by_freq,
                            mode=_MODES[mode], sparse=sparse,
                            per_sample_weights=per_sample_weights,
                            include_last_offset=include_last_offset, padding_idx=padding)
    index_dtype = indices.dtype
    backend = weight._backend
    xp = backend.xp
    flat = indices._data.reshape(-1).astype(np.int64)
    starts = offsets._data.reshape(-1).astype(np.int64)
    num_offsets = starts.shape[0]
    if include_last_offset:
        starts = starts[:-1]
    num_bags, n = starts.shape[0], flat.shape[0]
    # sum mode leaves bag_size and max_indices unfilled: one per bag, but one per offset from
    # the forward-only kernel torch runs when no argument requires grad
    tracked = weight.requires_grad or (per_sample_weights is not None
                                       and per_sample_weights.requires_grad)
    unfilled = xp.zeros(num_bags if tracked else num_offsets, dtype=np.int64)
    # offset2bag as torch builds it: +1 at each bag's start, a running sum
    marks = xp.zeros(n + 1, dtype=np.int64)
    backend.index_add(marks, (starts,), xp.ones(starts.shape, dtype=np.int64))
    marks[0] -= 1
    bag_of = xp.cumsum(marks)[:n]
    valid = None if padding is None else flat != padding

    def result(array):
        return _wrap_with(array.astype(index_dtype.np, copy=False), index_dtype, weight._device,
                          backend)

    if mode == 0:
        fast = (weight.dtype in _FAST_DTYPES and weight.stride(1) == 1 and padding is None)
        return (output, result(xp.zeros(0, np.int64) if fast else bag_of), result(unfilled),
                result(unfilled))
    # the positions per bag, padding excluded: a scatter-add rather than a bincount of the
    # valid positions, whose size the host would have to learn first
    bag_size = xp.zeros(num_bags, dtype=np.int64)
    backend.index_add(bag_size, (bag_of,), xp.ones(n, dtype=np.int64) if valid is None
                      else valid.astype(np.int64))
    if mode == 1:
        return output, result(bag_of), result(bag_size), result(bag_size)
    return output, result(bag_of), result(bag_size), result(
        _max_rows(weight, flat, bag_of, valid, num_bags))


def _max_rows(weight, flat, bag_of, valid, num_bags):
    """Per bag and column, the weight row holding the bag's maximum (its first occurrence, as
    torch's kernel keeps the first); 0 for an empty bag. Padding positions take part as -inf
    and are never chosen, so no array's size depends on the data."""
    backend = weight._backend
    xp = backend.xp
    n = flat.shape[0]
    dim = weight.shape[1]
    if n == 0:
        return xp.zeros((num_bags, dim), dtype=np.int64)
    values = weight.detach()._data[flat]               # (positions, dim), in bag order
    if valid is not None:
        values = xp.where(valid[:, None], values, -np.inf).astype(values.dtype, copy=False)
    bag_max = xp.full((num_bags, dim), -np.inf, dtype=values.dtype)
    backend.scatter_reduce(bag_max, (bag_of,), values, "amax")
    is_max = values == bag_max[bag_of]
    if valid is not None:
        is_max &= valid[:, None]
    first = xp.full((num_bags, dim), n, dtype=np.int64)
    backend.scatter_reduce(first, (bag_of,),
                           xp.where(is_max, xp.arange(n, dtype=np.int64)[:, None], n), "amin")
    filled = first < n
    return xp.where(filled, flat[xp.minimum(first, n - 1)], 0)


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
