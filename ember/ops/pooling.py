"""Max pooling over windows: one op, for the fixed windows of ``max_pool*d`` (a strided view
of the padded input) and the variable ones of ``adaptive_max_pool*d`` (gathered by index).

The op returns the maxima and the flat index of each maximum in its input plane, as PyTorch's
``return_indices``; the backward scatters the gradient to those indices with Ember's
``scatter``/``scatter_add``, so it is differentiable again (its own derivative is a gather).
"""
import itertools
import math

from ._dispatch import Node, needs_grad, record, _wrap
from .. import _dtype as dt


class MaxPoolBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        indices = self.indices
        n, c = grad.shape[:2]
        flat = grad.new_zeros((n, c, math.prod(self.spatial)))
        # windows that cannot share an input element need no accumulation: a plain scatter
        # (an indexed store) is several times faster than scatter_add
        scatter = flat.scatter if self.disjoint else flat.scatter_add
        flat = scatter(2, indices.reshape(n, c, -1), grad.reshape(n, c, -1))
        return flat.reshape((n, c) + self.spatial)


def _lowest(xp, dtype):
    return -xp.inf if dtype.kind == "f" else xp.iinfo(dtype).min


def _argmax_offsets(xp, windows, kernel, track_nan):
    best = best_at = None
    for k, offset in enumerate(itertools.product(*(range(n) for n in kernel))):
        candidate = windows[(Ellipsis,) + offset]
        if best is None:
            best = candidate.copy()
            best_at = xp.zeros(best.shape, dtype=xp.int8 if math.prod(kernel) < 128 else xp.int64)
            continue
        better = candidate > best
        if track_nan:
            better |= candidate != candidate
        xp.maximum(best, candidate, out=best)
        # best_at += better * (k - best_at): plain arithmetic, several times faster than a
        # masked store (copyto/where or boolean indexing)
        step = k - best_at
        step *= better
        best_at += step
    return best, best_at


def _window_max(input, windows, kernel, flat_index, disjoint=False):
    """Maxima of ``windows`` ``(N, C, *out, *kernel)`` and their flat input indices;
    ``flat_index(k)`` maps each output's winning kernel offset (raveled) to that index.

    The kernel is walked one offset at a time over the whole batch (a few passes over the
    output) rather than reducing a copied ``(..., K)`` array along its short last axis, which
    NumPy does slowly."""
    xp = input._backend.xp
    best, best_at = _argmax_offsets(xp, windows, kernel, track_nan=False)
    if input._dtype._kind >= 2 and xp.isnan(best).any():
        # a NaN wins and stays (the last one, as in PyTorch's kernels): a rarer, slower pass
        best, best_at = _argmax_offsets(xp, windows, kernel, track_nan=True)
    indices = xp.asarray(flat_index(best_at), dtype=xp.int64)
    values = _wrap(best, input._dtype, input)
    indices = _wrap(indices, dt.int64, input)
    if needs_grad(input):
        record(MaxPoolBackward0, (input,), values, indices=indices,
               spatial=tuple(input._data.shape[2:]), disjoint=disjoint)
    return values, indices


def _row_major_weights(spatial):
    return [math.prod(spatial[i + 1:]) for i in range(len(spatial))]


def max_pool_nd(input, kernel, stride, pads, dilation, out_shape):
    """Max over fixed windows of an ``(N, C, *S)`` tensor; ``pads`` are per-dim ``(lo, hi)``
    with ``hi`` covering ``ceil_mode``'s last partial window."""
    xp = input._backend.xp
    data = input._data
    padded = xp.pad(data, ((0, 0), (0, 0)) + tuple(pads),
                    constant_values=_lowest(xp, data.dtype)) if any(map(any, pads)) else data
    strides = padded.strides
    view = xp.lib.stride_tricks.as_strided(
        padded, shape=padded.shape[:2] + tuple(out_shape) + tuple(kernel),
        strides=strides[:2] + tuple(s * st for s, st in zip(strides[2:], stride))
        + tuple(s * d for s, d in zip(strides[2:], dilation)), writeable=False)
    weights = _row_major_weights(data.shape[2:])
    nd = len(kernel)
    # a window's flat index separates: where the window starts, plus the offset inside it
    starts = 0
    offsets = 0
    for i in range(nd):
        shape = [1] * nd
        shape[i] = -1
        starts = starts + ((xp.arange(out_shape[i]) * stride[i] - pads[i][0]) * weights[i]).reshape(shape)
        offsets = offsets + (xp.arange(kernel[i]) * dilation[i] * weights[i]).reshape(shape)
    offsets = offsets.reshape(-1)
    disjoint = all(s >= d * (k - 1) + 1 for s, d, k in zip(stride, dilation, kernel))
    return _window_max(input, view, kernel, lambda at: starts + offsets[at], disjoint)


def adaptive_max_pool_nd(input, out_shape):
    """Max over PyTorch's adaptive windows ``[floor(i*S/O), ceil((i+1)*S/O))`` per dim; shorter
    windows repeat their last element, which leaves the maximum and its first index unchanged."""
    xp = input._backend.xp
    data = input._data
    tables = []
    for size, out in zip(data.shape[2:], out_shape):
        starts = (xp.arange(out) * size) // out
        ends = -((-(xp.arange(out) + 1) * size) // out)
        width = int((ends - starts).max()) if out else 1
        table = starts[:, None] + xp.arange(width)[None, :]
        tables.append(xp.minimum(table, ends[:, None] - 1))
    nd = len(tables)
    weights = _row_major_weights(data.shape[2:])
    index = [slice(None), slice(None)]
    flat = 0
    for i, table in enumerate(tables):
        shape = [1] * (2 * nd)
        shape[i], shape[nd + i] = table.shape
        index.append(table.reshape(shape))
        flat = flat + table.reshape(shape) * weights[i]
    windows = data[tuple(index)]  # (N, C, *out, *window)
    flat = flat.reshape(tuple(out_shape) + (-1,))
    kernel = tuple(t.shape[1] for t in tables)
    return _window_max(input, windows, kernel, lambda at: xp.take_along_axis(
        flat[None, None], at[..., None].astype(xp.int64), -1)[..., 0])


__all__ = []
