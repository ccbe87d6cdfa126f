"""Order statistics, uniqueness, searching and counting.

Each op is one sort (or partition, or search) on the backend plus vectorised bookkeeping: no
loop over rows or elements. Ops that select input elements (kthvalue, median, mode) record the
selected positions and scatter the gradient back to them; quantile is PyTorch's composite of
sort, gather and lerp, so its graph and gradient are those ops'; ops with integer or count
results (unique, searchsorted, histc, bincount) have no gradient, as in PyTorch.

Ties: ``mode`` returns the smallest most frequent value and its last position, which is PyTorch's
CPU answer for rows of up to 16 elements (beyond that its introsort is unstable and the position
among equal values unspecified); ``median``/``kthvalue`` take the stable sort's position among
equal values (PyTorch's CPU kernel uses nth_element there, whose choice is unspecified, as it is
for nanmedian of an all-NaN row). NaN sorts last; median of a row holding NaN is the first NaN.
"""
import builtins
import math
import numbers

from .. import _dtype as dt
from ..autograd import forward_ad as _forward_ad
from ._dispatch import (Tensor, Node, needs_grad, record, _wrap, wrap_dim, dtype_name,
                        device_mismatch, as_tensor_on, wrap_dim_no_scalar)
from .reduce import MaxBackward0
from .creation import full_like, scalar_tensor
from .elementwise import lerp
from .indexing import gather, masked_fill, sort
from .shape import broadcast_tensors, unsqueeze, transpose, view, flatten
from .. import return_types
from ..amp import autocast_mode as _autocast

__all__ = ["kthvalue", "median", "nanmedian", "mode", "quantile", "nanquantile", "unique",
           "unique_consecutive", "searchsorted", "bucketize", "histc", "histogram", "histogramdd",
           "bincount", "isin"]
METHODS = ["kthvalue", "median", "nanmedian", "mode", "quantile", "nanquantile", "unique",
           "unique_consecutive", "histc", "histogram", "bincount"]
INPLACE = []


def _not_implemented(kernel, d):
    return NotImplementedError(f"\"{kernel}\" not implemented for '{dtype_name(d)}'")


def _check_int(value, name, position, op):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{op}(): argument '{name}' (position {position}) must be int, not "
                        f"{type(value).__name__}")
    return int(value)


def _int64(input, array):
    return _wrap(input._backend.xp.asarray(array).astype("int64", copy=False), dt.int64, input)


# ---------------------------------------------------------------------------------------------
# Selections along a dim: kthvalue, median, nanmedian, mode
# ---------------------------------------------------------------------------------------------

class KthvalueBackward0(MaxBackward0):
    """The gradient of a value picked along ``dim`` flows to its index only (max's rule)."""
    __slots__ = ()


class MedianBackward1(KthvalueBackward0):
    __slots__ = ()


class NanmedianBackward1(KthvalueBackward0):
    __slots__ = ()


class ModeBackward0(KthvalueBackward0):
    __slots__ = ()


class MedianBackward0(Node):
    """median() of the whole tensor: the gradient is shared evenly by the elements equal to
    the result (NaN counting as equal to a NaN result)."""
    __slots__ = ()

    def backward(self, grad):
        x, out = self.saved_tensors
        mask = (x == out) | (x.isnan() & out.isnan())
        mask = mask.to(grad.dtype)
        return mask * (grad / mask.sum())

    def jvp(self, t):
        # the tangent's mean over the elements the backward shares the gradient between
        x, out = self.saved_tensors
        mask = ((x == out) | (x.isnan() & out.isnan())).to(t.dtype)
        return (mask * t).sum() / mask.sum()


class NanmedianBackward0(MedianBackward0):
    __slots__ = ()


def _select(input, dim, keepdim, name, pick, node_cls, result_cls):
    """Values and indices along ``dim`` at the positions ``pick(backend, data, axis)`` returns
    (an index array with the axis kept, length 1)."""
    data = input._data
    nd = data.ndim
    d = wrap_dim(dim, nd)
    xp = input._backend.xp
    if nd == 0:
        idx = xp.zeros((), dtype="int64")
        vals = data.copy()
    else:
        if data.shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
        idx = pick(input._backend, data, d).astype("int64", copy=False)
        vals = xp.take_along_axis(data, idx, axis=d)
        if not keepdim:
            idx = idx.squeeze(d)
            vals = vals.squeeze(d)
    values = _wrap(vals, input._dtype, input)
    indices = _wrap(idx, dt.int64, input)
    if needs_grad(input) and input._dtype._kind >= 2:
        record(node_cls, (input,), values, save=(indices,), dim=d, keepdim=keepdim,
               in_shape=data.shape)
    return result_cls((values, indices))


def kthvalue(input, k, dim=-1, keepdim=False):
    k = _check_int(k, "k", 2, "kthvalue")
    data = input._data
    d = wrap_dim(dim, data.ndim)
    size = data.shape[d] if data.ndim else 1
    if data.ndim and size == 0:
        raise IndexError(f"kthvalue(): Expected reduction dim {d} to have non-zero size.")
    if not 1 <= k <= size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    if input._dtype is dt.bool and data.ndim:  # PyTorch checks the shape first
        raise _not_implemented("kthvalue_cpu", input._dtype)

    def pick(backend, arr, axis):
        xp = backend.xp
        order = xp.argpartition(arr, k - 1, axis=axis)
        return xp.take(order, [k - 1], axis=axis)
    return _select(input, d, keepdim, "kthvalue", pick, KthvalueBackward0, return_types.kthvalue)


def _median_position(xp, arr, axis, ignore_nan):
    """Stable-sort positions of the lower median along ``axis``: with NaNs, the first NaN
    (median) or the lower median of the others (nanmedian)."""
    order = xp.argsort(arr, axis=axis, kind="stable")
    n = arr.shape[axis]
    if arr.dtype.kind in "fc":
        nans = xp.isnan(arr).sum(axis=axis, keepdims=True)
    else:
        nans = xp.zeros([1 if i == axis else s for i, s in enumerate(arr.shape)], dtype="int64")
    if ignore_nan:
        valid = n - nans
        position = xp.where(valid > 0, (valid - 1) // 2, 0)
    else:
        position = xp.where(nans > 0, n - nans, (n - 1) // 2)
    return xp.take_along_axis(order, position.astype("int64"), axis=axis)


def _median_all(input, ignore_nan):
    """median()/nanmedian() of every element, as a 0-d tensor."""
    xp = input._backend.xp
    flat = input._data.reshape(-1)
    if flat.size == 0:
        out = xp.full((), math.nan, dtype=input._dtype.np)
    else:
        idx = _median_position(xp, flat, 0, ignore_nan)
        out = flat[idx[0]].copy()
    res = _wrap(xp.asarray(out, dtype=input._dtype.np), input._dtype, input)
    if needs_grad(input) and input._dtype._kind >= 2:
        record(NanmedianBackward0 if ignore_nan else MedianBackward0, (input,), res,
               save=(input,), save_out=True)
    return res


def _median(input, dim, keepdim, ignore_nan):
    name = "nanmedian" if ignore_nan else "median"
    # PyTorch's kernels are named after median for both; the median of no elements is NaN,
    # cast to the dtype without a kernel
    if input._dtype is dt.bool and (dim is not None or input._data.size):
        if dim is not None and input._data.ndim:
            d = wrap_dim(dim, input._data.ndim)
            if input._data.shape[d] == 0:
                raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
        raise _not_implemented("median_cpu" if dim is None else "median_out", input._dtype)
    if dim is None:
        return _median_all(input, ignore_nan)

    def pick(backend, arr, axis):
        return _median_position(backend.xp, arr, axis, ignore_nan)
    node = NanmedianBackward1 if ignore_nan else MedianBackward1
    result = return_types.nanmedian if ignore_nan else return_types.median
    return _select(input, dim, keepdim, name, pick, node, result)


def median(input, dim=None, keepdim=False):
    return _median(input, dim, keepdim, False)


def nanmedian(input, dim=None, keepdim=False):
    return _median(input, dim, keepdim, True)


def _mode_position(backend, arr, axis):
    """Positions of the smallest most frequent value along ``axis`` (its last occurrence)."""
    xp = backend.xp
    moved = xp.moveaxis(arr, axis, -1)
    n = moved.shape[-1]
    order = xp.argsort(moved, axis=-1, kind="stable")
    ordered = xp.take_along_axis(moved, order, axis=-1)
    positions = xp.arange(n)
    starts = xp.ones(ordered.shape, dtype=bool)
    starts[..., 1:] = ordered[..., 1:] != ordered[..., :-1]
    run_start = backend.cumulative("maximum", xp.where(starts, positions, 0), -1)
    run_length = positions - run_start + 1
    # The first position reaching the longest run ends the smallest value with that count; the
    # stable sort put that value's last occurrence there.
    end = xp.argmax(run_length, axis=-1)[..., None]
    idx = xp.take_along_axis(order, end, axis=-1)
    return xp.moveaxis(idx, -1, axis)


def mode(input, dim=-1, keepdim=False):
    return _select(input, dim, keepdim, "mode", _mode_position, ModeBackward0, return_types.mode)


# ---------------------------------------------------------------------------------------------
# quantile, nanquantile
# ---------------------------------------------------------------------------------------------

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _check_quantile_args(input, q, name, interpolation):
    if input._dtype not in (dt.float32, dt.float64):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if isinstance(q, Tensor):
        if q._data.ndim > 1:
            raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
        if q._dtype is not input._dtype:
            raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
        if q._device is not input._device:
            raise device_mismatch(input, q)
        xp = q._backend.xp
        if q._data.size and not bool(xp.all((q._data >= 0) & (q._data <= 1))):
            raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
    elif isinstance(q, numbers.Real) and not isinstance(q, bool):
        if not 0 <= q <= 1:
            raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {q}")
    else:
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        f"(Tensor, {type(q).__name__}), but expected (Tensor input, Tensor q) or "
                        "(Tensor input, float q)")
    if input._data.size == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan):
    """PyTorch's composite, op for op: sort (the reduced dim moved last), view the sorted
    values as the output's shape plus that dim, turn q into fractional ranks, gather the
    values below and above each rank and lerp between them, then move q's dim to the front.
    The gradient (to the input, and to a tensor q through the lerp weights) is the ops'."""
    name = "nanquantile" if ignore_nan else "quantile"
    _check_quantile_args(input, q, name, interpolation)
    nd = input._data.ndim
    if not isinstance(q, Tensor):
        q = scalar_tensor(q, dtype=input._dtype, device=input._device)
    if dim is None:
        out_shape = [1] * nd if keepdim else []
        ordered = sort(flatten(input))[0]
    else:
        d = wrap_dim(dim, nd)
        out_shape = list(input._data.shape)
        if nd and keepdim:
            out_shape[d] = 1
        elif nd:
            del out_shape[d]
        if d == nd - 1:
            ordered = sort(input)[0]
        else:
            ordered = sort(transpose(unsqueeze(input, -1), d, -1))[0]
    ordered = view(ordered, out_shape + [ordered._data.shape[-1]])

    if ignore_nan:
        # Ranks among the values that are not NaN; an all-NaN slice takes rank 0, a NaN.
        ranks = q * (ordered.isnan().logical_not_().sum(-1, True) - 1)
        ranks.masked_fill_(ranks < 0, 0)
    else:
        # A slice holding NaN takes the last rank, where the sort put its NaNs.
        last = ordered._data.shape[-1] - 1
        ranks, has_nan = broadcast_tensors(q * last, ordered.isnan().any(-1, True))
        ranks = masked_fill(ranks, has_nan, last)
    if interpolation == "lower":
        ranks.floor_()
    elif interpolation == "higher":
        ranks.ceil_()
    elif interpolation == "nearest":
        ranks.round_()  # half to even

    ranks_below = ranks.to(dt.int64)
    values = gather(ordered, -1, ranks_below)
    if interpolation in ("linear", "midpoint"):
        if interpolation == "midpoint":
            weights = full_like(ranks, 0.5).masked_fill_(ranks.isnan(), math.nan)
        else:
            weights = ranks - ranks_below
        values_above = gather(ordered, -1, ranks.ceil_().to(dt.int64))
        values = lerp(values, values_above, weights)
    if q._data.ndim == 0:
        return values.squeeze_(-1)
    return values.unsqueeze_(0).transpose_(0, -1).squeeze_(-1)


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    if _autocast.active and _autocast.enabled_for(input, "quantile"):
        return _autocast.run(quantile, "quantile", input, q, dim, keepdim,
                             interpolation=interpolation)
    return _quantile(input, q, dim, keepdim, interpolation, False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    if _autocast.active and _autocast.enabled_for(input, "nanquantile"):
        return _autocast.run(nanquantile, "nanquantile", input, q, dim, keepdim,
                             interpolation=interpolation)
    return _quantile(input, q, dim, keepdim, interpolation, True)


# ---------------------------------------------------------------------------------------------
# unique, unique_consecutive
# ---------------------------------------------------------------------------------------------

class _NotDifferentiable(Node):
    __slots__ = ()
    op_name = ""

    def backward(self, grad):
        raise NotImplementedError(f"the derivative for '{self.op_name}' is not implemented.")

    def jvp(self, *tangents):
        raise _forward_ad.not_supported(self.op_name)


Unique2Backward0 = type("Unique2Backward0", (_NotDifferentiable,),
                        {"__slots__": (), "op_name": "_unique2"})
UniqueDimBackward0 = type("UniqueDimBackward0", (_NotDifferentiable,),
                          {"__slots__": (), "op_name": "unique_dim"})
UniqueConsecutiveBackward0 = type("UniqueConsecutiveBackward0", (_NotDifferentiable,),
                                  {"__slots__": (), "op_name": "unique_consecutive"})


class _NoDerivative(Node):
    """A result that requires grad but has no derivative formula, as in PyTorch."""
    __slots__ = ()

    def backward(self, grad):
        raise RuntimeError(f"derivative for aten::{self.op_name} is not implemented")

    def jvp(self, *tangents):
        raise NotImplementedError(f"Trying to use forward AD with aten::{self.op_name} that "
                                  "does not support it.")


_NoDerivative.__name__ = _NoDerivative.__qualname__ = "NotImplemented"  # PyTorch's node name


def _unique_result(input, values, inverse, counts, return_inverse, return_counts, node_cls):
    out = _wrap(values, input._dtype, input)
    if needs_grad(input) and input._dtype._kind >= 2:
        record(node_cls, (input,), out)
    if not (return_inverse or return_counts):
        return out
    result = [out]
    if return_inverse:
        result.append(_int64(input, inverse))
    if return_counts:
        result.append(_int64(input, counts))
    return tuple(result)


def _check_dim_for_unique(data, d):
    if data.size == 0 and any(s == 0 for i, s in enumerate(data.shape) if i != d):
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique "
                           "cannot be applied")


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """Sorted unique values (``sorted=False`` sorts too, which PyTorch's CPU kernel also does).
    NaNs are never equal to each other, so each is its own value."""
    xp = input._backend.xp
    data = input._data
    if dim is None:
        values, inverse, counts = xp.unique(data.reshape(-1), return_inverse=True,
                                            return_counts=True, equal_nan=False)
        return _unique_result(input, values, inverse.reshape(data.shape), counts,
                              return_inverse, return_counts, Unique2Backward0)
    d = wrap_dim_no_scalar(dim, data.ndim)
    _check_dim_for_unique(data, d)
    if data.shape[d] == 0:
        return _unique_result(input, data.copy(), xp.zeros(0, "int64"), xp.zeros(0, "int64"),
                              return_inverse, return_counts, UniqueDimBackward0)
    values, inverse, counts = xp.unique(data, return_inverse=True, return_counts=True, axis=d,
                                        equal_nan=False)
    return _unique_result(input, values, inverse.reshape(-1), counts, return_inverse,
                          return_counts, UniqueDimBackward0)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    xp = input._backend.xp
    data = input._data
    if dim is None:
        rows = data.reshape(-1, 1)
        axis = 0
        inverse_shape = data.shape
    else:
        axis = wrap_dim_no_scalar(dim, data.ndim)
        _check_dim_for_unique(data, axis)
        others = math.prod(data.shape) // data.shape[axis] if data.shape[axis] else 0
        rows = xp.moveaxis(data, axis, 0).reshape(data.shape[axis], others)
        inverse_shape = (rows.shape[0],)
    n = rows.shape[0]
    starts = xp.ones(n, dtype=bool)
    if n > 1:
        # NaN != NaN, so consecutive NaNs stay separate, as in PyTorch.
        starts[1:] = xp.any(rows[1:] != rows[:-1], axis=1)
    first = xp.flatnonzero(starts)
    inverse = (xp.cumsum(starts) - 1).reshape(inverse_shape)
    counts = xp.diff(xp.append(first, n))
    if dim is None:
        values = data.reshape(-1)[first]
    else:
        values = xp.take(data, first, axis=axis)
    return _unique_result(input, values, inverse, counts, return_inverse, return_counts,
                          UniqueConsecutiveBackward0)


# ---------------------------------------------------------------------------------------------
# searchsorted, bucketize
# ---------------------------------------------------------------------------------------------

def _shape_list(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
                 sorter=None):
    if side not in (None, "left", "right"):
        raise RuntimeError(f"ember.searchsorted(): side can only be 'left' or 'right' but got "
                           f"{side}")
    if side is not None and (side == "right") != bool(right) and right:
        raise RuntimeError(f"ember.searchsorted(): side and right can't be set to opposites, got "
                           f"side of {side} while right was {right}")
    use_right = right or side == "right"
    seq = sorted_sequence
    scalar_input = not isinstance(input, Tensor)
    values = as_tensor_on(input, seq) if scalar_input else input
    if values._device is not seq._device:
        raise device_mismatch(seq, values)
    if seq._data.ndim == 0:
        raise RuntimeError("ember.searchsorted(): boundaries tensor should have positive "
                           "dimension, but got 0 dimension")
    seq_shape, val_shape = seq._data.shape, values._data.shape
    if seq._data.ndim > 1 and (len(val_shape) != len(seq_shape)
                               or val_shape[:-1] != seq_shape[:-1]):
        raise RuntimeError("ember.searchsorted(): boundaries tensor should be 1 dimension or the "
                           "first N-1 dimensions of boundaries tensor and input value tensor "
                           "must match, but we got boundaries tensor "
                           f"{_shape_list(seq_shape)} and input value tensor "
                           f"{_shape_list(val_shape)}")
    xp = seq._backend.xp
    boundaries = seq._data
    if sorter is not None:
        if sorter._dtype is not dt.int64:
            raise RuntimeError("ember.searchsorted(): sorter must be a tensor of long dtype but "
                               f"got dtype {dtype_name(sorter._dtype)}")
        if sorter._data.shape != seq_shape:
            raise RuntimeError("ember.searchsorted(): boundary and sorter must have the same "
                               f"size, but got boundary tensor {_shape_list(seq_shape)}and got "
                               f"sorter tensor {_shape_list(sorter._data.shape)}")
        order = sorter._data
        if order.size and (int(order.min()) < 0 or int(order.max()) >= seq_shape[-1]):
            raise RuntimeError("ember.searchsorted(): sorter index out of range")
        boundaries = xp.take_along_axis(boundaries, order, axis=-1)
    if seq._dtype is dt.bool and values._dtype is dt.bool:
        raise _not_implemented("searchsorted_out_cpu", dt.bool)
    side_name = "right" if use_right else "left"
    if boundaries.ndim == 1:
        idx = xp.searchsorted(boundaries, values._data, side=side_name)
    else:
        idx = _batched_searchsorted(xp, boundaries, values._data, use_right)
    out_dt = dt.int32 if out_int32 else dt.int64
    return _wrap(xp.asarray(idx).astype(out_dt.np), out_dt, seq)


def _batched_searchsorted(xp, boundaries, values, use_right):
    """searchsorted of each row of ``values`` in the matching row of ``boundaries``, for all rows
    at once: one lexicographic sort of both by (row, value), then count the boundaries before
    each value. Values sort before equal boundaries for side='left', after them for 'right'."""
    n, m = boundaries.shape[-1], values.shape[-1]
    rows = math.prod(boundaries.shape[:-1])
    b = boundaries.reshape(rows, n)
    v = values.reshape(rows, m)
    common = xp.result_type(b.dtype, v.dtype)
    keys = xp.concatenate([b.astype(common).reshape(-1), v.astype(common).reshape(-1)])
    row_ids = xp.concatenate([xp.repeat(xp.arange(rows), n), xp.repeat(xp.arange(rows), m)])
    is_boundary = xp.concatenate([xp.ones(rows * n, dtype=bool), xp.zeros(rows * m, dtype=bool)])
    tie_break = ~is_boundary if use_right else is_boundary
    order = xp.lexsort((tie_break, keys, row_ids))
    boundaries_before = xp.cumsum(is_boundary[order]) - is_boundary[order]
    counts = xp.empty(order.shape[0], dtype="int64")
    counts[order] = boundaries_before
    result = counts[rows * n:] - xp.repeat(xp.arange(rows) * n, m)
    return result.reshape(values.shape)


def bucketize(input, boundaries, *, out_int32=False, right=False):
    if boundaries._data.ndim != 1:
        raise RuntimeError("boundaries tensor must be 1 dimension, but got "
                           f"dim({boundaries._data.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


# ---------------------------------------------------------------------------------------------
# histc, histogram, bincount, histogramdd
# ---------------------------------------------------------------------------------------------

def _c_number(value):
    """A float as C++'s ostream prints it in PyTorch's messages (1, 2.5, inf, -nan)."""
    if math.isnan(value):
        return "-nan" if math.copysign(1.0, value) < 0 else "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:g}"


def _split(xp, a):
    """Veltkamp's split of float64 ``a`` into two halves whose products are exact."""
    c = a * 134217729.0  # 2**27 + 1
    high = c - (c - a)
    return high, a - high


def _fused_multiply_add(xp, a, b, c):
    """a * b + c rounded once, as a hardware FMA gives it, for float64 arrays."""
    product = a * b
    a_high, a_low = _split(xp, a)
    b_high, b_low = _split(xp, b)
    product_error = ((a_high * b_high - product) + a_high * b_low + a_low * b_high) + a_low * b_low
    total = product + c
    b_virtual = total - product
    sum_error = (product - (total - b_virtual)) + (c - b_virtual)  # Knuth's two-sum
    return total + (sum_error + product_error)


def _torch_linspace(xp, start, end, steps, np_dtype):
    """PyTorch's CPU linspace: the first half stepped up from ``start``, the second down from
    ``end``, each point one fused multiply-add (so the edges match its bit for bit)."""
    start, end = np_dtype.type(start), np_dtype.type(end)
    step = np_dtype.type((end - start) / (steps - 1)) if steps > 1 else np_dtype.type(0)
    i = xp.arange(steps, dtype="float64")
    step = xp.full(steps, step, dtype="float64")
    start, end = float(start), float(end)
    if np_dtype.itemsize < 8:
        # A product of float32 factors is exact in float64: one rounding at the end, as FMA.
        forward = step * i + start
        backward = end - step * (steps - 1 - i)
    else:
        forward = _fused_multiply_add(xp, step, i, start)
        backward = _fused_multiply_add(xp, -step, steps - 1 - i, end)
    return xp.where(i < steps // 2, forward, backward).astype(np_dtype)


def _bin_positions(xp, x, edges, bins, lo, hi, local_search):
    """Bin of each element of ``x`` in [lo, hi] (the last bin closed), as PyTorch's linear
    interpolation; with ``local_search`` corrected against the edges, as ``histogram`` does."""
    lo, hi = x.dtype.type(lo), x.dtype.type(hi)
    # PyTorch's order of operations, in the input's dtype.
    pos = ((x - lo) * x.dtype.type(bins) / (hi - lo)).astype("int64")
    pos = xp.clip(pos, 0, bins)
    if local_search:
        lower = xp.maximum(pos - 1, 0)
        upper = xp.minimum(pos + 2, bins + 1)
        count = xp.zeros_like(pos)
        for offset in range(3):
            j = lower + offset
            inside = j < upper
            count = count + (inside & (edges[xp.minimum(j, bins)] <= x))
        pos = lower + count - 1
    return xp.where(pos == bins, bins - 1, pos)


def _as_float(value):
    return float(value.item() if isinstance(value, Tensor) else value)


def histc(input, bins=100, min=0, max=0):
    if input._dtype._kind < 2:
        raise _not_implemented("histogram_cpu", input._dtype)
    bins = _check_int(bins, "bins", 2, "histc")
    if bins <= 0:
        raise RuntimeError(f"ember.histogram(): bins must be > 0, but got {bins} for dimension 0")
    lo, hi = _as_float(min), _as_float(max)
    if lo > hi:
        raise RuntimeError("ember.histc: max must be larger than min")
    xp = input._backend.xp
    x = input._data.reshape(-1)
    if input._dtype in (dt.float16, dt.bfloat16):
        x = x.astype("float32")
    if lo == hi and x.size:
        lo, hi = float(x.min()), float(x.max())
        # PyTorch's min/max reduction produces the default (sign-bit) NaN: "-nan" in its message.
        lo, hi = (-abs(v) if math.isnan(v) else v for v in (lo, hi))
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"ember.histc: range of [{_c_number(lo)}, {_c_number(hi)}] is not "
                           "finite")
    lo_edge, hi_edge = x.dtype.type(lo), x.dtype.type(hi)
    inside = x[(x >= lo_edge) & (x <= hi_edge)]
    pos = _bin_positions(xp, inside, None, bins, lo, hi, False)
    counts = xp.bincount(pos, minlength=bins)
    return _wrap(counts.astype(input._dtype.np), input._dtype, input)


def histogram(input, bins, *, range=None, weight=None, density=False):
    if input._dtype not in (dt.float32, dt.float64):
        raise _not_implemented("histogramdd", input._dtype)
    xp = input._backend.xp
    x = input._data.reshape(-1)
    np_dtype = input._dtype.np
    if weight is not None and weight._data.shape != input._data.shape:
        raise RuntimeError("ember.histogramdd: if weight tensor is provided it should have the "
                           "same shape as the input tensor excluding its innermost dimension, "
                           f"but got input with shape {_shape_list(tuple(x.shape) + (1,))} and "
                           f"weight with shape {_shape_list(weight._data.shape)}")
    if isinstance(bins, Tensor):
        if bins._dtype is not input._dtype:
            raise RuntimeError("ember.histogramdd: input tensor and bins tensors should have the "
                               "same dtype, but got input with dtype "
                               f"{input._dtype.name.replace('float32', 'float')} and bins for "
                               "dimension 0 with dtype "
                               f"{bins._dtype.name.replace('float64', 'double')}")
        if bins._data.ndim != 1:
            raise RuntimeError("ember.histogramdd: bins tensor should have one dimension, but got "
                               f"{bins._data.ndim} dimensions in the bins tensor for dimension 0")
        edges = bins._data
        count = edges.shape[0] - 1
        if count < 0:
            raise RuntimeError("ember.histogramdd: bins tensor should have at least 1 element, but "
                               "got 0 elements in the bins tensor for dimension 0")
        if count == 0:
            raise RuntimeError("ember.histogram(): bins must be > 0, but got 0 for dimension 0")
        lo, hi = float(edges[0]), float(edges[-1])
        keep = (x >= edges[0]) & (x <= edges[-1])
        inside = x[keep]
        pos = xp.searchsorted(edges, inside, side="right") - 1
        pos = xp.where(pos == count, count - 1, pos)
    else:
        count = _check_int(bins, "bins", 2, "histogram")
        if count <= 0:
            raise RuntimeError(f"ember.histogram(): bins must be > 0, but got {count} for "
                               "dimension 0")
        if range is not None:
            lo, hi = float(range[0]), float(range[1])
            if lo > hi:
                raise RuntimeError(f"ember.histogramdd: min should not exceed max, but got min "
                                   f"{_c_number(lo)} max {_c_number(hi)} for dimension 0")
        elif x.size:
            lo, hi = float(x.min()), float(x.max())
        else:
            lo, hi = 0.0, 1.0
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise RuntimeError(f"ember.histogramdd: dimension 0's range [{_c_number(lo)}, "
                               f"{_c_number(hi)}] is not finite")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges = _torch_linspace(xp, lo, hi, count + 1, np_dtype)
        keep = (x >= edges[0]) & (x <= edges[-1])
        inside = x[keep]
        pos = _bin_positions(xp, inside, edges, count, float(edges[0]), float(edges[-1]), True)
    w = None if weight is None else weight._data.reshape(-1)[keep]
    hist = xp.bincount(pos, weights=w, minlength=count).astype(np_dtype)
    if density:
        widths = xp.diff(edges)
        hist = (hist / (hist.sum() * widths)).astype(np_dtype)
    result = (_wrap(hist, input._dtype, input), _wrap(xp.array(edges), input._dtype, input))
    differentiable = [t for t in (input, weight, bins) if isinstance(t, Tensor)]
    if needs_grad(*differentiable):
        for t in result:
            record(_NoDerivative, differentiable, t, op_name="histogram")
    return return_types.histogram(result)


def bincount(input, weights=None, minlength=0):
    minlength = _check_int(minlength, "minlength", 3, "bincount")
    if input._dtype._kind != 1:
        raise _not_implemented("bincount_cpu", input._dtype)
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    xp = input._backend.xp
    data = input._data
    if data.ndim != 1 or (data.size and int(data.min()) < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    w = None
    out_dt = dt.int64
    if weights is not None:
        if weights._device is not input._device:
            raise device_mismatch(input, weights)
        if weights._data.ndim != 1 or weights._data.shape[0] != data.shape[0]:
            raise RuntimeError("weights should be 1-d and have the same length as input")
        w = weights._data
        out_dt = dt.float32 if weights._dtype is dt.float32 else dt.float64
    counts = xp.bincount(data.astype("int64", copy=False), weights=w, minlength=minlength)
    result = _wrap(counts.astype(out_dt.np, copy=False), out_dt, input)
    if weights is not None and needs_grad(weights):
        record(_NoDerivative, (weights,), result, op_name="bincount")
    return result


def histogramdd(input, bins=10, *, range=None, weight=None, density=False, out=None):
    if input._dtype._kind != 2:
        raise NotImplementedError(f"\"histogramdd\" not implemented for "
                                  f"'{dtype_name(input._dtype)}'")
    if input._data.ndim < 2:
        raise RuntimeError("ember.histogramdd: input tensor should have at least 2 dimensions")
    xp = input._backend.xp
    n_dims = input._data.shape[-1]
    samples = input._data.reshape(-1, n_dims).astype("float64")
    if isinstance(bins, numbers.Integral):
        bins_arg = [int(bins)] * n_dims
    elif isinstance(bins, Tensor):
        bins_arg = [bins]
    else:
        bins_arg = list(bins)
    if len(bins_arg) != n_dims:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost "
                           "dimension of the input.")
    bins_arg = [b._data.astype("float64") if isinstance(b, Tensor) else b for b in bins_arg]
    ranges = None
    if range is not None:
        ranges = [(float(range[2 * i]), float(range[2 * i + 1])) for i in builtins.range(n_dims)]
    w = None if weight is None else weight._data.reshape(-1).astype("float64")
    hist, edges = xp.histogramdd(samples, bins=bins_arg, range=ranges, weights=w,
                                 density=density)
    np_dtype = input._dtype.np
    hist_t = _wrap(hist.astype(np_dtype), input._dtype, input)
    edge_ts = tuple(_wrap(xp.asarray(e).astype(np_dtype), input._dtype, input) for e in edges)
    return return_types.histogramdd((hist_t, edge_ts))


# ---------------------------------------------------------------------------------------------
# isin
# ---------------------------------------------------------------------------------------------

def isin(elements, test_elements, *, assume_unique=False, invert=False):
    for operand in (elements, test_elements):
        if isinstance(operand, Tensor) and operand._dtype is dt.bool:
            raise RuntimeError("Unsupported input type encountered for isin(): Bool")
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError(f"isin() received an invalid combination of arguments - got "
                        f"({type(elements).__name__}, {type(test_elements).__name__}), but "
                        "expected one of:\n * (Tensor elements, Tensor test_elements)\n"
                        " * (Number element, Tensor test_elements)\n"
                        " * (Tensor elements, Number test_element)")
    like = elements if isinstance(elements, Tensor) else test_elements
    a = elements._data if isinstance(elements, Tensor) else as_tensor_on(elements, like)._data
    b = (test_elements._data if isinstance(test_elements, Tensor)
         else as_tensor_on(test_elements, like)._data)
    if isinstance(elements, Tensor) and isinstance(test_elements, Tensor) \
            and elements._device is not test_elements._device:
        raise device_mismatch(elements, test_elements)
    xp = like._backend.xp
    result = xp.isin(a, b.reshape(-1), assume_unique=assume_unique, invert=invert)
    return _wrap(xp.asarray(result), dt.bool, like)
